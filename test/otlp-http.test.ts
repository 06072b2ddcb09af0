import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import protobuf from 'protobufjs';
import root0214 from 'otlp-transformer-0214/build/src/generated/root.js';
import type { IngestConsumer, IngestResult, Signal } from '../src/component.ts';
import { ParseContext } from '../src/config/schema.ts';
import { VigilError, isVigilError } from '../src/errors.ts';
import { memoryLogger } from '../src/logger.ts';
import type { AgentEvent } from '../src/model/event.ts';
import { createOtlpReceiver, otlpReceiverFactory } from '../src/receivers/otlp/factory.ts';
import type { OtlpReceiver, OtlpReceiverConfig } from '../src/receivers/otlp/factory.ts';
import { DEFAULT_DECODE_THREADS } from '../src/receivers/otlp/config.ts';

const EXAMPLES = path.resolve(import.meta.dirname, 'fixtures/otlp-examples');
const example = (name: string) => readFileSync(path.join(EXAMPLES, name));

const TRACE_ID = '5b8efff798038103d269b633813fc60c';
const TOKEN = 's3cret-token-value';

/** An error span, an OK span and one with a wrong-typed name. */
const TRACES_WITH_BAD_SPAN = JSON.stringify({
  resourceSpans: [
    {
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'agent' } }] },
      scopeSpans: [
        {
          spans: [
            {
              traceId: TRACE_ID,
              spanId: '0000000000000001',
              name: 'execute_tool bash',
              endTimeUnixNano: '1700000000000000000',
              status: { code: 2, message: 'exit 1' },
            },
            { traceId: TRACE_ID, spanId: '0000000000000002', name: 'chat gpt', status: { code: 1 } },
            { traceId: TRACE_ID, spanId: '0000000000000003', name: 5 },
          ],
        },
      ],
    },
  ],
});

const ERROR_LOG = JSON.stringify({
  resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: '1700000000000000000', severityNumber: 17, body: { stringValue: 'Error: boom' } }] }] }],
});

interface Harness {
  receiver: OtlpReceiver;
  url: (p: string) => string;
  events: AgentEvent[];
  logger: ReturnType<typeof memoryLogger>;
  stop: () => Promise<void>;
}

const collecting =
  (events: AgentEvent[]): IngestConsumer =>
  async (batch) => {
    events.push(...batch);
    return { appended: batch.length, duplicates: 0 };
  };

async function startReceiver(
  opts: {
    config?: Partial<OtlpReceiverConfig>;
    consumers?: Partial<Record<Signal, IngestConsumer>>;
  } = {},
): Promise<Harness> {
  const events: AgentEvent[] = [];
  const logger = memoryLogger();
  const config: OtlpReceiverConfig = {
    protocols: { http: { endpoint: '127.0.0.1:0' } },
    max_request_body_size: 4 * 1024 * 1024,
    ...opts.config,
  };
  const consumers = opts.consumers ?? { traces: collecting(events), logs: collecting(events) };
  const receiver = createOtlpReceiver({ id: 'otlp', logger, consumers }, config, { shutdownGraceMs: 1000 });
  await receiver.start();
  const addr = receiver.address()!;
  return {
    receiver,
    events,
    logger,
    url: (p) => `http://127.0.0.1:${addr.port}${p}`,
    stop: () => receiver.shutdown(),
  };
}

function post(url: string, body: string | Uint8Array, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', body: typeof body === 'string' ? body : new Uint8Array(body), headers: { 'content-type': 'application/json', ...headers } });
}

/** A chunked POST through node:http (no Content-Length); resolves with the status and body. */
function postChunked(url: string, chunks: Iterable<Buffer>, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked', ...headers } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    (async () => {
      for (const chunk of chunks) {
        if (req.destroyed) break;
        if (!req.write(chunk)) {
          await new Promise<void>((resolve) => {
            const done = () => {
              req.off('drain', done);
              req.off('close', done);
              resolve();
            };
            req.on('drain', done);
            req.on('close', done);
          });
        }
      }
      req.end();
    })().catch(() => {});
  });
}

async function statusBody(res: Response): Promise<{ code: number; message: string }> {
  assert.equal(res.headers.get('content-type'), 'application/json');
  const body = (await res.json()) as { code: number; message: string };
  assert.equal(typeof body.code, 'number');
  assert.equal(typeof body.message, 'string');
  return body;
}

