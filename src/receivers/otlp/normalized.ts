/**
 * The normalized OTLP records every OTLP decoder produces (OTLP/JSON and OTLP/protobuf),
 * so that mapping to AgentEvents, bounds and partial-success accounting do not depend on the wire
 * encoding. Attributes are flattened to plain JSON-compatible values; ids are lowercase hex; times
 * are kept both as the sender's nanosecond string (for identity) and as milliseconds (for use).
 */

import type {
  AttributeValue,
  Attributes,
  NormalizedLog,
  NormalizedScope,
  NormalizedSpan,
  NormalizedSpanEvent,
  NormalizedSpanLink,
  NormalizedStatus,
} from '../../model/otlp.ts';

export type { AttributeValue, Attributes, NormalizedLog, NormalizedScope, NormalizedSpan, NormalizedSpanEvent, NormalizedSpanLink, NormalizedStatus };

/**
 * A successful span the relevance test kept only as an activity mark (mapping/relevance.ts): what
 * the checking walk read of it — never built. A built span gives the same (mapping/markers.ts).
 */
export interface SpanMark {
  traceId: string;
  spanId: string;
  name: string;
  startTimeMs: number | undefined;
  endTimeMs: number | undefined;
  /** 0 UNSET, 1 OK, 2 ERROR. */
  statusCode: number;
  /** The watched attributes only (SPAN_ATTRIBUTE_KEYS). */
  attributes: Attributes;
}

/** The spans of one (resource, scope) pair. */
export interface NormalizedTraces {
  resource: Attributes;
  scope: NormalizedScope;
  spans: NormalizedSpan[];
  /** Spans kept only as activity marks (decoded with `markers`); absent when none. */
  marks?: SpanMark[];
}

/** The log records of one (resource, scope) pair. */
export interface NormalizedLogs {
  resource: Attributes;
  scope: NormalizedScope;
  logs: NormalizedLog[];
}

/** What decoding found besides the records: individually rejected records and bounded values. */
export interface DecodeStats {
  /** Records (spans or log records) refused individually; the rest of the request stands. */
  rejected: number;
  /** Attributes dropped beyond MAX_ATTRIBUTES per attribute list. */
  droppedAttributes: number;
  /** String values shortened to MAX_STRING_BYTES (or MAX_BODY_BYTES for bodies). */
  truncatedValues: number;
  /** Values nested deeper than MAX_VALUE_DEPTH, replaced by null. */
  truncatedDepth: number;
  /** One line per problem, naming where and what; at most MAX_MESSAGES are kept. */
  messages: string[];
  /** Problems beyond MAX_MESSAGES, counted only. */
  omittedMessages: number;
}

export interface DecodedTraces {
  groups: NormalizedTraces[];
  stats: DecodeStats;
  /** Spans checked but not built (with `skipIrrelevant`): accepted, and certainly not relevant. Not in `groups`. */
  skipped: number;
  /** Trace id → session named by the skipped spans: their trace's session is kept, the spans are not. */
  sessions: Map<string, string>;
}

export interface DecodedLogs {
  groups: NormalizedLogs[];
  stats: DecodeStats;
  /** Log records checked but not built (with `skipIrrelevant`): accepted, and certainly not relevant. Not in `groups`. */
  skipped: number;
  /** Trace id → session named by the skipped log records. */
  sessions: Map<string, string>;
}

export interface DecodeOptions {
  /**
   * Check every record (same rejections, same bound counts) but build only those the relevance
   * test (mapping/relevance.ts) lets through; the others are counted in `skipped`. The receiver's
   * cheap relevance test (DESIGN 1), applied before the cost of building records nobody will read.
   * Off when the records are forwarded downstream: then every record is built.
   */
  skipIrrelevant?: boolean;
  /**
   * With skipIrrelevant: keep the successful spans an activity marker is made of (model requests,
   * tool calls, agent turns) as marks — their facts, not built — because a pipeline's processors
   * asked for activity markers. Without skipIrrelevant every span is built and the mapping makes
   * the same marks from the built spans.
   */
  markers?: boolean;
}

/** At most this many attributes are kept per attribute list; the rest are dropped and counted. */
export const MAX_ATTRIBUTES = 128;
/** String attribute values longer than this (UTF-8 bytes) are shortened, keeping head and tail. */
export const MAX_STRING_BYTES = 8 * 1024;
/** Log bodies carry whole tracebacks, so they get a larger bound than attribute values. */
export const MAX_BODY_BYTES = 64 * 1024;
/** Nesting depth of array/kvlist values; deeper values are replaced by null and counted. */
export const MAX_VALUE_DEPTH = 8;
/** Problem messages kept per request; the count of the rest is reported. */
export const MAX_MESSAGES = 20;

