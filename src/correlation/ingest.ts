/**
 * The ingest half of correlation (DESIGN 3.3): which records wait in the correlation log before
 * their pipelines get them, and the trace → session facts written with each append.
 *
 * - Every record of a trace that can be a failure goes through the correlation log: its session
 *   may come from another record of the trace, and its failure may be seen through other records
 *   (plan.ts). While the log holds anything, every other record of those pipelines goes through
 *   it too, behind them, so each session's records keep their arrival order. Records only kept to
 *   be forwarded never wait.
 * - While the log holds nothing, a batch whose records would all be released at once (they name
 *   their session or their trace's is known; no failure among them has a failure wait to sit out)
 *   skips the log: it is planned at ingest exactly as a round would plan it, and appended straight
 *   to its pipeline with the state a round would commit (`mayGoStraight`, `planAtIngest`). That
 *   spares the log's append, read and cursor commit, the bulk of the correlation cost of a batch.
 * - Each record that names a session and belongs to a trace (kept or not: a successful root span
 *   that names its session is not kept) tells its trace's session. The fact — not the record — is
 *   written with the append, in the store's `trace-session` namespace (bounded, expiring, shared by
 *   sidecars on Redis). A process remembers which facts it wrote recently, so a trace costs one
 *   write, not one per request.
 */
import type { AgentEvent } from '../model/event.ts';
import type { StateWrite } from '../store/state.ts';
import type { LogEntry } from '../store/types.ts';
import { isTraceFailure } from './failure-keys.ts';
import { planRelease, type PlanOptions, type ReleasedRecord, type ReleasePlan } from './plan.ts';

/** The store pipeline and partition of the correlation log (no configured pipeline can have this id). */
export const CORRELATION_PIPELINE = 'correlation';
export const WAITING_PARTITION = 'waiting';
/** State namespaces: trace → session, and the failure records released per trace. */
export const TRACE_SESSION_NAMESPACE = 'trace-session';
export const TRACE_FAILURES_NAMESPACE = 'trace-failures';

export interface CorrelationSettings {
  /** How long a record that names no session waits for its trace's session. */
  sessionWait: number;
  /** How long a log record of a failure in a trace waits for the span it is about. */
  failureWait: number;
  /** Traces whose session (and failure records) the store keeps at most. */
  maxTraces: number;
  /** How long a trace's session and failure records are kept after they were last written. */
  traceTtl: number;
}

export const DEFAULT_CORRELATION: CorrelationSettings = {
  sessionWait: 10_000,
  failureWait: 5_000,
  maxTraces: 100_000,
  traceTtl: 3_600_000,
};

/** Records split by whether they wait in the correlation log. */
export interface IngestSplit {
  waiting: AgentEvent[];
  direct: AgentEvent[];
}

/** Which records go through the correlation log (see the header); `logHolds`: it holds records now. */
export function splitForCorrelation(events: readonly AgentEvent[], logHolds: boolean): IngestSplit {
  const waiting: AgentEvent[] = [];
  const direct: AgentEvent[] = [];
  for (const e of events) {
    if (e.forwardOnly) direct.push(e);
    else if (e.traceId !== undefined || logHolds) waiting.push(e);
    else direct.push(e);
  }
  return { waiting, direct };
}

export interface StraightConditions {
  /** The correlation log holds records now, or an append to it is under way. */
  logHolds: boolean;
  /** Pipelines the batch goes to. */
  pipelines: number;
  /**
   * The store has no other writer and writes an append's records and state in one atomic step
   * (memory, SQLite). Then a batch planned at ingest lands with its per-trace failure records or
   * not at all, and a conflicting plan (a round, another batch) makes the append fail whole.
   */
  atomicSingleWriter: boolean;
  failureWait: number;
}

/**
 * Whether the would-be-waiting records of a batch may be planned at ingest (`planAtIngest`)
 * instead of going through the correlation log. Only when the log holds nothing: a record there
 * may be of the same session, and the batch must stay behind it. Only for one target pipeline: its
 * one append carries the records and their state atomically. And not when a failure record must
 * sit out a failure wait (the plan would keep it back anyway; this spares the state read).
 */
