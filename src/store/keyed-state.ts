/**
 * Processor state held in memory (src/store/state.ts): namespaces of versioned entries, each
 * bounded by its writes' `maxEntries` (the oldest written go first) and purged of expired entries
 * as writes come. It is the memory store's state, and the state of the SQLite store's namespaces
 * kept in memory (StateWrite `cached`): one class, so both keep exactly the same semantics.
 *
 * The SQLite store passes `rows`: every entry put or dropped (written over, deleted, purged,
 * evicted) is mirrored there as one row inserted or deleted, keyed by the entry's sequence number
 * (`seq`, given here in write order). The rows are then always exactly the live entries, in write
 * order, and a restart loads them back as they were: nothing to replay, cover or tombstone.
 *
 * A SQLite transaction can roll back: between `begin()` and `end()` every change is journaled, and
 * `rollback()` (or `rollbackTo` a `mark()`, for a savepoint) puts the entries back. A namespace's
 * entries are kept in write order, which is `seq` order; a rollback restores that order by `seq`.
 */
import { STATE_PURGE_CHUNK, stateConflict, type EncodedNamespace, type NamespaceStatus } from './state.ts';

/** An entry; the value is kept as JSON so it round-trips as in the durable stores. */
export interface HeldEntry {
  /** The value's JSON; undefined: kept only in the store's row (the SQLite store's long values). */
  json: string | undefined;
  version: number;
  expiresAt?: number;
  /** Write order (and the SQLite row's key). */
  seq: number;
}

/** Where each change is mirrored (the SQLite store's `state_log` rows). */
export interface HeldRows {
  /** A new entry (its `json` set); the sink may then drop `json` from it, to read it from the row when asked for. */
  put(namespace: string, key: string, entry: HeldEntry & { json: string }): void;
  drop(entry: HeldEntry): void;
}

/** A namespace's scalars as they were (a rollback's target). */
interface Scalars {
  map: Map<string, HeldEntry> | undefined;
  earliest: number | undefined;
  evicted: number | undefined;
}

/** One change to undo: `key` of `map` held `prev` before it. */
interface Undo {
  map: Map<string, HeldEntry>;
  key: string;
  prev: HeldEntry | undefined;
}

/** A point inside a transaction to roll back to (a savepoint). */
export interface HeldMark {
  at: number;
  scalars: Map<string, Scalars>;
}

export class KeyedState {
  /** Namespace → key → entry; a Map's order is write order (a write re-inserts), oldest first. */
  private readonly kv = new Map<string, Map<string, HeldEntry>>();
  /**
   * Per namespace, a time before which none of its entries expires (a lower bound of their
   * expiry times), so that a write to a namespace where nothing has expired purges nothing without
   * looking at its entries.
   */
  private readonly earliestExpiry = new Map<string, number>();
  private readonly evictedCounts = new Map<string, number>();
  /** Per namespace map, whether its expiry times rise in write order (see purge); dropped with the map. */
  private readonly order = new WeakMap<Map<string, HeldEntry>, { last: number; unordered: boolean }>();
  /** Per namespace map, its oldest entry and an iterator past it (see firstOf), for purges and evictions; dropped with the map. */
  private heads = new WeakMap<Map<string, HeldEntry>, { head?: [string, HeldEntry]; rest?: Iterator<[string, HeldEntry]> }>();
  private seq = 0;
  /** The running transaction's changes (undefined: none is running). */
  private journal: Undo[] | undefined;
  /** The namespaces the running transaction touched, as they were before it. */
  private readonly before = new Map<string, Scalars>();

  constructor(private readonly rows?: HeldRows) {}

  /** Whether the namespace holds entries (expired ones included) or evictions. */
  has(namespace: string): boolean {
    return this.kv.has(namespace) || this.evictedCounts.has(namespace);
  }

  /** Version checks of a namespace's writes, in order (a later write sees an earlier one). */
  check(ns: EncodedNamespace, now: number): void {
    // Unversioned writes (session facts, most of an append's) cannot conflict: nothing to check.
    if (!ns.writes.some((w) => w.version !== undefined)) return;
    const map = this.kv.get(ns.namespace);
    const pending = new Map<string, number>();
    for (const w of ns.writes) {
      const cur = pending.get(w.key) ?? live(map?.get(w.key), now)?.version ?? 0;
      if (w.version !== undefined && w.version !== cur + 1) throw stateConflict(ns.namespace, w.key, cur, w.version);
      pending.set(w.key, w.json === null ? 0 : cur + 1);
    }
  }

