/**
 * The SQLite store's group log (schema version 3): page commits append group states, the writer
 * folds them into `groups` now and then; loads, version checks and readers beside the writer see
 * the newest state either way, a SIGKILL between commits and folds loses nothing, and a version-2
 * file migrates. Also the WAL checkpoints, run by a worker thread instead of the writer's commits.
 */
import assert from 'node:assert/strict';
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { endianness } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { isVigilError } from '../src/errors.ts';
import type { GroupState } from '../src/model/work.ts';
import { SCHEMA_VERSION } from '../src/store/sqlite/schema.ts';
import { Checkpointer } from '../src/store/sqlite/checkpointer.ts';
import { SqliteStore, type SqliteStoreConfig } from '../src/store/sqlite/store.ts';
import type { PageCommit } from '../src/store/types.ts';
import { CAN_MOUNT, mountTmpfs, NO_MOUNT_REASON } from './helpers/faults.ts';
import { event, group } from './helpers/pages.ts';
import { seededRandom, testSeed } from './helpers/random.ts';
import { killWhileWorking, ROOT, tempDir, waitFor } from './helpers/vigil-process.ts';

/** The crash test's groups, as test/helpers/group-log-writer.ts names them. */
const GROUPS = 40;
const keyOf = (i: number): string => `g${String(i).padStart(3, '0')}`;

const config = (path: string): SqliteStoreConfig => ({ path, synchronous: 'full', busy_timeout: 1000, dedupe_window: 24 * 3_600_000 });

function commitOf(groups: GroupState[]): PageCommit {
  return { pipeline: 'logs', partition: 'P', cursor: null, groups, turns: [], revisions: [], outbox: [], failures: [] };
}

