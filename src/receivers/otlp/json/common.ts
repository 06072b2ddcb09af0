/**
 * OTLP/JSON common messages (the JSON mapping of `common/v1`, `resource/v1`) and the request
 * framing both signals share (request → resource → scope → records), read in document order by
 * the JSON reader. Field readers come in the walk's two modes: build a value, or only check it
 * (validate it, count its bounds) without creating strings or objects.
 *
 * Lenient where the proto3 JSON mapping is: lowerCamelCase or snake_case field names, enum names
 * or integers, int64 values as strings or numbers, `null` read as absent, unknown fields ignored.
 * A field given twice: a scalar takes the last value, a repeated field (attributes, events, ...)
 * has the items of both, as in protobuf.
 */
import { isUtf8 } from 'node:buffer';
import { VigilError } from '../../../errors.ts';
import { FieldError, countsOf, itemPath, noteSkippedSession, rejectAll, sameBytes, rejectRecord, restoreCounts, setKey, under } from '../decoding.ts';
import type { TraceIdAt } from '../mapping/relevance.ts';
import type { Checking, DecodedRecords, RecordVerdict, RequestNames } from '../decoding.ts';
import { MAX_ATTRIBUTES, MAX_STRING_BYTES, MAX_VALUE_DEPTH, decimalNanosToMs, digitsNanosToMs, emptyStats, truncateUtf8 } from '../normalized.ts';
import type { AttributeValue, Attributes, DecodeOptions, DecodeStats, NormalizedScope } from '../normalized.ts';
import { FieldNames, JsonReader, JsonSyntaxError, JsonType, withSnakeCase } from './reader.ts';

// ---------------------------------------------------------------------------------------------
// Errors, built out of line (see itemPath): `must be <expected>, got <what is there>`.

/** A FieldError for the value at the cursor, which it describes and skips. */
export function wrongType(r: JsonReader, path: string, expected: string): FieldError {
  return new FieldError(path, `must be ${expected}, got ${r.describeValue()}`);
}

/** A FieldError for the string just read. */
function wrongString(r: JsonReader, path: string, expected: string): FieldError {
  return new FieldError(path, `must be ${expected}, got ${r.describeString()}`);
}

/** A FieldError for the number just read. */
function wrongNumber(r: JsonReader, path: string, expected: string): FieldError {
  return new FieldError(path, `must be ${expected}, got number ${String(r.numberValue())}`);
}

// ---------------------------------------------------------------------------------------------
// Scalars. Each reader consumes the value at the cursor; a `null` reads as absent.

/** A string field: its text when built, '' when checked; undefined when absent. */
export function stringField(r: JsonReader, name: string, maxBytes: number, stats: DecodeStats, build: boolean): string | undefined {
  const t = r.type();
  if (t === JsonType.String) {
    r.string();
    return build ? textOf(r, maxBytes, stats) : checkText(r, maxBytes, stats);
  }
  if (t === JsonType.Null) {
    r.literal();
    return undefined;
  }
  throw wrongType(r, name, 'a string');
}

/** The last string's text, truncated to `maxBytes` (counted). */
function textOf(r: JsonReader, maxBytes: number, stats: DecodeStats): string {
  const text = r.stringText();
  // Escapes only shrink a string, so the raw length bounds the decoded one.
  if (r.strEnd - r.strStart <= maxBytes) return text;
  const t = truncateUtf8(text, maxBytes);
  if (t.truncated) stats.truncatedValues++;
  return t.text;
}

/** The same count as textOf(), without decoding unless the string holds escapes. */
function checkText(r: JsonReader, maxBytes: number, stats: DecodeStats): string {
  if (r.strEnd - r.strStart > maxBytes && r.stringBytes() > maxBytes) stats.truncatedValues++;
  return '';
}

/** What a checked id reads as. */
export const VALID_ID = 'valid';
/** What an id of all zeros reads as (an invalid id in OTLP, so absent). */
export const ZERO_ID = '0';

const HEX = /^[0-9a-fA-F]+$/;
const HEX_VALUE = (() => {
  const t = new Int8Array(256).fill(-1);
  for (let c = 0; c < 16; c++) {
    t['0123456789abcdef'.charCodeAt(c)] = c;
    t['0123456789ABCDEF'.charCodeAt(c)] = c;
  }
  return t;
})();

/**
 * A hex id of `bytes` bytes: lowercase hex when built, VALID_ID when checked; '' for an empty
 * string and ZERO_ID for all zeros (both invalid, so absent); undefined when absent.
 */
export function idField(r: JsonReader, name: string, bytes: number, build: boolean): string | undefined {
  const t = r.type();
  if (t === JsonType.Null) {
    r.literal();
    return undefined;
  }
  if (t !== JsonType.String) throw wrongType(r, name, `${bytes * 2} hex characters`);
  const n = bytes * 2;
  const buf = r.buf;
  const open = r.pos;
  let bits: number;
  if (open + n + 1 < r.end && buf[open + n + 1] === 0x22 /* " */ && (bits = hexBits(buf, open + 1, open + 1 + n)) >= 0) {
    // An id as SDKs write it, `"` then its hex digits then `"`: read and checked in one pass (no
    // quote or backslash among them, so this is the string the reader would find).
    r.strStart = open + 1;
    r.strEnd = open + 1 + n;
    r.strEscaped = false;
    r.pos = open + n + 2;
  } else {
    r.string();
    if (r.strEscaped) {
      const text = r.stringText();
      if (text === '') return '';
      if (text.length !== n || !HEX.test(text)) throw wrongString(r, name, `${n} hex characters`);
      return /^0+$/.test(text) ? ZERO_ID : build ? text.toLowerCase() : VALID_ID;
    }
    const len = r.strEnd - r.strStart;
    if (len === 0) return '';
    bits = len === n ? hexBits(buf, r.strStart, r.strEnd) : -1;
    if (bits < 0) throw wrongString(r, name, `${n} hex characters`);
  }
  if ((bits & HEX_ANY) === 0) return ZERO_ID;
  if (!build) return VALID_ID;
  const upper = (bits & HEX_UPPER) !== 0;
  if (bytes === 16 && !upper) return traceIdText(buf, r.strStart);
  const hex = buf.toString('latin1', r.strStart, r.strEnd);
  return upper ? hex.toLowerCase() : hex;
}