describe('OTLP/HTTP receiver: accepting', () => {
  let h: Harness;
  after(() => h.stop());

  test('the official examples are accepted with 200 {}', async () => {
    h = await startReceiver();
    for (const [p, file] of [
      ['/v1/traces', 'trace.json'],
      ['/v1/logs', 'logs.json'],
      ['/v1/logs', 'events.json'],
    ] as const) {
      const res = await post(h.url(p), example(file));
      assert.equal(res.status, 200, file);
      assert.equal(res.headers.get('content-type'), 'application/json');
      assert.deepEqual(await res.json(), {});
    }
    // trace.json: an OK span; logs.json: INFO text without a failure marker; events.json: an
    // application event. All accepted, none needed by the chain.
    assert.equal(h.events.length, 0);
    const stats = h.receiver.stats();
    assert.deepEqual(
      [stats.traces.requests, stats.traces.accepted, stats.traces.irrelevant, stats.logs.accepted, stats.logs.irrelevant, stats.logs.appended],
      [1, 1, 1, 2, 2, 0],
    );
    assert.deepEqual(stats.logs.protocols['http-json'].requests, 2);
    assert.deepEqual(stats.logs.protocols['http-protobuf'].requests, 0);
  });

  test('a span with a wrong type is rejected alone: partial success, the rest accepted', async () => {
    const before = h.events.length;
    const res = await post(h.url('/v1/traces'), TRACES_WITH_BAD_SPAN);
    assert.equal(res.status, 200);
    const body = (await res.json()) as { partialSuccess: { rejectedSpans: string; errorMessage: string } };
    assert.equal(body.partialSuccess.rejectedSpans, '1');
    assert.match(body.partialSuccess.errorMessage, /spans\[2\]\.name: must be a string, got number 5/);
    const added = h.events.slice(before);
    assert.equal(added.length, 1);
    assert.equal(added[0]!.eventId, `${TRACE_ID}:0000000000000001`);
    assert.equal(h.receiver.stats().traces.rejected, 1);
  });

  test('charset parameter is allowed; logs answer with rejectedLogRecords', async () => {
    const res = await post(
      h.url('/v1/logs'),
      JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: 'x' } }, { traceId: 'nothex' }] }] }] }),
      { 'content-type': 'application/json; charset=utf-8' },
    );
    assert.equal(res.status, 200);
    const body = (await res.json()) as { partialSuccess: { rejectedLogRecords: string } };
    assert.equal(body.partialSuccess.rejectedLogRecords, '1');
  });

  test('a gzip body is accepted', async () => {
    const before = h.events.length;
    const res = await post(h.url('/v1/logs'), gzipSync(ERROR_LOG), { 'content-encoding': 'gzip' });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), {});
    assert.equal(h.events.length, before + 1);
    assert.deepEqual(h.events.at(-1)!.payload, { state: 'error', outcome: { error: 'Error: boom', output: [] } });
  });

  test('a chunked body is accepted', async () => {
    const res = await postChunked(h.url('/v1/logs'), [Buffer.from(ERROR_LOG.slice(0, 20)), Buffer.from(ERROR_LOG.slice(20))]);
    assert.equal(res.status, 200);
    assert.equal(res.body, '{}');
  });
});

describe('OTLP/HTTP receiver: durability', () => {
  test('answers 200 only after the consumer resolved', async () => {
    let release!: (r: IngestResult) => void;
    let called = false;
    const consumer: IngestConsumer = () => {
      called = true;
      return new Promise((resolve) => (release = resolve));
    };
    const h = await startReceiver({ consumers: { logs: consumer } });
    try {
      let answered = false;
      const pending = post(h.url('/v1/logs'), ERROR_LOG).then((res) => {
        answered = true;
        return res;
      });
      while (!called) await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(answered, false, 'answered before the append committed');
      release({ appended: 1, duplicates: 0 });
      const res = await pending;
      assert.equal(res.status, 200);
    } finally {
      await h.stop();
    }
  });

  for (const [code, status, rpc] of [
    ['VIGIL_STORE_UNAVAILABLE', 503, 14],
    ['VIGIL_INGEST_BACKPRESSURE', 429, 8],
  ] as const) {
    test(`a transient ${code} from the consumer answers ${status} with Retry-After`, async () => {
      const h = await startReceiver({
        consumers: {
          logs: async () => {
            throw new VigilError(code, 'not now', { transient: true });
          },
        },
      });
      try {
        const res = await post(h.url('/v1/logs'), ERROR_LOG);
        assert.equal(res.status, status);
        assert.equal(res.headers.get('retry-after'), '1');
        const body = await statusBody(res);
        assert.equal(body.code, rpc);
        assert.match(body.message, /retry later/);
        assert.equal(h.receiver.stats().logs.refused, 1);
        assert.equal(h.receiver.stats().logs.accepted, 0);
      } finally {
        await h.stop();
      }
    });
  }

  test('a consumer failure that is not transient answers 500 and does not crash', async () => {
    const h = await startReceiver({ consumers: { logs: async () => Promise.reject(new Error('bug')) } });
    try {
      const res = await post(h.url('/v1/logs'), ERROR_LOG);
      assert.equal(res.status, 500);
      assert.equal((await statusBody(res)).code, 13);
    } finally {
      await h.stop();
    }
  });

  test('records that are not relevant are acknowledged without calling the consumer', async () => {
    let calls = 0;
    const h = await startReceiver({ consumers: { traces: async () => (calls++, { appended: 0, duplicates: 0 }) } });
    try {
      const res = await post(h.url('/v1/traces'), example('trace.json'));
      assert.equal(res.status, 200);
      assert.equal(calls, 0);
    } finally {
      await h.stop();
    }
  });
});

