/**
 * OTLP/protobuf common messages (opentelemetry-proto `common/v1`, `resource/v1`) and the request
 * framing both signals share (`collector/*`: request → resource → scope → records). Field readers
 * come in the walk's two modes: build a value, or only check it (validate it, count its bounds)
 * without creating strings or objects.
 *
 * Decoding follows the protobuf rules: fields in any order, unknown fields skipped, the last value
 * of a scalar wins, repeated occurrences of a message field merge, the last member of a oneof wins.
 */
import { isUtf8 } from 'node:buffer';
import { VigilError } from '../../../errors.ts';
import { FieldError, SHORT_STRING, countsOf, itemPath, noteSkippedSession, rejectAll, rejectRecord, restoreCounts, setKey, shortAscii, under } from '../decoding.ts';
import type { TraceIdAt } from '../mapping/relevance.ts';
import type { Checking, DecodedRecords, RecordVerdict, RequestNames } from '../decoding.ts';
import { MAX_ATTRIBUTES, MAX_STRING_BYTES, MAX_VALUE_DEPTH, emptyStats, truncateUtf8 } from '../normalized.ts';
import type { AttributeValue, Attributes, DecodeOptions, DecodeStats, NormalizedScope } from '../normalized.ts';
import { I32, I64, LEN, VARINT, WIRE_NAMES, WireError, WireReader, int64Value, uint64String } from './wire.ts';

