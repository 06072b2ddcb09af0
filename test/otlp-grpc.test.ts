/**
 * OTLP/gRPC: a raw @grpc/grpc-js client (bytes in, bytes out) against the receiver, with requests
 * encoded by the independent 0.214 codec. The SDK exporters over gRPC are in otlp-sdk.test.ts.
 */
import { test, describe, after, before } from 'node:test';
import assert from 'node:assert/strict';
import http2, { type ClientHttp2Session } from 'node:http2';
import { Metadata, credentials, status as GrpcStatus } from '@grpc/grpc-js';
import type { ServiceError } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import root0214 from 'otlp-transformer-0214/build/src/generated/root.js';
import type { IngestConsumer, Signal } from '../src/component.ts';
import { VigilError, isVigilError } from '../src/errors.ts';
import { memoryLogger } from '../src/logger.ts';
import type { AgentEvent } from '../src/model/event.ts';
import { createOtlpReceiver } from '../src/receivers/otlp/factory.ts';
import type { OtlpReceiver, OtlpReceiverConfig } from '../src/receivers/otlp/factory.ts';
import { UNREAD_BYTES } from '../src/receivers/otlp/admission.ts';
import { RETRY_INFO_TYPE_URL } from '../src/receivers/otlp/protobuf.ts';
import { RawOtlpClient } from './helpers/raw-grpc.ts';
import { waitFor } from './helpers/vigil-process.ts';

const otlp = (root0214 as any).opentelemetry.proto;
const TraceRequest = otlp.collector.trace.v1.ExportTraceServiceRequest;
const LogsRequest = otlp.collector.logs.v1.ExportLogsServiceRequest;
const TRACE_ID = '5b8efff798038103d269b633813fc60c';
const TOKEN = 'grpc-s3cret';
const hex = (h: string) => Buffer.from(h, 'hex');
/** Resolves once `cond` holds (checked every 5 ms). */
const until = (cond: () => boolean, what: string) => waitFor(() => cond() || undefined, what, 10_000, 5);

/** google.rpc.Status and RetryInfo, with a schema of our own (field numbers from the spec). */
const rpc = protobuf.Root.fromJSON({
  nested: {
    Status: { fields: { code: { type: 'int32', id: 1 }, message: { type: 'string', id: 2 }, details: { rule: 'repeated', type: 'Any', id: 3 } } },
    Any: { fields: { typeUrl: { type: 'string', id: 1 }, value: { type: 'bytes', id: 2 } } },
    RetryInfo: { fields: { retryDelay: { type: 'Duration', id: 1 } } },
    Duration: { fields: { seconds: { type: 'int64', id: 1 }, nanos: { type: 'int32', id: 2 } } },
  },
});

const errorSpan = (id: string, message = 'ValueError: bad input') => ({
  traceId: hex(TRACE_ID),
  spanId: hex(id),
  name: 'run job',
  endTimeUnixNano: '1700000000000000000',
  status: { code: 2, message },
});
const tracesRequest = (spans: object[]) =>
  Buffer.from(
    TraceRequest.encode(
      TraceRequest.fromObject({
        resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'agent' } }] }, scopeSpans: [{ spans }] }],
      }),
    ).finish(),
  );
const logsRequest = (body: string, severityNumber = 17) =>
  Buffer.from(
    LogsRequest.encode(
      LogsRequest.fromObject({
        resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: '1700000000000000000', severityNumber, body: { stringValue: body } }] }] }],
      }),
    ).finish(),
  );

interface Harness {
  receiver: OtlpReceiver;
  events: AgentEvent[];
  call: (signal: Signal, body: Buffer, options?: { token?: string; gzip?: boolean }) => Promise<{ response?: Buffer; error?: ServiceError }>;
  stop: () => Promise<void>;
}

const collecting =
  (events: AgentEvent[]): IngestConsumer =>
  async (batch) => {
    events.push(...batch);
    return { appended: batch.length, duplicates: 0 };
  };