const HEX_ANY = 0x0f;
const HEX_UPPER = 0x10;

/** Of hex digits: the OR of their values (HEX_ANY: zero for all zeros), and HEX_UPPER when one is uppercase; -1 for a byte that is not one. */
function hexBits(buf: Buffer, start: number, end: number): number {
  let bits = 0;
  for (let i = start; i < end; i++) {
    const c = buf[i]!;
    const v = HEX_VALUE[c]!;
    if (v < 0) return -1;
    bits |= v;
    if (c >= 0x41 && c <= 0x46) bits |= HEX_UPPER;
  }
  return bits;
}

/**
 * The 32 lowercase hex characters at `start`. The spans of a trace come together in a request, so
 * the text made last is mostly the one asked for again, and is not made again.
 */
function traceIdText(buf: Buffer, start: number): string {
  const last = lastTraceId;
  let i = 0;
  while (i < 32 && buf[start + i] === last.charCodeAt(i)) i++;
  if (i === 32) return last;
  lastTraceId = buf.toString('latin1', start, start + 32);
  return lastTraceId;
}

let lastTraceId = '';

/** Notes where a checking walk found the trace id it just read, and whether it is the last noted one (see TraceIdAt). */
export function noteTraceId(r: JsonReader, id: string | undefined, facts: TraceIdAt, notedAt: number): void {
  facts.traceIdAt = -1;
  facts.traceIdText = undefined;
  facts.sameTrace = false;
  if (id === undefined || id === '' || id === ZERO_ID) return;
  if (r.strEscaped) facts.traceIdText = r.stringText().toLowerCase();
  else {
    facts.traceIdAt = r.strStart;
    facts.sameTrace = sameBytes(r.buf, r.strStart, notedAt, 32);
  }
}

/** The trace id a checking walk located: 32 hex characters, lowercased. */
export function hexTraceId(buf: Buffer, facts: TraceIdAt): string | undefined {
  if (facts.traceIdText !== undefined) return facts.traceIdText;
  return facts.traceIdAt < 0 ? undefined : buf.toString('latin1', facts.traceIdAt, facts.traceIdAt + 32).toLowerCase();
}

/** An optional id: undefined when absent, empty or all zeros. */
export function optionalId(id: string | undefined): string | undefined {
  return id === '' || id === ZERO_ID ? undefined : id;
}

/** A required id, or a FieldError saying what was there instead. */
export function requiredId(id: string | undefined, name: string, bytes: number): string {
  if (id !== undefined && id !== '' && id !== ZERO_ID) return id;
  const got = id === undefined ? 'nothing' : `the string ${JSON.stringify(id === '' ? '' : '0'.repeat(bytes * 2))}`;
  throw new FieldError(name, `is required (${bytes * 2} hex characters, not all zeros), got ${got}`);
}

const UINT64_MAX = (1n << 64n) - 1n;
const UINT64_MAX_NUMBER = Number(UINT64_MAX);

/**
 * fixed64 nanoseconds since the epoch: a decimal string or a non-negative integer number. The
 * canonical decimal string (no leading zeros; `'0'` when absent) when built, '' when checked.
 */
export function nanosField(r: JsonReader, name: string, build: boolean): string {
  const t = r.type();
  if (t === JsonType.String) {
    r.string();
    if (isCanonicalNanos(r)) return build ? r.buf.toString('latin1', r.strStart, r.strEnd) : '';
    return otherNanosString(r, name, build);
  }
  if (t === JsonType.Number) {
    r.number();
    const n = r.numberValue();
    if (Number.isInteger(n) && n >= 0 && n <= UINT64_MAX_NUMBER) return build ? BigInt(n).toString() : '';
    throw wrongNumber(r, name, 'nanoseconds since the epoch as a decimal string');
  }
  if (t === JsonType.Null) {
    r.literal();
    return '0';
  }
  throw wrongType(r, name, 'nanoseconds since the epoch as a decimal string');
}

/**
 * The same field as milliseconds (undefined when unset): `decimalNanosToMs(nanosField(...))`,
 * without making the decimal string when it is canonical already (what SDKs send).
 */
export function nanosMsField(r: JsonReader, name: string): number | undefined {
  if (r.type() === JsonType.String) {
    r.string();
    if (isCanonicalNanos(r)) return digitsNanosToMs(r.buf, r.strStart, r.strEnd);
    return decimalNanosToMs(otherNanosString(r, name, true));
  }
  return decimalNanosToMs(nanosField(r, name, true));
}

/** Whether the string just read is a canonical decimal below 2^64: 1 to 19 digits, no leading zero, no escapes. */
function isCanonicalNanos(r: JsonReader): boolean {
  const buf = r.buf;
  const start = r.strStart;
  const len = r.strEnd - start;
  if (r.strEscaped || len < 1 || len >= 20 || (len > 1 && buf[start] === 0x30)) return false;
  for (let i = start; i < r.strEnd; i++) if (buf[i]! < 0x30 || buf[i]! > 0x39) return false;
  return true;
}