/** Field numbers of the common messages, from the .proto files. */
export const F = {
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

/** A message field seen once or more: its byte ranges (start, end pairs), merged on decode. */
export type Ranges = number[];

// ---------------------------------------------------------------------------------------------
// Scalars

/** Throws a FieldError unless the field just read has the `expected` wire type (its value is skipped first). */
export function expectWire(r: WireReader, expected: number, name: string, end: number, index = -1): void {
  if (r.wireType !== expected) wrongWire(r, expected, index < 0 ? name : itemPath(name, index), end);
}

function wrongWire(r: WireReader, expected: number, name: string, end: number): never {
  const got = r.wireType;
  r.skip(end);
  throw new FieldError(name, `wire type ${WIRE_NAMES[got] ?? got}, expected ${WIRE_NAMES[expected]}`);
}

/** Checks the LEN wire type of a message field (item `index` of a list); returns its end and leaves the cursor at its start. */
export function message(r: WireReader, end: number, name: string, index = -1): number {
  expectWire(r, LEN, name, end, index);
  const start = r.lengthDelimited(end);
  const e = r.pos;
  r.pos = start;
  return e;
}

/** A string field, built. */
export function readString(r: WireReader, end: number, name: string, maxBytes: number, stats: DecodeStats): string {
  expectWire(r, LEN, name, end);
  const start = r.lengthDelimited(end);
  return utf8(r.buf, start, r.pos, name, maxBytes, stats);
}

/** A string field, checked: valid UTF-8, truncation counted; nothing built. */
export function checkString(r: WireReader, end: number, name: string, maxBytes: number, stats: DecodeStats): void {
  expectWire(r, LEN, name, end);
  const start = r.lengthDelimited(end);
  checkUtf8(r.buf, start, r.pos, name, maxBytes, stats);
}

export function utf8(buf: Buffer, start: number, end: number, name: string, maxBytes: number, stats: DecodeStats): string {
  if (start === end) return '';
  let text: string | undefined;
  if (end - start <= SHORT_STRING) text = shortAscii(buf, start, end);
  if (text === undefined) {
    text = buf.toString('utf8', start, end);
    if (text.includes('\ufffd') && !isUtf8(buf.subarray(start, end))) throw new FieldError(name, 'must be valid UTF-8');
  }
  if (end - start > maxBytes) {
    const t = truncateUtf8(text, maxBytes);
    if (t.truncated) stats.truncatedValues++;
    text = t.text;
  }
  return text;
}

/** The same verdicts and counts as utf8(), without creating the string. */
export function checkUtf8(buf: Buffer, start: number, end: number, name: string, maxBytes: number, stats: DecodeStats): void {
  let i = start;
  while (i < end && buf[i]! < 0x80) i++;
  // The bytes before i are ASCII, so i is a character boundary.
  if (i < end && !isUtf8(buf.subarray(i, end))) throw new FieldError(name, 'must be valid UTF-8');
  // Valid UTF-8 decodes to exactly its bytes, so the byte length decides truncation.
  if (end - start > maxBytes) stats.truncatedValues++;
}

/** The bytes of a string field equal `expected` (ASCII). */
export function bytesEqual(buf: Buffer, start: number, end: number, expected: string): boolean {
  if (end - start !== expected.length) return false;
  for (let i = 0; i < expected.length; i++) if (buf[start + i] !== expected.charCodeAt(i)) return false;
  return true;
}

/** The index in `names` of the string field's bytes, or -1. */
export function indexOfName(buf: Buffer, start: number, end: number, names: readonly string[]): number {
  for (let i = 0; i < names.length; i++) if (bytesEqual(buf, start, end, names[i]!)) return i;
  return -1;
}

/**
 * A set of ASCII names looked up by the bytes of a string field, bucketed by length so that a key
 * that is none of them (most keys) costs one array read: the watched attribute keys of a record walk.
 */
export class NameIndex {
  /** Per length: the names of that length and their indices, side by side. */
  private readonly names_: Array<string[] | undefined> = [];
  private readonly indices: Array<number[] | undefined> = [];
  constructor(readonly names: readonly string[]) {
    names.forEach((name, i) => {
      (this.names_[name.length] ??= []).push(name);
      (this.indices[name.length] ??= []).push(i);
    });
  }

  /** The index in `names` of the bytes `buf[start, end)`, or -1. */
  indexOf(buf: Buffer, start: number, end: number): number {
    const bucket = this.names_[end - start];
    if (bucket === undefined) return -1;
    for (let k = 0; k < bucket.length; k++) {
      // From the last byte back: the keys share their prefixes (`gen_ai.`), rarely their ends.
      const name = bucket[k]!;
      let i = end - start - 1;
      while (i >= 0 && buf[start + i] === name.charCodeAt(i)) i--;
      if (i < 0) return this.indices[end - start]![k]!;
    }
    return -1;
  }
}

/**
 * An id of `bytes` bytes: lowercase hex when built; when only checked, `VALID_ID` for any valid
 * id. Undefined when empty or all zeros (invalid ids in OTLP).
 */
export function id(r: WireReader, end: number, name: string, bytes: number, build: boolean): string | undefined {
  expectWire(r, LEN, name, end);
  const start = r.lengthDelimited(end);
  const len = r.pos - start;
  if (len === 0) return undefined;
  if (len !== bytes) throw new FieldError(name, `must be ${bytes} bytes, got ${len}`);
  const buf = r.buf;
  for (let i = start; i < r.pos; i++) if (buf[i] !== 0) return build ? buf.toString('hex', start, r.pos) : VALID_ID;
  return undefined;
}

/** What a checked id reads as. */
export const VALID_ID = 'valid';

/** The trace id a checking walk located (see TraceIdAt): 16 bytes read as lowercase hex. */
export function rawTraceId(buf: Buffer, facts: TraceIdAt): string | undefined {
  return facts.traceIdAt < 0 ? undefined : traceIdHex(buf, facts.traceIdAt);
}

/**
 * The 16 bytes at `at` as lowercase hex. The spans of a trace come together in a request, so the
 * text made last (kept with a copy of its bytes, not the request's buffer) is mostly the one asked
 * for again, and is not made again.
 */
export function traceIdHex(buf: Buffer, at: number): string {
  let i = 0;
  while (i < 16 && buf[at + i] === lastTraceId[i]) i++;
  if (i === 16 && lastTraceHex !== '') return lastTraceHex;
  buf.copy(lastTraceId, 0, at, at + 16);
  lastTraceHex = buf.toString('hex', at, at + 16);
  return lastTraceHex;
}

const lastTraceId = Buffer.alloc(16);
let lastTraceHex = '';

export function required(value: string | undefined, name: string, bytes: number): string {
  if (value === undefined) throw new FieldError(name, `is required (${bytes} bytes, not all zeros)`);
  return value;
}

/** A fixed64 time in nanoseconds: its decimal string (`'0'` when unset) when built, `''` when checked. */
export function nanos(r: WireReader, end: number, name: string, build: boolean): string {
  expectWire(r, I64, name, end);
  const lo = r.fixed64(end);
  return build ? uint64String(lo, r.hi) : '';
}

/**
 * A fixed64 time in nanoseconds as milliseconds (undefined when unset), without creating its
 * decimal string: exactly the number `decimalNanosToMs` gives for that string. value = hi·2³² + lo
 * = 10⁶·(hi·4294) + (hi·967296 + lo), and both parts are exact doubles.
 */
export function nanosMs(r: WireReader, end: number, name: string): number | undefined {
  expectWire(r, I64, name, end);
  const lo = r.fixed64(end);
  const hi = r.hi;
  if (lo === 0 && hi === 0) return undefined;
  const rest = hi * 967296 + lo;
  // The quotient and remainder by 10⁶ without a floating-point modulo. rest / 10⁶ < 2³², where
  // doubles are 2⁻²¹ apart, and its fraction is at most 1 − 10⁻⁶: rounding never reaches the next
  // integer, so the floor is the exact quotient.
  const whole = Math.floor(rest / 1e6);
  const below = rest - whole * 1e6;
  return hi * 4294 + whole + below / 1e6;
}

/** An enum (int32 varint); negative values are refused like JSON's. */
export function enumValue(r: WireReader, end: number, name: string): number {
  expectWire(r, VARINT, name, end);
  const lo = r.varint64(end);
  const hi = r.hi;
  if (hi !== 0 || lo > 0x7fffffff) throw new FieldError(name, `must be a non-negative enum value, got ${hi === 0xffffffff ? lo | 0 : 'a value beyond int32'}`);
  return lo;
}

export function fixed32(r: WireReader, end: number, name: string): number {
  expectWire(r, I32, name, end);
  return r.fixed32(end);
}

// ---------------------------------------------------------------------------------------------
// Attributes and AnyValue

/**
 * One KeyValue of an attribute list, at list position `index`. Built (`target` given): set in
 * `target` under the attribute cap — within the first MAX_ATTRIBUTES positions an attribute is
 * always kept, past them distinct keys are counted (from the keys kept so far) and the rest
 * dropped. Checked (no `target`): validated; when its key is one of `watched`, its value is built
 * into `facts`. Returns false when checking cannot go on cheaply (past the cap: only a build counts
 * the distinct keys).
 */
export function keyValue(
  r: WireReader,
  end: number,
  stats: DecodeStats,
  listName: string,
  index: number,
  target: Attributes | undefined,
  seen: { kept: number },
  watched?: NameIndex,
  facts?: Attributes,
): boolean {
  if (target === undefined && index >= MAX_ATTRIBUTES) return false;
  if (target === undefined && FAST_PATHS.checkedKeyValue && checkedKeyValue(r, end, watched, facts)) return true;
  let kvEnd = end;
  try {
    expectWire(r, LEN, '', end);
    const start = r.lengthDelimited(end);
    kvEnd = r.pos;
    r.pos = start;
    let key = '';
    let keyStart = 0;
    let keyEnd = 0;
    let valueStart = -1;
    let valueEnd = -1;
    let valueRanges: Ranges | undefined;
    while (r.next(kvEnd)) {
      if (r.field === F.KV_KEY) {
        expectWire(r, LEN, 'key', kvEnd);
        keyStart = r.lengthDelimited(kvEnd);
        keyEnd = r.pos;
        if (target) key = utf8(r.buf, keyStart, keyEnd, 'key', MAX_STRING_BYTES, stats);
        else checkUtf8(r.buf, keyStart, keyEnd, 'key', MAX_STRING_BYTES, stats);
      } else if (r.field === F.KV_VALUE) {
        expectWire(r, LEN, 'value', kvEnd);
        const s = r.lengthDelimited(kvEnd);
        if (valueStart < 0) {
          valueStart = s;
          valueEnd = r.pos;
        } else (valueRanges ??= [valueStart, valueEnd]).push(s, r.pos);
      } else r.skip(kvEnd);
    }
    let build = target !== undefined;
    let isNew = false;
    if (target) {
      if (index >= MAX_ATTRIBUTES) {
        if (index === MAX_ATTRIBUTES) seen.kept = Object.keys(target).length;
        isNew = !Object.prototype.hasOwnProperty.call(target, key);
        if (isNew && seen.kept >= MAX_ATTRIBUTES) {
          stats.droppedAttributes++;
          return true;
        }
      }
    } else if (watched && facts) {
      const w = watched.indexOf(r.buf, keyStart, keyEnd);
      if (w >= 0) {
        key = watched.names[w]!;
        build = true;
      }
    }
    let value: AttributeValue = null;
    try {
      if (valueRanges) value = withMerged(r, valueRanges, build, valueOf, MAX_STRING_BYTES, stats);
      else if (valueStart >= 0) {
        r.pos = valueStart;
        value = anyValue(r, valueEnd, 1, MAX_STRING_BYTES, stats, build);
      }
    } catch (err) {
      throw under(err, 'value');
    }
    if (isNew) seen.kept++;
    if (target) setKey(target, key, value);
    else if (build) setKey(facts!, key, value);
    return true;
  } catch (err) {
    throw under(err, itemPath(listName, index));
  } finally {
    r.pos = kvEnd;
  }
}

/** Shortcuts that tests turn off to compare them with the general way. */
export const FAST_PATHS = { checkedKeyValue: true };

/**
 * A checked KeyValue in the layout every SDK writes, verified byte by byte without walking its
 * fields: key (field 1), then value (field 2) holding one string (ASCII) or int, one-byte lengths,
 * nothing else; the key ASCII. Then checking it the general way would find nothing wrong and count
 * nothing (such a string is valid UTF-8, far below MAX_STRING_BYTES), so the cursor moves past it
 * and true is returned; a watched key's value is built into the facts here, as the general way
 * would build it (with marks wanted most keys of a GenAI span are watched: walking them again the
 * general way cost as much as the rest of the span). Anything else — another layout, a byte that
 * is not ASCII, bytes that are not well-formed — returns false with the cursor unmoved, and the
 * general way decides (and names any problem) exactly as before.
 */
function checkedKeyValue(r: WireReader, end: number, watched: NameIndex | undefined, facts: Attributes | undefined): boolean {
  if (r.wireType !== LEN) return false;
  const buf = r.buf;
  const at = r.pos;
  // KeyValue length, one byte.
  if (at >= end) return false;
  const len = buf[at]!;
  const start = at + 1;
  const kvEnd = start + len;
  if (len >= 0x80 || kvEnd > end || len < 4) return false;
  // key: tag 0x0a (field 1, LEN), one-byte length, ASCII bytes.
  if (buf[start] !== 0x0a) return false;
  const keyLen = buf[start + 1]!;
  const keyStart = start + 2;
  const keyEnd = keyStart + keyLen;
  // value: tag 0x12 (field 2, LEN) and a one-byte length that ends the KeyValue.
  if (keyLen >= 0x80 || keyEnd + 2 > kvEnd || buf[keyEnd] !== 0x12 || buf[keyEnd + 1] !== kvEnd - keyEnd - 2) return false;
  const valueStart = keyEnd + 2;
  if (valueStart >= kvEnd) return false;
  const tag = buf[valueStart]!;
  if (tag === 0x0a) {
    // stringValue: one-byte length that ends the value (its bytes are checked below).
    const strLen = buf[valueStart + 1];
    if (valueStart + 2 > kvEnd || strLen !== kvEnd - valueStart - 2) return false;
  } else if (tag === 0x18) {
    // intValue: a varint of at most 10 bytes that ends the value.
    const n = kvEnd - valueStart - 1;
    if (n < 1 || n > 10 || buf[kvEnd - 1]! >= 0x80) return false;
    for (let i = valueStart + 1; i < kvEnd - 1; i++) if (buf[i]! < 0x80) return false;
  } else return false;
  // A watched key equals an ASCII name, so it is ASCII; any other key is checked byte by byte.
  const w = watched !== undefined && facts !== undefined ? watched.indexOf(buf, keyStart, keyEnd) : -1;
  if (w < 0) {
    for (let i = keyStart; i < keyEnd; i++) if (buf[i]! >= 0x80) return false;
    if (tag === 0x0a) for (let i = valueStart + 2; i < kvEnd; i++) if (buf[i]! >= 0x80) return false;
  } else {
    // What anyValue builds of these bytes: the ASCII text (never truncated: under 128 bytes), or the int64.
    let value: AttributeValue;
    if (tag === 0x0a) {
      const text = asciiText(buf, valueStart + 2, kvEnd);
      if (text === undefined) return false;
      value = text;
    } else {
      r.pos = valueStart + 1;
      const lo = r.varint64(kvEnd);
      value = int64Value(lo, r.hi);
    }
    setKey(facts!, watched!.names[w]!, value);
  }
  r.pos = kvEnd;
  return true;
}

/** The text of ASCII bytes, as utf8() makes it (through madeStrings when short); undefined when a byte is not ASCII. */
function asciiText(buf: Buffer, start: number, end: number): string | undefined {
  if (start === end) return '';
  if (end - start <= SHORT_STRING) return shortAscii(buf, start, end);
  for (let i = start; i < end; i++) if (buf[i]! >= 0x80) return undefined;
  return buf.toString('latin1', start, end);
}

/** An AnyValue decoded from merged ranges (see withMerged). */
function valueOf(r: WireReader, end: number, build: boolean, maxBytes: number, stats: DecodeStats): AttributeValue {
  return anyValue(r, end, 1, maxBytes, stats, build);
}

/**
 * An AnyValue. Built: the value (bytes as base64, int64 beyond 2^53 as a decimal string, a
 * non-finite double as its name); checked: null, after the same validation and bound counts.
 */
export function anyValue(r: WireReader, end: number, depth: number, maxBytes: number, stats: DecodeStats, build: boolean): AttributeValue {
  let value: AttributeValue = null;
  let kind = 0;
  while (r.next(end)) {
    switch (r.field) {
      case F.ANY_STRING: {
        expectWire(r, LEN, 'stringValue', end);
        const s = r.lengthDelimited(end);
        if (build) value = utf8(r.buf, s, r.pos, 'stringValue', maxBytes, stats);
        else checkUtf8(r.buf, s, r.pos, 'stringValue', maxBytes, stats);
        kind = F.ANY_STRING;
        break;
      }
      case F.ANY_BOOL: {
        expectWire(r, VARINT, 'boolValue', end);
        const lo = r.varint64(end);
        value = lo !== 0 || r.hi !== 0;
        kind = F.ANY_BOOL;
        break;
      }
      case F.ANY_INT: {
        expectWire(r, VARINT, 'intValue', end);
        const lo = r.varint64(end);
        if (build) value = int64Value(lo, r.hi);
        kind = F.ANY_INT;
        break;
      }
      case F.ANY_DOUBLE: {
        expectWire(r, I64, 'doubleValue', end);
        const d = r.double(end);
        value = Number.isFinite(d) ? d : String(d);
        kind = F.ANY_DOUBLE;
        break;
      }
      case F.ANY_BYTES: {
        expectWire(r, LEN, 'bytesValue', end);
        const s = r.lengthDelimited(end);
        if (build) value = r.buf.toString('base64', s, r.pos);
        kind = F.ANY_BYTES;
        break;
      }
      case F.ANY_ARRAY:
      case F.ANY_KVLIST: {
        const field = r.field;
        const name = field === F.ANY_ARRAY ? 'arrayValue' : 'kvlistValue';
        expectWire(r, LEN, name, end);
        const s = r.lengthDelimited(end);
        const e = r.pos;
        if (depth >= MAX_VALUE_DEPTH) {
          stats.truncatedDepth++;
          value = null;
          kind = field;
          break;
        }
        r.pos = s;
        try {
          // A second occurrence of the same member merges (appends its values); another member replaces.
          if (field === F.ANY_ARRAY) {
            const items: AttributeValue[] = kind === F.ANY_ARRAY && Array.isArray(value) ? value : [];
            arrayValues(r, e, depth, maxBytes, stats, build, items);
            value = items;
          } else {
            const obj: { [key: string]: AttributeValue } = kind === F.ANY_KVLIST && isObject(value) ? value : {};
            kvlistValues(r, e, depth, maxBytes, stats, build, obj);
            value = obj;
          }
        } catch (err) {
          throw under(err, name);
        }
        r.pos = e;
        kind = field;
        break;
      }
      default:
        r.skip(end);
    }
  }
  return build ? value : null;
}

function arrayValues(r: WireReader, end: number, depth: number, maxBytes: number, stats: DecodeStats, build: boolean, out: AttributeValue[]): void {
  let i = out.length;
  while (r.next(end)) {
    if (r.field !== F.LIST_VALUES) {
      r.skip(end);
      continue;
    }
    expectWire(r, LEN, 'values', end, i);
    const s = r.lengthDelimited(end);
    const e = r.pos;
    r.pos = s;
    try {
      const v = anyValue(r, e, depth + 1, maxBytes, stats, build);
      if (build) out.push(v);
    } catch (err) {
      throw under(err, itemPath('values', i));
    }
    i++;
    r.pos = e;
  }
}

function kvlistValues(
  r: WireReader,
  end: number,
  depth: number,
  maxBytes: number,
  stats: DecodeStats,
  build: boolean,
  out: { [key: string]: AttributeValue },
): void {
  let i = 0;
  while (r.next(end)) {
    if (r.field !== F.LIST_VALUES) {
      r.skip(end);
      continue;
    }
    const index = i++;
    expectWire(r, LEN, 'values', end, index);
    const s = r.lengthDelimited(end);
    const kvEnd = r.pos;
    r.pos = s;
    let key = '';
    let value: AttributeValue = null;
    try {
      while (r.next(kvEnd)) {
        if (r.field === F.KV_KEY) {
          if (build) key = readString(r, kvEnd, 'key', MAX_STRING_BYTES, stats);
          else checkString(r, kvEnd, 'key', MAX_STRING_BYTES, stats);
        } else if (r.field === F.KV_VALUE) {
          expectWire(r, LEN, 'value', kvEnd);
          const vs = r.lengthDelimited(kvEnd);
          const ve = r.pos;
          r.pos = vs;
          try {
            value = anyValue(r, ve, depth + 1, maxBytes, stats, build);
          } catch (err) {
            throw under(err, 'value');
          }
          r.pos = ve;
        } else r.skip(kvEnd);
      }
    } catch (err) {
      throw under(err, itemPath('values', index));
    }
    if (build) setKey(out, key, value);
    r.pos = kvEnd;
  }
}

function isObject(v: AttributeValue): v is { [key: string]: AttributeValue } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Decodes a message field from its ranges: one → in place; several → their concatenation, which
 * protobuf defines as the merge of the occurrences. The cursor is left anywhere; callers reposition it.
 */
export function withMerged<T, A>(
  r: WireReader,
  ranges: Ranges,
  build: boolean,
  decode: (r: WireReader, end: number, build: boolean, arg: A, stats: DecodeStats) => T,
  arg: A,
  stats: DecodeStats,
): T {
  if (ranges.length === 2) {
    r.pos = ranges[0]!;
    return decode(r, ranges[1]!, build, arg, stats);
  }
  const parts: Buffer[] = [];
  for (let i = 0; i < ranges.length; i += 2) parts.push(r.buf.subarray(ranges[i], ranges[i + 1]));
  const merged = Buffer.concat(parts);
  const outer = r.buf;
  r.buf = merged;
  r.pos = 0;
  try {
    return decode(r, merged.length, build, arg, stats);
  } finally {
    r.buf = outer;
  }
}

// ---------------------------------------------------------------------------------------------
// Resource, scope and the request framing

function decodeResource(r: WireReader, end: number, _build: boolean, _arg: undefined, stats: DecodeStats): Attributes {
  const attributes: Attributes = {};
  const seen = { kept: 0 };
  let i = 0;
  while (r.next(end)) {
    if (r.field === F.RESOURCE_ATTRIBUTES) keyValue(r, end, stats, 'attributes', i++, attributes, seen);
    else r.skip(end);
  }
  return attributes;
}

function decodeScope(r: WireReader, end: number, _build: boolean, _arg: undefined, stats: DecodeStats): NormalizedScope {
  const scope: NormalizedScope = { name: '', version: '', attributes: {} };
  const seen = { kept: 0 };
  let i = 0;
  while (r.next(end)) {
    switch (r.field) {
      case F.SCOPE_NAME:
        scope.name = readString(r, end, 'name', MAX_STRING_BYTES, stats);
        break;
      case F.SCOPE_VERSION:
        scope.version = readString(r, end, 'version', MAX_STRING_BYTES, stats);
        break;
      case F.SCOPE_ATTRIBUTES:
        keyValue(r, end, stats, 'attributes', i++, scope.attributes, seen);
        break;
      default:
        r.skip(end);
    }
  }
  return scope;
}

/** One signal's records, for decodeSignal: how one is walked, and the relevance test. */
export interface RecordKind<R, F extends { attributes: Attributes } & TraceIdAt, M = never> {
  names: RequestNames;
  /** Builds the record at the cursor, ending at `end` (no `checking`), or only checks it, filling `checking.facts`. */
  walk(r: WireReader, end: number, stats: DecodeStats, checking: Checking<F> | undefined): R | undefined;
  /** The relevance test on a checked record (`markers`: the pipelines want activity marks). */
  verdict(facts: F, markers: boolean): RecordVerdict;
  /** A checked record kept as an activity mark: made from its facts (and the request's bytes), never built. */
  mark?(facts: F, buf: Buffer): M;
  /** Facts to fill, reused for every record of a request. */
  newFacts(): F;
  /** The trace id of a checked record, from where the walk found it (see TraceIdAt). */
  traceIdOf(buf: Buffer, facts: F): string | undefined;
}

/**
 * Decodes one signal's request: each record is built, or (with skipIrrelevant) checked first and
 * built only when the relevance test lets it through — a walk that only checks leaves the bound
 * counts to the walk that builds; a record the test keeps as an activity mark is made from its
 * facts instead. A record with a bad field is rejected alone.
 */
export function decodeSignal<R, F extends { attributes: Attributes } & TraceIdAt, M>(
  body: Uint8Array,
  kind: RecordKind<R, F, M>,
  options: DecodeOptions,
): DecodedRecords<R, M> {
  const stats = emptyStats();
  const groups: DecodedRecords<R, M>['groups'] = [];
  const markers = options.markers === true;
  const checking: Checking<F> | undefined = options.skipIrrelevant ? { facts: kind.newFacts(), mustBuild: false, markers, notedTraceAt: -1 } : undefined;
  let skipped = 0;
  const sessions = new Map<string, string>();
  decodeRequest(body, kind.names, stats, (r, resource, scope, ranges, path) => {
    const records: R[] = [];
    let marks: M[] | undefined;
    // Made once per scope, not per record: a checked record allocates nothing here.
    const traceIdOfChecked = () => kind.traceIdOf(r.buf, checking!.facts);
    for (let i = 0; i < ranges.length; i += 2) {
      const start = ranges[i]!;
      const end = ranges[i + 1]!;
      // The bound counts before the record (countsOf's, kept in locals).
      const dropped = stats.droppedAttributes;
      const truncated = stats.truncatedValues;
      const deep = stats.truncatedDepth;
      try {
        if (checking) {
          r.pos = start;
          kind.walk(r, end, stats, checking);
          if (!checking.mustBuild) {
            const verdict = kind.verdict(checking.facts, markers);
            if (verdict === 'skip') {
              skipped++;
              noteSkippedSession(sessions, checking, resource, traceIdOfChecked);
              continue;
            }
            if (verdict === 'mark') {
              (marks ??= []).push(kind.mark!(checking.facts, r.buf));
              continue;
            }
          }
          restoreCounts(stats, [dropped, truncated, deep]);
        }
        r.pos = start;
        records.push(kind.walk(r, end, stats, undefined)!);
      } catch (err) {
        if (!(err instanceof FieldError)) throw err;
        rejectRecord(stats, [dropped, truncated, deep], err, itemPath(path, i / 2));
      }
    }
    groups.push(marks ? { resource, scope, records, marks } : { resource, scope, records });
  });
  return { groups, stats, skipped, sessions };
}

/** Receives the records of one (resource, scope): their ranges as (start, end) pairs and their path. */
type ScopeVisitor = (r: WireReader, resource: Attributes, scope: NormalizedScope, records: number[], recordsPath: string) => void;

/**
 * Walks request → resource → scope and hands each scope's record ranges to `visit`. Bytes that
 * are not well-formed fail the request; a resource or scope that cannot be decoded rejects the
 * records under it.
 */
function decodeRequest(body: Uint8Array, names: RequestNames, stats: DecodeStats, visit: ScopeVisitor): void {
  const buf = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const r = new WireReader(buf);
  try {
    const end = buf.length;
    let n = 0;
    while (r.next(end)) {
      if (r.field !== F.REQUEST_RESOURCES) {
        r.skip(end);
        continue;
      }
      const rPath = `${names.resources}[${n++}]`;
      if (r.wireType !== LEN) throw new WireError(`${rPath}: wire type ${WIRE_NAMES[r.wireType]}, expected LEN (a message)`);
      const rStart = r.lengthDelimited(end);
      const rEnd = r.pos;
      resourceGroup(r, rStart, rEnd, rPath, names, stats, visit);
      r.pos = rEnd;
    }
  } catch (err) {
    if (err instanceof WireError) throw new VigilError('VIGIL_PAYLOAD_INVALID', `request body is not a valid protobuf ${names.message}: ${err.message}`);
    throw err;
  }
}

function resourceGroup(r: WireReader, start: number, end: number, rPath: string, names: RequestNames, stats: DecodeStats, visit: ScopeVisitor): void {
  r.pos = start;
  const resourceRanges: Ranges = [];
  let resourceWireError: string | undefined;
  const scopes: Array<{ scopeRanges: Ranges; scopeWireError: string | undefined; records: number[]; path: string }> = [];
  while (r.next(end)) {
    if (r.field === F.RESOURCE) {
      if (r.wireType !== LEN) {
        resourceWireError = `wire type ${WIRE_NAMES[r.wireType]}, expected LEN (a message)`;
        r.skip(end);
        continue;
      }
      const s = r.lengthDelimited(end);
      resourceRanges.push(s, r.pos);
    } else if (r.field === F.SCOPES) {
      const sPath = itemPath(`${rPath}.${names.scopes}`, scopes.length);
      if (r.wireType !== LEN) throw new WireError(`${sPath}: wire type ${WIRE_NAMES[r.wireType]}, expected LEN (a message)`);
      const sStart = r.lengthDelimited(end);
      const sEnd = r.pos;
      scopes.push({ ...scanScope(r, sStart, sEnd, sPath, names.records), path: sPath });
      r.pos = sEnd;
    } else {
      r.skip(end);
    }
  }

  let resource: Attributes;
  let before = countsOf(stats);
  try {
    if (resourceWireError) throw new FieldError('', resourceWireError);
    resource = resourceRanges.length === 0 ? {} : withMerged(r, resourceRanges, true, decodeResource, undefined, stats);
  } catch (err) {
    if (!(err instanceof FieldError)) throw err;
    // Nothing under a bad resource is kept, so nothing of it is counted either.
    restoreCounts(stats, before);
    const n = scopes.reduce((sum, s) => sum + s.records.length / 2, 0);
    rejectAll(stats, n, `${err.at(`${rPath}.resource`)} (all ${n} record(s) of ${rPath} rejected)`);
    return;
  }
  for (const s of scopes) {
    let scope: NormalizedScope;
    before = countsOf(stats);
    try {
      if (s.scopeWireError) throw new FieldError('', s.scopeWireError);
      scope = s.scopeRanges.length === 0 ? { name: '', version: '', attributes: {} } : withMerged(r, s.scopeRanges, true, decodeScope, undefined, stats);
    } catch (err) {
      if (!(err instanceof FieldError)) throw err;
      restoreCounts(stats, before);
      const n = s.records.length / 2;
      rejectAll(stats, n, `${err.at(`${s.path}.scope`)} (all ${n} record(s) of ${s.path} rejected)`);
      continue;
    }
    visit(r, resource, scope, s.records, `${s.path}.${names.records}`);
  }
}

/** The scope ranges and the record ranges (start, end pairs) of one ScopeSpans/ScopeLogs. */
function scanScope(
  r: WireReader,
  start: number,
  end: number,
  sPath: string,
  itemsKey: string,
): { scopeRanges: Ranges; scopeWireError: string | undefined; records: number[] } {
  r.pos = start;
  const scopeRanges: Ranges = [];
  let scopeWireError: string | undefined;
  const records: number[] = [];
  while (r.next(end)) {
    if (r.field === F.SCOPE) {
      if (r.wireType !== LEN) {
        scopeWireError = `wire type ${WIRE_NAMES[r.wireType]}, expected LEN (a message)`;
        r.skip(end);
        continue;
      }
      const s = r.lengthDelimited(end);
      scopeRanges.push(s, r.pos);
    } else if (r.field === F.RECORDS) {
      if (r.wireType !== LEN) throw new WireError(`${sPath}.${itemsKey}[${records.length / 2}]: wire type ${WIRE_NAMES[r.wireType]}, expected LEN (a message)`);
      const s = r.lengthDelimited(end);
      records.push(s, r.pos);
    } else {
      r.skip(end);
    }
  }
  return { scopeRanges, scopeWireError, records };
}
