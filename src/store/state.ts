/**
 * Processor state and durable timers (DESIGN 3.3 "processor state"): the generic part every store
 * shares. Stateful components (watchdog, journal offsets, trace → session map, detectors) keep
 * namespaced, versioned key-value entries and per-pipeline timers in the store, written in the same
 * atomic commit as the page's groups, outbox and cursor (`PageCommit.state`, `PageCommit.timers`).
 * A store implements this once; adding a stateful component adds no store method.
 *
 * Entries. `{namespace, key}` → a JSON value with a version (1 for a new entry, +1 on every write).
 * A write that carries `version` (= stored version + 1, as group states do) is conditional: when
 * the stored version differs the whole commit is refused with VIGIL_STORE_CONFLICT and the runner
 * processes the page again from fresh state. A write without `version` is unconditional (last
 * writer wins), for idempotent facts such as "trace T belongs to session S". Writes of one commit
 * apply in order; a later write sees the earlier one's version. `value: null` deletes. An entry
 * with `ttlMs` expires that long after the commit (store clock): expired entries are invisible at
 * once (absent, version 0) and deleted in bounded chunks by later writes to their namespace.
 *
 * Bounds. A value is at most MAX_STATE_VALUE_BYTES of JSON; namespaces and keys have bounded
 * lengths (VIGIL_STATE_INVALID otherwise, naming namespace and key). A namespace holds at most
 * `maxEntries` entries (the writes say how many, default DEFAULT_STATE_MAX_ENTRIES): beyond it the
 * expired entries go first, then the oldest written are evicted and counted per namespace (status
 * shows the count). Eviction, not refusal, because the state processors keep is a cache of facts
 * (sessions of traces, offsets of files that may be gone) and refusing would stall the pipeline;
 * a component whose entries must never be evicted keeps them in a namespace of their own, sized
 * above what it can hold.
 *
 * Timers. `{id, owner, partition, due, payload}` per pipeline: `due` is absolute (ms since the
 * epoch), so after a restart a timer fires with the remaining delay. Setting an existing id
 * replaces it (the store gives every set a new, never reused `version`); clearing a timer that is
 * no longer pending — or no longer at the version given — refuses the commit (VIGIL_STORE_CONFLICT),
 * so two sidecars never both fire one. Clears apply before sets, so "clear X and set X" in one
 * commit re-arms X. A pipeline holds at most MAX_TIMERS_PER_PIPELINE pending timers; a commit that
 * would exceed it is refused retryably (VIGIL_STATE_FULL) — a timer is an obligation, never evicted.
 */
import { VigilError } from '../errors.ts';

/** Largest JSON text of one state value or timer payload. */
export const MAX_STATE_VALUE_BYTES = 64 * 1024;
/** Entries a namespace keeps when its writes name no bound. */
export const DEFAULT_STATE_MAX_ENTRIES = 100_000;
/** Pending timers per pipeline. */
export const MAX_TIMERS_PER_PIPELINE = 100_000;
/** Namespaces: component ids and the like (`watchdog`, `journal/ops`, `trace-session`). */
export const NAMESPACE_PATTERN = /^[A-Za-z0-9_.:/-]{1,128}$/;
/** Keys and timer ids: any text up to this many characters. */
export const MAX_STATE_KEY_LENGTH = 1024;
/**
 * Expired entries deleted per namespace per commit that writes it, at least: a commit deletes up
 * to twice the entries it writes plus this, so purging keeps pace with writing.
 */
export const STATE_PURGE_CHUNK = 64;

/** One write of a commit's state section. */
export interface StateWrite {
  namespace: string;
  key: string;
  /** Any JSON value; `null` deletes the entry. */
  value: unknown;
  /** Conditional write: the new version, stored version + 1 (1 when absent). Omitted: unconditional. */
  version?: number;
  /** Expires this long after the commit; omitted: kept until deleted or evicted. */
  ttlMs?: number;
  /** The namespace's entry bound (see the header); DEFAULT_STATE_MAX_ENTRIES when omitted. */
  maxEntries?: number;
  /**
   * Keep this write's namespace in memory: the SQLite store then holds every entry of the
   * namespace in memory (from this write on, its earlier entries too; the same semantics as
   * any other namespace) and makes each durable as a row keyed by write order instead of by key
   * (README, State: the correlation's per-trace state, written at every ingest). A hint about
   * cost: the other stores ignore it.
   */
  cached?: boolean;
}

