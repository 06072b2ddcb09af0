/**
 * OTLP/protobuf decoding of ExportTraceServiceRequest and ExportLogsServiceRequest into the same
 * normalized records as json.ts, written from the OTLP .proto definitions (opentelemetry-proto
 * `collector/{trace,logs}/v1`, `trace/v1`, `logs/v1`, `common/v1`, `resource/v1`; field numbers in
 * the tables below), plus the few messages vigil answers with (export responses, google.rpc.Status).
 *
 * Decoding follows the protobuf rules: fields in any order, unknown fields (and groups) skipped,
 * the last value of a repeated scalar wins, repeated occurrences of a message field merge, the last
 * member of a oneof wins. Validation and bounds are those of json.ts:
 * - bytes that are not well-formed protobuf (a truncated message, a length past its end, a varint
 *   over 10 bytes, wire type 6 or 7, an unbalanced group) fail the whole request with
 *   VIGIL_PAYLOAD_INVALID (HTTP 400, gRPC INVALID_ARGUMENT), as does a wrong wire type for a field
 *   above the records (`resource_spans`, `scope_spans`, `spans`, ...);
 * - a well-formed record with a field of the wrong wire type, an id of the wrong length, a string
 *   that is not UTF-8 or a negative enum is rejected alone (OTLP partial success), and so are the
 *   records under a resource or scope with such a field;
 * - attribute counts, string lengths and nesting depth are bounded and counted as in json.ts.
 */
import { VigilError } from '../../errors.ts';
import { addMessage, emptyStats, isRemarkableSpan, MAX_ATTRIBUTES, MAX_BODY_BYTES, MAX_STRING_BYTES, MAX_VALUE_DEPTH, nanosToMs, truncateUtf8 } from './normalized.ts';
import type {
  AttributeValue,
  Attributes,
  DecodeStats,
  DecodedLogs,
  DecodedTraces,
  NormalizedLog,
  NormalizedLogs,
  NormalizedScope,
  NormalizedSpan,
  NormalizedSpanEvent,
  NormalizedSpanLink,
  NormalizedStatus,
  NormalizedTraces,
  TraceDecodeOptions,
} from './normalized.ts';

// Wire types (protobuf encoding spec).
const VARINT = 0;
const I64 = 1;
const LEN = 2;
const SGROUP = 3;
const EGROUP = 4;
const I32 = 5;
const WIRE_NAMES = ['VARINT', 'I64', 'LEN', 'SGROUP', 'EGROUP', 'I32'];

/** Field numbers of the OTLP messages, from the .proto files. */
const F = {
  // ExportTraceServiceRequest / ExportLogsServiceRequest: resource_spans | resource_logs = 1.
  REQUEST_RESOURCES: 1,
  // ResourceSpans / ResourceLogs: resource = 1, scope_spans | scope_logs = 2, schema_url = 3.
  RESOURCE: 1,
  SCOPES: 2,
  // ScopeSpans / ScopeLogs: scope = 1, spans | log_records = 2, schema_url = 3.
  SCOPE: 1,
  RECORDS: 2,
  // Resource: attributes = 1, dropped_attributes_count = 2, entity_refs = 3.
  RESOURCE_ATTRIBUTES: 1,
  // InstrumentationScope: name = 1, version = 2, attributes = 3, dropped_attributes_count = 4.
  SCOPE_NAME: 1,
  SCOPE_VERSION: 2,
  SCOPE_ATTRIBUTES: 3,
  // KeyValue: key = 1, value = 2.
  KV_KEY: 1,
  KV_VALUE: 2,
  // AnyValue (oneof): string 1, bool 2, int 3, double 4, array 5, kvlist 6, bytes 7.
  ANY_STRING: 1,
  ANY_BOOL: 2,
  ANY_INT: 3,
  ANY_DOUBLE: 4,
  ANY_ARRAY: 5,
  ANY_KVLIST: 6,
  ANY_BYTES: 7,
  // ArrayValue: values = 1 (AnyValue); KeyValueList: values = 1 (KeyValue).
  LIST_VALUES: 1,
} as const;

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

/** Bytes that are not well-formed protobuf: the whole request is refused. */
class WireError extends Error {}

/** A problem with one field of one record (or of a resource/scope); rejects those records only. */
class FieldError extends Error {
  constructor(
    public path: string,
    readonly problem: string,
  ) {
    super(problem);
  }
}

/** Prefixes the path of a FieldError thrown below `segment`; other errors pass unchanged. */
function under(err: unknown, segment: string): unknown {
  if (err instanceof FieldError) err.path = err.path === '' ? segment : err.path.startsWith('[') ? `${segment}${err.path}` : `${segment}.${err.path}`;
  return err;
}

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A cursor over a protobuf buffer. Every read is bounded by an explicit `end` (the end of the
 * enclosing message), so a length that points past its message is caught where it is read.
 */
class Wire {
  pos = 0;
  /** Wire type and field number of the last tag read by next(). */
  wireType = 0;
  field = 0;

  constructor(public buf: Buffer) {}

  /** Reads the next tag before `end`; false at the end of the message. */
  next(end: number): boolean {
    if (this.pos >= end) {
      if (this.pos > end) throw new WireError('a field runs past the end of its message');
      return false;
    }
    const tag = this.uint32(end);
    this.field = tag >>> 3;
    this.wireType = tag & 7;
    if (this.field === 0) throw new WireError('field number 0 is not valid');
    if (this.wireType > I32) throw new WireError(`wire type ${this.wireType} is not valid`);
    return true;
  }

