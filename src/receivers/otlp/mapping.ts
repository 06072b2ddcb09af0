/**
 * Normalized OTLP records → AgentEvents (DESIGN 3.1, 3.3): spans in mapping/spans.ts, log records
 * in mapping/logs.ts, the agent CLIs' own events in mapping/agents.ts. This is the receiver's cheap
 * relevance test (DESIGN 1): only records that can change an occurrence become events (failed or
 * exception-carrying spans, failed tool calls and model requests, error and warning text, reference
 * events); successful spans and unremarkable log records are only counted, so the durable write
 * rate follows the failure rate rather than the span rate.
 *
 * Failures are expressed in the reference shapes the classifier reads: `execution.completed` with
 * `payload.state == "error"` and `payload.outcome.error` (and `payload.model_request` for a failed
 * model request), a successful execution whose `payload.outcome.output[]` carries the text as a
 * `stderr` item, or `tool.result` with `payload.type == "tool_result"` and a status. Structured
 * evidence (`exception.*`, `error.type`, status, severity) is kept beside it in `evidence`.
 */
import type { AgentEvent, EventSource } from '../../model/event.ts';
import type { ForwardRecord } from '../../model/forward.ts';
import { contextOf, sessionOf, text } from './mapping/common.ts';
import { mapLog } from './mapping/logs.ts';
import { coalesceMarkers, isPending, makeMarker, markMarker, markOfSpan, spanEventMarkers, type PendingMarker } from './mapping/markers.ts';
import { mapSpan } from './mapping/spans.ts';
import { logContentHash } from './mapping/logs.ts';
import type { Attributes, NormalizedLogs, NormalizedTraces } from './normalized.ts';

export { DEFAULT_PARTITION, SESSION_KEYS, UNKNOWN_SERVICE, sessionOf } from './mapping/common.ts';
export { REFERENCE_KINDS, logContentHash } from './mapping/logs.ts';
export { isErrorSeverity } from './mapping/relevance.ts';

export interface MapOptions {
  /** Clock for records that carry no timestamp at all; the record's own time is used otherwise. */
  now?: () => number;
  /**
   * The signal is forwarded downstream: each event carries its received record (`forward`), and
   * records the chain does not need become `forwardOnly` events instead of being dropped. They
   * still count as irrelevant.
   */
  forward?: boolean;
  /**
   * A pipeline of the signal wants activity markers (mapping/markers.ts): successful model
   * requests, tool calls, turns and the agent CLIs' activity events become small marker events,
   * coalesced per turn within the request.
   */
  markers?: boolean;
}

export interface MapResult {
  /** Events for the relevant records, in request order. */
  events: AgentEvent[];
  /** Records turned into events (a span may give a failure and a marker). */
  relevant: number;
  /** Records accepted but not needed by the chain (successful spans, unremarkable log records). */
  irrelevant: number;
  /** Records that could not be mapped; counted with the decode rejections. */
  rejected: number;
  messages: string[];
  /**
   * Trace id → session of every mapped record (relevant or not) that names a session and belongs
   * to a trace: what the trace's other records take as their session (DESIGN 3.3).
   */
  traceSessions: Map<string, string>;
}

/** One received record as mapped: its events (failure first, then markers) and, when forwarding, its received form. */
interface MappedRecord {
  events: ReadonlyArray<AgentEvent | PendingMarker>;
  /** The received record, when forwarding. */
  forward?: ForwardRecord;
  forwardOnly?: () => AgentEvent;
}

/** Maps spans (see mapping/spans.ts) and, with `markers`, span marks and built spans to activity markers. */
export function mapTraces(groups: readonly NormalizedTraces[], options: MapOptions = {}): MapResult {
  const now = options.now ?? Date.now;
  const result = emptyResult();
  const records: MappedRecord[] = [];
  for (const group of groups) {
    group.spans.forEach((span, i) => {
      noteSession(result, span.traceId, span.attributes, group.resource);
      const record: ForwardRecord | undefined = options.forward ? { signal: 'traces', resource: group.resource, scope: group.scope, span } : undefined;
      const mapped = collect(
        result,
        () => `span ${span.traceId}:${span.spanId} (#${i})`,
        () => {
          const failure = mapSpan(span, group, now);
          const events: Array<AgentEvent | PendingMarker> = failure ? [failure] : [];
          if (options.markers) {
            const taken = new Set(events.map((e) => e.eventId));
            const id = taken.has(`${span.traceId}:${span.spanId}`) ? `${span.traceId}:${span.spanId}/turn.end` : undefined;
            const m = markMarker(markOfSpan(span), group, now, id, failure ? span.status.message || undefined : undefined);
            if (m) {
              taken.add(m.eventId);
              events.push(m);
            }
            events.push(...spanEventMarkers(span, group, now, taken));
          }
          return events;
        },
      );
      if (!mapped) return;
      if (record)
        mapped.forwardOnly = () =>
          forwardOnly(`${span.traceId}:${span.spanId}`, span.attributes, group.resource, span.endTimeMs ?? span.startTimeMs, now, 'otlp.traces', record);
      attachForward(mapped, record);
      records.push(mapped);
    });
    // Marks are most of a request's records (every successful model, tool and agent span): mapped
    // without collect()'s two closures each, with the same rejection.
    for (const mark of group.marks ?? []) {
      let m: PendingMarker | undefined;
      try {
        m = markMarker(mark, group, now);
      } catch (err) {
        reject(result, `span ${mark.traceId}:${mark.spanId}`, err);
        continue;
      }
      records.push({ events: m ? [m] : NO_EVENTS });
    }
  }
  return finish(result, records, options.markers === true);
}