/** A stored entry as `loadState` returns it. */
export interface StateEntry {
  value: unknown;
  version: number;
  /** When it expires (store clock, ms since the epoch); absent: no expiry. */
  expiresAt?: number;
}

export interface StateListEntry extends StateEntry {
  key: string;
}

/** Entry counts of a namespace, for status. */
export interface NamespaceStatus {
  namespace: string;
  /** Live (unexpired) entries. */
  entries: number;
  /** Entries evicted because the namespace was over its bound, ever. */
  evicted: number;
}

/** A durable timer of a pipeline. */
export interface TimerSpec {
  /** Stable and unique per pipeline (components prefix it with their own id to stay unique). */
  id: string;
  /** The component (its id) that set it and acts on it when it fires. */
  owner: string;
  /** The partition whose timer page carries it. */
  partition: string;
  /** When it falls due: ms since the epoch (absolute, so a restart keeps the remaining delay). */
  due: number;
  /** Any JSON value the owner needs when it fires. */
  payload: unknown;
}

/** A pending timer as the store returns it: `version` names this very setting of the timer. */
export interface FiredTimer extends TimerSpec {
  version: number;
}

/** Clears a pending timer; with `version`, only that setting of it (what the runner does). */
export interface TimerRef {
  id: string;
  version?: number;
}

export interface TimerChanges {
  set?: TimerSpec[];
  clear?: TimerRef[];
}

export interface DueTimers {
  /** Timers due at `now`, earliest first, at most `limit`. */
  timers: FiredTimer[];
  /** Due time of the earliest pending timer not returned; null when none. */
  next: number | null;
}

export interface TimerStatus {
  pending: number;
  /** Earliest due time, ms since the epoch; null when none. */
  nextDue: number | null;
}

/** State writes grouped by namespace with their values serialized, as the stores apply them. */
export interface EncodedNamespace {
  namespace: string;
  maxEntries: number;
  /** A write asked for the namespace to be kept in memory (StateWrite `cached`). */
  cached?: true;
  writes: Array<{ key: string; json: string | null; version?: number; ttlMs?: number }>;
}

/** Checks a commit's state writes and serializes each value once; throws VIGIL_STATE_INVALID. */
export function encodeStateWrites(writes: readonly StateWrite[] | undefined): EncodedNamespace[] {
  if (!writes?.length) return [];
  const byNs = new Map<string, EncodedNamespace>();
  for (const w of writes) {
    // Named only for a refusal: an append carries dozens of writes, nearly always valid.
    const where = w;
    let ns = byNs.get(w.namespace);
    // A namespace is checked once per commit (the writes of an append share two or three).
    if (ns === undefined && (typeof w.namespace !== 'string' || !NAMESPACE_PATTERN.test(w.namespace))) {
      throw invalid(`${named(where)}: a namespace is 1-128 characters of letters, digits and _ . : / -`);
    }
    checkKey(w.key, where, 'key');
    if (w.version !== undefined && !(Number.isSafeInteger(w.version) && w.version >= 1))
      throw invalid(`${named(where)}: version must be an integer >= 1 (stored version + 1)`);
    if (w.ttlMs !== undefined && !(Number.isSafeInteger(w.ttlMs) && w.ttlMs >= 1)) throw invalid(`${named(where)}: ttlMs must be a positive integer`);
    if (w.maxEntries !== undefined && !(Number.isSafeInteger(w.maxEntries) && w.maxEntries >= 1))
      throw invalid(`${named(where)}: maxEntries must be a positive integer`);
    const json = w.value === null || w.value === undefined ? null : toJson(w.value, where);
    if (!ns) byNs.set(w.namespace, (ns = { namespace: w.namespace, maxEntries: DEFAULT_STATE_MAX_ENTRIES, writes: [] }));
    if (w.maxEntries !== undefined) ns.maxEntries = w.maxEntries;
    if (w.cached === true) ns.cached = true;
    // Built without spreads (a spread of a fresh object per write): the same keys, in the same order.
    const encoded: EncodedNamespace['writes'][number] = { key: w.key, json };
    if (w.version !== undefined) encoded.version = w.version;
    if (w.ttlMs !== undefined) encoded.ttlMs = w.ttlMs;
    ns.writes.push(encoded);
  }
  return [...byNs.values()];
}

export interface EncodedTimers {
  set: Array<TimerSpec & { json: string }>;
  clear: TimerRef[];
}