/** A nanoseconds string that is not canonical (escapes, leading zeros, 20 digits), refused unless it is digits below 2^64. */
function otherNanosString(r: JsonReader, name: string, build: boolean): string {
  const buf = r.buf;
  const start = r.strStart;
  const len = r.strEnd - start;
  let digits = !r.strEscaped && len >= 1 && len <= 20;
  for (let i = start; digits && i < r.strEnd; i++) digits = buf[i]! >= 0x30 && buf[i]! <= 0x39;
  if (!digits && r.strEscaped) {
    const text = r.stringText();
    if (/^\d{1,20}$/.test(text)) return canonicalNanos(text, name, build, r);
  }
  if (!digits) throw wrongString(r, name, 'nanoseconds since the epoch as a decimal string');
  return canonicalNanos(buf.toString('latin1', start, r.strEnd), name, build, r);
}

function canonicalNanos(digits: string, name: string, build: boolean, r: JsonReader): string {
  const big = BigInt(digits);
  if (big > UINT64_MAX) throw wrongString(r, name, 'nanoseconds since the epoch as a decimal string');
  return build ? big.toString() : '';
}

/** An enum as its integer value, or (lenient) its name; 0 when absent. */
export function enumField(r: JsonReader, name: string, names: Record<string, number>): number {
  const t = r.type();
  if (t === JsonType.Number) {
    r.number();
    const n = r.numberValue();
    if (Number.isInteger(n) && n >= 0 && n <= 0x7fffffff) return n;
    throw enumError(name, names, `number ${String(n)}`);
  }
  if (t === JsonType.String) {
    r.string();
    const byName = names[r.stringText().toUpperCase()];
    if (byName !== undefined) return byName;
    throw enumError(name, names, r.describeString());
  }
  if (t === JsonType.Null) {
    r.literal();
    return 0;
  }
  throw enumError(name, names, r.describeValue());
}

function enumError(name: string, names: Record<string, number>, got: string): FieldError {
  return new FieldError(name, `must be an enum integer (or one of ${Object.keys(names).slice(0, 3).join(', ')}, ...), got ${got}`);
}

/** An unsigned 32-bit integer (a number or a string of digits); 0 when absent. */
export function uint32Field(r: JsonReader, name: string): number {
  const t = r.type();
  let n: number;
  let got: string;
  if (t === JsonType.Number) {
    r.number();
    n = r.numberValue();
    got = `number ${String(n)}`;
  } else if (t === JsonType.String) {
    r.string();
    const text = r.stringText();
    n = /^\d+$/.test(text) ? Number(text) : NaN;
    got = r.describeString();
  } else if (t === JsonType.Null) {
    r.literal();
    return 0;
  } else {
    n = NaN;
    got = r.describeValue();
  }
  if (Number.isInteger(n) && n >= 0 && n <= 0xffffffff) return n;
  throw new FieldError(name, `must be an unsigned 32-bit integer, got ${got}`);
}

// ---------------------------------------------------------------------------------------------
// AnyValue

const ANY_VALUE_KINDS = ['stringValue', 'boolValue', 'intValue', 'doubleValue', 'arrayValue', 'kvlistValue', 'bytesValue'] as const;
const ANY_STRING = 1;
const ANY_BOOL = 2;
const ANY_INT = 3;
const ANY_DOUBLE = 4;
const ANY_ARRAY = 5;
const ANY_KVLIST = 6;
const ANY_BYTES = 7;
const ANY_FIELDS = new FieldNames(withSnakeCase(Object.fromEntries(ANY_VALUE_KINDS.map((k, i) => [k, i + 1]))));
const LIST_FIELDS = new FieldNames({ values: 1 });
const KV_KEY = 1;
const KV_VALUE = 2;
const KV_FIELDS = new FieldNames({ key: KV_KEY, value: KV_VALUE });

/**
 * The AnyValue at the cursor (an object setting one member). Built: the value (bytes as their
 * base64 text, int64 beyond 2^53 as a decimal string, a non-finite double as its name); checked:
 * null, after the same validation and bound counts. Errors name the path below the value
 * (`stringValue`, `arrayValue.values[2]...`).
 */
export function anyValue(r: JsonReader, depth: number, maxBytes: number, stats: DecodeStats, build: boolean): AttributeValue {
  if (r.type() !== JsonType.Object) throw wrongType(r, '', 'an object');
  const start = r.pos;
  const startDepth = r.depth;
  r.openObject();
  let kind = 0;
  let value: AttributeValue = null;
  while (r.nextKey()) {
    const k = ANY_FIELDS.idOf(r);
    const t = r.type();
    if (k < 0 || t === JsonType.Null) {
      r.skipValue();
      continue;
    }
    if (kind !== 0 && k !== kind) throw exactlyOne(r, start, startDepth);
    kind = k;
    try {
      value = k === ANY_STRING && t === JsonType.String ? stringMember(r, maxBytes, stats, build) : member(r, k, t, depth, maxBytes, stats, build);
    } catch (err) {
      // Two members outweigh a bad one: look for another before reporting.
      if (err instanceof FieldError && membersSet(r, start, startDepth).length > 1) throw exactlyOne(r, start, startDepth);
      throw err;
    }
  }
  return build ? value : null;
}

function exactlyOne(r: JsonReader, start: number, depth: number): FieldError {
  return new FieldError('', `an AnyValue sets exactly one value, got ${membersSet(r, start, depth).join(' and ')}`);
}

/** The members an AnyValue object sets (not null), in declaration order; for messages. The cursor is left after the object. */
function membersSet(r: JsonReader, start: number, depth: number): string[] {
  r.seek(start, depth);
  r.openObject();
  const set = new Set<number>();
  while (r.nextKey()) {
    const k = ANY_FIELDS.idOf(r);
    if (k > 0 && r.type() !== JsonType.Null) set.add(k);
    r.skipValue();
  }
  return ANY_VALUE_KINDS.filter((_, i) => set.has(i + 1));
}