  /** A varint that must fit in 32 bits unsigned (tags, lengths). */
  uint32(end: number): number {
    const buf = this.buf;
    let pos = this.pos;
    if (pos >= end) throw new WireError('truncated varint');
    let b = buf[pos++]!;
    if (b < 0x80) {
      this.pos = pos;
      return b;
    }
    let result = b & 0x7f;
    for (let shift = 7; ; shift += 7) {
      if (shift >= 70) throw new WireError('varint longer than 10 bytes');
      if (pos >= end) throw new WireError('truncated varint');
      b = buf[pos++]!;
      if (shift < 28) result |= (b & 0x7f) << shift;
      else if (shift === 28) {
        if ((b & 0x70) !== 0) throw new WireError('varint does not fit in 32 bits');
        result += (b & 0x0f) * 0x10000000;
      } else if ((b & 0x7f) !== 0) throw new WireError('varint does not fit in 32 bits');
      if (b < 0x80) break;
    }
    this.pos = pos;
    return result;
  }

  /** A full 64-bit varint as [low 32 bits, high 32 bits], unsigned. */
  varint64(end: number): [number, number] {
    const buf = this.buf;
    let pos = this.pos;
    let lo = 0;
    let hi = 0;
    for (let i = 0; ; i++) {
      if (i === 10) throw new WireError('varint longer than 10 bytes');
      if (pos >= end) throw new WireError('truncated varint');
      const b = buf[pos++]!;
      const bits = b & 0x7f;
      if (i < 4) lo |= bits << (7 * i);
      else if (i === 4) {
        lo |= bits << 28;
        hi |= bits >>> 4;
      } else hi |= bits << (7 * i - 32);
      if (b < 0x80) break;
    }
    this.pos = pos;
    return [lo >>> 0, hi >>> 0];
  }

  /** The bounds of a length-delimited field's bytes; the cursor moves past them. */
  lengthDelimited(end: number): number {
    const len = this.uint32(end);
    const start = this.pos;
    if (len > end - start) throw new WireError(`truncated message: a field of ${len} bytes runs past the end of its message`);
    this.pos = start + len;
    return start;
  }

  fixed64(end: number): bigint {
    if (end - this.pos < 8) throw new WireError('truncated fixed64');
    const v = this.buf.readBigUInt64LE(this.pos);
    this.pos += 8;
    return v;
  }