/** Maps log records (see mapping/logs.ts). */
export function mapLogs(groups: readonly NormalizedLogs[], options: MapOptions = {}): MapResult {
  const now = options.now ?? Date.now;
  const result = emptyResult();
  const records: MappedRecord[] = [];
  for (const group of groups) {
    group.logs.forEach((log, i) => {
      noteSession(result, log.traceId, log.attributes, group.resource);
      const record: ForwardRecord | undefined = options.forward ? { signal: 'logs', resource: group.resource, scope: group.scope, log } : undefined;
      const mapped = collect(
        result,
        () => `log record #${i}`,
        () => {
          const event = mapLog(log, group, now, options.markers === true);
          return event ? [event] : [];
        },
      );
      if (!mapped) return;
      if (record) {
        mapped.forwardOnly = () =>
          forwardOnly(
            text(log.attributes['log.record.uid']) ?? logContentHash(log, group.resource),
            log.attributes,
            group.resource,
            log.timeMs ?? log.observedTimeMs,
            now,
            'otlp.logs',
            record,
          );
      }
      attachForward(mapped, record);
      records.push(mapped);
    });
  }
  return finish(result, records, options.markers === true);
}

function emptyResult(): MapResult {
  return { events: [], relevant: 0, irrelevant: 0, rejected: 0, messages: [], traceSessions: new Map() };
}

/** Remembers the session a record of a trace names (in a request, the first record naming one). */
function noteSession(result: MapResult, traceId: string | undefined, attrs: Attributes, resource: Attributes): void {
  if (traceId === undefined || result.traceSessions.has(traceId)) return;
  const session = sessionOf(attrs, resource);
  if (session !== undefined) result.traceSessions.set(traceId, session);
}

/** Maps one record; a record that cannot be mapped is rejected with a message naming it. */
function collect(result: MapResult, what: () => string, map: () => Array<AgentEvent | PendingMarker>): MappedRecord | undefined {
  try {
    return { events: map() };
  } catch (err) {
    reject(result, what(), err);
    return undefined;
  }
}

function reject(result: MapResult, what: string, err: unknown): void {
  result.rejected++;
  result.messages.push(`${what}: could not be mapped: ${err instanceof Error ? err.message : String(err)}`);
}

/** The events of a record that gave none (shared: finish only reads it). */
const NO_EVENTS: ReadonlyArray<AgentEvent | PendingMarker> = Object.freeze([]);

/** With forwarding, the record's received form travels with its first kept event (see finish). */
function attachForward(mapped: MappedRecord, record: ForwardRecord | undefined): void {
  if (record) mapped.forward = record;
}

/**
 * Coalesces the request's markers (mapping/markers.ts), makes the events of the pending markers
 * kept, and counts: a record with events left is relevant; one without is irrelevant (a
 * forward-only event when forwarding).
 */
function finish(result: MapResult, records: MappedRecord[], markers: boolean): MapResult {
  const drop = markers ? coalesceMarkers(allEvents(records)) : new Set<AgentEvent | PendingMarker>();
  for (const r of records) {
    // The record's events left, made (pending markers) and appended in place: no array per record.
    let first: AgentEvent | undefined;
    for (const e of r.events) {
      if (drop.has(e)) continue;
      const event = isPending(e) ? makeMarker(e) : e;
      first ??= event;
      result.events.push(event);
    }
    if (first) {
      if (r.forward) first.forward = r.forward;
      result.relevant++;
    } else {
      if (r.forwardOnly) result.events.push(r.forwardOnly());
      result.irrelevant++;
    }
  }
  return result;
}

/** The records' events in order (a loop: flatMap's callback and spread per record cost more at hundreds of marks). */
function allEvents(records: readonly MappedRecord[]): Array<AgentEvent | PendingMarker> {
  const out: Array<AgentEvent | PendingMarker> = [];
  for (const r of records) for (const e of r.events) out.push(e);
  return out;
}

/** A record kept only to be forwarded: the chain classifies it as normal output. */
function forwardOnly(
  eventId: string,
  attrs: Attributes,
  resource: Attributes,
  timeMs: number | undefined,
  now: () => number,
  source: EventSource,
  record: ForwardRecord,
): AgentEvent {
  const { partition, service } = contextOf(attrs, resource);
  const event: AgentEvent = {
    eventId,
    kind: 'otlp.record',
    payload: {},
    partition,
    service,
    time: Math.floor(timeMs ?? now()),
    source,
    forward: record,
    forwardOnly: true,
  };
  if (timeMs === undefined) event.clockTime = true;
  return event;
}