/** A `stringValue` that is a string (the common case, kept small to be inlined). */
function stringMember(r: JsonReader, maxBytes: number, stats: DecodeStats, build: boolean): string {
  r.string();
  return build ? textOf(r, maxBytes, stats) : checkText(r, maxBytes, stats);
}

/** A member of type `t` at the cursor. */
function member(r: JsonReader, kind: number, t: JsonType, depth: number, maxBytes: number, stats: DecodeStats, build: boolean): AttributeValue {
  const name = ANY_VALUE_KINDS[kind - 1]!;
  switch (kind) {
    case ANY_STRING:
      if (t !== JsonType.String) break;
      return stringMember(r, maxBytes, stats, build);
    case ANY_BOOL:
      if (t === JsonType.True || t === JsonType.False) return r.literal() === JsonType.True;
      throw wrongType(r, name, 'true or false');
    case ANY_INT:
      return int64(r, name);
    case ANY_DOUBLE:
      return double(r, name);
    case ANY_BYTES:
      if (t !== JsonType.String) throw wrongType(r, name, 'a base64 string');
      r.string();
      return bytes(r, name, build);
    case ANY_ARRAY:
    case ANY_KVLIST:
      if (t !== JsonType.Object) throw wrongType(r, name, 'an object');
      if (depth >= MAX_VALUE_DEPTH) {
        stats.truncatedDepth++;
        r.skipValue();
        return null;
      }
      return container(r, kind === ANY_ARRAY, depth, maxBytes, stats, build);
  }
  throw wrongType(r, name, 'a string');
}

/** int64: a decimal string or an integer number; a value beyond 2^53 is kept as its decimal string. */
function int64(r: JsonReader, name: string): number | string {
  const t = r.type();
  if (t === JsonType.Number) {
    r.number();
    const n = r.numberValue();
    if (Number.isInteger(n)) {
      if (Number.isSafeInteger(n)) return n;
      // A number beyond 2^53 (already rounded by the sender's JSON) reads like the decimal string form.
      const big = BigInt(n);
      if (big > (1n << 63n) - 1n || big < -(1n << 63n)) throw new FieldError(name, `${n} is out of the int64 range`);
      return big.toString();
    }
    throw wrongNumber(r, name, 'an integer (a decimal string or a number)');
  }
  if (t === JsonType.String) {
    r.string();
    const text = r.stringText();
    if (/^-?\d{1,20}$/.test(text)) {
      const big = BigInt(text);
      if (big > (1n << 63n) - 1n || big < -(1n << 63n)) throw new FieldError(name, `${text} is out of the int64 range`);
      const n = Number(big);
      return Number.isSafeInteger(n) ? n : big.toString();
    }
    throw wrongString(r, name, 'an integer (a decimal string or a number)');
  }
  throw wrongType(r, name, 'an integer (a decimal string or a number)');
}

/** double: a number, a numeric string, or "NaN"/"Infinity"/"-Infinity" (kept as those strings: JSON has no such numbers). */
function double(r: JsonReader, name: string): number | string {
  const t = r.type();
  if (t === JsonType.Number) {
    r.number();
    return r.numberValue();
  }
  if (t === JsonType.String) {
    r.string();
    const text = r.stringText();
    if (text === 'NaN' || text === 'Infinity' || text === '-Infinity') return text;
    if (text.trim() !== '' && Number.isFinite(Number(text))) return Number(text);
    throw wrongString(r, name, 'a number');
  }
  throw wrongType(r, name, 'a number');
}

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

function bytes(r: JsonReader, name: string, build: boolean): string | null {
  const text = r.stringText();
  if (!BASE64.test(text)) throw wrongString(r, name, 'a base64 string');
  return build ? text : null;
}

/** An ArrayValue or KeyValueList object at the cursor (within the depth bound). */
function container(r: JsonReader, isArray: boolean, depth: number, maxBytes: number, stats: DecodeStats, build: boolean): AttributeValue {
  const name = isArray ? 'arrayValue' : 'kvlistValue';
  let items: AttributeValue[] = [];
  let entries: { [key: string]: AttributeValue } = {};
  r.openObject();
  while (r.nextKey()) {
    if (LIST_FIELDS.idOf(r) < 0) {
      r.skipValue();
      continue;
    }
    const t = r.type();
    if (t === JsonType.Null) {
      r.literal();
      continue;
    }
    if (t !== JsonType.Array) throw wrongType(r, `${name}.values`, 'an array');
    // The last `values` wins, as JSON.parse would have it.
    items = [];
    entries = {};
    r.openArray();
    for (let i = 0; r.nextItem(); i++) {
      try {
        if (isArray) {
          const v = anyValue(r, depth + 1, maxBytes, stats, build);
          if (build) items.push(v);
        } else kvlistEntry(r, depth, maxBytes, stats, build, entries);
      } catch (err) {
        throw under(err, itemPath(`${name}.values`, i));
      }
    }
  }
  if (!build) return null;
  return isArray ? items : entries;
}

function kvlistEntry(r: JsonReader, depth: number, maxBytes: number, stats: DecodeStats, build: boolean, out: { [key: string]: AttributeValue }): void {
  if (r.type() !== JsonType.Object) throw wrongType(r, '', 'an object');
  r.openObject();
  let key: string | undefined;
  let value: AttributeValue = null;
  while (r.nextKey()) {
    const f = KV_FIELDS.idOf(r);
    if (f === KV_KEY) {
      key = keyText(r, build);
    } else if (f === KV_VALUE && r.type() !== JsonType.Null) {
      try {
        value = anyValue(r, depth + 1, maxBytes, stats, build);
      } catch (err) {
        throw under(err, 'value');
      }
    } else r.skipValue();
  }
  if (key === undefined) throw new FieldError('key', 'must be a string, got nothing');
  if (build) setKey(out, key, value);
}

