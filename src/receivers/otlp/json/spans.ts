/**
 * OTLP/JSON ExportTraceServiceRequest → normalized spans. One walk per message with a switch:
 * build the span, or only check it — validate it, count its bounds and collect the facts the
 * relevance test reads (status code, name, event names, the watched attributes, ids and times) —
 * so that a span the test lets go costs a scan of its bytes, not a parse tree and a copy, and one
 * it keeps as an activity mark is made from those facts without being built.
 */
import { TRACES_REQUEST, itemPath, under } from '../decoding.ts';
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
  WatchedKeys,
  wrongType,
  attributeList,
  attributes,
  decodeSignal,
  enumField,
  hexTraceId,
  idField,
  noteTraceId,
  nanosField,
  nanosMsField,
  optionalId,
  requiredId,
  stringField,
} from './common.ts';
import type { RecordKind } from './common.ts';
import { FieldNames, JsonType, withSnakeCase } from './reader.ts';
import type { JsonReader } from './reader.ts';

const SPAN_KINDS: Record<string, number> = {
  SPAN_KIND_UNSPECIFIED: 0,
  SPAN_KIND_INTERNAL: 1,
  SPAN_KIND_SERVER: 2,
  SPAN_KIND_CLIENT: 3,
  SPAN_KIND_PRODUCER: 4,
  SPAN_KIND_CONSUMER: 5,
};
const STATUS_CODES: Record<string, number> = { STATUS_CODE_UNSET: 0, STATUS_CODE_OK: 1, STATUS_CODE_ERROR: 2 };

const S = {
  TRACE_ID: 1,
  SPAN_ID: 2,
  PARENT_SPAN_ID: 3,
  TRACE_STATE: 4,
  NAME: 5,
  KIND: 6,
  START: 7,
  END: 8,
  ATTRIBUTES: 9,
  EVENTS: 10,
  LINKS: 11,
  STATUS: 12,
} as const;
const SPAN_FIELDS = new FieldNames(
  withSnakeCase({
    traceId: S.TRACE_ID,
    spanId: S.SPAN_ID,
    parentSpanId: S.PARENT_SPAN_ID,
    traceState: S.TRACE_STATE,
    name: S.NAME,
    kind: S.KIND,
    startTimeUnixNano: S.START,
    endTimeUnixNano: S.END,
    attributes: S.ATTRIBUTES,
    events: S.EVENTS,
    links: S.LINKS,
    status: S.STATUS,
  }),
);
const EVENT_FIELDS = new FieldNames(withSnakeCase({ timeUnixNano: 1, name: 2, attributes: 3 }));
const LINK_FIELDS = new FieldNames(withSnakeCase({ traceId: 1, spanId: 2, attributes: 3 }));
const STATUS_FIELDS = new FieldNames({ code: 1, message: 2 });
const WATCHED = new WatchedKeys(SPAN_ATTRIBUTE_KEYS);
const WATCHED_BY_TEST = new WatchedKeys(SPAN_TEST_KEYS);
const WATCHED_FOR_MARKS = new WatchedKeys(SPAN_MARKER_KEYS);
const WATCHED_EVENTS = new WatchedKeys(SPAN_EVENT_NAMES);

/** A checked span's facts, with its ids and times (read when only checking too, for a mark). */
interface JsonSpanFacts extends SpanFacts, TraceIdAt {
  traceId: string;
  spanId: string;
  startMs: number | undefined;
  endMs: number | undefined;
}

const SPANS: RecordKind<NormalizedSpan, JsonSpanFacts, SpanMark> = {
  names: TRACES_REQUEST,
  walk: walkSpan,
  verdict: spanVerdict,
  mark: (f) => ({
    traceId: f.traceId,
    spanId: f.spanId,
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
    traceId: '',
    spanId: '',
    startMs: undefined,
    endMs: undefined,
    traceIdAt: -1,
    traceIdText: undefined,
    sameTrace: false,
  }),
  traceIdOf: hexTraceId,
};

/** Decodes an OTLP/JSON ExportTraceServiceRequest. Throws VigilError VIGIL_PAYLOAD_INVALID for a body that cannot be read at all. */
export function decodeTracesJson(body: string | Uint8Array, options: DecodeOptions = {}): DecodedTraces {
  const { groups, stats, skipped, sessions } = decodeSignal(body, SPANS, options);
  return {
    groups: groups.map(({ resource, scope, records, marks }) => (marks ? { resource, scope, spans: records, marks } : { resource, scope, spans: records })),
    stats,
    skipped,
    sessions,
  };
}

