/**
 * The ingest path's shortcuts give exactly what the general way gives (randomized tests are seeded:
 * see helpers/random.ts):
 * - failure keys come from a cache of first lines: the same keys as computing them every time,
 *   whether the cache is cold, warm or was just emptied;
 * - `compact` copies instead of deleting: the same keys in the same order, with the same values;
 * - the 200 answer with nothing to report is prebuilt: the same status, headers and bytes as the
 *   general answer, in both encodings;
 * - the decoders' short strings come from a table of the strings made last: the same string as
 *   decoding the bytes every time, whatever the table held (repeats, hash collisions, replaced
 *   slots, bytes that are not ASCII, JSON escapes);
 * - a JSON id as SDKs write it is read and checked in one pass: the id the rules give (and the
 *   cursor after it), or a refusal, for ids of any length, case, escapes or stray bytes;
 * - a mark's trace id is the text made last when its bytes are the same: each mark still carries
 *   its own span's trace id, in both encodings, however the ids repeat or nearly repeat;
 * - a protobuf span checked for a mark reads its times as milliseconds without a floating-point
 *   modulo: the same milliseconds as the decimal string gives;
 * - a JSON span checked for a mark reads its times as milliseconds without their decimal strings:
 *   the same milliseconds as the built string gives, or the same refusal;
 * - a checked span reuses its facts' empty attributes and its status: a request of spans that
 *   alternate between carrying failure evidence (or a session) and not decodes to the same records,
 *   skipped counts and sessions as building every span and applying the relevance test;
 * - a checked protobuf KeyValue in the layout SDKs write is verified byte by byte (and a watched
 *   key's value built there): generated and then mutated requests decode (checked, with activity
 *   marks wanted or not) to the same records, marks, counts, messages and refusals with the
 *   shortcut as without it;
 * - bounded maps (the memory store's dedupe ids and state namespaces, the session facts a process
 *   wrote) evict through one iterator kept across evictions: the same entries go, in the same
 *   order, as deleting the first key of a fresh iterator each time.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import fc from 'fast-check';
import { canonicalFailure, failureKeys, failureTexts } from '../src/correlation/failure-keys.ts';
import { WrittenFacts, type CorrelationSettings } from '../src/correlation/ingest.ts';
import { memoryLogger } from '../src/logger.ts';
import type { AgentEvent } from '../src/model/event.ts';
import { hash64 } from '../src/processors/classify/fingerprint3.ts';
import { createOtlpReceiver } from '../src/receivers/otlp/factory.ts';
import type { OtlpReceiver } from '../src/receivers/otlp/factory.ts';
import { compact } from '../src/receivers/otlp/mapping/common.ts';
import { decodeTracesProtobuf, encodeExportResponse } from '../src/receivers/otlp/protobuf.ts';
import { decodeTracesJson } from '../src/receivers/otlp/json.ts';
import { shortAscii } from '../src/receivers/otlp/decoding.ts';
import { FAST_PATHS, nanosMs } from '../src/receivers/otlp/protobuf/common.ts';
import { I64, WireReader } from '../src/receivers/otlp/protobuf/wire.ts';
import { ZERO_ID, VALID_ID, idField, nanosField, nanosMsField } from '../src/receivers/otlp/json/common.ts';
import { JsonReader } from '../src/receivers/otlp/json/reader.ts';
import { decimalNanosToMs, nanosToMs } from '../src/receivers/otlp/normalized.ts';
import { SPAN_MARKER_KEYS, spanMayMatter } from '../src/receivers/otlp/mapping/relevance.ts';
import { spanFacts } from '../src/receivers/otlp/mapping/spans.ts';
import root0214 from 'otlp-transformer-0214/build/src/generated/root.js';
import { BoundedMap, OldestFirst } from '../src/store/bounded-map.ts';
import { checkProperty } from './helpers/random.ts';

/** failureKeys as it was before the cache: every text's canonical form hashed on every call. */
function uncachedKeys(event: AgentEvent): string[] {
  const keys: string[] = [];
  for (const t of failureTexts(event)) {
    const canonical = canonicalFailure(t);
    if (canonical === undefined) continue;
    const key = hash64([canonical]);
    if (!keys.includes(key)) keys.push(key);
    if (keys.length >= 4) break;
  }
  return keys;
}

