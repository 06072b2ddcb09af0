/**
 * The `redis` store (DESIGN 2): production state shared by many sidecars, on a single Redis node
 * or a Redis Cluster. Ingest logs are Streams (XADD ids are the ordered sequence), one per
 * (pipeline, partition), hash-tagged so a partition's log, cursor and dedupe set share a slot.
 *
 * The commit of a page — group states, turn counters, revisions, outbox, recent failures and the
 * partition cursor — is one Lua script on a single node: atomic, one round trip. In a cluster the
 * cursor lives in the partition's slot and cannot join that script. Instead of spreading groups
 * over slots (which would make a commit touch many slots and need a distributed lock protocol to
 * stay all-or-nothing when a version check fails half-way), all commit state shares the `{state}`
 * slot, and the commit is two idempotent steps:
 *
 *   1. the state script: checks group versions and the partition's high-water mark (the last
 *      committed cursor, kept in the state slot; it must still be where the page was read after),
 *      then writes every state change and the new high-water mark atomically — the commit point;
 *   2. the partition script: advances the cursor to that mark (never backwards) and trims the log.
 *
 * A crash between 1 and 2 leaves the cursor behind the high-water mark; the next readPage of that
 * partition (by any sidecar) sees the mark, advances the cursor first and never hands out an entry
 * the state already counted. Replaying step 1 is refused by the mark (VIGIL_STORE_CONFLICT, the
 * runner re-reads), replaying step 2 changes nothing. So a page is applied exactly once whatever
 * the crash point, and every step is a constant number of round trips whatever the page holds.
 * The cost: commit state lives on one master; the heavy, per-record traffic (appends, dedupe,
 * pages) is spread over the cluster by partition.
 *
 * Processor state and durable timers (src/store/state.ts) live in the `{state}` slot too, so they
 * join the commit script on a single node and in a cluster alike. A timer page's commit moves no
 * cursor: it is the state script alone. A receiver's state written with an append joins the
 * append script on a single node; in a cluster it is a second script after the append (see
 * AppendOptions).
 */
