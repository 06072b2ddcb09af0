/**
 * Properties of the two OTLP decoders on generated requests (seeded: see helpers/random.ts):
 * - the same request as OTLP/JSON and as OTLP/protobuf (encoded by the independent 0.214 codec)
 *   decodes to the same records, fully built or with the relevance test skipping records;
 * - checking a record and building it never disagree: with skipIrrelevant, the records built are
 *   exactly those of the full decode the relevance test keeps, with the same rejections and counts,
 *   and they map to the same events (the test is where the mapping starts too); the sessions the
 *   skipped records name are handed back, so a trace's session is the same either way;
 * - the JSON reader refuses exactly what is not JSON: whenever JSON.parse throws on a mutated body,
 *   the decoder refuses the request, and it only calls a body "not valid JSON" when JSON.parse does
 *   (or when the nesting bound is crossed).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import root0214 from 'otlp-transformer-0214/build/src/generated/root.js';
import { isVigilError } from '../src/errors.ts';
import { decodeLogsJson, decodeTracesJson } from '../src/receivers/otlp/json.ts';
import { mapLogs, mapTraces } from '../src/receivers/otlp/mapping.ts';
import { logMayMatter, spanMayMatter } from '../src/receivers/otlp/mapping/relevance.ts';
import { logFacts } from '../src/receivers/otlp/mapping/logs.ts';
import { spanFacts } from '../src/receivers/otlp/mapping/spans.ts';
import { decodeLogsProtobuf, decodeTracesProtobuf } from '../src/receivers/otlp/protobuf.ts';
import { checkProperty } from './helpers/random.ts';

const otlp = (root0214 as any).opentelemetry.proto;
const TraceRequest = otlp.collector.trace.v1.ExportTraceServiceRequest;
const LogsRequest = otlp.collector.logs.v1.ExportLogsServiceRequest;

// ---------------------------------------------------------------------------------------------
// Valid requests in their OTLP/JSON form.

const hexId = (bytes: number) => fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((b) => Buffer.from(b).toString('hex'));
const text = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.constantFrom(
    '',
    'exception',
    'error.type',
    'event.name',
    'session.id',
    'ai.telemetry.metadata.sessionId',
    'Traceback (most recent call last):\nValueError: x',
    '{"kind":"tool.result"}',
  ),
);
const nanos = fc.oneof(fc.constant('0'), fc.bigInt({ min: 1n, max: (1n << 64n) - 1n }).map(String));
const double = fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => (Object.is(d, -0) ? 0 : d));
const anyValue: fc.Arbitrary<Record<string, unknown>> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    text.map((stringValue) => ({ stringValue })),
    fc.boolean().map((boolValue) => ({ boolValue })),
    fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n }).map((v) => ({ intValue: String(v) })),
    double.map((doubleValue) => ({ doubleValue })),
    fc.uint8Array({ maxLength: 6 }).map((b) => ({ bytesValue: Buffer.from(b).toString('base64') })),
    fc.array(tie('value'), { maxLength: 3 }).map((values) => ({ arrayValue: { values } })),
    fc.array(fc.record({ key: text, value: tie('value') }), { maxLength: 3 }).map((values) => ({ kvlistValue: { values } })),
  ),
})).value as fc.Arbitrary<Record<string, unknown>>;
/** Keys the relevance test and the activity markers read, with values of the shapes they take. */
const markerKey = fc.constantFrom(
  'gen_ai.operation.name',
  'gen_ai.tool.name',
  'gen_ai.tool.call.id',
  'session.id',
  'gen_ai.usage.output_tokens',
  'gen_ai.response.finish_reasons',
  'ai.response.text',
  'gen_ai.system',
  'run.end_reason',
  'detail',
);
const markerValue = fc.oneof(
  fc
    .constantFrom('chat', 'execute_tool', 'invoke_agent', 'stop', 'length', '', 'model_error', '{"version":1,"attempts":{}}')
    .map((stringValue) => ({ stringValue })),
  fc.integer({ min: 0, max: 3 }).map((v) => ({ intValue: String(v) })),
  fc.constant({ arrayValue: { values: [{ stringValue: 'stop' }] } }),
);
const attributes = fc.array(fc.oneof(fc.record({ key: text, value: anyValue }), fc.record({ key: markerKey, value: markerValue })), { maxLength: 4 });
const spanName = fc.oneof(
  text,
  fc.constantFrom('chat gpt-4o', 'execute_tool read_file', 'invoke_agent coder', 'ai.generateText.doGenerate', 'ai.generateText', 'embeddings x', 'compact history'),
);
const resource = fc.record({ attributes });
const scope = fc.record({ name: text, version: text, attributes });

