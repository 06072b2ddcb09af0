/**
 * Admission control (src/receivers/otlp/admission.ts): the bytes of requests held at once and
 * waiting are bounded. The queue's rules on their own (with a model-based property), then a real
 * OTLP/HTTP receiver with raw sockets that hold their bodies back, then a real `vigil run` flooded
 * with unfinished 4 MiB uploads, its memory read from /proc. The gRPC side is in otlp-grpc.test.ts.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import http2, { type ClientHttp2Session } from 'node:http2';
import { connect, type Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { Metadata, credentials, type ServiceError } from '@grpc/grpc-js';
import fc from 'fast-check';
import root0214 from 'otlp-transformer-0214/build/src/generated/root.js';
import { memoryLogger } from '../src/logger.ts';
import { Admission, MIB, UNREAD_BYTES, type Held } from '../src/receivers/otlp/admission.ts';
import { createOtlpReceiver, type OtlpReceiver } from '../src/receivers/otlp/factory.ts';
import { otlpReceiverFactory } from '../src/receivers/otlp/factory.ts';
import { ParseContext } from '../src/config/schema.ts';
import type { AgentEvent } from '../src/model/event.ts';
import type { IngestConsumer } from '../src/component.ts';
import { propertyParams } from './helpers/random.ts';
import { RawOtlpClient } from './helpers/raw-grpc.ts';
import { accepting, freePort, spawnVigil, tempDir, untilReady, waitFor, writeConfig } from './helpers/vigil-process.ts';

const EXPORT_TRACES = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';
const TraceRequest = (root0214 as any).opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
/** A protobuf traces request with one failed span, encoded by the independent 0.214 codec. */
const grpcTraces = () =>
  Buffer.from(
    TraceRequest.encode(
      TraceRequest.fromObject({
        resourceSpans: [
          {
            scopeSpans: [
              {
                spans: [
                  {
                    traceId: Buffer.from('5b8efff798038103d269b633813fc60c', 'hex'),
                    spanId: Buffer.from('00000000000000bb', 'hex'),
                    name: 'execute_tool bash',
                    endTimeUnixNano: '1700000000000000000',
                    status: { code: 2, message: 'exit 1' },
                  },
                ],
              },
            ],
          },
        ],
      }),
    ).finish(),
  );

/** Resolves once `cond` holds (checked every 5 ms). */
const until = (cond: () => boolean, what: string, ms = 10_000) => waitFor(() => cond() || undefined, what, ms, 5);

