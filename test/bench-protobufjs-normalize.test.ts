/**
 * The decoder table's "protobufjs + normalize" baseline (bench/protobufjs-normalize.ts) makes
 * exactly what vigil's own OTLP/protobuf decoder builds: the same normalized records, field for
 * field, in the same order — on the bench payloads, on the official OTLP trace example and on a
 * request with every AnyValue kind and the span fields the bench payloads leave out.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import root0214 from 'otlp-transformer-0214/build/src/generated/root.js';
import { buildPayloads } from '../bench/otlp-payloads.ts';
import { protobufjsToNormalized } from '../bench/protobufjs-normalize.ts';
import { decodeTracesProtobuf } from '../src/receivers/otlp/protobuf.ts';

const TraceRequest = (root0214 as any).opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
const hex = (h: string) => Buffer.from(h, 'hex');

/** vigil's build of the request, which must be clean (nothing rejected, nothing bounded) for the comparison to hold. */
function vigilBuild(pb: Uint8Array) {
  const decoded = decodeTracesProtobuf(pb);
  assert.deepEqual(
    { ...decoded.stats, messages: decoded.stats.messages.length },
    { rejected: 0, droppedAttributes: 0, truncatedValues: 0, truncatedDepth: 0, messages: 0, omittedMessages: 0 },
    decoded.stats.messages.join('\n'),
  );
  assert.equal(decoded.skipped, 0);
  return decoded.groups;
}

function assertSame(pb: Uint8Array, what: string): void {
  const expected = vigilBuild(pb);
  const actual = protobufjsToNormalized(TraceRequest.decode(pb));
  assert.deepStrictEqual(actual, expected, what);
}

