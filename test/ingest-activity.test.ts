/**
 * Requests go first (src/internal/ingest-activity.ts): the receivers tell which requests they are
 * answering, and pipeline pages and deliveries wait, bounded, for a moment without any — unless
 * the pipeline is behind, or it is draining for shutdown. The clock and the loop's turns are
 * injected, so nothing here sleeps; the receivers' part runs real OTLP clients (the SDK's
 * OTLP/HTTP exporter, a grpc-js client) against the real receiver, and the runner's part a real
 * memory store and the real processors.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import type { ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import type { OperatorFunction } from 'rxjs';
import type { IngestConsumer } from '../src/component.ts';
import { defaultsOf } from '../src/config/schema.ts';
import { IngestActivity, type ActivityTimers } from '../src/internal/ingest-activity.ts';
import { memoryLogger } from '../src/logger.ts';
import type { AgentEvent } from '../src/model/event.ts';
import { classifyFactory } from '../src/processors/classify/factory.ts';
import type { WorkPage } from '../src/processors/page.ts';
import { createOtlpReceiver } from '../src/receivers/otlp/factory.ts';
import { DEFAULT_DELIVERY } from '../src/exporters/delivery.ts';
import type { WorkOutboxItem } from '../src/model/work.ts';
import { ExporterRunner } from '../src/service/exporter-runner.ts';
import { failedToolSpans } from './helpers/sdk-spans.ts';
import { BEHIND_AFTER_FULL_PAGES, PipelineRunner } from '../src/service/pipeline-runner.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { stateClient } from '../src/store/state-client.ts';
import { event } from './helpers/pages.ts';
import { RawOtlpClient } from './helpers/raw-grpc.ts';
import { waitFor } from './helpers/vigil-process.ts';

/** Timers and loop turns the test fires by hand. */
class ManualTimers implements ActivityTimers {
  readonly turns: Array<() => void> = [];
  readonly timers = new Map<number, { fn: () => void; ms: number }>();
  private next = 1;
  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.next++;
    this.timers.set(id, { fn, ms });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }
  afterIo(fn: () => void): void {
    this.turns.push(fn);
  }
  /** Runs the loop turns queued now (not the ones they queue). */
  turn(): void {
    for (const fn of this.turns.splice(0)) fn();
  }
  /** Fires every pending timer. */
  fireTimers(): void {
    for (const [id, t] of [...this.timers]) {
      this.timers.delete(id);
      t.fn();
    }
  }
}

/** Lets promise callbacks (and a real setImmediate turn) run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Whether a promise has settled by now. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  await settle();
  return done;
}

describe('IngestActivity', () => {
  test('nothing to wait for without a request in flight', () => {
    const activity = new IngestActivity(25, new ManualTimers());
    assert.equal(activity.quiet(), undefined);
    const end = activity.begin();
    end();
    assert.equal(activity.quiet(), undefined);
    assert.equal(activity.inFlight, 0);
  });

  test('a wait ends two loop turns after the last request ended, not before', async () => {
    const timers = new ManualTimers();
    const activity = new IngestActivity(25, timers);
    const endA = activity.begin();
    const endB = activity.begin();
    const wait = activity.quiet()!;
    assert.ok(wait);
    endA();
    assert.equal(timers.turns.length, 0, 'one request is still in flight');
    endB();
    assert.equal(await settled(wait), false, 'released only after the I/O ready now was handled');
    timers.turn();
    assert.equal(await settled(wait), false, 'still one turn to go');
    timers.turn();
    assert.equal(await settled(wait), true);
    assert.equal(timers.timers.size, 0, 'its bound timer was cleared');
  });

  test('a request that starts before the release keeps the waiters waiting', async () => {
    const timers = new ManualTimers();
    const activity = new IngestActivity(25, timers);
    activity.begin()();
    const endA = activity.begin();
    const wait = activity.quiet()!;
    endA();
    timers.turn();
    const endB = activity.begin();
    timers.turn();
    assert.equal(await settled(wait), false, 'a request is in flight again');
    endB();
    timers.turn();
    timers.turn();
    assert.equal(await settled(wait), true);
  });

  test('the wait is bounded: a request that never ends holds nobody longer than maxWaitMs', async () => {
    const timers = new ManualTimers();
    const activity = new IngestActivity(25, timers);
    activity.begin();
    const wait = activity.quiet()!;
    assert.deepEqual(
      [...timers.timers.values()].map((t) => t.ms),
      [25],
    );
    assert.equal(await settled(wait), false);
    timers.fireTimers();
    assert.equal(await settled(wait), true);
    assert.equal(activity.inFlight, 1);
  });

  test('ending a request twice counts it once', () => {
    const activity = new IngestActivity(25, new ManualTimers());
    const endA = activity.begin();
    activity.begin();
    endA();
    endA();
    assert.equal(activity.inFlight, 1);
  });
});

const T0 = Date.UTC(2026, 0, 1);

/** A failure the classify processor diagnoses (a Python traceback). */
const failure = (i: number, partition: string): AgentEvent =>
  event({
    id: `${partition}-${i}`,
    partition,
    time: T0 + i * 1000,
    payload: { state: 'error', outcome: { error: 'Traceback (most recent call last):\n  File "job.py", line 1\nKeyError: step failed' } },
  });