import { VigilError, errorMessage, isVigilError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import { dedupeTime, type AgentEvent } from '../../model/event.ts';
import type { DeadLetter, GroupState, OutboxEntry, OutboxItem } from '../../model/work.ts';
import { PageBases } from '../page-bases.ts';
import { newestFailures, RECENT_FAILURES_MAX } from '../recent-failures.ts';
import {
  decodeTimer,
  encodeStateWrites,
  encodeTimers,
  MAX_TIMERS_PER_PIPELINE,
  parseStored,
  type DueTimers,
  type EncodedNamespace,
  type EncodedTimers,
  type NamespaceStatus,
  type StateEntry,
  type StateListEntry,
} from '../state.ts';
import {
  MAX_DEAD_LETTERS,
  type AppendOptions,
  type AppendResult,
  type LogEntry,
  type OpenOptions,
  type PageCommit,
  type PartitionBacklog,
  type PipelineStatus,
  type RecentFailure,
  type StateStore,
  type StoreStatus,
} from '../types.ts';
import { RedisConnection, type ConnectionConfig, type RedisClient } from './connection.ts';
import { decodeGroup, encodeGroup } from './group-codec.ts';
import { keySpace, type KeySpace } from './keys.ts';
import { ACK_OUTBOX, ADVANCE, APPEND_ALL, APPEND_ONE, COMMIT, DUE_TIMERS, LIST_STATE, READ_OUTBOX, REGISTER, UNREGISTER, WRITE_STATE } from './scripts.ts';

export interface RedisStoreConfig extends ConnectionConfig {
  key_prefix: string;
  dedupe_window: number;
}

/** Groups whose open flag as read is kept (see RedisStore.readOpen); beyond it the record starts again. */
const READ_OPEN_MAX = 65_536;

/** How long pendingCount answers from its last sum of stream lengths (it runs per ingest request). */
const PENDING_CACHE_MS = 250;

type StreamEntry = [id: string, fields: string[]];

interface Scripts {
  vigilAppendAll(...args: Array<string | number>): Promise<[number, number]>;
  vigilAppendOne(...args: Array<string | number>): Promise<[number, number]>;
  vigilRegister(...args: Array<string | number>): Promise<number>;
  vigilUnregister(...args: Array<string | number>): Promise<number>;
  vigilAdvance(...args: Array<string | number>): Promise<number>;
  vigilCommit(...args: Array<string | number>): Promise<[number | string]>;
  vigilReadOutbox(...args: Array<string | number>): Promise<StreamEntry[]>;
  vigilAckOutbox(...args: Array<string | number>): Promise<number>;
  vigilWriteState(...args: Array<string | number>): Promise<number>;
  vigilListState(...args: Array<string | number>): Promise<string[]>;
  vigilDueTimers(...args: Array<string | number>): Promise<[string[], Array<string | null>, string]>;
}

export class RedisStore implements StateStore {
  readonly kind = 'redis';
  /**
   * Single node: the commit script is written to the one connection within `commit`, so every later
   * load runs after it (a commit with `appends`, which only the correlation log makes and awaits, is
   * written once they are in). Cluster: the commit has a second step, and loads go to other nodes.
   */
  readonly commitVisibleOnSend: boolean;
  private conn: RedisConnection | undefined;
  private readonly keys: KeySpace;
  private readonly cluster: boolean;
  private readonly pending = new Map<string, { at: number; count: number }>();
  private readonly bases = new PageBases();
  /**
   * Whether each group this store read had open work, by the version read: key → version × 2 + (1
   * if open). A commit that keeps a group's open flag as it was at the version it replaces sends no
   * open-work change for it (see `openFlag`); the version check makes that version the stored one.
   */
  private readonly readOpen = new Map<string, number>();
  /**
   * Network round trips, for the benchmark (a pipeline or a script counts once); `overlapped`: those
   * sent while another was still awaited (they add no wait of their own).
   */
  readonly counters = { roundTrips: 0, overlapped: 0 };
  private inFlight = 0;
  /** Fault injection for tests: thrown between the two steps of a cluster commit, like a crash there. */
  readonly faults: { betweenCommitSteps?: () => void } = {};

  constructor(
    private readonly cfg: RedisStoreConfig,
    private readonly logger?: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.keys = keySpace(cfg.key_prefix);
    this.cluster = cfg.cluster.enabled;
    this.commitVisibleOnSend = !this.cluster;
  }

  /** The underlying client (tests and the benchmark count its commands). */
  get client(): RedisClient {
    return this.connection().client;
  }

  async open(opts: OpenOptions = {}): Promise<void> {
    if (this.conn) return;
    const defs: Record<keyof Scripts, string> = {
      vigilAppendAll: APPEND_ALL,
      vigilAppendOne: APPEND_ONE,
      vigilRegister: REGISTER,
      vigilUnregister: UNREGISTER,
      vigilAdvance: ADVANCE,
      vigilCommit: COMMIT,
      vigilReadOutbox: READ_OUTBOX,
      vigilAckOutbox: ACK_OUTBOX,
      vigilWriteState: WRITE_STATE,
      vigilListState: LIST_STATE,
      vigilDueTimers: DUE_TIMERS,
    };
    const conn = new RedisConnection(this.cfg, Object.keys(defs), opts.readOnly ? undefined : this.logger);
    for (const [name, lua] of Object.entries(defs)) conn.client.defineCommand(name, { lua });
    this.conn = conn;
    await conn.start();
    if (opts.readOnly && !conn.isReady) {
      // `vigil status` answers now or says why; it does not wait for a server to come back.
      const t = new Promise<void>((r) => setTimeout(r, this.cfg.connect_timeout).unref());
      await Promise.race([conn.whenReady().catch(() => undefined), t]);
      if (!conn.isReady) {
        this.conn = undefined;
        await conn.close();
        throw new VigilError('VIGIL_STORE_UNAVAILABLE', `redis at ${conn.where} is unreachable`, { transient: true });
      }
    }
  }

  async close(): Promise<void> {
    const conn = this.conn;
    this.conn = undefined;
    await conn?.close();
  }

  whenReady(): Promise<void> {
    return this.connection().whenReady();
  }

  isAvailable(): boolean {
    return !!this.conn?.isReady;
  }

  private connection(): RedisConnection {
    if (!this.conn) throw new VigilError('VIGIL_STORE_UNAVAILABLE', 'redis store is closed', { transient: true });
    return this.conn;
  }

  /** Runs store operations, mapping Redis failures to VigilErrors; refuses at once while disconnected. */
  private async run<T>(what: string, fn: (c: RedisClient & Scripts) => Promise<T>): Promise<T> {
    const conn = this.connection();
    if (!conn.isReady) {
      throw new VigilError('VIGIL_STORE_UNAVAILABLE', `cannot ${what}: redis at ${conn.where} is not reachable; retrying in the background`, { transient: true });
    }
    try {
      return await fn(conn.client as RedisClient & Scripts);
    } catch (err) {
      throw this.mapError(err, what);
    }
  }

  private mapError(err: unknown, what: string): VigilError {
    if (isVigilError(err)) return err;
    const msg = errorMessage(err);
    const coded = /(VIGIL_STORE_CONFLICT|VIGIL_STORE_CORRUPT|VIGIL_STATE_FULL) (.*)$/s.exec(msg);
    if (coded?.[1] === 'VIGIL_STORE_CONFLICT') return new VigilError('VIGIL_STORE_CONFLICT', coded[2]!, { transient: true });
    if (coded?.[1] === 'VIGIL_STATE_FULL') return new VigilError('VIGIL_STATE_FULL', coded[2]!, { transient: true });
    if (coded?.[1] === 'VIGIL_STORE_CORRUPT') return new VigilError('VIGIL_STORE_CORRUPT', coded[2]!);
    if (msg.startsWith('WRONGTYPE')) {
      return new VigilError(
        'VIGIL_STORE_CORRUPT',
        `redis at ${this.conn?.where ?? '?'} holds a key of another type under prefix '${this.cfg.key_prefix}' (${msg}); use a prefix of its own`,
        { cause: err },
      );
    }
    return new VigilError('VIGIL_STORE_UNAVAILABLE', `cannot ${what} in redis at ${this.conn?.where ?? '?'}: ${msg}`, { transient: true, cause: err });
  }

  private trip<T>(p: Promise<T>): Promise<T> {
    this.counters.roundTrips++;
    if (this.inFlight > 0) this.counters.overlapped++;
    this.inFlight++;
    const done = () => void this.inFlight--;
    p.then(done, done);
    return p;
  }

  async append(pipeline: string, events: AgentEvent[], opts: AppendOptions = {}): Promise<AppendResult> {
    const state = encodeStateWrites(opts.state);
    if (events.length === 0 && state.length === 0) return { appended: 0, duplicates: 0 };
    const byPartition = new Map<string, AgentEvent[]>();
    for (const e of events) {
      const list = byPartition.get(e.partition);
      if (list) list.push(e);
      else byPartition.set(e.partition, [e]);
    }
    const now = this.now();
    const window = this.cfg.dedupe_window;
    const registry = this.keys.partitions(pipeline);
    const result = await this.run('append to the ingest log', async (c) => {
      const section = this.stateSection(state, now);
      if (!this.cluster) {
        const keys: string[] = [registry, this.keys.state.pipelines, this.keys.state.kvNamespaces, this.keys.state.kvMeta];
        const data: Array<string | number> = [];
        for (const [partition, list] of byPartition) {
          const k = this.keys.partition(pipeline, partition);
          keys.push(k.log, k.cursor, k.seen);
          data.push(partition, list.length);
          for (const e of list) data.push(seenMember(e), JSON.stringify(e));
        }
        const args = [pipeline, now, window, byPartition.size, 7 + data.length, keys.length + 1, ...data, ...section.args];
        keys.push(...section.keys);
        const [appended, duplicates] = await this.trip(c.vigilAppendAll(keys.length, ...keys, ...args));
        return { appended, duplicates };
      }
      if (byPartition.size === 0) {
        await this.writeState(c, section, now);
        return { appended: 0, duplicates: 0 };
      }
      // Cluster: each partition's append is atomic in its slot; registering before and after
      // (see REGISTER) keeps a concurrent drain from forgetting a partition that just got entries.
      const names = [...byPartition.keys()];
      await this.trip(c.vigilRegister(2, registry, this.keys.state.pipelines, pipeline, ...names));
      const parts = await this.trip(
        Promise.all(
          [...byPartition].map(([partition, list]) => {
            const k = this.keys.partition(pipeline, partition);
            const args: Array<string | number> = [now, window, list.length];
            for (const e of list) args.push(seenMember(e), JSON.stringify(e));
            return c.vigilAppendOne(3, k.log, k.cursor, k.seen, ...args);
          }),
        ),
      );
      await this.trip(c.vigilRegister(2, registry, this.keys.state.pipelines, pipeline, ...names));
      // The receiver's state follows its records (another slot): see AppendOptions.
      if (state.length) await this.writeState(c, section, now);
      return parts.reduce((r, [a, d]) => ({ appended: r.appended + a, duplicates: r.duplicates + d }), { appended: 0, duplicates: 0 });
    });
    const cached = this.pending.get(pipeline);
    if (cached) cached.count += result.appended;
    return result;
  }

  private async writeState(c: Scripts, section: { keys: string[]; args: Array<string | number> }, now: number): Promise<void> {
    const s = this.keys.state;
    await this.trip(c.vigilWriteState(2 + section.keys.length, s.kvNamespaces, s.kvMeta, ...section.keys, now, ...section.args));
  }

  /** A state section of a script (see STATE in scripts.ts): its keys and its ARGV part. */
  private stateSection(state: EncodedNamespace[], now: number): { keys: string[]; args: Array<string | number> } {
    const keys: string[] = [];
    const args: Array<string | number> = [state.length];
    for (const ns of state) {
      const k = this.keys.kv(ns.namespace);
      keys.push(k.hash, k.order, k.exp);
      args.push(ns.namespace, ns.maxEntries, ns.writes.length);
      for (const w of ns.writes) args.push(w.key, w.version ?? '', w.ttlMs !== undefined ? now + w.ttlMs : '', w.json ?? '');
    }
    return { keys, args };
  }

  /** A timer section of the commit script (see TIMERS in scripts.ts). */
  private timerSection(t: EncodedTimers): Array<string | number> {
    const args: Array<string | number> = [t.clear.length, t.set.length];
    for (const c of t.clear) args.push(c.id, c.version ?? '');
    for (const x of t.set) args.push(x.id, x.due, x.json);
    return args;
  }

  async pendingCount(pipeline: string): Promise<number> {
    const now = Date.now();
    const cached = this.pending.get(pipeline);
    if (cached && now - cached.at < PENDING_CACHE_MS) return cached.count;
    const count = (await this.backlog(pipeline)).reduce((n, b) => n + b.pending, 0);
    this.pending.set(pipeline, { at: now, count });
    return count;
  }

  async backlog(pipeline: string): Promise<PartitionBacklog[]> {
    return this.run('read the backlog', async (c) => {
      const names = await this.trip(c.zrange(this.keys.partitions(pipeline), 0, -1));
      if (names.length === 0) return [];
      const lens = await this.trip(Promise.all(names.map((p) => c.xlen(this.keys.partition(pipeline, p).log))));
      return names.map((partition, i) => ({ partition, pending: lens[i]! })).filter((b) => b.pending > 0);
    });
  }

  async readPage(pipeline: string, partition: string, limit: number): Promise<LogEntry[]> {
    const k = this.keys.partition(pipeline, partition);
    return this.run('read a page of the ingest log', async (c) => {
      const page = (entries: StreamEntry[], base: string | null) => {
        this.bases.remember(pipeline, partition, entries[entries.length - 1]?.[0], base ?? '');
        return parseEntries(entries, 'e');
      };
      for (;;) {
        if (!this.cluster) {
          // Processed entries are trimmed with the cursor, so the log starts right after it.
          const [cursor, raw] = await this.trip(Promise.all([c.get(k.cursor), c.xrange(k.log, '-', '+', 'COUNT', limit)]));
          return page(raw, cursor);
        }
        const [hw, raw] = await this.trip(Promise.all([c.get(this.keys.highWater(pipeline, partition)), c.xrange(k.log, '-', '+', 'COUNT', limit)]));
        const fresh = hw ? raw.filter(([id]) => streamIdAfter(id, hw)) : raw;
        if (fresh.length === raw.length) return page(raw, hw);
        // A commit reached the state but not the cursor (crash in between): catch up, then serve
        // only what the state has not counted.
        await this.trip(c.vigilAdvance(2, k.log, k.cursor, hw!, this.cfg.dedupe_window));
        if (fresh.length > 0 || raw.length < limit) return page(fresh, hw);
      }
    });
  }

  async loadGroups(keys: readonly string[]): Promise<Map<string, GroupState>> {
    const out = new Map<string, GroupState>();
    if (keys.length === 0) return out;
    const values = await this.run('load groups', (c) => this.trip(c.hmget(this.keys.state.groups, ...keys)));
    if (this.readOpen.size + keys.length > READ_OPEN_MAX) this.readOpen.clear();
    keys.forEach((k, i) => {
      const v = values[i];
      if (!v) return;
      const g = decodeGroup(k, v);
      out.set(k, g);
      this.readOpen.set(k, g.version * 2 + (g.openWorkId ? 1 : 0));
    });
    return out;
  }

  async loadTurns(pipeline: string, turnIds: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    if (turnIds.length === 0) return out;
    const values = await this.run('load turns', (c) => this.trip(c.mget(...turnIds.map((t) => this.keys.turn(pipeline, t)))));
    turnIds.forEach((t, i) => {
      const v = values[i];
      if (v !== null && v !== undefined) out.set(t, Number(v));
    });
    return out;
  }

  async lookupRevisions(executionIds: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (executionIds.length === 0) return out;
    const values = await this.run('look up revisions', (c) => this.trip(c.mget(...executionIds.map((id) => this.keys.revision(id)))));
    executionIds.forEach((id, i) => {
      const v = values[i];
      if (v !== null && v !== undefined) out.set(id, v);
    });
    return out;
  }

  async commit(cm: PageCommit): Promise<void> {
    if (cm.cursor !== null && !/^\d+-\d+$/.test(cm.cursor)) {
      throw new VigilError('VIGIL_STORE_CORRUPT', `commit for partition '${cm.partition}' carries an invalid cursor '${cm.cursor}'`);
    }
    // Other slots than the commit's: appended first; a repeat after a refused or lost commit is deduped.
    for (const a of cm.appends ?? []) await this.append(a.pipeline, a.events);
    const now = this.now();
    const state = this.stateSection(encodeStateWrites(cm.state), now);
    const timers = this.timerSection(encodeTimers(cm.timers));
    const s = this.keys.state;
    const registry = this.keys.partitions(cm.pipeline);
    const part = this.keys.partition(cm.pipeline, cm.partition);
    const timerKeys = this.keys.timers(cm.pipeline);
    const ttl = this.cfg.dedupe_window;
    const keys = [
      s.groups,
      s.versions,
      s.open,
      this.keys.outbox(cm.pipeline),
      this.keys.outboxSeq(cm.pipeline),
      s.recent,
      this.keys.highWater(cm.pipeline, cm.partition),
      registry,
      s.kvNamespaces,
      s.kvMeta,
      timerKeys.hash,
      timerKeys.due,
      s.pipelines,
    ];
    if (!this.cluster && cm.cursor !== null) keys.push(part.log, part.cursor);
    for (const t of cm.turns) keys.push(this.keys.turn(cm.pipeline, t.turnId));
    for (const r of cm.revisions) keys.push(this.keys.revision(r.executionId));
    keys.push(...state.keys);
    // The groups as one argument (see COMMIT): strings only, so the script stores them as sent. A
    // key's lone surrogates go as U+FFFD (toWellFormed), what an argument's UTF-8 encoding stored
    // them as (and HMGET reads back); cjson refuses their JSON escapes.
    const groups: string[] = [];
    for (const g of cm.groups) groups.push(g.groupKey.toWellFormed(), String(g.version), this.openFlag(g), encodeGroup(g));
    const body: Array<string | number> = [JSON.stringify(groups)];
    for (const t of cm.turns) body.push(t.created);
    for (const r of cm.revisions) body.push(r.revision);
    for (const o of cm.outbox) body.push(JSON.stringify(o));
    // Only those that can stay among the newest (the script trims to them): a page of hundreds
    // of failures sends a few, not all.
    const failures = newestFailures(cm.failures);
    for (const f of failures) body.push(f.time, JSON.stringify(f));
    const HEADER = 17;
    const stateAt = HEADER + 1 + body.length;
    const args: Array<string | number> = [
      cm.pipeline,
      cm.partition,
      cm.cursor ?? '',
      ttl,
      ttl,
      ttl,
      cm.groups.length,
      cm.turns.length,
      cm.revisions.length,
      cm.outbox.length,
      failures.length,
      this.cluster ? 'cluster' : 'single',
      (cm.cursor !== null ? this.bases.take(cm.pipeline, cm.partition, cm.cursor) : undefined) ?? '*',
      now,
      MAX_TIMERS_PER_PIPELINE,
      stateAt,
      stateAt + state.args.length,
      ...body,
      ...state.args,
      ...timers,
    ];
    await this.run('commit a page', async (c) => {
      const [score] = await this.trip(c.vigilCommit(keys.length, ...keys, ...args));
      if (!this.cluster || cm.cursor === null) return;
      // Cluster: the state is committed; now the partition side (see the header comment).
      this.faults.betweenCommitSteps?.();
      const left = await this.trip(c.vigilAdvance(2, part.log, part.cursor, cm.cursor, ttl));
      if (left === 0) {
        await this.trip(c.vigilUnregister(1, registry, cm.partition, String(score)));
      }
    });
    this.pending.delete(cm.pipeline);
  }

  /**
   * A group's open flag for the commit script: '1' (add to the open-work set), '0' (remove) or ''
   * (no change) when this store read the group at the version this commit replaces with the same
   * flag. The script refuses the commit unless that version is still the stored one, and that
   * version's commit left the set agreeing with it, so the set is what sending the flag gives; a
   * page's 250 groups mostly keep their flag, and SADD/SREM of every one of them was about a tenth
   * of the commit script's time.
   */
  private openFlag(g: GroupState): string {
    const open = g.openWorkId ? 1 : 0;
    const read = this.readOpen.get(g.groupKey);
    if (read === undefined) return open ? '1' : '0';
    this.readOpen.delete(g.groupKey);
    return read === (g.version - 1) * 2 + open ? '' : open ? '1' : '0';
  }

  async loadState(namespace: string, keys: readonly string[]): Promise<Map<string, StateEntry>> {
    const out = new Map<string, StateEntry>();
    if (keys.length === 0) return out;
    const now = this.now();
    const values = await this.run('load state', (c) => this.trip(c.hmget(this.keys.kv(namespace).hash, ...keys)));
    keys.forEach((k, i) => {
      const e = parseEntry(values[i] ?? null, namespace);
      if (e && (e.expiresAt === undefined || e.expiresAt > now)) out.set(k, e);
    });
    return out;
  }

  async listState(namespace: string, limit: number): Promise<StateListEntry[]> {
    const k = this.keys.kv(namespace);
    const flat = await this.run('list state', (c) => this.trip(c.vigilListState(2, k.hash, k.order, this.now(), limit)));
    const out: StateListEntry[] = [];
    for (let i = 0; i < flat.length; i += 2) out.push({ key: flat[i]!, ...parseEntry(flat[i + 1]!, namespace)! });
    return out;
  }

  async dueTimers(pipeline: string, now: number, limit: number): Promise<DueTimers> {
    const k = this.keys.timers(pipeline);
    const [ids, raw, next] = await this.run('read due timers', (c) => this.trip(c.vigilDueTimers(2, k.hash, k.due, now, limit)));
    const timers = ids.map((id, i) => {
      const m = /^(\d+)\|(\d+)\|/.exec(raw[i] ?? '');
      if (!m) throw new VigilError('VIGIL_STORE_CORRUPT', `redis holds an unreadable timer ${JSON.stringify(id)} of pipeline '${pipeline}'`);
      return decodeTimer(id, Number(m[1]), Number(m[2]), raw[i]!.slice(m[0].length), `redis timer ${JSON.stringify(id)}`);
    });
    return { timers, next: next === '' ? null : Number(next) };
  }

  private async namespaceStatus(c: RedisClient): Promise<NamespaceStatus[]> {
    const s = this.keys.state;
    const names = (await c.smembers(s.kvNamespaces)).sort();
    const now = this.now();
    return Promise.all(
      names.map(async (namespace) => {
        const k = this.keys.kv(namespace);
        const [n, expired, evicted] = await Promise.all([c.hlen(k.hash), c.zcount(k.exp, '-inf', now), c.hget(s.kvMeta, `evicted:${namespace}`)]);
        return { namespace, entries: n - expired, evicted: Number(evicted ?? 0) };
      }),
    );
  }

  async registerExporter(pipeline: string, exporter: string): Promise<void> {
    await this.run('register an exporter', (c) =>
      this.trip(Promise.all([c.hsetnx(this.keys.exporterCursors(pipeline), exporter, 0), c.sadd(this.keys.state.pipelines, pipeline)])),
    );
  }

  async foreignExporters(pipeline: string, keep: readonly string[]): Promise<Array<{ exporter: string; lag: number; retire: string }>> {
    const key = this.keys.exporterCursors(pipeline);
    const [cursors, last] = await this.run('list exporter cursors', (c) => this.trip(Promise.all([c.hgetall(key), c.get(this.keys.outboxSeq(pipeline))])));
    return Object.entries(cursors)
      .filter(([exporter]) => !keep.includes(exporter))
      .map(([exporter, cursor]) => ({
        exporter,
        lag: Math.max(0, Number(last ?? 0) - Number(cursor)),
        retire: `redis-cli HDEL '${key}' '${exporter}'`,
      }));
  }

  async outboxLag(pipeline: string, exporter: string): Promise<number> {
    const [last, cursor] = await this.run('measure an exporter queue', (c) =>
      this.trip(Promise.all([c.get(this.keys.outboxSeq(pipeline)), c.hget(this.keys.exporterCursors(pipeline), exporter)])),
    );
    return Math.max(0, Number(last ?? 0) - Number(cursor ?? 0));
  }

  async probeWrite(bytes: number): Promise<void> {
    const key = `${this.keys.prefix}{state}:probe`;
    await this.run('write a probe', (c) => this.trip(c.set(key, Buffer.alloc(bytes), 'PX', 10_000)));
    await this.run('write a probe', (c) => c.del(key));
  }

  async readOutbox(pipeline: string, exporter: string, limit: number): Promise<OutboxEntry[]> {
    const raw = await this.run('read the outbox', (c) =>
      this.trip(c.vigilReadOutbox(2, this.keys.exporterCursors(pipeline), this.keys.outbox(pipeline), exporter, limit)),
    );
    return raw.map(([id, fields]) => ({ ...parseJson<OutboxItem>(fields[1]!, 'outbox entry'), seq: Number(id.split('-')[0]) }));
  }

  async ackOutbox(pipeline: string, exporter: string, seq: number, dead: Array<{ entry: OutboxEntry; reason: string }> = []): Promise<void> {
    const time = this.now();
    const letters = dead.map((d) => JSON.stringify({ pipeline, exporter, entry: d.entry, reason: d.reason, time } satisfies DeadLetter));
    await this.run('advance an exporter cursor', (c) =>
      this.trip(
        c.vigilAckOutbox(
          4,
          this.keys.exporterCursors(pipeline),
          this.keys.outbox(pipeline),
          this.keys.deadLetters(pipeline, exporter),
          this.keys.state.deadKeys,
          exporter,
          seq,
          MAX_DEAD_LETTERS,
          letters.length,
          ...letters,
        ),
      ),
    );
  }

  async listDeadLetters(limit: number, pipeline?: string): Promise<DeadLetter[]> {
    return this.run('list dead letters', async (c) => {
      const lists = await this.deadLists(c, pipeline);
      const raw = await Promise.all(lists.map((k) => c.lrange(k, 0, limit - 1)));
      return raw
        .flat()
        .map((j) => parseJson<DeadLetter>(j, 'dead letter'))
        .sort((a, b) => b.time - a.time || b.entry.seq - a.entry.seq)
        .slice(0, limit);
    });
  }

  private async deadLists(c: RedisClient, pipeline?: string): Promise<string[]> {
    const all = await c.smembers(this.keys.state.deadKeys);
    const prefix = pipeline === undefined ? undefined : this.keys.deadLetters(pipeline, '');
    return all.filter((k) => prefix === undefined || k.startsWith(prefix));
  }

  async status(): Promise<StoreStatus> {
    return this.run('read the status', async (c) => {
      const s = this.keys.state;
      const pipelineIds = (await c.smembers(s.pipelines)).sort();
      const pipelines: PipelineStatus[] = await Promise.all(
        pipelineIds.map(async (pipeline) => {
          const tk = this.keys.timers(pipeline);
          const [names, outboxSize, cursors, last, pendingTimers, firstDue] = await Promise.all([
            c.zrange(this.keys.partitions(pipeline), 0, -1),
            c.xlen(this.keys.outbox(pipeline)),
            c.hgetall(this.keys.exporterCursors(pipeline)),
            c.get(this.keys.outboxSeq(pipeline)),
            c.hlen(tk.hash),
            c.zrange(tk.due, 0, 0, 'WITHSCORES'),
          ]);
          const partitions = await Promise.all(
            names.sort().map(async (partition) => {
              const k = this.keys.partition(pipeline, partition);
              const [cursor, pending] = await Promise.all([c.get(k.cursor), c.xlen(k.log)]);
              return { partition, cursor, pending };
            }),
          );
          return {
            pipeline,
            partitions,
            timers: { pending: pendingTimers, nextDue: firstDue[1] !== undefined ? Number(firstDue[1]) : null },
            outbox: {
              size: outboxSize,
              exporters: Object.entries(cursors)
                .sort(([a], [b]) => a.localeCompare(b))
                .map(([exporter, cursor]) => ({ exporter, cursor: Number(cursor), lag: Number(last ?? 0) - Number(cursor) })),
            },
          };
        }),
      );
      const [groups, openWork, recent, lists] = await Promise.all([
        c.hlen(s.groups),
        c.scard(s.open),
        c.zrevrange(s.recent, 0, RECENT_FAILURES_MAX - 1),
        this.deadLists(c),
      ]);
      const lens = await Promise.all(lists.map((k) => c.llen(k)));
      return {
        store: this.kind,
        location: `${this.connection().where} (${this.cluster ? 'cluster, ' : ''}prefix ${this.cfg.key_prefix})`,
        pipelines,
        groups,
        openWork,
        recentFailures: recent.map((j) => parseJson<RecentFailure>(j, 'recent failure')),
        deadLetters: { total: lens.reduce((n, l) => n + l, 0), newest: await this.listDeadLetters(5) },
        state: await this.namespaceStatus(c),
      };
    });
  }
}

/** A stored state entry: `<version>|<expires at or empty>|<JSON>`. */
function parseEntry(raw: string | null, namespace: string): StateEntry | undefined {
  if (raw === null) return undefined;
  const m = /^(\d+)\|(\d*)\|/.exec(raw);
  if (!m) throw new VigilError('VIGIL_STORE_CORRUPT', `redis holds an unreadable state entry in namespace '${namespace}'`);
  return {
    value: parseStored(raw.slice(m[0].length), `redis state namespace '${namespace}'`),
    version: Number(m[1]),
    ...(m[2] ? { expiresAt: Number(m[2]) } : {}),
  };
}

function parseEntries(raw: StreamEntry[], field: string): LogEntry[] {
  return raw.map(([id, fields]) => {
    const i = fields.indexOf(field);
    return { id, event: parseJson<AgentEvent>(fields[i + 1]!, 'ingest log entry') };
  });
}

/** Whether stream id `a` sorts after `b` (`<ms>-<seq>`). */
export function streamIdAfter(a: string, b: string): boolean {
  const [am, as] = a.split('-').map(Number) as [number, number];
  const [bm, bs] = b.split('-').map(Number) as [number, number];
  return am > bm || (am === bm && as > bs);
}

function parseJson<T>(text: string, what: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    throw new VigilError('VIGIL_STORE_CORRUPT', `redis holds an unreadable ${what}`, { cause: err });
  }
}

/**
 * A record's member of its partition's dedupe set: its own time and its event id (a redelivery has
 * both again), as the other stores key it. The script also checks the id alone, as an earlier
 * vigil added it, until such members expire.
 */
function seenMember(e: AgentEvent): string {
  return `${dedupeTime(e)}:${e.eventId}`;
}
