/**
 * The SQLite store commits pages and exporter acks without an fsync on the event loop and answers
 * them once a sync of the WAL in the thread pool has them on disk. Between the two a commit is
 * visible to the store's own reads (the next page builds on it) but must not leave the process:
 * an exporter reads the outbox only up to what is synced. The WAL sync is injected here (a real
 * fdatasync, held back until the test releases it), the database is a real file.
 */
import assert from 'node:assert/strict';
import { fdatasync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type Database from 'better-sqlite3';
import type { GroupState, OutboxItem } from '../src/model/work.ts';
import { createLogger } from '../src/logger.ts';
import type { WorkPage } from '../src/processors/page.ts';
import { PipelineRunner } from '../src/service/pipeline-runner.ts';
import { SqliteStore, type SqliteStoreConfig } from '../src/store/sqlite/store.ts';
import type { OperatorFunction } from 'rxjs';
import { concatMap } from 'rxjs';
import type { PageCommit } from '../src/store/types.ts';
import { event } from './helpers/pages.ts';
import { seededRandom, testSeed } from './helpers/random.ts';
import { tempDir } from './helpers/vigil-process.ts';

const config = (path: string): SqliteStoreConfig => ({ path, synchronous: 'full', busy_timeout: 1000, dedupe_window: 24 * 3_600_000 });

const realSync = (fd: number) => new Promise<void>((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));

/**
 * A WAL sync the test holds: while `hold` is set each call waits in `held` (in call order) until
 * released (a real fdatasync, then it answers; awaiting `release()` lets the store see the answer)
 * or failed.
 */
function heldSync() {
  const held: Array<{ release: () => Promise<void>; fail: (err: Error) => Promise<void> }> = [];
  const gate = {
    hold: false,
    calls: 0,
    held,
    sync: (fd: number): Promise<void> => {
      gate.calls++;
      if (!gate.hold) return realSync(fd);
      return new Promise<void>((resolve, reject) => {
        held.push({
          release: async () => {
            await realSync(fd).then(resolve, reject);
            await turn();
          },
          fail: async (err) => {
            reject(err);
            await turn();
          },
        });
      });
    },
  };
  return gate;
}

function group(key: string, version: number): GroupState {
  return {
    groupKey: key,
    count: version,
    firstSeen: 0,
    lastSeen: version,
    lastDecision: 'BurstThresholdReached',
    openWorkId: `w-${key}`,
    workGeneration: 0,
    version,
  };
}

const item = (id: string): OutboxItem => ({ kind: 'occurrence', id, occurrence: { occurrence_id: id } as never });

function commitOf(groups: GroupState[], outbox: OutboxItem[], cursor: string | null = null, partition = 'P'): PageCommit {
  return { pipeline: 'logs', partition, cursor, groups, turns: [], revisions: [], outbox, failures: [] };
}

/** A promise's state without waiting for it. */
function watch(p: Promise<void>) {
  const w = { settled: false, error: undefined as unknown };
  p.then(
    () => (w.settled = true),
    (err: unknown) => ((w.settled = true), (w.error = err)),
  );
  return w;
}

/** A turn of the event loop (what the store does on an answered sync has run). */
const turn = () => new Promise((resolve) => setImmediate(resolve));

/** Waits until `n` syncs are held (the first one opens the log first: a directory sync, slow on a loaded machine). */
async function heldCount(gate: ReturnType<typeof heldSync>, n: number): Promise<void> {
  for (const until = Date.now() + 10_000; gate.held.length < n; await new Promise((r) => setTimeout(r, 2))) {
    if (Date.now() > until) throw new Error(`${gate.held.length} syncs held, expected ${n}`);
  }
  await turn();
  assert.equal(gate.held.length, n);
}

const ids = async (store: SqliteStore) => (await store.readOutbox('logs', 'x', 1000)).map((e) => e.id);

describe('sqlite store: the outbox is read only up to what is on disk', () => {
  test('a committed page is visible to the next page at once, to an exporter only once its sync resolved', async () => {
    const gate = heldSync();
    const store = new SqliteStore(config(join(tempDir(), 'state.db')), undefined, undefined, { sync: gate.sync });
    await store.open();
    try {
      await store.append('logs', [event({ id: 'e1', time: 1, partition: 'S' }), event({ id: 'e2', time: 2, partition: 'S' })]);
      await store.registerExporter('logs', 'x');
      gate.hold = true;

      const page = await store.readPage('logs', 'S', 1);
      const a = watch(store.commit(commitOf([group('g1', 1)], [item('a1'), item('a2')], page[0]!.id, 'S')));
      await heldCount(gate, 1);
      assert.equal(a.settled, false, 'a commit resolves only once on disk');
      assert.deepEqual(await ids(store), [], 'no exporter sees an entry of an unsynced commit');
      assert.equal(await store.outboxLag('logs', 'x'), 2, 'the entries are committed');
      // The next page builds on it: its group state, its cursor.
      assert.equal((await store.loadGroups(['g1'])).get('g1')?.version, 1);
      assert.deepEqual(
        (await store.readPage('logs', 'S', 10)).map((e) => e.event.eventId),
        ['e2'],
      );
      const b = watch(store.commit(commitOf([group('g1', 2)], [item('b1')])));
      await heldCount(gate, 2);
      assert.deepEqual(await ids(store), []);

      // The later sync covers the earlier commit's frames too: both commits' entries go out.
      await gate.held[1]!.release();
      assert.equal(b.settled, true);
      assert.equal(b.error, undefined);
      assert.equal(a.settled, false, 'the first commit still waits for its own sync');
      assert.deepEqual(await ids(store), ['a1', 'a2', 'b1']);
      await gate.held[0]!.release();
      assert.equal(a.settled, true);
      assert.equal(a.error, undefined);

      // An exporter's ack is answered once on disk as well.
      const ack = watch(store.ackOutbox('logs', 'x', 2));
      await heldCount(gate, 3);
      assert.equal(ack.settled, false);
      await gate.held[2]!.release();
      assert.equal(ack.settled, true);
      assert.deepEqual(await ids(store), ['b1']);
    } finally {
      gate.hold = false;
      await Promise.all(gate.held.map((h) => h.release()));
      await store.close();
    }
  });

  test('random commits and sync answers (seeded): an exporter sees exactly the commits some resolved sync covers', async () => {
    const seed = testSeed();
    const random = seededRandom(15);
    const gate = heldSync();
    const store = new SqliteStore(config(join(tempDir(), 'state.db')), undefined, undefined, { sync: gate.sync });
    await store.open();
    try {
      await store.registerExporter('logs', 'x');
      gate.hold = true;
      // commits[k]: the entries of the k-th commit; its sync is gate.held[k] (each commit starts one, in order).
      const commits: string[][] = [];
      const released = new Set<number>();
      let version = 0;
      const pending: Array<Promise<void>> = [];
      for (let step = 0; step < 200; step++) {
        const open = [...gate.held.keys()].filter((k) => !released.has(k));
        if (random() < 0.5 || open.length === 0) {
          const k = commits.length;
          const entries = Array.from({ length: Math.floor(random() * 3) }, (_, i) => `c${k}-${i}`);
          commits.push(entries);
          const p = store.commit(commitOf([group('g', ++version)], entries.map(item)));
          pending.push(p);
          await heldCount(gate, commits.length);
        } else {
          const k = open[Math.floor(random() * open.length)]!;
          released.add(k);
          await gate.held[k]!.release();
        }
        const covered = Math.max(-1, ...released);
        const expected = commits.slice(0, covered + 1).flat();
        assert.deepEqual(await ids(store), expected, `seed ${seed}, step ${step}: released syncs ${[...released].join(',')}`);
      }
      await Promise.all(gate.held.filter((_, k) => !released.has(k)).map((h) => h.release()));
      await Promise.all(pending);
      assert.deepEqual(await ids(store), commits.flat(), `seed ${seed}`);
    } finally {
      gate.hold = false;
      await store.close();
    }
  });

  test('a failed sync: the commit is synced on the event loop instead, its entries go out, later commits sync on the loop', async () => {
    const gate = heldSync();
    const store = new SqliteStore(config(join(tempDir(), 'state.db')), undefined, undefined, { sync: gate.sync });
    await store.open();
    try {
      await store.registerExporter('logs', 'x');
      gate.hold = true;
      const a = watch(store.commit(commitOf([group('g1', 1)], [item('a1')])));
      await heldCount(gate, 1);
      assert.deepEqual(await ids(store), []);
      await gate.held[0]!.fail(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
      assert.equal(a.settled, true);
      assert.equal(a.error, undefined, 'synced on the loop instead');
      assert.deepEqual(await ids(store), ['a1']);
      const calls = gate.calls;
      await store.commit(commitOf([group('g1', 2)], [item('b1')]));
      assert.equal(gate.calls, calls, 'no further sync off the loop');
      assert.deepEqual(await ids(store), ['a1', 'b1'], 'visible at once: SQLite synced it at commit');
    } finally {
      await store.close();
    }
  });

  test('a commit synced off the loop runs under synchronous NORMAL; the connection is back at FULL after it (its other writes fsync at commit)', async () => {
    const store = new SqliteStore(config(join(tempDir(), 'state.db')), undefined, undefined, { foldRows: 2, foldChunk: 1 });
    await store.open();
    const db = (store as unknown as { db: Database.Database }).db;
    const level = () => db.pragma('synchronous', { simple: true });
    // Every transaction the store opens records the level it runs under.
    const seen: unknown[] = [];
    const transaction = db.transaction.bind(db);
    db.transaction = ((fn: (...a: unknown[]) => unknown) =>
      transaction((...a: unknown[]) => {
        seen.push(level());
        return fn(...a);
      })) as typeof db.transaction;
    try {
      for (let v = 1; v <= 4; v++) {
        await store.commit(commitOf([group('g1', v), group(`h${v}`, 1)], [item(`a${v}`)]));
        assert.equal(level(), 2, `after commit ${v}: FULL`);
      }
      // The fold steps (foldRows 2) take the same way.
      await store.settled();
      assert.equal(level(), 2, 'after the fold steps: FULL');
      assert.ok(seen.length >= 6, `commits and fold steps ran (${seen.length})`);
      assert.deepEqual(new Set(seen), new Set([1]), 'each under NORMAL (1)');
    } finally {
      db.transaction = transaction;
      await store.close();
    }
  });
});

describe('sqlite store: the pipeline runner overlaps page commits with their syncs', () => {
  test("the next partition's page runs while a commit syncs, builds on it, and the round ends once every commit is on disk", async () => {
    const gate = heldSync();
    const store = new SqliteStore(config(join(tempDir(), 'state.db')), undefined, undefined, { sync: gate.sync });
    await store.open();
    // Every page bumps one shared group from the version the store holds (a page that read a stale one would be refused).
    const seen: number[] = [];
    const chain: OperatorFunction<WorkPage, WorkPage> = (pages) =>
      pages.pipe(
        concatMap(async (page) => {
          const v = (await store.loadGroups(['g'])).get('g')?.version ?? 0;
          seen.push(v);
          page.commit.groups = [group('g', v + 1)];
          page.commit.outbox = [item(`${page.partition}-out`)];
          return page;
        }),
      );
    const runner = new PipelineRunner({ pipeline: 'logs', store, chain, logger: createLogger({ level: 'error' }), pageSize: 10 });
    try {
      await store.registerExporter('logs', 'x');
      for (const p of ['A', 'B', 'C']) await store.append('logs', [event({ id: `e-${p}`, time: 1, partition: p })]);
      gate.hold = true;
      const round = runner.runOnce();
      let ended = false;
      void round.then(() => (ended = true));
      // All three pages committed before any sync answered: each built on the one before.
      await heldCount(gate, 3);
      assert.deepEqual(seen, [0, 1, 2]);
      assert.equal(ended, false, 'the round waits for its commits');
      assert.equal(runner.stats.pages, 0, 'a page counts once its commit is on disk');
      assert.deepEqual(await ids(store), []);
      await gate.held[0]!.release();
      assert.equal(ended, false);
      assert.deepEqual(await ids(store), ['A-out']);
      await gate.held[2]!.release();
      assert.deepEqual(await ids(store), ['A-out', 'B-out', 'C-out']);
      await gate.held[1]!.release();
      assert.equal(await round, true);
      assert.equal(runner.stats.pages, 3);
      assert.equal(runner.stats.failedPages, 0);
    } finally {
      gate.hold = false;
      await Promise.all(gate.held.map((h) => h.release()));
      await store.close();
    }
  });
});
