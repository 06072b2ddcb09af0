/**
 * The release plan of the correlation log (DESIGN 3.3: the session of a trace; one failure, one
 * occurrence): which waiting records may go on to their pipelines now, in which session, and how
 * each record of a failure relates to the others. A pure function of the waiting records, the
 * known trace → session facts, the failure records already released per trace, and the time —
 * so it is tested in virtual time, and a page planned again after a crash plans the same.
 *
 * Records leave in arrival order: the first record that must still wait holds back everything
 * behind it, so each session's records reach its ingest log in the order they arrived. A record
 * waits while
 * - it names no session, its trace's session is not known yet, and it arrived less than
 *   `sessionWait` ago (then it takes its fallback partition: `service.instance.id`, `default`);
 * - it is a failure record of a trace and arrived less than `failureWait` ago: the other records
 *   of its failure may still come (the SDKs export logs and spans in separate batches, and a span
 *   may even end, and be exported, after the parent its failure propagated to).
 *
 * One failure, one occurrence. Two failure records of one trace are *related* when they share a
 * failure key (failure-keys.ts), their event times are at most FAILURE_GAP_MS apart, and their
 * spans are related: a log record written in a failed span or in that span's parent; a failed
 * span and its failed parent. Each record is released with an *anchor*, the most telling record
 * of its failure: a log record points to the failed span it is about (the nearest in time), a
 * failed span to its failed child (the failure came from below), so the anchor is where the
 * failure happened. Decisions taken are kept: a record related to one already released joins that
 * record's anchor; a record an earlier one took as its anchor is an anchor. So records of one
 * failure that arrive within the waits of each other get the same anchor in any order, and a
 * record that arrives later still joins (without renaming the failure).
 */
import type { AgentEvent, Correlation, RelatedRecord } from '../model/event.ts';
import type { LogEntry } from '../store/types.ts';
import { errorTextOf, failureKeys, failureTexts, isFailedSpan, isTraceFailure } from './failure-keys.ts';

/** Event times of two records of one failure are at most this far apart (a span's end, a log written when it was caught). */
export const FAILURE_GAP_MS = 10_000;
/** Failure records remembered per trace (the oldest are forgotten beyond it). */
export const MAX_RECORDS_PER_TRACE = 64;
/** Other records listed on a failure's counted record. */
export const MAX_RELATED = 8;
/** Characters of a related record's excerpt. */
const RELATED_EXCERPT_MAX = 500;

/** A released failure record, as the per-trace state keeps it (short keys: one entry holds up to 64). */
export interface ReleasedRecord {
  /** Event id. */
  e: string;
  /** Span id (a log record: the span it was written in). */
  s?: string;
  /** Parent span id (spans). */
  p?: string;
  /** 1: a log record; 0: a span. */
  l: 0 | 1;
  /** 1: a span that ended in error (what others can be about). */
  f: 0 | 1;
  /** Failure keys. */
  k: string[];
  /** Event time (ms). */
  t: number;
  /** Event id of its anchor. */
  a: string;
  /** 1: one of its pipelines counts occurrences. */
  c: 0 | 1;
}

export interface PlanOptions {
  /** vigil's clock now (ms since the epoch). */
  now: number;
  sessionWait: number;
  failureWait: number;
  /** Whether any of these pipelines counts occurrences (has a `recurrence` processor). */
  counts(pipelines: readonly string[]): boolean;
  /**
   * Records released at most: the plan stops after this many, as at a record that must wait, but
   * with nothing waiting (`wakeAt` null), so the caller plans the rest at once. A caller that
   * commits each plan in one transaction bounds the transaction, and the time it holds the event
   * loop, by it. Unbounded when unset.
   */
  maxReleased?: number;
  /**
   * What a record of the page is as a failure record, kept across plans of the same entries (a
   * caller that plans one page again and again, each time with a few more entries): undefined ->
   * not known yet; null -> none. Share one only across plans with the same `counts` and no
   * `arrival` (the record's `c` comes from them). A plan sets the anchor of a copy, so the memo's
   * records stay as worked out (a defensive copy: no plan reads the anchor of a record it has not
   * set yet).
   */
  memo?: WeakMap<LogEntry, ReleasedRecord | null>;
}