/** A KeyValue's key: a string (`null` reads as nothing); '' when only checked. */
function keyText(r: JsonReader, build: boolean): string {
  const t = r.type();
  if (t === JsonType.String) {
    r.string();
    return build ? r.stringText() : '';
  }
  if (t === JsonType.Null) {
    r.literal();
    throw new FieldError('key', 'must be a string, got nothing');
  }
  throw wrongType(r, 'key', 'a string');
}

// ---------------------------------------------------------------------------------------------
// Attributes

/** An attribute list's state across its occurrences: the next index and the distinct keys kept past the cap. */
export interface AttributeList {
  index: number;
  kept: number;
}

export function attributeList(): AttributeList {
  return { index: 0, kept: 0 };
}

/**
 * The attribute list (KeyValue array) at the cursor, named `name` in messages. Built (`target`
 * given): set in `target` under the attribute cap — within the first MAX_ATTRIBUTES positions an
 * attribute is always kept, past them distinct keys are counted (from the keys kept so far) and
 * the rest dropped. Checked: validated, and the values of the `watched` keys built into `facts`.
 * Returns false when checking cannot go on cheaply (past the cap: only a build counts distinct keys);
 * the cursor is then inside the list.
 */
export function attributes(
  r: JsonReader,
  name: string,
  stats: DecodeStats,
  list: AttributeList,
  target: Attributes | undefined,
  watched?: WatchedKeys,
  facts?: Attributes,
): boolean {
  const t = r.type();
  if (t === JsonType.Null) {
    r.literal();
    return true;
  }
  if (t !== JsonType.Array) throw wrongType(r, name, 'an array of {key, value}');
  r.openArray();
  while (r.nextItem()) {
    const index = list.index++;
    if (target === undefined && index >= MAX_ATTRIBUTES) return false;
    try {
      keyValue(r, stats, index, list, target, watched, facts);
    } catch (err) {
      throw under(err, itemPath(name, index));
    }
  }
  return true;
}

/** Attribute keys a checking walk builds the values of, for the relevance test. */
export class WatchedKeys {
  readonly names: FieldNames;
  constructor(readonly keys: readonly string[]) {
    this.names = new FieldNames(Object.fromEntries(keys.map((k, i) => [k, i])));
  }
}

function keyValue(
  r: JsonReader,
  stats: DecodeStats,
  index: number,
  list: AttributeList,
  target: Attributes | undefined,
  watched?: WatchedKeys,
  facts?: Attributes,
): void {
  if (compactKeyValue(r, stats, index, target, watched, facts)) return;
  if (r.type() !== JsonType.Object) throw wrongType(r, '', 'an object');
  r.openObject();
  const objectDepth = r.depth;
  let key: string | undefined;
  let watchedId = -1;
  let valueAt = -1;
  let decided = false;
  let value: AttributeValue = null;
  while (r.nextKey()) {
    const f = KV_FIELDS.idOf(r);
    if (f === KV_KEY) {
      if (r.type() === JsonType.String) {
        r.string();
        if (target) key = r.stringText();
        else {
          key = '';
          watchedId = watched ? watched.names.idOf(r) : -1;
        }
      } else keyText(r, false); // throws: not a string
    } else if (f === KV_VALUE) {
      if (key === undefined) {
        // The value before its key (rare): read it once the key is known.
        valueAt = r.pos;
        r.skipValue();
      } else {
        decided = true;
        value = keyedValue(r, stats, index, list, target, key, watchedId);
      }
    } else r.skipValue();
  }
  if (key === undefined) throw new FieldError('key', 'must be a string, got nothing');
  if (!decided) {
    if (valueAt >= 0) {
      const after = r.pos;
      r.seek(valueAt, objectDepth);
      value = keyedValue(r, stats, index, list, target, key, watchedId);
      r.seek(after, objectDepth - 1);
    } else value = keyedValue(undefined, stats, index, list, target, key, watchedId);
  }
  if (value === DROPPED) return;
  if (target) setKey(target, key, value);
  else if (watchedId >= 0) setKey(facts!, watched!.keys[watchedId]!, value);
}

const KEY_OPEN = Buffer.from('{"key":', 'latin1');
const VALUE_OPEN = Buffer.from(',"value":{', 'latin1');
const VALUE_STRING_OPEN = Buffer.from(',"value":{"stringValue":', 'latin1');
const CLOSE_TWO = Buffer.from('}}', 'latin1');

/**
 * The layout every SDK writes, read without the general walk: `{"key":"…","value":{"<member>":…}}`
 * with no whitespace, one member, within the attribute cap. False — with the cursor and the counts
 * as they were — for anything else (whitespace, another order, several members, a bad value), which
 * keyValue() then reads the general way, so both ways give the same results and messages.
 */
