/**
 * The store conformance suite (DESIGN 2): every StateStore implementation runs these same tests
 * against a real instance (memory, a SQLite file, a Redis server).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isVigilError } from '../../src/errors.ts';
import type { GroupState, WorkEventData, WorkOutboxItem } from '../../src/model/work.ts';
import { MAX_STATE_VALUE_BYTES, MAX_TIMERS_PER_PIPELINE, type StateWrite, type TimerSpec } from '../../src/store/state.ts';
import type { PageCommit, StateStore } from '../../src/store/types.ts';
import { event } from './pages.ts';

function group(key: string, version: number, count = version): GroupState {
  return { groupKey: key, count, firstSeen: 0, lastSeen: count, lastDecision: 'BurstCoalesced', openWorkId: null, workGeneration: 0, version };
}

/** A page commit with nothing in it but what `extra` adds (`cursor` null: one that moves no cursor). */
export function commitOf(pipeline: string, partition: string, cursor: string | null, extra: Partial<PageCommit> = {}): PageCommit {
  return { pipeline, partition, cursor, groups: [], turns: [], revisions: [], outbox: [], failures: [], ...extra };
}

function workEvent(id: string): WorkOutboxItem {
  return {
    kind: 'work',
    id,
    event: {
      specversion: '1.0',
      id,
      source: 'vigil/test',
      type: 'dev.vigil.work.created',
      time: new Date(0).toISOString(),
      subject: 'g',
      datacontenttype: 'application/json',
      data: {} as WorkEventData,
    },
  };
}

/** A commit that moves no cursor (as a timer page's): only state, timers, groups and outbox. */
function stateCommit(extra: Partial<PageCommit>, pipeline = 'logs'): PageCommit {
  return commitOf(pipeline, 'timers', null, extra);
}

const put = (namespace: string, key: string, value: unknown, extra: Partial<StateWrite> = {}): StateWrite => ({ namespace, key, value, ...extra });
const timer = (id: string, due: number, extra: Partial<TimerSpec> = {}): TimerSpec => ({ id, owner: 'test/proc', partition: 'P', due, payload: { id }, ...extra });
const conflict = (err: unknown) => isVigilError(err, 'VIGIL_STORE_CONFLICT');
const values = async (store: StateStore, ns: string, keys: string[]) =>
  Object.fromEntries([...(await store.loadState(ns, keys))].map(([k, e]) => [k, [e.value, e.version]]));

