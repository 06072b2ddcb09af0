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

export interface ConformanceOptions {
  /**
   * For durable stores: a new instance over the same backing (file, Redis keys) as `store`, as a
   * restarted process would open it.
   */
  reopen?: (store: StateStore) => Promise<StateStore>;
}

/** `makeStore` returns a store over fresh, empty backing; `now` is its wall clock (dedupe expiry). */
export type MakeStore = (opts?: { now?: () => number }) => Promise<StateStore>;

export function storeConformance(name: string, makeStore: MakeStore, options: ConformanceOptions = {}): void {
  describe(`store conformance: ${name}`, () => {
    const withStore = (fn: (store: StateStore) => Promise<void>, opts?: { now?: () => number }) => async () => {
      const store = await makeStore(opts);
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
        // One page at a time, as the runner reads them.
        const [a] = await store.readPage('logs', 'session-1', 1);
        await store.commit(commitOf('logs', 'session-1', a!.id, { turns: [{ turnId: 't', created: 2 }], revisions: [{ executionId: 'x', revision: 'r1' }] }));
        await store.commit(commitOf('logs', 'session-1', (await store.readPage('logs', 'session-1', 1))[0]!.id, { turns: [{ turnId: 't', created: 1 }] }));
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

    test(
      'a redelivered event id is appended again once the dedupe window has passed',
      (() => {
        let clock = Date.UTC(2026, 0, 1);
        return withStore(
          async (store) => {
            assert.deepEqual(await store.append('logs', [event({ id: 'late', time: 1 })]), { appended: 1, duplicates: 0 });
            clock += 3_600_000;
            assert.deepEqual(await store.append('logs', [event({ id: 'late', time: 1 })]), { appended: 0, duplicates: 1 }, 'within the window');
            clock += 48 * 3_600_000;
            assert.deepEqual(await store.append('logs', [event({ id: 'late', time: 1 })]), { appended: 1, duplicates: 0 }, 'after the window');
          },
          { now: () => clock },
        );
      })(),
    );

    test(
      'a commit at or behind the partition cursor is refused and changes nothing',
      withStore(async (store) => {
        await store.append('logs', [event({ id: 'c1', time: 1, partition: 'P' }), event({ id: 'c2', time: 2, partition: 'P' })]);
        const [first] = await store.readPage('logs', 'P', 1);
        await store.commit(commitOf('logs', 'P', first!.id, { groups: [group('g', 1)] }));
        // The same page again (a replay after a crash, or a second sidecar that lost the race).
        await assert.rejects(
          store.commit(commitOf('logs', 'P', first!.id, { groups: [group('h', 1)], outbox: [workEvent('dup')] })),
          (err: unknown) => isVigilError(err, 'VIGIL_STORE_CONFLICT'),
        );
        assert.equal((await store.loadGroups(['h'])).size, 0);
        await store.registerExporter('logs', 'file');
        assert.deepEqual(await store.readOutbox('logs', 'file', 10), []);
        assert.deepEqual((await store.readPage('logs', 'P', 10)).map((e) => e.event.eventId), ['c2']);
      }),
    );

    test(
      'overlapping pages of two writers: the second commit of the overlap is refused, even from fresh group state',
      withStore(async (store) => {
        await store.append('logs', [1, 2, 3].map((i) => event({ id: `ov${i}`, time: i, partition: 'O' })));
        // Writer B reads two entries, writer A (another sidecar) three; B commits first.
        const pageB = await store.readPage('logs', 'O', 2);
        const pageA = await store.readPage('logs', 'O', 3);
        await store.commit(commitOf('logs', 'O', pageB[1]!.id, { groups: [group('g_ov', 1, 2)] }));
        // A loads the group only now (version 1, count 2) and would count ov1 and ov2 again.
        const fresh = (await store.loadGroups(['g_ov'])).get('g_ov')!;
        await assert.rejects(
          store.commit(commitOf('logs', 'O', pageA[2]!.id, { groups: [{ ...fresh, count: fresh.count + 3, version: fresh.version + 1 }] })),
          (err: unknown) => isVigilError(err, 'VIGIL_STORE_CONFLICT'),
        );
        assert.equal((await store.loadGroups(['g_ov'])).get('g_ov')!.count, 2);
        assert.deepEqual((await store.readPage('logs', 'O', 10)).map((e) => e.event.eventId), ['ov3']);
      }),
    );

    test(
      'partitions are independent, whatever their names',
      withStore(async (store) => {
        const names = ['{a}', 'a', 'a:b', '}x{', '%7B', 'séance ✓', 'logs:a'];
        await store.append(
          'logs',
          names.flatMap((p, i) => [event({ id: `${i}-1`, time: 1, partition: p }), event({ id: `${i}-2`, time: 2, partition: p })]),
        );
        const backlog = await store.backlog('logs');
        assert.deepEqual(backlog.map((b) => b.partition).sort(), [...names].sort());
        assert.ok(backlog.every((b) => b.pending === 2));
        for (const [i, p] of names.entries()) {
          const page = await store.readPage('logs', p, 10);
          assert.deepEqual(page.map((e) => e.event.eventId), [`${i}-1`, `${i}-2`], `partition ${p}`);
          assert.ok(page.every((e) => e.event.partition === p));
        }
        // Committing one partition leaves the others untouched.
        const [a1] = await store.readPage('logs', '{a}', 1);
        await store.commit(commitOf('logs', '{a}', a1!.id));
        assert.deepEqual((await store.readPage('logs', '{a}', 10)).map((e) => e.event.eventId), ['0-2']);
        assert.deepEqual((await store.readPage('logs', 'a', 10)).map((e) => e.event.eventId), ['1-1', '1-2']);
        assert.equal(await store.pendingCount('logs'), names.length * 2 - 1);
      }),
    );

    test(
      'pages of a long partition come in log order until it is drained',
      withStore(async (store) => {
        const ids = Array.from({ length: 600 }, (_, i) => `long-${i}`);
        for (let i = 0; i < ids.length; i += 100) {
          await store.append('traces', ids.slice(i, i + 100).map((id, j) => event({ id, time: i + j, partition: 'L' })));
        }
        const seen: string[] = [];
        for (;;) {
          const page = await store.readPage('traces', 'L', 256);
          if (page.length === 0) break;
          seen.push(...page.map((e) => e.event.eventId));
          await store.commit(commitOf('traces', 'L', page[page.length - 1]!.id));
        }
        assert.deepEqual(seen, ids);
        assert.equal(await store.pendingCount('traces'), 0);
        assert.deepEqual(await store.backlog('traces'), []);
      }),
    );

    test(
      'group state round-trips exactly; open work is counted',
      withStore(async (store) => {
        await store.append('logs', [event({ id: 'g1', time: 1 }), event({ id: 'g2', time: 2 })]);
        // One page at a time, as the runner reads them.
        const [a] = await store.readPage('logs', 'session-1', 1);
        const open: GroupState = { groupKey: 'g_open', count: 2, firstSeen: 1_000, lastSeen: 61_000, lastDecision: 'ChronicRecurrence', openWorkId: 'w_1', workGeneration: 1, version: 1 };
        await store.commit(commitOf('logs', 'session-1', a!.id, { groups: [open, group('g_quiet', 1)] }));
        assert.deepEqual((await store.loadGroups(['g_open', 'missing'])).get('g_open'), open);
        assert.equal((await store.status()).openWork, 1);
        await store.commit(commitOf('logs', 'session-1', (await store.readPage('logs', 'session-1', 1))[0]!.id, { groups: [{ ...open, openWorkId: null, version: 2 }] }));
        const st = await store.status();
        assert.equal(st.openWork, 0);
        assert.equal(st.groups, 2);
      }),
    );

    test(
      'the outbox keeps entries until every exporter has passed them; outboxes are per pipeline',
      withStore(async (store) => {
        await store.registerExporter('logs', 'a');
        await store.registerExporter('logs', 'b');
        await store.registerExporter('traces', 'a');
        await store.append('logs', [event({ id: 'o1', time: 1 })]);
        await store.append('traces', [event({ id: 'o2', time: 1 })]);
        const [l] = await store.readPage('logs', 'session-1', 1);
        const [t] = await store.readPage('traces', 'session-1', 1);
        await store.commit(commitOf('logs', 'session-1', l!.id, { outbox: [workEvent('l1'), workEvent('l2')] }));
        await store.commit(commitOf('traces', 'session-1', t!.id, { outbox: [workEvent('t1')] }));
        const size = async (p: string) => (await store.status()).pipelines.find((x) => x.pipeline === p)!.outbox.size;
        const all = await store.readOutbox('logs', 'a', 10);
        assert.deepEqual(all.map((e) => e.id), ['l1', 'l2']);
        assert.ok(all[0]!.seq < all[1]!.seq, 'seq grows');
        assert.deepEqual((all[0] as WorkOutboxItem).event, workEvent('l1').event, 'entries round-trip');
        assert.deepEqual((await store.readOutbox('traces', 'a', 10)).map((e) => e.id), ['t1']);
        await store.ackOutbox('logs', 'a', all[1]!.seq);
        assert.equal(await size('logs'), 2, 'exporter b has not read them yet');
        await store.ackOutbox('logs', 'b', all[0]!.seq);
        assert.equal(await size('logs'), 1);
        await store.ackOutbox('logs', 'b', all[1]!.seq);
        assert.equal(await size('logs'), 0);
        await store.ackOutbox('logs', 'b', all[0]!.seq);
        assert.deepEqual(await store.readOutbox('logs', 'b', 10), [], 'a cursor never moves back');
        assert.equal(await size('traces'), 1);
      }),
    );

    test(
      'recent failures keep the newest 20 by event time',
      withStore(async (store) => {
        await store.append('logs', [event({ id: 'r1', time: 1 }), event({ id: 'r2', time: 2 })]);
        // One page at a time, as the runner reads them.
        const [a] = await store.readPage('logs', 'session-1', 1);
        const failure = (time: number) => ({ time, partition: 'session-1', groupKey: 'g', occurrenceId: `o${time}`, signature: 'E: x', decision: 'BurstCoalesced' });
        await store.commit(commitOf('logs', 'session-1', a!.id, { failures: Array.from({ length: 15 }, (_, i) => failure(100 + i * 2)) }));
        await store.commit(commitOf('logs', 'session-1', (await store.readPage('logs', 'session-1', 1))[0]!.id, { failures: Array.from({ length: 15 }, (_, i) => failure(101 + i * 2)) }));
        const times = (await store.status()).recentFailures.map((f) => f.time);
        assert.deepEqual(times, Array.from({ length: 20 }, (_, i) => 129 - i));
      }),
    );

    if (options.reopen) {
      const reopen = options.reopen;
      test('everything appended and committed survives closing and reopening the store', async () => {
        const first = await makeStore();
        await first.open();
        await first.registerExporter('logs', 'file');
        await first.append('logs', [event({ id: 'd1', time: 1, partition: 'D' }), event({ id: 'd2', time: 2, partition: 'D' }), event({ id: 'd3', time: 3, partition: 'D' })]);
        const [d1] = await first.readPage('logs', 'D', 1);
        await first.commit(
          commitOf('logs', 'D', d1!.id, {
            groups: [{ ...group('g_d', 1), openWorkId: 'w_d', workGeneration: 1 }],
            turns: [{ turnId: 'turn', created: 1 }],
            revisions: [{ executionId: 'exec', revision: 'rev-1' }],
            outbox: [workEvent('wd1'), workEvent('wd2')],
          }),
        );
        const [o1] = await first.readOutbox('logs', 'file', 1);
        await first.ackOutbox('logs', 'file', o1!.seq);
        await first.close();

        const second = await reopen(first);
        await second.open();
        try {
          assert.deepEqual((await second.readPage('logs', 'D', 10)).map((e) => e.event.eventId), ['d2', 'd3']);
          assert.equal((await second.loadGroups(['g_d'])).get('g_d')!.openWorkId, 'w_d');
          assert.equal((await second.loadTurns('logs', ['turn'])).get('turn'), 1);
          assert.equal((await second.lookupRevisions(['exec'])).get('exec'), 'rev-1');
          assert.deepEqual((await second.readOutbox('logs', 'file', 10)).map((e) => e.id), ['wd2']);
          assert.deepEqual(await second.append('logs', [event({ id: 'd1', time: 1, partition: 'D' })]), { appended: 0, duplicates: 1 }, 'dedupe survives');
          const st = await second.status();
          assert.equal(st.groups, 1);
          assert.equal(st.openWork, 1);
          assert.equal(st.pipelines.find((p) => p.pipeline === 'logs')!.partitions.find((p) => p.partition === 'D')!.pending, 2);
        } finally {
          await second.close();
        }
      });
    }
  });
}
