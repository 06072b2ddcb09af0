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
import { contextOf, text } from './mapping/common.ts';
import { mapLog } from './mapping/logs.ts';
import { mapSpan } from './mapping/spans.ts';
import { logContentHash } from './mapping/logs.ts';
import type { Attributes, NormalizedLogs, NormalizedTraces } from './normalized.ts';

export { DEFAULT_PARTITION, SESSION_KEYS, UNKNOWN_SERVICE } from './mapping/common.ts';
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
}

export interface MapResult {
  /** Events for the relevant records, in request order. */
  events: AgentEvent[];
  /** Records turned into events (events.length). */
  relevant: number;
  /** Records accepted but not needed by the chain (successful spans, unremarkable log records). */
  irrelevant: number;
  /** Records that could not be mapped; counted with the decode rejections. */
  rejected: number;
  messages: string[];
}

/** Maps spans (see mapping/spans.ts). */
export function mapTraces(groups: readonly NormalizedTraces[], options: MapOptions = {}): MapResult {
  const now = options.now ?? Date.now;
  const result = emptyResult();
  for (const group of groups) {
    group.spans.forEach((span, i) => {
      const record: ForwardRecord | undefined = options.forward ? { signal: 'traces', resource: group.resource, scope: group.scope, span } : undefined;
      collect(
        result,
        () => `span ${span.traceId}:${span.spanId} (#${i})`,
        () => mapSpan(span, group, now),
        record && (() => forwardOnly(`${span.traceId}:${span.spanId}`, span.attributes, group.resource, span.endTimeMs ?? span.startTimeMs ?? now(), 'otlp.traces', record)),
      );
    });
  }
  return result;
}

/** Maps log records (see mapping/logs.ts). */
export function mapLogs(groups: readonly NormalizedLogs[], options: MapOptions = {}): MapResult {
  const now = options.now ?? Date.now;
  const result = emptyResult();
  for (const group of groups) {
    group.logs.forEach((log, i) => {
      const record: ForwardRecord | undefined = options.forward ? { signal: 'logs', resource: group.resource, scope: group.scope, log } : undefined;
      collect(
        result,
        () => `log record #${i}`,
        () => mapLog(log, group, now),
        record &&
          (() =>
            forwardOnly(text(log.attributes['log.record.uid']) ?? logContentHash(log, group.resource), log.attributes, group.resource, log.timeMs ?? log.observedTimeMs ?? now(), 'otlp.logs', record)),
      );
    });
  }
  return result;
}

function emptyResult(): MapResult {
  return { events: [], relevant: 0, irrelevant: 0, rejected: 0, messages: [] };
}

/**
 * Maps one record. With forwarding, a relevant event also carries the received record, and an
 * irrelevant record becomes a forward-only event (still counted as irrelevant).
 */
function collect(result: MapResult, what: () => string, map: () => AgentEvent | undefined, forwardOnlyEvent?: () => AgentEvent): void {
  try {
    const event = map();
    if (event) {
      if (forwardOnlyEvent) event.forward = forwardOnlyEvent().forward;
      result.events.push(event);
      result.relevant++;
    } else {
      if (forwardOnlyEvent) result.events.push(forwardOnlyEvent());
      result.irrelevant++;
    }
  } catch (err) {
    result.rejected++;
    result.messages.push(`${what()}: could not be mapped: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** A record kept only to be forwarded: the chain classifies it as normal output. */
function forwardOnly(eventId: string, attrs: Attributes, resource: Attributes, timeMs: number, source: EventSource, record: ForwardRecord): AgentEvent {
  const { partition, service } = contextOf(attrs, resource);
  return { eventId, kind: 'otlp.record', payload: {}, partition, service, time: Math.floor(timeMs), source, forward: record, forwardOnly: true };
}
