/**
 * Cached state entries of the SQLite store (StateWrite `cached`, README State): entries written
 * with a TTL, conditional or not — the correlation's per-trace state, 32 trace → session facts and
 * 16 failure-record lists a request on `bench:ingest` — kept in memory by the writer (the file's
 * only writer, so it checks versions there) and made durable as one row per commit in
 * `state_cache` (schema version 5), instead of a keyed row each in `state_entries`. A keyed row is a
 * random B-tree leaf: those 48 entries dirtied about 80 database pages, each a 4 KiB WAL frame the
 * ack's sync waited for; one row dirties one or two.
 *
 * The rows are a log, replayed in order at open: an entry replaces the key's earlier one, a
 * tombstone (an entry with no value) removes it — written when a plain write or a delete takes a
 * cached key over, so the key's row in `state_entries` is its truth from then on. In memory each
 * namespace keeps its entries in write order, at most its `maxEntries` (the oldest are evicted, as
 * `state_entries` evicts) and without the expired ones (swept from the oldest). Each row counts its
 * entries still in memory; a row with none left is deleted by a later commit — but not before the
 * rows whose entries it replaced or removed (`covers`): were it gone first, a replay would bring
 * an older value back. An entry evicted while its row stays (for other entries) may come back at
 * the next open, within the bound: what a cache of facts may do, never an older value than the
 * newest written.
 *
 * A long value is not kept in memory: it is read from its row when asked for (INLINE_JSON_CHARS).
 * Writes are staged while their transaction runs (a later write of the same commit sees an earlier
 * one) and take effect in memory only once it committed: `commit()`; `rollback()` otherwise.
 */

/** One entry as a `state_cache` row holds it: namespace, key, JSON value (null: a tombstone), version, expiry, the namespace's bound. */
export type RowEntry = [namespace: string, key: string, json: string | null, version: number, expires: number, maxEntries: number];

export interface CachedEntry {
  /** The value's JSON when short (INLINE_JSON_CHARS); a longer one is read from its row when asked for. */
  json: string | undefined;
  version: number;
  expires: number;
  /** The `state_cache` row that holds it. */
  row: number;
}

interface Namespace {
  entries: Map<string, CachedEntry>;
  maxEntries: number;
  /** Evicted past `maxEntries` since the store opened (status). */
  evicted: number;
  /**
   * The oldest entry, and an iterator past it: kept across evictions and sweeps, because deleting
   * from a Map's front and iterating it again from the start is quadratic in V8 (bounded-map.ts).
   */
  head: [string, CachedEntry] | undefined;
  rest: Iterator<[string, CachedEntry]> | undefined;
}

interface Row {
  live: number;
  /** Rows holding entries this row's entries replaced or removed: it is deleted only after them. */
  covers: number[];
}

/** A staged write: an entry, or a tombstone (`entry` undefined) for `key`, of row `row`. */
interface Staged {
  namespace: string;
  key: string;
  entry: CachedEntry | undefined;
  maxEntries: number;
  row: number;
}

/** What was staged up to a point (`mark`, `rollbackTo`). */
export interface StagedMark {
  writes: number;
  rows: number;
}

/**
 * Values longer than this stay only in their row: 100,000 entries of one released failure record
 * (about 210 B of JSON each) took 46.7 MB of heap with their values, 15.4 MB without. A short value
 * (a session id) is kept, so reading it costs no row read.
 */
export const INLINE_JSON_CHARS = 64;

/** Rows deleted per commit at most: a backlog of dead rows (after a restart) goes in steps. */
const DELETES_PER_COMMIT = 64;

export class CachedState {
  private readonly namespaces = new Map<string, Namespace>();
  private readonly rows = new Map<number, Row>();
  /** Rows with no entry left, deletable once the rows they cover have gone. */
  private readonly dead = new Set<number>();
  private staged: Staged[] = [];
  /** Staged entries by namespace and key: what a later write of the same transaction sees. */
  private readonly stagedByKey = new Map<string, Staged>();
  private stagedRows: Array<{ seq: number; live: number }> = [];
  private stagedDeletes: number[] = [];

  /** The live entry of `key` as the running transaction sees it (staged first); tombstoned, expired or absent: undefined. */
  peek(namespace: string, key: string, now: number): CachedEntry | undefined {
    const staged = this.stagedByKey.get(stagedKey(namespace, key));
    if (staged) return staged.entry && staged.entry.expires > now ? staged.entry : undefined;
    return this.get(namespace, key, now);
  }

  /** The committed live entry of `key`. */
  get(namespace: string, key: string, now: number): CachedEntry | undefined {
    const e = this.namespaces.get(namespace)?.entries.get(key);
    return e && e.expires > now ? e : undefined;
  }

  /** The committed live entries of a namespace, newest first, at most `limit`. */
  list(namespace: string, now: number, limit: number): Array<[string, CachedEntry]> {
    const ns = this.namespaces.get(namespace);
    if (!ns || limit <= 0) return [];
    return [...ns.entries]
      .filter(([, e]) => e.expires > now)
      .reverse()
      .slice(0, limit);
  }

  /** Live entries and evictions per namespace, for status. */
  status(now: number): Array<{ namespace: string; entries: number; evicted: number }> {
    const out = [];
    for (const [namespace, ns] of this.namespaces) {
      let entries = 0;
      for (const e of ns.entries.values()) if (e.expires > now) entries++;
      out.push({ namespace, entries, evicted: ns.evicted });
    }
    return out;
  }

