/**
 * The `memory` store: the store contract without durability, for tests and throwaway runs. It
 * keeps the same semantics as the durable stores (ordered per-partition logs, cursors, atomic
 * commits with version checks, trimmed outbox) so a pipeline behaves the same on every store.
 */
import type { StoreFactory } from '../component.ts';
import { s, type Infer } from '../config/schema.ts';
import { VigilError } from '../errors.ts';
import { deepFreeze } from '../internal/deep-freeze.ts';
import { dedupeTime, type AgentEvent } from '../model/event.ts';
import type { DeadLetter, GroupState, OutboxEntry, OutboxItem } from '../model/work.ts';
import { BoundedMap } from './bounded-map.ts';
import { KeyedState, type HeldEntry } from './keyed-state.ts';
import { PageBases } from './page-bases.ts';
import { RecentFailures } from './recent-failures.ts';
import {
  encodeStateWrites,
  encodeTimers,
  MAX_TIMERS_PER_PIPELINE,
  parseStored,
  timerGone,
  timersFull,
  type DueTimers,
  type EncodedNamespace,
  type EncodedTimers,
  type FiredTimer,
  type NamespaceStatus,
  type StateEntry,
  type StateListEntry,
} from './state.ts';
import {
  MAX_DEAD_LETTERS,
  type AppendOptions,
  type AppendResult,
  type LogEntry,
  type PageCommit,
  type PartitionBacklog,
  type StateStore,
  type StoreStatus,
} from './types.ts';

const schema = s.object({
  /** How long an event id is remembered to drop redeliveries (wall clock). */
  dedupe_window: s.duration({ min: 1000 }).default(24 * 3_600_000),
  /** At most this many remembered event ids; the oldest are forgotten first. */
  max_seen_ids: s.int({ min: 1000 }).default(1_000_000),
});
export type MemoryStoreConfig = Infer<typeof schema>;

interface PartitionLog {
  entries: LogEntry[];
  /** Sequence of the last processed entry (0 = none). */
  cursor: number;
}

interface Outbox {
  entries: OutboxEntry[];
  nextSeq: number;
  cursors: Map<string, number>;
}

interface StoredTimer {
  id: string;
  owner: string;
  partition: string;
  due: number;
  json: string;
  version: number;
}

export class MemoryStore implements StateStore {
  readonly kind = 'memory';
  private nextSeq = 1;
  private readonly logs = new Map<string, Map<string, PartitionLog>>();
  private readonly seen: BoundedMap<string, number>;
  private readonly groups = new Map<string, GroupState>();
  private readonly turns = new BoundedMap<string, number>(100_000);
  private readonly revisions = new BoundedMap<string, string>(100_000);
  private readonly outboxes = new Map<string, Outbox>();
  private readonly recent = new RecentFailures();
  private readonly dead = new Map<string, DeadLetter[]>();
  private readonly bases = new PageBases();
  /** Processor state: the same class holds the SQLite store's namespaces kept in memory. */
  private readonly kv = new KeyedState();
  private readonly timers = new Map<string, Map<string, StoredTimer>>();
  private timerSeq = 0;
  private closed = false;

  constructor(
    private readonly cfg: MemoryStoreConfig = { dedupe_window: 24 * 3_600_000, max_seen_ids: 1_000_000 },
    private readonly now: () => number = Date.now,
  ) {
    this.seen = new BoundedMap(cfg.max_seen_ids);
  }