  /** Applies a namespace's checked writes; returns whether its eviction count changed. */
  apply(ns: EncodedNamespace, now: number): boolean {
    const name = ns.namespace;
    this.touch(name);
    let map = this.kv.get(name);
    if (!map) this.kv.set(name, (map = new Map<string, HeldEntry>()));
    // The earliest expiry the writes set, noted once per namespace rather than per write.
    let earliest = Infinity;
    for (const w of ns.writes) {
      const prev = map.get(w.key);
      const cur = live(prev, now)?.version ?? 0;
      if (prev) this.remove(map, w.key, prev);
      if (w.json === null) continue;
      const entry: HeldEntry = { json: w.json, version: cur + 1, seq: ++this.seq };
      if (w.ttlMs !== undefined) {
        entry.expiresAt = now + w.ttlMs;
        earliest = Math.min(earliest, entry.expiresAt);
      }
      this.add(name, map, w.key, entry);
    }
    if (earliest !== Infinity) this.earliestExpiry.set(name, Math.min(this.earliestExpiry.get(name) ?? Infinity, earliest));
    this.purge(name, map, now, 2 * ns.writes.length + STATE_PURGE_CHUNK);
    let evicting = false;
    if (map.size > ns.maxEntries) {
      this.purge(name, map, now, map.size - ns.maxEntries);
      let evict = map.size - ns.maxEntries;
      if (evict > 0) {
        evicting = true;
        this.evictedCounts.set(name, (this.evictedCounts.get(name) ?? 0) + evict);
      }
      for (let first = this.firstOf(map); first && evict-- > 0; first = this.firstOf(map)) this.remove(map, first[0], first[1]);
    }
    if (map.size === 0) {
      this.kv.delete(name);
      this.earliestExpiry.delete(name);
    }
    return evicting;
  }

  /**
   * An entry as stored: a SQLite row at open (in `seq` order), or a table's entry taken into
   * memory (`mirror`: then it gets a row of its own, with a new `seq`).
   */
  load(namespace: string, key: string, entry: HeldEntry, mirror = false): void {
    this.touch(namespace);
    if (mirror) entry.seq = ++this.seq;
    let map = this.kv.get(namespace);
    if (!map) this.kv.set(namespace, (map = new Map<string, HeldEntry>()));
    const prev = map.get(key);
    // Two rows of one key (only a damaged file has them): the later one holds.
    if (prev) map.delete(key);
    this.add(namespace, map, key, entry, mirror);
    this.seq = Math.max(this.seq, entry.seq);
    if (entry.expiresAt !== undefined) this.earliestExpiry.set(namespace, Math.min(this.earliestExpiry.get(namespace) ?? Infinity, entry.expiresAt));
  }

  /** A namespace's evictions as stored. */
  loadEvicted(namespace: string, evicted: number): void {
    this.touch(namespace);
    if (evicted > 0) this.evictedCounts.set(namespace, evicted);
  }

  /** The next sequence number is above `seq` (the highest a store ever gave out). */
  seqAbove(seq: number): void {
    this.seq = Math.max(this.seq, seq);
  }

  get(namespace: string, key: string, now: number): HeldEntry | undefined {
    return live(this.kv.get(namespace)?.get(key), now);
  }

  /** Live entries, newest written first, at most `limit`. */
  list(namespace: string, limit: number, now: number): Array<[string, HeldEntry]> {
    const out: Array<[string, HeldEntry]> = [];
    for (const [key, e] of [...(this.kv.get(namespace) ?? [])].reverse()) {
      if (out.length >= limit) break;
      if (live(e, now)) out.push([key, e]);
    }
    return out;
  }

  evicted(namespace: string): number {
    return this.evictedCounts.get(namespace) ?? 0;
  }

  /** Every namespace with entries or evictions, by name. */
  status(now: number): NamespaceStatus[] {
    const names = new Set([...this.kv.keys(), ...this.evictedCounts.keys()]);
    return [...names].sort().map((namespace) => ({ namespace, entries: this.liveCount(namespace, now), evicted: this.evicted(namespace) }));
  }

  /** Journals every change from now on, until `end()` or `rollback()`. */
  begin(): void {
    this.journal = [];
    this.before.clear();
  }

  /** The transaction committed: its changes stand. */
  end(): void {
    this.journal = undefined;
    this.before.clear();
  }

  /** Where a savepoint starts. */
  mark(): HeldMark {
    const scalars = new Map<string, Scalars>();
    for (const name of this.before.keys()) scalars.set(name, this.scalarsOf(name));
    return { at: this.journal?.length ?? 0, scalars };
  }

  /** Undoes the changes made since `mark` (its savepoint rolled back); the transaction goes on. */
  rollbackTo(mark: HeldMark): void {
    if (!this.journal) return;
    this.undo(mark.at);
    for (const [name, before] of [...this.before]) {
      const at = mark.scalars.get(name);
      this.restore(name, at ?? before);
      if (!at) this.before.delete(name);
    }
  }

  /** Undoes every change of the transaction (it rolled back). */
  rollback(): void {
    if (!this.journal) return;
    this.undo(0);
    for (const [name, before] of this.before) this.restore(name, before);
    this.end();
  }

  private undo(to: number): void {
    const journal = this.journal!;
    const maps = new Set<Map<string, HeldEntry>>();
    for (let i = journal.length - 1; i >= to; i--) {
      const { map, key, prev } = journal[i]!;
      if (prev) map.set(key, prev);
      else map.delete(key);
      maps.add(map);
    }
    journal.length = to;
    // An entry put back went to the end of its map: the write order is the order of `seq`.
    for (const map of maps) {
      const entries = [...map].sort((a, b) => a[1].seq - b[1].seq);
      map.clear();
      for (const [k, e] of entries) map.set(k, e);
      this.heads.delete(map);
    }
  }

