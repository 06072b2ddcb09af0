/**
 * Reliability, case 4: `sending_queue.queue_size` holds on every store (memory, a SQLite file,
 * the machine's Redis), also while the exporter waits out a long backoff against a dead
 * receiver: pages keep being committed, and each commit moves the oldest entries beyond the bound
 * to the dead letters, counted with their reason. Every committed entry ends delivered, waiting
 * within the bound, or a dead letter — none is lost silently. A receiver that stays down past
 * `max_elapsed_time` costs one backoff per dead letter, not one `max_elapsed_time` per entry.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import type { Exporter } from '../src/component.ts';
import { DEFAULT_DELIVERY, ExportError, type DeliverySettings } from '../src/exporters/delivery.ts';
import { webhookExporterFactory } from '../src/exporters/webhook/factory.ts';
import { memoryLogger } from '../src/logger.ts';
import { ExporterRunner, type Clock } from '../src/service/exporter-runner.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { SqliteStore } from '../src/store/sqlite/store.ts';
import type { StateStore } from '../src/store/types.ts';
import { commitOutbox } from './helpers/faults.ts';
import { localRedisStore } from './helpers/stores.ts';
import { deletePrefix, REDIS_URL, uniquePrefix } from './helpers/redis-server.ts';
import { freePort, tempDir, waitFor } from './helpers/vigil-process.ts';

const prefixes: string[] = [];
after(async () => {
  for (const p of prefixes) await deletePrefix(REDIS_URL, p);
});

const STORES: Array<[string, () => StateStore]> = [
  ['memory', () => new MemoryStore()],
  ['sqlite', () => new SqliteStore({ path: join(tempDir(), 'state.db'), synchronous: 'normal', busy_timeout: 1000, dedupe_window: 3_600_000 })],
  [
    'redis',
    () => {
      const prefix = uniquePrefix('queue');
      prefixes.push(prefix);
      return localRedisStore(prefix);
    },
  ],
];

const delivery = (retry: Partial<DeliverySettings['retry_on_failure']>, queue_size: number): DeliverySettings => ({
  retry_on_failure: { ...DEFAULT_DELIVERY.retry_on_failure, ...retry },
  sending_queue: { queue_size, batch_size: 10 },
});

for (const [name, make] of STORES) {
  describe(`queue bound on the ${name} store`, () => {
    test('a dead webhook in a long backoff: every commit keeps the queue within queue_size; the excess is counted dead letters', async () => {
      const store = make();
      await store.open();
      const port = await freePort(); // nothing listens: connection refused
      const exporter = webhookExporterFactory.create(
        { id: 'webhook', logger: memoryLogger() },
        { endpoint: `http://127.0.0.1:${port}/hook`, secret: undefined, headers: {}, timeout: 500, ...DEFAULT_DELIVERY },
      );
      const QUEUE = 50;
      const runner = new ExporterRunner({
        pipeline: 'logs',
        exporterId: 'webhook',
        exporter,
        store,
        logger: memoryLogger(),
        // One failure, then a minute of backoff: the old runner checked the bound only when it tried again.
        delivery: delivery({ initial_interval: 60_000, max_interval: 60_000, max_elapsed_time: 0 }, QUEUE),
      });
      const PAGES = 40;
      const PER_PAGE = 25;
      await runner.start();
      await commitOutbox(
        store,
        0,
        Array.from({ length: PER_PAGE }, (_, i) => `e-0-${i}`),
      );
      runner.notify();
      await waitFor(() => (runner.stats.failedAttempts >= 1 ? true : undefined), 'the first failed attempt');
      for (let p = 1; p < PAGES; p++) {
        await commitOutbox(
          store,
          p,
          Array.from({ length: PER_PAGE }, (_, i) => `e-${p}-${i}`),
        );
        runner.notify(); // what the pipeline runner does after each commit
        // Within seconds, not after the minute of backoff.
        await waitFor(async () => ((await store.outboxLag('logs', 'webhook')) <= QUEUE ? true : undefined), `the bound after page ${p}`, 5000);
      }
      const total = PAGES * PER_PAGE;
      const lag = await store.outboxLag('logs', 'webhook');
      const st = await store.status();
      assert.equal(lag, QUEUE, 'the newest queue_size entries wait');
      assert.equal(st.deadLetters.total, total - QUEUE, 'every other entry is a dead letter');
      assert.equal(runner.stats.deadLetteredByCause.queue_full, total - QUEUE);
      assert.equal(st.pipelines.find((p) => p.pipeline === 'logs')!.outbox.size, QUEUE, 'the outbox itself holds only the bound');
      const letters = await store.listDeadLetters(total);
      assert.ok(
        letters.every((l) => /sending_queue full \(queue_size 50\)/.test(l.reason)),
        'every dead letter says the queue was full',
      );
      const waiting = (await store.readOutbox('logs', 'webhook', 1000)).map((e) => e.id);
      assert.deepEqual(new Set([...letters.map((l) => l.entry.id), ...waiting]).size, total, 'each entry is exactly one of: dead letter, waiting');
      assert.equal(runner.stats.failedAttempts, 1, 'still in the one backoff: the bound did not wait for it');
      await runner.drain(Date.now());
      await store.close();
    });

    test('outboxLag counts the entries after one exporter cursor; retiring a removed exporter lets the outbox shrink', async () => {
      const store = make();
      await store.open();
      await store.registerExporter('logs', 'kept');
      await store.registerExporter('logs', 'removed');
      await commitOutbox(store, 0, ['a', 'b', 'c', 'd']);
      const [, b] = await store.readOutbox('logs', 'kept', 2);
      await store.ackOutbox('logs', 'kept', b!.seq);
      assert.equal(await store.outboxLag('logs', 'kept'), 2);
      assert.equal(await store.outboxLag('logs', 'removed'), 4);
      if (store.retireExporters) {
        assert.deepEqual(await store.retireExporters('logs', ['kept']), ['removed']);
        const st = await store.status();
        assert.equal(st.pipelines.find((p) => p.pipeline === 'logs')!.outbox.size, 2, 'trimmed to what "kept" still needs');
      }
      await store.close();
    });
  });
}

describe('a receiver that keeps up too slowly', () => {
  test('a batch delivered one entry at a time stops when commits push the queue over its bound; no entry is both delivered and a dead letter', async () => {
    const store = new SqliteStore({ path: join(tempDir(), 'state.db'), synchronous: 'normal', busy_timeout: 1000, dedupe_window: 3_600_000 });
    await store.open();
    const delivered: string[] = [];
    // Like the webhook: one entry at a time, each confirmed at once, 20 ms each.
    const exporter: Exporter = {
      async start() {},
      async shutdown() {},
      async export(entries, progress) {
        for (let i = 0; i < entries.length; i++) {
          await new Promise((r) => setTimeout(r, 20));
          delivered.push(entries[i]!.id);
          await progress?.(i + 1);
        }
      },
    };
    const QUEUE = 40;
    const PAGE = 20;
    const runner = new ExporterRunner({
      pipeline: 'logs',
      exporterId: 'slow',
      exporter,
      store,
      logger: memoryLogger(),
      delivery: { ...delivery({}, QUEUE), sending_queue: { queue_size: QUEUE, batch_size: 100 } },
    });
    await runner.start();
    const PAGES = 40;
    let maxLag = 0;
    // Pages keep coming every 50 ms whatever the exporter does, as ingest would.
    for (let p = 0; p < PAGES; p++) {
      await commitOutbox(
        store,
        p,
        Array.from({ length: PAGE }, (_, i) => `s-${p}-${i}`),
      );
      runner.notify();
      await new Promise((r) => setTimeout(r, 50));
      maxLag = Math.max(maxLag, await store.outboxLag('logs', 'slow'));
    }
    // Without the check inside a batch, a 100-entry batch (2 s) let 40 pages in unchecked.
    assert.ok(maxLag <= QUEUE + 3 * PAGE, `the queue reached ${maxLag} entries (bound ${QUEUE})`);
    await waitFor(async () => ((await store.outboxLag('logs', 'slow')) === 0 ? true : undefined), 'the queue to drain', 20_000);
    await runner.drain(Date.now());
    const dead = (await store.listDeadLetters(10_000)).map((d) => d.entry.id);
    assert.ok(dead.length > 0, 'the bound was reached');
    assert.ok(
      dead.every((id) => !delivered.includes(id)),
      'no entry both delivered and a dead letter',
    );
    assert.equal(new Set([...delivered, ...dead]).size, PAGES * PAGE, 'every entry delivered or a dead letter');
    assert.equal(runner.stats.failedAttempts, 0, 'a cut batch is not a failure');
    await store.close();
  });
});

describe('a receiver down past max_elapsed_time', () => {
  test('the outage is measured once: after the first dead letter each failed attempt gives up its entry, one backoff apart', async () => {
    const store = new MemoryStore();
    await store.open();
    await store.registerExporter('logs', 'x');
    await commitOutbox(store, 0, ['a', 'b', 'c', 'd']);
    const exporter: Exporter = {
      async start() {},
      async shutdown() {},
      async export() {
        throw new ExportError('connection refused', { reason: 'connection', failed: 1 });
      },
    };
    const clock: Clock & { t: number } = { t: 0, now: () => clock.t, sleep: async (ms: number) => void (clock.t += ms) };
    const runner = new ExporterRunner({
      pipeline: 'logs',
      exporterId: 'x',
      exporter,
      store,
      logger: memoryLogger(),
      delivery: delivery({ initial_interval: 1000, max_interval: 4000, max_elapsed_time: 60_000 }, 1000),
      clock,
      random: () => 1,
    });
    const deadAt: number[] = [];
    while (deadAt.length < 4) {
      const r = await runner.deliverBatch();
      if (r === 'dead') deadAt.push(clock.t);
      clock.t = Math.max(clock.t, (runner as unknown as { retryAt: number }).retryAt);
    }
    assert.ok(deadAt[0]! >= 60_000, 'the first entry had the whole max_elapsed_time');
    const gaps = deadAt.slice(1).map((t, i) => t - deadAt[i]!);
    assert.deepEqual(gaps, [4000, 4000, 4000], 'then one (max) backoff per entry, not another minute each');
    assert.deepEqual((await store.listDeadLetters(10)).map((d) => d.entry.id).sort(), ['a', 'b', 'c', 'd']);
  });
});