export interface PlanInput {
  /** The correlation log's page, in arrival order. */
  entries: readonly LogEntry[];
  /** Known sessions of the traces of the page. */
  sessions: ReadonlyMap<string, string>;
  /** Failure records already released, per trace of the page. */
  released: ReadonlyMap<string, readonly ReleasedRecord[]>;
  /**
   * False when the log may hold more records after the page: a failure record is then only
   * decided when the page reaches past its failure wait (the records it is decided with must all
   * be in view); otherwise the plan asks for a longer page (`needMore`).
   */
  complete?: boolean;
  /**
   * Where the entries whose record carries no `route` go and when they came: a batch planned at
   * ingest passes its records as they came (each in its own partition), not as the log's copies.
   */
  arrival?: { pipelines: readonly string[]; receivedAt: number };
  /**
   * The positions in `entries` of a trace's records that may be failure records (`isTraceFailure`;
   * a superset does no harm), ascending; positions past the page are ignored. When given, the plan
   * finds the failure records of the traces it releases failure records of here instead of
   * scanning the page: a caller that keeps a long page across rounds keeps this index with it
   * (KeptEntries). It must name every such record of those traces.
   */
  failureIndex?: (traceId: string) => Iterable<number>;
}

export interface ReleasedEvent {
  entryId: string;
  /** The record with its partition decided, `awaitsSession` cleared and its correlation set; `route` still says where it goes. */
  event: AgentEvent;
  /** How its partition was decided. */
  session: 'own' | 'trace' | 'fallback';
}

export interface ReleasePlan {
  /** The records that go on now: a prefix of the page. */
  released: ReleasedEvent[];
  /** Per trace whose released failure records changed: the new list (oldest first, bounded). */
  traces: Map<string, ReleasedRecord[]>;
  /** When the first record that waits may go by time alone; null when nothing waits. */
  wakeAt: number | null;
  /**
   * What that record waits for: its trace's session (a record that tells it can let it go sooner)
   * or its failure wait (time alone decides it, so records that arrive meanwhile change nothing).
   */
  waitsFor: 'session' | 'failure' | null;
  /** A record could not be decided because the page ends within its failure wait: read a longer page. */
  needMore: boolean;
}

/** A failure record of the page, with what its decisions need. */
interface Candidate {
  index: number;
  record: ReleasedRecord;
  receivedAt: number;
  event: AgentEvent;
}