  /** Stages a row the running transaction inserted as `seq`, holding `entries` in order (a tombstone's value is null). */
  stage(seq: number, entries: readonly RowEntry[]): void {
    let live = 0;
    for (const [namespace, key, json, version, expires, maxEntries] of entries) {
      const entry = json === null ? undefined : { json: json.length <= INLINE_JSON_CHARS ? json : undefined, version, expires, row: seq };
      const s: Staged = { namespace, key, entry, maxEntries, row: seq };
      if (entry) live++;
      this.staged.push(s);
      this.stagedByKey.set(stagedKey(namespace, key), s);
    }
    this.stagedRows.push({ seq, live });
  }

  mark(): StagedMark {
    return { writes: this.staged.length, rows: this.stagedRows.length };
  }

  /** Drops what was staged after `mark` (an append that failed alone). */
  rollbackTo(mark: StagedMark): void {
    this.staged.length = mark.writes;
    this.stagedRows.length = mark.rows;
    this.stagedByKey.clear();
    for (const s of this.staged) this.stagedByKey.set(stagedKey(s.namespace, s.key), s);
  }

  /** Drops everything staged (the transaction rolled back). */
  rollback(): void {
    this.staged = [];
    this.stagedRows = [];
    this.stagedDeletes = [];
    this.stagedByKey.clear();
  }

  /** Rows the running transaction may delete (at most DELETES_PER_COMMIT), forgotten once it commits. */
  deletable(): number[] {
    const out: number[] = [];
    for (const seq of this.dead) {
      if (out.length >= DELETES_PER_COMMIT) break;
      const row = this.rows.get(seq);
      // The rows it covers go first (the header), in an earlier commit or earlier in this one.
      if (row && row.covers.some((c) => this.rows.has(c) && !out.includes(c))) continue;
      out.push(seq);
    }
    this.stagedDeletes = out;
    return out;
  }

  /** The transaction committed: staged rows and entries take effect, deleted rows are forgotten, namespaces past their bound evict. */
  commit(): void {
    for (const seq of this.stagedDeletes) {
      this.rows.delete(seq);
      this.dead.delete(seq);
    }
    for (const r of this.stagedRows) this.rows.set(r.seq, { live: r.live, covers: [] });
    const touched = new Set<Namespace>();
    for (const s of this.staged) touched.add(this.apply(s));
    for (const r of this.stagedRows) if (this.rows.get(r.seq)!.live === 0) this.dead.add(r.seq);
    for (const ns of touched) this.evict(ns);
    this.rollback();
  }

  /**
   * Replays the rows of `state_cache` (at open, in sequence order), then drops the entries expired
   * at `now` (after the replay: an expired entry still replaces an older one of its key).
   */
  load(rows: Iterable<{ seq: number; entries: string }>, now: number): void {
    for (const { seq, entries } of rows) {
      this.stage(seq, JSON.parse(entries) as RowEntry[]);
      this.commit();
    }
    for (const ns of this.namespaces.values()) {
      for (const [key, e] of ns.entries) if (e.expires <= now) this.drop(ns, key, e);
    }
  }

  /** Removes the entries expired at `now`, from the oldest of each namespace up to a live one. */
  sweep(now: number): void {
    for (const ns of this.namespaces.values()) {
      for (let first = this.first(ns); first && first[1].expires <= now; first = this.first(ns)) this.drop(ns, first[0], first[1]);
    }
  }

  private apply(s: Staged): Namespace {
    let ns = this.namespaces.get(s.namespace);
    if (!ns) this.namespaces.set(s.namespace, (ns = { entries: new Map(), maxEntries: s.maxEntries, evicted: 0, head: undefined, rest: undefined }));
    const before = ns.entries.get(s.key);
    if (before) {
      this.drop(ns, s.key, before);
      if (before.row !== s.row) this.rows.get(s.row)?.covers.push(before.row);
    }
    if (s.entry) {
      ns.entries.set(s.key, s.entry);
      ns.maxEntries = s.maxEntries;
    }
    return ns;
  }

  private evict(ns: Namespace): void {
    while (ns.entries.size > ns.maxEntries) {
      const first = this.first(ns);
      if (!first) break;
      this.drop(ns, first[0], first[1]);
      ns.evicted++;
    }
  }

  /** The oldest entry of a namespace. */
  private first(ns: Namespace): [string, CachedEntry] | undefined {
    if (ns.head && ns.entries.get(ns.head[0]) === ns.head[1]) return ns.head;
    ns.head = undefined;
    let restarted = false;
    for (;;) {
      // A live iterator: it skips deleted entries and reaches entries added after it was made,
      // unless it had finished (then it stays finished, and is made again).
      const next = ns.rest?.next();
      if (next === undefined || next.done === true) {
        if (restarted || !ns.entries.size) return undefined;
        ns.rest = ns.entries.entries();
        restarted = true;
        continue;
      }
      if (ns.entries.get(next.value[0]) === next.value[1]) return (ns.head = next.value);
    }
  }

  private drop(ns: Namespace, key: string, entry: CachedEntry): void {
    ns.entries.delete(key);
    const row = this.rows.get(entry.row);
    if (row && --row.live === 0) this.dead.add(entry.row);
  }
}

function stagedKey(namespace: string, key: string): string {
  return `${namespace}\u0000${key}`;
}