/** Checks a commit's timer changes and serializes payloads once; throws VIGIL_STATE_INVALID. */
export function encodeTimers(t: TimerChanges | undefined): EncodedTimers {
  const set = (t?.set ?? []).map((spec) => {
    const where = `timer ${JSON.stringify(spec.id)}`;
    checkKey(spec.id, where, 'id');
    checkKey(spec.owner, where, 'owner');
    if (typeof spec.partition !== 'string') throw invalid(`${where}: partition must be a string`);
    if (!Number.isSafeInteger(spec.due) || spec.due < 0) throw invalid(`${where}: due must be ms since the epoch (an integer), got ${String(spec.due)}`);
    return { ...spec, json: toJson({ owner: spec.owner, partition: spec.partition, payload: spec.payload ?? null } satisfies TimerBody, where) };
  });
  const clear = t?.clear ?? [];
  for (const c of clear) {
    checkKey(c.id, `timer clear ${JSON.stringify(c.id)}`, 'id');
    if (c.version !== undefined && !Number.isSafeInteger(c.version)) throw invalid(`timer clear ${JSON.stringify(c.id)}: version must be an integer`);
  }
  duplicates(
    set.map((s) => s.id),
    'sets',
  );
  duplicates(
    clear.map((c) => c.id),
    'clears',
  );
  return { set, clear };
}

/** What a store keeps per timer besides id, due and version. */
export interface TimerBody {
  owner: string;
  partition: string;
  payload: unknown;
}

export function decodeTimer(id: string, version: number, due: number, json: string, where: string): FiredTimer {
  const body = parseStored<TimerBody>(json, where);
  return { id, owner: body.owner, partition: body.partition, due, payload: body.payload, version };
}

export function parseStored<T>(json: string, where: string): T {
  try {
    return JSON.parse(json) as T;
  } catch (err) {
    throw new VigilError('VIGIL_STORE_CORRUPT', `${where} holds unreadable JSON`, { cause: err });
  }
}

export function timersFull(pipeline: string, pending: number): VigilError {
  return new VigilError(
    'VIGIL_STATE_FULL',
    `pipeline '${pipeline}' would hold ${pending} pending timers, over the bound of ${MAX_TIMERS_PER_PIPELINE}; the page is retried once timers have fired`,
    { transient: true },
  );
}

export function timerGone(id: string, version: number | undefined, stored: number | undefined): VigilError {
  const what = stored === undefined ? 'is no longer pending' : `is at version ${stored}, not ${String(version)}`;
  return new VigilError('VIGIL_STORE_CONFLICT', `timer ${JSON.stringify(id)} ${what} (fired or changed by another writer)`, { transient: true });
}

export function stateConflict(namespace: string, key: string, stored: number, version: number): VigilError {
  return new VigilError('VIGIL_STORE_CONFLICT', `state ${namespace}/${key} changed concurrently (version ${stored}, expected ${version - 1})`, { transient: true });
}

/** What a refusal names: a text, or the state write it is made of (only when there is a refusal). */
type Where = string | StateWrite;

function named(where: Where): string {
  return typeof where === 'string' ? where : `state write ${JSON.stringify(where.namespace)}/${JSON.stringify(where.key)}`;
}

function checkKey(v: unknown, where: Where, what: string): void {
  if (typeof v !== 'string' || v.length === 0 || v.length > MAX_STATE_KEY_LENGTH)
    throw invalid(`${named(where)}: ${what} must be a non-empty string of at most ${MAX_STATE_KEY_LENGTH} characters`);
}

function toJson(value: unknown, where: Where): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (err) {
    throw invalid(`${named(where)}: the value is not JSON-serializable (${(err as Error).message})`);
  }
  if (json === undefined) throw invalid(`${named(where)}: the value is not JSON-serializable`);
  // A UTF-16 code unit is at most 3 bytes of UTF-8: short values need no count.
  if (json.length * 3 <= MAX_STATE_VALUE_BYTES) return json;
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_STATE_VALUE_BYTES)
    throw invalid(`${named(where)}: the value is ${bytes} bytes of JSON, over the bound of ${MAX_STATE_VALUE_BYTES}; keep less in one entry or split it`);
  return json;
}

function duplicates(ids: string[], what: string): void {
  const seen = new Set<string>();
  for (const id of ids) {
    if (seen.has(id)) throw invalid(`timer ${JSON.stringify(id)} appears twice in one commit's ${what}`);
    seen.add(id);
  }
}

function invalid(message: string): VigilError {
  return new VigilError('VIGIL_STATE_INVALID', message);
}