describe('OTLP/HTTP receiver: refusals', () => {
  let h: Harness;
  after(() => h.stop());

  test('malformed JSON → 400 with a google.rpc.Status body', async () => {
    h = await startReceiver({ config: { max_request_body_size: 64 * 1024 } });
    const res = await post(h.url('/v1/traces'), '{"resourceSpans": [');
    assert.equal(res.status, 400);
    const body = await statusBody(res);
    assert.equal(body.code, 3);
    assert.match(body.message, /request body is not valid JSON/);
  });

  test('a top level that is not the expected object → 400 naming it', async () => {
    const res = await post(h.url('/v1/logs'), '{"resourceLogs": 5}');
    assert.equal(res.status, 400);
    assert.match((await statusBody(res)).message, /resourceLogs must be an array, got number 5/);
  });

  test('a body that is not gzip while declared so → 400', async () => {
    const res = await post(h.url('/v1/logs'), ERROR_LOG, { 'content-encoding': 'gzip' });
    assert.equal(res.status, 400);
    assert.match((await statusBody(res)).message, /not valid gzip/);
  });

  test('over the size with a declared Content-Length → 413', async () => {
    const res = await post(h.url('/v1/traces'), Buffer.alloc(100 * 1024, 0x20));
    assert.equal(res.status, 413);
    assert.match((await statusBody(res)).message, /exceeds max_request_body_size \(65536 bytes\)/);
  });

  test('over the size while streaming a chunked body → 413', async () => {
    function* chunks() {
      for (let i = 0; i < 64; i++) yield Buffer.alloc(16 * 1024, 0x20);
    }
    const res = await postChunked(h.url('/v1/traces'), chunks());
    assert.equal(res.status, 413);
    assert.match(JSON.parse(res.body).message, /request body exceeds max_request_body_size/);
  });

  test('a gzip bomb → 413 quickly, without inflating it all', async () => {
    // 100 MiB of zeros is ~100 KiB of gzip (deflate tops out near 1:1000): under a 1 MiB wire
    // limit, far over it once inflated.
    const bomb = gzipSync(Buffer.alloc(100 * 1024 * 1024));
    assert.ok(bomb.length < 200 * 1024, `bomb is ${bomb.length} bytes`);
    const big = await startReceiver({ config: { max_request_body_size: 1024 * 1024 } });
    try {
      const started = performance.now();
      const res = await post(big.url('/v1/logs'), bomb, { 'content-encoding': 'gzip' });
      const elapsed = performance.now() - started;
      assert.equal(res.status, 413);
      assert.match((await statusBody(res)).message, /decompressed request body exceeds max_request_body_size \(1048576 bytes\)/);
      assert.ok(elapsed < 1000, `took ${elapsed} ms`);
      assert.equal(big.events.length, 0);
    } finally {
      await big.stop();
    }
  });

  test('unsupported content types → 415', async () => {
    const text = await post(h.url('/v1/traces'), 'x', { 'content-type': 'text/plain' });
    assert.equal(text.status, 415);
    await text.body?.cancel();
    const latin = await post(h.url('/v1/traces'), '{}', { 'content-type': 'application/json; charset=iso-8859-1' });
    assert.equal(latin.status, 415);
    await latin.body?.cancel();
    const br = await post(h.url('/v1/traces'), '{}', { 'content-encoding': 'br' });
    assert.equal(br.status, 415);
    await br.body?.cancel();
  });

  test('other paths → 404, other methods → 405', async () => {
    const res404 = await post(h.url('/v1/metrics'), '{}');
    assert.equal(res404.status, 404);
    assert.equal((await statusBody(res404)).code, 5);
    const res405 = await fetch(h.url('/v1/traces'));
    assert.equal(res405.status, 405);
    assert.equal(res405.headers.get('allow'), 'POST');
    await res405.body?.cancel();
  });

  test('a signal no pipeline consumes → 404 saying so', async () => {
    const only = await startReceiver({ consumers: { traces: collecting([]) } });
    try {
      const res = await post(only.url('/v1/logs'), ERROR_LOG);
      assert.equal(res.status, 404);
      assert.match((await statusBody(res)).message, /no pipeline consumes logs from receiver 'otlp'/);
    } finally {
      await only.stop();
    }
  });

  test('the receiver keeps serving after all of the above', async () => {
    const res = await post(h.url('/v1/logs'), ERROR_LOG);
    assert.equal(res.status, 200);
    const stats = h.receiver.stats();
    assert.ok(stats.traces.refused >= 4 && stats.logs.refused >= 2, JSON.stringify(stats));
  });
});