const POOL = [
  '429 Rate limit reached for gpt-4o-mini',
  'Error: 429 Rate limit reached for gpt-4o-mini\n    at APIError.generate (x.js:1:1)',
  "tool run_python failed (attempt 3): Error: KeyError: 'results'",
  "[retry] attempt 1 failed: KeyError: 'results'",
  'Traceback (most recent call last):\n  File "/srv/agent/tools/run.py", line 48, in execute\nFileNotFoundError: x',
  'Uncaught TypeError [ERR_INVALID_ARG_TYPE]: bad argument',
  '   \n  ',
  'Error: x',
  '\n\n  java.io.IOException: disk full  \n',
];

const failureText = fc.oneof(
  fc.constantFrom(...POOL),
  fc.string({ maxLength: 40 }),
  fc
    .tuple(fc.constantFrom('Error: ', 'KeyError: ', '', '  '), fc.string({ minLength: 1, maxLength: 30 }), fc.constantFrom('', '\nnext line', '\r\n  at x'))
    .map((p) => p.join('')),
  // Lines over the cache's length bound are keyed without being remembered.
  fc
    .tuple(fc.constantFrom('Error: ', ''), fc.integer({ min: 1000, max: 1100 }), fc.string({ maxLength: 5 }))
    .map(([head, n, tail]) => `${head}${'y'.repeat(n)}${tail}`),
);

const failedSpan = fc
  .record({
    exceptionMessage: fc.option(failureText, { nil: undefined }),
    statusMessage: fc.option(failureText, { nil: undefined }),
    stacktrace: fc.option(failureText, { nil: undefined }),
    error: failureText,
  })
  .map(({ exceptionMessage, statusMessage, stacktrace, error }): AgentEvent => ({
    eventId: 't:s',
    kind: 'execution.completed',
    payload: { state: 'error', outcome: { error, output: [] } },
    partition: 'p',
    service: 'svc',
    time: 0,
    traceId: 't',
    source: 'otlp.traces',
    evidence: compact({ exceptionMessage, statusMessage, stacktrace }),
  }));

describe('failure keys through the cache of first lines', () => {
  test('the same keys as computed every time, cold and warm', () => {
    checkProperty(
      fc.property(fc.array(failedSpan, { minLength: 1, maxLength: 8 }), (events) => {
        for (const e of events) {
          const expected = uncachedKeys(e);
          assert.deepEqual(failureKeys(e), expected);
          assert.deepEqual(failureKeys(e), expected);
        }
      }),
      { numRuns: 300 },
    );
  });

  test('the same keys after the cache was emptied for being full', () => {
    const event = (text: string): AgentEvent => ({
      eventId: 't:s',
      kind: 'execution.completed',
      payload: { state: 'error', outcome: { error: text, output: [] } },
      partition: 'p',
      service: 'svc',
      time: 0,
      traceId: 't',
      source: 'otlp.traces',
    });
    const first = POOL.map((t) => failureKeys(event(t)));
    // More distinct lines than the cache holds (4096): it is emptied on the way.
    for (let i = 0; i < 5000; i++) assert.deepEqual(failureKeys(event(`Error: failure number ${i}`)), uncachedKeys(event(`Error: failure number ${i}`)));
    assert.deepEqual(
      POOL.map((t) => failureKeys(event(t))),
      first,
    );
    assert.deepEqual(
      first,
      POOL.map((t) => uncachedKeys(event(t))),
    );
  });
});