function compactKeyValue(r: JsonReader, stats: DecodeStats, index: number, target: Attributes | undefined, watched?: WatchedKeys, facts?: Attributes): boolean {
  if (index >= MAX_ATTRIBUTES) return false;
  const start = r.pos;
  if (!r.skipLiteral(KEY_OPEN) || r.typeHere() !== JsonType.String) return rewind(r, start);
  r.string();
  let key = '';
  let watchedId = -1;
  if (target) key = r.stringText();
  else if (watched) watchedId = watched.names.idOf(r);
  let kind = ANY_STRING;
  // Most values are strings: their member name is matched with the bytes around it, not read.
  if (!r.skipLiteral(VALUE_STRING_OPEN)) {
    if (!r.skipLiteral(VALUE_OPEN) || r.typeHere() !== JsonType.String) return rewind(r, start);
    r.string();
    kind = ANY_FIELDS.idOf(r);
    if (kind < 0 || r.buf[r.pos] !== 0x3a /* : */) return rewind(r, start);
    r.pos++;
  }
  const t = r.typeHere();
  if (t === JsonType.Invalid || t === JsonType.Null || t === JsonType.End) return rewind(r, start);
  const build = target !== undefined || watchedId >= 0;
  // The bound counts as they were, in locals: this runs for every attribute of every span.
  const { droppedAttributes, truncatedValues, truncatedDepth } = stats;
  const depth = r.depth;
  let value: AttributeValue;
  try {
    // The key-value and AnyValue objects count towards the nesting bound as they would when opened.
    r.depth += 2;
    value = kind === ANY_STRING && t === JsonType.String ? stringMember(r, MAX_STRING_BYTES, stats, build) : member(r, kind, t, 1, MAX_STRING_BYTES, stats, build);
    r.depth = depth;
  } catch (err) {
    if (!(err instanceof FieldError)) throw err;
    r.depth = depth;
    restoreCounts(stats, [droppedAttributes, truncatedValues, truncatedDepth]);
    return rewind(r, start);
  }
  if (!r.skipLiteral(CLOSE_TWO)) {
    restoreCounts(stats, [droppedAttributes, truncatedValues, truncatedDepth]);
    return rewind(r, start);
  }
  if (target) setKey(target, key, value);
  else if (watchedId >= 0) setKey(facts!, watched!.keys[watchedId]!, value);
  return true;
}

function rewind(r: JsonReader, pos: number): false {
  r.pos = pos;
  return false;
}

/** Stands for an attribute dropped past the cap. */
const DROPPED = Symbol('dropped') as unknown as AttributeValue;

/** The value of a KeyValue whose key is known, at the cursor (`r`), or absent (no `r`): applies the cap when building. */
function keyedValue(
  r: JsonReader | undefined,
  stats: DecodeStats,
  index: number,
  list: AttributeList,
  target: Attributes | undefined,
  key: string,
  watchedId: number,
): AttributeValue {
  let isNew = false;
  if (target && index >= MAX_ATTRIBUTES) {
    if (index === MAX_ATTRIBUTES) list.kept = Object.keys(target).length;
    isNew = !Object.prototype.hasOwnProperty.call(target, key);
    if (isNew && list.kept >= MAX_ATTRIBUTES) {
      stats.droppedAttributes++;
      r?.skipValue();
      return DROPPED;
    }
  }
  let value: AttributeValue = null;
  if (r && r.type() !== JsonType.Null) {
    try {
      value = anyValue(r, 1, MAX_STRING_BYTES, stats, target !== undefined || watchedId >= 0);
    } catch (err) {
      throw under(err, 'value');
    }
  } else r?.skipValue();
  if (isNew) list.kept++;
  return value;
}

// ---------------------------------------------------------------------------------------------
// Resource, scope and the request framing

const RESOURCE_FIELDS = new FieldNames({ attributes: 1 });
const SCOPE_FIELDS = new FieldNames({ name: 1, version: 2, attributes: 3 });

function resourceAt(r: JsonReader, stats: DecodeStats): Attributes {
  const attributesOut: Attributes = {};
  if (r.type() !== JsonType.Object) throw wrongType(r, '', 'an object');
  r.openObject();
  const list = attributeList();
  while (r.nextKey()) {
    if (RESOURCE_FIELDS.idOf(r) === 1) attributes(r, 'attributes', stats, list, attributesOut);
    else r.skipValue();
  }
  return attributesOut;
}

function scopeAt(r: JsonReader, stats: DecodeStats): NormalizedScope {
  const scope: NormalizedScope = { name: '', version: '', attributes: {} };
  if (r.type() !== JsonType.Object) throw wrongType(r, '', 'an object');
  r.openObject();
  const list = attributeList();
  while (r.nextKey()) {
    switch (SCOPE_FIELDS.idOf(r)) {
      case 1:
        scope.name = stringField(r, 'name', MAX_STRING_BYTES, stats, true) ?? '';
        break;
      case 2:
        scope.version = stringField(r, 'version', MAX_STRING_BYTES, stats, true) ?? '';
        break;
      case 3:
        attributes(r, 'attributes', stats, list, scope.attributes);
        break;
      default:
        r.skipValue();
    }
  }
  return scope;
}

/** One signal's records, for decodeSignal: how one is walked, and the relevance test. */
export interface RecordKind<R, F extends { attributes: Attributes } & TraceIdAt, M = never> {
  names: RequestNames;
  /** Builds the record at the cursor (no `checking`), or only checks it, filling `checking.facts`. */
  walk(r: JsonReader, stats: DecodeStats, checking: Checking<F> | undefined): R | undefined;
  /** The relevance test on a checked record (`markers`: the pipelines want activity marks). */
  verdict(facts: F, markers: boolean): RecordVerdict;
  /** A checked record kept as an activity mark: made from its facts, never built. */
  mark?(facts: F): M;
  /** Facts to fill, reused for every record of a request. */
  newFacts(): F;
  /** The trace id of a checked record, from where the walk found it (see TraceIdAt). */
  traceIdOf(buf: Buffer, facts: F): string | undefined;
}

