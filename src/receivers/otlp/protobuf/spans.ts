/**
 * OTLP/protobuf ExportTraceServiceRequest → normalized spans (opentelemetry-proto `trace/v1`;
 * field numbers below). One walk per message with a switch: build the span, or only check it —
 * validate it, count its bounds and collect the facts the relevance test reads (status code,
 * name, event names, the watched attributes, where the ids and times are) — so that a span the
 * test lets go costs a scan, not a copy, and one it keeps as an activity mark is made from those
 * facts without being built.
 */
import { TRACES_REQUEST, itemPath, sameBytes, under } from '../decoding.ts';
import type { Checking } from '../decoding.ts';
import { SPAN_ATTRIBUTE_KEYS, SPAN_EVENT_NAMES, SPAN_MARKER_KEYS, SPAN_TEST_KEYS, spanVerdict } from '../mapping/relevance.ts';
import type { SpanFacts, TraceIdAt } from '../mapping/relevance.ts';
import { MAX_STRING_BYTES, decimalNanosToMs } from '../normalized.ts';
import type {
  Attributes,
  DecodeOptions,
  DecodeStats,
  DecodedTraces,
  NormalizedSpan,
  NormalizedSpanEvent,
  NormalizedSpanLink,
  NormalizedStatus,
  SpanMark,
} from '../normalized.ts';
import {
  NameIndex,
  checkString,
  checkUtf8,
  decodeSignal,
  enumValue,
  expectWire,
  id,
  indexOfName,
  keyValue,
  message,
  nanos,
  nanosMs,
  rawTraceId,
  readString,
  traceIdHex,
  required,
  withMerged,
} from './common.ts';
import type { Ranges, RecordKind } from './common.ts';
import { LEN } from './wire.ts';
import type { WireReader } from './wire.ts';

/** Span field numbers (trace.proto). */
const SPAN = {
  TRACE_ID: 1,
  SPAN_ID: 2,
  TRACE_STATE: 3,
  PARENT_SPAN_ID: 4,
  NAME: 5,
  KIND: 6,
  START: 7,
  END: 8,
  ATTRIBUTES: 9,
  EVENTS: 11,
  LINKS: 13,
  STATUS: 15,
} as const;
/** Span.Event: time_unix_nano = 1, name = 2, attributes = 3. */
const EVENT = { TIME: 1, NAME: 2, ATTRIBUTES: 3 } as const;
/** Span.Link: trace_id = 1, span_id = 2, trace_state = 3, attributes = 4. */
const LINK = { TRACE_ID: 1, SPAN_ID: 2, ATTRIBUTES: 4 } as const;
/** Status: message = 2, code = 3 (1 is the reserved deprecated code). */
const STATUS = { MESSAGE: 2, CODE: 3 } as const;

/** A checked span's facts, with where its ids are in the request's bytes and its times (for a mark). */
interface ProtoSpanFacts extends SpanFacts, TraceIdAt {
  spanIdAt: number;
  startMs: number | undefined;
  endMs: number | undefined;
}

const WATCHED = new NameIndex(SPAN_ATTRIBUTE_KEYS);
const WATCHED_BY_TEST = new NameIndex(SPAN_TEST_KEYS);
const WATCHED_FOR_MARKS = new NameIndex(SPAN_MARKER_KEYS);

const SPANS: RecordKind<NormalizedSpan, ProtoSpanFacts, SpanMark> = {
  names: TRACES_REQUEST,
  walk: walkSpan,
  verdict: spanVerdict,
  mark: (f, buf) => ({
    traceId: traceIdHex(buf, f.traceIdAt),
    spanId: buf.toString('hex', f.spanIdAt, f.spanIdAt + 8),
    name: f.name,
    startTimeMs: f.startMs,
    endTimeMs: f.endMs,
    statusCode: f.statusCode,
    attributes: f.attributes,
  }),
  newFacts: () => ({
    statusCode: 0,
    name: '',
    eventNames: [],
    attributes: {},
    traceIdAt: -1,
    traceIdText: undefined,
    sameTrace: false,
    spanIdAt: -1,
    startMs: undefined,
    endMs: undefined,
  }),
  traceIdOf: rawTraceId,
};

/** Decodes an OTLP/protobuf ExportTraceServiceRequest. Throws VigilError VIGIL_PAYLOAD_INVALID for bytes that are not such a message. */
export function decodeTracesProtobuf(body: Uint8Array, options: DecodeOptions = {}): DecodedTraces {
  const { groups, stats, skipped, sessions } = decodeSignal(body, SPANS, options);
  return {
    groups: groups.map(({ resource, scope, records, marks }) => (marks ? { resource, scope, spans: records, marks } : { resource, scope, spans: records })),
    stats,
    skipped,
    sessions,
  };
}

/**
 * One span: built (no `checking`), or only checked, filling `checking.facts`. The cursor is at the
 * span's first field; `end` is its end.
 */