async function startReceiver(opts: { config?: Partial<OtlpReceiverConfig>; consumers?: Partial<Record<Signal, IngestConsumer>> } = {}): Promise<Harness> {
  const events: AgentEvent[] = [];
  const config: OtlpReceiverConfig = { protocols: { grpc: { endpoint: '127.0.0.1:0' } }, max_request_body_size: 1024 * 1024, ...opts.config };
  const receiver = createOtlpReceiver(
    { id: 'otlp', logger: memoryLogger(), consumers: opts.consumers ?? { traces: collecting(events), logs: collecting(events) } },
    config,
    {
      shutdownGraceMs: 1000,
    },
  );
  await receiver.start();
  const target = `127.0.0.1:${receiver.grpcAddress()!.port}`;
  const plain = new RawOtlpClient(target, credentials.createInsecure()) as any;
  const gzip = new RawOtlpClient(target, credentials.createInsecure(), { 'grpc.default_compression_algorithm': 2 }) as any;
  return {
    receiver,
    events,
    call: (signal, body, options = {}) =>
      new Promise((resolve) => {
        const metadata = new Metadata();
        if (options.token !== undefined) metadata.set('authorization', `Bearer ${options.token}`);
        (options.gzip ? gzip : plain)[signal](body, metadata, (error: ServiceError | null, response: Buffer) => resolve(error ? { error } : { response }));
      }),
    stop: async () => {
      plain.close();
      gzip.close();
      await receiver.shutdown();
    },
  };
}

function retryDelaySeconds(error: ServiceError): number | undefined {
  const [details] = error.metadata.get('grpc-status-details-bin');
  if (!details) return undefined;
  const status = rpc.lookupType('Status').decode(details as Buffer) as any;
  assert.equal(status.code, error.code);
  const retry = status.details.find((d: any) => d.typeUrl === RETRY_INFO_TYPE_URL);
  return retry ? Number((rpc.lookupType('RetryInfo').decode(retry.value) as any).retryDelay.seconds) : undefined;
}

describe('OTLP/gRPC receiver: accepting', () => {
  let h: Harness;
  before(async () => {
    h = await startReceiver();
  });
  after(() => h.stop());

  test('TraceService/Export and LogsService/Export accept, map and answer with an empty response', async () => {
    const traces = await h.call('traces', tracesRequest([errorSpan('0000000000000001'), { ...errorSpan('0000000000000002'), status: { code: 1 } }]));
    assert.equal(traces.error, undefined);
    assert.equal(traces.response!.length, 0);
    const logs = await h.call('logs', logsRequest('Traceback (most recent call last):\nZeroDivisionError: division by zero'), { gzip: true });
    assert.equal(logs.error, undefined);
    assert.deepEqual(
      h.events.map((e) => [e.source, e.kind]),
      [
        ['otlp.traces', 'execution.completed'],
        ['otlp.logs', 'execution.completed'],
      ],
    );
    const stats = h.receiver.stats();
    assert.deepEqual([stats.traces.protocols.grpc.requests, stats.traces.protocols.grpc.accepted, stats.traces.protocols.grpc.irrelevant], [1, 2, 1]);
    assert.deepEqual([stats.logs.protocols.grpc.requests, stats.logs.protocols.grpc.accepted], [1, 1]);
    assert.equal(stats.traces.protocols['http-json'].requests, 0);
  });

  test('a record with a wrong wire type → OK with partial_success; the rest accepted', async () => {
    const good = tracesRequest([errorSpan('0000000000000003')]);
    const badSpan = Buffer.concat([Buffer.from([0x0a, 16]), hex(TRACE_ID), Buffer.from([0x12, 8]), hex('0000000000000004'), Buffer.from([0x28, 0x07])]);
    const scopeSpans = Buffer.concat([Buffer.from([0x12, badSpan.length]), badSpan]);
    const body = Buffer.concat([good, Buffer.from([0x0a, scopeSpans.length + 2, 0x12, scopeSpans.length]), scopeSpans]);
    const { response, error } = await h.call('traces', body);
    assert.equal(error, undefined);
    const decoded = otlp.collector.trace.v1.ExportTraceServiceResponse.decode(response);
    assert.equal(Number(decoded.partialSuccess.rejectedSpans), 1);
    assert.match(decoded.partialSuccess.errorMessage, /spans\[0\]\.name: wire type VARINT/);
    assert.equal(h.events.at(-1)!.spanId, '0000000000000003');
    assert.equal(h.receiver.stats().traces.protocols.grpc.rejected, 1);
  });
});

