/**
 * A baseline for the decoder table of `npm run bench:ingest`: protobufjs's decoded
 * ExportTraceServiceRequest (the 0.214.0 otlp-transformer's generated root, `TraceRequest.decode`)
 * converted to the normalized records vigil's own decoder builds (`decodeTracesProtobuf(pb).groups`:
 * one NormalizedTraces per (resource, scope) pair, ids as lowercase hex, AnyValues flattened to
 * plain JSON values, times as nanosecond strings and milliseconds). "protobufjs decode" alone
 * compares vigil's build with a decoder that makes something else (Long times, Buffer ids,
 * KeyValue arrays); decode + this conversion makes the same records, so the two compare.
 *
 * Written from the record types (src/model/otlp.ts) and by comparing outputs, not from vigil's
 * decoder: it imports only types, and test/bench-protobufjs-normalize.test.ts checks it gives what
 * `decodeTracesProtobuf` gives on the bench payloads, the official OTLP example and a request with
 * every AnyValue kind.
 *
 * For valid input only. It validates nothing and bounds nothing — no rejection of a span with a
 * missing, short or all-zero id or a negative enum, no UTF-8 check (protobufjs replaces bad bytes),
 * no truncation of long strings (MAX_STRING_BYTES), no attribute cap (MAX_ATTRIBUTES), no nesting
 * cap (MAX_VALUE_DEPTH), no DecodeStats — and protobufjs itself neither merges a message field
 * given twice nor keeps only the last member of a oneof. So its cost is a lower bound for
 * "protobufjs behind vigil's validation", which would have to add those checks.
 *
 * What vigil keeps, and so what this makes: a span's flags, dropped counts and schema URLs are
 * not kept, nor a link's trace state and flags; a missing resource or scope is empty; an unset
 * time is '0' with undefined milliseconds; a missing or all-zero parent span id is undefined.
 */
import type { AttributeValue, Attributes, NormalizedScope, NormalizedSpan, NormalizedSpanEvent, NormalizedSpanLink, NormalizedStatus } from '../src/model/otlp.ts';
import type { NormalizedTraces } from '../src/receivers/otlp/normalized.ts';

/** A 64-bit value as protobufjs gives it with `long` installed (a number without it). */
interface PbLong {
  low: number;
  high: number;
  unsigned: boolean;
}
type Pb64 = PbLong | number;
type PbBytes = Uint8Array;

/** protobufjs leaves unset fields null (its generated prototypes' defaults) and repeated ones []. */
interface PbAnyValue {
  stringValue?: string | null;
  boolValue?: boolean | null;
  intValue?: Pb64 | null;
  doubleValue?: number | null;
  arrayValue?: { values?: PbAnyValue[] | null } | null;
  kvlistValue?: { values?: PbKeyValue[] | null } | null;
  bytesValue?: PbBytes | null;
}
interface PbKeyValue {
  key?: string | null;
  value?: PbAnyValue | null;
}
interface PbEvent {
  timeUnixNano?: Pb64 | null;
  name?: string | null;
  attributes?: PbKeyValue[] | null;
}
interface PbLink {
  traceId?: PbBytes | null;
  spanId?: PbBytes | null;
  attributes?: PbKeyValue[] | null;
}
interface PbSpan {
  traceId?: PbBytes | null;
  spanId?: PbBytes | null;
  traceState?: string | null;
  parentSpanId?: PbBytes | null;
  name?: string | null;
  kind?: number | null;
  startTimeUnixNano?: Pb64 | null;
  endTimeUnixNano?: Pb64 | null;
  attributes?: PbKeyValue[] | null;
  events?: PbEvent[] | null;
  links?: PbLink[] | null;
  status?: { code?: number | null; message?: string | null } | null;
}
export interface PbTraceRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: PbKeyValue[] | null } | null;
    scopeSpans?: Array<{
      scope?: { name?: string | null; version?: string | null; attributes?: PbKeyValue[] | null } | null;
      spans?: PbSpan[] | null;
    }> | null;
  }> | null;
}