function walkSpan(r: WireReader, end: number, stats: DecodeStats, checking: Checking<ProtoSpanFacts> | undefined): NormalizedSpan | undefined {
  const build = checking === undefined;
  // Reading what an activity mark carries costs strings: only when marks are wanted.
  const marking = checking?.markers === true;
  let watched = marking ? WATCHED_FOR_MARKS : WATCHED;
  let facts: ProtoSpanFacts | undefined;
  if (checking) {
    facts = checking.facts;
    facts.statusCode = 0;
    facts.name = '';
    facts.eventNames.length = 0;
    // The facts' attributes leave the walk only in a mark; otherwise an empty object (the common
    // case: most spans carry none of the watched keys) is used again rather than made per span.
    if (marking || !isEmpty(facts.attributes)) facts.attributes = {};
    facts.traceIdAt = facts.spanIdAt = -1;
    facts.sameTrace = false;
    facts.startMs = facts.endMs = undefined;
    checking.mustBuild = false;
  }
  let traceId: string | undefined;
  let spanId: string | undefined;
  let parentSpanId: string | undefined;
  let traceState = '';
  let name = '';
  let kind = 0;
  let start = '0';
  let endTime = '0';
  // Made only when building: a checked span allocates nothing of its own.
  const attributes: Attributes | undefined = build ? {} : undefined;
  const seen = build ? { kept: 0 } : UNUSED_SEEN;
  let attributeIndex = 0;
  const events: NormalizedSpanEvent[] | undefined = build ? [] : undefined;
  let eventCount = 0;
  const links: NormalizedSpanLink[] | undefined = build ? [] : undefined;
  let linkCount = 0;
  let statusStart = -1;
  let statusEnd = -1;
  let statusRanges: Ranges | undefined;
  while (r.next(end)) {
    switch (r.field) {
      case SPAN.TRACE_ID:
        traceId = id(r, end, 'traceId', 16, build);
        if (facts) {
          facts.traceIdAt = traceId === undefined ? -1 : r.pos - 16;
          // A later span of a trace whose session is already kept: its session keys need no reading.
          facts.sameTrace = !marking && sameBytes(r.buf, facts.traceIdAt, checking!.notedTraceAt, 16);
          if (facts.sameTrace) watched = WATCHED_BY_TEST;
        }
        break;
      case SPAN.SPAN_ID:
        spanId = id(r, end, 'spanId', 8, build);
        if (facts) facts.spanIdAt = r.pos - 8;
        break;
      case SPAN.TRACE_STATE:
        if (build) traceState = readString(r, end, 'traceState', MAX_STRING_BYTES, stats);
        else checkString(r, end, 'traceState', MAX_STRING_BYTES, stats);
        break;
      case SPAN.PARENT_SPAN_ID:
        parentSpanId = id(r, end, 'parentSpanId', 8, build);
        break;
      case SPAN.NAME:
        if (build || marking) name = readString(r, end, 'name', MAX_STRING_BYTES, stats);
        else checkString(r, end, 'name', MAX_STRING_BYTES, stats);
        break;
      case SPAN.KIND:
        kind = enumValue(r, end, 'kind');
        break;
      case SPAN.START:
        if (marking) facts!.startMs = nanosMs(r, end, 'startTimeUnixNano');
        else start = nanos(r, end, 'startTimeUnixNano', build);
        break;
      case SPAN.END:
        if (marking) facts!.endMs = nanosMs(r, end, 'endTimeUnixNano');
        else endTime = nanos(r, end, 'endTimeUnixNano', build);
        break;
      case SPAN.ATTRIBUTES:
        if (!keyValue(r, end, stats, 'attributes', attributeIndex++, attributes, seen, watched, facts?.attributes)) {
          checking!.mustBuild = true;
          return undefined;
        }
        break;
      case SPAN.EVENTS: {
        const i = eventCount++;
        const e = message(r, end, 'events', i);
        try {
          const event = walkEvent(r, e, stats, checking);
          if (build) events!.push(event);
          else if (checking!.mustBuild) return undefined;
          else if (event.name !== '') facts!.eventNames.push(event.name);
        } catch (err) {
          throw under(err, itemPath('events', i));
        }
        r.pos = e;
        break;
      }
      case SPAN.LINKS: {
        const i = linkCount++;
        const e = message(r, end, 'links', i);
        try {
          const link = walkLink(r, e, stats, checking);
          if (build) links!.push(link!);
          else if (checking!.mustBuild) return undefined;
        } catch (err) {
          throw under(err, itemPath('links', i));
        }
        r.pos = e;
        break;
      }
      case SPAN.STATUS: {
        const e = message(r, end, 'status');
        // A status given more than once merges (withMerged); once, it is read in place.
        if (statusStart < 0) {
          statusStart = r.pos;
          statusEnd = e;
        } else (statusRanges ??= [statusStart, statusEnd]).push(r.pos, e);
        r.pos = e;
        break;
      }
      default:
        r.skip(end);
    }
  }
  let status: NormalizedStatus = NO_STATUS;
  if (statusStart >= 0) {
    try {
      if (statusRanges) status = withMerged(r, statusRanges, build, walkStatus, undefined, stats);
      else {
        r.pos = statusStart;
        status = walkStatus(r, statusEnd, build, undefined, stats);
      }
    } catch (err) {
      throw under(err, 'status');
    }
  }
  traceId = required(traceId, 'traceId', 16);
  spanId = required(spanId, 'spanId', 8);
  if (!build) {
    facts!.statusCode = status.code;
    facts!.name = name;
    // A span given its ids more than once keeps the last: the bytes at the recorded places.
    if (traceId === undefined) facts!.traceIdAt = -1;
    if (spanId === undefined) facts!.spanIdAt = -1;
    return undefined;
  }
  return {
    traceId,
    spanId,
    parentSpanId,
    traceState,
    name,
    kind,
    startTimeUnixNano: start,
    startTimeMs: decimalNanosToMs(start),
    endTimeUnixNano: endTime,
    endTimeMs: decimalNanosToMs(endTime),
    attributes: attributes!,
    events: events!,
    links: links!,
    status,
  };
}