/**
 * Decodes one signal's request: each record is built, or (with skipIrrelevant) checked first and
 * built only when the relevance test lets it through — a walk that only checks leaves the bound
 * counts to the walk that builds; a record the test keeps as an activity mark is made from its
 * facts instead. A record with a bad field is rejected alone (its syntax is still checked to its end).
 */
export function decodeSignal<R, F extends { attributes: Attributes } & TraceIdAt, M>(
  body: string | Uint8Array,
  kind: RecordKind<R, F, M>,
  options: DecodeOptions,
): DecodedRecords<R, M> {
  const stats = emptyStats();
  const groups: DecodedRecords<R, M>['groups'] = [];
  const markers = options.markers === true;
  const checking: Checking<F> | undefined = options.skipIrrelevant ? { facts: kind.newFacts(), mustBuild: false, markers, notedTraceAt: -1 } : undefined;
  let skipped = 0;
  const sessions = new Map<string, string>();
  decodeRequest(body, kind.names, stats, (r, resource, scope, path, first) => {
    const records: R[] = [];
    let marks: M[] | undefined;
    let i = first;
    const done = () => groups.push(marks ? { resource, scope, records, marks } : { resource, scope, records });
    if (r === undefined) {
      done();
      return 0;
    }
    r.openArray();
    for (; r.nextItem(); i++) {
      const at = r.pos;
      const depth = r.depth;
      const before = countsOf(stats);
      try {
        if (checking) {
          kind.walk(r, stats, checking);
          if (!checking.mustBuild) {
            const verdict = kind.verdict(checking.facts, markers);
            if (verdict === 'skip') {
              skipped++;
              noteSkippedSession(sessions, checking, resource, () => kind.traceIdOf(r.buf, checking.facts));
              continue;
            }
            if (verdict === 'mark') {
              (marks ??= []).push(kind.mark!(checking.facts));
              continue;
            }
          }
          restoreCounts(stats, before);
          r.seek(at, depth);
        }
        records.push(kind.walk(r, stats, undefined)!);
      } catch (err) {
        if (!(err instanceof FieldError)) throw err;
        rejectRecord(stats, before, err, itemPath(path, i));
        r.seek(at, depth);
        r.skipValue();
      }
    }
    done();
    return i - first;
  });
  return { groups, stats, skipped, sessions };
}

/**
 * Receives the records array of one (resource, scope), the cursor at its `[`, and walks it;
 * `first` is the index of its first record (a scope may hold the records field more than once).
 * Returns the number of records it held. Without a reader, the scope has no records (they are
 * absent or null): the visitor still sees the (resource, scope) pair, and returns 0.
 */
type RecordsVisitor = (r: JsonReader | undefined, resource: Attributes, scope: NormalizedScope, recordsPath: string, first: number) => number;

/** A value seen before its context was known: where it starts, to come back to it. */
interface Deferred {
  pos: number;
  depth: number;
}

/**
 * Walks request → resource → scope and hands each scope's records to `visit`. Bytes that are not
 * JSON, and structure above the records that is not the expected one, fail the request with
 * VIGIL_PAYLOAD_INVALID; a resource or scope that cannot be decoded rejects the records under it.
 * A resource (scope) comes before its scopes (records) in every SDK's output; when it does not,
 * they are read again once it is known.
 */
function decodeRequest(body: string | Uint8Array, names: RequestNames, stats: DecodeStats, visit: RecordsVisitor): void {
  const buf = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (typeof body !== 'string' && !isUtf8(buf)) throw invalid('request body is not valid UTF-8 text');
  const r = new JsonReader(buf);
  // A byte order mark is allowed before the text.
  if (buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) r.pos = 3;
  try {
    const type = r.type();
    if (type === JsonType.End) throw invalid('request body is empty; expected a JSON object');
    if (type !== JsonType.Object) {
      const got = r.describeValue();
      expectEnd(r);
      throw invalid(`request body must be a JSON object (${names.message}), got ${got}`);
    }
    const rootFields = new FieldNames(withSnakeCase({ [names.resources]: 1 }));
    r.openObject();
    let n = 0;
    while (r.nextKey()) {
      if (rootFields.idOf(r) !== 1) {
        r.skipValue();
        continue;
      }
      n = structuralArray(r, names.resources, n, (index) => {
        const rPath = itemPath(names.resources, index);
        if (r.type() !== JsonType.Object) throw invalid(`${rPath} must be an object, got ${r.describeValue()}`);
        resourceGroup(r, rPath, names, stats, visit);
      });
    }
    expectEnd(r);
  } catch (err) {
    if (err instanceof JsonSyntaxError) throw invalid(`request body is not valid JSON: ${err.message}`);
    throw err;
  }
}

function expectEnd(r: JsonReader): void {
  const c = r.peek();
  if (c >= 0) r.fail(c, 'the end of the body');
}

/**
 * A structural array field (`resourceSpans`, `scopeSpans`, `spans`, ...): `null` is empty, another
 * type fails the request. Calls `item` with the cursor at each item; returns the next index.
 */
function structuralArray(r: JsonReader, path: string, first: number, item: (index: number) => void): number {
  const t = r.type();
  if (t === JsonType.Null) {
    r.literal();
    return first;
  }
  if (t !== JsonType.Array) throw invalid(`${path} must be an array, got ${r.describeValue()}`);
  r.openArray();
  let i = first;
  while (r.nextItem()) item(i++);
  return i;
}

const GROUP_FIELDS = new Map<string, FieldNames>();

function groupFields(a: string, b: string): FieldNames {
  const key = `${a}/${b}`;
  let names = GROUP_FIELDS.get(key);
  if (!names) GROUP_FIELDS.set(key, (names = new FieldNames(withSnakeCase({ [a]: 1, [b]: 2 }))));
  return names;
}

