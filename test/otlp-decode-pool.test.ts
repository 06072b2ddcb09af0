/**
 * The OTLP decode pool (src/receivers/otlp/decode-pool.ts): a body read on a worker thread gives
 * exactly what the event loop's decoders and mapping give (events, bounds, rejections, errors), its
 * queues are bounded, and a thread that stops or cannot start loses no body. Then the receiver with
 * decode threads, fed by the real OpenTelemetry SDK exporters over OTLP/HTTP (JSON, protobuf) and
 * OTLP/gRPC with batches large enough to go to a thread.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { SpanStatusCode } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import type { ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter as GrpcTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { buildPayloads } from '../bench/otlp-payloads.ts';
import { VigilError } from '../src/errors.ts';
import { memoryLogger } from '../src/logger.ts';
import { ACTIVITY_KIND } from '../src/model/activity.ts';
import type { AgentEvent } from '../src/model/event.ts';
import {
  DecodePool,
  MAX_FAILURES,
  MAX_PENDING_PER_THREAD,
  MIN_POOLED_BYTES,
  POOLED_ENCODINGS,
  POOLED_WITH_MARKERS,
  decodeBody,
  decodeAndMap,
} from '../src/receivers/otlp/decode-pool.ts';
import type { BodyEncoding, BodyOptions } from '../src/receivers/otlp/decode-pool.ts';
import { ParseContext } from '../src/config/schema.ts';
import { defaultDecodeThreads, otlpConfigSchema } from '../src/receivers/otlp/config.ts';
import { createOtlpReceiver } from '../src/receivers/otlp/factory.ts';
import { freePort } from './helpers/vigil-process.ts';

const EXAMPLES = path.resolve(import.meta.dirname, 'fixtures/otlp-examples');
const payloads = buildPayloads(512);

/** A JSON body with one span of each kind the decoder treats apart: failed, successful, and rejected (a wrong-typed name). */
const MIXED = Buffer.from(
  JSON.stringify({
    resourceSpans: [
      {
        resource: {
          attributes: [
            { key: 'service.name', value: { stringValue: 'agent' } },
            { key: 'session.id', value: { stringValue: 's-1' } },
          ],
        },
        scopeSpans: [
          {
            spans: [
              {
                traceId: '5b8efff798038103d269b633813fc60c',
                spanId: '0000000000000001',
                name: 'execute_tool bash',
                endTimeUnixNano: '1700000000000000000',
                status: { code: 2, message: 'exit 1' },
              },
              {
                traceId: '5b8efff798038103d269b633813fc60c',
                spanId: '0000000000000002',
                name: 'chat gpt-4o',
                endTimeUnixNano: '1700000000000000000',
                attributes: [{ key: 'gen_ai.operation.name', value: { stringValue: 'chat' } }],
              },
              { traceId: '5b8efff798038103d269b633813fc60c', spanId: '0000000000000003', name: 42 },
            ],
          },
        ],
      },
    ],
  }),
);

/** A failed span and an error log record that carry no time at all: they take the receiver's clock (NOW below). */
const UNTIMED_SPAN = Buffer.from(
  JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'session.id', value: { stringValue: 's-2' } }] },
        scopeSpans: [
          {
            spans: [{ traceId: '6b8efff798038103d269b633813fc60c', spanId: '0000000000000004', name: 'execute_tool bash', status: { code: 2, message: 'exit 2' } }],
          },
        ],
      },
    ],
  }),
);
const UNTIMED_LOG = Buffer.from(
  JSON.stringify({
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'session.id', value: { stringValue: 's-3' } }] },
        scopeLogs: [
          {
            logRecords: [
              {
                severityNumber: 17,
                severityText: 'ERROR',
                body: { stringValue: 'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\nKeyError: \'x\'' },
              },
            ],
          },
        ],
      },
    ],
  }),
);