const NO_STATUS: NormalizedStatus = Object.freeze({ code: 0, message: '' });
/** What keyValue is given for `seen` when it only checks (it reads `seen` only when building). */
const UNUSED_SEEN = { kept: 0 };

function isEmpty(o: Attributes): boolean {
  for (const _ in o) return false;
  return true;
}

/**
 * A span event; when only checked, its name (the relevance test reads it) and `checking.mustBuild`
 * when its attributes go past the cap.
 */
function walkEvent(r: WireReader, end: number, stats: DecodeStats, checking: Checking<ProtoSpanFacts> | undefined): NormalizedSpanEvent {
  const build = checking === undefined;
  let time = '0';
  let name = '';
  const attributes: Attributes = {};
  const seen = { kept: 0 };
  let i = 0;
  while (r.next(end)) {
    switch (r.field) {
      case EVENT.TIME:
        time = nanos(r, end, 'timeUnixNano', build);
        break;
      case EVENT.NAME:
        if (build || checking.markers) name = readString(r, end, 'name', MAX_STRING_BYTES, stats);
        else {
          expectWire(r, LEN, 'name', end);
          const s = r.lengthDelimited(end);
          checkUtf8(r.buf, s, r.pos, 'name', MAX_STRING_BYTES, stats);
          name = SPAN_EVENT_NAMES[indexOfName(r.buf, s, r.pos, SPAN_EVENT_NAMES)] ?? '';
        }
        break;
      case EVENT.ATTRIBUTES:
        if (!keyValue(r, end, stats, 'attributes', i++, build ? attributes : undefined, seen)) {
          checking!.mustBuild = true;
          return { name, timeUnixNano: time, timeMs: undefined, attributes };
        }
        break;
      default:
        r.skip(end);
    }
  }
  return { name, timeUnixNano: time, timeMs: decimalNanosToMs(time), attributes };
}

/** A span link; when only checked, nothing (and `checking.mustBuild` when its attributes go past the cap). */
function walkLink(r: WireReader, end: number, stats: DecodeStats, checking: Checking<ProtoSpanFacts> | undefined): NormalizedSpanLink | undefined {
  const build = checking === undefined;
  let traceId: string | undefined;
  let spanId: string | undefined;
  const attributes: Attributes | undefined = build ? {} : undefined;
  const seen = { kept: 0 };
  let i = 0;
  while (r.next(end)) {
    switch (r.field) {
      case LINK.TRACE_ID:
        traceId = id(r, end, 'traceId', 16, build);
        break;
      case LINK.SPAN_ID:
        spanId = id(r, end, 'spanId', 8, build);
        break;
      case LINK.ATTRIBUTES:
        if (!keyValue(r, end, stats, 'attributes', i++, attributes, seen)) {
          checking!.mustBuild = true;
          return undefined;
        }
        break;
      default:
        r.skip(end);
    }
  }
  traceId = required(traceId, 'traceId', 16);
  spanId = required(spanId, 'spanId', 8);
  return build ? { traceId, spanId, attributes: attributes! } : undefined;
}

function walkStatus(r: WireReader, end: number, build: boolean, _arg: undefined, stats: DecodeStats): NormalizedStatus {
  let code = 0;
  let message = '';
  while (r.next(end)) {
    if (r.field === STATUS.MESSAGE) {
      if (build) message = readString(r, end, 'message', MAX_STRING_BYTES, stats);
      else checkString(r, end, 'message', MAX_STRING_BYTES, stats);
    } else if (r.field === STATUS.CODE) code = enumValue(r, end, 'code');
    else r.skip(end);
  }
  // A checked span's status is only read for its code: the usual codes are not made per span.
  if (!build && code < CHECKED_STATUSES.length) return CHECKED_STATUSES[code]!;
  return { code, message };
}

/** The status of a checked span (message never read) for codes UNSET, OK and ERROR. */
const CHECKED_STATUSES: readonly NormalizedStatus[] = [0, 1, 2].map((code) => Object.freeze({ code, message: '' }));