describe('Admission: the queue', () => {
  test('admits at once while the bytes fit; then waits in arrival order, a small request behind a large one', async () => {
    const a = new Admission(10, 10);
    const first = a.acquire(8) as Held;
    assert.equal(typeof first.release, 'function');
    assert.deepEqual(a.stats(), { admittedBytes: 8, waitingBytes: 0, waiting: 0, waited: 0, refused: 0 });
    const order: string[] = [];
    const big = (a.acquire(4) as Promise<Held | undefined>).then((r) => (order.push('big'), r));
    // 1 byte would fit beside the 8, but it does not pass the 4 that came first.
    const small = (a.acquire(1) as Promise<Held | undefined>).then((r) => (order.push('small'), r));
    assert.deepEqual(a.stats(), { admittedBytes: 8, waitingBytes: 5, waiting: 2, waited: 2, refused: 0 });
    first.release();
    first.release(); // twice gives back nothing more
    const [bigRelease, smallRelease] = await Promise.all([big, small]);
    assert.deepEqual(order, ['big', 'small']);
    assert.deepEqual(a.stats(), { admittedBytes: 5, waitingBytes: 0, waiting: 0, waited: 2, refused: 0 });
    bigRelease!.release();
    smallRelease!.release();
    assert.equal(a.stats().admittedBytes, 0);
  });

  test('a request that would take the waiting past its limit is refused at once and counted', () => {
    const a = new Admission(10, 5);
    void a.acquire(10);
    assert.ok(a.acquire(5) instanceof Promise);
    assert.equal(a.acquire(1), undefined);
    assert.deepEqual(a.stats(), { admittedBytes: 10, waitingBytes: 5, waiting: 1, waited: 1, refused: 1 });
    // With no waiting room at all, a request that does not fit is refused.
    const none = new Admission(10, 0);
    void none.acquire(6);
    assert.equal(none.acquire(6), undefined);
    assert.equal(typeof (none.acquire(4) as Held).release, 'function');
  });

  test('a waiter whose client leaves is taken out: its promise gives undefined, and those behind it move up', async () => {
    const a = new Admission(10, 20);
    const held = a.acquire(6) as Held;
    let leave!: () => void;
    const leaving = a.acquire(8, (drop) => (leave = drop)) as Promise<Held | undefined>;
    const behind = a.acquire(4) as Promise<Held | undefined>;
    leave();
    assert.equal(await leaving, undefined);
    // The 4 fits beside the 6 once the 8 ahead of it is gone.
    const release = await behind;
    assert.deepEqual(a.stats(), { admittedBytes: 10, waitingBytes: 0, waiting: 0, waited: 2, refused: 0 });
    leave(); // after it left, nothing more happens
    release!.release();
    held.release();
    assert.equal(a.stats().admittedBytes, 0);
  });

  test('a request limit of 0 admits everything; a request larger than the limit is admitted alone', async () => {
    const off = new Admission(0, 0);
    for (let i = 0; i < 5; i++) assert.equal(typeof (off.acquire(1 << 30) as Held).release, 'function');
    assert.equal(off.stats().admittedBytes, 0);
    const a = new Admission(10, 100);
    const small = a.acquire(3) as Held;
    const huge = a.acquire(50) as Promise<Held | undefined>;
    small.release();
    const release = await huge;
    assert.equal(a.stats().admittedBytes, 10);
    release!.release();
    assert.equal(a.stats().admittedBytes, 0);
  });

  test('a waiting request is charged against the waiting limit what its unread body can hold, not its size', async () => {
    // Admitted for 8 each, charged 2 each while waiting (a paused stream's buffer).
    const a = new Admission(16, 6, 2);
    const held = [a.acquire(8) as Held, a.acquire(8) as Held];
    const waiting = [a.acquire(8), a.acquire(8), a.acquire(1)] as Array<Promise<Held | undefined>>;
    assert.ok(waiting.every((w) => w instanceof Promise));
    assert.deepEqual(a.stats(), { admittedBytes: 16, waitingBytes: 5, waiting: 3, waited: 3, refused: 0 });
    // 5 + 2 would pass 6.
    assert.equal(a.acquire(8), undefined);
    held[0]!.release();
    const first = (await waiting[0])!;
    assert.deepEqual(a.stats(), { admittedBytes: 16, waitingBytes: 3, waiting: 2, waited: 3, refused: 1 });
    for (const h of [first, held[1]!]) h.release();
    for (const w of waiting.slice(1)) (await w)!.release();
    assert.deepEqual(a.stats().admittedBytes, 0);
  });

  test('a request admitted for the body limit and read shrinks to what it took, letting those behind it in; it never grows', async () => {
    const a = new Admission(10, 100);
    const gzip = a.acquire(8) as Held;
    const behind = a.acquire(6) as Promise<Held | undefined>;
    assert.equal(a.stats().waiting, 1);
    gzip.shrinkTo(12); // a larger size changes nothing
    assert.equal(a.stats().admittedBytes, 8);
    gzip.shrinkTo(3);
    const next = (await behind)!;
    assert.deepEqual(a.stats(), { admittedBytes: 9, waitingBytes: 0, waiting: 0, waited: 1, refused: 0 });
    gzip.release();
    gzip.shrinkTo(0); // released: nothing more comes back
    gzip.release();
    assert.equal(a.stats().admittedBytes, 6);
    next.release();
    assert.equal(a.stats().admittedBytes, 0);
  });

  test('property: whatever the order of requests, shrinks, releases and departures, the counts are exact, the bounds hold and every byte comes back', async () => {
    // Each step: acquire (size), shrink or release one held, or drop one waiting.
    const step = fc.oneof(
      fc.record({ op: fc.constant('acquire' as const), bytes: fc.integer({ min: 0, max: 12 }) }),
      fc.record({ op: fc.constant('shrink' as const), at: fc.nat(20), to: fc.integer({ min: -1, max: 12 }) }),
      fc.record({ op: fc.constant('release' as const), at: fc.nat(20) }),
      fc.record({ op: fc.constant('drop' as const), at: fc.nat(20) }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 0, max: 15 }),
        fc.integer({ min: 1, max: 12 }),
        fc.array(step, { maxLength: 60 }),
        async (limit, waitingLimit, unreadLimit, steps) => {
          const a = new Admission(limit, waitingLimit, unreadLimit);
          // The model: what each holder is charged, what each waiter is charged of the waiting limit.
          const held: Array<{ h: Held; charged: number }> = [];
          const waiting: Array<{ drop: () => void; unread: number }> = [];
          let admittedOrder: number[] = [];
          let next = 0;
          for (const s of steps) {
            if (s.op === 'acquire') {
              const id = next++;
              const bytes = Math.min(s.bytes, limit);
              let drop = () => {};
              const r = a.acquire(s.bytes, (d) => (drop = d));
              if (r instanceof Promise) {
                const entry = { drop: () => drop(), unread: Math.min(bytes, unreadLimit) };
                waiting.push(entry);
                void r.then((h) => {
                  waiting.splice(waiting.indexOf(entry), 1);
                  if (h) {
                    held.push({ h, charged: bytes });
                    admittedOrder.push(id);
                  }
                });
              } else if (r !== undefined) {
                held.push({ h: r, charged: bytes });
                admittedOrder.push(id);
              }
            } else if (s.op === 'shrink' && held.length > 0) {
              const one = held[s.at % held.length]!;
              one.h.shrinkTo(s.to);
              one.charged = Math.min(one.charged, Math.max(0, s.to));
            } else if (s.op === 'release' && held.length > 0) {
              held.splice(s.at % held.length, 1)[0]!.h.release();
            } else if (s.op === 'drop' && waiting.length > 0) {
              waiting[s.at % waiting.length]!.drop();
            }
            await Promise.resolve(); // let admitted waiters record themselves
            await Promise.resolve();
            const st = a.stats();
            assert.equal(
              st.admittedBytes,
              held.reduce((sum, x) => sum + x.charged, 0),
            );
            assert.equal(
              st.waitingBytes,
              waiting.reduce((sum, x) => sum + x.unread, 0),
            );
            assert.ok(st.admittedBytes <= limit, `admitted ${st.admittedBytes} > limit ${limit}`);
            assert.ok(st.waitingBytes <= waitingLimit, `waiting ${st.waitingBytes} > limit ${waitingLimit}`);
            assert.equal(st.waiting, waiting.length);
            // Admission keeps arrival order.
            assert.deepEqual(
              admittedOrder,
              [...admittedOrder].sort((x, y) => x - y),
            );
          }
          // Everyone still waiting leaves, every holder releases: nothing is left held.
          for (const w of [...waiting]) w.drop();
          while (held.length > 0) {
            held.pop()!.h.release();
            await Promise.resolve();
            await Promise.resolve();
          }
          admittedOrder = [];
          assert.deepEqual(a.stats().admittedBytes, 0);
          assert.deepEqual(a.stats().waitingBytes, 0);
        },
      ),
      propertyParams({ numRuns: 300 }),
    );
  });

  test('config: the limits default to the Collector\u2019s; a request limit below the body size is an error saying what to set', () => {
    const parse = (value: unknown) => {
      const ctx = new ParseContext();
      return { value: otlpReceiverFactory.schema.parse(value, ['receivers', 'otlp'], ctx), ctx };
    };
    assert.deepEqual(parse({}).value?.admission, { request_limit_mib: 128, waiting_limit_mib: 32 });
    assert.deepEqual(parse({ admission: { request_limit_mib: 0 } }).value?.admission, { request_limit_mib: 0, waiting_limit_mib: 32 });
    const low = parse({ max_request_body_size: '8MiB', admission: { request_limit_mib: 4 } });
    assert.equal(low.ctx.ok, false);
    const issue = low.ctx.issues.find((i) => i.path.join('.') === 'receivers.otlp.admission.request_limit_mib');
    assert.ok(issue, JSON.stringify(low.ctx.issues));
    assert.match(issue.message, /could never be admitted; set it to at least 8, or to 0 to turn admission off/);
    const negative = parse({ admission: { waiting_limit_mib: -1 } });
    assert.equal(negative.ctx.ok, false);
  });
});

