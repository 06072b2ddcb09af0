import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryStore } from '../src/store/memory.ts';
import { event } from './helpers/pages.ts';
import { seededRandom, testSeed } from './helpers/random.ts';
import { storeConformance } from './helpers/store-conformance.ts';

storeConformance('memory', async (opts) => new MemoryStore({ dedupe_window: 24 * 3_600_000, max_seen_ids: 1_000_000 }, opts?.now));

describe('memory store: long logs and outboxes', () => {
  test('a backlog of thousands is read, committed and trimmed page by page, in order (seeded page sizes)', async () => {
    const random = seededRandom(3);
    const store = new MemoryStore();
    const events = Array.from({ length: 5000 }, (_, i) => event({ id: `e${i}`, time: i, partition: i % 7 === 0 ? 'B' : 'A' }));
    for (let i = 0; i < events.length; i += 100) await store.append('logs', events.slice(i, i + 100));
    for (const partition of ['A', 'B']) {
      const expected = events.filter((e) => e.partition === partition).map((e) => e.eventId);
      const seen: string[] = [];
      while (seen.length < expected.length) {
        const size = 1 + Math.floor(random() * 700);
        const page = await store.readPage('logs', partition, size);
        assert.deepEqual(
          page.map((e) => e.event.eventId),
          expected.slice(seen.length, seen.length + size),
          `seed ${testSeed()}, partition ${partition} at ${seen.length}`,
        );
        await store.commit({ pipeline: 'logs', partition, cursor: page[page.length - 1]!.id, groups: [], turns: [], revisions: [], outbox: [], failures: [] });
        seen.push(...page.map((e) => e.event.eventId));
        const pending = (await store.status()).pipelines[0]!.partitions.find((p) => p.partition === partition)!.pending;
        assert.equal(pending, expected.length - seen.length);
      }
    }
    assert.equal(await store.pendingCount('logs'), 0);
  });

  test('an outbox of thousands is read and acknowledged in chunks by two exporters, each seeing every entry once (seeded)', async () => {
    const random = seededRandom(4);
    const store = new MemoryStore();
    await store.registerExporter('logs', 'x');
    await store.registerExporter('logs', 'y');
    await store.append('logs', [event({ id: 'e', time: 0 })]);
    const outbox = Array.from({ length: 3000 }, (_, i) => ({
      kind: 'forward' as const,
      id: `o${i}`,
      signal: 'logs' as const,
      record: { n: i, nested: { list: [{ i }] } },
    }));
    const commit = (items: typeof outbox) =>
      store.commit({ pipeline: 'logs', partition: 'timers', cursor: null, groups: [], turns: [], revisions: [], outbox: items, failures: [] });
    for (let i = 0; i < outbox.length; i += 500) await commit(outbox.slice(i, i + 500));
    const got: Record<string, string[]> = { x: [], y: [] };
    for (;;) {
      let progressed = false;
      for (const exporter of ['x', 'y']) {
        const entries = await store.readOutbox('logs', exporter, 1 + Math.floor(random() * 400));
        if (!entries.length) continue;
        progressed = true;
        got[exporter]!.push(...entries.map((e) => e.id));
        await store.ackOutbox('logs', exporter, entries[entries.length - 1]!.seq);
      }
      if (!progressed) break;
    }
    const ids = outbox.map((o) => o.id);
    assert.deepEqual(got.x, ids, `seed ${testSeed()}`);
    assert.deepEqual(got.y, ids, `seed ${testSeed()}`);
    assert.equal((await store.status()).pipelines[0]!.outbox.size, 0);
  });

  test('what the store keeps is frozen all the way down (log entries and outbox items)', async () => {
    const store = new MemoryStore();
    await store.registerExporter('logs', 'x');
    await store.append('logs', [event({ id: 'e', time: 0, payload: { state: 'error', outcome: { list: [{ deep: 1 }] } } })]);
    const [entry] = await store.readPage('logs', 'session-1', 1);
    const outcome = entry!.event.payload.outcome as { list: Array<{ deep: number }> };
    for (const v of [entry, entry!.event, entry!.event.payload, outcome, outcome.list, outcome.list[0]]) assert.ok(Object.isFrozen(v));
    const item = { kind: 'forward' as const, id: 'o', signal: 'logs' as const, record: { a: { b: [{ c: 1 }] } } };
    await store.commit({ pipeline: 'logs', partition: 'session-1', cursor: entry!.id, groups: [], turns: [], revisions: [], outbox: [item], failures: [] });
    const [stored] = (await store.readOutbox('logs', 'x', 1)) as unknown as Array<typeof item>;
    for (const v of [stored, stored!.record, stored!.record.a, stored!.record.a.b, stored!.record.a.b[0]]) assert.ok(Object.isFrozen(v));
  });
});