export function mayGoStraight(records: readonly AgentEvent[], c: StraightConditions): boolean {
  if (c.logHolds || c.pipelines !== 1 || !c.atomicSingleWriter || records.length === 0) return false;
  return c.failureWait <= 0 || !records.some(isTraceFailure);
}

/**
 * The release plan of a batch at ingest: the batch as the log's only page, planned as a round
 * would plan it now, its records as they came (no `waitingEvent` copies: `arrival` says where they
 * go and when they came, so the released records carry no `route`). The plan when every record
 * may go now; undefined when any must wait (then the whole batch goes through the log, in order).
 */
export function planAtIngest(
  records: readonly AgentEvent[],
  arrival: { pipelines: readonly string[]; receivedAt: number },
  known: { sessions: ReadonlyMap<string, string>; released: ReadonlyMap<string, readonly ReleasedRecord[]> },
  opts: PlanOptions,
): ReleasePlan | undefined {
  const entries: LogEntry[] = records.map((event, i) => ({ id: String(i), event }));
  const plan = planRelease({ entries, sessions: known.sessions, released: known.released, complete: true, arrival }, opts);
  return plan.released.length === records.length ? plan : undefined;
}

/** A record as the correlation log keeps it: in its one partition, with where it goes and when it came. */
export function waitingEvent(event: AgentEvent, pipelines: readonly string[], receivedAt: number): AgentEvent {
  return { ...event, partition: WAITING_PARTITION, route: { pipelines: [...pipelines], receivedAt, partition: event.partition } };
}

/** Trace id → session of a batch: what its receiver found, and the records that name their own session. */
export function sessionFacts(events: readonly AgentEvent[], traceSessions: ReadonlyMap<string, string> | undefined): Map<string, string> {
  const facts = new Map<string, string>(traceSessions ?? []);
  for (const e of events) {
    if (e.traceId !== undefined && !e.awaitsSession && !e.forwardOnly) facts.set(e.traceId, e.partition);
  }
  return facts;
}

/**
 * The facts a process wrote recently, so it writes each trace's session once. Bounded, and
 * rewritten after half the TTL, so an entry of a trace still in use never expires in the store.
 *
 * The bound keeps two generations of at most `max / 2` facts each: once the newer is full, the
 * older is forgotten whole (its traces, if still in use, are written once more). A single map
 * that evicts its oldest entry one by one stalls the event loop, on the ack path, each time V8
 * rebuilds its table of deleted entries: 10–11 ms at 50,000 facts, against about 1 ms for the
 * newer generation's growth here (README, Performance, round 21).
 */
export class WrittenFacts {
  private newer = new Map<string, { session: string; at: number }>();
  private older = new Map<string, { session: string; at: number }>();

  constructor(
    private readonly settings: CorrelationSettings,
    private readonly max = 50_000,
  ) {}

  /** Facts held now (at most `max`). */
  get size(): number {
    return this.newer.size + this.older.size;
  }

  /** State writes for the facts not written recently. */
  writes(facts: ReadonlyMap<string, string>, now: number): StateWrite[] {
    const out: StateWrite[] = [];
    for (const [traceId, session] of facts) {
      const w = this.newer.get(traceId) ?? this.older.get(traceId);
      if (w && w.session === session && now - w.at < this.settings.traceTtl / 2) continue;
      out.push({
        namespace: TRACE_SESSION_NAMESPACE,
        key: traceId,
        value: session,
        ttlMs: this.settings.traceTtl,
        maxEntries: this.settings.maxTraces,
        cached: true,
      });
    }
    return out;
  }

  /** Notes writes that were committed. */
  note(writes: readonly StateWrite[], now: number): void {
    const half = Math.max(1, Math.floor(this.max / 2));
    for (const w of writes) {
      if (w.namespace !== TRACE_SESSION_NAMESPACE) continue;
      // A newer note shadows an older one (read first); the older goes with its generation.
      this.newer.set(w.key, { session: String(w.value), at: now });
      if (this.newer.size >= half) {
        this.older = this.newer;
        this.newer = new Map();
      }
    }
  }
}