  double(end: number): number {
    if (end - this.pos < 8) throw new WireError('truncated double');
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  fixed32(end: number): number {
    if (end - this.pos < 4) throw new WireError('truncated fixed32');
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }

  /** Skips the value of the field whose tag was just read (any wire type, groups included). */
  skip(end: number): void {
    switch (this.wireType) {
      case VARINT:
        this.varint64(end);
        return;
      case I64:
        if (end - this.pos < 8) throw new WireError('truncated fixed64');
        this.pos += 8;
        return;
      case LEN:
        this.lengthDelimited(end);
        return;
      case I32:
        if (end - this.pos < 4) throw new WireError('truncated fixed32');
        this.pos += 4;
        return;
      case SGROUP: {
        const field = this.field;
        for (;;) {
          if (!this.next(end)) throw new WireError(`group ${field} is not closed`);
          if ((this.wireType as number) === EGROUP) {
            if (this.field !== field) throw new WireError(`group ${field} closed by an end-group tag of field ${this.field}`);
            return;
          }
          this.skip(end);
        }
      }
      default:
        throw new WireError(`unexpected end-group tag of field ${this.field}`);
    }
  }
}

/** The wire types each value kind is encoded with. */
function expectWire(w: Wire, expected: number, name: string, end: number): void {
  if (w.wireType === expected) return;
  const got = w.wireType;
  w.skip(end);
  throw new FieldError(name, `wire type ${WIRE_NAMES[got] ?? got}, expected ${WIRE_NAMES[expected]}`);
}

// ---------------------------------------------------------------------------------------------
// Requests

/** Decodes an OTLP/protobuf ExportTraceServiceRequest. Throws VigilError VIGIL_PAYLOAD_INVALID for bytes that are not such a message. */
export function decodeTracesProtobuf(body: Uint8Array, options: TraceDecodeOptions = {}): DecodedTraces {
  const stats = emptyStats();
  const groups: NormalizedTraces[] = [];
  let skipped = 0;
  decodeRequest(body, 'resourceSpans', 'scopeSpans', 'spans', stats, (w, resource, scope, records, path) => {
    const spans: NormalizedSpan[] = [];
    for (let i = 0; i < records.length; i += 2) {
      const recordPath = () => `${path}[${i / 2}]`;
      if (options.skipUnremarkable) {
        const before = countsOf(stats);
        const remarkable = decodeRecord(w, records[i]!, records[i + 1]!, stats, recordPath, checkSpan);
        if (remarkable === undefined) continue; // rejected
        if (!remarkable) {
          skipped++;
          continue;
        }
        // Decoded again below: its bounds are counted there, not twice.
        restoreCounts(stats, before);
      }
      const span = decodeRecord(w, records[i]!, records[i + 1]!, stats, recordPath, decodeSpan);
      if (span) spans.push(span);
    }
    groups.push({ resource, scope, spans });
  });
  return { groups, stats, skipped };
}

/** Decodes an OTLP/protobuf ExportLogsServiceRequest. Throws VigilError VIGIL_PAYLOAD_INVALID for bytes that are not such a message. */
export function decodeLogsProtobuf(body: Uint8Array): DecodedLogs {
  const stats = emptyStats();
  const groups: NormalizedLogs[] = [];
  decodeRequest(body, 'resourceLogs', 'scopeLogs', 'logRecords', stats, (w, resource, scope, records, path) => {
    const logs: NormalizedLog[] = [];
    for (let i = 0; i < records.length; i += 2) {
      const log = decodeRecord(w, records[i]!, records[i + 1]!, stats, () => `${path}[${i / 2}]`, decodeLog);
      if (log) logs.push(log);
    }
    groups.push({ resource, scope, logs });
  });
  return { groups, stats };
}

/** A message field seen once or more: its byte ranges, merged on decode (protobuf merge semantics). */
type Ranges = number[];

/**
 * Walks request → resource → scope and hands each scope's record ranges to `visit`. Errors in the
 * framing fail the request; a resource or scope that cannot be decoded rejects the records under it.
 */
function decodeRequest(
  body: Uint8Array,
  resourceKey: string,
  scopeKey: string,
  itemsKey: string,
  stats: DecodeStats,
  visit: (w: Wire, resource: Attributes, scope: NormalizedScope, records: number[], itemsPath: string) => void,
): void {
  const buf = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const w = new Wire(buf);
  try {
    const end = buf.length;
    let r = 0;
    while (w.next(end)) {
      if (w.field !== F.REQUEST_RESOURCES) {
        w.skip(end);
        continue;
      }
      const rPath = `${resourceKey}[${r++}]`;
      if (w.wireType !== LEN) throw new WireError(`${rPath}: wire type ${WIRE_NAMES[w.wireType]}, expected LEN (a message)`);
      const rStart = w.lengthDelimited(end);
      const rEnd = w.pos;
      decodeResourceGroup(w, rStart, rEnd, rPath, scopeKey, itemsKey, stats, visit);
      w.pos = rEnd;
    }
  } catch (err) {
    if (err instanceof WireError) throw invalid(`request body is not a valid protobuf ${resourceKey === 'resourceSpans' ? 'ExportTraceServiceRequest' : 'ExportLogsServiceRequest'}: ${err.message}`);
    throw err;
  }
}

function decodeResourceGroup(
  w: Wire,
  start: number,
  end: number,
  rPath: string,
  scopeKey: string,
  itemsKey: string,
  stats: DecodeStats,
  visit: (w: Wire, resource: Attributes, scope: NormalizedScope, records: number[], itemsPath: string) => void,
): void {
  w.pos = start;
  const resourceRanges: Ranges = [];
  let resourceWireError: string | undefined;
  const scopes: Array<{ scopeRanges: Ranges; scopeWireError: string | undefined; records: number[]; path: string }> = [];
  while (w.next(end)) {
    if (w.field === F.RESOURCE) {
      if (w.wireType !== LEN) {
        resourceWireError = `wire type ${WIRE_NAMES[w.wireType]}, expected LEN (a message)`;
        w.skip(end);
        continue;
      }
      const s = w.lengthDelimited(end);
      resourceRanges.push(s, w.pos);
    } else if (w.field === F.SCOPES) {
      const sPath = `${rPath}.${scopeKey}[${scopes.length}]`;
      if (w.wireType !== LEN) throw new WireError(`${sPath}: wire type ${WIRE_NAMES[w.wireType]}, expected LEN (a message)`);
      const sStart = w.lengthDelimited(end);
      const sEnd = w.pos;
      scopes.push({ ...scanScope(w, sStart, sEnd, sPath, itemsKey), path: sPath });
      w.pos = sEnd;
    } else {
      w.skip(end);
    }
  }

  let resource: Attributes;
  try {
    if (resourceWireError) throw new FieldError('', resourceWireError);
    resource = withMerged(w, resourceRanges, (e) => decodeResource(w, e, stats), {});
  } catch (err) {
    if (!(err instanceof FieldError)) throw err;
    const n = scopes.reduce((sum, s) => sum + s.records.length / 2, 0);
    rejectAll(stats, n, `${rPath}.resource${err.path ? `.${err.path}` : ''}: ${err.problem} (all ${n} record(s) of ${rPath} rejected)`);
    return;
  }
  for (const s of scopes) {
    let scope: NormalizedScope;
    try {
      if (s.scopeWireError) throw new FieldError('', s.scopeWireError);
      scope = withMerged(w, s.scopeRanges, (e) => decodeScope(w, e, stats), { name: '', version: '', attributes: {} });
    } catch (err) {
      if (!(err instanceof FieldError)) throw err;
      const n = s.records.length / 2;
      rejectAll(stats, n, `${s.path}.scope${err.path ? `.${err.path}` : ''}: ${err.problem} (all ${n} record(s) of ${s.path} rejected)`);
      continue;
    }
    visit(w, resource, scope, s.records, `${s.path}.${itemsKey}`);
  }
}

/** The scope ranges and the record ranges (start, end pairs) of one ScopeSpans/ScopeLogs. */
function scanScope(w: Wire, start: number, end: number, sPath: string, itemsKey: string): { scopeRanges: Ranges; scopeWireError: string | undefined; records: number[] } {
  w.pos = start;
  const scopeRanges: Ranges = [];
  let scopeWireError: string | undefined;
  const records: number[] = [];
  while (w.next(end)) {
    if (w.field === F.SCOPE) {
      if (w.wireType !== LEN) {
        scopeWireError = `wire type ${WIRE_NAMES[w.wireType]}, expected LEN (a message)`;
        w.skip(end);
        continue;
      }
      const s = w.lengthDelimited(end);
      scopeRanges.push(s, w.pos);
    } else if (w.field === F.RECORDS) {
      if (w.wireType !== LEN) throw new WireError(`${sPath}.${itemsKey}[${records.length / 2}]: wire type ${WIRE_NAMES[w.wireType]}, expected LEN (a message)`);
      const s = w.lengthDelimited(end);
      records.push(s, w.pos);
    } else {
      w.skip(end);
    }
  }
  return { scopeRanges, scopeWireError, records };
}

/**
 * Decodes a message field from its ranges: none → `absent`; one → in place; several → their
 * concatenation, which protobuf defines as the merge of the occurrences. The cursor is left
 * anywhere; callers reposition it.
 */
function withMerged<T>(w: Wire, ranges: Ranges, decode: (end: number) => T, absent: T): T {
  if (ranges.length === 0) return absent;
  if (ranges.length === 2) {
    w.pos = ranges[0]!;
    return decode(ranges[1]!);
  }
  const parts: Buffer[] = [];
  for (let i = 0; i < ranges.length; i += 2) parts.push(w.buf.subarray(ranges[i], ranges[i + 1]));
  const merged = Buffer.concat(parts);
  const outer = w.buf;
  w.buf = merged;
  w.pos = 0;
  try {
    return decode(merged.length);
  } finally {
    w.buf = outer;
  }
}

function rejectAll(stats: DecodeStats, n: number, message: string): void {
  stats.rejected += n;
  addMessage(stats, message);
}

function decodeRecord<T>(
  w: Wire,
  start: number,
  end: number,
  stats: DecodeStats,
  path: () => string,
  decode: (w: Wire, end: number, stats: DecodeStats) => T,
): T | undefined {
  // Bounds counted while decoding a record that is then rejected must not be reported.
  const before = countsOf(stats);
  w.pos = start;
  try {
    return decode(w, end, stats);
  } catch (err) {
    if (!(err instanceof FieldError)) throw err;
    restoreCounts(stats, before);
    stats.rejected++;
    addMessage(stats, `${path()}${err.path ? `.${err.path}` : ''}: ${err.problem} (record rejected)`);
    return undefined;
  } finally {
    w.pos = end;
  }
}

type BoundCounts = readonly [number, number, number];

function countsOf(stats: DecodeStats): BoundCounts {
  return [stats.droppedAttributes, stats.truncatedValues, stats.truncatedDepth];
}

function restoreCounts(stats: DecodeStats, counts: BoundCounts): void {
  [stats.droppedAttributes, stats.truncatedValues, stats.truncatedDepth] = counts;
}

function decodeResource(w: Wire, end: number, stats: DecodeStats): Attributes {
  const attributes: Attributes = {};
  const seen = { kept: 0 };
  let i = 0;
  while (w.next(end)) {
    if (w.field === F.RESOURCE_ATTRIBUTES) {
      attribute(w, end, attributes, seen, stats, 'attributes', i++);
    } else w.skip(end);
  }
  return attributes;
}

function decodeScope(w: Wire, end: number, stats: DecodeStats): NormalizedScope {
  const scope: NormalizedScope = { name: '', version: '', attributes: {} };
  const seen = { kept: 0 };
  let i = 0;
  while (w.next(end)) {
    switch (w.field) {
      case F.SCOPE_NAME:
        scope.name = string(w, end, 'name', MAX_STRING_BYTES, stats);
        break;
      case F.SCOPE_VERSION:
        scope.version = string(w, end, 'version', MAX_STRING_BYTES, stats);
        break;
      case F.SCOPE_ATTRIBUTES:
        attribute(w, end, scope.attributes, seen, stats, 'attributes', i++);
        break;
      default:
        w.skip(end);
    }
  }
  return scope;
}

// ---------------------------------------------------------------------------------------------
// Records

function decodeSpan(w: Wire, end: number, stats: DecodeStats): NormalizedSpan {
  let traceId: string | undefined;
  let spanId: string | undefined;
  let parentSpanId: string | undefined;
  let traceState = '';
  let name = '';
  let kind = 0;
  let start = 0n;
  let endTime = 0n;
  const attributes: Attributes = {};
  const seen = { kept: 0 };
  let attributeIndex = 0;
  const events: NormalizedSpanEvent[] = [];
  const links: NormalizedSpanLink[] = [];
  const statusRanges: Ranges = [];
  while (w.next(end)) {
    switch (w.field) {
      case SPAN.TRACE_ID:
        traceId = id(w, end, 'traceId', 16);
        break;
      case SPAN.SPAN_ID:
        spanId = id(w, end, 'spanId', 8);
        break;
      case SPAN.TRACE_STATE:
        traceState = string(w, end, 'traceState', MAX_STRING_BYTES, stats);
        break;
      case SPAN.PARENT_SPAN_ID:
        parentSpanId = id(w, end, 'parentSpanId', 8);
        break;
      case SPAN.NAME:
        name = string(w, end, 'name', MAX_STRING_BYTES, stats);
        break;
      case SPAN.KIND:
        kind = enumValue(w, end, 'kind');
        break;
      case SPAN.START:
        start = fixed64(w, end, 'startTimeUnixNano');
        break;
      case SPAN.END:
        endTime = fixed64(w, end, 'endTimeUnixNano');
        break;
      case SPAN.ATTRIBUTES:
        attribute(w, end, attributes, seen, stats, 'attributes', attributeIndex++);
        break;
      case SPAN.EVENTS: {
        const i = events.length;
        const e = message(w, end, `events[${i}]`);
        try {
          events.push(decodeSpanEvent(w, e, stats));
        } catch (err) {
          throw under(err, `events[${i}]`);
        }
        w.pos = e;
        break;
      }
      case SPAN.LINKS: {
        const i = links.length;
        const e = message(w, end, `links[${i}]`);
        try {
          links.push(decodeSpanLink(w, e, stats));
        } catch (err) {
          throw under(err, `links[${i}]`);
        }
        w.pos = e;
        break;
      }
      case SPAN.STATUS: {
        const e = message(w, end, 'status');
        statusRanges.push(w.pos, e);
        w.pos = e;
        break;
      }
      default:
        w.skip(end);
    }
  }
  let status: NormalizedStatus;
  try {
    status = withMerged(w, statusRanges, (e) => decodeStatus(w, e, stats), { code: 0, message: '' });
  } catch (err) {
    throw under(err, 'status');
  }
  return {
    traceId: required(traceId, 'traceId', 16),
    spanId: required(spanId, 'spanId', 8),
    parentSpanId,
    traceState,
    name,
    kind,
    startTimeUnixNano: start.toString(),
    startTimeMs: nanosToMs(start),
    endTimeUnixNano: endTime.toString(),
    endTimeMs: nanosToMs(endTime),
    attributes,
    events,
    links,
    status,
  };
}

/**
 * Validates a span as decodeSpan does (the same walk over its fields, so the same first problem is
 * reported) without building it; true when it can be relevant (see isRemarkableSpan), or when it
 * has more attributes than the cap, whose distinct keys only decodeSpan counts.
 */
function checkSpan(w: Wire, end: number, stats: DecodeStats): boolean {
  let traceId = false;
  let spanId = false;
  let hasErrorType = false;
  let hasException = false;
  let attributeIndex = 0;
  let eventIndex = 0;
  let linkIndex = 0;
  const statusRanges: Ranges = [];
  while (w.next(end)) {
    switch (w.field) {
      case SPAN.TRACE_ID:
        traceId = id(w, end, 'traceId', 16, false) !== undefined;
        break;
      case SPAN.SPAN_ID:
        spanId = id(w, end, 'spanId', 8, false) !== undefined;
        break;
      case SPAN.PARENT_SPAN_ID:
        id(w, end, 'parentSpanId', 8, false);
        break;
      case SPAN.TRACE_STATE:
        string(w, end, 'traceState', MAX_STRING_BYTES, stats);
        break;
      case SPAN.NAME:
        string(w, end, 'name', MAX_STRING_BYTES, stats);
        break;
      case SPAN.KIND:
        enumValue(w, end, 'kind');
        break;
      case SPAN.START:
        fixed64(w, end, 'startTimeUnixNano');
        break;
      case SPAN.END:
        fixed64(w, end, 'endTimeUnixNano');
        break;
      case SPAN.ATTRIBUTES:
        if (attributeIndex >= MAX_ATTRIBUTES) return true;
        if (attribute(w, end, undefined, { kept: 0 }, stats, 'attributes', attributeIndex++) === 'error.type') hasErrorType = true;
        break;
      case SPAN.EVENTS: {
        const i = eventIndex++;
        const e = message(w, end, `events[${i}]`);
        try {
          if (decodeSpanEvent(w, e, stats).name === 'exception') hasException = true;
        } catch (err) {
          throw under(err, `events[${i}]`);
        }
        w.pos = e;
        break;
      }
      case SPAN.LINKS: {
        const i = linkIndex++;
        const e = message(w, end, `links[${i}]`);
        try {
          decodeSpanLink(w, e, stats);
        } catch (err) {
          throw under(err, `links[${i}]`);
        }
        w.pos = e;
        break;
      }
      case SPAN.STATUS: {
        const e = message(w, end, 'status');
        statusRanges.push(w.pos, e);
        w.pos = e;
        break;
      }
      default:
        w.skip(end);
    }
  }
  let status: NormalizedStatus;
  try {
    status = withMerged(w, statusRanges, (e) => decodeStatus(w, e, stats), { code: 0, message: '' });
  } catch (err) {
    throw under(err, 'status');
  }
  if (!traceId) required(undefined, 'traceId', 16);
  if (!spanId) required(undefined, 'spanId', 8);
  return isRemarkableSpan(status.code, hasException, hasErrorType);
}

function decodeSpanEvent(w: Wire, end: number, stats: DecodeStats): NormalizedSpanEvent {
  let time = 0n;
  let name = '';
  const attributes: Attributes = {};
  const seen = { kept: 0 };
  let i = 0;
  while (w.next(end)) {
    switch (w.field) {
      case EVENT.TIME:
        time = fixed64(w, end, 'timeUnixNano');
        break;
      case EVENT.NAME:
        name = string(w, end, 'name', MAX_STRING_BYTES, stats);
        break;
      case EVENT.ATTRIBUTES:
        attribute(w, end, attributes, seen, stats, 'attributes', i++);
        break;
      default:
        w.skip(end);
    }
  }
  return { name, timeUnixNano: time.toString(), timeMs: nanosToMs(time), attributes };
}

function decodeSpanLink(w: Wire, end: number, stats: DecodeStats): NormalizedSpanLink {
  let traceId: string | undefined;
  let spanId: string | undefined;
  const attributes: Attributes = {};
  const seen = { kept: 0 };
  let i = 0;
  while (w.next(end)) {
    switch (w.field) {
      case LINK.TRACE_ID:
        traceId = id(w, end, 'traceId', 16);
        break;
      case LINK.SPAN_ID:
        spanId = id(w, end, 'spanId', 8);
        break;
      case LINK.ATTRIBUTES:
        attribute(w, end, attributes, seen, stats, 'attributes', i++);
        break;
      default:
        w.skip(end);
    }
  }
  return { traceId: required(traceId, 'traceId', 16), spanId: required(spanId, 'spanId', 8), attributes };
}

function decodeStatus(w: Wire, end: number, stats: DecodeStats): NormalizedStatus {
  const status: NormalizedStatus = { code: 0, message: '' };
  while (w.next(end)) {
    if (w.field === STATUS.MESSAGE) status.message = string(w, end, 'message', MAX_STRING_BYTES, stats);
    else if (w.field === STATUS.CODE) status.code = enumValue(w, end, 'code');
    else w.skip(end);
  }
  return status;
}

function decodeLog(w: Wire, end: number, stats: DecodeStats): NormalizedLog {
  let time = 0n;
  let observed = 0n;
  let severityNumber = 0;
  let severityText = '';
  const bodyRanges: Ranges = [];
  const attributes: Attributes = {};
  const seen = { kept: 0 };
  let attributeIndex = 0;
  let traceId: string | undefined;
  let spanId: string | undefined;
  let eventName = '';
  let flags = 0;
  while (w.next(end)) {
    switch (w.field) {
      case LOG.TIME:
        time = fixed64(w, end, 'timeUnixNano');
        break;
      case LOG.OBSERVED_TIME:
        observed = fixed64(w, end, 'observedTimeUnixNano');
        break;
      case LOG.SEVERITY_NUMBER:
        severityNumber = enumValue(w, end, 'severityNumber');
        break;
      case LOG.SEVERITY_TEXT:
        severityText = string(w, end, 'severityText', MAX_STRING_BYTES, stats);
        break;
      case LOG.BODY: {
        const e = message(w, end, 'body');
        bodyRanges.push(w.pos, e);
        w.pos = e;
        break;
      }
      case LOG.ATTRIBUTES:
        attribute(w, end, attributes, seen, stats, 'attributes', attributeIndex++);
        break;
      case LOG.FLAGS:
        expectWire(w, I32, 'flags', end);
        flags = w.fixed32(end);
        break;
      case LOG.TRACE_ID:
        traceId = id(w, end, 'traceId', 16);
        break;
      case LOG.SPAN_ID:
        spanId = id(w, end, 'spanId', 8);
        break;
      case LOG.EVENT_NAME:
        eventName = string(w, end, 'eventName', MAX_STRING_BYTES, stats);
        break;
      default:
        w.skip(end);
    }
  }
  let body: AttributeValue | undefined;
  if (bodyRanges.length > 0) {
    try {
      body = withMerged(w, bodyRanges, (e) => anyValue(w, e, 1, MAX_BODY_BYTES, stats), null);
    } catch (err) {
      throw under(err, 'body');
    }
  }
  return {
    timeUnixNano: time.toString(),
    timeMs: nanosToMs(time),
    observedTimeUnixNano: observed.toString(),
    observedTimeMs: nanosToMs(observed),
    severityNumber,
    severityText,
    body: body === null ? undefined : body,
    attributes,
    traceId,
    spanId,
    eventName,
    flags,
  };
}

// ---------------------------------------------------------------------------------------------
// Values

/** Checks the LEN wire type of a message field; returns its end and leaves the cursor at its start. */
function message(w: Wire, end: number, name: string): number {
  expectWire(w, LEN, name, end);
  const start = w.lengthDelimited(end);
  const e = w.pos;
  w.pos = start;
  return e;
}

function string(w: Wire, end: number, name: string, maxBytes: number, stats: DecodeStats): string {
  expectWire(w, LEN, name, end);
  const start = w.lengthDelimited(end);
  return utf8(w.buf, start, w.pos, name, maxBytes, stats);
}

function utf8(buf: Buffer, start: number, end: number, name: string, maxBytes: number, stats: DecodeStats): string {
  if (start === end) return '';
  let text: string | undefined;
  if (end - start <= SHORT_STRING) text = shortAscii(buf, start, end);
  if (text === undefined) {
    text = buf.toString('utf8', start, end);
    if (text.includes('\ufffd')) {
      try {
        fatalUtf8.decode(buf.subarray(start, end));
      } catch {
        throw new FieldError(name, 'must be valid UTF-8');
      }
    }
  }
  if (end - start > maxBytes) {
    const t = truncateUtf8(text, maxBytes);
    if (t.truncated) stats.truncatedValues++;
    text = t.text;
  }
  return text;
}

/** Strings up to this many bytes (attribute keys, names, model ids) are read without a Buffer call when ASCII. */
const SHORT_STRING = 48;

/** An ASCII string read byte by byte; undefined when a byte is not ASCII. */
function shortAscii(buf: Buffer, start: number, end: number): string | undefined {
  let text = '';
  for (let i = start; i < end; i++) {
    const c = buf[i]!;
    if (c >= 0x80) return undefined;
    text += String.fromCharCode(c);
  }
  return text;
}

/**
 * An id of `bytes` bytes as lowercase hex; undefined when empty or all zeros (invalid ids in OTLP).
 * Without `hex`, only checked: any non-empty string stands for a valid id.
 */
function id(w: Wire, end: number, name: string, bytes: number, hex = true): string | undefined {
  expectWire(w, LEN, name, end);
  const start = w.lengthDelimited(end);
  const len = w.pos - start;
  if (len === 0) return undefined;
  if (len !== bytes) throw new FieldError(name, `must be ${bytes} bytes, got ${len}`);
  for (let i = start; i < w.pos; i++) if (w.buf[i] !== 0) return hex ? w.buf.toString('hex', start, w.pos) : 'valid';
  return undefined;
}

function required(value: string | undefined, name: string, bytes: number): string {
  if (value === undefined) throw new FieldError(name, `is required (${bytes} bytes, not all zeros)`);
  return value;
}

function fixed64(w: Wire, end: number, name: string): bigint {
  expectWire(w, I64, name, end);
  return w.fixed64(end);
}

/** An enum (int32 varint); negative values are refused like JSON's. */
function enumValue(w: Wire, end: number, name: string): number {
  expectWire(w, VARINT, name, end);
  const [lo, hi] = w.varint64(end);
  if (hi !== 0 || lo > 0x7fffffff) throw new FieldError(name, `must be a non-negative enum value, got ${hi === 0xffffffff ? lo | 0 : 'a value beyond int32'}`);
  return lo;
}

/**
 * Decodes one KeyValue into `target`, applying the attribute cap (duplicates overwrite, uncounted);
 * without a target (checkSpan), only validates it. Returns its key.
 */
function attribute(w: Wire, end: number, target: Attributes | undefined, seen: { kept: number }, stats: DecodeStats, listName: string, index: number): string {
  let kvEnd = end;
  try {
    expectWire(w, LEN, '', end);
    const start = w.lengthDelimited(end);
    kvEnd = w.pos;
    w.pos = start;
    let key = '';
    let valueStart = -1;
    let valueEnd = -1;
    let valueRanges: Ranges | undefined;
    while (w.next(kvEnd)) {
      if (w.field === F.KV_KEY) key = string(w, kvEnd, 'key', MAX_STRING_BYTES, stats);
      else if (w.field === F.KV_VALUE) {
        expectWire(w, LEN, 'value', kvEnd);
        const s = w.lengthDelimited(kvEnd);
        if (valueStart < 0) {
          valueStart = s;
          valueEnd = w.pos;
        } else (valueRanges ??= [valueStart, valueEnd]).push(s, w.pos);
      } else w.skip(kvEnd);
    }
    // Within the first MAX_ATTRIBUTES positions an attribute is always kept, whatever its key; past
    // them, distinct keys are counted (from the keys kept so far) and the rest dropped.
    let isNew = false;
    if (target && index >= MAX_ATTRIBUTES) {
      if (index === MAX_ATTRIBUTES) seen.kept = Object.keys(target).length;
      isNew = !Object.prototype.hasOwnProperty.call(target, key);
      if (isNew && seen.kept >= MAX_ATTRIBUTES) {
        stats.droppedAttributes++;
        return key;
      }
    }
    let value: AttributeValue = null;
    try {
      if (valueRanges) value = withMerged(w, valueRanges, (e) => anyValue(w, e, 1, MAX_STRING_BYTES, stats), null);
      else if (valueStart >= 0) {
        w.pos = valueStart;
        value = anyValue(w, valueEnd, 1, MAX_STRING_BYTES, stats);
      }
    } catch (err) {
      throw under(err, 'value');
    }
    if (isNew) seen.kept++;
    if (target) setKey(target, key, value);
    return key;
  } catch (err) {
    throw under(err, `${listName}[${index}]`);
  } finally {
    w.pos = kvEnd;
  }
}

/** Sets a key without letting `__proto__` reach the prototype. */
function setKey(target: { [key: string]: AttributeValue }, key: string, value: AttributeValue): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

function anyValue(w: Wire, end: number, depth: number, maxBytes: number, stats: DecodeStats): AttributeValue {
  let value: AttributeValue = null;
  let kind = 0;
  while (w.next(end)) {
    switch (w.field) {
      case F.ANY_STRING: {
        expectWire(w, LEN, 'stringValue', end);
        const s = w.lengthDelimited(end);
        value = utf8(w.buf, s, w.pos, 'stringValue', maxBytes, stats);
        kind = F.ANY_STRING;
        break;
      }
      case F.ANY_BOOL: {
        expectWire(w, VARINT, 'boolValue', end);
        const [lo, hi] = w.varint64(end);
        value = lo !== 0 || hi !== 0;
        kind = F.ANY_BOOL;
        break;
      }
      case F.ANY_INT: {
        expectWire(w, VARINT, 'intValue', end);
        const [lo, hi] = w.varint64(end);
        value = int64(lo, hi);
        kind = F.ANY_INT;
        break;
      }
      case F.ANY_DOUBLE: {
        expectWire(w, I64, 'doubleValue', end);
        const d = w.double(end);
        value = Number.isFinite(d) ? d : String(d);
        kind = F.ANY_DOUBLE;
        break;
      }
      case F.ANY_BYTES: {
        expectWire(w, LEN, 'bytesValue', end);
        const s = w.lengthDelimited(end);
        value = w.buf.toString('base64', s, w.pos);
        kind = F.ANY_BYTES;
        break;
      }
      case F.ANY_ARRAY:
      case F.ANY_KVLIST: {
        const field = w.field;
        const name = field === F.ANY_ARRAY ? 'arrayValue' : 'kvlistValue';
        expectWire(w, LEN, name, end);
        const s = w.lengthDelimited(end);
        const e = w.pos;
        if (depth >= MAX_VALUE_DEPTH) {
          stats.truncatedDepth++;
          value = null;
          kind = field;
          break;
        }
        w.pos = s;
        try {
          // A second occurrence of the same member merges (appends its values); another member replaces.
          if (field === F.ANY_ARRAY) {
            const items: AttributeValue[] = kind === F.ANY_ARRAY && Array.isArray(value) ? value : [];
            arrayValues(w, e, depth, maxBytes, stats, items);
            value = items;
          } else {
            const obj: { [key: string]: AttributeValue } = kind === F.ANY_KVLIST && isObject(value) ? value : {};
            kvlistValues(w, e, depth, maxBytes, stats, obj);
            value = obj;
          }
        } catch (err) {
          throw under(err, name);
        }
        w.pos = e;
        kind = field;
        break;
      }
      default:
        w.skip(end);
    }
  }
  return value;
}

function arrayValues(w: Wire, end: number, depth: number, maxBytes: number, stats: DecodeStats, out: AttributeValue[]): void {
  while (w.next(end)) {
    if (w.field !== F.LIST_VALUES) {
      w.skip(end);
      continue;
    }
    const i = out.length;
    expectWire(w, LEN, `values[${i}]`, end);
    const s = w.lengthDelimited(end);
    const e = w.pos;
    w.pos = s;
    try {
      out.push(anyValue(w, e, depth + 1, maxBytes, stats));
    } catch (err) {
      throw under(err, `values[${i}]`);
    }
    w.pos = e;
  }
}

function kvlistValues(w: Wire, end: number, depth: number, maxBytes: number, stats: DecodeStats, out: { [key: string]: AttributeValue }): void {
  let i = 0;
  while (w.next(end)) {
    if (w.field !== F.LIST_VALUES) {
      w.skip(end);
      continue;
    }
    const path = `values[${i++}]`;
    expectWire(w, LEN, path, end);
    const s = w.lengthDelimited(end);
    const kvEnd = w.pos;
    w.pos = s;
    let key = '';
    let value: AttributeValue = null;
    try {
      while (w.next(kvEnd)) {
        if (w.field === F.KV_KEY) key = string(w, kvEnd, 'key', MAX_STRING_BYTES, stats);
        else if (w.field === F.KV_VALUE) {
          expectWire(w, LEN, 'value', kvEnd);
          const vs = w.lengthDelimited(kvEnd);
          const ve = w.pos;
          w.pos = vs;
          try {
            value = anyValue(w, ve, depth + 1, maxBytes, stats);
          } catch (err) {
            throw under(err, 'value');
          }
          w.pos = ve;
        } else w.skip(kvEnd);
      }
    } catch (err) {
      throw under(err, path);
    }
    setKey(out, key, value);
    w.pos = kvEnd;
  }
}

/** int64 from its two's-complement halves: a number when safe, else a decimal string (as json.ts). */
function int64(lo: number, hi: number): number | string {
  if ((hi & 0x80000000) === 0) {
    if (hi < 0x200000) return hi * 0x100000000 + lo;
    return ((BigInt(hi) << 32n) | BigInt(lo)).toString();
  }
  const big = BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo));
  const n = Number(big);
  return Number.isSafeInteger(n) ? n : big.toString();
}