function logRows(file: string): number {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare('SELECT (SELECT COUNT(*) FROM group_log) + (SELECT COUNT(*) FROM group_log_b) AS n').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

async function readOnly<T>(file: string, fn: (s: SqliteStore) => Promise<T>): Promise<T> {
  const ro = new SqliteStore(config(file));
  await ro.open({ readOnly: true });
  try {
    return await fn(ro);
  } finally {
    await ro.close();
  }
}

describe('sqlite store: the group log', () => {
  test('between folds, loads, version checks and a reader beside the writer see the newest logged state', async () => {
    const file = join(tempDir(), 'state.db');
    const store = new SqliteStore(config(file), undefined, Date.now, { foldEvery: 4 });
    await store.open();
    try {
      await store.commit(commitOf([group('a', 1, true), group('b', 1, true), group('c', 1, false)]));
      await store.commit(commitOf([group('a', 2, false), group('b', 2, true)]));
      await store.commit(commitOf([group('a', 3, true)]));
      assert.equal(logRows(file), 6, 'three commits appended, nothing folded yet');
      assert.deepEqual(
        [...(await store.loadGroups(['a', 'b', 'c', 'x']))].map(([k, g]) => [k, g.version, g.openWorkId]),
        [
          ['a', 3, 'w-a'],
          ['b', 2, 'w-b'],
          ['c', 1, null],
        ],
      );
      // A stale version is refused against the logged one, not the (older or missing) row in `groups`.
      await assert.rejects(
        store.commit(commitOf([group('a', 3, false)])),
        (err: unknown) => isVigilError(err, 'VIGIL_STORE_CONFLICT') && /version 3/.test(err.message),
      );
      const seen = await readOnly(file, async (ro) => ({ status: await ro.status(), groups: await ro.loadGroups(['a', 'b', 'c']) }));
      assert.equal(seen.status.groups, 3);
      assert.equal(seen.status.openWork, 2, 'a and b open, from their newest logged rows');
      assert.deepEqual(
        [...seen.groups].map(([k, g]) => [k, g.version]),
        [
          ['a', 3],
          ['b', 2],
          ['c', 1],
        ],
      );
      // The fourth commit folds (in steps after it): the log is emptied, `groups` holds the newest states.
      await store.commit(commitOf([group('c', 2, true), group('d', 1, false)]));
      await store.settled();
      assert.equal(logRows(file), 0, 'folded');
      const db = new Database(file, { readonly: true });
      assert.deepEqual(db.prepare('SELECT group_key, version, open_work FROM groups ORDER BY group_key').all(), [
        { group_key: 'a', version: 3, open_work: 1 },
        { group_key: 'b', version: 2, open_work: 1 },
        { group_key: 'c', version: 2, open_work: 1 },
        { group_key: 'd', version: 1, open_work: 0 },
      ]);
      db.close();
      assert.equal((await store.loadGroups(['c'])).get('c')!.version, 2);
      await store.commit(commitOf([group('a', 4, false)]));
      assert.equal((await store.status()).openWork, 2, "the writer's own status merges the log too");
    } finally {
      await store.close();
    }
    assert.equal(logRows(file), 0, 'a clean close folds the log');
    const again = new SqliteStore(config(file));
    await again.open();
    assert.equal((await again.loadGroups(['a'])).get('a')!.version, 4);
    await again.close();
  });

  test('a fold runs in steps between commits (seeded): loads, version checks, readers and a reopen see the newest state at every step', async () => {
    const seed = testSeed();
    const random = seededRandom(3);
    const file = join(tempDir(), 'state.db');
    // Folds of 2 commits, 3 groups per upsert step and 12 log rows per delete step: commits land in every phase of a fold.
    const store = new SqliteStore(config(file), undefined, Date.now, { foldEvery: 2, foldChunk: 3 });
    await store.open();
    const keys = Array.from({ length: 12 }, (_, i) => keyOf(i));
    const model = new Map<string, GroupState>();
    const sorted = (groups: Iterable<[string, GroupState]>) => [...groups].sort(([a], [b]) => a.localeCompare(b));
    const check = async (step: number) => {
      // Whole states: the writer hands out copies of the states it logged, a reader parses the stored JSON.
      const loaded = await store.loadGroups(keys);
      assert.deepEqual(sorted(loaded), sorted(model), `seed ${seed}, step ${step}: the writer loads the newest states`);
      for (const g of loaded.values()) g.count = -1;
      assert.deepEqual(sorted(await store.loadGroups(keys)), sorted(model), `seed ${seed}, step ${step}: each load is a copy of its own`);
      const seen = await readOnly(file, (ro) => ro.loadGroups(keys));
      assert.deepEqual(sorted(seen), sorted(model), `seed ${seed}, step ${step}: a reader beside the writer too`);
    };
    try {
      for (let step = 0; step < 120; step++) {
        const page = new Map<string, GroupState>();
        for (let n = 1 + Math.floor(random() * 5); n > 0; n--) {
          const k = keys[Math.floor(random() * keys.length)]!;
          if (page.has(k)) continue;
          const g = group(k, (model.get(k)?.version ?? 0) + 1, random() < 0.5);
          page.set(k, { ...g, count: Math.floor(random() * 1000), lastSeen: Date.UTC(2026, 0, 1) + Math.floor(random() * 1e9), workGeneration: g.version % 3 });
        }
        // A stale version (one a commit already took) is refused whatever step the fold is in.
        const [stale] = [...model.values()];
        if (stale && random() < 0.2) {
          await assert.rejects(store.commit(commitOf([group(stale.groupKey, stale.version, false)])), (err: unknown) => isVigilError(err, 'VIGIL_STORE_CONFLICT'));
        }
        await store.commit(commitOf([...page.values()]));
        // The committed objects are the caller's: changing them afterwards changes nothing stored.
        for (const g of page.values()) model.set(g.groupKey, { ...g });
        for (const g of page.values()) g.lastDecision = 'Reject';
        // Sometimes a step or two of the fold run before the next commit, sometimes none.
        for (let t = Math.floor(random() * 3); t > 0; t--) await new Promise((r) => setImmediate(r));
        await check(step);
      }
      await store.settled();
      await check(-1);
    } finally {
      await store.close();
    }
    assert.equal(logRows(file), 0);
    const again = new SqliteStore(config(file));
    await again.open();
    try {
      const loaded = await again.loadGroups(keys);
      assert.deepEqual(
        [...loaded].map(([k, g]) => [k, g.version, g.openWorkId]).sort(),
        [...model].map(([k, g]) => [k, g.version, g.openWorkId]).sort(),
        `seed ${seed}: after a reopen`,
      );
    } finally {
      await again.close();
    }
  });

  test('a version-2 file migrates to version 3 and keeps its groups; a reader reads it unmigrated', async () => {
    const file = join(tempDir(), 'state.db');
    const raw = new Database(file);
    raw.exec(readFileSync(join(ROOT, 'test/fixtures/sqlite-v2.sql'), 'utf8'));
    raw.close();
    const st = await readOnly(file, (ro) => ro.status());
    assert.deepEqual([st.groups, st.openWork], [1, 1]);
    const version = () => {
      const db = new Database(file, { readonly: true });
      try {
        return (db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string }).value;
      } finally {
        db.close();
      }
    };
    assert.equal(version(), '2', 'the reader migrated nothing');
    const store = new SqliteStore(config(file));
    await store.open();
    try {
      assert.equal(version(), String(SCHEMA_VERSION));
      assert.equal((await store.loadGroups(['g_v2'])).get('g_v2')!.openWorkId, 'w_v2');
      await assert.rejects(store.commit(commitOf([group('g_v2', 1, false)])), (err: unknown) => isVigilError(err, 'VIGIL_STORE_CONFLICT'));
      await store.commit(commitOf([group('g_v2', 2, false)]));
      assert.equal((await store.status()).openWork, 0);
      assert.deepEqual(
        (await store.readPage('logs', 'S', 10)).map((e) => e.event.eventId),
        ['v2-b', 'v2-c'],
      );
    } finally {
      await store.close();
    }
  });

  test('SIGKILLed between commits and folds (and during them), a writer loses no acknowledged group state', async (t) => {
    const seed = Number(process.env.VIGIL_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
    t.diagnostic(`kill timings seed ${seed}`);
    let s = seed >>> 0;
    const rand = () => (s = (s * 1_103_515_245 + 12_345) >>> 0) / 2 ** 32;
    const file = join(tempDir(), 'state.db');
    const acked = new Map<string, number>();
    for (let round = 0; round < 4; round++) {
      // Folds every 3 commits in half the rounds, in steps of 5 groups (kills land in and between fold steps), never in the others (the log only grows).
      const args = round % 2 ? [file, '1000000', String(GROUPS)] : [file, '3', String(GROUPS), '5'];
      const out = await killWhileWorking('test/helpers/group-log-writer.ts', args, 150 + rand() * 600);
      for (const m of out.matchAll(/^acked (\S+) (\d+)$/gm)) acked.set(m[1]!, Math.max(acked.get(m[1]!) ?? 0, Number(m[2])));
      const keys = Array.from({ length: GROUPS }, (_, i) => keyOf(i));
      // A reader of the killed writer's file (log unfolded) and the next writer (folds at open) agree.
      const seen = await readOnly(file, async (ro) => ({ groups: await ro.loadGroups(keys), status: await ro.status() }));
      const store = new SqliteStore(config(file));
      await store.open();
      const loaded = await store.loadGroups(keys);
      await store.close();
      assert.equal(logRows(file), 0, 'the open folded what was left');
      for (const k of keys) {
        const g = loaded.get(k);
        const a = acked.get(k) ?? 0;
        // The commit in flight at the kill may have landed without its ack being printed: at most one more.
        assert.ok((g?.version ?? 0) >= a && (g?.version ?? 0) <= a + 1, `round ${round}: ${k} at version ${g?.version} after ack ${a} (seed ${seed})`);
        if (g) {
          assert.equal(g.count, g.version, `${k} is one whole state`);
          assert.equal(seen.groups.get(k)?.version, g.version, `the reader saw ${k} as the writer loads it (seed ${seed})`);
          acked.set(k, g.version);
        }
      }
      assert.equal(seen.status.groups, loaded.size);
      assert.equal(seen.status.openWork, [...loaded.values()].filter((g) => g.openWorkId).length);
    }
    assert.ok(
      [...acked.values()].some((v) => v > 3),
      'the writers committed something',
    );
  });
});

/**
 * The log's last frame and how far checkpoints have copied it, read from the WAL index (`-shm`)
 * without checkpointing: the first header's `mxFrame` (byte 16) and the checkpoint info's
 * `nBackfill` (byte 96), in the machine's byte order.
 */
function walIndex(file: string): { mxFrame: number; nBackfill: number } {
  const shm = readFileSync(`${file}-shm`);
  const at = (offset: number) => (endianness() === 'LE' ? shm.readUInt32LE(offset) : shm.readUInt32BE(offset));
  return { mxFrame: at(16), nBackfill: at(96) };
}

/** A WAL database with one table, whose writer leaves every checkpoint to the worker (as the store's does). */
function checkpointedTable(file: string): Database.Database {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('wal_autocheckpoint = 0');
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)');
  return db;
}