/** A raw HTTP/1.1 request whose body is sent in parts under the test's control. */
class HeldRequest {
  readonly socket: Socket;
  private answer = '';
  readonly answered: Promise<string>;

  constructor(port: number, declared: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.on('error', () => {});
    this.socket.setEncoding('latin1');
    this.answered = new Promise((resolve) => {
      this.socket.on('data', (d: string) => {
        this.answer += d;
        if (/\r\n\r\n/.test(this.answer)) resolve(this.answer);
      });
      this.socket.on('close', () => resolve(this.answer));
    });
    this.socket.write(`POST /v1/traces HTTP/1.1\r\nHost: vigil\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`);
  }

  send(bytes: Buffer): void {
    this.socket.write(bytes);
  }
}

/** A started OTLP/HTTP receiver with a 1 MiB body limit and these admission limits, its traces going to `traces`. */
async function startHttpReceiver(
  admission: { request_limit_mib: number; waiting_limit_mib: number },
  traces: IngestConsumer,
  logger = memoryLogger(),
): Promise<{ receiver: OtlpReceiver; port: number }> {
  const receiver = createOtlpReceiver(
    { id: 'otlp', logger, consumers: { traces } },
    { protocols: { http: { endpoint: '127.0.0.1:0' } }, max_request_body_size: MIB, admission },
    { shutdownGraceMs: 500 },
  );
  await receiver.start();
  return { receiver, port: receiver.address()!.port };
}

