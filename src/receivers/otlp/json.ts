/**
 * OTLP/JSON decoding (OTLP specification, "JSON Protobuf Encoding") of ExportTraceServiceRequest and
 * ExportLogsServiceRequest into the normalized records of normalized.ts.
 *
 * Receivers are lenient where the proto3 JSON mapping is: snake_case field names and enum names are
 * accepted besides lowerCamelCase and integers, int64 values as strings or numbers, `null` as the
 * default value, unknown fields ignored. A span or log record with a wrong-typed field is rejected
 * alone and counted (OTLP partial success); only a body that is not JSON, or whose structure above
 * the records is not the expected one, fails the whole request with VIGIL_PAYLOAD_INVALID.
 */
import { isUtf8 } from 'node:buffer';
import { VigilError } from '../../errors.ts';
import {
  addMessage,
  MAX_ATTRIBUTES,
  MAX_BODY_BYTES,
  MAX_STRING_BYTES,
  MAX_VALUE_DEPTH,
  emptyStats,
  isRemarkableSpan,
  decimalNanosToMs,
  truncateUtf8,
} from './normalized.ts';
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

type JsonObject = Record<string, unknown>;

/**
 * A problem with one field of one record (or of a resource or scope); rejects those records only.
 * `path` is relative to the record and grows as the error passes up through the values that hold
 * the field (see `under`), so paths are only built for values that are wrong.
 */
class FieldError extends Error {
  constructor(
    public path: string,
    readonly problem: string,
  ) {
    super(problem);
  }
  /** `prefix.path: problem`, or `prefix: problem` for the value itself. */
  at(prefix: string): string {
    return `${join(prefix, this.path)}: ${this.problem}`;
  }
}

/** Prefixes the path of a FieldError thrown below `segment`; other errors pass unchanged. */
function under(err: unknown, segment: string): unknown {
  if (err instanceof FieldError) err.path = join(segment, err.path);
  return err;
}

function join(prefix: string, path: string): string {
  if (path === '') return prefix;
  if (prefix === '') return path;
  return path.startsWith('[') ? prefix + path : `${prefix}.${path}`;
}

const SPAN_KINDS: Record<string, number> = {
  SPAN_KIND_UNSPECIFIED: 0,
  SPAN_KIND_INTERNAL: 1,
  SPAN_KIND_SERVER: 2,
  SPAN_KIND_CLIENT: 3,
  SPAN_KIND_PRODUCER: 4,
  SPAN_KIND_CONSUMER: 5,
};

const STATUS_CODES: Record<string, number> = { STATUS_CODE_UNSET: 0, STATUS_CODE_OK: 1, STATUS_CODE_ERROR: 2 };

const SEVERITY_NUMBERS: Record<string, number> = (() => {
  const out: Record<string, number> = { SEVERITY_NUMBER_UNSPECIFIED: 0 };
  ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'].forEach((level, i) => {
    out[`SEVERITY_NUMBER_${level}`] = i * 4 + 1;
    for (let k = 2; k <= 4; k++) out[`SEVERITY_NUMBER_${level}${k}`] = i * 4 + k;
  });
  return out;
})();

const UINT64_MAX = (1n << 64n) - 1n;
const ANY_VALUE_KINDS = ['stringValue', 'boolValue', 'intValue', 'doubleValue', 'arrayValue', 'kvlistValue', 'bytesValue'] as const;
type AnyValueKind = (typeof ANY_VALUE_KINDS)[number];
/** AnyValue kinds by their JSON key, lowerCamelCase and snake_case. */
const ANY_VALUE_KEYS: Record<string, AnyValueKind> = Object.assign(
  Object.create(null) as Record<string, AnyValueKind>,
  Object.fromEntries(ANY_VALUE_KINDS.flatMap((k) => [[k, k], [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), k]])),
);