const span = fc.record({
  traceId: hexId(16),
  spanId: hexId(8),
  parentSpanId: fc.oneof(hexId(8), fc.constant('')),
  traceState: text,
  name: spanName,
  kind: fc.integer({ min: 0, max: 5 }),
  startTimeUnixNano: nanos,
  endTimeUnixNano: nanos,
  attributes,
  events: fc.array(
    fc.record({ timeUnixNano: nanos, name: fc.oneof(text, fc.constantFrom('exception', 'provider.retry.checkpoint', 'context.recovery')), attributes }),
    { maxLength: 2 },
  ),
  links: fc.array(fc.record({ traceId: hexId(16), spanId: hexId(8), attributes }), { maxLength: 2 }),
  status: fc.record({ code: fc.integer({ min: 0, max: 2 }), message: text }),
});
const traces = fc
  .array(fc.record({ resource, scopeSpans: fc.array(fc.record({ scope, spans: fc.array(span, { maxLength: 4 }) }), { maxLength: 2 }) }), { maxLength: 2 })
  .map((resourceSpans) => ({ resourceSpans }));

const log = fc.record({
  timeUnixNano: nanos,
  observedTimeUnixNano: nanos,
  severityNumber: fc.integer({ min: 0, max: 24 }),
  severityText: fc.oneof(text, fc.constantFrom('ERROR', 'INFO')),
  body: anyValue,
  attributes,
  traceId: fc.oneof(hexId(16), fc.constant('')),
  spanId: fc.oneof(hexId(8), fc.constant('')),
  eventName: fc.oneof(text, fc.constantFrom('', 'tool.result')),
  flags: fc.nat({ max: 0xffffffff }),
});
const logs = fc
  .array(fc.record({ resource, scopeLogs: fc.array(fc.record({ scope, logRecords: fc.array(log, { maxLength: 4 }) }), { maxLength: 2 }) }), { maxLength: 2 })
  .map((resourceLogs) => ({ resourceLogs }));

/** The protobufjs object of an OTLP/JSON request: hex ids and base64 bytes become bytes. */
function toProtobufObject(v: unknown, key = ''): unknown {
  if (typeof v === 'string' && /^(traceId|spanId|parentSpanId)$/.test(key)) return Buffer.from(v, 'hex');
  if (typeof v === 'string' && key === 'bytesValue') return Buffer.from(v, 'base64');
  if (Array.isArray(v)) return v.map((x) => toProtobufObject(x));
  if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, toProtobufObject(x, k)]));
  return v;
}

/** Trace → session of a request: what the decoder handed back for skipped records and what the mapping found on built ones. */
function sessionsOf(skipped: ReadonlyMap<string, string>, built: ReadonlyMap<string, string>): Array<[string, string]> {
  return [...new Map([...built, ...skipped])].sort(([a], [b]) => (a < b ? -1 : 1));
}

const keepSpan = (s: Parameters<typeof spanFacts>[0]) => spanMayMatter(spanFacts(s));
const keepLog = (l: Parameters<typeof logFacts>[0]) => logMayMatter(logFacts(l));

/** Events in event-id order (marks come after the built spans of their group). */
function byId<T extends { eventId: string }>(events: T[]): T[] {
  return [...events].sort((a, b) => (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0));
}