/** A consumer that keeps what it is given in `events`. */
const collecting =
  (events: AgentEvent[]): IngestConsumer =>
  async (batch) => {
    events.push(...batch);
    return { appended: batch.length, duplicates: 0 };
  };

/** An OTLP/JSON traces request with one failed span, padded with trailing whitespace to exactly `size` bytes. */
function failedSpanBody(size: number, spanId: string): Buffer {
  const json = JSON.stringify({
    resourceSpans: [
      {
        scopeSpans: [
          {
            spans: [
              {
                traceId: '5b8efff798038103d269b633813fc60c',
                spanId,
                name: 'execute_tool bash',
                endTimeUnixNano: '1700000000000000000',
                status: { code: 2, message: 'exit 1' },
              },
            ],
          },
        ],
      },
    ],
  });
  return Buffer.concat([Buffer.from(json), Buffer.alloc(size - json.length, 0x20)]);
}

describe('Admission: OTLP/HTTP', () => {
  test(
    'bodies past the request limit wait unread, in order; past the waiting limit 429 with Retry-After; a waiter that leaves gives its place back',
    { timeout: 30_000 },
    async () => {
      const events: AgentEvent[] = [];
      const logger = memoryLogger();
      const { receiver, port } = await startHttpReceiver({ request_limit_mib: 2, waiting_limit_mib: 1 }, collecting(events), logger);
      const open: HeldRequest[] = [];
      const held = (declared: number) => {
        const r = new HeldRequest(port, declared);
        open.push(r);
        return r;
      };
      try {
        const bodyA = failedSpanBody(MIB, '0000000000000001');
        const bodyB = failedSpanBody(MIB, '0000000000000002');
        const bodyC = failedSpanBody(MIB, '0000000000000003');
        // A and B are admitted (2 MiB: the limit) and send half of their bodies.
        const a = held(MIB);
        a.send(bodyA.subarray(0, MIB / 2));
        await until(() => receiver.admission().admittedBytes === MIB, 'A admitted');
        const b = held(MIB);
        b.send(bodyB.subarray(0, MIB / 2));
        await until(() => receiver.admission().admittedBytes === 2 * MIB, 'B admitted');
        // C must wait, and sends its whole body meanwhile; a waiter is charged what its unread body
        // can hold (64 KiB), so C and 15 more fill the waiting limit (1 MiB).
        const c = held(MIB);
        c.send(bodyC);
        await until(() => receiver.admission().waiting === 1, 'C waiting');
        assert.equal(receiver.admission().waitingBytes, UNREAD_BYTES);
        const more = Array.from({ length: 15 }, () => held(MIB));
        await until(() => receiver.admission().waiting === 16, '15 more waiting');
        // D, however small, would take the waiting past its limit: refused at once.
        const d = held(10);
        d.send(Buffer.from('{}        '));
        const refused = await d.answered;
        assert.match(refused, /^HTTP\/1\.1 429 /);
        assert.match(refused, /\r\nRetry-After: 1\r\n/i);
        assert.match(refused, /admission\.request_limit_mib: 2.*admission\.waiting_limit_mib: 1/);
        assert.deepEqual(receiver.admission(), { admittedBytes: 2 * MIB, waitingBytes: MIB, waiting: 16, waited: 16, refused: 1 });
        assert.equal(receiver.stats().traces.refused, 1);
        const metric = (name: string) => {
          const m = receiver.metrics!().find((x) => x.name === name);
          return m?.type === 'histogram' ? undefined : m?.value;
        };
        assert.equal(metric('vigil_receiver_admitted_bytes'), 2 * MIB);
        assert.equal(metric('vigil_receiver_waiting_bytes'), MIB);
        assert.equal(metric('vigil_receiver_waiting_requests'), 16);
        assert.equal(metric('vigil_receiver_admission_refused_total'), 1);
        // C's whole body was sent, but it is not answered while it waits.
        assert.equal(await Promise.race([c.answered, new Promise((r) => setImmediate(() => r('not yet')))]), 'not yet');
        // The 15 behind C leave: their places come back.
        for (const r of more) r.socket.destroy();
        await until(() => receiver.admission().waiting === 1, 'the 15 gone');
        assert.equal(receiver.admission().waitingBytes, UNREAD_BYTES);

        // A's client goes away mid-body: its place goes to C, which is read and answered.
        a.socket.destroy();
        const answerC = await c.answered;
        assert.match(answerC, /^HTTP\/1\.1 200 /);
        assert.equal(events.length, 1);

        // C is answered, so its place is free again: F takes it (its body unsent), E waits, then leaves.
        await until(() => receiver.admission().admittedBytes === MIB, 'C released');
        const f = held(MIB);
        await until(() => receiver.admission().admittedBytes === 2 * MIB, 'F admitted');
        const e = held(MIB);
        await until(() => receiver.admission().waiting === 1, 'E waiting');
        e.socket.destroy();
        await until(() => receiver.admission().waiting === 0 && receiver.admission().waitingBytes === 0, 'E gone');
        f.socket.destroy();
        await until(() => receiver.admission().admittedBytes === MIB, 'F released');

        // B finishes its body and is answered; nothing is held afterwards.
        b.send(bodyB.subarray(MIB / 2));
        assert.match(await b.answered, /^HTTP\/1\.1 200 /);
        assert.equal(events.length, 2);
        await until(() => receiver.admission().admittedBytes === 0, 'all released');
        // The 429, and the two clients that left mid-body (A, F): refusals, never internal errors.
        assert.deepEqual(
          logger.entries.filter((r) => r.msg === 'OTLP/HTTP request refused').map((r) => r.status),
          [429, 400, 400],
        );
        assert.equal(logger.entries.filter((r) => r.msg === 'OTLP/HTTP request failed').length, 0);
        assert.equal(receiver.stats().traces.refused, 3);
      } finally {
        for (const r of open) r.socket.destroy();
        await receiver.shutdown();
      }
    },
  );
});