  private restore(name: string, s: Scalars): void {
    if (s.map) this.kv.set(name, s.map);
    else this.kv.delete(name);
    if (s.earliest === undefined) this.earliestExpiry.delete(name);
    else this.earliestExpiry.set(name, s.earliest);
    if (s.evicted === undefined) this.evictedCounts.delete(name);
    else this.evictedCounts.set(name, s.evicted);
  }

  private touch(name: string): void {
    if (this.journal && !this.before.has(name)) this.before.set(name, this.scalarsOf(name));
  }

  private scalarsOf(name: string): Scalars {
    return { map: this.kv.get(name), earliest: this.earliestExpiry.get(name), evicted: this.evictedCounts.get(name) };
  }

  private add(name: string, map: Map<string, HeldEntry>, key: string, entry: HeldEntry, mirror = true): void {
    this.journal?.push({ map, key, prev: undefined });
    map.set(key, entry);
    // Kept across a rollback: an order it no longer has only costs purges a full look.
    let order = this.order.get(map);
    if (!order) this.order.set(map, (order = { last: -Infinity, unordered: false }));
    if (entry.expiresAt === undefined || entry.expiresAt < order.last) order.unordered = true;
    else order.last = entry.expiresAt;
    if (mirror && entry.json !== undefined) this.rows?.put(name, key, entry as HeldEntry & { json: string });
  }

  private remove(map: Map<string, HeldEntry>, key: string, entry: HeldEntry): void {
    map.delete(key);
    this.removed(map, key, entry);
  }

  /** `key`'s entry has left `map`. */
  private removed(map: Map<string, HeldEntry>, key: string, entry: HeldEntry): void {
    this.journal?.push({ map, key, prev: entry });
    this.rows?.drop(entry);
  }

  /**
   * Deletes up to `max` expired entries. Looks at none while nothing can have expired; a look at
   * every entry learns when the next one expires.
   */
  private purge(namespace: string, map: Map<string, HeldEntry>, now: number, max: number): void {
    if (now < (this.earliestExpiry.get(namespace) ?? Infinity)) return;
    if (this.order.get(map)?.unordered === false) {
      // Every entry expires, at times that rise in write order (a namespace's writes share one
      // TTL): the expired entries are the oldest written, and the first live one expires next.
      // The same entries go as with a look at every entry, which at a namespace's bound of
      // 100,000 or more cost milliseconds a write once entries began to expire.
      for (let first = this.firstOf(map); first; first = this.firstOf(map)) {
        if (first[1].expiresAt! > now) return void this.earliestExpiry.set(namespace, first[1].expiresAt!);
        if (max <= 0) return void this.earliestExpiry.set(namespace, now);
        this.remove(map, first[0], first[1]);
        max--;
      }
      return void this.earliestExpiry.set(namespace, Infinity);
    }
    let next = Infinity;
    for (const [key, e] of map) {
      if (e.expiresAt === undefined) continue;
      if (e.expiresAt > now) {
        next = Math.min(next, e.expiresAt);
        continue;
      }
      if (max <= 0) {
        // More have expired than this purge may delete: the next one looks again.
        next = now;
        break;
      }
      this.remove(map, key, e);
      max--;
    }
    this.earliestExpiry.set(namespace, next);
  }

  /**
   * The oldest entry of a map, and an iterator past it kept for the next call: a fresh iterator
   * would walk over every entry deleted from the front since the map last rehashed (as OldestFirst
   * in bounded-map.ts, which cannot tell a re-inserted key by its value).
   */
  private firstOf(map: Map<string, HeldEntry>): [string, HeldEntry] | undefined {
    let h = this.heads.get(map);
    if (!h) this.heads.set(map, (h = {}));
    // Still there: entries are objects of their own, so one written over is another object.
    if (h.head && map.get(h.head[0]) === h.head[1]) return h.head;
    h.head = undefined;
    let restarted = false;
    for (;;) {
      // A live iterator skips deleted entries and reaches entries added after it was made, unless
      // it had finished (then it is made again).
      const next = h.rest?.next();
      if (next === undefined || next.done === true) {
        if (restarted || map.size === 0) return undefined;
        h.rest = map.entries();
        restarted = true;
        continue;
      }
      if (map.get(next.value[0]) === next.value[1]) return (h.head = next.value);
    }
  }

  /** Live entries of a namespace: all of them while none can have expired (no look at each). */
  private liveCount(namespace: string, now: number): number {
    const map = this.kv.get(namespace);
    if (!map) return 0;
    if (now < (this.earliestExpiry.get(namespace) ?? Infinity)) return map.size;
    let n = 0;
    for (const e of map.values()) if (live(e, now)) n++;
    return n;
  }
}

function live(e: HeldEntry | undefined, now: number): HeldEntry | undefined {
  return e && (e.expiresAt === undefined || e.expiresAt > now) ? e : undefined;
}