  async open(): Promise<void> {
    this.closed = false;
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private check(): void {
    if (this.closed) throw new VigilError('VIGIL_STORE_UNAVAILABLE', 'memory store is closed', { transient: true });
  }

  async append(pipeline: string, events: AgentEvent[], opts: AppendOptions = {}): Promise<AppendResult> {
    this.check();
    const now = this.now();
    const state = encodeStateWrites(opts.state);
    this.checkState(state, now);
    const result = this.appendEvents(pipeline, events, now);
    this.applyState(state, now);
    return result;
  }

  /** Appends what the dedupe lets through. */
  private appendEvents(pipeline: string, events: readonly AgentEvent[], now: number): AppendResult {
    let appended = 0;
    let duplicates = 0;
    for (const event of events) {
      // A record is known by its id and its own time (a redelivery has both again), as in the SQLite store.
      const seenKey = `${pipeline}\u0000${dedupeTime(event)}\u0000${event.eventId}`;
      const expires = this.seen.get(seenKey);
      if (expires !== undefined && expires > now) {
        duplicates++;
        continue;
      }
      this.seen.set(seenKey, now + this.cfg.dedupe_window);
      this.partitionLog(pipeline, event.partition).entries.push(Object.freeze({ id: String(this.nextSeq++), event: deepFreeze(event) }));
      appended++;
    }
    return { appended, duplicates };
  }

  private partitionLog(pipeline: string, partition: string): PartitionLog {
    let parts = this.logs.get(pipeline);
    if (!parts) this.logs.set(pipeline, (parts = new Map<string, PartitionLog>()));
    let log = parts.get(partition);
    if (!log) parts.set(partition, (log = { entries: [], cursor: 0 }));
    return log;
  }

  async pendingCount(pipeline: string): Promise<number> {
    let n = 0;
    for (const log of this.logs.get(pipeline)?.values() ?? []) n += log.entries.length;
    return n;
  }

  async backlog(pipeline: string): Promise<PartitionBacklog[]> {
    this.check();
    const out: PartitionBacklog[] = [];
    for (const [partition, log] of this.logs.get(pipeline) ?? []) {
      if (log.entries.length) out.push({ partition, pending: log.entries.length });
    }
    return out;
  }

  async readPage(pipeline: string, partition: string, limit: number): Promise<LogEntry[]> {
    this.check();
    const log = this.logs.get(pipeline)?.get(partition);
    // Entries are frozen when appended, so a page shares them instead of copying them: a processor
    // cannot change what the log holds (what a durable store's fresh copy guarantees), at no cost.
    const page = log?.entries.slice(0, limit) ?? [];
    this.bases.remember(pipeline, partition, page[page.length - 1]?.id, log?.cursor ? String(log.cursor) : '');
    return page;
  }

  async readAfter(pipeline: string, partition: string, after: string, limit: number): Promise<LogEntry[]> {
    this.check();
    const log = this.logs.get(pipeline)?.get(partition);
    if (!log) return [];
    // Ids are increasing sequence numbers: the first entry after `after` by binary search.
    const seq = Number(after);
    if (!Number.isSafeInteger(seq)) throw new RangeError(`not an entry id of this store: ${JSON.stringify(after)}`);
    let lo = 0;
    let hi = log.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (Number(log.entries[mid]!.id) <= seq) lo = mid + 1;
      else hi = mid;
    }
    // No base remembered: the reader commits releases that end anywhere in what it kept, not this page.
    return log.entries.slice(lo, lo + limit);
  }

  async loadGroups(keys: readonly string[]): Promise<Map<string, GroupState>> {
    this.check();
    const out = new Map<string, GroupState>();
    for (const k of keys) {
      const g = this.groups.get(k);
      // Frozen when committed: handed out as it is, as log entries are (a reader cannot change it).
      if (g) out.set(k, g);
    }
    return out;
  }