/** The normalized records of a protobufjs-decoded ExportTraceServiceRequest (valid input; see above). */
export function protobufjsToNormalized(request: PbTraceRequest): NormalizedTraces[] {
  const groups: NormalizedTraces[] = [];
  const resourceSpans = request.resourceSpans ?? EMPTY;
  for (let r = 0; r < resourceSpans.length; r++) {
    const rs = resourceSpans[r]!;
    const scopeSpans = rs.scopeSpans ?? EMPTY;
    if (scopeSpans.length === 0) continue;
    // One attributes object per resource, shared by its scopes' groups (as vigil's decoder shares it).
    const resource = attributesOf(rs.resource?.attributes);
    for (let s = 0; s < scopeSpans.length; s++) {
      const ss = scopeSpans[s]!;
      const sc = ss.scope;
      const scope: NormalizedScope = { name: sc?.name ?? '', version: sc?.version ?? '', attributes: attributesOf(sc?.attributes) };
      const pbSpans = ss.spans ?? EMPTY;
      const spans: NormalizedSpan[] = new Array(pbSpans.length);
      for (let i = 0; i < pbSpans.length; i++) spans[i] = spanOf(pbSpans[i]!);
      groups.push({ resource, scope, spans });
    }
  }
  return groups;
}

const EMPTY: never[] = [];

function spanOf(s: PbSpan): NormalizedSpan {
  const start = nanosString(s.startTimeUnixNano);
  const startMs = lastMs;
  const end = nanosString(s.endTimeUnixNano);
  const endMs = lastMs;
  const pbEvents = s.events ?? EMPTY;
  const events: NormalizedSpanEvent[] = new Array(pbEvents.length);
  for (let i = 0; i < pbEvents.length; i++) {
    const e = pbEvents[i]!;
    const time = nanosString(e.timeUnixNano);
    events[i] = { name: e.name ?? '', timeUnixNano: time, timeMs: lastMs, attributes: attributesOf(e.attributes) };
  }
  const pbLinks = s.links ?? EMPTY;
  const links: NormalizedSpanLink[] = new Array(pbLinks.length);
  for (let i = 0; i < pbLinks.length; i++) {
    const l = pbLinks[i]!;
    links[i] = { traceId: hexId(l.traceId)!, spanId: hexId(l.spanId)!, attributes: attributesOf(l.attributes) };
  }
  const st = s.status;
  const status: NormalizedStatus = { code: st?.code ?? 0, message: st?.message ?? '' };
  return {
    traceId: hexId(s.traceId)!,
    spanId: hexId(s.spanId)!,
    parentSpanId: hexId(s.parentSpanId),
    traceState: s.traceState ?? '',
    name: s.name ?? '',
    kind: s.kind ?? 0,
    startTimeUnixNano: start,
    startTimeMs: startMs,
    endTimeUnixNano: end,
    endTimeMs: endMs,
    attributes: attributesOf(s.attributes),
    events,
    links,
    status,
  };
}

/** The bytes as a Buffer over the same memory (protobufjs gives a Buffer under Node.js, a Uint8Array elsewhere). */
function asBuffer(b: PbBytes): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

/** Lowercase hex; undefined when unset, empty or all zeros (OTLP's invalid id). */
function hexId(b: PbBytes | null | undefined): string | undefined {
  if (b == null || b.length === 0) return undefined;
  let i = 0;
  while (i < b.length && b[i] === 0) i++;
  if (i === b.length) return undefined;
  return asBuffer(b).toString('hex');
}

// ---------------------------------------------------------------------------------------------
// 64-bit values

/** The high and low unsigned halves of a fixed64 (protobufjs gives it as an unsigned Long; a number without `long`). */
function high(v: Pb64): number {
  return typeof v === 'number' ? Math.floor(v / 0x100000000) : v.high >>> 0;
}
function low(v: Pb64): number {
  return typeof v === 'number' ? v % 0x100000000 : v.low >>> 0;
}

