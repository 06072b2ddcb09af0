/**
 * The OTLP data model as vigil keeps a received record (what forwarding carries in the outbox):
 * attributes flattened to plain JSON-compatible values, ids as lowercase hex, times both as the
 * sender's nanosecond string (for identity) and as milliseconds (for use). Every OTLP decoder
 * produces these; the model layer owns them so that nothing below the receivers imports a receiver.
 */

/** A decoded OTLP AnyValue: JSON-compatible, bytes as base64, int64 beyond 2^53 as a decimal string. */
export type AttributeValue = string | number | boolean | null | AttributeValue[] | { [key: string]: AttributeValue };
export type Attributes = Record<string, AttributeValue>;

export interface NormalizedScope {
  name: string;
  version: string;
  attributes: Attributes;
}

export interface NormalizedSpanEvent {
  name: string;
  /** Nanoseconds since the epoch as sent (decimal string, `'0'` when unset). */
  timeUnixNano: string;
  /** Milliseconds since the epoch; undefined when the time is unset. */
  timeMs: number | undefined;
  attributes: Attributes;
}

export interface NormalizedSpanLink {
  traceId: string;
  spanId: string;
  attributes: Attributes;
}

export interface NormalizedStatus {
  /** 0 UNSET, 1 OK, 2 ERROR. */
  code: number;
  message: string;
}

export interface NormalizedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  traceState: string;
  name: string;
  /** SpanKind: 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  startTimeUnixNano: string;
  startTimeMs: number | undefined;
  endTimeUnixNano: string;
  endTimeMs: number | undefined;
  attributes: Attributes;
  events: NormalizedSpanEvent[];
  links: NormalizedSpanLink[];
  status: NormalizedStatus;
}

export interface NormalizedLog {
  timeUnixNano: string;
  timeMs: number | undefined;
  observedTimeUnixNano: string;
  observedTimeMs: number | undefined;
  /** SeverityNumber 1..24 (17..20 ERROR, 21..24 FATAL); 0 when unspecified. */
  severityNumber: number;
  severityText: string;
  /** The body; undefined when the record has none. */
  body: AttributeValue | undefined;
  attributes: Attributes;
  traceId: string | undefined;
  spanId: string | undefined;
  /** The LogRecord `eventName` field (proto field 12); empty when unset. */
  eventName: string;
  flags: number;
}