const CASES: Array<{ name: string; encoding: BodyEncoding; signal: 'traces' | 'logs'; body: Buffer }> = [
  { name: 'a failed span without times', encoding: 'json', signal: 'traces', body: UNTIMED_SPAN },
  { name: 'an error log record without times', encoding: 'json', signal: 'logs', body: UNTIMED_LOG },
  { name: 'OTLP/JSON, 512 agent spans', encoding: 'json', signal: 'traces', body: Buffer.from(payloads.json.template) },
  { name: 'OTLP/protobuf, 512 agent spans', encoding: 'protobuf', signal: 'traces', body: Buffer.from(payloads.protobuf.template) },
  { name: 'the OTLP example trace', encoding: 'json', signal: 'traces', body: readFileSync(path.join(EXAMPLES, 'trace.json')) },
  { name: 'the OTLP example logs', encoding: 'json', signal: 'logs', body: readFileSync(path.join(EXAMPLES, 'logs.json')) },
  { name: 'failed, successful and rejected spans', encoding: 'json', signal: 'traces', body: MIXED },
];

/** A fixed clock: a record without any time takes it, on the thread as on the event loop. */
const NOW = () => 1_700_000_000_123;
const RELEVANT: BodyOptions = { forward: false, markers: false, now: NOW };
const FORWARD: BodyOptions = { forward: true, markers: false, now: NOW };

/** What a decode gives, settled: the records or the error's code and message. */
async function settle(p: () => unknown): Promise<unknown> {
  try {
    return { value: await p() };
  } catch (err) {
    return {
      error: err instanceof VigilError ? { vigil: true, code: err.code, message: err.message, transient: err.transient } : { message: (err as Error).message },
    };
  }
}