/** With skipIrrelevant, exactly the records the test keeps are built, with the same stats. */
function assertSkipping<R>(
  full: { groups: Array<Record<string, unknown>>; stats: unknown; skipped: number },
  skipping: typeof full,
  records: string,
  keep: (r: R) => boolean,
): void {
  assert.deepEqual(skipping.stats, full.stats);
  assert.deepEqual(
    skipping.groups.map((g) => g[records]),
    full.groups.map((g) => (g[records] as R[]).filter(keep)),
  );
  const count = (d: typeof full) => d.groups.reduce((n, g) => n + (g[records] as R[]).length, 0);
  assert.equal(skipping.skipped, count(full) - count(skipping));
}

describe('OTLP/JSON and OTLP/protobuf decode generated requests alike', () => {
  test('traces: the same records from both encodings, built or checked', () => {
    checkProperty(
      fc.property(traces, (request) => {
        const json = JSON.stringify(request);
        const bytes = TraceRequest.encode(TraceRequest.fromObject(toProtobufObject(request))).finish();
        const fromJson = decodeTracesJson(json);
        assert.equal(fromJson.stats.rejected, 0, fromJson.stats.messages.join('; '));
        assert.deepEqual(decodeTracesProtobuf(bytes), fromJson);
        const skipping = decodeTracesJson(json, { skipIrrelevant: true });
        assertSkipping(fromJson as never, skipping as never, 'spans', keepSpan);
        assert.deepEqual(mapTraces(skipping.groups, { now: () => 0 }).events, mapTraces(fromJson.groups, { now: () => 0 }).events);
        assert.deepEqual(sessionsOf(skipping.sessions, mapTraces(skipping.groups).traceSessions), sessionsOf(new Map(), mapTraces(fromJson.groups).traceSessions));
        assert.deepEqual(decodeTracesProtobuf(bytes, { skipIrrelevant: true }), skipping);
        // With activity markers: marks (facts of spans never built) map to the markers the built spans map to.
        const marking = decodeTracesJson(json, { skipIrrelevant: true, markers: true });
        assert.deepEqual(decodeTracesProtobuf(bytes, { skipIrrelevant: true, markers: true }), marking);
        assert.deepEqual(marking.stats, fromJson.stats);
        const fromMarks = mapTraces(marking.groups, { now: () => 0, markers: true });
        const fromBuilt = mapTraces(fromJson.groups, { now: () => 0, markers: true });
        assert.deepEqual(byId(fromMarks.events), byId(fromBuilt.events));
        assert.deepEqual([fromMarks.relevant, fromMarks.irrelevant + marking.skipped], [fromBuilt.relevant, fromBuilt.irrelevant]);
      }),
      { numRuns: 300 },
    );
  });

  test('logs: the same records from both encodings, built or checked', () => {
    checkProperty(
      fc.property(logs, (request) => {
        const json = JSON.stringify(request);
        const bytes = LogsRequest.encode(LogsRequest.fromObject(toProtobufObject(request))).finish();
        const fromJson = decodeLogsJson(json);
        assert.equal(fromJson.stats.rejected, 0, fromJson.stats.messages.join('; '));
        assert.deepEqual(decodeLogsProtobuf(bytes), fromJson);
        const skipping = decodeLogsJson(json, { skipIrrelevant: true });
        assertSkipping(fromJson as never, skipping as never, 'logs', keepLog);
        assert.deepEqual(mapLogs(skipping.groups, { now: () => 0 }).events, mapLogs(fromJson.groups, { now: () => 0 }).events);
        assert.deepEqual(sessionsOf(skipping.sessions, mapLogs(skipping.groups).traceSessions), sessionsOf(new Map(), mapLogs(fromJson.groups).traceSessions));
        assert.deepEqual(decodeLogsProtobuf(bytes, { skipIrrelevant: true }), skipping);
      }),
      { numRuns: 300 },
    );
  });
});