/** Decodes an OTLP/JSON ExportTraceServiceRequest. Throws VigilError VIGIL_PAYLOAD_INVALID for a body that cannot be read at all. */
export function decodeTracesJson(body: string | Uint8Array, options: TraceDecodeOptions = {}): DecodedTraces {
  const root = parseRoot(body, 'ExportTraceServiceRequest');
  const stats = emptyStats();
  const groups: NormalizedTraces[] = [];
  let skipped = 0;
  forEachScope(root, 'resourceSpans', 'scopeSpans', 'spans', stats, (resource, scope, items, itemsPath) => {
    const spans: NormalizedSpan[] = [];
    items.forEach((item, i) => {
      if (options.skipUnremarkable) {
        const before = countsOf(stats);
        const remarkable = decodeRecord(item, itemsPath, i, stats, checkSpan);
        if (remarkable === undefined) return; // rejected
        if (!remarkable) {
          skipped++;
          return;
        }
        // Decoded again below: its bounds are counted there, not twice.
        restoreCounts(stats, before);
      }
      const span = decodeRecord(item, itemsPath, i, stats, decodeSpan);
      if (span) spans.push(span);
    });
    groups.push({ resource, scope, spans });
  });
  return { groups, stats, skipped };
}

/** Decodes an OTLP/JSON ExportLogsServiceRequest. Throws VigilError VIGIL_PAYLOAD_INVALID for a body that cannot be read at all. */
export function decodeLogsJson(body: string | Uint8Array): DecodedLogs {
  const root = parseRoot(body, 'ExportLogsServiceRequest');
  const stats = emptyStats();
  const groups: NormalizedLogs[] = [];
  forEachScope(root, 'resourceLogs', 'scopeLogs', 'logRecords', stats, (resource, scope, items, itemsPath) => {
    const logs: NormalizedLog[] = [];
    items.forEach((item, i) => {
      const log = decodeRecord(item, itemsPath, i, stats, decodeLog);
      if (log) logs.push(log);
    });
    groups.push({ resource, scope, logs });
  });
  return { groups, stats };
}

// ---------------------------------------------------------------------------------------------
// Request structure: errors above the records fail the whole request; resource and scope errors
// reject the records under them.