describe('bench: protobufjs + normalize gives what vigil builds', () => {
  test('the bench payloads, at several sizes', () => {
    for (const size of [1, 16, 128, 512, 2048]) {
      const pb = Buffer.from(buildPayloads(size).protobuf.template);
      assertSame(pb, `${size} spans`);
      assert.equal(vigilBuild(pb)[0]!.spans.length, size);
    }
  });

  test('the official OTLP/JSON trace example, encoded as protobuf by the same protobufjs root', () => {
    const json = JSON.parse(readFileSync(path.resolve(import.meta.dirname, 'fixtures/otlp-examples/trace.json'), 'utf8'));
    /** OTLP/JSON → a protobufjs object: hex ids become bytes; everything else maps as it is. */
    const toProtobufObject = (v: unknown, key = ''): unknown => {
      if (typeof v === 'string' && /^(traceId|spanId|parentSpanId)$/.test(key)) return Buffer.from(v, 'hex');
      if (Array.isArray(v)) return v.map((x) => toProtobufObject(x));
      if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, toProtobufObject(x, k)]));
      return v;
    };
    const pb = Buffer.from(TraceRequest.encode(TraceRequest.fromObject(toProtobufObject(json))).finish());
    assertSame(pb, 'trace.json');
  });

  test('every AnyValue kind, int64 and time edges, events, links, status, trace state, flags and dropped counts', () => {
    const str = (key: string, stringValue: string) => ({ key, value: { stringValue } });
    const attributes = [
      str('s', 'text'),
      str('empty', ''),
      str('unicode', 'héllo → 世界 🙂'),
      { key: 'true', value: { boolValue: true } },
      { key: 'false', value: { boolValue: false } },
      { key: 'zero', value: { intValue: 0 } },
      { key: 'int', value: { intValue: 42 } },
      { key: 'negative', value: { intValue: -7 } },
      { key: 'max safe', value: { intValue: '9007199254740991' } },
      { key: '2^53', value: { intValue: '9007199254740992' } },
      { key: 'min safe', value: { intValue: '-9007199254740991' } },
      { key: '-2^53', value: { intValue: '-9007199254740992' } },
      { key: 'int64 max', value: { intValue: '9223372036854775807' } },
      { key: 'int64 min', value: { intValue: '-9223372036854775808' } },
      { key: '-2^32', value: { intValue: '-4294967296' } },
      { key: 'double', value: { doubleValue: 3.25 } },
      { key: 'double zero', value: { doubleValue: 0 } },
      { key: 'nan', value: { doubleValue: NaN } },
      { key: 'inf', value: { doubleValue: Infinity } },
      { key: '-inf', value: { doubleValue: -Infinity } },
      { key: 'bytes', value: { bytesValue: hex('00ff10ab') } },
      { key: 'no bytes', value: { bytesValue: Buffer.alloc(0) } },
      { key: 'array', value: { arrayValue: { values: [{ stringValue: 'a' }, { intValue: 1 }, { arrayValue: { values: [{ boolValue: false }] } }, {}] } } },
      { key: 'empty array', value: { arrayValue: {} } },
      {
        key: 'kvlist',
        value: {
          kvlistValue: {
            values: [str('k', 'v'), { key: 'nested', value: { kvlistValue: { values: [{ key: 'n', value: { doubleValue: 1.5 } }] } } }, { key: 'none' }],
          },
        },
      },
      { key: 'empty kvlist', value: { kvlistValue: {} } },
      { key: 'unset value', value: {} },
      { key: 'no value' },
      str('__proto__', 'own property'),
      str('dup', 'first'),
      str('dup', 'last wins, first place kept'),
    ];
    const span = (overrides: object) => ({ traceId: hex('5b8efff798038103d269b633813fc60c'), spanId: hex('eee19b7ec3c1b174'), name: 'span', ...overrides });
    const request = {
      resourceSpans: [
        {
          resource: { attributes, droppedAttributesCount: 3 },
          schemaUrl: 'https://opentelemetry.io/schemas/1.30.0',
          scopeSpans: [
            {
              scope: { name: 'scope', version: '1.2', attributes: [str('scope.attr', 'x')], droppedAttributesCount: 1 },
              schemaUrl: 'https://opentelemetry.io/schemas/1.30.0',
              spans: [
                span({
                  parentSpanId: hex('eee19b7ec3c1b173'),
                  traceState: 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE',
                  flags: 0x301,
                  kind: 5,
                  startTimeUnixNano: '1767225600123456789',
                  endTimeUnixNano: '18446744073709551615',
                  attributes,
                  droppedAttributesCount: 2,
                  events: [
                    { name: 'exception', timeUnixNano: '1767225600999999999', attributes: [str('exception.type', 'E')], droppedAttributesCount: 4 },
                    { name: '' },
                    { timeUnixNano: '999999' },
                    { timeUnixNano: '1000000' },
                    { timeUnixNano: '9007199254740993' },
                  ],
                  droppedEventsCount: 5,
                  links: [
                    { traceId: hex('0af7651916cd43dd8448eb211c80319c'), spanId: hex('b7ad6b7169203331'), traceState: 'k=v', flags: 1, attributes: [str('l', 'v')] },
                    { traceId: hex('0af7651916cd43dd8448eb211c80319d'), spanId: hex('b7ad6b7169203332') },
                  ],
                  droppedLinksCount: 6,
                  status: { code: 2, message: 'failed' },
                }),
                // Unset times, kind and status; an all-zero parent span id is no parent.
                span({ spanId: hex('0000000000000001'), parentSpanId: hex('0000000000000000') }),
                span({ spanId: hex('0000000000000002'), status: { code: 1 }, startTimeUnixNano: '1', endTimeUnixNano: '4294967296' }),
              ],
            },
            // A scope without spans is a group without spans; a missing scope is an empty one.
            { scope: { name: 'idle' }, spans: [] },
            { spans: [span({ spanId: hex('0000000000000003') })] },
          ],
        },
        // A resource without scopes has no group; one without a resource has empty attributes.
        { resource: { attributes: [str('service.name', 'idle')] }, scopeSpans: [] },
        { scopeSpans: [{ scope: { name: 'bare' }, spans: [span({ spanId: hex('0000000000000004') })] }] },
      ],
    };
    const pb = Buffer.from(TraceRequest.encode(TraceRequest.fromObject(request)).finish());
    assertSame(pb, 'the covering request');
    // The request said what it meant to (protobufjs did not drop a case on the way).
    const groups = vigilBuild(pb);
    assert.equal(groups.length, 4);
    const first = groups[0]!.spans[0]!;
    assert.equal(first.attributes['int64 min'], '-9223372036854775808');
    assert.equal(first.attributes['-2^53'], '-9007199254740992');
    assert.equal(first.attributes['max safe'], 9007199254740991);
    assert.equal(first.attributes.bytes, 'AP8Qqw==');
    assert.equal(first.endTimeUnixNano, '18446744073709551615');
    assert.equal(first.events.length, 5);
    assert.equal(groups[0]!.spans[1]!.parentSpanId, undefined);
  });

  test('random 64-bit times, int64 values and doubles of every magnitude', () => {
    // xorshift64* with a fixed seed: the same values on every run.
    let x = 0x9e3779b97f4a7c15n;
    const next = () => {
      x ^= x >> 12n;
      x ^= (x << 25n) & 0xffffffffffffffffn;
      x ^= x >> 27n;
      return (x * 0x2545f4914f6cdd1dn) & 0xffffffffffffffffn;
    };
    const spans = [];
    for (let i = 0; i < 4096; i++) {
      const shift = BigInt(i % 64);
      const bits = Buffer.alloc(8);
      bits.writeBigUInt64BE(next());
      spans.push({
        traceId: hex('5b8efff798038103d269b633813fc60c'),
        spanId: Buffer.from(
          next()
            .toString(16)
            .padStart(16, '0')
            .replace(/^0{16}$/, '0000000000000001'),
          'hex',
        ),
        startTimeUnixNano: (next() >> shift).toString(),
        endTimeUnixNano: String(i),
        attributes: [
          { key: 'int', value: { intValue: BigInt.asIntN(64, (i % 2 === 0 ? 1n : -1n) * (next() >> shift)).toString() } },
          { key: 'double', value: { doubleValue: bits.readDoubleBE() } },
        ],
        events: [{ timeUnixNano: (next() >> BigInt(63 - (i % 64))).toString() }],
      });
    }
    assertSame(Buffer.from(TraceRequest.encode(TraceRequest.fromObject({ resourceSpans: [{ scopeSpans: [{ spans }] }] })).finish()), 'random values');
  });
});