describe('sqlite store: WAL checkpoints in a worker thread', () => {
  test('past an eighth of its bound the log is checkpointed right after each commit, so the next commit starts it over', async () => {
    const file = join(tempDir(), 'ck.db');
    const db = checkpointedTable(file);
    // No interval passes during the test: every pass here is one a commit's notice made.
    const checkpointer = new Checkpointer({ file, busyTimeout: 1000, walLimit: 8 * 1024 * 1024, checkMs: 3_600_000, onFailure: (err) => assert.fail(err) });
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    const commit = (kb: number) => {
      insert.run(Buffer.alloc(kb * 1024, 1));
      checkpointer.wrote();
    };
    // The WAL header's checkpoint sequence number (bytes 12–15): SQLite adds one each time the log starts over.
    const logStarts = () => {
      const header = Buffer.alloc(16);
      const fd = openSync(`${file}-wal`, 'r');
      try {
        readSync(fd, header, 0, 16, 0);
      } finally {
        closeSync(fd);
      }
      return header.readUInt32BE(12);
    };
    try {
      // The worker knows nothing of the log yet: the first notice makes a pass.
      commit(2048);
      assert.deepEqual(await checkpointer.stats(), { passes: 1, afterCommit: 1, restarts: 0, truncates: 0, failures: 0 });
      const before = logStarts();
      // That pass copied every frame, so this commit writes the log from its start; the last
      // pass saw 2 MB (past 1 MB, an eighth of the bound), so the commit wakes the worker and
      // makes another pass.
      const woken = checkpointer.wakes;
      commit(4);
      assert.equal(checkpointer.wakes, woken + 1, 'the commit woke the worker');
      // Its pass runs on that wake alone (no interval, nothing asked of the worker meanwhile).
      const { mxFrame } = walIndex(file);
      await waitFor(() => (walIndex(file).nBackfill === mxFrame ? true : undefined), `the woken worker to copy the log's ${mxFrame} frames`, 5_000);
      assert.deepEqual(await checkpointer.stats(), { passes: 2, afterCommit: 2, restarts: 0, truncates: 0, failures: 0 });
      assert.equal(logStarts(), before + 1, 'the log started over');
      // That pass saw a small log: these commits wait for the interval, and wake nothing meanwhile.
      const wakes = checkpointer.wakes;
      for (let i = 0; i < 20; i++) commit(4);
      assert.equal(checkpointer.wakes, wakes, 'no commit woke the worker');
      assert.deepEqual(await checkpointer.stats(), { passes: 2, afterCommit: 2, restarts: 0, truncates: 0, failures: 0 });
    } finally {
      await checkpointer.close();
      db.close();
    }
  });

  test('below an eighth of its bound the log waits for the interval: commits wake nothing, and the next interval copies them', async () => {
    const file = join(tempDir(), 'ck.db');
    const db = checkpointedTable(file);
    const checkpointer = new Checkpointer({ file, busyTimeout: 1000, walLimit: 8 * 1024 * 1024, checkMs: 50, onFailure: (err) => assert.fail(err) });
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    try {
      insert.run(Buffer.alloc(4 * 1024, 1));
      checkpointer.wrote();
      const first = await checkpointer.stats();
      const wakes = checkpointer.wakes;
      // A burst inside one interval, then nothing: its last frames must not wait for a next write.
      for (let i = 0; i < 10; i++) {
        insert.run(Buffer.alloc(4 * 1024, 2));
        checkpointer.wrote();
      }
      assert.equal(checkpointer.wakes, wakes, 'no commit woke the worker');
      const { mxFrame } = walIndex(file);
      await waitFor(() => (walIndex(file).nBackfill === mxFrame ? true : undefined), `the interval to copy the log's ${mxFrame} frames`, 5_000);
      const after = await checkpointer.stats();
      assert.equal(after.afterCommit, first.afterCommit, 'copied by the interval, not after a commit');
    } finally {
      await checkpointer.close();
      db.close();
    }
  });

  test(
    'a checkpoint that fails for a full disk is told once and tried again at each interval; with space back it succeeds, and the worker stays',
    { skip: CAN_MOUNT ? false : NO_MOUNT_REASON },
    async (t) => {
      const disk = mountTmpfs(4 * 1024 * 1024);
      t.after(() => disk.unmount());
      const file = join(disk.dir, 'ck.db');
      const db = checkpointedTable(file);
      // 1 MB in the log; the database file must grow by as much to take it.
      db.prepare('INSERT INTO t (v) VALUES (?)').run(Buffer.alloc(1024 * 1024, 1));
      const sizeBefore = statSync(file).size;
      disk.fill(0);
      const told: Array<string | undefined> = [];
      const checkpointer = new Checkpointer({
        file,
        busyTimeout: 1000,
        walLimit: 64 * 1024 * 1024,
        checkMs: 20,
        onFailure: (err) => assert.fail(`the worker stopped: ${err.message}`),
        onCheckpointError: (err) => told.push(err?.message),
      });
      try {
        // The first notice makes a pass (the worker knows nothing of the log yet); it cannot grow the file.
        checkpointer.wrote();
        await waitFor(() => (told.length > 0 ? true : undefined), 'the failed checkpoint to be told', 5_000);
        assert.match(told[0]!, /database or disk is full \(SQLITE_FULL\)/);
        // Tried again at each interval, without any write: still full, and not told again.
        await waitFor(async () => ((await checkpointer.stats()).failures >= 3 ? true : undefined), 'the worker to try again', 5_000);
        assert.equal(told.length, 1, `told once per run of failures: ${JSON.stringify(told)}`);
        assert.equal(statSync(file).size, sizeBefore);

        disk.free();
        await waitFor(() => (told.length > 1 ? true : undefined), 'a checkpoint to succeed with space back', 5_000);
        assert.deepEqual(told, [told[0], undefined], 'told of the recovery');
        assert.ok(statSync(file).size >= sizeBefore + 1024 * 1024, `the log's pages are in the database file (${statSync(file).size} bytes)`);
        const { passes, failures } = await checkpointer.stats();
        assert.ok(passes > failures, `${passes} passes, ${failures} failed`);
      } finally {
        await checkpointer.close();
        db.close();
      }
    },
  );

  test(
    'on a disk short of space the log holds at most half the free space: past it, a TRUNCATE starts it over and gives its space back',
    { skip: CAN_MOUNT ? false : NO_MOUNT_REASON },
    async (t) => {
      const disk = mountTmpfs(8 * 1024 * 1024);
      t.after(() => disk.unmount());
      const file = join(disk.dir, 'ck.db');
      const db = checkpointedTable(file);
      const checkpointer = new Checkpointer({ file, busyTimeout: 1000, walLimit: 64 * 1024 * 1024, checkMs: 3_600_000, onFailure: (err) => assert.fail(err) });
      const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
      try {
        // 1 MB of 8: the copy leaves far more than twice the log free.
        insert.run(Buffer.alloc(1024 * 1024, 1));
        checkpointer.wrote();
        assert.deepEqual(await checkpointer.stats(), { passes: 1, afterCommit: 1, restarts: 0, truncates: 0, failures: 0 });
        assert.ok(statSync(`${file}-wal`).size > 1024 * 1024);
        // 3 MB more: once copied, about 3 MB stay free, less than twice the log.
        insert.run(Buffer.alloc(3 * 1024 * 1024, 2));
        checkpointer.wrote();
        const { truncates } = await checkpointer.stats();
        assert.equal(truncates, 1);
        assert.equal(statSync(`${file}-wal`).size, 0, 'the log gave its space back');
        assert.equal((db.prepare('SELECT COUNT(*) AS n FROM t').get() as { n: number }).n, 2);
      } finally {
        await checkpointer.close();
        db.close();
      }
    },
  );

  test("the writer's commits never checkpoint; the worker copies the log into the database file; close removes the log", async () => {
    const file = join(tempDir(), 'state.db');
    const store = new SqliteStore(config(file));
    await store.open();
    try {
      const writer = (store as unknown as { db: Database.Database }).db;
      assert.equal(writer.pragma('wal_autocheckpoint', { simple: true }), 0, 'the writer checkpoints nothing itself');
      const before = statSync(file).size;
      // About 4 MB of log entries: past SQLite's automatic checkpoint (1,000 pages) several times.
      for (let i = 0; i < 40; i++) {
        const events = Array.from({ length: 25 }, (_, j) =>
          event({ id: `c-${i}-${j}`, time: i * 100 + j, partition: 'C', payload: { state: 'error', pad: 'x'.repeat(4000) } }),
        );
        await store.append('logs', events);
      }
      await waitFor(() => (statSync(file).size > before + 3_000_000 ? true : undefined), 'the worker to checkpoint the log into the database file', 10_000);
      assert.equal(await store.pendingCount('logs'), 1000);
    } finally {
      await store.close();
    }
    assert.equal(existsSync(`${file}-wal`), false, 'the last connection to close checkpointed and removed the log');
  });

  test('if the worker stops, the writer checkpoints on its own again', async () => {
    const file = join(tempDir(), 'state.db');
    const store = new SqliteStore(config(file));
    await store.open();
    try {
      const inner = store as unknown as { db: Database.Database; checkpointer: { worker: { terminate(): Promise<number> } } | undefined };
      await inner.checkpointer!.worker.terminate();
      await waitFor(() => (inner.checkpointer === undefined ? true : undefined), 'the store to notice', 5_000);
      assert.equal(inner.db.pragma('wal_autocheckpoint', { simple: true }), 1000);
      await store.append('logs', [event({ id: 'after', time: 1 })]);
    } finally {
      await store.close();
    }
    assert.equal(existsSync(`${file}-wal`), false);
  });
});