function runnerWith(store: MemoryStore, activity: IngestActivity, pageSize: number): PipelineRunner {
  const logger = memoryLogger();
  const settings = { id: 'classify', logger, pipeline: 'logs', store, state: stateClient(store, 'classify', { owner: 'classify' }) };
  const chain: OperatorFunction<WorkPage, WorkPage> = (page$) => page$.pipe(classifyFactory.create(settings, defaultsOf(classifyFactory.schema)));
  return new PipelineRunner({ pipeline: 'logs', store, chain, logger, pageSize, activity });
}

describe('the pipeline runner lets requests go first', () => {
  test('a page waits while a request is in flight and runs once it is answered', async () => {
    const store = new MemoryStore();
    const timers = new ManualTimers();
    const activity = new IngestActivity(25, timers);
    await store.append('logs', [failure(1, 'p'), failure(2, 'p')]);
    const runner = runnerWith(store, activity, 256);
    const answered = activity.begin();
    const round = runner.runOnce();
    assert.equal(await settled(round), false);
    assert.equal(runner.stats.pages, 0, 'no page while the request is in flight');
    answered();
    timers.turn();
    timers.turn();
    assert.equal(await round, true);
    assert.deepEqual([runner.stats.pages, runner.stats.entries], [1, 2]);
    await store.close();
  });

  test('a request that is never answered delays a page by the bound only', async () => {
    const store = new MemoryStore();
    const timers = new ManualTimers();
    const activity = new IngestActivity(25, timers);
    await store.append('logs', [failure(1, 'p')]);
    const runner = runnerWith(store, activity, 256);
    activity.begin();
    const round = runner.runOnce();
    assert.equal(await settled(round), false);
    timers.fireTimers();
    assert.equal(await round, true);
    assert.equal(runner.stats.pages, 1);
    await store.close();
  });

  test('a drain (shutdown) does not wait for requests', async () => {
    const store = new MemoryStore();
    const activity = new IngestActivity(25, new ManualTimers());
    await store.append('logs', [failure(1, 'p'), failure(2, 'q')]);
    const runner = runnerWith(store, activity, 256);
    activity.begin();
    await runner.drain(Date.now() + 5000);
    assert.deepEqual([runner.stats.pages, runner.stats.entries], [2, 2]);
    await store.close();
  });

  test(`behind (${BEHIND_AFTER_FULL_PAGES} full pages in a row), its pages no longer wait; a short page makes them wait again`, async () => {
    const store = new MemoryStore();
    const timers = new ManualTimers();
    const activity = new IngestActivity(25, timers);
    const pageSize = 4;
    const full = BEHIND_AFTER_FULL_PAGES * pageSize;
    await store.append(
      'logs',
      Array.from({ length: full + 2 }, (_, i) => failure(i, 'p')),
    );
    const runner = runnerWith(store, activity, pageSize);
    activity.begin(); // a request that stays in flight throughout
    for (let page = 1; page <= BEHIND_AFTER_FULL_PAGES; page++) {
      const round = runner.runOnce();
      assert.equal(await settled(round), false, `full page ${page} waits`);
      timers.fireTimers();
      assert.equal(await round, true);
    }
    // Behind: the next page (the 2 entries left, a short one) runs at once.
    const round = runner.runOnce();
    assert.equal(await settled(round), true, 'behind: no wait');
    assert.deepEqual([runner.stats.pages, runner.stats.entries], [BEHIND_AFTER_FULL_PAGES + 1, full + 2]);
    // Caught up: a new page waits again.
    await store.append('logs', [failure(100, 'p')]);
    const again = runner.runOnce();
    assert.equal(await settled(again), false, 'caught up: waits again');
    timers.fireTimers();
    assert.equal(await again, true);
    await store.close();
  });
});