export function planRelease(input: PlanInput, opts: PlanOptions): ReleasePlan {
  const entries = input.entries;
  const defaultArrival = input.arrival?.receivedAt ?? 0;
  const lastArrival = entries.length ? (entries[entries.length - 1]!.event.route?.receivedAt ?? defaultArrival) : 0;
  const maxReleased = opts.maxReleased ?? Infinity;
  const failureRecord = (i: number): ReleasedRecord | null => {
    const entry = entries[i]!;
    let known = opts.memo?.get(entry);
    if (known === undefined) {
      known = failureRecordOf(entry.event, input.arrival, opts);
      opts.memo?.set(entry, known);
    }
    return known;
  };
  // A record of the page that names its session tells its trace's session too (its fact may not be
  // written yet): read off the page only when a record needs a session the store did not give.
  let pageSessions: Map<string, string> | undefined;
  const sessionOf = (traceId: string): string | undefined =>
    input.sessions.get(traceId) ?? (pageSessions ??= sessionsTold(entries, input.arrival !== undefined)).get(traceId);

  // The prefix that goes now, and how each record's session is decided. Only it is planned: a
  // caller that plans the same long page again and again (the correlation log's whole failure
  // wait) pays for what it releases and a glance at the rest, not for the whole page each time.
  const decided: { partition: string; session: ReleasedEvent['session']; receivedAt: number }[] = [];
  const failingTraces = new Set<string>();
  let wakeAt: number | null = null;
  let waitsFor: ReleasePlan['waitsFor'] = null;
  let needMore = false;
  for (let i = 0; i < entries.length && decided.length < maxReleased; i++) {
    const event = entries[i]!.event;
    const receivedAt = event.route?.receivedAt ?? defaultArrival;
    let partition = event.route?.partition ?? event.partition;
    let session: ReleasedEvent['session'] = 'own';
    if (event.awaitsSession) {
      const traceSession = event.traceId !== undefined ? sessionOf(event.traceId) : undefined;
      if (traceSession !== undefined) {
        partition = traceSession;
        session = 'trace';
      } else if (opts.now < receivedAt + opts.sessionWait) {
        wakeAt = receivedAt + opts.sessionWait;
        waitsFor = 'session';
        break;
      } else {
        session = 'fallback';
      }
    }
    if (failureRecord(i) !== null) {
      if (opts.now < receivedAt + opts.failureWait) {
        wakeAt = receivedAt + opts.failureWait;
        waitsFor = 'failure';
        break;
      }
      if (input.complete === false && lastArrival <= receivedAt + opts.failureWait) {
        needMore = true;
        break;
      }
      failingTraces.add(event.traceId!);
    }
    decided.push({ partition, session, receivedAt });
  }

  // The failure records of the page of the traces the prefix releases failure records of: what each is decided with.
  const candidates = new Map<number, Candidate>();
  const byTrace = new Map<string, Candidate[]>();
  const addCandidate = (index: number, traceId: string): void => {
    const known = failureRecord(index);
    if (known === null) return;
    const event = entries[index]!.event;
    // A copy: the plan sets its anchor (`a`), which is this plan's decision, not the memo's.
    const c: Candidate = { index, record: { ...known }, receivedAt: event.route?.receivedAt ?? defaultArrival, event };
    candidates.set(index, c);
    const list = byTrace.get(traceId);
    if (list) list.push(c);
    else byTrace.set(traceId, [c]);
  };
  if (failingTraces.size && input.failureIndex) {
    for (const traceId of failingTraces) {
      for (const index of input.failureIndex(traceId)) {
        if (index >= entries.length) break;
        addCandidate(index, traceId);
      }
    }
  } else if (failingTraces.size) {
    for (let index = 0; index < entries.length; index++) {
      const traceId = entries[index]!.event.traceId;
      if (traceId !== undefined && failingTraces.has(traceId)) addCandidate(index, traceId);
    }
  }

  const known = new Map<string, ReleasedRecord[]>();
  const changed = new Set<string>();
  const released: ReleasedEvent[] = [];
  for (let i = 0; i < decided.length; i++) {
    const entry = entries[i]!;
    const event = entry.event;
    const { partition, session, receivedAt } = decided[i]!;
    const candidate = candidates.get(i);
    // A copy only of a record that changes, and one (a rest and a spread would make two): a record
    // planned at ingest that names its session and is no failure record goes on as it came.
    let out: AgentEvent;
    if ('awaitsSession' in event) {
      const { awaitsSession: _awaits, ...rest } = event;
      out = { ...rest, partition };
    } else if (event.route !== undefined || candidate !== undefined) out = { ...event, partition };
    else out = event;
    if (candidate) {
      const traceId = event.traceId!;
      const list = known.get(traceId) ?? [...(input.released.get(traceId) ?? [])];
      // The records of the page it may be decided with: not released yet, of its trace, arrived within its failure wait.
      const pending = byTrace.get(traceId)!.filter((m) => m.index > i && m.receivedAt <= receivedAt + opts.failureWait);
      const anchor = anchorOf(candidate.record, list, pending);
      candidate.record.a = anchor;
      const anchorCounts = anchor === candidate.record.e ? candidate.record.c : countsOf(anchor, list, pending);
      const correlation: Correlation = { anchor, counted: anchorCounts ? anchor : candidate.record.e };
      if (correlation.counted === candidate.record.e) {
        const related = relatedOf(candidate.record, list, pending);
        if (related.length) correlation.related = related;
      }
      out.correlation = correlation;
      list.push(candidate.record);
      if (list.length > MAX_RECORDS_PER_TRACE) list.splice(0, list.length - MAX_RECORDS_PER_TRACE);
      known.set(traceId, list);
      changed.add(traceId);
    }
    released.push({ entryId: entry.id, event: out, session });
  }
  const traces = new Map<string, ReleasedRecord[]>();
  for (const t of changed) traces.set(t, known.get(t)!);
  return { released, traces, wakeAt, waitsFor, needMore };
}

/** The sessions the records of a page tell for their traces (the first to tell one wins). */
function sessionsTold(entries: readonly LogEntry[], arrived: boolean): Map<string, string> {
  const out = new Map<string, string>();
  for (const { event } of entries) {
    if (event.traceId === undefined || event.awaitsSession || out.has(event.traceId)) continue;
    if (event.route) out.set(event.traceId, event.route.partition);
    else if (arrived) out.set(event.traceId, event.partition);
  }
  return out;
}

/** A record as a released failure record (its anchor itself), or null when it is none. */
function failureRecordOf(event: AgentEvent, arrival: PlanInput['arrival'], opts: PlanOptions): ReleasedRecord | null {
  if (!isTraceFailure(event)) return null;
  const k = failureKeys(event);
  if (k.length === 0) return null;
  const record: ReleasedRecord = {
    e: event.eventId,
    l: event.source === 'otlp.traces' ? 0 : 1,
    f: isFailedSpan(event) ? 1 : 0,
    k,
    t: event.time,
    a: event.eventId,
    c: opts.counts(event.route?.pipelines ?? arrival?.pipelines ?? []) ? 1 : 0,
  };
  if (event.spanId !== undefined) record.s = event.spanId;
  if (event.parentSpanId !== undefined) record.p = event.parentSpanId;
  return record;
}

