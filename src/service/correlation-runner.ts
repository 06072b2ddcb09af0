/**
 * Drives the correlation log (src/correlation/): reads its page, plans what may go on
 * (plan.ts), appends those records to the ingest logs of their pipelines — each in its decided
 * session, with its correlation — and then commits the log's cursor together with the failure
 * records it released per trace. One round at a time; across sidecars on Redis the cursor commit
 * decides a race (the loser's round is refused and planned again).
 *
 * Crash safety: the records go to their pipelines with the commit that moves the log's cursor
 * (`PageCommit.appends`: one transaction on memory and SQLite; on Redis the appends come just
 * before the commit, and a crash in between leaves the records in the log: the next round plans
 * them again from the same state and appends them again, which the pipelines' event-id dedupe
 * drops). Nothing acknowledged is lost (the records stay in the
 * correlation log until their pipelines have them) or counted twice. The waits count from each
 * record's arrival time, which is part of the record, so after a restart a record waits only for
 * what is left of its wait.
 */
import { errorMessage, isVigilError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { AgentEvent } from '../model/event.ts';
import {
  CORRELATION_PIPELINE,
  planAtIngest,
  TRACE_FAILURES_NAMESPACE,
  TRACE_SESSION_NAMESPACE,
  WAITING_PARTITION,
  type CorrelationSettings,
} from '../correlation/ingest.ts';
import { isTraceFailure } from '../correlation/failure-keys.ts';
import { KeptEntries } from '../correlation/kept-entries.ts';
import { planRelease, type ReleasedRecord, type ReleasePlan } from '../correlation/plan.ts';
import { BoundedMap } from '../store/bounded-map.ts';
import type { StateEntry, StateWrite } from '../store/state.ts';
import { FROM_CURSOR, type LogEntry, type StateStore } from '../store/types.ts';
import { backoffDelay, sleep, Wakeup } from '../internal/backoff.ts';
import type { IngestActivity } from '../internal/ingest-activity.ts';
import { IDLE_POLL_MS } from './pipeline-runner.ts';

/** Longest page the runner reads to bring a failure record's whole wait into view. */
export const MAX_CORRELATION_PAGE = 65_536;
/**
 * Records one round releases at most (planRelease's `maxReleased`); a round that released this
 * many is followed at once by the next, after the requests in flight. Its commit appends them to
 * their pipelines in one transaction, and a batch interval's records at once held the event loop
 * for tens of milliseconds (README, Performance, round 23).
 */
export const MAX_RELEASED_PER_ROUND = 512;
/** The longest a round waits after the last one while records wait (see releaseBatchMs). */
export const MAX_RELEASE_BATCH_MS = 100;

/**
 * How far apart rounds are while records wait: a tenth of the shorter wait, at most
 * MAX_RELEASE_BATCH_MS; 0 when either wait is 0. (Rounds spaced while a record waits for its
 * session keep the log holding records, and while it does every batch goes through it instead of
 * straight to its pipeline: with `failure_wait: 0` that would cost more than the rounds it saves.)
 * A failure record is decided only once the page reaches past its failure wait, so a round that
 * releases has the whole wait's records in view (at 20 requests/s of 512-span agent traces, about
 * 10,000 entries for the default 5 s). Run at every append, each such round released one
 * request's records at the cost of the whole wait (README, Performance, round 22). Since round 23
 * a round pays for what it releases (it keeps what it read, reads ahead, and plans only its
 * prefix), so the interval is short: a round every 500 ms released half a second's records at
 * once and held the event loop for tens of milliseconds; every 100 ms spreads them, and a record
 * goes at most that late.
 */
export function releaseBatchMs(settings: Pick<CorrelationSettings, 'sessionWait' | 'failureWait'>): number {
  return Math.min(MAX_RELEASE_BATCH_MS, Math.floor(Math.min(settings.sessionWait, settings.failureWait) / 10));
}

/** What the last round left waiting, for deciding when the next one runs. */
export interface RoundWait {
  /** When the first waiting record may go by time alone; null: nothing known to wait. */
  wakeAt: number | null;
  /** What it waits for (ReleasePlan.waitsFor). */
  waitsFor: 'session' | 'failure' | null;
  /** When the last round started (vigil's clock). */
  lastRoundAt: number;
  /** releaseBatchMs of the settings. */
  batchMs: number;
}

/**
 * Whether the loop runs a round now, after waking (by a notice of new records when `notified`,
 * else by its timer). Nothing known to wait: yes. A record sitting out its failure wait goes by
 * time alone and holds every record after it (the log releases a prefix), so new records change
 * nothing before its time; one waiting for its trace's session may go as soon as a record tells
 * the session. Either way rounds stay batchMs apart.
 */
export function roundDue(w: RoundWait, notified: boolean, now: number): boolean {
  if (w.wakeAt === null) return true;
  const spaced = now >= w.lastRoundAt + w.batchMs;
  if (now >= w.wakeAt && spaced) return true;
  return notified && w.waitsFor === 'session' && spaced;
}

/** How long the loop sleeps before it looks again (roundDue), at most the idle poll. */
export function roundWaitMs(w: RoundWait, notified: boolean, now: number): number {
  if (w.wakeAt === null) return IDLE_POLL_MS;
  const spacedAt = w.lastRoundAt + w.batchMs;
  const at = notified && w.waitsFor === 'session' ? spacedAt : Math.max(w.wakeAt, spacedAt);
  return Math.max(0, Math.min(IDLE_POLL_MS, at - now));
}

/** Traces whose failure records a process remembers writing (the oldest are forgotten beyond it). */
export const MAX_NOTED_FAILURE_TRACES = 50_000;

export interface CorrelationRunnerOptions {
  store: StateStore;
  logger: Logger;
  settings: CorrelationSettings;
  pageSize: number;
  /** Pipelines that count occurrences (a processor that does, e.g. `recurrence`). */
  counting: ReadonlySet<string>;
  /** Pipelines that forward received records downstream: they keep each record's received copy. */
  forwarding: ReadonlySet<string>;
  /** Records were appended to these pipelines. */
  onReleased?(pipelines: readonly string[]): void;
  /** vigil's clock (ms since the epoch); `Date.now` by default. */
  now?: () => number;
  /** The receivers' requests in flight: a round waits for a moment without one (bounded; see ingest-activity.ts). */
  activity?: Pick<IngestActivity, 'quiet'>;
}

export interface CorrelationStats {
  /** Records released to their pipelines, by how their session was decided. */
  released: { own: number; trace: number; fallback: number };
  /** Records released as evidence of a failure another record counts. */
  evidence: number;
  /** Of the released records, those planned at ingest and appended straight to their pipeline (the log held nothing). */
  straight: number;
  rounds: number;
  failedRounds: number;
}

/** A batch planned at ingest: its records per pipeline and the state to write with them. */
export interface StraightRelease {
  byPipeline: Map<string, AgentEvent[]>;
  state: StateWrite[];
  plan: ReleasePlan;
}

export class CorrelationRunner {
  private readonly wakeup = new Wakeup();
  private readonly abort = new AbortController();
  private readonly now: () => number;
  private loop: Promise<void> | undefined;
  private busy: Promise<boolean> | undefined;
  private wakeAt: number | null = null;
  private waitsFor: RoundWait['waitsFor'] = null;
  private lastRoundAt = -Infinity;
  /** Notices of appended records so far, and how many there were when the last round began to read. */
  private notices = 0;
  private noticesRead = 0;
  /** Notices when the last read ahead began (readAhead). */
  private noticesAhead = 0;
  /**
   * The page a round starts with: the length the last round needed to bring its failure record's
   * wait into view, so the next one does not read the shorter pages again first.
   */
  private startLimit: number;
  /**
   * The log's entries after its cursor that rounds have read, in order (a store with readAfter,
   * whose log nothing else changes but appends at its end): a round reads only what came after
   * them. A release decides a failure record only once the page reaches past its failure wait, so
   * each round needs the whole wait's records; read again every round they were most of its cost
   * (README, Performance, round 22). At most MAX_CORRELATION_PAGE entries, as one round reads.
   */
  private readonly kept = new KeptEntries();
  /** What each kept entry is as a failure record, worked out once (planRelease's `memo`). */
  private readonly memo = new WeakMap<LogEntry, ReleasedRecord | null>();
  private failures = 0;
  /**
   * Traces this process planned failure records for lately: a batch planned at ingest reads the
   * failure records of these only, and takes any other trace as having none (planStraight).
   */
  private readonly failureTraces = new BoundedMap<string, true>(MAX_NOTED_FAILURE_TRACES);
  readonly stats: CorrelationStats = { released: { own: 0, trace: 0, fallback: 0 }, evidence: 0, straight: 0, rounds: 0, failedRounds: 0 };

  constructor(private readonly opts: CorrelationRunnerOptions) {
    this.now = opts.now ?? Date.now;
    this.startLimit = opts.pageSize;
    // This runner keeps what it reads of the log (`kept`) until a release commits past it.
    opts.store.readerKeeps?.(CORRELATION_PIPELINE);
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Records (or trace → session facts) were appended. */
  notify(): void {
    this.notices++;
    this.wakeup.notify();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }

  /** What the last round left waiting. */
  roundWait(): RoundWait {
    return { wakeAt: this.wakeAt, waitsFor: this.waitsFor, lastRoundAt: this.lastRoundAt, batchMs: releaseBatchMs(this.opts.settings) };
  }

  /**
   * Sleeps until the next round is due (roundDue): a notice that cannot release anything does not
   * start one. Notices count from when the last round began to read, so records appended while it
   * ran (which it may not have seen) count too.
   */
  private async idle(signal: AbortSignal): Promise<void> {
    for (;;) {
      await this.wakeup.wait(roundWaitMs(this.roundWait(), this.notices !== this.noticesRead, this.now()), signal);
      if (signal.aborted || roundDue(this.roundWait(), this.notices !== this.noticesRead, this.now())) return;
      await this.readAhead();
    }
  }

  /**
   * While the log's head sits out its failure wait, reads what was appended since into the kept
   * entries, a notice's records at a time: the round at its time then reads only the last moments'
   * records instead of the whole wait's at once (which held the event loop for tens of
   * milliseconds; README, Performance, round 23). Only on a store whose log only this process
   * appends to (readAfter); never while a round runs; a failed read is left to the round.
   */
  private async readAhead(): Promise<void> {
    if (this.waitsFor !== 'failure' || !this.opts.store.readAfter || this.busy) return;
    if (this.notices === this.noticesAhead || this.kept.length >= MAX_CORRELATION_PAGE) return;
    this.noticesAhead = this.notices;
    this.busy = (async () => {
      await this.requestsFirst();
      await this.readLog(MAX_CORRELATION_PAGE);
      return false;
    })();
    try {
      await this.busy;
    } catch (err) {
      this.opts.logger.debug('correlation log: a read ahead failed; the next round reads again', { error: errorMessage(err) });
    } finally {
      this.busy = undefined;
    }
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      let progressed: boolean;
      try {
        progressed = await this.runOnce();
        if (this.failures > 0) this.opts.logger.info('the correlation log is processed again', {});
        this.failures = 0;
      } catch (err) {
        this.stats.failedRounds++;
        this.failures++;
        if (isVigilError(err, 'VIGIL_STORE_CONFLICT')) {
          this.opts.logger.debug('correlation log: commit conflict; planned again', { error: errorMessage(err) });
          continue;
        }
        const delay = backoffDelay({ initial: 200, max: 5000 }, this.failures);
        if (this.failures === 1 || this.failures % 20 === 0) {
          this.opts.logger.warn('correlation log: a round failed; its records stay and are retried', {
            attempts: this.failures,
            retry_in_ms: delay,
            error: errorMessage(err),
          });
        }
        await sleep(delay, signal);
        continue;
      }
      // A round that released a prefix and stopped at a waiting record sleeps too: nothing behind it can go first.
      if (!progressed || this.wakeAt !== null) await this.idle(signal);
    }
  }

  /** One round: release what may go now. True when anything was released. Rounds never overlap. */
  async runOnce(): Promise<boolean> {
    while (this.busy) await this.busy.catch(() => undefined);
    this.busy = this.round();
    try {
      return await this.busy;
    } finally {
      this.busy = undefined;
    }
  }

  private async round(): Promise<boolean> {
    await this.requestsFirst();
    this.lastRoundAt = this.now();
    this.noticesRead = this.notices;
    try {
      return await this.plannedRound();
    } catch (err) {
      // Whatever failed (a read, a refused commit), the next round reads from the cursor again.
      this.kept.clear();
      throw err;
    }
  }

  /** Lets the receivers' requests in flight be answered first (bounded; see ingest-activity.ts). */
  private async requestsFirst(): Promise<void> {
    const quiet = this.opts.activity?.quiet();
    if (quiet) await quiet;
  }

  /**
   * Up to `limit` entries of the log after its cursor: what earlier rounds read and kept, then
   * what came after it (a store with readAfter), else a page read from the cursor.
   */
  private async readLog(limit: number): Promise<readonly LogEntry[]> {
    const { store } = this.opts;
    if (!store.readAfter) return store.readPage(CORRELATION_PIPELINE, WAITING_PARTITION, limit);
    const kept = this.kept.entries;
    if (kept.length >= limit) return kept.slice(0, limit);
    // From the cursor too by readAfter: a page from readPage would leave the store its base, against
    // which a later release ending at its last entry (the cursor having moved since) would be refused.
    const after = kept.length ? kept[kept.length - 1]!.id : FROM_CURSOR;
    const more = await store.readAfter(CORRELATION_PIPELINE, WAITING_PARTITION, after, limit - kept.length);
    if (more.length) this.kept.add(more);
    return this.kept.entries;
  }

  private async plannedRound(): Promise<boolean> {
    const { settings, pageSize } = this.opts;
    let limit = this.startLimit;
    for (;;) {
      const entries = await this.readLog(limit);
      // A log shorter than a quarter of the page: the next round starts shorter again.
      if (entries.length < limit / 4) this.startLimit = Math.max(pageSize, limit / 4);
      if (entries.length === 0) {
        this.wakeAt = null;
        this.waitsFor = null;
        return false;
      }
      // The state of the records a round may release: at most its first MAX_RELEASED_PER_ROUND.
      const { sessions, released, versions } = await this.loadState(entries.slice(0, MAX_RELEASED_PER_ROUND).map((e) => e.event));
      const plan = planRelease(
        {
          entries,
          sessions,
          released,
          complete: entries.length < limit || limit >= MAX_CORRELATION_PAGE,
          // The kept entries' index by trace, when the page is theirs (a store with readAfter).
          failureIndex: entries[0] !== undefined && entries[0] === this.kept.entries[0] ? this.kept.indicesOf : undefined,
        },
        {
          now: this.now(),
          sessionWait: settings.sessionWait,
          failureWait: settings.failureWait,
          counts: (ps) => ps.some((p) => this.opts.counting.has(p)),
          maxReleased: MAX_RELEASED_PER_ROUND,
          memo: this.memo,
        },
      );
      this.wakeAt = plan.wakeAt;
      this.waitsFor = plan.waitsFor;
      if (plan.released.length === 0 && plan.needMore) {
        limit = Math.min(limit * 4, MAX_CORRELATION_PAGE);
        this.startLimit = limit;
        continue;
      }
      if (plan.released.length === 0) return false;
      await this.release(plan, versions);
      // The released records are a prefix of what was read: the rest stays for the next round.
      this.kept.drop(plan.released.length);
      return true;
    }
  }

  /**
   * The known sessions of the traces of records that await one, and the failure records released
   * per trace (with their versions) of the traces of failure records: the plan reads no other.
   * `told`: trace → session facts the caller has (a batch planned at ingest): no read for those;
   * `unread`: traces whose failure records the caller takes as none without a read.
   */
  private async loadState(events: readonly AgentEvent[], told?: ReadonlyMap<string, string>, unread?: (traceId: string) => boolean) {
    const awaiting = new Set<string>();
    const failing = new Set<string>();
    for (const event of events) {
      if (event.traceId === undefined) continue;
      if (event.awaitsSession && !told?.has(event.traceId)) awaiting.add(event.traceId);
      if (isTraceFailure(event) && !unread?.(event.traceId)) failing.add(event.traceId);
    }
    const [sessionEntries, failureEntries] = await Promise.all([
      awaiting.size ? this.opts.store.loadState(TRACE_SESSION_NAMESPACE, [...awaiting]) : new Map<string, StateEntry>(),
      failing.size ? this.opts.store.loadState(TRACE_FAILURES_NAMESPACE, [...failing]) : new Map<string, StateEntry>(),
    ]);
    const sessions = new Map<string, string>();
    for (const [traceId, e] of sessionEntries) if (typeof e.value === 'string') sessions.set(traceId, e.value);
    const released = new Map<string, ReleasedRecord[]>();
    const versions = new Map<string, number>();
    for (const [traceId, e] of failureEntries) {
      const list = (e.value as { r?: unknown } | null)?.r;
      if (Array.isArray(list)) released.set(traceId, list as ReleasedRecord[]);
      versions.set(traceId, e.version);
    }
    return { sessions, released, versions };
  }

  private async release(plan: ReleasePlan, versions: ReadonlyMap<string, number>): Promise<void> {
    const { byPipeline, state } = this.handOn(plan, versions);
    await this.opts.store.commit({
      pipeline: CORRELATION_PIPELINE,
      partition: WAITING_PARTITION,
      cursor: plan.released[plan.released.length - 1]!.entryId,
      groups: [],
      turns: [],
      revisions: [],
      outbox: [],
      failures: [],
      state,
      // The pipelines get the records with the commit (memory, SQLite: one transaction; Redis: just
      // before it — a crash in between repeats the appends, which the dedupe drops).
      appends: [...byPipeline].map(([pipeline, events]) => ({ pipeline, events })),
    });
    this.stats.rounds++;
    this.noteReleased(plan);
    this.opts.onReleased?.([...byPipeline.keys()]);
  }

  /**
   * Plans a batch at ingest as a round would plan it, for the caller to append it straight to its
   * one pipeline instead of to the log (src/correlation/ingest.ts, `mayGoStraight`). Only
   * meaningful while the log holds nothing (so nothing of the batch's sessions is ahead of it) —
   * the caller checks that. Undefined when any record must wait: then the batch goes through the
   * log. `records`: the batch's would-be-waiting records as they came; `batchSessions`: its trace →
   * session facts (written with its append, so not in the store yet), as a round would have read
   * them.
   *
   * `state` holds the failure records released per trace, versioned as in a round: written with
   * the batch's append, so a round (or another batch) that planned the same trace meanwhile makes
   * one of the two writes conflict, and the loser goes through the log and is planned again. The
   * same check spares a read per fresh trace: the failure records of a trace this process has not
   * planned any for lately are taken as none, and their write expects none (version 1), so when
   * the store holds some after all (written before a restart, or forgotten here) the append
   * conflicts and the batch goes through the log, where a round reads them.
   */
  async planStraight(
    records: readonly AgentEvent[],
    pipeline: string,
    now: number,
    batchSessions: ReadonlyMap<string, string>,
  ): Promise<StraightRelease | undefined> {
    const { settings, forwarding } = this.opts;
    const loaded = await this.loadState(records, batchSessions, (traceId) => !this.failureTraces.has(traceId));
    const { released, versions } = loaded;
    // The batch's own trace → session facts are written with its append, after a round would have read them.
    const sessions = loaded.sessions.size ? new Map([...loaded.sessions, ...batchSessions]) : batchSessions;
    const plan = planAtIngest(
      records,
      { pipelines: [pipeline], receivedAt: now },
      { sessions, released },
      { now, sessionWait: settings.sessionWait, failureWait: settings.failureWait, counts: (ps) => ps.some((p) => this.opts.counting.has(p)) },
    );
    if (!plan) return undefined;
    const forwards = forwarding.has(pipeline);
    const events = plan.released.map(({ event }) => (forwards ? event : withoutReceivedCopy(event)));
    return { byPipeline: new Map([[pipeline, events]]), state: this.failureWrites(plan, versions), plan };
  }

  /** Notes a straight release that was appended (the stats a round keeps). */
  noteStraight(s: StraightRelease): void {
    this.stats.straight += s.plan.released.length;
    this.noteReleased(s.plan);
  }

  /** The released records per pipeline (without their route) and the state written with them. */
  private handOn(plan: ReleasePlan, versions: ReadonlyMap<string, number>): { byPipeline: Map<string, AgentEvent[]>; state: StateWrite[] } {
    const { forwarding } = this.opts;
    const byPipeline = new Map<string, AgentEvent[]>();
    for (const { event } of plan.released) {
      const { route, ...rest } = event;
      for (const pid of route?.pipelines ?? []) {
        const list = byPipeline.get(pid) ?? [];
        list.push(forwarding.has(pid) ? rest : withoutReceivedCopy(rest));
        byPipeline.set(pid, list);
      }
    }
    return { byPipeline, state: this.failureWrites(plan, versions) };
  }

  /** The failure records released per trace, as versioned state writes; their traces are noted as planned here. */
  private failureWrites(plan: ReleasePlan, versions: ReadonlyMap<string, number>): StateWrite[] {
    const { settings } = this.opts;
    const state: StateWrite[] = [];
    for (const [traceId, list] of plan.traces) {
      state.push({
        namespace: TRACE_FAILURES_NAMESPACE,
        key: traceId,
        value: { r: list },
        version: (versions.get(traceId) ?? 0) + 1,
        ttlMs: settings.traceTtl,
        maxEntries: settings.maxTraces,
        cached: true,
      });
      // Noted before the write lands (or fails): a trace noted without cause costs only a read.
      this.failureTraces.set(traceId, true);
    }
    return state;
  }

  private noteReleased(plan: ReleasePlan): void {
    for (const r of plan.released) {
      this.stats.released[r.session]++;
      const c = r.event.correlation;
      if (c && c.counted !== r.event.eventId) this.stats.evidence++;
    }
  }
}

/** A record as a pipeline that does not forward keeps it: without the received copy. */
export function withoutReceivedCopy(event: AgentEvent): AgentEvent {
  if (!event.forward) return event;
  const { forward: _forward, ...rest } = event;
  return rest;
}