export function emptyStats(): DecodeStats {
  return { rejected: 0, droppedAttributes: 0, truncatedValues: 0, truncatedDepth: 0, messages: [], omittedMessages: 0 };
}

/** Records a problem message, keeping memory bounded for requests with many bad records. */
export function addMessage(stats: DecodeStats, message: string): void {
  if (stats.messages.length < MAX_MESSAGES) stats.messages.push(message);
  else stats.omittedMessages++;
}

/**
 * A one-line summary of the problems, for the OTLP partial-success `errorMessage`: the first
 * MAX_MESSAGES problems and how many more there were. Empty when there is nothing to say.
 */
export function summarize(stats: DecodeStats, extra: readonly string[] = []): string {
  const lines = [...stats.messages, ...extra];
  if (stats.droppedAttributes > 0) lines.push(`${stats.droppedAttributes} attribute(s) dropped beyond the limit of ${MAX_ATTRIBUTES} per record`);
  if (stats.truncatedValues > 0) lines.push(`${stats.truncatedValues} string value(s) truncated to ${MAX_STRING_BYTES} bytes (bodies: ${MAX_BODY_BYTES})`);
  if (stats.truncatedDepth > 0) lines.push(`${stats.truncatedDepth} value(s) nested deeper than ${MAX_VALUE_DEPTH} levels replaced by null`);
  const more = stats.omittedMessages + Math.max(0, lines.length - MAX_MESSAGES);
  const shown = lines.slice(0, MAX_MESSAGES).join('; ');
  return more > 0 ? `${shown}; and ${more} more` : shown;
}

/**
 * Shortens `text` to at most `maxBytes` UTF-8 bytes, keeping its head and its tail with a marker
 * between them: a Java stack names the exception at the top, a Python traceback at the bottom, and
 * both ends matter to the classifier. Cuts fall on character boundaries.
 */
export function truncateUtf8(text: string, maxBytes: number): { text: string; truncated: boolean } {
  if (text.length * 3 <= maxBytes) return { text, truncated: false };
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return { text, truncated: false };
  const markerBudget = 48;
  const half = Math.max(0, Math.floor((maxBytes - markerBudget) / 2));
  let headEnd = half;
  while (headEnd > 0 && (buf[headEnd]! & 0xc0) === 0x80) headEnd--;
  let tailStart = buf.length - half;
  while (tailStart < buf.length && (buf[tailStart]! & 0xc0) === 0x80) tailStart++;
  const cut = tailStart - headEnd;
  const marker = `\n…[${cut} bytes truncated]…\n`;
  return {
    text: buf.subarray(0, headEnd).toString('utf8') + marker + buf.subarray(tailStart).toString('utf8'),
    truncated: true,
  };
}

/** Nanoseconds to milliseconds; undefined for 0 (unset in OTLP). */
export function nanosToMs(nanos: bigint): number | undefined {
  if (nanos === 0n) return undefined;
  return Number(nanos / 1_000_000n) + Number(nanos % 1_000_000n) / 1e6;
}

/** The same for a canonical decimal string (no leading zeros), without BigInt arithmetic; equal results. */
export function decimalNanosToMs(nanos: string): number | undefined {
  if (nanos === '0') return undefined;
  if (nanos.length <= 6) return Number(nanos) / 1e6;
  return Number(nanos.slice(0, -6)) + Number(nanos.slice(-6)) / 1e6;
}

/**
 * decimalNanosToMs of the canonical decimal in `buf[start, end)` (ASCII digits, at most 19),
 * without making the string: both parts are summed digit by digit, exactly as Number() reads them
 * (at most 13 and 6 digits, integers far below 2^53).
 */
export function digitsNanosToMs(buf: Uint8Array, start: number, end: number): number | undefined {
  if (end - start === 1 && buf[start] === 0x30) return undefined;
  if (end - start <= 6) return digitsValue(buf, start, end) / 1e6;
  return digitsValue(buf, start, end - 6) + digitsValue(buf, end - 6, end) / 1e6;
}

function digitsValue(buf: Uint8Array, start: number, end: number): number {
  let n = 0;
  for (let i = start; i < end; i++) n = n * 10 + (buf[i]! - 0x30);
  return n;
}