function parseRoot(body: string | Uint8Array, message: string): JsonObject {
  let text: string;
  if (typeof body === 'string') {
    text = body;
  } else {
    if (!isUtf8(body)) throw invalid('request body is not valid UTF-8 text');
    text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let root: unknown;
  try {
    root = JSON.parse(text);
  } catch (err) {
    const reason = err instanceof SyntaxError ? err.message : 'too deeply nested';
    throw invalid(text.trim() === '' ? 'request body is empty; expected a JSON object' : `request body is not valid JSON: ${reason}`);
  }
  if (!isObject(root)) throw invalid(`request body must be a JSON object (${message}), got ${describe(root)}`);
  return root;
}

function forEachScope(
  root: JsonObject,
  resourceKey: string,
  scopeKey: string,
  itemsKey: string,
  stats: DecodeStats,
  visit: (resource: Attributes, scope: NormalizedScope, items: unknown[], itemsPath: string) => void,
): void {
  const resources = structuralArray(root, resourceKey, resourceKey);
  resources.forEach((rv, r) => {
    const rPath = `${resourceKey}[${r}]`;
    if (!isObject(rv)) throw invalid(`${rPath} must be an object, got ${describe(rv)}`);
    const scopes = structuralArray(rv, scopeKey, `${rPath}.${scopeKey}`);
    const scopeItems = scopes.map((sv, sIdx) => {
      const sPath = `${rPath}.${scopeKey}[${sIdx}]`;
      if (!isObject(sv)) throw invalid(`${sPath} must be an object, got ${describe(sv)}`);
      return { sv, sPath, items: structuralArray(sv, itemsKey, `${sPath}.${itemsKey}`) };
    });

    let resource: Attributes;
    try {
      resource = decodeResource(get(rv, 'resource'), stats);
    } catch (err) {
      if (!(err instanceof FieldError)) throw err;
      const n = scopeItems.reduce((sum, s) => sum + s.items.length, 0);
      rejectAll(stats, n, `${err.at(`${rPath}.resource`)} (all ${n} record(s) of ${rPath} rejected)`);
      return;
    }
    for (const { sv, sPath, items } of scopeItems) {
      let scope: NormalizedScope;
      try {
        scope = decodeScope(get(sv, 'scope'), stats);
      } catch (err) {
        if (!(err instanceof FieldError)) throw err;
        rejectAll(stats, items.length, `${err.at(`${sPath}.scope`)} (all ${items.length} record(s) of ${sPath} rejected)`);
        continue;
      }
      visit(resource, scope, items, `${sPath}.${itemsKey}`);
    }
  });
}

function rejectAll(stats: DecodeStats, n: number, message: string): void {
  stats.rejected += n;
  addMessage(stats, message);
}

function structuralArray(obj: JsonObject, key: string, path: string): unknown[] {
  const v = get(obj, key);
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw invalid(`${path} must be an array, got ${describe(v)}`);
  return v;
}

function decodeRecord<T>(
  item: unknown,
  itemsPath: string,
  index: number,
  stats: DecodeStats,
  decode: (obj: JsonObject, stats: DecodeStats) => T,
): T | undefined {
  // Bounds counted while decoding a record that is then rejected must not be reported.
  const before = countsOf(stats);
  try {
    if (!isObject(item)) throw new FieldError('', `must be an object, got ${describe(item)}`);
    return decode(item, stats);
  } catch (err) {
    if (!(err instanceof FieldError)) throw err;
    restoreCounts(stats, before);
    stats.rejected++;
    addMessage(stats, `${err.at(`${itemsPath}[${index}]`)} (record rejected)`);
    return undefined;
  }
}

type BoundCounts = readonly [number, number, number];

function countsOf(stats: DecodeStats): BoundCounts {
  return [stats.droppedAttributes, stats.truncatedValues, stats.truncatedDepth];
}

function restoreCounts(stats: DecodeStats, counts: BoundCounts): void {
  [stats.droppedAttributes, stats.truncatedValues, stats.truncatedDepth] = counts;
}

function decodeResource(v: unknown, stats: DecodeStats): Attributes {
  if (v === undefined) return {};
  const obj = expectObject(v, '');
  return decodeAttributes(get(obj, 'attributes'), 'attributes', stats);
}

function decodeScope(v: unknown, stats: DecodeStats): NormalizedScope {
  if (v === undefined) return { name: '', version: '', attributes: {} };
  const obj = expectObject(v, '');
  return {
    name: decodeString(get(obj, 'name'), 'name', stats),
    version: decodeString(get(obj, 'version'), 'version', stats),
    attributes: decodeAttributes(get(obj, 'attributes'), 'attributes', stats),
  };
}

// ---------------------------------------------------------------------------------------------
// Records. Field names passed along are the record-relative paths used in messages.

function decodeSpan(obj: JsonObject, stats: DecodeStats): NormalizedSpan {
  const start = decodeNanos(get(obj, 'startTimeUnixNano'), 'startTimeUnixNano');
  const end = decodeNanos(get(obj, 'endTimeUnixNano'), 'endTimeUnixNano');
  return {
    traceId: requiredId(get(obj, 'traceId'), 'traceId', 16),
    spanId: requiredId(get(obj, 'spanId'), 'spanId', 8),
    parentSpanId: decodeId(get(obj, 'parentSpanId'), 'parentSpanId', 8),
    traceState: decodeString(get(obj, 'traceState'), 'traceState', stats),
    name: decodeString(get(obj, 'name'), 'name', stats),
    kind: decodeEnum(get(obj, 'kind'), 'kind', SPAN_KINDS),
    startTimeUnixNano: start,
    startTimeMs: decimalNanosToMs(start),
    endTimeUnixNano: end,
    endTimeMs: decimalNanosToMs(end),
    attributes: decodeAttributes(get(obj, 'attributes'), 'attributes', stats),
    events: decodeList(get(obj, 'events'), 'events', (e) => decodeSpanEvent(e, stats)),
    links: decodeList(get(obj, 'links'), 'links', (l) => decodeSpanLink(l, stats)),
    status: decodeStatus(get(obj, 'status'), stats),
  };
}

/**
 * Validates a span exactly as decodeSpan does (same fields in the same order, so the same first
 * problem is reported, and the same bounds counted) without building it; true when it can be
 * relevant (see isRemarkableSpan), or when its attributes are over the cap (decodeSpan counts
 * their distinct keys, and validates the rest).
 */
function checkSpan(obj: JsonObject, stats: DecodeStats): boolean {
  decodeNanos(get(obj, 'startTimeUnixNano'), 'startTimeUnixNano');
  decodeNanos(get(obj, 'endTimeUnixNano'), 'endTimeUnixNano');
  requiredId(get(obj, 'traceId'), 'traceId', 16);
  requiredId(get(obj, 'spanId'), 'spanId', 8);
  decodeId(get(obj, 'parentSpanId'), 'parentSpanId', 8);
  decodeString(get(obj, 'traceState'), 'traceState', stats);
  decodeString(get(obj, 'name'), 'name', stats);
  decodeEnum(get(obj, 'kind'), 'kind', SPAN_KINDS);
  const attributes = get(obj, 'attributes');
  // Over the cap, distinct keys must be counted: leave it (and the rest of the checks) to decodeSpan.
  if (Array.isArray(attributes) && attributes.length > MAX_ATTRIBUTES) return true;
  const hasErrorType = checkAttributes(attributes, 'attributes', stats, 'error.type');
  const events = decodeList(get(obj, 'events'), 'events', (e) => decodeSpanEvent(e, stats));
  decodeList(get(obj, 'links'), 'links', (l) => decodeSpanLink(l, stats));
  const status = decodeStatus(get(obj, 'status'), stats);
  return isRemarkableSpan(status.code, events.some((e) => e.name === 'exception'), hasErrorType);
}

function decodeSpanEvent(obj: JsonObject, stats: DecodeStats): NormalizedSpanEvent {
  const time = decodeNanos(get(obj, 'timeUnixNano'), 'timeUnixNano');
  return {
    name: decodeString(get(obj, 'name'), 'name', stats),
    timeUnixNano: time,
    timeMs: decimalNanosToMs(time),
    attributes: decodeAttributes(get(obj, 'attributes'), 'attributes', stats),
  };
}

function decodeSpanLink(obj: JsonObject, stats: DecodeStats): NormalizedSpanLink {
  return {
    traceId: requiredId(get(obj, 'traceId'), 'traceId', 16),
    spanId: requiredId(get(obj, 'spanId'), 'spanId', 8),
    attributes: decodeAttributes(get(obj, 'attributes'), 'attributes', stats),
  };
}

function decodeStatus(v: unknown, stats: DecodeStats): NormalizedStatus {
  if (v === undefined) return { code: 0, message: '' };
  const obj = expectObject(v, 'status');
  return {
    code: decodeEnum(get(obj, 'code'), 'status.code', STATUS_CODES),
    message: decodeString(get(obj, 'message'), 'status.message', stats),
  };
}

function decodeLog(obj: JsonObject, stats: DecodeStats): NormalizedLog {
  const time = decodeNanos(get(obj, 'timeUnixNano'), 'timeUnixNano');
  const observed = decodeNanos(get(obj, 'observedTimeUnixNano'), 'observedTimeUnixNano');
  const rawBody = get(obj, 'body');
  let body: AttributeValue | undefined;
  if (rawBody !== undefined) {
    try {
      body = decodeAnyValue(rawBody, 1, MAX_BODY_BYTES, stats);
    } catch (err) {
      throw under(err, 'body');
    }
  }
  return {
    timeUnixNano: time,
    timeMs: decimalNanosToMs(time),
    observedTimeUnixNano: observed,
    observedTimeMs: decimalNanosToMs(observed),
    severityNumber: decodeEnum(get(obj, 'severityNumber'), 'severityNumber', SEVERITY_NUMBERS),
    severityText: decodeString(get(obj, 'severityText'), 'severityText', stats),
    body: body === null ? undefined : body,
    attributes: decodeAttributes(get(obj, 'attributes'), 'attributes', stats),
    traceId: decodeId(get(obj, 'traceId'), 'traceId', 16),
    spanId: decodeId(get(obj, 'spanId'), 'spanId', 8),
    eventName: decodeString(get(obj, 'eventName'), 'eventName', stats),
    flags: decodeUint32(get(obj, 'flags'), 'flags'),
  };
}

// ---------------------------------------------------------------------------------------------
// Values

function decodeAttributes(v: unknown, name: string, stats: DecodeStats): Attributes {
  const out: Attributes = {};
  if (v === undefined) return out;
  if (!Array.isArray(v)) throw new FieldError(name, `must be an array of {key, value}, got ${describe(v)}`);
  // Only a list longer than the cap can lose attributes; then distinct keys are counted.
  const capped = v.length > MAX_ATTRIBUTES;
  let kept = 0;
  let i = 0;
  try {
    for (; i < v.length; i++) {
      const obj = expectObject(v[i], '');
      const key = obj.key;
      if (typeof key !== 'string') throw new FieldError('key', `must be a string, got ${describe(key === null ? undefined : key)}`);
      const isNew = capped && !Object.hasOwn(out, key);
      if (isNew && kept >= MAX_ATTRIBUTES) {
        stats.droppedAttributes++;
        continue;
      }
      let value: AttributeValue;
      try {
        value = decodeAnyValue(obj.value ?? undefined, 1, MAX_STRING_BYTES, stats);
      } catch (err) {
        throw under(err, 'value');
      }
      if (isNew) kept++;
      defineValue(out, key, value);
    }
  } catch (err) {
    throw under(err, `${name}[${i}]`);
  }
  return out;
}

/** Validates an attribute list (within the cap) as decodeAttributes does, without building it; true when it has the key `lookFor`. */
function checkAttributes(v: unknown, name: string, stats: DecodeStats, lookFor: string): boolean {
  if (v === undefined) return false;
  if (!Array.isArray(v)) throw new FieldError(name, `must be an array of {key, value}, got ${describe(v)}`);
  let found = false;
  let i = 0;
  try {
    for (; i < v.length; i++) {
      const obj = expectObject(v[i], '');
      const key = obj.key;
      if (typeof key !== 'string') throw new FieldError('key', `must be a string, got ${describe(key === null ? undefined : key)}`);
      try {
        decodeAnyValue(obj.value ?? undefined, 1, MAX_STRING_BYTES, stats);
      } catch (err) {
        throw under(err, 'value');
      }
      if (key === lookFor) found = true;
    }
  } catch (err) {
    throw under(err, `${name}[${i}]`);
  }
  return found;
}

/** An AnyValue; errors name the path below the value (`stringValue`, `arrayValue.values[2]...`). */
function decodeAnyValue(v: unknown, depth: number, maxBytes: number, stats: DecodeStats): AttributeValue {
  if (v === undefined) return null;
  const obj = expectObject(v, '');
  // One pass over the keys (an AnyValue has one): cheaper than probing all seven kinds by name.
  let kind: AnyValueKind | undefined;
  let raw: unknown;
  for (const key in obj) {
    const k = ANY_VALUE_KEYS[key];
    if (k === undefined || !Object.prototype.hasOwnProperty.call(obj, key)) continue;
    const candidate = obj[key];
    if (candidate === null || candidate === undefined || (k === kind && raw !== undefined)) continue;
    if (kind !== undefined) {
      const set = ANY_VALUE_KINDS.filter((x) => get(obj, x) !== undefined);
      throw new FieldError('', `an AnyValue sets exactly one value, got ${set.join(' and ')}`);
    }
    kind = k;
    raw = candidate;
  }
  if (kind === undefined) return null;
  switch (kind) {
    case 'stringValue': {
      if (typeof raw !== 'string') throw new FieldError(kind, `must be a string, got ${describe(raw)}`);
      const t = truncateUtf8(raw, maxBytes);
      if (t.truncated) stats.truncatedValues++;
      return t.text;
    }
    case 'boolValue':
      if (typeof raw !== 'boolean') throw new FieldError(kind, `must be true or false, got ${describe(raw)}`);
      return raw;
    case 'intValue':
      return decodeInt64(raw, kind);
    case 'doubleValue':
      return decodeDouble(raw, kind);
    case 'bytesValue':
      if (typeof raw !== 'string' || !/^[A-Za-z0-9+/_-]*={0,2}$/.test(raw)) {
        throw new FieldError(kind, `must be a base64 string, got ${describe(raw)}`);
      }
      return raw;
    case 'arrayValue':
    case 'kvlistValue': {
      const container = expectObject(raw, kind);
      if (depth >= MAX_VALUE_DEPTH) {
        stats.truncatedDepth++;
        return null;
      }
      const values = get(container, 'values');
      if (values !== undefined && !Array.isArray(values)) throw new FieldError(`${kind}.values`, `must be an array, got ${describe(values)}`);
      const items = (values as unknown[] | undefined) ?? [];
      let i = 0;
      try {
        if (kind === 'arrayValue') {
          const out: AttributeValue[] = [];
          for (; i < items.length; i++) out.push(decodeAnyValue(items[i], depth + 1, maxBytes, stats));
          return out;
        }
        const out: { [key: string]: AttributeValue } = {};
        for (; i < items.length; i++) {
          const entry = expectObject(items[i], '');
          const key = get(entry, 'key');
          if (typeof key !== 'string') throw new FieldError('key', `must be a string, got ${describe(key)}`);
          let value: AttributeValue;
          try {
            value = decodeAnyValue(get(entry, 'value'), depth + 1, maxBytes, stats);
          } catch (err) {
            throw under(err, 'value');
          }
          defineValue(out, key, value);
        }
        return out;
      } catch (err) {
        throw under(err, `${kind}.values[${i}]`);
      }
    }
  }
}

/** int64: a decimal string or an integer number; a value beyond 2^53 is kept as its decimal string. */
function decodeInt64(raw: unknown, path: string): number | string {
  if (typeof raw === 'number' && Number.isInteger(raw)) {
    if (Number.isSafeInteger(raw)) return raw;
    // A number beyond 2^53 (already rounded by the sender's JSON) reads like the decimal string form.
    const big = BigInt(raw);
    if (big > (1n << 63n) - 1n || big < -(1n << 63n)) throw new FieldError(path, `${raw} is out of the int64 range`);
    return big.toString();
  }
  if (typeof raw === 'string' && /^-?\d{1,20}$/.test(raw)) {
    const big = BigInt(raw);
    if (big > (1n << 63n) - 1n || big < -(1n << 63n)) throw new FieldError(path, `${raw} is out of the int64 range`);
    const n = Number(big);
    return Number.isSafeInteger(n) ? n : big.toString();
  }
  throw new FieldError(path, `must be an integer (a decimal string or a number), got ${describe(raw)}`);
}

/** double: a number, a numeric string, or "NaN"/"Infinity"/"-Infinity" (kept as those strings: JSON has no such numbers). */
function decodeDouble(raw: unknown, path: string): number | string {
  if (typeof raw === 'number') return raw;
  if (typeof raw === 'string') {
    if (raw === 'NaN' || raw === 'Infinity' || raw === '-Infinity') return raw;
    if (raw.trim() !== '' && Number.isFinite(Number(raw))) return Number(raw);
  }
  throw new FieldError(path, `must be a number, got ${describe(raw)}`);
}

/**
 * fixed64 nanoseconds since the epoch: a decimal string or a non-negative integer number; `'0'`
 * when absent. Returns the canonical decimal string (no leading zeros).
 */
function decodeNanos(raw: unknown, path: string): string {
  if (raw === undefined) return '0';
  if (typeof raw === 'string' && DECIMAL_NANOS.test(raw)) {
    // Up to 19 digits is always below 2^64; only 20-digit values (or leading zeros) need BigInt.
    if (raw.length < 20 && (raw.length === 1 || raw.charCodeAt(0) !== 0x30)) return raw;
    const big = BigInt(raw);
    if (big <= UINT64_MAX) return big.toString();
  } else if (typeof raw === 'number' && Number.isInteger(raw) && raw >= 0 && raw <= Number(UINT64_MAX)) {
    return BigInt(raw).toString();
  }
  throw new FieldError(path, `must be nanoseconds since the epoch as a decimal string, got ${describe(raw)}`);
}
const DECIMAL_NANOS = /^\d{1,20}$/;

function decodeUint32(raw: unknown, path: string): number {
  if (raw === undefined) return 0;
  const n = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw;
  if (typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= 0xffffffff) return n;
  throw new FieldError(path, `must be an unsigned 32-bit integer, got ${describe(raw)}`);
}

/** An enum as its integer value, or (lenient) its name; 0 when absent. */
function decodeEnum(raw: unknown, path: string, names: Record<string, number>): number {
  if (raw === undefined) return 0;
  if (typeof raw === 'number' && Number.isInteger(raw) && raw >= 0 && raw <= 0x7fffffff) return raw;
  if (typeof raw === 'string') {
    const byName = names[raw.toUpperCase()];
    if (byName !== undefined) return byName;
  }
  throw new FieldError(path, `must be an enum integer (or one of ${Object.keys(names).slice(0, 3).join(', ')}, ...), got ${describe(raw)}`);
}

function decodeString(raw: unknown, path: string, stats: DecodeStats): string {
  if (raw === undefined) return '';
  if (typeof raw !== 'string') throw new FieldError(path, `must be a string, got ${describe(raw)}`);
  const t = truncateUtf8(raw, MAX_STRING_BYTES);
  if (t.truncated) stats.truncatedValues++;
  return t.text;
}

const HEX = /^[0-9a-fA-F]+$/;
const ZEROS = /^0+$/;

/** A hex id of `bytes` bytes, lowercased; undefined when absent, empty or all zeros (an invalid id in OTLP). */
function decodeId(raw: unknown, path: string, bytes: number): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string' || raw.length !== bytes * 2 || !HEX.test(raw)) {
    throw new FieldError(path, `must be ${bytes * 2} hex characters, got ${describe(raw)}`);
  }
  return ZEROS.test(raw) ? undefined : raw.toLowerCase();
}