/** One ResourceSpans / ResourceLogs object at the cursor. */
function resourceGroup(r: JsonReader, rPath: string, names: RequestNames, stats: DecodeStats, visit: RecordsVisitor): void {
  const fields = groupFields('resource', names.scopes);
  let resource: Attributes | FieldError | undefined;
  const deferred: Deferred[] = [];
  const scopes = { next: 0, rejected: 0 };
  r.openObject();
  while (r.nextKey()) {
    const f = fields.idOf(r);
    if (f === 1) {
      const at = { pos: r.pos, depth: r.depth };
      const before = countsOf(stats);
      try {
        resource = r.type() === JsonType.Null ? (r.literal(), {}) : resourceAt(r, stats);
      } catch (err) {
        if (!(err instanceof FieldError)) throw err;
        // Nothing under a bad resource is kept, so nothing of it is counted either.
        restoreCounts(stats, before);
        resource = err;
        // The rest of the resource is still checked for syntax.
        r.seek(at.pos, at.depth);
        r.skipValue();
      }
    } else if (f === 2) {
      if (resource === undefined) {
        deferred.push({ pos: r.pos, depth: r.depth });
        r.skipValue();
      } else scopesOf(r, rPath, resource, names, stats, visit, scopes);
    } else r.skipValue();
  }
  if (deferred.length > 0) {
    const after = { pos: r.pos, depth: r.depth };
    for (const d of deferred) {
      r.seek(d.pos, d.depth);
      scopesOf(r, rPath, resource ?? {}, names, stats, visit, scopes);
    }
    r.seek(after.pos, after.depth);
  }
  if (resource instanceof FieldError) {
    rejectAll(stats, scopes.rejected, `${resource.at(`${rPath}.resource`)} (all ${scopes.rejected} record(s) of ${rPath} rejected)`);
  }
}

/** The scopes array of a resource group at the cursor; with a bad resource, only counts their records. */
function scopesOf(
  r: JsonReader,
  rPath: string,
  resource: Attributes | FieldError,
  names: RequestNames,
  stats: DecodeStats,
  visit: RecordsVisitor,
  scopes: { next: number; rejected: number },
): void {
  scopes.next = structuralArray(r, `${rPath}.${names.scopes}`, scopes.next, (index) => {
    const sPath = itemPath(`${rPath}.${names.scopes}`, index);
    if (r.type() !== JsonType.Object) throw invalid(`${sPath} must be an object, got ${r.describeValue()}`);
    const n = scopeGroup(r, sPath, resource, names, stats, visit);
    if (resource instanceof FieldError) scopes.rejected += n;
  });
}

/** One ScopeSpans / ScopeLogs object at the cursor; returns its number of records. */
function scopeGroup(r: JsonReader, sPath: string, resource: Attributes | FieldError, names: RequestNames, stats: DecodeStats, visit: RecordsVisitor): number {
  const fields = groupFields('scope', names.records);
  const recordsPath = `${sPath}.${names.records}`;
  let scope: NormalizedScope | FieldError | undefined;
  const deferred: Deferred[] = [];
  let count = 0;
  let visited = false;
  const records = () => {
    if (resource instanceof FieldError || scope instanceof FieldError) count = countRecords(r, recordsPath, count);
    else if (r.type() === JsonType.Null) r.literal();
    else {
      count += visitRecords(r, resource, scope ?? emptyScope(), recordsPath, count, visit);
      visited = true;
    }
  };
  r.openObject();
  while (r.nextKey()) {
    const f = fields.idOf(r);
    if (f === 1) {
      const at = { pos: r.pos, depth: r.depth };
      if (resource instanceof FieldError) {
        // Nothing under a bad resource is read: its records are only counted.
        r.skipValue();
        scope = emptyScope();
        continue;
      }
      const before = countsOf(stats);
      try {
        scope = r.type() === JsonType.Null ? (r.literal(), emptyScope()) : scopeAt(r, stats);
      } catch (err) {
        if (!(err instanceof FieldError)) throw err;
        restoreCounts(stats, before);
        scope = err;
        r.seek(at.pos, at.depth);
        r.skipValue();
      }
    } else if (f === 2) {
      if (scope === undefined) {
        deferred.push({ pos: r.pos, depth: r.depth });
        r.skipValue();
      } else records();
    } else r.skipValue();
  }
  if (deferred.length > 0) {
    const after = { pos: r.pos, depth: r.depth };
    for (const d of deferred) {
      r.seek(d.pos, d.depth);
      records();
    }
    r.seek(after.pos, after.depth);
  }
  if (!visited && !(resource instanceof FieldError) && !(scope instanceof FieldError)) visit(undefined, resource, scope ?? emptyScope(), recordsPath, 0);
  if (scope instanceof FieldError && !(resource instanceof FieldError)) {
    rejectAll(stats, count, `${scope.at(`${sPath}.scope`)} (all ${count} record(s) of ${sPath} rejected)`);
  }
  return count;
}

function emptyScope(): NormalizedScope {
  return { name: '', version: '', attributes: {} };
}

function visitRecords(r: JsonReader, resource: Attributes, scope: NormalizedScope, path: string, first: number, visit: RecordsVisitor): number {
  if (r.type() !== JsonType.Array) throw invalid(`${path} must be an array, got ${r.describeValue()}`);
  return visit(r, resource, scope, path, first);
}

/** Counts (and checks the syntax of) the records of a scope whose resource or scope is bad. */
function countRecords(r: JsonReader, path: string, first: number): number {
  return structuralArray(r, path, first, () => r.skipValue());
}

function invalid(message: string): VigilError {
  return new VigilError('VIGIL_PAYLOAD_INVALID', message);
}