/** What the last nanosString() call read, in milliseconds: undefined when unset or 0. */
let lastMs: number | undefined;

/**
 * A fixed64 time in nanoseconds as its decimal string ('0' when unset), and in milliseconds into
 * `lastMs`: its whole milliseconds q plus the remaining nanoseconds r / 10⁶, both exact. With
 * 2³² = 4294·10⁶ + 967296, hi·2³² + lo = 10⁶·(4294·hi) + (967296·hi + lo): the second part stays
 * below 2⁵³ and its quotient by 10⁶ below 2³², where doubles are finer than 10⁻⁶, so the floor is
 * exact. A time since 1970 in nanoseconds is far beyond 2⁵³, so the string is made from q and r
 * rather than from one double (or a BigInt, three times slower).
 */
function nanosString(v: Pb64 | null | undefined): string {
  if (v == null) {
    lastMs = undefined;
    return '0';
  }
  const hi = high(v);
  const lo = low(v);
  const rest = hi * 967296 + lo;
  const whole = Math.floor(rest / 1e6);
  const q = hi * 4294 + whole;
  const r = rest - whole * 1e6;
  lastMs = q === 0 && r === 0 ? undefined : q + r / 1e6;
  if (q === 0) return String(r);
  // Digits of small integers (V8's fast path), not of q (up to 2⁴⁵): q = 10⁷·a + b.
  const a = Math.floor(q / 1e7);
  const b = q - a * 1e7;
  return (a === 0 ? String(b) : String(a) + String(b + 1e7).slice(1)) + String(r + 1e6).slice(1);
}

/** An int64 AnyValue: a number when it is a safe integer, else its decimal string. */
function int64Of(v: Pb64): number | string {
  if (typeof v === 'number') return v;
  const hi = v.high | 0;
  const lo = v.low >>> 0;
  // Within ±2^53 the double hi·2³² + lo is exact; Number.isSafeInteger excludes −2^53 itself.
  if (hi >= -0x200000 && hi < 0x200000) {
    const n = hi * 0x100000000 + lo;
    if (Number.isSafeInteger(n)) return n;
  }
  return BigInt.asIntN(64, (BigInt(hi >>> 0) << 32n) | BigInt(lo)).toString();
}

// ---------------------------------------------------------------------------------------------
// Attributes and AnyValue

function attributesOf(list: PbKeyValue[] | null | undefined): Attributes {
  const out: Attributes = {};
  if (list == null) return out;
  for (let i = 0; i < list.length; i++) {
    const kv = list[i]!;
    setKey(out, kv.key ?? '', valueOf(kv.value));
  }
  return out;
}

/** A key set as an own property, `__proto__` included (plain assignment would set the prototype). */
function setKey(out: { [key: string]: AttributeValue }, key: string, value: AttributeValue): void {
  if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  else out[key] = value;
}

/** An AnyValue flattened: bytes as base64, int64 beyond 2^53 as a decimal string, a non-finite double as its name, none as null. */
function valueOf(v: PbAnyValue | null | undefined): AttributeValue {
  if (v == null) return null;
  if (v.stringValue != null) return v.stringValue;
  if (v.intValue != null) return int64Of(v.intValue);
  if (v.boolValue != null) return v.boolValue;
  if (v.doubleValue != null) return Number.isFinite(v.doubleValue) ? v.doubleValue : String(v.doubleValue);
  if (v.arrayValue != null) {
    const values = v.arrayValue.values ?? EMPTY;
    const out: AttributeValue[] = new Array(values.length);
    for (let i = 0; i < values.length; i++) out[i] = valueOf(values[i]);
    return out;
  }
  if (v.kvlistValue != null) return attributesOf(v.kvlistValue.values);
  if (v.bytesValue != null) {
    return asBuffer(v.bytesValue).toString('base64');
  }
  return null;
}
