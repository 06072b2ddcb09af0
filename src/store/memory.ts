/**
 * The `memory` store: the store contract without durability, for tests and throwaway runs. It
 * keeps the same semantics as the durable stores (ordered per-partition logs, cursors, atomic
 * commits with version checks, trimmed outbox) so a pipeline behaves the same on every store.
 */
import type { StoreFactory } from '../component.ts';
import { s, type Infer } from '../config/schema.ts';
import { VigilError } from '../errors.ts';
import type { AgentEvent } from '../model/event.ts';
import type { DeadLetter, GroupState, OutboxEntry } from '../model/work.ts';
import { BoundedMap } from './bounded-map.ts';
import { PageBases } from './page-bases.ts';
import { RecentFailures } from './recent-failures.ts';
import { MAX_DEAD_LETTERS, type AppendResult, type LogEntry, type PageCommit, type PartitionBacklog, type StateStore, type StoreStatus } from './types.ts';

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
  private closed = false;

  constructor(private readonly cfg: MemoryStoreConfig = { dedupe_window: 24 * 3_600_000, max_seen_ids: 1_000_000 }, private readonly now: () => number = Date.now) {
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

  async append(pipeline: string, events: AgentEvent[]): Promise<AppendResult> {
    this.check();
    const now = this.now();
    let appended = 0;
    let duplicates = 0;
    for (const event of events) {
      const seenKey = `${pipeline}\u0000${event.eventId}`;
      const expires = this.seen.get(seenKey);
      if (expires !== undefined && expires > now) {
        duplicates++;
        continue;
      }
      this.seen.set(seenKey, now + this.cfg.dedupe_window);
      this.partitionLog(pipeline, event.partition).entries.push({ id: String(this.nextSeq++), event });
      appended++;
    }
    return { appended, duplicates };
  }

  private partitionLog(pipeline: string, partition: string): PartitionLog {
    let parts = this.logs.get(pipeline);
    if (!parts) this.logs.set(pipeline, (parts = new Map()));
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
    const page = structuredClone(log?.entries.slice(0, limit) ?? []);
    this.bases.remember(pipeline, partition, page[page.length - 1]?.id, log?.cursor ? String(log.cursor) : '');
    return page;
  }

  async loadGroups(keys: readonly string[]): Promise<Map<string, GroupState>> {
    this.check();
    const out = new Map<string, GroupState>();
    for (const k of keys) {
      const g = this.groups.get(k);
      if (g) out.set(k, { ...g });
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
    const log = this.logs.get(c.pipeline)?.get(c.partition);
    const cursor = Number(c.cursor);
    if (!log) throw new VigilError('VIGIL_STORE_CORRUPT', `commit for unknown partition '${c.partition}' of pipeline '${c.pipeline}'`);
    // Validate everything before writing anything: the commit is all or nothing.
    const base = this.bases.take(c.pipeline, c.partition, c.cursor);
    if (cursor <= log.cursor || (base !== undefined && base !== (log.cursor ? String(log.cursor) : ''))) {
      throw new VigilError('VIGIL_STORE_CONFLICT', `partition '${c.partition}' was committed by another writer since the page was read (cursor ${log.cursor})`, { transient: true });
    }
    for (const g of c.groups) {
      const stored = this.groups.get(g.groupKey)?.version ?? 0;
      if (stored !== g.version - 1) {
        throw new VigilError('VIGIL_STORE_CONFLICT', `group ${g.groupKey} changed concurrently (version ${stored}, expected ${g.version - 1})`, { transient: true });
      }
    }
    for (const g of c.groups) this.groups.set(g.groupKey, { ...g });
    for (const t of c.turns) {
      const key = `${c.pipeline}\u0000${t.turnId}`;
      this.turns.set(key, (this.turns.get(key) ?? 0) + t.created);
    }
    for (const r of c.revisions) this.revisions.set(r.executionId, r.revision);
    const outbox = this.outbox(c.pipeline);
    for (const o of c.outbox) outbox.entries.push({ ...structuredClone(o), seq: outbox.nextSeq++ });
    for (const f of c.failures) this.recent.add(f);
    // Trim what was processed: the log keeps only the backlog.
    let drop = 0;
    while (drop < log.entries.length && Number(log.entries[drop]!.id) <= cursor) drop++;
    log.entries.splice(0, drop);
    log.cursor = cursor;
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
    return structuredClone(o.entries.filter((e) => e.seq > after).slice(0, limit));
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
    return all.sort((a, b) => b.time - a.time || b.entry.seq - a.entry.seq).slice(0, limit).map((d) => structuredClone(d));
  }

  async status(): Promise<StoreStatus> {
    const pipelines = new Set([...this.logs.keys(), ...this.outboxes.keys()]);
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
        };
      }),
      groups: this.groups.size,
      openWork: [...this.groups.values()].filter((g) => g.openWorkId).length,
      recentFailures: this.recent.list(),
      deadLetters: { total: [...this.dead.values()].reduce((n, l) => n + l.length, 0), newest: await this.listDeadLetters(5) },
    };
  }
}

export const memoryStoreFactory: StoreFactory<MemoryStoreConfig> = {
  type: 'memory',
  schema,
  create: (_settings, cfg) => new MemoryStore(cfg),
};