/**
 * The anchor of a record about to be released (or, for a record of the page not released yet, the
 * one it would get now):
 * - a record already released took it as its anchor: itself;
 * - a log record: the failed span it is about, the nearest in time among the released ones and
 *   those of `pending` — a released span's anchor, or the anchor that span gets;
 * - a span: a released record of its failure (its failed parent or child, or a log about it that
 *   named its failure for want of a span) → that record's anchor; else its failed child among
 *   `pending` (the nearest) → that child's anchor;
 * - else itself.
 */
function anchorOf(r: ReleasedRecord, released: readonly ReleasedRecord[], pending: readonly Candidate[], depth = 0): string {
  if (released.some((m) => m.a === r.e && m.e !== r.e)) return r.e;
  const ahead = depth < MAX_RECORDS_PER_TRACE ? pending.map((m) => m.record).filter((m) => m.e !== r.e && tellsMore(r, m)) : [];
  if (r.l === 1) {
    const spans = released.filter((m) => m.l === 0 && related(r, m));
    const target = nearest(r, [...spans, ...ahead]);
    if (!target) return r.e;
    return spans.includes(target) ? target.a : anchorOf(target, released, pending, depth + 1);
  }
  const joined = nearest(
    r,
    released.filter((m) => m.e !== r.e && related(r, m) && (m.l === 0 || m.a === m.e)),
  );
  if (joined) return joined.a;
  const child = nearest(r, ahead);
  return child ? anchorOf(child, released, pending, depth + 1) : r.e;
}

/** Whether the anchor (a released record or one of the page) goes to a pipeline that counts. */
function countsOf(anchor: string, released: readonly ReleasedRecord[], pending: readonly Candidate[]): 0 | 1 {
  const known = released.find((m) => m.e === anchor);
  if (known) return known.c;
  return pending.find((m) => m.record.e === anchor)?.record.c ?? 0;
}

/** The other records of the failure `r` anchors, known now: released ones, and those of the page that would take it as anchor. */
function relatedOf(r: ReleasedRecord, released: readonly ReleasedRecord[], pending: readonly Candidate[]): RelatedRecord[] {
  const out: RelatedRecord[] = [];
  for (const m of released) {
    if (out.length >= MAX_RELATED) return out;
    if (m.a === r.e && m.e !== r.e) out.push({ eventId: m.e, source: m.l ? 'otlp.logs' : 'otlp.traces', ...(m.s ? { spanId: m.s } : {}) });
  }
  const withR = [...released, { ...r, a: r.e }];
  for (const m of pending) {
    if (out.length >= MAX_RELATED) break;
    if (anchorOf(m.record, withR, pending) === r.e) out.push(relatedRecord(m.event));
  }
  return out;
}

function relatedRecord(event: AgentEvent): RelatedRecord {
  const text = failureTexts(event)[0] ?? errorTextOf(event);
  const out: RelatedRecord = { eventId: event.eventId, source: event.source, kind: event.kind };
  if (event.spanId !== undefined) out.spanId = event.spanId;
  if (text !== undefined) out.excerpt = text.slice(0, RELATED_EXCERPT_MAX);
  return out;
}

/**
 * Whether two failure records of one trace are of one failure: a shared failure key, event times
 * within FAILURE_GAP_MS, and related spans (a log record in a failed span or its parent; a failed
 * span and its failed parent).
 */
export function related(a: ReleasedRecord, b: ReleasedRecord): boolean {
  if (Math.abs(a.t - b.t) > FAILURE_GAP_MS || !a.k.some((k) => b.k.includes(k))) return false;
  if (a.l && b.l) return false;
  if (a.l || b.l) {
    const [log, span] = a.l ? [a, b] : [b, a];
    return span.f === 1 && log.s !== undefined && (log.s === span.s || log.s === span.p);
  }
  return a.f === 1 && b.f === 1 && ((a.s !== undefined && a.s === b.p) || (b.s !== undefined && b.s === a.p));
}

/** Whether `to` tells more of the failure than `from`: the failed span a log record is about, the failed child of a failed span. */
export function tellsMore(from: ReleasedRecord, to: ReleasedRecord): boolean {
  if (!related(from, to) || to.l === 1) return false;
  return from.l === 1 || (from.s !== undefined && to.p === from.s);
}

/** The record nearest in event time to `r` (ties: the smaller event id, so the choice never depends on order). */
function nearest(r: ReleasedRecord, among: readonly ReleasedRecord[]): ReleasedRecord | undefined {
  let best: ReleasedRecord | undefined;
  for (const m of among) {
    if (!best) best = m;
    else {
      const d = Math.abs(m.t - r.t) - Math.abs(best.t - r.t);
      if (d < 0 || (d === 0 && m.e < best.e)) best = m;
    }
  }
  return best;
}