describe('Admission: OTLP/HTTP with Expect: 100-continue', () => {
  test(
    'a client that asks first is told to send its body only once admitted; refused, it is answered at once and the connection closes',
    { timeout: 30_000 },
    async () => {
      const events: AgentEvent[] = [];
      const { receiver, port } = await startHttpReceiver({ request_limit_mib: 1, waiting_limit_mib: 1 }, collecting(events));
      const sockets: Socket[] = [];
      /** A request that sends its head with `Expect: 100-continue` and waits to be told to send its body. */
      const asking = (headers: string) => {
        const socket = connect(port, '127.0.0.1');
        socket.on('error', () => {});
        socket.setEncoding('latin1');
        let received = '';
        socket.on('data', (d: string) => (received += d));
        sockets.push(socket);
        socket.write(`POST /v1/traces HTTP/1.1\r\nHost: vigil\r\n${headers}Expect: 100-continue\r\n\r\n`);
        return { socket, received: () => received };
      };
      try {
        // A holds the whole limit, half its body sent.
        const a = new HeldRequest(port, MIB);
        sockets.push(a.socket);
        a.send(failedSpanBody(MIB, '0000000000000001').subarray(0, MIB / 2));
        await until(() => receiver.admission().admittedBytes === MIB, 'A admitted');
        const body = failedSpanBody(2000, '0000000000000002');
        const b = asking(`Content-Type: application/json\r\nContent-Length: ${body.length}\r\n`);
        await until(() => receiver.admission().waiting === 1, 'B waiting');
        // Node would have answered 100 Continue as the head arrived; B waits without it.
        await new Promise((resolve) => setTimeout(resolve, 50));
        assert.equal(b.received(), '');
        a.socket.destroy();
        await until(() => b.received() === 'HTTP/1.1 100 Continue\r\n\r\n', 'B told to send its body');
        b.socket.write(body);
        await until(() => /\r\n\r\nHTTP\/1\.1 200 /.test(b.received()), 'B answered');
        assert.equal(events.length, 1);
        // Refused before it sent its body: the answer comes at once, without 100 Continue, and the connection ends.
        const c = asking('Content-Type: text/plain\r\nContent-Length: 10\r\n');
        await new Promise((resolve) => c.socket.once('close', resolve));
        assert.match(c.received(), /^HTTP\/1\.1 415 /);
        assert.match(c.received(), /\r\nConnection: close\r\n/i);
      } finally {
        for (const s of sockets) s.destroy();
        await receiver.shutdown();
      }
    },
  );
});