describe('OTLP/gRPC receiver: refusals', () => {
  let h: Harness;
  before(async () => {
    h = await startReceiver({ config: { max_request_body_size: 64 * 1024 } });
  });
  after(() => h.stop());

  test('a truncated protobuf → INVALID_ARGUMENT naming the problem', async () => {
    const body = tracesRequest([errorSpan('0000000000000001')]);
    const { error } = await h.call('traces', body.subarray(0, body.length - 5));
    assert.equal(error?.code, GrpcStatus.INVALID_ARGUMENT);
    assert.match(error!.details, /not a valid protobuf ExportTraceServiceRequest: truncated/);
  });

  test('a message over max_request_body_size → RESOURCE_EXHAUSTED', async () => {
    const { error } = await h.call('logs', logsRequest('x'.repeat(100 * 1024)));
    assert.equal(error?.code, GrpcStatus.RESOURCE_EXHAUSTED);
  });

  test('a gzip bomb → RESOURCE_EXHAUSTED quickly, without inflating it all', async () => {
    const started = performance.now();
    const { error } = await h.call('logs', Buffer.alloc(32 * 1024 * 1024), { gzip: true });
    assert.equal(error?.code, GrpcStatus.RESOURCE_EXHAUSTED);
    assert.match(error!.details, /decompresses to a size larger than 65536/);
    assert.ok(performance.now() - started < 3000);
    assert.equal(h.events.length, 0);
  });

  test('refusals are counted per signal, including the ones gRPC answers itself', () => {
    const stats = h.receiver.stats();
    assert.deepEqual([stats.traces.protocols.grpc.requests, stats.traces.protocols.grpc.refused], [1, 1]);
    assert.deepEqual([stats.logs.protocols.grpc.requests, stats.logs.protocols.grpc.refused], [2, 2]);
  });

  test('a signal no pipeline consumes → UNIMPLEMENTED saying so', async () => {
    const only = await startReceiver({ consumers: { traces: collecting([]) } });
    try {
      const { error } = await only.call('logs', logsRequest('x'));
      assert.equal(error?.code, GrpcStatus.UNIMPLEMENTED);
      assert.match(error!.details, /no pipeline consumes logs from receiver 'otlp'/);
    } finally {
      await only.stop();
    }
  });

  for (const [code, grpcCode] of [
    ['VIGIL_INGEST_BACKPRESSURE', GrpcStatus.RESOURCE_EXHAUSTED],
    ['VIGIL_STORE_UNAVAILABLE', GrpcStatus.UNAVAILABLE],
  ] as const) {
    test(`${code} → ${GrpcStatus[grpcCode]} with a RetryInfo in the status details`, async () => {
      const refusing = await startReceiver({
        consumers: {
          logs: async () => {
            throw new VigilError(code, 'not now', { transient: true });
          },
        },
      });
      try {
        const { error } = await refusing.call('logs', logsRequest('Error: boom'));
        assert.equal(error?.code, grpcCode);
        assert.match(error!.details, /retry later/);
        assert.equal(retryDelaySeconds(error!), 1);
        assert.deepEqual([refusing.receiver.stats().logs.refused, refusing.receiver.stats().logs.accepted], [1, 0]);
      } finally {
        await refusing.stop();
      }
    });
  }

  test('a consumer failure that is not transient → INTERNAL, and the server keeps serving', async () => {
    const failing = await startReceiver({ consumers: { logs: async () => Promise.reject(new Error('bug')) } });
    try {
      const { error } = await failing.call('logs', logsRequest('Error: boom'));
      assert.equal(error?.code, GrpcStatus.INTERNAL);
      assert.equal(retryDelaySeconds(error!), undefined);
    } finally {
      await failing.stop();
    }
    const { error } = await h.call('logs', logsRequest('Error: still serving'));
    assert.equal(error, undefined);
  });
});