describe('an exporter runner lets requests go first', () => {
  test('a delivery waits while a request is in flight; a full batch (behind) does not wait before the next', async () => {
    const store = new MemoryStore();
    await store.open();
    await store.registerExporter('logs', 'x');
    const timers = new ManualTimers();
    const activity = new IngestActivity(25, timers);
    const delivered: string[][] = [];
    const runner = new ExporterRunner({
      pipeline: 'logs',
      exporterId: 'x',
      store,
      logger: memoryLogger(),
      activity,
      delivery: { ...DEFAULT_DELIVERY, sending_queue: { ...DEFAULT_DELIVERY.sending_queue, batch_size: 2 } },
      exporter: {
        async start() {},
        async shutdown() {},
        async export(entries) {
          delivered.push(entries.map((e) => e.id));
        },
      },
    });
    // Three work events in the outbox: a full batch of 2, then 1.
    await store.append('logs', [failure(1, 'p')]);
    const [entry] = await store.readPage('logs', 'p', 1);
    const work = (id: string): WorkOutboxItem => ({ kind: 'work', id, event: { id } as WorkOutboxItem['event'] });
    await store.commit({
      pipeline: 'logs',
      partition: 'p',
      cursor: entry!.id,
      groups: [],
      turns: [],
      revisions: [],
      failures: [],
      outbox: ['w1', 'w2', 'w3'].map(work),
    });
    const answered = activity.begin();
    await runner.start();
    for (let i = 0; i < 5; i++) await settle();
    assert.deepEqual(delivered, [], 'nothing delivered while the request is in flight');
    answered();
    timers.turn();
    timers.turn();
    // The first batch was full: the second is delivered at once, even with a request in flight again.
    const again = activity.begin();
    await eventually(() => delivered.length === 2, 'both batches delivered');
    assert.deepEqual(delivered, [['w1', 'w2'], ['w3']]);
    // The loop's next wait (the last batch was short) ends with the request, so the runner stops.
    await settle();
    again();
    timers.turn();
    timers.turn();
    await runner.drain(Date.now() + 1000);
    await store.close();
  });
});

/** A consumer that holds every batch until released, counting what it got. */
function heldConsumer(): { consumer: IngestConsumer; got: AgentEvent[]; release: () => void; arrived: Promise<void> } {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let arrive!: () => void;
  const arrived = new Promise<void>((resolve) => (arrive = resolve));
  const got: AgentEvent[] = [];
  return {
    got,
    release,
    arrived,
    consumer: async (batch) => {
      got.push(...batch);
      arrive();
      await held;
      return { appended: batch.length, duplicates: 0 };
    },
  };
}

/** Polls (real time, 1 s at most) until `check` holds: the server's 'close' of an answer follows the client's receipt by a turn or so. */
const eventually = (check: () => boolean, what: string) => waitFor(() => (check() ? true : undefined), what, 1000, 5);