/** The span object at the cursor: built (no `checking`), or only checked, filling `checking.facts`. */
function walkSpan(r: JsonReader, stats: DecodeStats, checking: Checking<JsonSpanFacts> | undefined): NormalizedSpan | undefined {
  const build = checking === undefined;
  // Reading what an activity mark carries costs strings: only when marks are wanted.
  const marking = checking?.markers === true;
  const read = build || marking;
  let facts: JsonSpanFacts | undefined;
  if (checking) {
    facts = checking.facts;
    facts.statusCode = 0;
    facts.eventNames.length = 0;
    facts.attributes = {};
    facts.traceIdAt = -1;
    facts.traceIdText = undefined;
    facts.sameTrace = false;
    facts.startMs = facts.endMs = undefined;
    checking.mustBuild = false;
  }
  if (r.type() !== JsonType.Object) throw wrongType(r, '', 'an object');
  r.openObject();
  let traceId: string | undefined;
  let spanId: string | undefined;
  let parentSpanId: string | undefined;
  let traceState = '';
  let name = '';
  let kind = 0;
  let start = '0';
  let end = '0';
  const attrs: Attributes | undefined = build ? {} : undefined;
  const list = attributeList();
  const events: NormalizedSpanEvent[] = [];
  const links: NormalizedSpanLink[] = [];
  let status: NormalizedStatus = NO_STATUS;
  while (r.nextKey()) {
    switch (SPAN_FIELDS.idOf(r)) {
      // With marks wanted, ids, name and times are read when only checking too: a mark carries them.
      case S.TRACE_ID:
        traceId = idField(r, 'traceId', 16, read);
        // A later span of a trace whose session is already kept: its session keys need no reading.
        if (facts) noteTraceId(r, traceId, facts, checking!.markers ? -1 : checking!.notedTraceAt);
        break;
      case S.SPAN_ID:
        spanId = idField(r, 'spanId', 8, read);
        break;
      case S.PARENT_SPAN_ID:
        parentSpanId = idField(r, 'parentSpanId', 8, build);
        break;
      case S.TRACE_STATE:
        traceState = stringField(r, 'traceState', MAX_STRING_BYTES, stats, build) ?? traceState;
        break;
      case S.NAME:
        name = stringField(r, 'name', MAX_STRING_BYTES, stats, read) ?? name;
        break;
      case S.KIND:
        kind = enumField(r, 'kind', SPAN_KINDS);
        break;
      // A mark carries its times as milliseconds: read so, without their decimal strings.
      case S.START:
        if (marking) facts!.startMs = nanosMsField(r, 'startTimeUnixNano');
        else start = nanosField(r, 'startTimeUnixNano', build);
        break;
      case S.END:
        if (marking) facts!.endMs = nanosMsField(r, 'endTimeUnixNano');
        else end = nanosField(r, 'endTimeUnixNano', build);
        break;
      case S.ATTRIBUTES:
        if (
          !attributes(r, 'attributes', stats, list, attrs, checking?.markers ? WATCHED_FOR_MARKS : facts?.sameTrace ? WATCHED_BY_TEST : WATCHED, facts?.attributes)
        ) {
          checking!.mustBuild = true;
          return undefined;
        }
        break;
      case S.EVENTS:
        if (!items(r, 'events', stats, checking, events, walkEvent)) return undefined;
        break;
      case S.LINKS:
        if (!items(r, 'links', stats, checking, links, walkLink)) return undefined;
        break;
      case S.STATUS:
        status = walkStatus(r, stats, build);
        break;
      default:
        r.skipValue();
    }
  }
  traceId = requiredId(traceId, 'traceId', 16);
  spanId = requiredId(spanId, 'spanId', 8);
  if (!build) {
    facts!.statusCode = status.code;
    facts!.name = name;
    facts!.traceId = traceId;
    facts!.spanId = spanId;
    for (const e of events) if (e.name !== '') facts!.eventNames.push(e.name);
    return undefined;
  }
  return {
    traceId,
    spanId,
    parentSpanId: optionalId(parentSpanId),
    traceState,
    name,
    kind,
    startTimeUnixNano: start,
    startTimeMs: decimalNanosToMs(start),
    endTimeUnixNano: end,
    endTimeMs: decimalNanosToMs(end),
    attributes: attrs!,
    events,
    links,
    status,
  };
}

