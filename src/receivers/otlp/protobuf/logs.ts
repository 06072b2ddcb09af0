/**
 * OTLP/protobuf ExportLogsServiceRequest → normalized log records (opentelemetry-proto `logs/v1`;
 * field numbers below). One walk per record with a switch: build it, or only check it — validate
 * it, count its bounds and collect the facts the relevance test reads (severity, event name,
 * scalar body, the watched attributes).
 */
import { LOGS_REQUEST, under } from '../decoding.ts';
import type { Checking } from '../decoding.ts';
import { LOG_ATTRIBUTE_KEYS, logMayMatter } from '../mapping/relevance.ts';
import type { LogFacts } from '../mapping/relevance.ts';
import { MAX_BODY_BYTES, MAX_STRING_BYTES, decimalNanosToMs } from '../normalized.ts';
import type { AttributeValue, Attributes, DecodeOptions, DecodeStats, DecodedLogs, NormalizedLog } from '../normalized.ts';
import { NameIndex, anyValue, decodeSignal, enumValue, fixed32, id, keyValue, message, nanos, readString, withMerged } from './common.ts';
import type { Ranges, RecordKind } from './common.ts';
import type { WireReader } from './wire.ts';

/** LogRecord field numbers (logs.proto; 4 is reserved). */
const LOG = {
  TIME: 1,
  SEVERITY_NUMBER: 2,
  SEVERITY_TEXT: 3,
  BODY: 5,
  ATTRIBUTES: 6,
  FLAGS: 8,
  TRACE_ID: 9,
  SPAN_ID: 10,
  OBSERVED_TIME: 11,
  EVENT_NAME: 12,
} as const;

const WATCHED = new NameIndex(LOG_ATTRIBUTE_KEYS);

const LOGS: RecordKind<NormalizedLog, LogFacts> = {
  names: LOGS_REQUEST,
  walk: walkLog,
  verdict: (facts) => (logMayMatter(facts) ? 'build' : 'skip'),
  newFacts: () => ({ severityNumber: 0, severityText: '', eventName: '', body: undefined, attributes: {} }),
};

/** Decodes an OTLP/protobuf ExportLogsServiceRequest. Throws VigilError VIGIL_PAYLOAD_INVALID for bytes that are not such a message. */
export function decodeLogsProtobuf(body: Uint8Array, options: DecodeOptions = {}): DecodedLogs {
  const { groups, stats, skipped } = decodeSignal(body, LOGS, options);
  return { groups: groups.map(({ resource, scope, records }) => ({ resource, scope, logs: records })), stats, skipped };
}

/** One log record: built (no `checking`), or only checked, filling `checking.facts`. */
function walkLog(r: WireReader, end: number, stats: DecodeStats, checking: Checking<LogFacts> | undefined): NormalizedLog | undefined {
  const build = checking === undefined;
  if (checking) checking.mustBuild = false;
  let time = '0';
  let observed = '0';
  let severityNumber = 0;
  let severityText = '';
  let bodyRanges: Ranges | undefined;
  const attributes: Attributes | undefined = build ? {} : undefined;
  const watchedAttributes: Attributes | undefined = build ? undefined : {};
  const seen = { kept: 0 };
  let attributeIndex = 0;
  let traceId: string | undefined;
  let spanId: string | undefined;
  let eventName = '';
  let flags = 0;
  while (r.next(end)) {
    switch (r.field) {
      case LOG.TIME:
        time = nanos(r, end, 'timeUnixNano', build);
        break;
      case LOG.OBSERVED_TIME:
        observed = nanos(r, end, 'observedTimeUnixNano', build);
        break;
      case LOG.SEVERITY_NUMBER:
        severityNumber = enumValue(r, end, 'severityNumber');
        break;
      case LOG.SEVERITY_TEXT:
        severityText = readString(r, end, 'severityText', MAX_STRING_BYTES, stats);
        break;
      case LOG.BODY: {
        const e = message(r, end, 'body');
        (bodyRanges ??= []).push(r.pos, e);
        r.pos = e;
        break;
      }
      case LOG.ATTRIBUTES:
        if (!keyValue(r, end, stats, 'attributes', attributeIndex++, attributes, seen, WATCHED, watchedAttributes)) {
          checking!.mustBuild = true;
          return undefined;
        }
        break;
      case LOG.FLAGS:
        flags = fixed32(r, end, 'flags');
        break;
      case LOG.TRACE_ID:
        traceId = id(r, end, 'traceId', 16, build);
        break;
      case LOG.SPAN_ID:
        spanId = id(r, end, 'spanId', 8, build);
        break;
      case LOG.EVENT_NAME:
        eventName = readString(r, end, 'eventName', MAX_STRING_BYTES, stats);
        break;
      default:
        r.skip(end);
    }
  }
  let body: AttributeValue | undefined;
  if (bodyRanges) {
    try {
      body = withMerged(r, bodyRanges, build, walkBody, undefined, stats);
    } catch (err) {
      throw under(err, 'body');
    }
  }
  if (!build) {
    const facts = checking!.facts;
    facts.severityNumber = severityNumber;
    facts.severityText = severityText;
    facts.eventName = eventName;
    facts.body = body === null ? undefined : body;
    facts.attributes = watchedAttributes!;
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
    attributes: attributes!,
    traceId,
    spanId,
    eventName,
    flags,
  };
}

/** The body, an AnyValue, built even when the record is only checked: the relevance test reads its text. */
function walkBody(r: WireReader, end: number, _build: boolean, _arg: undefined, stats: DecodeStats): AttributeValue {
  return anyValue(r, end, 1, MAX_BODY_BYTES, stats, true);
}