describe('the OTLP receiver tells which requests it is answering', () => {
  test('OTLP/HTTP (the SDK exporter): in flight from the request until its answer', async () => {
    const activity = new IngestActivity();
    const held = heldConsumer();
    const receiver = createOtlpReceiver(
      { id: 'otlp', logger: memoryLogger(), consumers: { traces: held.consumer }, activity },
      { protocols: { http: { endpoint: '127.0.0.1:0' } }, max_request_body_size: 1024 * 1024 },
      { shutdownGraceMs: 1000 },
    );
    await receiver.start();
    const exporter = new OTLPTraceExporter({ url: `http://127.0.0.1:${receiver.address()!.port}/v1/traces` });
    try {
      const spans = await failedToolSpans();
      const exported = new Promise<ExportResult>((resolve) => exporter.export(spans, resolve));
      await held.arrived;
      assert.equal(activity.inFlight, 1, 'in flight while its append is pending');
      assert.ok(activity.quiet(), 'background work would wait');
      held.release();
      assert.equal((await exported).code, 0);
      await eventually(() => activity.inFlight === 0, 'no request in flight once answered');
      assert.equal(held.got.length, 1);
    } finally {
      await exporter.shutdown();
      await receiver.shutdown();
    }
  });

  test('OTLP/HTTP: a refused request ends too (401)', async () => {
    const activity = new IngestActivity();
    const receiver = createOtlpReceiver(
      { id: 'otlp', logger: memoryLogger(), consumers: { traces: heldConsumer().consumer }, activity },
      { protocols: { http: { endpoint: '127.0.0.1:0' } }, max_request_body_size: 1024 * 1024, auth: { bearer_token: 'right-token' } },
      { shutdownGraceMs: 1000 },
    );
    await receiver.start();
    try {
      const res = await fetch(`http://127.0.0.1:${receiver.address()!.port}/v1/traces`, {
        method: 'POST',
        body: '{}',
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.status, 401);
      await res.arrayBuffer();
      await eventually(() => activity.inFlight === 0, 'a refused request is not left in flight');
    } finally {
      await receiver.shutdown();
    }
  });

  test('OTLP/gRPC: in flight from the call until its answer', async () => {
    const activity = new IngestActivity();
    const held = heldConsumer();
    const receiver = createOtlpReceiver(
      { id: 'otlp', logger: memoryLogger(), consumers: { traces: held.consumer }, activity },
      { protocols: { grpc: { endpoint: '127.0.0.1:0' } }, max_request_body_size: 1024 * 1024 },
      { shutdownGraceMs: 1000 },
    );
    await receiver.start();
    const client = new RawOtlpClient(`127.0.0.1:${receiver.grpcAddress()!.port}`, credentials.createInsecure()) as unknown as Record<
      string,
      (body: Buffer, md: Metadata, cb: (err: ServiceError | null) => void) => void
    >;
    try {
      // ExportTraceServiceRequest{ resource_spans { scope_spans { span { trace_id, span_id, name, status{code=2} } } } }
      const span = Buffer.concat([
        Buffer.from([0x0a, 16]),
        Buffer.alloc(16, 0xab),
        Buffer.from([0x12, 8]),
        Buffer.alloc(8, 0xcd),
        Buffer.from([0x2a, 4]),
        Buffer.from('tool'),
        Buffer.from([0x7a, 2, 0x18, 2]),
      ]);
      const scope = Buffer.concat([Buffer.from([0x12, span.length]), span]);
      const resource = Buffer.concat([Buffer.from([0x12, scope.length]), scope]);
      const body = Buffer.concat([Buffer.from([0x0a, resource.length]), resource]);
      const answered = new Promise<ServiceError | null>((resolve) => client.traces!(body, new Metadata(), resolve));
      await held.arrived;
      assert.equal(activity.inFlight, 1);
      held.release();
      assert.equal(await answered, null);
      await eventually(() => activity.inFlight === 0, 'no call in flight once answered');
    } finally {
      (client as unknown as { close(): void }).close();
      await receiver.shutdown();
    }
  });
});