describe('decode pool', () => {
  test('a body read on a thread gives what the event loop gives: events, sessions, bounds and rejections', async () => {
    const pool = new DecodePool(2, memoryLogger(), { minPooledBytes: 0, encodings: ['json', 'protobuf'] });
    try {
      let sent = 0;
      for (const c of CASES) {
        for (const markers of [false, true]) {
          const options = { forward: false, markers, now: NOW };
          const onLoop = decodeAndMap(c.encoding, c.signal, c.body, options);
          const onThread = await pool.decodeAndMap(c.encoding, c.signal, c.body, options);
          sent++;
          assert.deepEqual(onThread, onLoop, `${c.name}, markers ${markers}`);
        }
      }
      // The cases are not trivially equal: they hold events, the untimed ones at the receiver's
      // clock, and the mixed one a rejection.
      assert.equal(decodeAndMap('json', 'traces', Buffer.from(payloads.json.template), { forward: false, markers: true, now: NOW }).mapped.events.length, 64);
      for (const [signal, body] of [
        ['traces', UNTIMED_SPAN],
        ['logs', UNTIMED_LOG],
      ] as const) {
        assert.deepEqual(
          decodeAndMap('json', signal, body, RELEVANT).mapped.events.map((e) => e.time),
          [NOW()],
          signal,
        );
      }
      const mixed = decodeBody('json', 'traces', MIXED, { skipIrrelevant: true });
      assert.equal(mixed.stats.rejected, 1);
      assert.equal((mixed.groups[0] as { spans: unknown[] }).spans.length, 1);
      assert.deepEqual(pool.stats(), { onThreads: sent, onLoop: 0, failures: 0 });
    } finally {
      await pool.close();
    }
  });

  test('a body the decoder refuses: the same VigilError (code, message, transient) from the thread as from the event loop', async () => {
    const pool = new DecodePool(1, memoryLogger(), { minPooledBytes: 0, encodings: ['json', 'protobuf'] });
    try {
      const bad: Array<[BodyEncoding, Buffer]> = [
        ['json', Buffer.from('{"resourceSpans": [ {"scopeSpans": ')],
        ['json', Buffer.from('{"resourceSpans": 7}')],
        ['protobuf', Buffer.from([0x0a, 0xff, 0xff, 0x03, 0x01])],
      ];
      for (const [encoding, body] of bad) {
        const onLoop = await settle(() => decodeAndMap(encoding, 'traces', body, RELEVANT));
        const onThread = await settle(() => pool.decodeAndMap(encoding, 'traces', body, RELEVANT));
        assert.equal((onLoop as { error?: { code?: string } }).error?.code, 'VIGIL_PAYLOAD_INVALID', `${encoding}: ${JSON.stringify(onLoop)}`);
        assert.deepEqual(onThread, onLoop);
      }
      assert.equal(pool.stats().onThreads, bad.length);
    } finally {
      await pool.close();
    }
  });

  test('small bodies, protobuf bodies without markers to map, and every body of a receiver that forwards all records, are read on the event loop', async () => {
    const pool = new DecodePool(1, memoryLogger());
    try {
      assert.deepEqual(POOLED_ENCODINGS, ['json']);
      const small = readFileSync(path.join(EXAMPLES, 'trace.json'));
      assert.ok(small.length < MIN_POOLED_BYTES);
      assert.deepEqual(await pool.decodeAndMap('json', 'traces', small, RELEVANT), decodeAndMap('json', 'traces', small, RELEVANT));
      const big = Buffer.from(payloads.json.template);
      assert.deepEqual(await pool.decodeAndMap('json', 'traces', big, FORWARD), decodeAndMap('json', 'traces', big, FORWARD));
      const proto = Buffer.from(payloads.protobuf.template);
      assert.ok(proto.length >= MIN_POOLED_BYTES);
      assert.deepEqual(await pool.decodeAndMap('protobuf', 'traces', proto, RELEVANT), decodeAndMap('protobuf', 'traces', proto, RELEVANT));
      assert.deepEqual(pool.stats(), { onThreads: 0, onLoop: 3, failures: 0 });
      // The same large JSON body a receiver does not forward goes to the thread.
      assert.deepEqual(await pool.decodeAndMap('json', 'traces', big, RELEVANT), decodeAndMap('json', 'traces', big, RELEVANT));
      assert.deepEqual(pool.stats(), { onThreads: 1, onLoop: 3, failures: 0 });
      // A protobuf body whose signal's pipelines want activity markers goes to the thread too.
      assert.deepEqual(POOLED_WITH_MARKERS, ['protobuf']);
      const marked = { ...RELEVANT, markers: true };
      assert.deepEqual(await pool.decodeAndMap('protobuf', 'traces', proto, marked), decodeAndMap('protobuf', 'traces', proto, marked));
      assert.deepEqual(pool.stats(), { onThreads: 2, onLoop: 3, failures: 0 });
    } finally {
      await pool.close();
    }
  });

  test(`queues are bounded: past ${MAX_PENDING_PER_THREAD} bodies waiting per thread, the event loop decodes`, async () => {
    const pool = new DecodePool(1, memoryLogger(), { minPooledBytes: 0, encodings: ['json', 'protobuf'] });
    try {
      const body = Buffer.from(payloads.protobuf.template);
      const expected = decodeAndMap('protobuf', 'traces', body, RELEVANT);
      const n = MAX_PENDING_PER_THREAD + 4;
      const all = await Promise.all(Array.from({ length: n }, () => pool.decodeAndMap('protobuf', 'traces', body, RELEVANT)));
      for (const d of all) assert.deepEqual(d, expected);
      assert.deepEqual(pool.stats(), { onThreads: MAX_PENDING_PER_THREAD, onLoop: 4, failures: 0 });
    } finally {
      await pool.close();
    }
  });

  test('closing the pool with bodies on a thread: each is still decoded, none lost', async () => {
    const pool = new DecodePool(1, memoryLogger(), { minPooledBytes: 0, encodings: ['json', 'protobuf'] });
    const body = Buffer.from(payloads.json.template);
    const expected = decodeAndMap('json', 'traces', body, RELEVANT);
    const pending = Array.from({ length: 4 }, () => pool.decodeAndMap('json', 'traces', body, RELEVANT));
    await pool.close();
    for (const d of await Promise.all(pending)) assert.deepEqual(d, expected);
    const stats = pool.stats();
    assert.equal(stats.onThreads + stats.onLoop, 4);
    assert.equal(stats.failures, 0, 'a close is not a failure');
    // After the close, the event loop decodes.
    assert.deepEqual(await pool.decodeAndMap('json', 'traces', body, RELEVANT), expected);
    assert.equal(pool.stats().onLoop, stats.onLoop + 1);
  });

  test(`a thread that cannot start: its bodies are decoded on the event loop; after ${MAX_FAILURES} failures the pool stops trying`, async () => {
    const logger = memoryLogger();
    const missing = pathToFileURL(path.join(EXAMPLES, 'no-such-decode-worker.js')).href;
    const pool = new DecodePool(1, logger, { minPooledBytes: 0, encodings: ['json', 'protobuf'], workerUrl: missing });
    try {
      const body = Buffer.from(payloads.protobuf.template);
      const expected = decodeAndMap('protobuf', 'traces', body, RELEVANT);
      for (let i = 0; i < MAX_FAILURES + 2; i++) {
        assert.deepEqual(await pool.decodeAndMap('protobuf', 'traces', body, RELEVANT), expected, `decode ${i + 1}`);
      }
      assert.deepEqual(pool.stats(), { onThreads: 0, onLoop: MAX_FAILURES + 2, failures: MAX_FAILURES });
      const messages = logger.entries.map((e) => `${String(e.level)} ${String(e.msg)}`);
      assert.deepEqual(messages, [
        ...Array.from({ length: MAX_FAILURES - 1 }, () => 'warn OTLP decode thread failed; it is restarted on next use'),
        'error OTLP decode thread failed; bodies are decoded on the event loop from now on',
      ]);
    } finally {
      await pool.close();
    }
  });

  test('without decode threads, the receiver has no decode pool and shows no decode metrics', () => {
    const receiver = createOtlpReceiver(
      { id: 'otlp', logger: memoryLogger(), consumers: {} },
      { protocols: {}, max_request_body_size: 4 * 1024 * 1024, decode_threads: 0 },
    );
    assert.equal(receiver.decoding(), undefined);
    assert.deepEqual(
      receiver.metrics!().filter((m) => m.name.startsWith('vigil_receiver_decode')),
      [],
    );
  });

  test('config: decode_threads defaults to one thread with a second CPU, none on one CPU, and is bounded', () => {
    assert.equal(defaultDecodeThreads(1), 0);
    assert.equal(defaultDecodeThreads(2), 1);
    assert.equal(defaultDecodeThreads(64), 1);
    const ctx = new ParseContext();
    const parsed = otlpConfigSchema.parse({}, ['receivers', 'otlp'], ctx)!;
    assert.equal(parsed.decode_threads, availableParallelism() >= 2 ? 1 : 0);
    assert.equal(otlpConfigSchema.parse({ decode_threads: 4 }, ['receivers', 'otlp'], ctx)!.decode_threads, 4);
    assert.equal(ctx.issues.length, 0);
    for (const bad of [-1, 1.5, 65, 'two']) otlpConfigSchema.parse({ decode_threads: bad }, ['receivers', 'otlp'], ctx);
    assert.equal(ctx.issues.filter((i) => i.severity === 'error' && i.path.join('.') === 'receivers.otlp.decode_threads').length, 4, JSON.stringify(ctx.issues));
  });
});

