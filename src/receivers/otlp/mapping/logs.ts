/**
 * Log records → AgentEvents. In order, the first that applies decides:
 *
 * 1. a reference event: `{kind, payload}` in the body, or a reference kind as the event name
 *    (`event.name` attribute or the LogRecord `eventName` field) with the payload in the body;
 * 2. an agent CLI or GenAI event, by its event name (agents.ts); with markers wanted, an agent
 *    CLI's or runtime's activity event becomes an activity marker (markers.ts);
 * 3. `exception.*` attributes: a failed execution with the stacktrace;
 * 4. text in the body: at ERROR or above a failed execution; below ERROR, stderr of a successful
 *    execution when it carries a failure or warning marker, else not relevant.
 *
 * Step 4 is the cheap relevance test of DESIGN 1 for chatty logs: INFO text that says nothing of
 * errors, warnings or failures cannot become an occurrence, so it is counted and not stored.
 */
import { createHash } from 'node:crypto';
import type { AgentEvent } from '../../../model/event.ts';
import type { AttributeValue, Attributes, NormalizedLog, NormalizedLogs } from '../normalized.ts';
import { mapAgentEvent } from './agents.ts';
import { logActivity, marker } from './markers.ts';
import { agentEvent, compact, contextOf, exceptionOf, exceptionTextOf, failedExecution, isPlainObject, stderrOutput, text, UNKNOWN_SERVICE } from './common.ts';
import type { EventBase } from './common.ts';
import { FAILURE_MARKERS, isErrorSeverity, logMayMatter, scalarText } from './relevance.ts';
import type { LogFacts } from './relevance.ts';

/** Reference kinds that a log record may carry by its event name, with the body as the payload. */
export const REFERENCE_KINDS: readonly string[] = ['execution.completed', 'execution.started', 'tool.result', 'scratchpad'];

/** The event a log record becomes, or undefined when the chain does not need it. */
export function mapLog(log: NormalizedLog, group: NormalizedLogs, now: () => number, markers = false): AgentEvent | undefined {
  // The cheap relevance test (the decoders apply it before building records at all).
  if (!logMayMatter(logFacts(log))) return undefined;
  const attrs = log.attributes;
  const eventName = log.eventName || text(attrs['event.name']);
  // The base (with the content hash for the event id) is only computed for records that matter.
  const base = (): EventBase => ({
    eventId: text(attrs['log.record.uid']) ?? logContentHash(log, group.resource),
    ...contextOf(attrs, group.resource, log.traceId),
    time: Math.floor(log.timeMs ?? log.observedTimeMs ?? now()),
    clockTime: log.timeMs === undefined && log.observedTimeMs === undefined ? true : undefined,
    operation: eventName ?? text(attrs['gen_ai.tool.name']),
    traceId: log.traceId,
    spanId: log.spanId,
    // Records outside a trace: agent CLIs name the user prompt they belong to.
    turnId: log.traceId ?? text(attrs['prompt.id']) ?? text(attrs['prompt_id']),
    source: 'otlp.logs',
  });

  // 1. A reference event carried over OTLP.
  const bodyObject = objectBody(log.body);
  if (bodyObject && typeof bodyObject.kind === 'string' && bodyObject.kind !== '' && isPlainObject(bodyObject.payload)) {
    return agentEvent(base(), bodyObject.kind, bodyObject.payload);
  }
  if (bodyObject && eventName && REFERENCE_KINDS.includes(eventName)) {
    return agentEvent(base(), eventName, bodyObject);
  }

  const severity = compact({ severityNumber: log.severityNumber || undefined, severityText: log.severityText || undefined });
  const errorType = text(attrs['error.type']);
  const exception = exceptionOf(attrs);

  // 2. An agent CLI's own event: a failure, else (when markers are wanted) activity.
  if (eventName) {
    const mapped = mapAgentEvent(eventName, attrs);
    if (mapped) {
      const b = base();
      return agentEvent({ ...b, operation: mapped.toolName ?? b.operation }, mapped.kind, mapped.payload, { ...exception, errorType, ...severity });
    }
    const activity = markers ? logActivity(eventName, attrs, log.body) : undefined;
    if (activity) return marker(base(), activity);
    if (mapped === null) return undefined;
  }

  // 3. An exception recorded on a log record.
  const exceptionText = exceptionTextOf(exception);
  if (exceptionText) return agentEvent(base(), 'execution.completed', failedExecution(exceptionText), { ...exception, errorType, ...severity });

  // 4. Text: judged by severity, then by content.
  const isError = isErrorSeverity(log.severityNumber, log.severityText);
  const bodyText = textBody(log.body, isError);
  if (bodyText === undefined || bodyText.trim() === '') return undefined;
  if (isError) return agentEvent(base(), 'execution.completed', failedExecution(bodyText), { errorType, ...severity });
  if (!FAILURE_MARKERS.test(bodyText)) return undefined;
  return agentEvent(base(), 'execution.completed', stderrOutput(bodyText), { errorType, ...severity });
}

/** The facts of a built log record, for the relevance test. */
export function logFacts(log: NormalizedLog): LogFacts {
  return { severityNumber: log.severityNumber, severityText: log.severityText, eventName: log.eventName, body: log.body, attributes: log.attributes };
}

/**
 * The body as text: strings as they are, scalars printed; a structured body is text only for an
 * error record (its JSON), otherwise it is an application event vigil has no use for.
 */
function textBody(body: AttributeValue | undefined, isError: boolean): string | undefined {
  if (body === undefined || body === null) return undefined;
  return scalarText(body) ?? (isError ? JSON.stringify(body) : undefined);
}

/** A kvlist body, or a string body holding a JSON object. */
function objectBody(body: AttributeValue | undefined): Record<string, unknown> | undefined {
  if (isPlainObject(body)) return body;
  if (typeof body === 'string' && body.trimStart().startsWith('{')) {
    try {
      const parsed: unknown = JSON.parse(body);
      return isPlainObject(parsed) ? parsed : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/**
 * The event id of a log record without `log.record.uid`: a hash of what the record says, so a
 * redelivered record hashes the same. The sender's own timestamp string is used (not the time
 * filled in for records without one), so that redelivery stays stable.
 */
export function logContentHash(log: NormalizedLog, resource: Attributes): string {
  const content = {
    service: text(resource['service.name']) ?? UNKNOWN_SERVICE,
    time: log.timeUnixNano !== '0' ? log.timeUnixNano : log.observedTimeUnixNano,
    severityNumber: log.severityNumber,
    severityText: log.severityText,
    eventName: log.eventName,
    traceId: log.traceId ?? '',
    spanId: log.spanId ?? '',
    body: log.body ?? null,
    attributes: log.attributes,
  };
  return createHash('sha256').update(canonicalJson(content)).digest('hex');
}

/** JSON with object keys sorted at every level, so equal content gives equal text. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