describe('OTLP/HTTP receiver: bearer token', () => {
  let h: Harness;
  after(() => h.stop());

  test('missing or wrong token → 401; right token → 200; the token is never logged', async () => {
    h = await startReceiver({ config: { auth: { bearer_token: TOKEN } } });
    const missing = await post(h.url('/v1/logs'), ERROR_LOG);
    assert.equal(missing.status, 401);
    assert.equal(missing.headers.get('www-authenticate'), 'Bearer');
    assert.equal((await statusBody(missing)).code, 16);
    for (const auth of [`Bearer wrong`, `Bearer ${TOKEN}x`, `Basic ${TOKEN}`, TOKEN]) {
      const res = await post(h.url('/v1/logs'), ERROR_LOG, { authorization: auth });
      assert.equal(res.status, 401, auth);
      await res.body?.cancel();
    }
    const ok = await post(h.url('/v1/logs'), ERROR_LOG, { authorization: `Bearer ${TOKEN}` });
    assert.equal(ok.status, 200);
    assert.equal(h.events.length, 1);
    assert.ok(!JSON.stringify(h.logger.entries).includes(TOKEN));
  });
});

describe('OTLP receiver: lifecycle and config', () => {
  test('a port in use → start() rejects with VIGIL_LISTEN_FAILED naming the endpoint', async () => {
    const first = await startReceiver();
    const port = first.receiver.address()!.port;
    const second = createOtlpReceiver(
      { id: 'otlp/second', logger: memoryLogger(), consumers: {} },
      { protocols: { http: { endpoint: `127.0.0.1:${port}` } }, max_request_body_size: 1024 },
    );
    try {
      await assert.rejects(second.start(), (err: unknown) => {
        assert.ok(isVigilError(err, 'VIGIL_LISTEN_FAILED'));
        assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}`));
        assert.match(err.message, /otlp\/second/);
        assert.match(err.message, /already in use/);
        assert.match(err.message, /protocols\.http\.endpoint/);
        return true;
      });
    } finally {
      await second.shutdown();
      await first.stop();
    }
  });

  test('shutdown waits for in-flight requests, stops accepting, and is idempotent', async () => {
    let release!: () => void;
    const h = await startReceiver({
      consumers: {
        logs: () =>
          new Promise((resolve) => {
            release = () => resolve({ appended: 1, duplicates: 0 });
          }),
      },
    });
    const url = h.url('/v1/logs');
    const pending = post(url, ERROR_LOG);
    while (!release) await new Promise((r) => setTimeout(r, 5));
    const stopping = h.receiver.shutdown();
    const again = h.receiver.shutdown();
    setTimeout(() => release(), 50);
    assert.equal((await pending).status, 200);
    await Promise.all([stopping, again]);
    await h.receiver.shutdown();
    await assert.rejects(post(url, ERROR_LOG));
  });

  test('http and grpc are both served when configured, without warnings', async () => {
    const logger = memoryLogger();
    const receiver = createOtlpReceiver(
      { id: 'otlp', logger, consumers: {} },
      { protocols: { http: { endpoint: '127.0.0.1:0' }, grpc: { endpoint: '127.0.0.1:0' } }, max_request_body_size: 1024 },
    );
    await receiver.start();
    try {
      assert.equal(logger.entries.filter((e) => e.level === 'warn').length, 0);
      assert.ok(receiver.address());
      assert.ok(receiver.grpcAddress()!.port > 0);
    } finally {
      await receiver.shutdown();
    }
  });

  test('config schema: defaults, http enabled when no protocol is given, unknown keys rejected', () => {
    const parse = (value: unknown) => {
      const ctx = new ParseContext();
      return { value: otlpReceiverFactory.schema.parse(value, ['receivers', 'otlp'], ctx), ctx };
    };
    const defaults = parse({});
    assert.ok(defaults.ctx.ok);
    assert.deepEqual(defaults.value, {
      protocols: {},
      max_request_body_size: 4 * 1024 * 1024,
      decode_threads: DEFAULT_DECODE_THREADS,
      admission: { request_limit_mib: 128, waiting_limit_mib: 32 },
    });
    const full = parse({ protocols: { http: null, grpc: { endpoint: ':5317' } }, max_request_body_size: '1MiB', auth: { bearer_token: 't' } });
    assert.ok(full.ctx.ok, JSON.stringify(full.ctx.issues));
    assert.deepEqual(full.value, {
      protocols: { http: { endpoint: '127.0.0.1:4318' }, grpc: { endpoint: '127.0.0.1:5317' } },
      max_request_body_size: 1024 * 1024,
      auth: { bearer_token: 't' },
      decode_threads: DEFAULT_DECODE_THREADS,
      admission: { request_limit_mib: 128, waiting_limit_mib: 32 },
    });
    const bad = parse({ protocols: { htp: {} }, auth: { bearer_token: '' } });
    assert.equal(bad.ctx.ok, false);
    assert.ok(bad.ctx.issues.some((i) => /unknown key 'htp'.*did you mean 'http'/.test(i.message)));
    assert.ok(bad.ctx.issues.some((i) => /bearer_token' must not be empty/.test(i.message)));
    assert.equal(otlpReceiverFactory.type, 'otlp');
    assert.deepEqual(otlpReceiverFactory.signals, ['traces', 'logs']);
  });
});

describe('OTLP/HTTP receiver: protobuf bodies', () => {
  const otlp = (root0214 as any).opentelemetry.proto;
  const TraceRequest = otlp.collector.trace.v1.ExportTraceServiceRequest;
  const hex = (h: string) => Buffer.from(h, 'hex');
  /** google.rpc.Status read with a schema of our own (field numbers from the spec). */
  const Status = protobuf.Root.fromJSON({
    nested: {
      Status: { fields: { code: { type: 'int32', id: 1 }, message: { type: 'string', id: 2 }, details: { rule: 'repeated', type: 'Any', id: 3 } } },
      Any: { fields: { typeUrl: { type: 'string', id: 1 }, value: { type: 'bytes', id: 2 } } },
    },
  }).lookupType('Status');

  const encodeTraces = (spans: object[]) =>
    Buffer.from(
      TraceRequest.encode(
        TraceRequest.fromObject({
          resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'agent' } }] }, scopeSpans: [{ spans }] }],
        }),
      ).finish(),
    );
  const errorSpan = (id: string) => ({
    traceId: hex(TRACE_ID),
    spanId: hex(id),
    name: 'run job',
    endTimeUnixNano: '1700000000000000000',
    status: { code: 2, message: 'ValueError: bad input' },
  });
  const postProto = (url: string, body: Buffer, headers: Record<string, string> = {}) => post(url, body, { 'content-type': 'application/x-protobuf', ...headers });

  async function protoStatus(res: Response): Promise<{ code: number; message: string }> {
    assert.equal(res.headers.get('content-type'), 'application/x-protobuf');
    return Status.decode(new Uint8Array(await res.arrayBuffer())) as unknown as { code: number; message: string };
  }

  let h: Harness;
  after(() => h.stop());

  test('a valid request → 200 with an empty protobuf response; gzip too; counted as http-protobuf', async () => {
    h = await startReceiver({ config: { max_request_body_size: 256 * 1024, auth: { bearer_token: TOKEN } } });
    const auth = { authorization: `Bearer ${TOKEN}` };
    const res = await postProto(h.url('/v1/traces'), encodeTraces([errorSpan('0000000000000001'), { ...errorSpan('0000000000000002'), status: { code: 1 } }]), auth);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/x-protobuf');
    assert.equal((await res.arrayBuffer()).byteLength, 0);
    const gz = await postProto(h.url('/v1/traces'), gzipSync(encodeTraces([errorSpan('0000000000000003')])), { ...auth, 'content-encoding': 'gzip' });
    assert.equal(gz.status, 200);
    await gz.body?.cancel();
    assert.deepEqual(
      h.events.map((e) => e.eventId),
      [`${TRACE_ID}:0000000000000001`, `${TRACE_ID}:0000000000000003`],
    );
    assert.deepEqual(h.events[0]!.payload, { state: 'error', outcome: { error: 'ValueError: bad input', output: [] } });
    const stats = h.receiver.stats().traces;
    assert.deepEqual(
      [
        stats.protocols['http-protobuf'].requests,
        stats.protocols['http-protobuf'].accepted,
        stats.protocols['http-protobuf'].irrelevant,
        stats.protocols['http-json'].requests,
      ],
      [2, 3, 1, 0],
    );
  });

  test('a span with a wrong wire type → 200 with a protobuf partial_success; the rest accepted', async () => {
    const before = h.events.length;
    // Append a span whose name (field 5) is a varint: well-formed protobuf, wrong type.
    const good = encodeTraces([errorSpan('0000000000000004')]);
    const badSpan = Buffer.concat([Buffer.from([0x0a, 16]), hex(TRACE_ID), Buffer.from([0x12, 8]), hex('0000000000000005'), Buffer.from([0x28, 0x07])]);
    const scopeSpans = Buffer.concat([Buffer.from([0x12, badSpan.length]), badSpan]);
    const resourceSpans = Buffer.concat([Buffer.from([0x12, scopeSpans.length]), scopeSpans]);
    const body = Buffer.concat([good, Buffer.from([0x0a, resourceSpans.length]), resourceSpans]);
    const res = await postProto(h.url('/v1/traces'), body, { authorization: `Bearer ${TOKEN}` });
    assert.equal(res.status, 200);
    const decoded = otlp.collector.trace.v1.ExportTraceServiceResponse.decode(new Uint8Array(await res.arrayBuffer()));
    assert.equal(Number(decoded.partialSuccess.rejectedSpans), 1);
    assert.match(decoded.partialSuccess.errorMessage, /resourceSpans\[1\]\.scopeSpans\[0\]\.spans\[0\]\.name: wire type VARINT, expected LEN/);
    assert.deepEqual(
      h.events.slice(before).map((e) => e.spanId),
      ['0000000000000004'],
    );
  });

  test('a truncated protobuf → 400 with a protobuf google.rpc.Status', async () => {
    const body = encodeTraces([errorSpan('0000000000000006')]);
    const res = await postProto(h.url('/v1/traces'), body.subarray(0, body.length - 4), { authorization: `Bearer ${TOKEN}` });
    assert.equal(res.status, 400);
    const status = await protoStatus(res);
    assert.equal(status.code, 3);
    assert.match(status.message, /not a valid protobuf ExportTraceServiceRequest: truncated/);
  });

  test('a missing token → 401, a gzip bomb → 413, both answered in protobuf', async () => {
    const unauthorized = await postProto(h.url('/v1/logs'), Buffer.alloc(0));
    assert.equal(unauthorized.status, 401);
    assert.equal((await protoStatus(unauthorized)).code, 16);
    const bomb = gzipSync(Buffer.alloc(20 * 1024 * 1024));
    const res = await postProto(h.url('/v1/logs'), bomb, { authorization: `Bearer ${TOKEN}`, 'content-encoding': 'gzip' });
    assert.equal(res.status, 413);
    assert.match((await protoStatus(res)).message, /decompressed request body exceeds max_request_body_size/);
    const stats = h.receiver.stats().logs.protocols['http-protobuf'];
    assert.deepEqual([stats.requests, stats.refused], [2, 2]);
  });

  for (const [code, status] of [
    ['VIGIL_STORE_UNAVAILABLE', 503],
    ['VIGIL_INGEST_BACKPRESSURE', 429],
  ] as const) {
    test(`${code} → ${status} with Retry-After and a protobuf Status`, async () => {
      const refusing = await startReceiver({
        consumers: {
          traces: async () => {
            throw new VigilError(code, 'not now', { transient: true });
          },
        },
      });
      try {
        const res = await postProto(refusing.url('/v1/traces'), encodeTraces([errorSpan('0000000000000007')]));
        assert.equal(res.status, status);
        assert.equal(res.headers.get('retry-after'), '1');
        assert.match((await protoStatus(res)).message, /retry later/);
      } finally {
        await refusing.stop();
      }
    });
  }
});
