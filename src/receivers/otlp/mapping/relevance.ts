/**
 * The receiver's cheap relevance test (DESIGN 1), in one place: whether a span or log record may
 * matter to the processor chain. It reads only cheap fields — a span's status code and event names,
 * a log record's severity, event name and scalar body, and a small known set of attribute keys —
 * so the decoders can apply it while they only check a record, and build (materialize) only the
 * records it lets through. The span and log mappings apply the same test first, then decide exactly.
 *
 * The test may let through records the mapping then finds irrelevant (it is a superset), never the
 * other way round. To make it read another field later (a session id to remember for the trace, an
 * activity marker of a successful span), add the attribute key or event name to the lists below:
 * the checking decoders fill exactly those into the facts.
 */
import type { AttributeValue, Attributes } from '../normalized.ts';
import { exceptionOf, exceptionTextOf, isPlainObject, text } from './common.ts';

/** OTLP status code ERROR. */
export const STATUS_CODE_ERROR = 2;

/** What the span test reads. A checking decoder fills only the event names and attribute keys listed below. */
export interface SpanFacts {
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  /** Names of the span's events (a checking decoder: those in SPAN_EVENT_NAMES). */
  eventNames: string[];
  /** The span's attributes (a checking decoder: those in SPAN_ATTRIBUTE_KEYS). */
  attributes: Attributes;
}

/** Span event names the test reads. */
export const SPAN_EVENT_NAMES: readonly string[] = ['exception'];
/** Span attribute keys the test reads. */
export const SPAN_ATTRIBUTE_KEYS: readonly string[] = ['error.type'];

/** Whether a span may matter: status ERROR, an `exception` event, or an `error.type`. */
export function spanMayMatter(f: SpanFacts): boolean {
  return f.statusCode === STATUS_CODE_ERROR || f.eventNames.includes('exception') || text(f.attributes['error.type']) !== undefined;
}

/** What the log test reads. A checking decoder fills only the attribute keys listed below. */
export interface LogFacts {
  severityNumber: number;
  severityText: string;
  /** The LogRecord `eventName` field. */
  eventName: string;
  /** The body as decoded (decoders build it even when they only check the record). */
  body: AttributeValue | undefined;
  /** The record's attributes (a checking decoder: those in LOG_ATTRIBUTE_KEYS). */
  attributes: Attributes;
}

/** Log attribute keys the test reads. */
export const LOG_ATTRIBUTE_KEYS: readonly string[] = ['event.name', 'exception.type', 'exception.message', 'exception.stacktrace', 'error.type'];

/** OTLP SeverityNumber 17 is ERROR; 17..24 are ERROR and FATAL. */
const SEVERITY_ERROR = 17;
const ERROR_SEVERITY_TEXT = /^(error|err|fatal|critical|crit|alert|emerg|emergency|panic)\d*$/i;

/**
 * Words that make text below ERROR worth classifying (case-insensitive): everything the error and
 * warning rules of the classifier look for, and the other ways tools say something went wrong.
 */
export const FAILURE_MARKERS =
  /error|exception|traceback|fatal|panic|warn|fail|denied|not found|err!|abort|critical|crash|killed|segmentation fault|core dumped|timed out|timeout|refused|unable to|cannot|can't|invalid|unhandled/i;

/**
 * Whether a log record may matter: it has an event name (a reference kind or an agent CLI's event:
 * the mapping decides), a kvlist body or a string body holding a JSON object (a reference event),
 * `exception.*` evidence, ERROR severity, or scalar body text with a failure or warning marker.
 */
export function logMayMatter(f: LogFacts): boolean {
  if (f.eventName !== '' || text(f.attributes['event.name']) !== undefined) return true;
  if (isPlainObject(f.body)) return true;
  if (exceptionTextOf(exceptionOf(f.attributes)) !== undefined) return true;
  if (isErrorSeverity(f.severityNumber, f.severityText)) return true;
  const body = scalarText(f.body);
  return body !== undefined && (body.trimStart().startsWith('{') || FAILURE_MARKERS.test(body));
}

/** ERROR and above: SeverityNumber >= 17, or, when the number is unset, a severity text that says so. */
export function isErrorSeverity(severityNumber: number, severityText: string): boolean {
  if (severityNumber > 0) return severityNumber >= SEVERITY_ERROR;
  return ERROR_SEVERITY_TEXT.test(severityText.trim());
}

/** A scalar body as text: strings as they are, numbers and booleans printed. */
export function scalarText(body: AttributeValue | undefined): string | undefined {
  if (typeof body === 'string') return body;
  if (typeof body === 'number' || typeof body === 'boolean') return String(body);
  return undefined;
}
