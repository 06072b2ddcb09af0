/**
 * The store conformance suite (DESIGN 2): every StateStore implementation runs these same tests
 * against a real instance (memory, a SQLite file, a Redis server).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isVigilError } from '../../src/errors.ts';
import type { GroupState, WorkEvent, WorkOutboxItem } from '../../src/model/work.ts';
import type { PageCommit, StateStore } from '../../src/store/types.ts';
import { event } from './pages.ts';

function group(key: string, version: number, count = version): GroupState {
  return { groupKey: key, count, firstSeen: 0, lastSeen: count, lastDecision: 'BurstCoalesced', openWorkId: null, workGeneration: 0, version };
}

function commitOf(pipeline: string, partition: string, cursor: string, extra: Partial<PageCommit> = {}): PageCommit {
  return { pipeline, partition, cursor, groups: [], turns: [], revisions: [], outbox: [], failures: [], ...extra };
}

function workEvent(id: string): WorkOutboxItem {
  return { kind: 'work', id, event: { specversion: '1.0', id, source: 'vigil/test', type: 'dev.vigil.work.created', time: new Date(0).toISOString(), subject: 'g', datacontenttype: 'application/json', data: {} as WorkEvent['data'] } };
}

export function storeConformance(name: string, makeStore: () => Promise<StateStore>): void {
  describe(`store conformance: ${name}`, () => {
    const withStore = (fn: (store: StateStore) => Promise<void>) => async () => {
      const store = await makeStore();
      await store.open();
      try {
        await fn(store);
      } finally {
        await store.close();
      }
    };

    test(
      'appends keep order per partition; pages read from the cursor; commit advances and trims',
      withStore(async (store) => {
        const r = await store.append('logs', [
          event({ id: 'a1', time: 1, partition: 'A' }),
          event({ id: 'b1', time: 2, partition: 'B' }),
          event({ id: 'a2', time: 3, partition: 'A' }),
          event({ id: 'a3', time: 4, partition: 'A' }),
        ]);
        assert.deepEqual(r, { appended: 4, duplicates: 0 });
        assert.equal(await store.pendingCount('logs'), 4);
        const backlog = (await store.backlog('logs')).sort((x, y) => x.partition.localeCompare(y.partition));
        assert.deepEqual(backlog, [
          { partition: 'A', pending: 3 },
          { partition: 'B', pending: 1 },
        ]);
        const page = await store.readPage('logs', 'A', 2);
        assert.deepEqual(page.map((e) => e.event.eventId), ['a1', 'a2']);
        await store.commit(commitOf('logs', 'A', page[1]!.id));
        const next = await store.readPage('logs', 'A', 10);
        assert.deepEqual(next.map((e) => e.event.eventId), ['a3']);
        assert.equal(await store.pendingCount('logs'), 2);
        assert.deepEqual(await store.readPage('logs', 'A', 10).then((p) => p.map((e) => e.event)), [next[0]!.event]);
        assert.equal((await store.backlog('other')).length, 0, 'pipelines are separate');
      }),
    );

    test(
      'a redelivered event id is appended once',
      withStore(async (store) => {
        await store.append('logs', [event({ id: 'x', time: 1 })]);
        const again = await store.append('logs', [event({ id: 'x', time: 1 }), event({ id: 'y', time: 2 })]);
        assert.deepEqual(again, { appended: 1, duplicates: 1 });
        assert.equal(await store.pendingCount('logs'), 2);
      }),
    );

    test(
      'a commit is all or nothing: a stale group version refuses the whole commit',
      withStore(async (store) => {
        await store.append('logs', [event({ id: 'e1', time: 1, partition: 'P' }), event({ id: 'e2', time: 2, partition: 'P' })]);
        const [first, second] = await store.readPage('logs', 'P', 10);
        await store.commit(commitOf('logs', 'P', first!.id, { groups: [group('g1', 1)], outbox: [workEvent('w1')] }));
        await store.registerExporter('logs', 'file');
        // Built on version 0 again: a concurrent writer already wrote version 1.
        await assert.rejects(
          store.commit(commitOf('logs', 'P', second!.id, { groups: [group('g1', 1), group('g2', 1)], outbox: [workEvent('w2')] })),
          (err: unknown) => isVigilError(err, 'VIGIL_STORE_CONFLICT'),
        );
        const groups = await store.loadGroups(['g1', 'g2']);
        assert.equal(groups.get('g1')!.version, 1);
        assert.equal(groups.has('g2'), false, 'no part of the refused commit was written');
        assert.deepEqual((await store.readPage('logs', 'P', 10)).map((e) => e.event.eventId), ['e2'], 'cursor did not move');
        await store.commit(commitOf('logs', 'P', second!.id, { groups: [group('g1', 2)] }));
        assert.equal((await store.loadGroups(['g1'])).get('g1')!.count, 2);
      }),
    );

    test(
      'turn counters and revisions accumulate across commits',
      withStore(async (store) => {
        await store.append('logs', [event({ id: 'e1', time: 1 }), event({ id: 'e2', time: 2 })]);
        const [a, b] = await store.readPage('logs', 'session-1', 10);
        await store.commit(commitOf('logs', 'session-1', a!.id, { turns: [{ turnId: 't', created: 2 }], revisions: [{ executionId: 'x', revision: 'r1' }] }));
        await store.commit(commitOf('logs', 'session-1', b!.id, { turns: [{ turnId: 't', created: 1 }] }));
        assert.equal((await store.loadTurns('logs', ['t', 'u'])).get('t'), 3);
        assert.equal((await store.loadTurns('traces', ['t'])).size, 0, 'turns are per pipeline');
        assert.equal((await store.lookupRevisions(['x', 'y'])).get('x'), 'r1');
      }),
    );

    test(
      'each exporter reads the outbox from its own cursor',
      withStore(async (store) => {
        await store.registerExporter('logs', 'file');
        await store.registerExporter('logs', 'webhook');
        await store.append('logs', [event({ id: 'e1', time: 1 })]);
        const [e] = await store.readPage('logs', 'session-1', 1);
        await store.commit(commitOf('logs', 'session-1', e!.id, { outbox: [workEvent('w1'), workEvent('w2'), workEvent('w3')] }));
        const forFile = await store.readOutbox('logs', 'file', 2);
        assert.deepEqual(forFile.map((o) => o.id), ['w1', 'w2']);
        await store.ackOutbox('logs', 'file', forFile[1]!.seq);
        assert.deepEqual((await store.readOutbox('logs', 'file', 10)).map((o) => o.id), ['w3']);
        assert.deepEqual((await store.readOutbox('logs', 'webhook', 10)).map((o) => o.id), ['w1', 'w2', 'w3']);
        const st = await store.status();
        const p = st.pipelines.find((x) => x.pipeline === 'logs')!;
        assert.deepEqual(
          p.outbox.exporters.sort((x, y) => x.exporter.localeCompare(y.exporter)).map((x) => [x.exporter, x.lag]),
          [
            ['file', 1],
            ['webhook', 3],
          ],
        );
      }),
    );

    test(
      'dead letters are recorded with the cursor advance and listed newest first',
      withStore(async (store) => {
        await store.registerExporter('logs', 'webhook');
        await store.append('logs', [event({ id: 'e1', time: 1 })]);
        const [e] = await store.readPage('logs', 'session-1', 1);
        await store.commit(commitOf('logs', 'session-1', e!.id, { outbox: [workEvent('w1'), workEvent('w2'), workEvent('w3')] }));
        const [w1, w2] = await store.readOutbox('logs', 'webhook', 2);
        await store.ackOutbox('logs', 'webhook', w1!.seq, [{ entry: w1!, reason: 'HTTP 410 after 3 attempts' }]);
        await store.ackOutbox('logs', 'webhook', w2!.seq, [{ entry: w2!, reason: 'timed out' }]);
        assert.deepEqual((await store.readOutbox('logs', 'webhook', 10)).map((o) => o.id), ['w3'], 'dead letters are not read again');
        const dead = await store.listDeadLetters(10);
        assert.deepEqual(dead.map((d) => [d.entry.id, d.reason, d.exporter]), [
          ['w2', 'timed out', 'webhook'],
          ['w1', 'HTTP 410 after 3 attempts', 'webhook'],
        ]);
        assert.equal((await store.listDeadLetters(10, 'traces')).length, 0);
        assert.equal((await store.status()).deadLetters.total, 2);
      }),
    );

    test(
      'status lists partitions with cursor and lag, groups, open work and recent failures newest first',
      withStore(async (store) => {
        await store.append('logs', [event({ id: 'e1', time: 1, partition: 'S' }), event({ id: 'e2', time: 2, partition: 'S' })]);
        const [e] = await store.readPage('logs', 'S', 1);
        const g = { ...group('g1', 1), openWorkId: 'w_1', workGeneration: 1 };
        const failure = (time: number) => ({ time, partition: 'S', groupKey: 'g1', occurrenceId: `o${time}`, signature: 'E: x', decision: 'BurstThresholdReached' });
        await store.commit(commitOf('logs', 'S', e!.id, { groups: [g], failures: [failure(1), failure(5), failure(3)] }));
        const st = await store.status();
        assert.equal(st.groups, 1);
        assert.equal(st.openWork, 1);
        assert.deepEqual(st.recentFailures.map((f) => f.time), [5, 3, 1]);
        const part = st.pipelines.find((x) => x.pipeline === 'logs')!.partitions.find((x) => x.partition === 'S')!;
        assert.equal(part.cursor, e!.id);
        assert.equal(part.pending, 1);
      }),
    );
  });
}