describe('the JSON reader refuses exactly what is not JSON', () => {
  test('mutated bodies: refused whenever JSON.parse throws; "not valid JSON" only when it does', () => {
    const edits = fc.array(fc.tuple(fc.nat(), fc.constantFrom(...'{}[]",:\\ 0-.eEtfnu\n\t\u0001\u001fx'.split('').map((c) => c.charCodeAt(0)), 0xff)), {
      minLength: 1,
      maxLength: 3,
    });
    checkProperty(
      fc.property(fc.oneof(traces, logs), edits, fc.boolean(), (request, changes, pretty) => {
        const bytes = Buffer.from(JSON.stringify(request, null, pretty ? 1 : undefined));
        for (const [at, value] of changes) bytes[at % bytes.length] = value;
        let parsed = true;
        try {
          JSON.parse(bytes.toString('utf8'));
        } catch {
          parsed = false;
        }
        const decode = 'resourceSpans' in request ? decodeTracesJson : decodeLogsJson;
        let refusal: string | undefined;
        try {
          decode(bytes, { skipIrrelevant: true });
        } catch (err) {
          assert.ok(isVigilError(err, 'VIGIL_PAYLOAD_INVALID'), String(err));
          refusal = err.message;
        }
        // Bytes that are not UTF-8 are refused as such; JSON.parse reads them as U+FFFD.
        if (!bytes.includes(0xff)) {
          if (!parsed) assert.ok(refusal !== undefined, 'a body JSON.parse refuses must be refused');
          if (refusal?.startsWith('request body is not valid JSON')) assert.equal(parsed, false, refusal);
        }
      }),
      { numRuns: 1500 },
    );
  });
});

describe('the sessions skipped records name', () => {
  test('each trace is read once: the first skipped span of a trace that names a session; later ones of the trace are not read again', () => {
    const T1 = '11111111111111111111111111111111';
    const T2 = '22222222222222222222222222222222';
    const sp = (traceId: string, n: number, attrs: Array<[string, string]>) => ({
      traceId,
      spanId: `00000000000000${String(n).padStart(2, '0')}`,
      name: 'step',
      startTimeUnixNano: '1',
      endTimeUnixNano: '2',
      attributes: attrs.map(([key, v]) => ({ key, value: { stringValue: v } })),
      status: { code: 0 },
    });
    const request = {
      resourceSpans: [
        {
          resource: { attributes: [] },
          scopeSpans: [
            {
              spans: [
                sp(T1, 1, []),
                sp(T1, 2, [
                  ['gen_ai.conversation.id', 'conv-1'],
                  ['session.id', 'sess-1'],
                ]),
                sp(T1, 3, [['session.id', 'sess-1']]),
                sp(T2, 4, [['ai.telemetry.metadata.sessionId', 'sess-2']]),
                sp(T1, 5, [['session.id', 'sess-1']]),
              ],
            },
          ],
        },
        {
          resource: { attributes: [{ key: 'session.id', value: { stringValue: 'sess-res' } }] },
          scopeSpans: [{ spans: [sp('33333333333333333333333333333333', 6, [])] }],
        },
      ],
    };
    const json = JSON.stringify(request);
    const bytes = TraceRequest.encode(TraceRequest.fromObject(toProtobufObject(request))).finish();
    const expected = [
      [T1, 'sess-1'],
      [T2, 'sess-2'],
      ['33333333333333333333333333333333', 'sess-res'],
    ];
    assert.deepEqual(
      [...decodeTracesJson(json, { skipIrrelevant: true }).sessions],
      expected,
      'session.id before gen_ai.conversation.id; the resource when the span names none',
    );
    assert.deepEqual([...decodeTracesProtobuf(bytes, { skipIrrelevant: true }).sessions], expected);
    assert.deepEqual([...mapTraces(decodeTracesJson(json).groups).traceSessions], expected, 'as the mapping of the built spans finds them');
  });
});
