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
import { VigilError } from '../../errors.ts';
import {
  addMessage,
  MAX_ATTRIBUTES,
  MAX_BODY_BYTES,
  MAX_STRING_BYTES,
  MAX_VALUE_DEPTH,
  emptyStats,
  nanosToMs,
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
} from './normalized.ts';

type JsonObject = Record<string, unknown>;

/** A problem with one field of one record; rejects that record only. */
class FieldError extends Error {}

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

/** Decodes an OTLP/JSON ExportTraceServiceRequest. Throws VigilError VIGIL_PAYLOAD_INVALID for a body that cannot be read at all. */
export function decodeTracesJson(body: string | Uint8Array): DecodedTraces {
  const root = parseRoot(body, 'ExportTraceServiceRequest');
  const stats = emptyStats();
  const groups: NormalizedTraces[] = [];
  forEachScope(root, 'resourceSpans', 'scopeSpans', 'spans', stats, (resource, scope, items, itemsPath) => {
    const spans: NormalizedSpan[] = [];
    items.forEach((item, i) => {
      const span = decodeRecord(item, `${itemsPath}[${i}]`, stats, decodeSpan);
      if (span) spans.push(span);
    });
    groups.push({ resource, scope, spans });
  });
  return { groups, stats };
}

/** Decodes an OTLP/JSON ExportLogsServiceRequest. Throws VigilError VIGIL_PAYLOAD_INVALID for a body that cannot be read at all. */
export function decodeLogsJson(body: string | Uint8Array): DecodedLogs {
  const root = parseRoot(body, 'ExportLogsServiceRequest');
  const stats = emptyStats();
  const groups: NormalizedLogs[] = [];
  forEachScope(root, 'resourceLogs', 'scopeLogs', 'logRecords', stats, (resource, scope, items, itemsPath) => {
    const logs: NormalizedLog[] = [];
    items.forEach((item, i) => {
      const log = decodeRecord(item, `${itemsPath}[${i}]`, stats, decodeLog);
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
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(body);
    } catch {
      throw invalid('request body is not valid UTF-8 text');
    }
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
      resource = decodeResource(get(rv, 'resource'), `${rPath}.resource`, stats);
    } catch (err) {
      if (!(err instanceof FieldError)) throw err;
      const n = scopeItems.reduce((sum, s) => sum + s.items.length, 0);
      rejectAll(stats, n, `${err.message} (all ${n} record(s) of ${rPath} rejected)`);
      return;
    }
    for (const { sv, sPath, items } of scopeItems) {
      let scope: NormalizedScope;
      try {
        scope = decodeScope(get(sv, 'scope'), `${sPath}.scope`, stats);
      } catch (err) {
        if (!(err instanceof FieldError)) throw err;
        rejectAll(stats, items.length, `${err.message} (all ${items.length} record(s) of ${sPath} rejected)`);
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
  path: string,
  stats: DecodeStats,
  decode: (obj: JsonObject, path: string, stats: DecodeStats) => T,
): T | undefined {
  // Bounds counted while decoding a record that is then rejected must not be reported.
  const before = { d: stats.droppedAttributes, t: stats.truncatedValues, n: stats.truncatedDepth };
  try {
    if (!isObject(item)) throw new FieldError(`${path}: must be an object, got ${describe(item)}`);
    return decode(item, path, stats);
  } catch (err) {
    if (!(err instanceof FieldError)) throw err;
    stats.droppedAttributes = before.d;
    stats.truncatedValues = before.t;
    stats.truncatedDepth = before.n;
    stats.rejected++;
    addMessage(stats, `${err.message} (record rejected)`);
    return undefined;
  }
}

function decodeResource(v: unknown, path: string, stats: DecodeStats): Attributes {
  if (v === undefined) return {};
  const obj = expectObject(v, path);
  return decodeAttributes(get(obj, 'attributes'), `${path}.attributes`, stats);
}

function decodeScope(v: unknown, path: string, stats: DecodeStats): NormalizedScope {
  if (v === undefined) return { name: '', version: '', attributes: {} };
  const obj = expectObject(v, path);
  return {
    name: decodeString(get(obj, 'name'), `${path}.name`, stats),
    version: decodeString(get(obj, 'version'), `${path}.version`, stats),
    attributes: decodeAttributes(get(obj, 'attributes'), `${path}.attributes`, stats),
  };
}

// ---------------------------------------------------------------------------------------------
// Records

function decodeSpan(obj: JsonObject, path: string, stats: DecodeStats): NormalizedSpan {
  const start = decodeNanos(get(obj, 'startTimeUnixNano'), `${path}.startTimeUnixNano`);
  const end = decodeNanos(get(obj, 'endTimeUnixNano'), `${path}.endTimeUnixNano`);
  return {
    traceId: requiredId(get(obj, 'traceId'), `${path}.traceId`, 16),
    spanId: requiredId(get(obj, 'spanId'), `${path}.spanId`, 8),
    parentSpanId: decodeId(get(obj, 'parentSpanId'), `${path}.parentSpanId`, 8),
    traceState: decodeString(get(obj, 'traceState'), `${path}.traceState`, stats),
    name: decodeString(get(obj, 'name'), `${path}.name`, stats),
    kind: decodeEnum(get(obj, 'kind'), `${path}.kind`, SPAN_KINDS),
    startTimeUnixNano: start.toString(),
    startTimeMs: nanosToMs(start),
    endTimeUnixNano: end.toString(),
    endTimeMs: nanosToMs(end),
    attributes: decodeAttributes(get(obj, 'attributes'), `${path}.attributes`, stats),
    events: decodeList(get(obj, 'events'), `${path}.events`, (e, p) => decodeSpanEvent(e, p, stats)),
    links: decodeList(get(obj, 'links'), `${path}.links`, (l, p) => decodeSpanLink(l, p, stats)),
    status: decodeStatus(get(obj, 'status'), `${path}.status`, stats),
  };
}

function decodeSpanEvent(obj: JsonObject, path: string, stats: DecodeStats): NormalizedSpanEvent {
  const time = decodeNanos(get(obj, 'timeUnixNano'), `${path}.timeUnixNano`);
  return {
    name: decodeString(get(obj, 'name'), `${path}.name`, stats),
    timeUnixNano: time.toString(),
    timeMs: nanosToMs(time),
    attributes: decodeAttributes(get(obj, 'attributes'), `${path}.attributes`, stats),
  };
}

function decodeSpanLink(obj: JsonObject, path: string, stats: DecodeStats): NormalizedSpanLink {
  return {
    traceId: requiredId(get(obj, 'traceId'), `${path}.traceId`, 16),
    spanId: requiredId(get(obj, 'spanId'), `${path}.spanId`, 8),
    attributes: decodeAttributes(get(obj, 'attributes'), `${path}.attributes`, stats),
  };
}

function decodeStatus(v: unknown, path: string, stats: DecodeStats): NormalizedStatus {
  if (v === undefined) return { code: 0, message: '' };
  const obj = expectObject(v, path);
  return {
    code: decodeEnum(get(obj, 'code'), `${path}.code`, STATUS_CODES),
    message: decodeString(get(obj, 'message'), `${path}.message`, stats),
  };
}

function decodeLog(obj: JsonObject, path: string, stats: DecodeStats): NormalizedLog {
  const time = decodeNanos(get(obj, 'timeUnixNano'), `${path}.timeUnixNano`);
  const observed = decodeNanos(get(obj, 'observedTimeUnixNano'), `${path}.observedTimeUnixNano`);
  const rawBody = get(obj, 'body');
  const body = rawBody === undefined ? undefined : decodeAnyValue(rawBody, `${path}.body`, 1, MAX_BODY_BYTES, stats);
  return {
    timeUnixNano: time.toString(),
    timeMs: nanosToMs(time),
    observedTimeUnixNano: observed.toString(),
    observedTimeMs: nanosToMs(observed),
    severityNumber: decodeEnum(get(obj, 'severityNumber'), `${path}.severityNumber`, SEVERITY_NUMBERS),
    severityText: decodeString(get(obj, 'severityText'), `${path}.severityText`, stats),
    body: body === null ? undefined : body,
    attributes: decodeAttributes(get(obj, 'attributes'), `${path}.attributes`, stats),
    traceId: decodeId(get(obj, 'traceId'), `${path}.traceId`, 16),
    spanId: decodeId(get(obj, 'spanId'), `${path}.spanId`, 8),
    eventName: decodeString(get(obj, 'eventName'), `${path}.eventName`, stats),
    flags: decodeUint32(get(obj, 'flags'), `${path}.flags`),
  };
}

// ---------------------------------------------------------------------------------------------
// Values

function decodeAttributes(v: unknown, path: string, stats: DecodeStats): Attributes {
  const out: Attributes = {};
  if (v === undefined) return out;
  if (!Array.isArray(v)) throw new FieldError(`${path}: must be an array of {key, value}, got ${describe(v)}`);
  let kept = 0;
  v.forEach((kv, i) => {
    const p = `${path}[${i}]`;
    const obj = expectObject(kv, p);
    const key = get(obj, 'key');
    if (typeof key !== 'string') throw new FieldError(`${p}.key: must be a string, got ${describe(key)}`);
    const isNew = !Object.prototype.hasOwnProperty.call(out, key);
    if (isNew && kept >= MAX_ATTRIBUTES) {
      stats.droppedAttributes++;
      return;
    }
    const value = decodeAnyValue(get(obj, 'value'), `${p}.value`, 1, MAX_STRING_BYTES, stats);
    if (isNew) kept++;
    defineValue(out, key, value);
  });
  return out;
}

function decodeAnyValue(v: unknown, path: string, depth: number, maxBytes: number, stats: DecodeStats): AttributeValue {
  if (v === undefined) return null;
  const obj = expectObject(v, path);
  const set = ANY_VALUE_KINDS.filter((k) => get(obj, k) !== undefined);
  if (set.length > 1) throw new FieldError(`${path}: an AnyValue sets exactly one value, got ${set.join(' and ')}`);
  const kind = set[0];
  if (kind === undefined) return null;
  const raw = get(obj, kind);
  const p = `${path}.${kind}`;
  switch (kind) {
    case 'stringValue': {
      if (typeof raw !== 'string') throw new FieldError(`${p}: must be a string, got ${describe(raw)}`);
      const t = truncateUtf8(raw, maxBytes);
      if (t.truncated) stats.truncatedValues++;
      return t.text;
    }
    case 'boolValue':
      if (typeof raw !== 'boolean') throw new FieldError(`${p}: must be true or false, got ${describe(raw)}`);
      return raw;
    case 'intValue':
      return decodeInt64(raw, p);
    case 'doubleValue':
      return decodeDouble(raw, p);
    case 'bytesValue':
      if (typeof raw !== 'string' || !/^[A-Za-z0-9+/_-]*={0,2}$/.test(raw)) {
        throw new FieldError(`${p}: must be a base64 string, got ${describe(raw)}`);
      }
      return raw;
    case 'arrayValue':
    case 'kvlistValue': {
      const container = expectObject(raw, p);
      if (depth >= MAX_VALUE_DEPTH) {
        stats.truncatedDepth++;
        return null;
      }
      const values = get(container, 'values');
      if (values !== undefined && !Array.isArray(values)) throw new FieldError(`${p}.values: must be an array, got ${describe(values)}`);
      const items = (values as unknown[] | undefined) ?? [];
      if (kind === 'arrayValue') return items.map((item, i) => decodeAnyValue(item, `${p}.values[${i}]`, depth + 1, maxBytes, stats));
      const out: { [key: string]: AttributeValue } = {};
      items.forEach((kv, i) => {
        const kp = `${p}.values[${i}]`;
        const entry = expectObject(kv, kp);
        const key = get(entry, 'key');
        if (typeof key !== 'string') throw new FieldError(`${kp}.key: must be a string, got ${describe(key)}`);
        defineValue(out, key, decodeAnyValue(get(entry, 'value'), `${kp}.value`, depth + 1, maxBytes, stats));
      });
      return out;
    }
  }
}

/** int64: a decimal string or an integer number; a number beyond 2^53 stays a decimal string. */
function decodeInt64(raw: unknown, path: string): number | string {
  if (typeof raw === 'number' && Number.isInteger(raw)) return raw;
  if (typeof raw === 'string' && /^-?\d{1,20}$/.test(raw)) {
    const big = BigInt(raw);
    if (big > (1n << 63n) - 1n || big < -(1n << 63n)) throw new FieldError(`${path}: ${raw} is out of the int64 range`);
    const n = Number(big);
    return Number.isSafeInteger(n) ? n : big.toString();
  }
  throw new FieldError(`${path}: must be an integer (a decimal string or a number), got ${describe(raw)}`);
}

/** double: a number, a numeric string, or "NaN"/"Infinity"/"-Infinity" (kept as those strings: JSON has no such numbers). */
function decodeDouble(raw: unknown, path: string): number | string {
  if (typeof raw === 'number') return raw;
  if (typeof raw === 'string') {
    if (raw === 'NaN' || raw === 'Infinity' || raw === '-Infinity') return raw;
    if (raw.trim() !== '' && Number.isFinite(Number(raw))) return Number(raw);
  }
  throw new FieldError(`${path}: must be a number, got ${describe(raw)}`);
}

/** fixed64 nanoseconds since the epoch: a decimal string or a non-negative integer number; 0 when absent. */
function decodeNanos(raw: unknown, path: string): bigint {
  if (raw === undefined) return 0n;
  if (typeof raw === 'string' && /^\d{1,20}$/.test(raw)) {
    const big = BigInt(raw);
    if (big <= UINT64_MAX) return big;
  } else if (typeof raw === 'number' && Number.isInteger(raw) && raw >= 0 && raw <= Number(UINT64_MAX)) {
    return BigInt(raw);
  }
  throw new FieldError(`${path}: must be nanoseconds since the epoch as a decimal string, got ${describe(raw)}`);
}

function decodeUint32(raw: unknown, path: string): number {
  if (raw === undefined) return 0;
  const n = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw;
  if (typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= 0xffffffff) return n;
  throw new FieldError(`${path}: must be an unsigned 32-bit integer, got ${describe(raw)}`);
}

/** An enum as its integer value, or (lenient) its name; 0 when absent. */
function decodeEnum(raw: unknown, path: string, names: Record<string, number>): number {
  if (raw === undefined) return 0;
  if (typeof raw === 'number' && Number.isInteger(raw) && raw >= 0 && raw <= 0x7fffffff) return raw;
  if (typeof raw === 'string') {
    const byName = names[raw.toUpperCase()];
    if (byName !== undefined) return byName;
  }
  throw new FieldError(`${path}: must be an enum integer (or one of ${Object.keys(names).slice(0, 3).join(', ')}, ...), got ${describe(raw)}`);
}

function decodeString(raw: unknown, path: string, stats: DecodeStats): string {
  if (raw === undefined) return '';
  if (typeof raw !== 'string') throw new FieldError(`${path}: must be a string, got ${describe(raw)}`);
  const t = truncateUtf8(raw, MAX_STRING_BYTES);
  if (t.truncated) stats.truncatedValues++;
  return t.text;
}

/** A hex id of `bytes` bytes, lowercased; undefined when absent, empty or all zeros (an invalid id in OTLP). */
function decodeId(raw: unknown, path: string, bytes: number): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string' || raw.length !== bytes * 2 || !/^[0-9a-fA-F]+$/.test(raw)) {
    throw new FieldError(`${path}: must be ${bytes * 2} hex characters, got ${describe(raw)}`);
  }
  return /^0+$/.test(raw) ? undefined : raw.toLowerCase();
}

function requiredId(raw: unknown, path: string, bytes: number): string {
  const id = decodeId(raw, path, bytes);
  if (id === undefined) {
    throw new FieldError(`${path}: is required (${bytes * 2} hex characters, not all zeros), got ${describe(raw)}`);
  }
  return id;
}

function decodeList<T>(v: unknown, path: string, decode: (obj: JsonObject, path: string) => T): T[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new FieldError(`${path}: must be an array, got ${describe(v)}`);
  return v.map((item, i) => decode(expectObject(item, `${path}[${i}]`), `${path}[${i}]`));
}

// ---------------------------------------------------------------------------------------------
// Helpers

/** A field by its lowerCamelCase name, or its original snake_case name; `null` reads as absent (proto3 JSON). */
function get(obj: JsonObject, camel: string): unknown {
  let v = Object.prototype.hasOwnProperty.call(obj, camel) ? obj[camel] : undefined;
  if (v === undefined || v === null) {
    const snake = snakeCase(camel);
    v = snake !== camel && Object.prototype.hasOwnProperty.call(obj, snake) ? obj[snake] : undefined;
  }
  return v === null ? undefined : v;
}

const snakeCache = new Map<string, string>();
function snakeCase(camel: string): string {
  let s = snakeCache.get(camel);
  if (s === undefined) {
    s = camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    snakeCache.set(camel, s);
  }
  return s;
}

function expectObject(v: unknown, path: string): JsonObject {
  if (!isObject(v)) throw new FieldError(`${path}: must be an object, got ${describe(v)}`);
  return v;
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Sets a key without letting `__proto__` reach the prototype. */
function defineValue(target: Record<string, AttributeValue>, key: string, value: AttributeValue): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  return `${typeof v} ${String(v)}`;
}

function invalid(message: string): VigilError {
  return new VigilError('VIGIL_PAYLOAD_INVALID', message);
}