  async loadTurns(pipeline: string, turnIds: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const t of turnIds) {
      const n = this.turns.get(`${pipeline}\u0000${t}`);
      if (n !== undefined) out.set(t, n);
    }
    return out;
  }

  async lookupRevisions(executionIds: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (const id of executionIds) {
      const r = this.revisions.get(id);
      if (r !== undefined) out.set(id, r);
    }
    return out;
  }

  async commit(c: PageCommit): Promise<void> {
    this.check();
    const now = this.now();
    const state = encodeStateWrites(c.state);
    const timers = encodeTimers(c.timers);
    const log = this.logs.get(c.pipeline)?.get(c.partition);
    const cursor = Number(c.cursor);
    // Validate everything before writing anything: the commit is all or nothing.
    if (c.cursor !== null) {
      if (!log) throw new VigilError('VIGIL_STORE_CORRUPT', `commit for unknown partition '${c.partition}' of pipeline '${c.pipeline}'`);
      const base = this.bases.take(c.pipeline, c.partition, c.cursor);
      if (cursor <= log.cursor || (base !== undefined && base !== (log.cursor ? String(log.cursor) : ''))) {
        throw new VigilError('VIGIL_STORE_CONFLICT', `partition '${c.partition}' was committed by another writer since the page was read (cursor ${log.cursor})`, {
          transient: true,
        });
      }
    }
    for (const g of c.groups) {
      const stored = this.groups.get(g.groupKey)?.version ?? 0;
      if (stored !== g.version - 1) {
        throw new VigilError('VIGIL_STORE_CONFLICT', `group ${g.groupKey} changed concurrently (version ${stored}, expected ${g.version - 1})`, { transient: true });
      }
    }
    this.checkState(state, now);
    this.checkTimers(c.pipeline, timers);
    for (const a of c.appends ?? []) this.appendEvents(a.pipeline, a.events, now);
    // A frozen copy: the page keeps its own object, and loadGroups can share this one (a copy per
    // failure and page fewer). Frozen from a literal's map, the transition is V8's shared one.
    for (const g of c.groups) this.groups.set(g.groupKey, Object.freeze(copyGroup(g)));
    this.applyState(state, now);
    this.applyTimers(c.pipeline, timers);
    for (const t of c.turns) {
      const key = `${c.pipeline}\u0000${t.turnId}`;
      this.turns.set(key, (this.turns.get(key) ?? 0) + t.created);
    }
    for (const r of c.revisions) this.revisions.set(r.executionId, r.revision);
    const outbox = this.outbox(c.pipeline);
    // Frozen, not copied: the page hands its items over, and no reader can change them later.
    for (const o of c.outbox) outbox.entries.push(Object.freeze(withSeq(deepFreeze(o), outbox.nextSeq++)));
    this.recent.addPage(c.failures);
    if (c.cursor === null || !log) return;
    // Trim what was processed: the log keeps only the backlog.
    let drop = 0;
    while (drop < log.entries.length && Number(log.entries[drop]!.id) <= cursor) drop++;
    log.entries.splice(0, drop);
    log.cursor = cursor;
  }

  /** Version checks of a commit's state writes, in order (a later write sees an earlier one). */
  private checkState(state: EncodedNamespace[], now: number): void {
    for (const ns of state) this.kv.check(ns, now);
  }

  private applyState(state: EncodedNamespace[], now: number): void {
    for (const ns of state) this.kv.apply(ns, now);
  }

  private checkTimers(pipeline: string, t: EncodedTimers): void {
    if (!t.set.length && !t.clear.length) return;
    const map = this.timers.get(pipeline);
    for (const c of t.clear) {
      const stored = map?.get(c.id);
      if (!stored || (c.version !== undefined && stored.version !== c.version)) throw timerGone(c.id, c.version, stored?.version);
    }
    const cleared = new Set(t.clear.map((c) => c.id));
    const pending = (map?.size ?? 0) - cleared.size + t.set.filter((s) => !map?.has(s.id) || cleared.has(s.id)).length;
    if (t.set.length && pending > MAX_TIMERS_PER_PIPELINE) throw timersFull(pipeline, pending);
  }

  private applyTimers(pipeline: string, t: EncodedTimers): void {
    if (!t.set.length && !t.clear.length) return;
    let map = this.timers.get(pipeline);
    if (!map) this.timers.set(pipeline, (map = new Map<string, StoredTimer>()));
    for (const c of t.clear) map.delete(c.id);
    for (const s of t.set) map.set(s.id, { id: s.id, owner: s.owner, partition: s.partition, due: s.due, json: s.json, version: ++this.timerSeq });
  }

  private sortedTimers(pipeline: string): StoredTimer[] {
    return [...(this.timers.get(pipeline)?.values() ?? [])].sort((a, b) => a.due - b.due || a.version - b.version);
  }

  async loadState(namespace: string, keys: readonly string[]): Promise<Map<string, StateEntry>> {
    this.check();
    const now = this.now();
    const out = new Map<string, StateEntry>();
    for (const k of keys) {
      const e = this.kv.get(namespace, k, now);
      if (e) out.set(k, entryOf(e));
    }
    return out;
  }

  async listState(namespace: string, limit: number): Promise<StateListEntry[]> {
    this.check();
    return this.kv.list(namespace, limit, this.now()).map(([key, e]) => ({ key, ...entryOf(e) }));
  }

  async dueTimers(pipeline: string, now: number, limit: number): Promise<DueTimers> {
    this.check();
    const sorted = this.sortedTimers(pipeline);
    const timers: FiredTimer[] = [];
    for (const t of sorted) {
      if (t.due > now || timers.length >= limit) break;
      timers.push({ ...parseStored<{ owner: string; partition: string; payload: unknown }>(t.json, 'memory timer'), id: t.id, due: t.due, version: t.version });
    }
    return { timers, next: sorted[timers.length]?.due ?? null };
  }

  private namespaceStatus(): NamespaceStatus[] {
    return this.kv.status(this.now());
  }

  private outbox(pipeline: string): Outbox {
    let o = this.outboxes.get(pipeline);
    if (!o) this.outboxes.set(pipeline, (o = { entries: [], nextSeq: 1, cursors: new Map() }));
    return o;
  }

  async registerExporter(pipeline: string, exporter: string): Promise<void> {
    const o = this.outbox(pipeline);
    if (!o.cursors.has(exporter)) o.cursors.set(exporter, 0);
  }

  async readOutbox(pipeline: string, exporter: string, limit: number): Promise<OutboxEntry[]> {
    this.check();
    const o = this.outbox(pipeline);
    const after = o.cursors.get(exporter) ?? 0;
    const out: OutboxEntry[] = [];
    for (const e of o.entries) {
      if (out.length >= limit) break;
      if (e.seq > after) out.push(e);
    }
    return out;
  }

  async ackOutbox(pipeline: string, exporter: string, seq: number, dead: Array<{ entry: OutboxEntry; reason: string }> = []): Promise<void> {
    this.check();
    if (dead.length) {
      const key = `${pipeline}\u0000${exporter}`;
      const list = this.dead.get(key) ?? [];
      for (const d of dead) list.push({ pipeline, exporter, entry: structuredClone(d.entry), reason: d.reason, time: this.now() });
      if (list.length > MAX_DEAD_LETTERS) list.splice(0, list.length - MAX_DEAD_LETTERS);
      this.dead.set(key, list);
    }
    const o = this.outbox(pipeline);
    if ((o.cursors.get(exporter) ?? 0) < seq) o.cursors.set(exporter, seq);
    const min = Math.min(...o.cursors.values());
    let drop = 0;
    while (drop < o.entries.length && o.entries[drop]!.seq <= min) drop++;
    o.entries.splice(0, drop);
  }

  async outboxLag(pipeline: string, exporter: string): Promise<number> {
    const o = this.outbox(pipeline);
    // Sequence numbers are contiguous, so the entries after a cursor are counted without a scan.
    return Math.max(0, o.nextSeq - 1 - (o.cursors.get(exporter) ?? 0));
  }

  async retireExporters(pipeline: string, keep: readonly string[]): Promise<string[]> {
    const o = this.outbox(pipeline);
    const gone = [...o.cursors.keys()].filter((e) => !keep.includes(e));
    for (const e of gone) o.cursors.delete(e);
    if (gone.length && o.cursors.size) {
      const min = Math.min(...o.cursors.values());
      let drop = 0;
      while (drop < o.entries.length && o.entries[drop]!.seq <= min) drop++;
      o.entries.splice(0, drop);
    }
    return gone;
  }

  async listDeadLetters(limit: number, pipeline?: string): Promise<DeadLetter[]> {
    const all = [...this.dead.values()].flat().filter((d) => pipeline === undefined || d.pipeline === pipeline);
    return all
      .sort((a, b) => b.time - a.time || b.entry.seq - a.entry.seq)
      .slice(0, limit)
      .map((d) => structuredClone(d));
  }

  async status(): Promise<StoreStatus> {
    const pipelines = new Set([...this.logs.keys(), ...this.outboxes.keys(), ...this.timers.keys()]);
    return {
      store: this.kind,
      pipelines: [...pipelines].map((pipeline) => {
        const o = this.outbox(pipeline);
        const last = o.nextSeq - 1;
        return {
          pipeline,
          partitions: [...(this.logs.get(pipeline) ?? [])].map(([partition, log]) => ({
            partition,
            cursor: log.cursor ? String(log.cursor) : null,
            pending: log.entries.length,
          })),
          outbox: {
            size: o.entries.length,
            exporters: [...o.cursors].map(([exporter, cursor]) => ({ exporter, cursor, lag: last - cursor })),
          },
          timers: { pending: this.timers.get(pipeline)?.size ?? 0, nextDue: this.sortedTimers(pipeline)[0]?.due ?? null },
        };
      }),
      groups: this.groups.size,
      openWork: [...this.groups.values()].filter((g) => g.openWorkId).length,
      recentFailures: this.recent.list(),
      deadLetters: { total: [...this.dead.values()].reduce((n, l) => n + l.length, 0), newest: await this.listDeadLetters(5) },
      state: this.namespaceStatus(),
    };
  }
}