function requiredId(raw: unknown, path: string, bytes: number): string {
  const id = decodeId(raw, path, bytes);
  if (id === undefined) {
    throw new FieldError(path, `is required (${bytes * 2} hex characters, not all zeros), got ${describe(raw)}`);
  }
  return id;
}

function decodeList<T>(v: unknown, name: string, decode: (obj: JsonObject) => T): T[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new FieldError(name, `must be an array, got ${describe(v)}`);
  const out: T[] = [];
  let i = 0;
  try {
    for (; i < v.length; i++) out.push(decode(expectObject(v[i], '')));
  } catch (err) {
    throw under(err, `${name}[${i}]`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Helpers

/**
 * A field by its lowerCamelCase name, or its original snake_case name; `null` reads as absent
 * (proto3 JSON). Plain property reads are safe here: no OTLP field name is a property of
 * Object.prototype.
 */
function get(obj: JsonObject, camel: string): unknown {
  let v = obj[camel];
  if (v === undefined || v === null) {
    const snake = SNAKE_CASE[camel];
    if (snake !== undefined) v = obj[snake];
  }
  return v === null ? undefined : v;
}

/** The snake_case names of the multi-word OTLP fields read through get(). */
const SNAKE_CASE: Record<string, string> = Object.fromEntries(
  [
    'resourceSpans',
    'resourceLogs',
    'scopeSpans',
    'scopeLogs',
    'logRecords',
    'traceId',
    'spanId',
    'parentSpanId',
    'traceState',
    'startTimeUnixNano',
    'endTimeUnixNano',
    'timeUnixNano',
    'observedTimeUnixNano',
    'severityNumber',
    'severityText',
    'eventName',
    ...ANY_VALUE_KINDS,
  ].map((camel) => [camel, camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)]),
);

function expectObject(v: unknown, path: string): JsonObject {
  if (!isObject(v)) throw new FieldError(path, `must be an object, got ${describe(v)}`);
  return v;
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Sets a key without letting `__proto__` reach the prototype. */
function defineValue(target: Record<string, AttributeValue>, key: string, value: AttributeValue): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  return `${typeof v} ${String(v as number | boolean)}`;
}

function invalid(message: string): VigilError {
  return new VigilError('VIGIL_PAYLOAD_INVALID', message);
}