describe('Admission: OTLP/HTTP bodies of unknown size', () => {
  test('a gzip body is admitted for the body limit and, once read, holds its inflated length: more fit beside it', { timeout: 30_000 }, async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // 2 MiB at 1 MiB a request would admit 2 gzip requests at once if each held the body limit to its end.
    const { receiver, port } = await startHttpReceiver({ request_limit_mib: 2, waiting_limit_mib: 1 }, async (batch) => {
      await gate; // answered only when the test says: each request keeps what it holds
      return { appended: batch.length, duplicates: 0 };
    });
    const url = `http://127.0.0.1:${port}/v1/traces`;
    try {
      const answers: Array<Promise<Response>> = [];
      for (let i = 1; i <= 5; i++) {
        const body = gzipSync(failedSpanBody(2000, `000000000000000${i}`));
        answers.push(fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } }));
        await until(() => receiver.admission().admittedBytes === i * 2000, `request ${i} holding its 2,000 inflated bytes`);
      }
      assert.equal(receiver.admission().waited, 0);
      open();
      for (const res of await Promise.all(answers)) {
        assert.equal(res.status, 200);
        await res.arrayBuffer();
      }
      await until(() => receiver.admission().admittedBytes === 0, 'all released');
    } finally {
      open();
      await receiver.shutdown();
    }
  });
});