describe('OTLP/gRPC receiver: admission', () => {
  const EXPORT_TRACES = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';
  /** A message as gRPC frames it: a flag byte, its length (4 bytes), the message. */
  const framed = (message: Buffer) => {
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(message.length, 1);
    return Buffer.concat([prefix, message]);
  };
  /** A call on a raw HTTP/2 stream, so the test decides when its message's bytes are sent; resolves to its grpc-status. */
  const rawCall = (session: ClientHttp2Session) => {
    const stream = session.request({ ':method': 'POST', ':path': EXPORT_TRACES, 'content-type': 'application/grpc', te: 'trailers' });
    stream.on('error', () => {});
    const status = new Promise<string | undefined>((resolve) => {
      stream.on('response', (headers) => headers['grpc-status'] !== undefined && resolve(String(headers['grpc-status'])));
      stream.on('trailers', (trailers) => resolve(String(trailers['grpc-status'])));
      stream.on('close', () => resolve(undefined));
    });
    return { stream, status };
  };
  /** A receiver whose traces consumer holds every batch until `open`, so admitted calls keep their bytes. */
  const gatedReceiver = async (admission: { request_limit_mib: number; waiting_limit_mib: number }) => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const order: string[] = [];
    const h = await startReceiver({
      config: { admission },
      consumers: {
        traces: async (batch) => {
          await gate;
          order.push(...batch.map((e) => e.spanId ?? ''));
          return { appended: batch.length, duplicates: 0 };
        },
      },
    });
    return { h, open, order, session: http2.connect(`http://127.0.0.1:${h.receiver.grpcAddress()!.port}`) };
  };

  test('a call waits unread for room, charged 64 KiB of the waiting limit; past it RESOURCE_EXHAUSTED with RetryInfo; calls are admitted in order', async () => {
    // Each call is admitted for max_request_body_size (1 MiB here) before its message is read: one fits.
    const { h, open, order, session } = await gatedReceiver({ request_limit_mib: 1, waiting_limit_mib: 1 });
    try {
      // X sends two bytes of its message's prefix: admitted, its size still unknown.
      const bodyX = framed(tracesRequest([errorSpan('0000000000000001')]));
      const x = rawCall(session);
      x.stream.write(bodyX.subarray(0, 2));
      await until(() => h.receiver.admission().admittedBytes === 1024 * 1024, 'X admitted');
      // B waits, its message unread: charged what a paused stream holds (64 KiB), so 15 more fit in 1 MiB.
      const b = h.call('traces', tracesRequest([errorSpan('0000000000000002')]));
      await until(() => h.receiver.admission().waiting === 1, 'B waiting');
      assert.equal(h.receiver.admission().waitingBytes, UNREAD_BYTES);
      const more = Array.from({ length: 15 }, () => rawCall(session));
      await until(() => h.receiver.admission().waiting === 16, '15 more waiting');
      // One more would take the waiting past 1 MiB: refused at once, while X still holds.
      // A message larger than a stream's flow-control window (64 KiB), so the refusal comes while it is still being sent.
      const large = tracesRequest([{ ...errorSpan('0000000000000003'), attributes: [{ key: 'pad', value: { stringValue: 'x'.repeat(600_000) } }] }]);
      const { error } = await h.call('traces', large);
      assert.equal(error?.code, GrpcStatus.RESOURCE_EXHAUSTED);
      assert.match(error!.details, /admission\.request_limit_mib: 1.*admission\.waiting_limit_mib: 1/);
      assert.equal(retryDelaySeconds(error!), 1);
      assert.equal(h.receiver.stats().traces.refused, 1);
      // The 15 leave: their places come back.
      for (const m of more) m.stream.close(http2.constants.NGHTTP2_CANCEL);
      await until(() => h.receiver.admission().waiting === 1, 'the 15 gone');
      assert.equal(h.receiver.admission().waitingBytes, UNREAD_BYTES);
      // X's message arrives: X holds its length now, but B's 1 MiB does not fit beside it until X is answered.
      x.stream.end(bodyX.subarray(2));
      await until(() => h.receiver.admission().admittedBytes === bodyX.length - 5, 'X holding its message');
      assert.equal(h.receiver.admission().waiting, 1);
      open();
      assert.equal(await x.status, '0');
      assert.equal((await b).error, undefined);
      assert.deepEqual(order, ['0000000000000001', '0000000000000002']);
      await until(() => h.receiver.admission().admittedBytes === 0, 'all released');
      assert.deepEqual(h.receiver.admission(), { admittedBytes: 0, waitingBytes: 0, waiting: 0, waited: 16, refused: 1 });
    } finally {
      open();
      session.destroy();
      await h.stop();
    }
  });

  test('once its message arrives a call holds the message, not the body limit: calls of unknown size are not held to a count of the limit', async () => {
    // 2 MiB at 1 MiB a call would admit 2 calls at once if each held the body limit to its end.
    const { h, open, session } = await gatedReceiver({ request_limit_mib: 2, waiting_limit_mib: 1 });
    try {
      const calls = [];
      let held = 0;
      for (let i = 1; i <= 5; i++) {
        const body = tracesRequest([errorSpan(`000000000000000${i}`)]);
        calls.push(h.call('traces', body));
        held += body.length;
        await until(() => h.receiver.admission().admittedBytes === held, `call ${i} holding its message only`);
      }
      assert.equal(h.receiver.admission().waited, 0);
      open();
      for (const c of await Promise.all(calls)) assert.equal(c.error, undefined);
      await until(() => h.receiver.admission().admittedBytes === 0, 'all released');
    } finally {
      open();
      session.destroy();
      await h.stop();
    }
  });
});

