/**
 * The delivery loop of every exporter, step by step on a real memory store with an injected
 * clock: retries with backoff, Retry-After, dead letters after max_elapsed_time or a permanent
 * failure, partial progress, and the bounded queue.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Exporter } from '../src/component.ts';
import { DEFAULT_DELIVERY, ExportError, type DeliverySettings } from '../src/exporters/delivery.ts';
import { memoryLogger } from '../src/logger.ts';
import type { OutboxEntry, WorkOutboxItem } from '../src/model/work.ts';
import { ExporterRunner, type Clock } from '../src/service/exporter-runner.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { event } from './helpers/pages.ts';

function item(id: string): WorkOutboxItem {
  return { kind: 'work', id, event: { id } as WorkOutboxItem['event'] };
}

async function storeWith(ids: string[]): Promise<MemoryStore> {
  const store = new MemoryStore();
  await store.open();
  await store.registerExporter('logs', 'x');
  await store.append('logs', [event({ id: 'e', time: 0 })]);
  const [e] = await store.readPage('logs', 'session-1', 1);
  await store.commit({ pipeline: 'logs', partition: 'session-1', cursor: e!.id, groups: [], turns: [], revisions: [], failures: [], outbox: ids.map(item) });
  return store;
}

/** An exporter whose answers the test scripts: each call takes the next behaviour. */
function scripted(behaviours: Array<(entries: OutboxEntry[]) => void>) {
  const calls: string[][] = [];
  const exporter: Exporter = {
    async start() {},
    async shutdown() {},
    async export(entries) {
      calls.push(entries.map((e) => e.id));
      const b = behaviours.shift();
      b?.(entries);
    },
  };
  return { exporter, calls };
}

function fakeClock(): Clock & { t: number } {
  const c = { t: 1_000_000, now: () => c.t, sleep: async (ms: number) => void (c.t += ms) };
  return c;
}

const delivery = (over: Partial<DeliverySettings['retry_on_failure']> = {}, queue: Partial<DeliverySettings['sending_queue']> = {}): DeliverySettings => ({
  retry_on_failure: { ...DEFAULT_DELIVERY.retry_on_failure, initial_interval: 1000, max_interval: 8000, max_elapsed_time: 60_000, ...over },
  sending_queue: { ...DEFAULT_DELIVERY.sending_queue, ...queue },
});

function runner(store: MemoryStore, exporter: Exporter, clock: Clock, d: DeliverySettings) {
  return new ExporterRunner({ pipeline: 'logs', exporterId: 'x', exporter, store, logger: memoryLogger(), delivery: d, clock, random: () => 1 });
}