describe('Admission: vigil run flooded with unfinished uploads', () => {
  /** A vigil run on the SQLite default, serving OTLP/HTTP and OTLP/gRPC with 32 MiB held and 8 waiting at most. */
  async function floodedVigil(): Promise<{ http: number; grpc: number; rssKiB: () => number; stop: () => Promise<void> }> {
    const dir = tempDir();
    const http = await freePort();
    const grpc = await freePort();
    const config = writeConfig(
      dir,
      `receivers:
  otlp:
    protocols:
      http: { endpoint: 127.0.0.1:${http} }
      grpc: { endpoint: 127.0.0.1:${grpc} }
    admission: { request_limit_mib: 32, waiting_limit_mib: 8 }
processors:
  classify: {}
exporters:
  file/work: { path: ${join(dir, 'work.jsonl')} }
state:
  sqlite: { path: ${join(dir, 'state.db')} }
service:
  pipelines:
    traces: { receivers: [otlp], processors: [classify], exporters: [file/work] }
`,
    );
    const vigil = spawnVigil(['run', '-c', config]);
    await untilReady(vigil, accepting(`http://127.0.0.1:${http}/v1/traces`));
    return {
      http,
      grpc,
      rssKiB: () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${vigil.child.pid}/status`, 'utf8'))![1]),
      stop: async () => {
        vigil.child.kill('SIGTERM');
        assert.equal(await vigil.exited, 0, vigil.stderr().slice(-2000));
      },
    };
  }

  test('a burst of 100 small exports at once, gRPC and gzip OTLP/HTTP, is answered without a refusal', { timeout: 60_000 }, async () => {
    // Each is admitted for the body limit (4 MiB: 8 at a time in 32 MiB) until its body is read, then
    // holds its size; waiting, each is charged 64 KiB of the 8 MiB. Charged 4 MiB while waiting and
    // to its end, as before, only 8 + 2 of each burst got in and the other 90 were refused.
    const vigil = await floodedVigil();
    const client = new RawOtlpClient(`127.0.0.1:${vigil.grpc}`, credentials.createInsecure()) as any;
    try {
      const codes = await Promise.all(
        Array.from(
          { length: 100 },
          () => new Promise<number>((resolve) => client.traces(grpcTraces(), new Metadata(), (err: ServiceError | null) => resolve(err ? err.code : 0))),
        ),
      );
      assert.deepEqual([...new Set(codes)], [0], `gRPC status codes: ${codes.join(' ')}`);
      const body = gzipSync(failedSpanBody(2000, '00000000000000ab'));
      const statuses = await Promise.all(
        Array.from({ length: 100 }, async () => {
          const res = await fetch(`http://127.0.0.1:${vigil.http}/v1/traces`, {
            method: 'POST',
            body,
            headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
          });
          await res.arrayBuffer();
          return res.status;
        }),
      );
      assert.deepEqual([...new Set(statuses)], [200], `HTTP statuses: ${statuses.join(' ')}`);
    } finally {
      client.close();
      await vigil.stop();
    }
  });

  /** A body one byte short of `size`: the upload never completes. */
  const SIZE = 4 * MIB - 1024;
  const UNFINISHED = Buffer.alloc(SIZE - 1, 0x20);

  test(
    'OTLP/HTTP: 300 connections each holding 4 MiB of an unfinished body; memory stays bounded, 429 for those past the limits, and a request that fits is answered after',
    { timeout: 120_000 },
    async () => {
      const vigil = await floodedVigil();
      const sockets: Socket[] = [];
      try {
        const before = vigil.rssKiB();
        const statuses: string[] = [];
        for (let i = 0; i < 300; i++) {
          const s = connect(vigil.http, '127.0.0.1');
          s.on('error', () => {});
          s.setEncoding('latin1');
          s.once('data', (d: string) => statuses.push(d.slice(9, 12)));
          s.write(`POST /v1/traces HTTP/1.1\r\nHost: vigil\r\nContent-Type: application/json\r\nContent-Length: ${SIZE}\r\n\r\n`);
          s.write(UNFINISHED);
          sockets.push(s);
        }
        // 8 fit (32 MiB); 128 wait, each charged 64 KiB of the 8 MiB for what its unread body can
        // hold; the other 164 are refused with 429 and their bodies dropped.
        await until(() => statuses.length === 164, '164 refusals', 60_000);
        assert.deepEqual([...new Set(statuses)], ['429']);
        const after = vigil.rssKiB();
        // Unbounded, 300 bodies of 4 MiB took vigil run from ~100 MiB to 1.28 GiB (round 35).
        assert.ok(after - before < 200 * 1024, `RSS grew by ${Math.round((after - before) / 1024)} MiB (${before} → ${after} KiB)`);
        // The held uploads go away; a request that fits is answered (retried as an SDK would after a 429).
        for (const s of sockets) s.destroy();
        const body = new Uint8Array(failedSpanBody(2000, '00000000000000aa'));
        let status = 0;
        for (let attempt = 0; attempt < 50 && status !== 200; attempt++) {
          const res = await fetch(`http://127.0.0.1:${vigil.http}/v1/traces`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
          status = res.status;
          await res.arrayBuffer();
          if (status !== 200) await new Promise((r) => setTimeout(r, 100));
        }
        assert.equal(status, 200);
      } finally {
        for (const s of sockets) s.destroy();
        await vigil.stop();
      }
    },
  );

  test(
    'OTLP/gRPC: 300 calls each holding 4 MiB of an unfinished message; memory stays bounded (streams wait unread), and a call is answered after',
    { timeout: 120_000 },
    async () => {
      const vigil = await floodedVigil();
      const sessions: ClientHttp2Session[] = [];
      try {
        const before = vigil.rssKiB();
        const ended: string[] = [];
        const frame = Buffer.alloc(5);
        frame.writeUInt32BE(SIZE, 1);
        for (let i = 0; i < 300; i++) {
          if (i % 50 === 0) {
            const session = http2.connect(`http://127.0.0.1:${vigil.grpc}`);
            session.on('error', () => {});
            sessions.push(session);
          }
          const stream = sessions.at(-1)!.request({ ':method': 'POST', ':path': EXPORT_TRACES, 'content-type': 'application/grpc', te: 'trailers' });
          // A refused call's stream ends while its message is still being sent.
          stream.on('error', () => {});
          stream.on('close', () => ended.push('closed'));
          stream.write(frame);
          stream.write(UNFINISHED);
        }
        // 8 are admitted (32 MiB at 4 MiB a call), 128 wait (64 KiB each of 8 MiB), the other 164 are
        // refused: their streams end.
        await until(() => ended.length === 164, '164 calls refused', 60_000);
        const after = vigil.rssKiB();
        // Unbounded (grpc-js reading every message whole), 300 such calls took vigil run from ~110 MiB to 1.33 GiB (round 35).
        assert.ok(after - before < 200 * 1024, `RSS grew by ${Math.round((after - before) / 1024)} MiB (${before} → ${after} KiB)`);
        for (const s of sessions) s.destroy();
        const client = new RawOtlpClient(`127.0.0.1:${vigil.grpc}`, credentials.createInsecure()) as any;
        try {
          let code: number | undefined = -1;
          for (let attempt = 0; attempt < 50 && code !== undefined; attempt++) {
            code = await new Promise<number | undefined>((resolve) =>
              client.traces(grpcTraces(), new Metadata(), (err: ServiceError | null) => resolve(err ? err.code : undefined)),
            );
            if (code !== undefined) await new Promise((r) => setTimeout(r, 100));
          }
          assert.equal(code, undefined);
        } finally {
          client.close();
        }
      } finally {
        for (const s of sessions) s.destroy();
        await vigil.stop();
      }
    },
  );
});
