/**
 * OTLP/JSON ExportLogsServiceRequest → normalized log records. One walk per record with a switch:
 * build it, or only check it — validate it, count its bounds and collect the facts the relevance
 * test reads (severity, event name, body, the watched attributes).
 */
import { LOGS_REQUEST, under } from '../decoding.ts';
import type { Checking } from '../decoding.ts';
import { LOG_ATTRIBUTE_KEYS, LOG_TEST_KEYS, logMayMatter } from '../mapping/relevance.ts';
import type { LogFacts, TraceIdAt } from '../mapping/relevance.ts';
import { MAX_BODY_BYTES, MAX_STRING_BYTES, decimalNanosToMs } from '../normalized.ts';
import type { AttributeValue, Attributes, DecodeOptions, DecodeStats, DecodedLogs, NormalizedLog } from '../normalized.ts';
import {
  WatchedKeys,
  wrongType,
  anyValue,
  attributeList,
  attributes,
  decodeSignal,
  enumField,
  hexTraceId,
  idField,
  noteTraceId,
  nanosField,
  optionalId,
  stringField,
  uint32Field,
} from './common.ts';
import type { RecordKind } from './common.ts';
import { FieldNames, JsonType, withSnakeCase } from './reader.ts';
import type { JsonReader } from './reader.ts';

const SEVERITY_NUMBERS: Record<string, number> = (() => {
  const out: Record<string, number> = { SEVERITY_NUMBER_UNSPECIFIED: 0 };
  ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'].forEach((level, i) => {
    out[`SEVERITY_NUMBER_${level}`] = i * 4 + 1;
    for (let k = 2; k <= 4; k++) out[`SEVERITY_NUMBER_${level}${k}`] = i * 4 + k;
  });
  return out;
})();

const L = { TIME: 1, OBSERVED_TIME: 2, SEVERITY_NUMBER: 3, SEVERITY_TEXT: 4, BODY: 5, ATTRIBUTES: 6, TRACE_ID: 7, SPAN_ID: 8, EVENT_NAME: 9, FLAGS: 10 } as const;
const LOG_FIELDS = new FieldNames(
  withSnakeCase({
    timeUnixNano: L.TIME,
    observedTimeUnixNano: L.OBSERVED_TIME,
    severityNumber: L.SEVERITY_NUMBER,
    severityText: L.SEVERITY_TEXT,
    body: L.BODY,
    attributes: L.ATTRIBUTES,
    traceId: L.TRACE_ID,
    spanId: L.SPAN_ID,
    eventName: L.EVENT_NAME,
    flags: L.FLAGS,
  }),
);
const WATCHED = new WatchedKeys(LOG_ATTRIBUTE_KEYS);
const WATCHED_BY_TEST = new WatchedKeys(LOG_TEST_KEYS);

/** A checked log record's facts, with where its trace id is. */
type JsonLogFacts = LogFacts & TraceIdAt;

const LOGS: RecordKind<NormalizedLog, JsonLogFacts> = {
  names: LOGS_REQUEST,
  walk: walkLog,
  verdict: (facts) => (logMayMatter(facts) ? 'build' : 'skip'),
  newFacts: () => ({ severityNumber: 0, severityText: '', eventName: '', body: undefined, attributes: {}, traceIdAt: -1, traceIdText: undefined, sameTrace: false }),
  traceIdOf: hexTraceId,
};

/** Decodes an OTLP/JSON ExportLogsServiceRequest. Throws VigilError VIGIL_PAYLOAD_INVALID for a body that cannot be read at all. */
export function decodeLogsJson(body: string | Uint8Array, options: DecodeOptions = {}): DecodedLogs {
  const { groups, stats, skipped, sessions } = decodeSignal(body, LOGS, options);
  return { groups: groups.map(({ resource, scope, records }) => ({ resource, scope, logs: records })), stats, skipped, sessions };
}

/**
 * The log record object at the cursor: built (no `checking`), or only checked, filling
 * `checking.facts`. The body is built either way: the test reads its text.
 */
function walkLog(r: JsonReader, stats: DecodeStats, checking: Checking<JsonLogFacts> | undefined): NormalizedLog | undefined {
  const build = checking === undefined;
  if (checking) {
    checking.mustBuild = false;
    checking.facts.traceIdAt = -1;
    checking.facts.traceIdText = undefined;
    checking.facts.sameTrace = false;
  }
  if (r.type() !== JsonType.Object) throw wrongType(r, '', 'an object');
  r.openObject();
  let time = '0';
  let observed = '0';
  let severityNumber = 0;
  let severityText = '';
  let body: AttributeValue | undefined;
  const attrs: Attributes = {};
  const list = attributeList();
  let traceId: string | undefined;
  let spanId: string | undefined;
  let eventName = '';
  let flags = 0;
  while (r.nextKey()) {
    switch (LOG_FIELDS.idOf(r)) {
      case L.TIME:
        time = nanosField(r, 'timeUnixNano', build);
        break;
      case L.OBSERVED_TIME:
        observed = nanosField(r, 'observedTimeUnixNano', build);
        break;
      case L.SEVERITY_NUMBER:
        severityNumber = enumField(r, 'severityNumber', SEVERITY_NUMBERS);
        break;
      case L.SEVERITY_TEXT:
        severityText = stringField(r, 'severityText', MAX_STRING_BYTES, stats, true) ?? severityText;
        break;
      case L.BODY:
        if (r.type() === JsonType.Null) {
          r.literal();
          break;
        }
        try {
          body = anyValue(r, 1, MAX_BODY_BYTES, stats, true);
        } catch (err) {
          throw under(err, 'body');
        }
        break;
      case L.ATTRIBUTES:
        if (!attributes(r, 'attributes', stats, list, build ? attrs : undefined, checking?.facts.sameTrace ? WATCHED_BY_TEST : WATCHED, attrs)) {
          checking!.mustBuild = true;
          return undefined;
        }
        break;
      case L.TRACE_ID:
        traceId = idField(r, 'traceId', 16, build);
        if (checking) noteTraceId(r, traceId, checking.facts, checking.notedTraceAt);
        break;
      case L.SPAN_ID:
        spanId = idField(r, 'spanId', 8, build);
        break;
      case L.EVENT_NAME:
        eventName = stringField(r, 'eventName', MAX_STRING_BYTES, stats, true) ?? eventName;
        break;
      case L.FLAGS:
        flags = uint32Field(r, 'flags');
        break;
      default:
        r.skipValue();
    }
  }
  if (!build) {
    const facts = checking!.facts;
    facts.severityNumber = severityNumber;
    facts.severityText = severityText;
    facts.eventName = eventName;
    facts.body = body === null ? undefined : body;
    facts.attributes = attrs;
    return undefined;
  }
  return {
    timeUnixNano: time,
    timeMs: decimalNanosToMs(time),
    observedTimeUnixNano: observed,
    observedTimeMs: decimalNanosToMs(observed),
    severityNumber,
    severityText,
    body: body === null ? undefined : body,
    attributes: attrs,
    traceId: optionalId(traceId),
    spanId: optionalId(spanId),
    eventName,
    flags,
  };
}