export interface ConformanceOptions {
  /**
   * False where a receiver's state is written after its records rather than with them (Redis
   * Cluster: another slot): a refused state write then leaves the records appended.
   */
  appendStateAtomic?: boolean;
  /** False where a commit's appends go before it rather than with it (Redis: other slots): a refused commit then leaves them appended. */
  commitAppendsAtomic?: boolean;
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
        assert.deepEqual(
          page.map((e) => e.event.eventId),
          ['a1', 'a2'],
        );
        await store.commit(commitOf('logs', 'A', page[1]!.id));
        const next = await store.readPage('logs', 'A', 10);
        assert.deepEqual(
          next.map((e) => e.event.eventId),
          ['a3'],
        );
        assert.equal(await store.pendingCount('logs'), 2);
        assert.deepEqual(await store.readPage('logs', 'A', 10).then((p) => p.map((e) => e.event)), [next[0]!.event]);
        assert.equal((await store.backlog('other')).length, 0, 'pipelines are separate');
      }),
    );

    test(
      'readAfter (a store that is its log’s one writer): the entries after a given one, never before the cursor; Redis offers none',
      withStore(async (store) => {
        if (!store.readAfter) {
          assert.ok(name.toLowerCase().includes('redis'), `${name} should offer readAfter`);
          return;
        }
        await store.append(
          'logs',
          ['a1', 'a2', 'a3', 'a4'].map((id, i) => event({ id, time: i + 1, partition: 'A' })),
        );
        const page = await store.readPage('logs', 'A', 2);
        const ids = (p: Array<{ event: { eventId: string } }>) => p.map((e) => e.event.eventId);
        assert.deepEqual(ids(await store.readAfter('logs', 'A', page[1]!.id, 10)), ['a3', 'a4']);
        assert.deepEqual(ids(await store.readAfter('logs', 'A', page[0]!.id, 2)), ['a2', 'a3'], 'bounded by the limit');
        await store.append('logs', [event({ id: 'a5', time: 5, partition: 'A' }), event({ id: 'b1', time: 6, partition: 'B' })]);
        const rest = await store.readAfter('logs', 'A', page[1]!.id, 10);
        assert.deepEqual(ids(rest), ['a3', 'a4', 'a5'], 'what was appended since, of this partition only');
        await store.commit(commitOf('logs', 'A', rest[0]!.id));
        assert.deepEqual(ids(await store.readAfter('logs', 'A', page[0]!.id, 10)), ['a4', 'a5'], 'never an entry at or before the cursor');
        assert.deepEqual(await store.readAfter('logs', 'A', rest[2]!.id, 10), []);
        assert.deepEqual(await store.readAfter('logs', 'Z', page[0]!.id, 10), []);
        await assert.rejects(store.readAfter('logs', 'A', 'not-an-id', 10), RangeError);
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
      'a record is known by its event id and its own time: the same id at another time is another record',
      withStore(async (store) => {
        await store.append('logs', [event({ id: 'x', time: 1 })]);
        assert.deepEqual(await store.append('logs', [event({ id: 'x', time: 2 })]), { appended: 1, duplicates: 0 });
        assert.deepEqual(await store.append('logs', [event({ id: 'x', time: 1 }), event({ id: 'x', time: 2 })]), { appended: 0, duplicates: 2 });
        assert.equal(await store.pendingCount('logs'), 2);
      }),
    );

    test(
      'a record that had no time of its own (clockTime: its time is the receiver clock) is known by its event id alone',
      withStore(async (store) => {
        await store.append('logs', [{ ...event({ id: 'c', time: 100 }), clockTime: true }]);
        assert.deepEqual(await store.append('logs', [{ ...event({ id: 'c', time: 250 }), clockTime: true }]), { appended: 0, duplicates: 1 });
        assert.equal(await store.pendingCount('logs'), 1);
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
        assert.deepEqual(
          (await store.readPage('logs', 'P', 10)).map((e) => e.event.eventId),
          ['e2'],
          'cursor did not move',
        );
        await store.commit(commitOf('logs', 'P', second!.id, { groups: [group('g1', 2)] }));
        assert.equal((await store.loadGroups(['g1'])).get('g1')!.count, 2);
      }),
    );

    test(
      'a commit may append records to ingest logs (as the correlation log hands records on), deduped like appends',
      withStore(async (store) => {
        await store.append('correlation', [event({ id: 'w1', time: 1, partition: 'waiting' }), event({ id: 'w2', time: 2, partition: 'waiting' })]);
        const page = await store.readPage('correlation', 'waiting', 10);
        const handOn = (...ids: Array<[string, string]>) => [{ pipeline: 'logs', events: ids.map(([id, partition], i) => event({ id, time: i + 1, partition })) }];
        await store.commit(commitOf('correlation', 'waiting', page[1]!.id, { appends: handOn(['w1', 'S'], ['w2', 'T']) }));
        assert.deepEqual(
          (await store.readPage('logs', 'S', 10)).map((e) => e.event.eventId),
          ['w1'],
        );
        assert.deepEqual(
          (await store.readPage('logs', 'T', 10)).map((e) => e.event.eventId),
          ['w2'],
        );
        assert.equal(await store.pendingCount('correlation'), 0, 'the cursor moved with it');
        // The same page committed again (a crash before its first commit was known): refused, and its
        // records are not appended twice; a new one in a refused commit is appended only by a store
        // that appends before committing.
        await assert.rejects(store.commit(commitOf('correlation', 'waiting', page[1]!.id, { appends: handOn(['w1', 'S'], ['w3', 'S']) })), conflict);
        assert.deepEqual(
          (await store.readPage('logs', 'S', 10)).map((e) => e.event.eventId),
          options.commitAppendsAtomic === false ? ['w1', 'w3'] : ['w1'],
        );
        assert.equal(await store.pendingCount('logs'), options.commitAppendsAtomic === false ? 3 : 2);
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
        assert.deepEqual(
          forFile.map((o) => o.id),
          ['w1', 'w2'],
        );
        await store.ackOutbox('logs', 'file', forFile[1]!.seq);
        assert.deepEqual(
          (await store.readOutbox('logs', 'file', 10)).map((o) => o.id),
          ['w3'],
        );
        assert.deepEqual(
          (await store.readOutbox('logs', 'webhook', 10)).map((o) => o.id),
          ['w1', 'w2', 'w3'],
        );
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
        assert.deepEqual(
          (await store.readOutbox('logs', 'webhook', 10)).map((o) => o.id),
          ['w3'],
          'dead letters are not read again',
        );
        const dead = await store.listDeadLetters(10);
        assert.deepEqual(
          dead.map((d) => [d.entry.id, d.reason, d.exporter]),
          [
            ['w2', 'timed out', 'webhook'],
            ['w1', 'HTTP 410 after 3 attempts', 'webhook'],
          ],
        );
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
        assert.deepEqual(
          st.recentFailures.map((f) => f.time),
          [5, 3, 1],
        );
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
        await assert.rejects(store.commit(commitOf('logs', 'P', first!.id, { groups: [group('h', 1)], outbox: [workEvent('dup')] })), (err: unknown) =>
          isVigilError(err, 'VIGIL_STORE_CONFLICT'),
        );
        assert.equal((await store.loadGroups(['h'])).size, 0);
        await store.registerExporter('logs', 'file');
        assert.deepEqual(await store.readOutbox('logs', 'file', 10), []);
        assert.deepEqual(
          (await store.readPage('logs', 'P', 10)).map((e) => e.event.eventId),
          ['c2'],
        );
      }),
    );

    test(
      'overlapping pages of two writers: the second commit of the overlap is refused, even from fresh group state',
      withStore(async (store) => {
        await store.append(
          'logs',
          [1, 2, 3].map((i) => event({ id: `ov${i}`, time: i, partition: 'O' })),
        );
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
        assert.deepEqual(
          (await store.readPage('logs', 'O', 10)).map((e) => e.event.eventId),
          ['ov3'],
        );
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
          assert.deepEqual(
            page.map((e) => e.event.eventId),
            [`${i}-1`, `${i}-2`],
            `partition ${p}`,
          );
          assert.ok(page.every((e) => e.event.partition === p));
        }
        // Committing one partition leaves the others untouched.
        const [a1] = await store.readPage('logs', '{a}', 1);
        await store.commit(commitOf('logs', '{a}', a1!.id));
        assert.deepEqual(
          (await store.readPage('logs', '{a}', 10)).map((e) => e.event.eventId),
          ['0-2'],
        );
        assert.deepEqual(
          (await store.readPage('logs', 'a', 10)).map((e) => e.event.eventId),
          ['1-1', '1-2'],
        );
        assert.equal(await store.pendingCount('logs'), names.length * 2 - 1);
      }),
    );

    test(
      'pages of a long partition come in log order until it is drained',
      withStore(async (store) => {
        const ids = Array.from({ length: 600 }, (_, i) => `long-${i}`);
        for (let i = 0; i < ids.length; i += 100) {
          await store.append(
            'traces',
            ids.slice(i, i + 100).map((id, j) => event({ id, time: i + j, partition: 'L' })),
          );
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
        const open: GroupState = {
          groupKey: 'g_open',
          count: 2,
          firstSeen: 1_000,
          lastSeen: 61_000,
          lastDecision: 'ChronicRecurrence',
          openWorkId: 'w_1',
          workGeneration: 1,
          version: 1,
        };
        await store.commit(commitOf('logs', 'session-1', a!.id, { groups: [open, group('g_quiet', 1)] }));
        assert.deepEqual((await store.loadGroups(['g_open', 'missing'])).get('g_open'), open);
        assert.equal((await store.status()).openWork, 1);
        await store.commit(
          commitOf('logs', 'session-1', (await store.readPage('logs', 'session-1', 1))[0]!.id, { groups: [{ ...open, openWorkId: null, version: 2 }] }),
        );
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
        assert.deepEqual(
          all.map((e) => e.id),
          ['l1', 'l2'],
        );
        assert.ok(all[0]!.seq < all[1]!.seq, 'seq grows');
        assert.deepEqual((all[0] as WorkOutboxItem).event, workEvent('l1').event, 'entries round-trip');
        assert.deepEqual(
          (await store.readOutbox('traces', 'a', 10)).map((e) => e.id),
          ['t1'],
        );
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
        await store.commit(
          commitOf('logs', 'session-1', (await store.readPage('logs', 'session-1', 1))[0]!.id, {
            failures: Array.from({ length: 15 }, (_, i) => failure(101 + i * 2)),
          }),
        );
        const times = (await store.status()).recentFailures.map((f) => f.time);
        assert.deepEqual(
          times,
          Array.from({ length: 20 }, (_, i) => 129 - i),
        );
      }),
    );

    test(
      'state: entries load, write and delete with versions; namespaces are separate; listed newest first',
      withStore(async (store) => {
        await store.commit(stateCommit({ state: [put('proc/a', 'k1', { n: 1 }), put('proc/a', 'k2', 'two', { version: 1 }), put('proc/b', 'k1', [1, 2])] }));
        assert.deepEqual(await values(store, 'proc/a', ['k1', 'k2', 'missing']), { k1: [{ n: 1 }, 1], k2: ['two', 1] });
        assert.deepEqual(await values(store, 'proc/b', ['k1', 'k2']), { k1: [[1, 2], 1] }, 'namespaces do not share keys');
        await store.commit(stateCommit({ state: [put('proc/a', 'k1', { n: 2 }, { version: 2 }), put('proc/a', 'k2', null, { version: 2 })] }));
        assert.deepEqual(await values(store, 'proc/a', ['k1', 'k2']), { k1: [{ n: 2 }, 2] }, 'k2 deleted');
        // A deleted entry is absent: creating it again starts at version 1.
        await store.commit(stateCommit({ state: [put('proc/a', 'k2', 'again', { version: 1 }), put('proc/a', 'k3', true)] }));
        assert.deepEqual(
          (await store.listState('proc/a', 10)).map((e) => [e.key, e.value, e.version]),
          [
            ['k3', true, 1],
            ['k2', 'again', 1],
            ['k1', { n: 2 }, 2],
          ],
        );
        assert.deepEqual(
          (await store.listState('proc/a', 2)).map((e) => e.key),
          ['k3', 'k2'],
          'bounded',
        );
        assert.deepEqual(await store.listState('nobody', 10), []);
        const st = await store.status();
        assert.deepEqual(
          st.state.filter((n) => n.namespace.startsWith('proc/')),
          [
            { namespace: 'proc/a', entries: 3, evicted: 0 },
            { namespace: 'proc/b', entries: 1, evicted: 0 },
          ],
        );
      }),
    );

    test(
      'state: writes of one commit apply in order; unconditional writes win last and still count versions',
      withStore(async (store) => {
        await store.commit(stateCommit({ state: [put('ns', 'k', 'a', { version: 1 }), put('ns', 'k', 'b', { version: 2 }), put('ns', 'k', 'c')] }));
        assert.deepEqual(await values(store, 'ns', ['k']), { k: ['c', 3] });
        // Two writers of an idempotent fact: no version, the last one wins, nothing is refused.
        await store.commit(stateCommit({ state: [put('trace-session', 't1', 'S1')] }));
        await store.commit(stateCommit({ state: [put('trace-session', 't1', 'S2')] }));
        assert.deepEqual(await values(store, 'trace-session', ['t1']), { t1: ['S2', 2] });
        // Deleting what is not there is a no-op; a conditional one on a missing entry expects version 0.
        await store.commit(stateCommit({ state: [put('ns', 'none', null), put('ns', 'none2', null, { version: 1 })] }));
        await assert.rejects(store.commit(stateCommit({ state: [put('ns', 'none', null, { version: 2 })] })), conflict);
      }),
    );

    test(
      'state: a stale version refuses the whole commit — groups, outbox, cursor, timers and other writes — and a stale group refuses the state',
      withStore(async (store) => {
        await store.registerExporter('logs', 'file');
        await store.append('logs', [event({ id: 's1', time: 1, partition: 'P' }), event({ id: 's2', time: 2, partition: 'P' })]);
        const [p1] = await store.readPage('logs', 'P', 1);
        await store.commit(commitOf('logs', 'P', p1!.id, { groups: [group('g', 1)], state: [put('w', 'ckpt', { step: 1 }, { version: 1 })] }));
        const [p2] = await store.readPage('logs', 'P', 1);
        // Built on the state before the first commit: version 1 again.
        await assert.rejects(
          store.commit(
            commitOf('logs', 'P', p2!.id, {
              groups: [group('g', 2), group('h', 1)],
              outbox: [workEvent('w-stale')],
              state: [put('w', 'other', 'x'), put('w', 'ckpt', { step: 2 }, { version: 1 })],
              timers: { set: [timer('t-stale', 5)] },
            }),
          ),
          conflict,
        );
        assert.equal((await store.loadGroups(['g'])).get('g')!.version, 1);
        assert.equal((await store.loadGroups(['h'])).size, 0);
        assert.deepEqual(await values(store, 'w', ['ckpt', 'other']), { ckpt: [{ step: 1 }, 1] });
        assert.deepEqual(await store.readOutbox('logs', 'file', 10), []);
        assert.deepEqual((await store.dueTimers('logs', 10, 10)).timers, []);
        assert.deepEqual(
          (await store.readPage('logs', 'P', 10)).map((e) => e.event.eventId),
          ['s2'],
          'cursor did not move',
        );
        // And the other way round: a stale group refuses fresh state writes.
        const [again] = await store.readPage('logs', 'P', 1);
        await assert.rejects(
          store.commit(commitOf('logs', 'P', again!.id, { groups: [group('g', 1)], state: [put('w', 'ckpt', { step: 2 }, { version: 2 })] })),
          conflict,
        );
        assert.deepEqual(await values(store, 'w', ['ckpt']), { ckpt: [{ step: 1 }, 1] });
        await store.commit(commitOf('logs', 'P', again!.id, { groups: [group('g', 2)], state: [put('w', 'ckpt', { step: 2 }, { version: 2 })] }));
        assert.deepEqual(await values(store, 'w', ['ckpt']), { ckpt: [{ step: 2 }, 2] });
      }),
    );

    test(
      'state: entries with a TTL expire by the store clock, are invisible at once and purged by later writes',
      (() => {
        let clock = Date.UTC(2026, 0, 1);
        return withStore(
          async (store) => {
            await store.commit(
              stateCommit({ state: [put('ttl', 'short', 1, { ttlMs: 1000 }), put('ttl', 'long', 2, { ttlMs: 60_000 }), put('ttl', 'forever', 3)] }),
            );
            const loaded = await store.loadState('ttl', ['short', 'forever']);
            assert.equal(loaded.get('short')!.expiresAt, clock + 1000);
            assert.equal(loaded.get('forever')!.expiresAt, undefined);
            clock += 999;
            assert.deepEqual(Object.keys(await values(store, 'ttl', ['short', 'long', 'forever'])), ['short', 'long', 'forever']);
            clock += 1;
            assert.deepEqual(Object.keys(await values(store, 'ttl', ['short', 'long', 'forever'])), ['long', 'forever'], 'expired at its time');
            assert.deepEqual((await store.listState('ttl', 10)).map((e) => e.key).sort(), ['forever', 'long']);
            assert.equal((await store.status()).state.find((n) => n.namespace === 'ttl')!.entries, 2);
            // An expired entry is absent: a conditional create succeeds, versions start again.
            await store.commit(stateCommit({ state: [put('ttl', 'short', 'new', { version: 1 })] }));
            assert.deepEqual(await values(store, 'ttl', ['short']), { short: ['new', 1] });
            // Many short-lived entries (a trace → session map): expired ones go as new ones come.
            for (let round = 0; round < 5; round++) {
              await store.commit(stateCommit({ state: Array.from({ length: 50 }, (_, i) => put('traces', `r${round}-${i}`, 'S', { ttlMs: 500 })) }));
              clock += 600;
            }
            await store.commit(stateCommit({ state: [put('traces', 'last', 'S', { ttlMs: 500 })] }));
            assert.deepEqual(
              (await store.listState('traces', 1000)).map((e) => e.key),
              ['last'],
            );
            assert.equal((await store.status()).state.find((n) => n.namespace === 'traces')!.entries, 1);
          },
          { now: () => clock },
        );
      })(),
    );

    test(
      'state: a namespace over its bound evicts expired entries first, then the oldest written, and counts them',
      (() => {
        let clock = Date.UTC(2026, 0, 1);
        return withStore(
          async (store) => {
            const bound = { maxEntries: 3 };
            await store.commit(stateCommit({ state: [put('b', 'a', 1, bound), put('b', 'b', 2, { ...bound, ttlMs: 10 }), put('b', 'c', 3, bound)] }));
            clock += 20; // b expires
            await store.commit(stateCommit({ state: [put('b', 'a', 11, bound), put('b', 'd', 4, bound)] }));
            assert.deepEqual(Object.keys(await values(store, 'b', ['a', 'b', 'c', 'd'])).sort(), ['a', 'c', 'd'], 'the expired entry made room');
            await store.commit(stateCommit({ state: [put('b', 'e', 5, bound), put('b', 'f', 6, bound)] }));
            // Write order: c (oldest), a (rewritten), d, e, f → c and a go.
            assert.deepEqual(Object.keys(await values(store, 'b', ['a', 'c', 'd', 'e', 'f'])).sort(), ['d', 'e', 'f']);
            const ns = (await store.status()).state.find((n) => n.namespace === 'b')!;
            assert.deepEqual(ns, { namespace: 'b', entries: 3, evicted: 2 });
          },
          { now: () => clock },
        );
      })(),
    );

    test(
      'state: a value over the size bound, a bad namespace or key is VIGIL_STATE_INVALID naming it, and nothing is written',
      withStore(async (store) => {
        const big = 'x'.repeat(MAX_STATE_VALUE_BYTES);
        const err = await store.commit(stateCommit({ state: [put('ok', 'first', 1), put('proc/x', 'big-key', big)] })).then(
          () => assert.fail('an oversized value must be refused'),
          (e: unknown) => e,
        );
        assert.ok(isVigilError(err, 'VIGIL_STATE_INVALID') && !err.transient, String(err));
        assert.match(err.message, /"proc\/x"\/"big-key".*over the bound of 65536/);
        assert.equal((await store.loadState('ok', ['first'])).size, 0);
        await assert.rejects(store.commit(stateCommit({ state: [put('has {braces}', 'k', 1)] })), (e: unknown) => isVigilError(e, 'VIGIL_STATE_INVALID'));
        await assert.rejects(store.commit(stateCommit({ state: [put('ns', '', 1)] })), (e: unknown) => isVigilError(e, 'VIGIL_STATE_INVALID'));
        await assert.rejects(store.append('logs', [event({ id: 'inv', time: 1 })], { state: [put('ns', 'k', big)] }), (e: unknown) =>
          isVigilError(e, 'VIGIL_STATE_INVALID'),
        );
        assert.equal(await store.pendingCount('logs'), 0, 'the append was refused whole');
      }),
    );

    test(
      'timers: set, replace, due at their time earliest first, next due; payloads round-trip; pipelines are separate',
      withStore(async (store) => {
        await store.commit(
          stateCommit({ timers: { set: [timer('a', 3000), timer('b', 1000, { payload: { attempt: 1, run: 'r' } }), timer('c', 2000, { partition: 'Q' })] } }),
        );
        await store.commit(stateCommit({ timers: { set: [timer('x', 500)] } }, 'traces'));
        const none = await store.dueTimers('logs', 999, 10);
        assert.deepEqual(none, { timers: [], next: 1000 });
        const due = await store.dueTimers('logs', 2000, 10);
        assert.deepEqual(
          due.timers.map((t) => [t.id, t.due, t.partition, t.owner, t.payload]),
          [
            ['b', 1000, 'P', 'test/proc', { attempt: 1, run: 'r' }],
            ['c', 2000, 'Q', 'test/proc', { id: 'c' }],
          ],
        );
        assert.equal(due.next, 3000);
        assert.deepEqual(
          (await store.dueTimers('logs', 5000, 1)).timers.map((t) => t.id),
          ['b'],
          'at most limit',
        );
        assert.equal((await store.dueTimers('logs', 5000, 1)).next, 2000, 'next: the first one not returned');
        // Setting an existing id replaces it, with a new version.
        const before = due.timers.find((t) => t.id === 'b')!.version;
        await store.commit(stateCommit({ timers: { set: [timer('b', 4000, { payload: 'moved' })] } }));
        const after = await store.dueTimers('logs', 10_000, 10);
        assert.deepEqual(
          after.timers.map((t) => [t.id, t.due]),
          [
            ['c', 2000],
            ['a', 3000],
            ['b', 4000],
          ],
        );
        assert.ok(after.timers.find((t) => t.id === 'b')!.version > before);
        assert.equal(after.next, null);
        assert.deepEqual(
          (await store.dueTimers('traces', 10_000, 10)).timers.map((t) => t.id),
          ['x'],
        );
        const st = await store.status();
        assert.deepEqual(st.pipelines.find((p) => p.pipeline === 'logs')!.timers, { pending: 3, nextDue: 2000 });
      }),
    );

    test(
      'timers: a clear of a timer no longer pending, or at another version, refuses the whole commit; clear then set re-arms',
      withStore(async (store) => {
        await store.registerExporter('logs', 'file');
        await store.commit(stateCommit({ timers: { set: [timer('t1', 100), timer('t2', 100)] } }));
        const [t1, t2] = (await store.dueTimers('logs', 100, 10)).timers;
        // Sidecar A fires t1 and re-arms it; sidecar B fired the same t1 and its commit must fail.
        await store.commit(stateCommit({ outbox: [workEvent('fired-by-A')], timers: { clear: [{ id: t1!.id, version: t1!.version }], set: [timer('t1', 200)] } }));
        await assert.rejects(
          store.commit(
            stateCommit({
              outbox: [workEvent('fired-by-B')],
              state: [put('s', 'k', 1)],
              timers: {
                clear: [
                  { id: t1!.id, version: t1!.version },
                  { id: t2!.id, version: t2!.version },
                ],
              },
            }),
          ),
          conflict,
        );
        assert.deepEqual(
          (await store.readOutbox('logs', 'file', 10)).map((o) => o.id),
          ['fired-by-A'],
        );
        assert.equal((await store.loadState('s', ['k'])).size, 0);
        assert.deepEqual(
          (await store.dueTimers('logs', 1000, 10)).timers.map((t) => [t.id, t.due]),
          [
            ['t2', 100],
            ['t1', 200],
          ],
          't2 still pending',
        );
        // Cleared once; a second clear of it (another sidecar) is refused.
        await store.commit(stateCommit({ timers: { clear: [{ id: 't2' }] } }));
        await assert.rejects(store.commit(stateCommit({ timers: { clear: [{ id: 't2' }] } })), conflict);
        await assert.rejects(store.commit(stateCommit({ timers: { clear: [{ id: 'never-set' }] } })), conflict);
        assert.deepEqual(
          (await store.dueTimers('logs', 1000, 10)).timers.map((t) => t.id),
          ['t1'],
        );
      }),
    );

    test(
      'timers: a timer page commit moves no cursor; timers set with a page of entries join its commit',
      withStore(async (store) => {
        await store.append('logs', [event({ id: 'n1', time: 1, partition: 'N' }), event({ id: 'n2', time: 2, partition: 'N' })]);
        const [n1] = await store.readPage('logs', 'N', 1);
        await store.commit(commitOf('logs', 'N', n1!.id, { timers: { set: [timer('armed', 50, { partition: 'N' })] } }));
        const [fired] = (await store.dueTimers('logs', 60, 10)).timers;
        assert.equal(fired!.id, 'armed');
        await store.commit(commitOf('logs', 'N', null, { groups: [group('gt', 1)], timers: { clear: [{ id: fired!.id, version: fired!.version }] } }));
        assert.equal((await store.loadGroups(['gt'])).get('gt')!.version, 1);
        assert.deepEqual(
          (await store.readPage('logs', 'N', 10)).map((e) => e.event.eventId),
          ['n2'],
          'the log and cursor are as they were',
        );
        const part = (await store.status()).pipelines.find((p) => p.pipeline === 'logs')!.partitions.find((p) => p.partition === 'N')!;
        assert.deepEqual([part.cursor, part.pending], [n1!.id, 1]);
        // The page after it commits normally: the timer page did not disturb the cursor check.
        const [n2] = await store.readPage('logs', 'N', 1);
        await store.commit(commitOf('logs', 'N', n2!.id));
        assert.equal(await store.pendingCount('logs'), 0);
        assert.deepEqual((await store.dueTimers('logs', 1e15, 10)).timers, []);
      }),
    );

    test(
      `timers: a pipeline holds at most ${MAX_TIMERS_PER_PIPELINE} pending; beyond, the commit is refused retryably`,
      withStore(async (store) => {
        const chunk = 10_000;
        for (let i = 0; i < MAX_TIMERS_PER_PIPELINE; i += chunk) {
          await store.commit(stateCommit({ timers: { set: Array.from({ length: chunk }, (_, j) => timer(`bulk-${i + j}`, 1_000 + i + j)) } }));
        }
        // Replacing one is fine at the bound; one more is not.
        await store.commit(stateCommit({ timers: { set: [timer('bulk-0', 5)] } }));
        const err = await store.commit(stateCommit({ state: [put('s', 'k', 1)], timers: { set: [timer('one-more', 5)] } })).then(
          () => assert.fail('over the bound'),
          (e: unknown) => e,
        );
        assert.ok(isVigilError(err, 'VIGIL_STATE_FULL') && err.transient, String(err));
        assert.equal((await store.loadState('s', ['k'])).size, 0);
        // Clearing one makes room in the same commit.
        await store.commit(stateCommit({ timers: { clear: [{ id: 'bulk-1' }], set: [timer('one-more', 5)] } }));
        assert.equal((await store.status()).pipelines.find((p) => p.pipeline === 'logs')!.timers.pending, MAX_TIMERS_PER_PIPELINE);
      }),
    );

    test(
      'append with state: the receiver state is written with the records, also when all are duplicates or there are none',
      withStore(async (store) => {
        const offsets = (file: string, offset: number, version?: number) => put('journal/ops', file, { offset }, version === undefined ? {} : { version });
        await store.append('logs', [event({ id: 'j1', time: 1, partition: 'J' }), event({ id: 'j2', time: 2, partition: 'K' })], {
          state: [offsets('/a.jsonl', 120, 1)],
        });
        assert.deepEqual(await values(store, 'journal/ops', ['/a.jsonl']), { '/a.jsonl': [{ offset: 120 }, 1] });
        assert.equal(await store.pendingCount('logs'), 2);
        // A re-read after a crash: the records are duplicates, the offset still moves.
        assert.deepEqual(await store.append('logs', [event({ id: 'j2', time: 2, partition: 'K' })], { state: [offsets('/a.jsonl', 180, 2)] }), {
          appended: 0,
          duplicates: 1,
        });
        assert.deepEqual(await store.append('logs', [], { state: [offsets('/a.jsonl', 200, 3)] }), { appended: 0, duplicates: 0 });
        assert.deepEqual(await values(store, 'journal/ops', ['/a.jsonl']), { '/a.jsonl': [{ offset: 200 }, 3] });
        // A stale version: refused retryably.
        await assert.rejects(store.append('logs', [event({ id: 'j3', time: 3, partition: 'J' })], { state: [offsets('/a.jsonl', 999, 3)] }), conflict);
        assert.deepEqual(await values(store, 'journal/ops', ['/a.jsonl']), { '/a.jsonl': [{ offset: 200 }, 3] });
        if (options.appendStateAtomic === false) {
          // The records went first (their own slot): a retry appends nothing twice.
          assert.deepEqual(await store.append('logs', [event({ id: 'j3', time: 3, partition: 'J' })], { state: [offsets('/a.jsonl', 260, 4)] }), {
            appended: 0,
            duplicates: 1,
          });
        } else {
          assert.equal(await store.pendingCount('logs'), 2, 'nothing of the refused append was written');
          assert.deepEqual(await store.append('logs', [event({ id: 'j3', time: 3, partition: 'J' })], { state: [offsets('/a.jsonl', 260, 4)] }), {
            appended: 1,
            duplicates: 0,
          });
        }
        assert.deepEqual(
          (await store.readPage('logs', 'J', 10)).map((e) => e.event.eventId),
          ['j1', 'j3'],
        );
        assert.deepEqual(await values(store, 'journal/ops', ['/a.jsonl']), { '/a.jsonl': [{ offset: 260 }, 4] });
      }),
    );

    if (options.reopen) {
      const reopen = options.reopen;
      test('everything appended and committed survives closing and reopening the store', async () => {
        const first = await makeStore();
        await first.open();
        await first.registerExporter('logs', 'file');
        await first.append('logs', [
          event({ id: 'd1', time: 1, partition: 'D' }),
          event({ id: 'd2', time: 2, partition: 'D' }),
          event({ id: 'd3', time: 3, partition: 'D' }),
        ]);
        const [d1] = await first.readPage('logs', 'D', 1);
        await first.commit(
          commitOf('logs', 'D', d1!.id, {
            groups: [{ ...group('g_d', 1), openWorkId: 'w_d', workGeneration: 1 }],
            turns: [{ turnId: 'turn', created: 1 }],
            revisions: [{ executionId: 'exec', revision: 'rev-1' }],
            outbox: [workEvent('wd1'), workEvent('wd2')],
            state: [put('durable', 'ckpt', { version: 1, attempts: [1] }, { version: 1 })],
            timers: { set: [timer('retry:run-1', Date.UTC(2030, 0, 1), { partition: 'D', payload: { run: 'run-1' } })] },
          }),
        );
        await first.append('logs', [], { state: [put('receiver', '/var/log/a.jsonl', { offset: 4096 })] });
        const [o1] = await first.readOutbox('logs', 'file', 1);
        await first.ackOutbox('logs', 'file', o1!.seq);
        await first.close();

        const second = await reopen(first);
        await second.open();
        try {
          assert.deepEqual(
            (await second.readPage('logs', 'D', 10)).map((e) => e.event.eventId),
            ['d2', 'd3'],
          );
          assert.equal((await second.loadGroups(['g_d'])).get('g_d')!.openWorkId, 'w_d');
          assert.equal((await second.loadTurns('logs', ['turn'])).get('turn'), 1);
          assert.equal((await second.lookupRevisions(['exec'])).get('exec'), 'rev-1');
          assert.deepEqual(
            (await second.readOutbox('logs', 'file', 10)).map((e) => e.id),
            ['wd2'],
          );
          assert.deepEqual(await second.append('logs', [event({ id: 'd1', time: 1, partition: 'D' })]), { appended: 0, duplicates: 1 }, 'dedupe survives');
          assert.deepEqual(await values(second, 'durable', ['ckpt']), { ckpt: [{ version: 1, attempts: [1] }, 1] });
          assert.deepEqual(await values(second, 'receiver', ['/var/log/a.jsonl']), { '/var/log/a.jsonl': [{ offset: 4096 }, 1] });
          const due = await second.dueTimers('logs', Date.UTC(2030, 0, 1), 10);
          assert.deepEqual(
            due.timers.map((t) => [t.id, t.partition, t.payload]),
            [['retry:run-1', 'D', { run: 'run-1' }]],
          );
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