function isObject(v: AttributeValue): v is { [key: string]: AttributeValue } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// ---------------------------------------------------------------------------------------------
// Answers

/** Type URL of google.rpc.RetryInfo inside a google.protobuf.Any. */
export const RETRY_INFO_TYPE_URL = 'type.googleapis.com/google.rpc.RetryInfo';

/**
 * ExportTraceServiceResponse / ExportLogsServiceResponse (same shape): `partial_success` (1) with
 * `rejected_spans` / `rejected_log_records` (1, int64) and `error_message` (2). Zero bytes (the
 * empty message) when there is nothing to report, as the specification asks.
 */
export function encodeExportResponse(rejected: number, errorMessage: string): Buffer {
  if (rejected === 0 && errorMessage === '') return Buffer.alloc(0);
  const partial: Buffer[] = [];
  if (rejected > 0) partial.push(tag(1, VARINT), varint(rejected));
  if (errorMessage !== '') partial.push(...lengthField(2, Buffer.from(errorMessage, 'utf8')));
  return Buffer.concat(lengthField(1, Buffer.concat(partial)));
}

/**
 * google.rpc.Status: `code` (1), `message` (2), `details` (3, google.protobuf.Any: `type_url` 1,
 * `value` 2). With `retryAfterSeconds`, one detail is a google.rpc.RetryInfo whose `retry_delay`
 * (1, google.protobuf.Duration: `seconds` 1) tells an OTLP/gRPC client it may retry and when.
 */
