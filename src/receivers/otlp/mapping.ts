/**
 * Normalized OTLP records → AgentEvents (DESIGN 3.1, 3.3). This is the receiver's cheap relevance
 * test (DESIGN 1): error spans, spans with an exception event and log records with a body or
 * exception attributes become events; successful spans and empty log records are only counted,
 * so the durable write rate follows the failure rate rather than the span rate.
 *
 * Failures are expressed in the reference shape the classifier reads: `execution.completed` with
 * `payload.state == "error"` and `payload.outcome.error`, or a successful execution whose
 * `payload.outcome.output[]` carries the text as a `stderr` item. Structured evidence
 * (`exception.*`, `error.type`, status, severity) is kept beside it in `evidence`.
 */
import { createHash } from 'node:crypto';
import type { AgentEvent, Evidence } from '../../model/event.ts';
import type { AttributeValue, Attributes, NormalizedLog, NormalizedLogs, NormalizedSpan, NormalizedTraces } from './normalized.ts';

/** Reference kinds that a log record may carry by its event name, with the body as the payload. */
export const REFERENCE_KINDS: readonly string[] = ['execution.completed', 'execution.started', 'tool.result', 'scratchpad'];

/** The partition of records that name no session, conversation or service instance. */
export const DEFAULT_PARTITION = 'default';
/** The service of records whose resource has no `service.name` (the OpenTelemetry default). */
export const UNKNOWN_SERVICE = 'unknown_service';

/** OTLP SeverityNumber 17 is ERROR; 17..24 are ERROR and FATAL. */
const SEVERITY_ERROR = 17;
const ERROR_SEVERITY_TEXT = /^(error|err|fatal|critical|crit|alert|emerg|emergency|panic)\d*$/i;
const STATUS_CODE_ERROR = 2;

export interface MapOptions {
  /** Clock for records that carry no timestamp at all; the record's own time is used otherwise. */
  now?: () => number;
}

export interface MapResult {
  /** Events for the relevant records, in request order. */
  events: AgentEvent[];
  /** Records turned into events (events.length). */
  relevant: number;
  /** Records accepted but not needed by the chain (successful spans, empty log records). */
  irrelevant: number;
  /** Records that could not be mapped; counted with the decode rejections. */
  rejected: number;
  messages: string[];
}

/** Maps spans: error spans and spans with an exception event become `execution.completed` events. */
export function mapTraces(groups: readonly NormalizedTraces[], options: MapOptions = {}): MapResult {
  const now = options.now ?? Date.now;
  const result = emptyResult();
  for (const group of groups) {
    group.spans.forEach((span, i) => {
      collect(result, `span ${span.traceId}:${span.spanId} (#${i})`, () => mapSpan(span, group, now));
    });
  }
  return result;
}

/** Maps log records: reference events pass through; exceptions, error and stderr text become `execution.completed`. */
export function mapLogs(groups: readonly NormalizedLogs[], options: MapOptions = {}): MapResult {
  const now = options.now ?? Date.now;
  const result = emptyResult();
  for (const group of groups) {
    group.logs.forEach((log, i) => {
      collect(result, `log record #${i}`, () => mapLog(log, group, now));
    });
  }
  return result;
}

function emptyResult(): MapResult {
  return { events: [], relevant: 0, irrelevant: 0, rejected: 0, messages: [] };
}

