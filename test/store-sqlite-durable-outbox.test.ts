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
import { event, group as groupState } from './helpers/pages.ts';
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

/** A group state at `version` with an open work item (the shared helper's). */
const group = (key: string, version: number): GroupState => groupState(key, version, true);

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
      // A commit made while a sync runs waits for it and for the next one (the running one may have begun before it).
      const b = watch(store.commit(commitOf([group('g1', 2)], [item('b1')])));
      await turn();
      assert.equal(gate.held.length, 1, 'one sync at a time');
      assert.deepEqual(await ids(store), []);
      await gate.held[0]!.release();
      assert.equal(a.settled, true);
      assert.equal(a.error, undefined);
      assert.equal(b.settled, false, 'the second commit waits for the next sync');
      assert.deepEqual(await ids(store), ['a1', 'a2']);
      await heldCount(gate, 2);
      await gate.held[1]!.release();
      assert.equal(b.settled, true);
      assert.equal(b.error, undefined);
      assert.deepEqual(await ids(store), ['a1', 'a2', 'b1']);

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
      // The log is open (a sync then calls the gate in the turn it begins: `covers` below is exact).
      await store.commit(commitOf([group('g', 1)], []));
      gate.hold = true;
      // commits[k]: the entries of the k-th commit; covers[j]: how many commits were made when sync gate.held[j] began.
      const commits: string[][] = [];
      const covers: number[] = [];
      const released = new Set<number>();
      let version = 1;
      const pending: Array<Promise<void>> = [];
      for (let step = 0; step < 200; step++) {
        const open = [...gate.held.keys()].filter((k) => !released.has(k));
        if (random() < 0.5 || open.length === 0) {
          const k = commits.length;
          const entries = Array.from({ length: Math.floor(random() * 3) }, (_, i) => `c${k}-${i}`);
          commits.push(entries);
          const p = store.commit(commitOf([group('g', ++version)], entries.map(item)));
          pending.push(p);
          await turn();
        } else {
          const k = open[Math.floor(random() * open.length)]!;
          released.add(k);
          await gate.held[k]!.release();
          await turn();
        }
        while (covers.length < gate.held.length) covers.push(commits.length);
        const covered = Math.max(0, ...[...released].map((k) => covers[k]!));
        const expected = commits.slice(0, covered).flat();
        assert.deepEqual(await ids(store), expected, `seed ${seed}, step ${step}: released syncs ${[...released].join(',')}`);
      }
      // The syncs still to come (those waiting for a held one) run at once.
      gate.hold = false;
      await Promise.all(gate.held.filter((_, k) => !released.has(k)).map((h) => h.release()));
      await Promise.all(pending);
      assert.deepEqual(await ids(store), commits.flat(), `seed ${seed}`);
    } finally {
      gate.hold = false;
      await Promise.all(gate.held.map((h) => h.release()));
      await store.close();
    }
  });

  test('group sync (seeded): one WAL sync at a time; appends and commits answer once the first sync begun after them answers — not before, not later', async () => {
    const seed = testSeed();
    const random = seededRandom(16);
    const gate = heldSync();
    const store = new SqliteStore(config(join(tempDir(), 'state.db')), undefined, undefined, { sync: gate.sync });
    await store.open();
    try {
      // The log is open (a sync then calls the gate in the turn it begins: `covers` below is exact).
      await store.append('logs', [event({ id: 'warm', time: 0, partition: 'W' })]);
      gate.hold = true;
      // writes[i]: the i-th write's answer; covers[j]: how many writes were committed when sync gate.held[j] began.
      const writes: Array<ReturnType<typeof watch>> = [];
      const covers: number[] = [];
      const released = new Set<number>();
      let version = 0;
      for (let step = 0; step < 300; step++) {
        const r = random();
        const running = [...gate.held.keys()].filter((k) => !released.has(k));
        if (r < 0.3 || (r >= 0.7 && running.length === 0)) {
          writes.push(watch(store.commit(commitOf([group('g', ++version)], [item(`c${step}`)]))));
        } else if (r < 0.7) {
          // Appends of one turn share one transaction (and so one place in the order of writes).
          const n = 1 + Math.floor(random() * 3);
          for (let i = 0; i < n; i++) {
            const p = store.append('logs', [event({ id: `e${step}-${i}`, time: step, partition: `S${i}` })]);
            writes.push(watch(p.then(() => undefined)));
          }
        } else {
          released.add(running[0]!);
          await gate.held[running[0]!]!.release();
        }
        await turn();
        while (covers.length < gate.held.length) covers.push(writes.length);
        const where = `seed ${seed}, step ${step}`;
        const open = gate.held.filter((_, k) => !released.has(k)).length;
        assert.ok(open <= 1, `${where}: ${open} syncs at once`);
        const durable = Math.max(0, ...[...released].map((k) => covers[k]!));
        writes.forEach((w, i) => {
          assert.equal(w.error, undefined, `${where}: write ${i} failed`);
          assert.equal(w.settled, i < durable, `${where}: write ${i} ${w.settled ? 'answered before a sync begun after it answered' : 'still waits after one did'}`);
        });
        if (writes.length > durable) assert.equal(open, 1, `${where}: writes wait and no sync runs`);
      }
      assert.ok(gate.held.length < writes.length, `seed ${seed}: ${gate.held.length} syncs for ${writes.length} writes`);
    } finally {
      gate.hold = false;
      await Promise.all(gate.held.map((h) => h.release()));
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
      // All three pages committed before any sync answered: each built on the one before. The
      // first commit's sync runs; the other two wait for the next one, which they share.
      await heldCount(gate, 1);
      for (let i = 0; i < 100 && seen.length < 3; i++) await turn();
      assert.deepEqual(seen, [0, 1, 2]);
      assert.equal(gate.held.length, 1, 'one sync at a time');
      assert.equal(ended, false, 'the round waits for its commits');
      assert.equal(runner.stats.pages, 0, 'a page counts once its commit is on disk');
      assert.deepEqual(await ids(store), []);
      await gate.held[0]!.release();
      assert.equal(ended, false);
      assert.deepEqual(await ids(store), ['A-out']);
      await heldCount(gate, 2);
      await gate.held[1]!.release();
      assert.deepEqual(await ids(store), ['A-out', 'B-out', 'C-out']);
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