export function encodeStatus(code: number, message: string, retryAfterSeconds?: number): Buffer {
  const parts: Buffer[] = [];
  if (code !== 0) parts.push(tag(1, VARINT), varint(code));
  if (message !== '') parts.push(...lengthField(2, Buffer.from(message, 'utf8')));
  if (retryAfterSeconds !== undefined) {
    const duration = Buffer.concat([tag(1, VARINT), varint(retryAfterSeconds)]);
    const retryInfo = Buffer.concat(lengthField(1, duration));
    const any = Buffer.concat([...lengthField(1, Buffer.from(RETRY_INFO_TYPE_URL, 'utf8')), ...lengthField(2, retryInfo)]);
    parts.push(...lengthField(3, any));
  }
  return Buffer.concat(parts);
}

function tag(field: number, wireType: number): Buffer {
  return varint(field * 8 + wireType);
}

/** A non-negative integer below 2^53 as a varint. */
function varint(n: number): Buffer {
  const bytes: number[] = [];
  let v = n;
  while (v >= 0x80) {
    bytes.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  bytes.push(v);
  return Buffer.from(bytes);
}

function lengthField(field: number, value: Buffer): Buffer[] {
  return [tag(field, LEN), varint(value.length), value];
}

function invalid(message: string): VigilError {
  return new VigilError('VIGIL_PAYLOAD_INVALID', message);
}