function collect(result: MapResult, what: string, map: () => AgentEvent | undefined): void {
  try {
    const event = map();
    if (event) {
      result.events.push(event);
      result.relevant++;
    } else {
      result.irrelevant++;
    }
  } catch (err) {
    result.rejected++;
    result.messages.push(`${what}: could not be mapped: ${err instanceof Error ? err.message : String(err)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Spans

function mapSpan(span: NormalizedSpan, group: NormalizedTraces, now: () => number): AgentEvent | undefined {
  const exception = [...span.events].reverse().find((e) => e.name === 'exception');
  const isError = span.status.code === STATUS_CODE_ERROR;
  if (!isError && !exception) return undefined;

  const exceptionEvidence = exception ? exceptionOf(exception.attributes) : {};
  const exceptionText = exceptionTextOf(exceptionEvidence);
  const errorType = text(span.attributes['error.type']);
  const statusMessage = span.status.message || undefined;

  let payload: Record<string, unknown>;
  if (isError) {
    payload = { state: 'error', outcome: { error: exceptionText ?? statusMessage ?? errorType ?? '', output: [] } };
  } else if (exceptionText) {
    // An exception recorded on a span that still succeeded: the agent recovered from it.
    payload = { state: 'ok', outcome: { output: [{ name: 'stderr', text: exceptionText }] } };
  } else {
    return undefined;
  }

  return withoutUndefined({
    eventId: `${span.traceId}:${span.spanId}`,
    kind: 'execution.completed',
    payload,
    ...common(span.attributes, group.resource),
    time: Math.floor(span.endTimeMs ?? span.startTimeMs ?? now()),
    operation: span.name || text(span.attributes['gen_ai.tool.name']),
    traceId: span.traceId,
    spanId: span.spanId,
    turnId: span.traceId,
    source: 'otlp.traces',
    evidence: compact({ ...exceptionEvidence, errorType, statusMessage }),
  });
}

// ---------------------------------------------------------------------------------------------
// Log records

function mapLog(log: NormalizedLog, group: NormalizedLogs, now: () => number): AgentEvent | undefined {
  const attrs = log.attributes;
  const eventName = log.eventName || text(attrs['event.name']);
  const base = {
    eventId: text(attrs['log.record.uid']) ?? logContentHash(log, group.resource),
    ...common(attrs, group.resource),
    time: Math.floor(log.timeMs ?? log.observedTimeMs ?? now()),
    operation: eventName ?? text(attrs['gen_ai.tool.name']),
    traceId: log.traceId,
    spanId: log.spanId,
    turnId: log.traceId,
    source: 'otlp.logs' as const,
  };

  // A reference event carried over OTLP: `{kind, payload}` in the body, or the kind as event name.
  const bodyObject = objectBody(log.body);
  if (bodyObject && typeof bodyObject.kind === 'string' && bodyObject.kind !== '' && isPlainObject(bodyObject.payload)) {
    return event(base, bodyObject.kind, bodyObject.payload);
  }
  if (bodyObject && eventName && REFERENCE_KINDS.includes(eventName)) {
    return event(base, eventName, bodyObject);
  }

  const severity = compact({ severityNumber: log.severityNumber || undefined, severityText: log.severityText || undefined });
  const errorType = text(attrs['error.type']);
  const exception = exceptionOf(attrs);
  const exceptionText = exceptionTextOf(exception);
  if (exceptionText) {
    return event(base, 'execution.completed', failed(exceptionText), { ...exception, errorType, ...severity });
  }

  const isError = isErrorSeverity(log.severityNumber, log.severityText);
  const bodyText = textBody(log.body, isError);
  if (bodyText === undefined || bodyText.trim() === '') return undefined;
  const payload = isError ? failed(bodyText) : { state: 'ok', outcome: { output: [{ name: 'stderr', text: bodyText }] } };
  return event(base, 'execution.completed', payload, { errorType, ...severity });
}

type EventBase = Omit<AgentEvent, 'kind' | 'payload' | 'evidence'>;

/** An event with its fields in reading order (id, kind, payload, context, evidence). */
function event(base: EventBase, kind: string, payload: Record<string, unknown>, evidence?: Evidence): AgentEvent {
  const { eventId, ...context } = base;
  return withoutUndefined({ eventId, kind, payload, ...context, evidence: evidence && compact(evidence) });
}

function failed(error: string): Record<string, unknown> {
  return { state: 'error', outcome: { error, output: [] } };
}

/** ERROR and above: SeverityNumber >= 17, or, when the number is unset, a severity text that says so. */
export function isErrorSeverity(severityNumber: number, severityText: string): boolean {
  if (severityNumber > 0) return severityNumber >= SEVERITY_ERROR;
  return ERROR_SEVERITY_TEXT.test(severityText.trim());
}

/**
 * The body as text: strings as they are, scalars printed; a structured body is text only for an
 * error record (its JSON), otherwise it is an application event vigil has no use for.
 */
function textBody(body: AttributeValue | undefined, isError: boolean): string | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return body;
  if (typeof body === 'number' || typeof body === 'boolean') return String(body);
  return isError ? JSON.stringify(body) : undefined;
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

// ---------------------------------------------------------------------------------------------
// Shared

/** Partition, service and revision: the record's own attributes first, then its resource's. */
function common(record: Attributes, resource: Attributes): { partition: string; service: string; revision: string | undefined } {
  return {
    partition:
      text(record['session.id']) ??
      text(resource['session.id']) ??
      text(record['gen_ai.conversation.id']) ??
      text(resource['gen_ai.conversation.id']) ??
      text(resource['service.instance.id']) ??
      DEFAULT_PARTITION,
    service: text(resource['service.name']) ?? UNKNOWN_SERVICE,
    revision:
      text(record['vigil.revision']) ??
      text(record['service.version']) ??
      text(resource['vigil.revision']) ??
      text(resource['service.version']),
  };
}

function exceptionOf(attrs: Attributes): Pick<Evidence, 'exceptionType' | 'exceptionMessage' | 'stacktrace'> {
  return compact({
    exceptionType: text(attrs['exception.type']),
    exceptionMessage: text(attrs['exception.message']),
    stacktrace: text(attrs['exception.stacktrace']),
  });
}

/** The stacktrace (a Python one ends with its `Type: message` line), else `Type: message`. */
function exceptionTextOf(e: Pick<Evidence, 'exceptionType' | 'exceptionMessage' | 'stacktrace'>): string | undefined {
  if (e.stacktrace && e.stacktrace.trim() !== '') return e.stacktrace;
  if (e.exceptionType && e.exceptionMessage) return `${e.exceptionType}: ${e.exceptionMessage}`;
  return e.exceptionType ?? e.exceptionMessage;
}

/** An attribute as non-empty text: strings as they are, numbers and booleans printed. */
function text(v: AttributeValue | undefined): string | undefined {
  if (typeof v === 'string') return v === '' ? undefined : v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}

function isPlainObject(v: unknown): v is Record<string, AttributeValue> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function compact<T extends object>(o: T): T {
  for (const k of Object.keys(o) as Array<keyof T>) if (o[k] === undefined) delete o[k];
  return o;
}

/** Drops undefined optional fields so the appended event serializes the same everywhere. */
function withoutUndefined(event: AgentEvent): AgentEvent {
  compact(event);
  if (event.evidence && Object.keys(event.evidence).length === 0) delete event.evidence;
  return event;
}