/** `count` spans with the SDK, one in every 50 failed, one trace per 10 spans, all in one batch. */
function recordSpans(count: number): ReadableSpan[] {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'sdk-agent' }),
    spanProcessors: [new SimpleSpanProcessor(memory)],
  });
  const tracer = provider.getTracer('sdk-agent', '1.0.0');
  for (let i = 0; i < count; i++) {
    const span = tracer.startSpan(i % 50 === 0 ? 'execute_tool bash' : 'chat gpt-4o', {
      attributes: { 'session.id': `s-${Math.floor(i / 10)}`, 'gen_ai.operation.name': i % 50 === 0 ? 'execute_tool' : 'chat', 'gen_ai.request.model': 'gpt-4o' },
    });
    if (i % 50 === 0) span.setStatus({ code: SpanStatusCode.ERROR, message: `exit status ${i}` });
    span.end();
  }
  return memory.getFinishedSpans();
}

function exportWith(exporter: SpanExporter, spans: ReadableSpan[]): Promise<ExportResult> {
  return new Promise((resolve) => exporter.export(spans, resolve));
}

describe('otlp receiver with decode threads, fed by the OpenTelemetry SDK', () => {
  for (const markers of [false, true]) {
    const where = markers ? 'all three on the thread' : 'protobuf and OTLP/gRPC on the event loop';
    test(`large batches, ${markers ? 'activity markers wanted' : 'no activity markers'}: OTLP/HTTP JSON read on a thread, ${where}, all appended alike`, async () => {
      const events: AgentEvent[] = [];
      const [httpPort, grpcPort] = [await freePort(), await freePort()];
      const receiver = createOtlpReceiver(
        {
          id: 'otlp',
          logger: memoryLogger(),
          consumers: { traces: async (batch) => (events.push(...batch), { appended: batch.length, duplicates: 0 }) },
          markers: { traces: markers },
        },
        {
          protocols: { http: { endpoint: `127.0.0.1:${httpPort}` }, grpc: { endpoint: `127.0.0.1:${grpcPort}` } },
          max_request_body_size: 4 * 1024 * 1024,
          decode_threads: 1,
        },
      );
      await receiver.start();
      try {
        const spans = recordSpans(400);
        const failed = spans.filter((s) => s.status.code === SpanStatusCode.ERROR).length;
        const exporters: Array<[string, SpanExporter]> = [
          ['http-json', new JsonTraceExporter({ url: `http://127.0.0.1:${httpPort}/v1/traces` })],
          ['http-protobuf', new ProtoTraceExporter({ url: `http://127.0.0.1:${httpPort}/v1/traces` })],
          ['grpc', new GrpcTraceExporter({ url: `http://127.0.0.1:${grpcPort}` })],
        ];
        for (const [name, exporter] of exporters) {
          const before = events.length;
          const result = await exportWith(exporter, spans);
          await exporter.shutdown();
          assert.equal(result.code, ExportResultCode.SUCCESS, `${name}: ${result.error?.message}`);
          // The failures; with markers, a marker of each successful model request besides (each span is its own trace).
          const appended = events.slice(before).filter((e) => e.kind !== ACTIVITY_KIND);
          assert.equal(appended.length, failed, name);
          assert.equal(events.length - before - failed, markers ? spans.length - failed : 0, `${name}: markers`);
          const failedSpans = spans.filter((s) => s.status.code === SpanStatusCode.ERROR);
          assert.deepEqual(
            appended.map((e) => `${e.spanId} ${e.partition}`).sort(),
            failedSpans.map((s) => `${s.spanContext().spanId} ${String(s.attributes['session.id'])}`).sort(),
            name,
          );
        }
        const [onThreads, onLoop] = markers ? [3, 0] : [1, 2];
        assert.deepEqual(receiver.decoding(), { onThreads, onLoop, failures: 0 });
        // The same, as /metrics shows it.
        const decodeFamilies = receiver.metrics!()
          .filter((m) => m.name.startsWith('vigil_receiver_decode'))
          .map((m) => `${m.name}${JSON.stringify(m.labels)} ${m.type === 'histogram' ? '' : m.value}`);
        assert.deepEqual(decodeFamilies, [
          `vigil_receiver_decoded_bodies_total{"on":"thread"} ${onThreads}`,
          `vigil_receiver_decoded_bodies_total{"on":"event_loop"} ${onLoop}`,
          'vigil_receiver_decode_thread_failures_total{} 0',
        ]);
      } finally {
        await receiver.shutdown();
      }
    });
  }
});