describe('OTLP/gRPC receiver: bearer token', () => {
  let h: Harness;
  before(async () => {
    h = await startReceiver({ config: { auth: { bearer_token: TOKEN } } });
  });
  after(() => h.stop());

  test('missing or wrong token → UNAUTHENTICATED; the right one → OK', async () => {
    const missing = await h.call('logs', logsRequest('Error: boom'));
    assert.equal(missing.error?.code, GrpcStatus.UNAUTHENTICATED);
    for (const token of ['wrong', `${TOKEN}x`, '']) {
      const { error } = await h.call('logs', logsRequest('Error: boom'), { token });
      assert.equal(error?.code, GrpcStatus.UNAUTHENTICATED, token);
    }
    const ok = await h.call('logs', logsRequest('Error: boom'), { token: TOKEN });
    assert.equal(ok.error, undefined);
    assert.equal(h.events.length, 1);
  });
});

describe('OTLP/gRPC receiver: lifecycle', () => {
  test('a port in use → start() rejects with VIGIL_LISTEN_FAILED naming the endpoint and protocols.grpc.endpoint', async () => {
    const first = await startReceiver();
    const port = first.receiver.grpcAddress()!.port;
    const second = createOtlpReceiver(
      { id: 'otlp/second', logger: memoryLogger(), consumers: {} },
      { protocols: { grpc: { endpoint: `127.0.0.1:${port}` } }, max_request_body_size: 1024 },
    );
    try {
      await assert.rejects(second.start(), (err: unknown) => {
        assert.ok(isVigilError(err, 'VIGIL_LISTEN_FAILED'));
        assert.match(err.message, new RegExp(`OTLP/gRPC on 127\\.0\\.0\\.1:${port}`));
        assert.match(err.message, /otlp\/second/);
        assert.match(err.message, /already in use/);
        assert.match(err.message, /protocols\.grpc\.endpoint/);
        return true;
      });
    } finally {
      await second.shutdown();
      await first.stop();
    }
  });

  test('when gRPC cannot listen, the HTTP server that started is closed again', async () => {
    const first = await startReceiver();
    const port = first.receiver.grpcAddress()!.port;
    const both = createOtlpReceiver(
      { id: 'otlp', logger: memoryLogger(), consumers: {} },
      { protocols: { http: { endpoint: '127.0.0.1:0' }, grpc: { endpoint: `127.0.0.1:${port}` } }, max_request_body_size: 1024 },
    );
    try {
      await assert.rejects(both.start(), /protocols\.grpc\.endpoint/);
      assert.equal(both.address(), undefined);
    } finally {
      await both.shutdown();
      await first.stop();
    }
  });

  test('shutdown lets an in-flight call finish, then refuses; it is idempotent', async () => {
    let release!: () => void;
    const h = await startReceiver({
      consumers: {
        logs: () =>
          new Promise((resolve) => {
            release = () => resolve({ appended: 1, duplicates: 0 });
          }),
      },
    });
    const pending = h.call('logs', logsRequest('Error: boom'));
    while (!release) await new Promise((r) => setTimeout(r, 5));
    const stopping = h.receiver.shutdown();
    const again = h.receiver.shutdown();
    setTimeout(() => release(), 50);
    assert.equal((await pending).error, undefined);
    await Promise.all([stopping, again]);
    const after = await h.call('logs', logsRequest('Error: boom'));
    assert.ok(after.error, 'a call after shutdown fails');
    await h.stop();
  });
});