describe('exporter runner', () => {
  test('transient failures are retried with growing backoff until delivered; the cursor moves only then', async () => {
    const store = await storeWith(['a', 'b']);
    const fail = () => {
      throw new ExportError('503');
    };
    const { exporter, calls } = scripted([fail, fail, fail, () => {}]);
    const clock = fakeClock();
    const r = runner(store, exporter, clock, delivery());
    const delays: number[] = [];
    for (let i = 0; i < 3; i++) {
      assert.equal(await r.deliverBatch(), 'retry');
      delays.push((r as unknown as { retryAt: number }).retryAt - clock.now());
      assert.equal((await store.readOutbox('logs', 'x', 10)).length, 2, 'nothing confirmed yet');
    }
    assert.deepEqual(delays, [1000, 2000, 4000]);
    assert.equal(await r.deliverBatch(), 'delivered');
    assert.equal((await store.readOutbox('logs', 'x', 10)).length, 0);
    assert.deepEqual(calls, [
      ['a', 'b'],
      ['a', 'b'],
      ['a', 'b'],
      ['a', 'b'],
    ]);
    assert.equal(r.stats.exported, 2);
  });

  test('a delivery round with nothing after the cursor reads no outbox; one with entries reads them', async () => {
    const store = await storeWith(['a']);
    const { exporter, calls } = scripted([() => {}, () => {}]);
    const r = runner(store, exporter, fakeClock(), delivery());
    let reads = 0;
    const readOutbox = store.readOutbox.bind(store);
    store.readOutbox = (...a) => {
      reads++;
      return readOutbox(...a);
    };
    assert.equal(await r.deliverBatch(), 'delivered');
    assert.equal(reads, 1);
    // What wakes an exporter after each page commit at low rates: the round that finds the outbox empty.
    assert.equal(await r.deliverBatch(), 'empty');
    assert.equal(reads, 1, 'the empty round asked only for the lag');
    await store.append('logs', [event({ id: 'f', time: 1 })]);
    const [e] = await store.readPage('logs', 'session-1', 1);
    await store.commit({ pipeline: 'logs', partition: 'session-1', cursor: e!.id, groups: [], turns: [], revisions: [], failures: [], outbox: [item('b')] });
    reads = 0;
    assert.equal(await r.deliverBatch(), 'delivered');
    assert.equal(reads, 1);
    assert.deepEqual(calls, [['a'], ['b']]);
  });

  test("the receiver's Retry-After is honoured instead of the backoff", async () => {
    const store = await storeWith(['a']);
    const { exporter } = scripted([
      () => {
        throw new ExportError('429', { retryAfterMs: 7000 });
      },
    ]);
    const clock = fakeClock();
    const r = runner(store, exporter, clock, delivery());
    assert.equal(await r.deliverBatch(), 'retry');
    assert.equal((r as unknown as { retryAt: number }).retryAt - clock.now(), 7000);
  });

  test('after max_elapsed_time the failing entries become dead letters and delivery moves on', async () => {
    const store = await storeWith(['a', 'b']);
    const clock = fakeClock();
    const fail = () => {
      throw new ExportError('connection refused');
    };
    const { exporter } = scripted([fail, fail, fail, fail, fail, fail, fail, fail, fail, fail, fail, fail]);
    const r = runner(store, exporter, clock, delivery({ max_elapsed_time: 10_000 }));
    let result;
    do {
      result = await r.deliverBatch();
      if (result === 'retry') clock.t = (r as unknown as { retryAt: number }).retryAt;
    } while (result === 'retry');
    assert.equal(result, 'dead');
    const dead = await store.listDeadLetters(10);
    assert.deepEqual(dead.map((d) => d.entry.id).sort(), ['a', 'b']);
    assert.match(dead[0]!.reason, /max_elapsed_time.*connection refused/);
    assert.equal((await store.readOutbox('logs', 'x', 10)).length, 0);
  });

  test('a permanent failure of one entry dead-letters only that entry; the ones before it count as delivered', async () => {
    const store = await storeWith(['a', 'b', 'c']);
    const { exporter, calls } = scripted([
      () => {
        throw new ExportError('400 bad event', { permanent: true, delivered: 1, failed: 1 });
      },
      () => {},
    ]);
    const r = runner(store, exporter, fakeClock(), delivery());
    assert.equal(await r.deliverBatch(), 'dead');
    assert.deepEqual(
      (await store.listDeadLetters(10)).map((d) => d.entry.id),
      ['b'],
    );
    assert.equal(await r.deliverBatch(), 'delivered');
    assert.deepEqual(calls, [['a', 'b', 'c'], ['c']]);
    assert.equal(r.stats.exported, 2);
    assert.equal(r.stats.deadLettered, 1);
  });

  test('progress confirms entries one by one: a failure later in the batch repeats only the unconfirmed', async () => {
    const store = await storeWith(['a', 'b', 'c']);
    const calls: string[][] = [];
    let attempt = 0;
    const exporter: Exporter = {
      async start() {},
      async shutdown() {},
      async export(entries, progress) {
        calls.push(entries.map((e) => e.id));
        attempt++;
        for (let i = 0; i < entries.length; i++) {
          if (attempt === 1 && entries[i]!.id === 'c') throw new ExportError('down', { delivered: i });
          await progress?.(i + 1);
        }
      },
    };
    const r = runner(store, exporter, fakeClock(), delivery());
    assert.equal(await r.deliverBatch(), 'retry');
    assert.deepEqual(
      (await store.readOutbox('logs', 'x', 10)).map((e) => e.id),
      ['c'],
      'a and b were confirmed as they went',
    );
    assert.equal(await r.deliverBatch(), 'delivered');
    assert.deepEqual(calls, [['a', 'b', 'c'], ['c']]);
    assert.equal(r.stats.exported, 3);
  });

  test('retries forever when max_elapsed_time is 0', async () => {
    const store = await storeWith(['a']);
    const clock = fakeClock();
    const { exporter } = scripted(
      Array.from({ length: 50 }, () => () => {
        throw new ExportError('down');
      }),
    );
    const r = runner(store, exporter, clock, delivery({ max_elapsed_time: 0 }));
    for (let i = 0; i < 50; i++) {
      assert.equal(await r.deliverBatch(), 'retry');
      clock.t += 3_600_000;
    }
    assert.equal((await store.listDeadLetters(10)).length, 0);
  });

  test('a queue over queue_size sends its oldest entries to the dead letters, recorded', async () => {
    const store = await storeWith(['a', 'b', 'c', 'd', 'e']);
    const { exporter, calls } = scripted([() => {}]);
    const r = runner(store, exporter, fakeClock(), delivery({}, { queue_size: 2 }));
    assert.equal(await r.deliverBatch(), 'delivered');
    assert.deepEqual(calls, [['d', 'e']]);
    const dead = await store.listDeadLetters(10);
    assert.deepEqual(dead.map((d) => d.entry.id).sort(), ['a', 'b', 'c']);
    assert.match(dead[0]!.reason, /sending_queue full/);
  });
});