const NO_STATUS: NormalizedStatus = Object.freeze({ code: 0, message: '' });

/**
 * A list of messages (events, links) at the cursor, each read by `walk` into `out` (when checking,
 * what walk returns is kept too: events carry the names the test reads). False when a checked
 * item needs a build (`checking.mustBuild`).
 */
function items<T>(
  r: JsonReader,
  name: string,
  stats: DecodeStats,
  checking: Checking<JsonSpanFacts> | undefined,
  out: T[],
  walk: (r: JsonReader, stats: DecodeStats, checking: Checking<JsonSpanFacts> | undefined) => T | undefined,
): boolean {
  const t = r.type();
  if (t === JsonType.Null) {
    r.literal();
    return true;
  }
  if (t !== JsonType.Array) throw wrongType(r, name, 'an array');
  r.openArray();
  for (let i = 0; r.nextItem(); i++) {
    try {
      if (r.type() !== JsonType.Object) throw wrongType(r, '', 'an object');
      const item = walk(r, stats, checking);
      if (checking?.mustBuild) return false;
      if (item !== undefined) out.push(item);
    } catch (err) {
      throw under(err, itemPath(name, i));
    }
  }
  return true;
}

/** A span event; when only checked, its name (every name with marks wanted, else only one the relevance test reads). */
function walkEvent(r: JsonReader, stats: DecodeStats, checking: Checking<JsonSpanFacts> | undefined): NormalizedSpanEvent {
  const build = checking === undefined;
  r.openObject();
  let time = '0';
  let name = '';
  const attrs: Attributes = {};
  const list = attributeList();
  while (r.nextKey()) {
    switch (EVENT_FIELDS.idOf(r)) {
      case 1:
        time = nanosField(r, 'timeUnixNano', build);
        break;
      case 2:
        // With marks wanted, every name is read; else only whether it is one the test reads.
        if (build || checking.markers) name = stringField(r, 'name', MAX_STRING_BYTES, stats, true) ?? name;
        else if (r.type() === JsonType.String) {
          stringField(r, 'name', MAX_STRING_BYTES, stats, false);
          name = SPAN_EVENT_NAMES[WATCHED_EVENTS.names.idOf(r)] ?? '';
        } else name = stringField(r, 'name', MAX_STRING_BYTES, stats, false) ?? name;
        break;
      case 3:
        if (!attributes(r, 'attributes', stats, list, build ? attrs : undefined)) {
          checking!.mustBuild = true;
          return { name, timeUnixNano: time, timeMs: undefined, attributes: attrs };
        }
        break;
      default:
        r.skipValue();
    }
  }
  return { name, timeUnixNano: time, timeMs: build ? decimalNanosToMs(time) : undefined, attributes: attrs };
}

function walkLink(r: JsonReader, stats: DecodeStats, checking: Checking<JsonSpanFacts> | undefined): NormalizedSpanLink | undefined {
  const build = checking === undefined;
  r.openObject();
  let traceId: string | undefined;
  let spanId: string | undefined;
  const attrs: Attributes | undefined = build ? {} : undefined;
  const list = attributeList();
  while (r.nextKey()) {
    switch (LINK_FIELDS.idOf(r)) {
      case 1:
        traceId = idField(r, 'traceId', 16, build);
        break;
      case 2:
        spanId = idField(r, 'spanId', 8, build);
        break;
      case 3:
        if (!attributes(r, 'attributes', stats, list, attrs)) {
          checking!.mustBuild = true;
          return undefined;
        }
        break;
      default:
        r.skipValue();
    }
  }
  traceId = requiredId(traceId, 'traceId', 16);
  spanId = requiredId(spanId, 'spanId', 8);
  return build ? { traceId, spanId, attributes: attrs! } : undefined;
}

function walkStatus(r: JsonReader, stats: DecodeStats, build: boolean): NormalizedStatus {
  const t = r.type();
  if (t === JsonType.Null) {
    r.literal();
    return NO_STATUS;
  }
  if (t !== JsonType.Object) throw wrongType(r, 'status', 'an object');
  r.openObject();
  let code = 0;
  let message = '';
  while (r.nextKey()) {
    switch (STATUS_FIELDS.idOf(r)) {
      case 1:
        code = enumField(r, 'status.code', STATUS_CODES);
        break;
      case 2:
        message = stringField(r, 'status.message', MAX_STRING_BYTES, stats, build) ?? message;
        break;
      default:
        r.skipValue();
    }
  }
  return { code, message };
}