describe('compact copies without the undefined keys', () => {
  /** The former way: deleting the undefined keys in place. */
  const deleting = (o: Record<string, unknown>) => {
    for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
    return o;
  };
  test('the same keys in the same order, the same values, and the input untouched', () => {
    const value = fc.oneof(fc.constant(undefined), fc.constant(null), fc.string({ maxLength: 5 }), fc.integer(), fc.constant({ nested: undefined }));
    checkProperty(
      fc.property(fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), value, { maxKeys: 12, noNullPrototype: true }), (o) => {
        const before = { ...o };
        const copy = compact(o);
        assert.deepEqual(o, before);
        const expected = deleting({ ...o });
        assert.deepEqual(Object.keys(copy), Object.keys(expected));
        assert.deepEqual(copy, expected);
        assert.equal(JSON.stringify(copy), JSON.stringify(expected));
      }),
      { numRuns: 300 },
    );
  });

  test('an own `__proto__` key stays an own key (it never reaches the prototype)', () => {
    const o = JSON.parse('{"a":1,"__proto__":{"polluted":true},"b":"x"}') as Record<string, unknown>;
    const copy = compact({ ...o, c: undefined });
    assert.deepEqual(Object.keys(copy), ['a', '__proto__', 'b']);
    assert.equal(Object.getPrototypeOf(copy), Object.prototype);
    assert.equal(JSON.stringify(copy), '{"a":1,"__proto__":{"polluted":true},"b":"x"}');
  });
});

describe('the prebuilt 200 answer', () => {
  let receiver: OtlpReceiver;
  after(() => receiver?.shutdown());

  const TRACES = {
    resourceSpans: [
      { scopeSpans: [{ spans: [{ traceId: '5b8efff798038103d269b633813fc60c', spanId: '0000000000000001', name: 'chat gpt', status: { code: 1 } }] }] },
    ],
  };
  const WITH_BAD_SPAN = {
    resourceSpans: [
      {
        scopeSpans: [
          { spans: [...TRACES.resourceSpans[0]!.scopeSpans[0]!.spans, { traceId: '5b8efff798038103d269b633813fc60c', spanId: '0000000000000003', name: 5 }] },
        ],
      },
    ],
  };

  test('is what the general answer writes: empty protobuf response, `{}` in JSON; a partial success still says what was rejected', async () => {
    receiver = createOtlpReceiver(
      { id: 'otlp', logger: memoryLogger(), consumers: { traces: async (batch) => ({ appended: batch.length, duplicates: 0 }) } },
      { protocols: { http: { endpoint: '127.0.0.1:0' } }, max_request_body_size: 1 << 20 },
    );
    await receiver.start();
    const url = `http://127.0.0.1:${receiver.address()!.port}/v1/traces`;

    const json = await fetch(url, { method: 'POST', body: JSON.stringify(TRACES), headers: { 'content-type': 'application/json' } });
    assert.equal(json.status, 200);
    assert.equal(json.headers.get('content-type'), 'application/json');
    assert.equal(json.headers.get('content-length'), String(Buffer.byteLength(JSON.stringify({}))));
    assert.equal(await json.text(), JSON.stringify({}));

    const root = (await import('otlp-transformer-0214/build/src/generated/root.js')).default as any;
    const request = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
    const body = request
      .encode(
        request.fromObject({
          resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: Buffer.alloc(16, 1), spanId: Buffer.alloc(8, 2), name: 'chat gpt', status: { code: 1 } }] }] }],
        }),
      )
      .finish();
    const pb = await fetch(url, { method: 'POST', body: new Uint8Array(body), headers: { 'content-type': 'application/x-protobuf' } });
    assert.equal(pb.status, 200);
    assert.equal(pb.headers.get('content-type'), 'application/x-protobuf');
    assert.equal(pb.headers.get('content-length'), String(encodeExportResponse(0, '').length));
    assert.deepEqual(Buffer.from(await pb.arrayBuffer()), encodeExportResponse(0, ''));

    const partial = await fetch(url, { method: 'POST', body: JSON.stringify(WITH_BAD_SPAN), headers: { 'content-type': 'application/json' } });
    assert.equal(partial.status, 200);
    const answer = (await partial.json()) as { partialSuccess?: { rejectedSpans?: string; errorMessage?: string } };
    assert.equal(answer.partialSuccess?.rejectedSpans, '1');
    assert.match(answer.partialSuccess?.errorMessage ?? '', /name/);
  });
});