function entryOf(e: HeldEntry): StateEntry {
  // Always set here: only the SQLite store keeps a value in its row alone.
  return { value: parseStored(e.json!, 'memory state entry'), version: e.version, ...(e.expiresAt !== undefined ? { expiresAt: e.expiresAt } : {}) };
}

export const memoryStoreFactory: StoreFactory<MemoryStoreConfig> = {
  type: 'memory',
  schema,
  create: (_settings, cfg) => new MemoryStore(cfg),
};

/**
 * A copy of a group state's fields, as a literal: a spread's copy gets a map outside V8's
 * transition tree (the stored and loaded groups had other maps than the processor's own, and
 * freezing one built a new map each time, 1.5 µs), and checking for other keys first (a `for…in`)
 * cost three times the copy. Other keys are not kept — what a group state is to the Redis store
 * too, which stores these fields alone.
 */
export function copyGroup(g: GroupState): GroupState {
  return {
    groupKey: g.groupKey,
    count: g.count,
    firstSeen: g.firstSeen,
    lastSeen: g.lastSeen,
    lastDecision: g.lastDecision,
    openWorkId: g.openWorkId,
    workGeneration: g.workGeneration,
    version: g.version,
  };
}

/**
 * `{ ...o, seq }`, an outbox entry: a literal for a work item that holds just `kind`, `id` and
 * `event` (the recurrence processor's), for the reason copyGroup gives — and a spread's copy given
 * one more key made a new map for every entry. Anything else is spread, as before.
 */
export function withSeq(o: OutboxItem, seq: number): OutboxEntry {
  if (o.kind === 'work' && hasKeys(o, WORK_ITEM_KEYS)) return { kind: o.kind, id: o.id, event: o.event, seq };
  return { ...o, seq };
}
const WORK_ITEM_KEYS = ['kind', 'id', 'event'];

/** Whether `o`'s own enumerable keys are `keys`, in that order, and it has no other (inherited enumerable included). */
function hasKeys(o: object, keys: readonly string[]): boolean {
  let n = 0;
  for (const key in o) {
    if (n >= keys.length || key !== keys[n] || !Object.hasOwn(o, key)) return false;
    n++;
  }
  return n === keys.length;
}