describe('short protobuf strings through the table of strings made last', () => {
  // A small alphabet makes repeats, equal lengths and slot collisions common; 0x80 and 0xc3 are not ASCII.
  const bytes = fc
    .uint8Array({ minLength: 0, maxLength: 48, size: 'max' })
    .map((b) => Buffer.from(b.map((x) => [0x61, 0x62, 0x2e, 0x5f, 0x31, 0x80, 0xc3][x % 7]!)));
  test('the same string as the bytes read every time (undefined for bytes that are not ASCII)', () => {
    checkProperty(
      fc.property(fc.array(bytes, { minLength: 1, maxLength: 200, size: 'max' }), (list) => {
        // Laid out in one buffer at odd offsets, as fields of a request are.
        const buf = Buffer.concat(list.flatMap((b) => [Buffer.from([0x0a]), b]));
        let at = 0;
        for (const b of list) {
          at += 1;
          const expected = b.every((x) => x < 0x80) ? b.toString('utf8') : undefined;
          assert.equal(shortAscii(buf, at, at + b.length), expected);
          assert.equal(shortAscii(buf, at, at + b.length), expected);
          at += b.length;
        }
      }),
      { numRuns: 300 },
    );
  });

  test('more distinct strings than the table holds: each still read as its bytes', () => {
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 5000; i++) {
        const text = `gen_ai.key.${i}`;
        const buf = Buffer.from(`\u0000${text}`);
        assert.equal(shortAscii(buf, 1, buf.length), text);
      }
    }
  });
});

describe('JSON strings through the table of strings made last', () => {
  // A small alphabet makes repeats and slot collisions common; é and 😀 are not ASCII, quote, backslash and newline are escaped.
  const text = fc.oneof(
    fc.array(fc.constantFrom('a', 'b', '.', '_', '1', 'é', '😀', '"', '\\', '\n'), { maxLength: 60 }).map((cs) => cs.join('')),
    fc.string({ maxLength: 60 }),
  );
  test('the same text as JSON.parse reads, every time (short ASCII, longer, not ASCII, escaped)', () => {
    checkProperty(
      fc.property(fc.array(text, { minLength: 1, maxLength: 100 }), (list) => {
        const body = Buffer.from(JSON.stringify(list));
        for (let round = 0; round < 2; round++) {
          const r = new JsonReader(body);
          r.openArray();
          for (const expected of list) {
            assert.ok(r.nextItem());
            r.string();
            assert.equal(r.stringText(), expected);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('JSON ids read and checked in one pass', () => {
  const hex = (n: number) => fc.array(fc.constantFrom(...'0123456789abcdefABCDEF'), { minLength: n, maxLength: n }).map((cs) => cs.join(''));
  const value = fc.oneof(
    hex(32).map((h) => JSON.stringify(h)),
    hex(16).map((h) => JSON.stringify(h)),
    fc.constantFrom('"' + '0'.repeat(32) + '"', '"' + '0'.repeat(16) + '"', '""', 'null', '5', '{}'),
    fc
      .nat({ max: 40 })
      .chain((n) => hex(n))
      .map((h) => JSON.stringify(h)),
    // A byte that is not a hex digit, anywhere (a backslash among them); a quote there ends the string, as the shorter ids above do.
    fc.tuple(hex(32), fc.nat({ max: 31 }), fc.constantFrom('g', ' ', '\\', 'é')).map(([h, at, c]) => `"${h.slice(0, at)}${c}${h.slice(at + 1)}"`),
    // Escaped digits, and a body that ends inside the string.
    hex(32).map((h) => `"\\u00${h.charCodeAt(0).toString(16)}${h.slice(1)}"`),
    fc.tuple(hex(32), fc.nat({ max: 33 })).map(([h, cut]) => `"${h}"`.slice(0, cut + 1)),
  );
  /** The id by the OTLP/JSON rules, independently: 2n hex digits (any case), '' and all zeros invalid. */
  const expected = (json: string, bytes: number, build: boolean): string | undefined => {
    let v: unknown;
    try {
      v = JSON.parse(json);
    } catch {
      return 'refused';
    }
    if (v === null) return undefined;
    if (typeof v !== 'string' || (v !== '' && !new RegExp(`^[0-9a-fA-F]{${bytes * 2}}$`).test(v))) return 'refused';
    if (v === '') return '';
    if (/^0+$/.test(v)) return ZERO_ID;
    return build ? v.toLowerCase() : VALID_ID;
  };
  test('the id the rules give, the cursor after it, or a refusal', () => {
    checkProperty(
      fc.property(value, fc.constantFrom(16, 8), fc.boolean(), (json, bytes, build) => {
        const r = new JsonReader(Buffer.from(json));
        let got: string | undefined;
        try {
          got = idField(r, 'traceId', bytes, build);
        } catch {
          got = 'refused';
        }
        assert.equal(got, expected(json, bytes, build));
        if (got !== 'refused') assert.equal(r.pos, Buffer.byteLength(json));
      }),
      { numRuns: 3000 },
    );
  });
});

describe('JSON span times read as milliseconds for a mark', () => {
  const value = fc.oneof(
    fc.bigInt({ min: 0n, max: (1n << 64n) + 10n }).map((n) => JSON.stringify(String(n))),
    // 20 digits: below 2^64 or not.
    fc.bigInt({ min: 10n ** 19n, max: 10n ** 20n - 1n }).map((n) => JSON.stringify(String(n))),
    fc.bigInt({ min: (1n << 64n) - 5n, max: (1n << 64n) + 5n }).map((n) => JSON.stringify(String(n))),
    fc.nat({ max: 9_999_999 }).map((n) => JSON.stringify(String(n))),
    fc.stringMatching(/^[0-9]{1,22}$/).map((d) => JSON.stringify(d)),
    fc.stringMatching(/^[0-9]{1,6}$/).map((d) => `"${[...d].map((c) => `\\u003${c}`).join('')}"`),
    fc.oneof(fc.nat(), fc.double(), fc.integer({ min: -5, max: 5 })).map((n) => JSON.stringify(n)),
    fc.constantFrom('null', 'true', '"abc"', '""', '"1.5"', '"-1"', '[]', '{}', '"\\n"'),
  );
  /** What reading the value gives: milliseconds, or the error's message; and where the cursor ends. */
  const outcome = (body: Buffer, read: (r: JsonReader) => number | undefined) => {
    const r = new JsonReader(body);
    try {
      return { ms: read(r), pos: r.pos };
    } catch (err) {
      return { error: (err as Error).message, pos: r.pos };
    }
  };
  /** The milliseconds of the value by the OTLP rules, independently: digits (or an integer number) up to 2^64, null unset. */
  const expected = (v: unknown): number | undefined | 'refused' => {
    if (v === null) return undefined;
    let n: bigint | undefined;
    if (typeof v === 'string' && /^\d{1,20}$/.test(v) && BigInt(v) < 1n << 64n) n = BigInt(v);
    if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 2 ** 64) n = BigInt(v);
    return n === undefined ? 'refused' : nanosToMs(n);
  };
  test('the milliseconds of the built decimal string, or the same refusal', () => {
    checkProperty(
      fc.property(value, (json) => {
        const body = Buffer.from(json);
        const got = outcome(body, (r) => nanosMsField(r, 'startTimeUnixNano'));
        assert.deepEqual(
          got,
          outcome(body, (r) => decimalNanosToMs(nanosField(r, 'startTimeUnixNano', true))),
        );
        assert.deepEqual('error' in got ? 'refused' : got.ms, expected(JSON.parse(json)));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('trace ids of marks through the one made last', () => {
  const TraceRequest = (root0214 as any).opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
  // Few ids that differ in their first or last byte only, so that repeats and near misses are common.
  const traceId = fc.tuple(fc.constantFrom(0x01, 0xfe), fc.constantFrom(0x00, 0x0a, 0xff), fc.boolean()).map(([first, last, upper]) => {
    const bytes = Buffer.alloc(16, 0xab);
    bytes[0] = first;
    bytes[15] = last;
    return { bytes, upper };
  });
  test('each mark carries the trace id of its own span, in both encodings', () => {
    checkProperty(
      fc.property(fc.array(traceId, { minLength: 1, maxLength: 20 }), (ids) => {
        const spans = ids.map(({ bytes }, i) => ({ traceId: bytes, spanId: Buffer.alloc(8, i + 1), name: 'chat gpt-4o', status: { code: 1 } }));
        const expected = ids.map(({ bytes }) => bytes.toString('hex'));
        const body = Buffer.from(TraceRequest.encode(TraceRequest.fromObject({ resourceSpans: [{ scopeSpans: [{ spans }] }] })).finish());
        const marksOf = (d: ReturnType<typeof decodeTracesJson>) => d.groups.flatMap((g) => g.marks ?? []).map((m) => m.traceId);
        assert.deepEqual(marksOf(decodeTracesProtobuf(body, { skipIrrelevant: true, markers: true })), expected);
        // JSON: hex in either case (uppercase read as lowercase).
        const json = JSON.stringify({
          resourceSpans: [
            {
              scopeSpans: [
                {
                  spans: spans.map((s, i) => {
                    const hex = s.traceId.toString('hex');
                    return { ...s, traceId: ids[i]!.upper ? hex.toUpperCase() : hex, spanId: s.spanId.toString('hex') };
                  }),
                },
              ],
            },
          ],
        });
        assert.deepEqual(marksOf(decodeTracesJson(json, { skipIrrelevant: true, markers: true })), expected);
      }),
      { numRuns: 300 },
    );
  });
});

describe('protobuf span times read as milliseconds for a mark', () => {
  // Any 64-bit value, and values at and around multiples of 10^6 (where a rounded quotient is one too high).
  const value = fc.oneof(
    fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
    fc.tuple(fc.bigInt({ min: 0n, max: ((1n << 64n) - 1n) / 1_000_000n }), fc.integer({ min: -2, max: 2 })).map(([q, d]) => {
      const v = q * 1_000_000n + BigInt(d);
      return v < 0n ? 0n : v > (1n << 64n) - 1n ? (1n << 64n) - 1n : v;
    }),
  );
  test('the milliseconds decimalNanosToMs gives for the decimal string', () => {
    checkProperty(
      fc.property(value, (v) => {
        const buf = Buffer.alloc(8);
        buf.writeBigUInt64LE(v);
        const r = new WireReader(buf);
        r.wireType = I64;
        assert.equal(nanosMs(r, 8, 'startTimeUnixNano'), decimalNanosToMs(String(v)));
      }),
      { numRuns: 5000 },
    );
  });
});

describe('checked spans reuse their empty facts', () => {
  const TraceRequest = (root0214 as any).opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
  const str = (key: string, stringValue: string) => ({ key, value: { stringValue } });
  /** A span of trace `t`: with failure evidence of one of the kinds, a session, or neither. */
  const span = fc.record({
    trace: fc.integer({ min: 1, max: 3 }),
    evidence: fc.constantFrom('none', 'error.type', 'status', 'exception', 'session', 'error.type+session'),
    other: fc.constantFrom('gen_ai.operation.name', 'server.address', 'error', 'session'),
  });
  test('the same records, skipped count and sessions as building every span and testing it', () => {
    checkProperty(
      fc.property(fc.array(span, { minLength: 1, maxLength: 24 }), (specs) => {
        const spans = specs.map((s, i) => ({
          traceId: Buffer.alloc(16, s.trace),
          spanId: Buffer.alloc(8, i + 1),
          name: `span ${i}`,
          startTimeUnixNano: String(1_700_000_000_000_000_000n + BigInt(i)),
          endTimeUnixNano: String(1_700_000_000_000_000_000n + BigInt(i) + 10n),
          attributes: [
            str(s.other, 'x'),
            ...(s.evidence.includes('error.type') ? [str('error.type', 'TimeoutError')] : []),
            ...(s.evidence.includes('session') ? [str('session.id', `sess-${s.trace}`)] : []),
          ],
          events: s.evidence === 'exception' ? [{ name: 'exception', attributes: [str('exception.message', 'boom')] }] : [],
          status: s.evidence === 'status' ? { code: 2, message: 'failed' } : { code: 1 },
        }));
        const body = Buffer.from(
          TraceRequest.encode(TraceRequest.fromObject({ resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ spans }] }] })).finish(),
        );
        const built = decodeTracesProtobuf(body);
        const checked = decodeTracesProtobuf(body, { skipIrrelevant: true });
        const all = built.groups.flatMap((g) => g.spans);
        const kept = all.filter((s) => spanMayMatter(spanFacts(s)));
        assert.deepEqual(
          checked.groups.flatMap((g) => g.spans),
          kept,
        );
        assert.equal(checked.skipped, all.length - kept.length);
        // Every session a skipped span names is handed back for its trace (the first one of the trace).
        const expected = new Map<string, string>();
        for (const s of all) {
          const session = s.attributes['session.id'];
          if (!kept.includes(s) && typeof session === 'string' && !expected.has(s.traceId)) expected.set(s.traceId, session);
        }
        assert.deepEqual(checked.sessions, expected);
      }),
      { numRuns: 300 },
    );
  });
});

describe('evicting the oldest through one iterator kept across evictions', () => {
  const op = fc.oneof(
    { weight: 5, arbitrary: fc.tuple(fc.constant('set' as const), fc.integer({ min: 0, max: 30 })) },
    { weight: 2, arbitrary: fc.tuple(fc.constant('delete' as const), fc.integer({ min: 0, max: 30 })) },
    { weight: 3, arbitrary: fc.tuple(fc.constant('evict' as const), fc.constant(0)) },
  );
  test('the same keys deleted, in the same order, as the first key of a fresh iterator every time', () => {
    checkProperty(
      fc.property(fc.array(op, { maxLength: 400 }), (ops) => {
        const map = new Map<number, number>();
        const oldest = new OldestFirst(map);
        const model = new Map<number, number>();
        ops.forEach(([what, key], i) => {
          if (what === 'set') {
            // Re-inserting moves a key to the newest end, as BoundedMap and the stores do.
            map.delete(key);
            map.set(key, i);
            model.delete(key);
            model.set(key, i);
          } else if (what === 'delete') {
            map.delete(key);
            model.delete(key);
          } else {
            const first = model.keys().next();
            if (!first.done) model.delete(first.value);
            assert.equal(oldest.deleteOldest(), first.done ? undefined : first.value);
          }
          assert.deepEqual([...map], [...model]);
        });
      }),
      { numRuns: 500 },
    );
  });

  test('a BoundedMap keeps the newest `max` insertions', () => {
    const m = new BoundedMap<string, number>(100);
    for (let i = 0; i < 5000; i++) {
      m.set(`k${i % 700}`, i);
      if (i % 3 === 0) m.set(`k${(i * 7) % 700}`, i);
    }
    assert.equal(m.size, 100);
    // The 100 keys set last, by a model of the same insertions.
    const model = new Map<string, number>();
    for (let i = 0; i < 5000; i++) {
      model.delete(`k${i % 700}`);
      model.set(`k${i % 700}`, i);
      if (i % 3 === 0) {
        model.delete(`k${(i * 7) % 700}`);
        model.set(`k${(i * 7) % 700}`, i);
      }
    }
    for (const [k, v] of [...model].slice(-100)) assert.equal(m.get(k), v);
  });
});

describe("WrittenFacts: a trace's session written once, in two generations", () => {
  const settings = { traceTtl: 60_000, maxTraces: 1000 } as unknown as CorrelationSettings;
  const facts = (...ids: string[]) => new Map(ids.map((id) => [id, `s-${id}`]));
  const noted = (wf: WrittenFacts, ids: string[], now: number) => wf.note(wf.writes(facts(...ids), now), now);

  test('a fact noted is not written again until half its TTL has passed, or its session changed', () => {
    const wf = new WrittenFacts(settings, 100);
    noted(wf, ['a', 'b'], 0);
    assert.deepEqual(
      wf.writes(facts('a', 'b', 'c'), 29_999).map((w) => w.key),
      ['c'],
    );
    assert.deepEqual(
      wf.writes(facts('a'), 30_000).map((w) => w.key),
      ['a'],
    );
    assert.deepEqual(
      wf.writes(new Map([['a', 'other']]), 1).map((w) => [w.key, w.value]),
      [['a', 'other']],
    );
  });

  test('bounded by max: the older generation is forgotten whole, the newer half is kept', () => {
    const wf = new WrittenFacts(settings, 100);
    const ids = Array.from({ length: 1000 }, (_, i) => `t${i}`);
    for (let i = 0; i < ids.length; i += 7) noted(wf, ids.slice(i, i + 7), 1);
    assert.ok(wf.size <= 100, `holds ${wf.size}`);
    // The newest 50 (a full generation at least) are still known; the first ones are not.
    assert.deepEqual(wf.writes(facts(...ids.slice(-50)), 2), []);
    assert.equal(wf.writes(facts(...ids.slice(0, 50)), 2).length, 50);
  });

  test('a fact noted again in the newer generation outlives its older copy', () => {
    const wf = new WrittenFacts(settings, 4);
    noted(wf, ['a'], 0); // newer {a}
    noted(wf, ['b'], 0); // full (2): older {a, b}, newer {}
    wf.note(wf.writes(facts('a'), 40_000), 40_000); // half the TTL passed: a is written again, newer {a}
    noted(wf, ['c'], 40_000); // full: older {a, c}; b is forgotten
    assert.deepEqual(
      wf.writes(facts('a', 'b', 'c'), 40_001).map((w) => w.key),
      ['b'],
    );
  });
});

describe('checked KeyValues in the common layout', () => {
  const TraceRequest = (root0214 as any).opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
  const key = fc.oneof(
    fc.constantFrom('gen_ai.operation.name', 'session.id', 'error.type', 'gen_ai.conversation.id', 'server.port', '', 'k'),
    // The keys a checked span reads when activity marks are wanted (their values are built into the facts).
    fc.constantFrom(...SPAN_MARKER_KEYS),
    fc.string({ maxLength: 140, size: 'max' }),
    fc.string({ unit: 'grapheme', maxLength: 8 }),
  );
  const value = fc.oneof(
    fc.string({ maxLength: 140, size: 'max' }).map((stringValue) => ({ stringValue })),
    fc.string({ unit: 'grapheme', maxLength: 8 }).map((stringValue) => ({ stringValue })),
    fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n }).map((v) => ({ intValue: String(v) })),
    fc.integer({ min: 0, max: 300 }).map((v) => ({ intValue: v })),
    fc.boolean().map((boolValue) => ({ boolValue })),
    fc.double({ noNaN: true }).map((doubleValue) => ({ doubleValue })),
    fc.constant({}),
    fc.constant({ arrayValue: { values: [{ stringValue: 'x' }] } }),
  );
  const span = fc.record({
    attributes: fc.array(fc.record({ key, value }), { maxLength: 6 }),
    failed: fc.boolean(),
    trace: fc.integer({ min: 1, max: 3 }),
    // A model request, a tool call and an agent turn are kept as marks when marks are wanted.
    name: fc.constantFrom('chat gpt-4o', 'execute_tool read_file', 'invoke_agent coder', 'retrieval docs'),
  });
  /** The decode, or its refusal, as comparable data. */
  const outcome = (body: Buffer, fast: boolean, markers: boolean) => {
    FAST_PATHS.checkedKeyValue = fast;
    try {
      const d = decodeTracesProtobuf(body, { skipIrrelevant: true, markers });
      return { groups: d.groups, stats: d.stats, skipped: d.skipped, sessions: [...d.sessions] };
    } catch (err) {
      return { refused: (err as Error).message };
    } finally {
      FAST_PATHS.checkedKeyValue = true;
    }
  };
  test('the same decode with the shortcut as without it, on generated and mutated requests', () => {
    checkProperty(
      fc.property(
        fc.array(span, { minLength: 1, maxLength: 6 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
        fc.boolean(),
        (specs, edits, markers) => {
          const spans = specs.map((s, i) => ({
            traceId: Buffer.alloc(16, s.trace),
            spanId: Buffer.alloc(8, i + 1),
            name: s.name,
            attributes: s.attributes,
            status: s.failed ? { code: 2, message: 'failed' } : { code: 1 },
          }));
          const body = Buffer.from(TraceRequest.encode(TraceRequest.fromObject({ resourceSpans: [{ scopeSpans: [{ spans }] }] })).finish());
          assert.deepEqual(outcome(body, true, markers), outcome(body, false, markers));
          // Mutated bytes: layouts near the common one, lengths and tags that are wrong.
          const mutated = Buffer.from(body);
          for (const [at, byte] of edits) mutated[at % mutated.length] = byte;
          assert.deepEqual(outcome(mutated, true, markers), outcome(mutated, false, markers));
        },
      ),
      { numRuns: 1000 },
    );
  });
});
