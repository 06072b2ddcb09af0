/**
 * The SQLite store's tables emptied whole (schema version 4): the ingest log in segments, each
 * emptied once every partition has passed it, with sequence numbers never given out twice; the
 * fallback to ranged trims when a partition far behind holds every segment; the two group logs
 * used in turn; and the migration of a file the version-3 store wrote.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import type { GroupState } from '../src/model/work.ts';
import { LOG_SLOTS, logSlot, SCHEMA_VERSION } from '../src/store/sqlite/schema.ts';
import { SqliteStore, type SqliteStoreConfig } from '../src/store/sqlite/store.ts';
import type { PageCommit } from '../src/store/types.ts';
import { event, group } from './helpers/pages.ts';
import { killWhileWorking, ROOT, tempDir } from './helpers/vigil-process.ts';

const config = (path: string): SqliteStoreConfig => ({ path, synchronous: 'full', busy_timeout: 1000, dedupe_window: 24 * 3_600_000 });

function commitOf(partition: string, cursor: string | null, groups: GroupState[] = []): PageCommit {
  return { pipeline: 'logs', partition, cursor, groups, turns: [], revisions: [], outbox: [], failures: [] };
}

/** Reads the file beside the store (a connection of its own). */
function inFile<T>(file: string, fn: (db: Database.Database) => T): T {
  const db = new Database(file, { readonly: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** Entries per segment table. */
const segmentRows = (file: string): number[] =>
  inFile(file, (db) => Array.from({ length: LOG_SLOTS }, (_, n) => (db.prepare(`SELECT COUNT(*) AS n FROM ${logSlot(n)}`).get() as { n: number }).n));

/** Entries kept at or below their partition's cursor (processed, not yet gone). */
const processedLeft = (file: string): number =>
  inFile(
    file,
    (db) =>
      (
        db
          .prepare(
            'SELECT COUNT(*) AS n FROM ingest_log l JOIN partition_cursors c ON c.pipeline = l.pipeline AND c.partition = l.partition WHERE l.seq <= c.cursor',
          )
          .get() as { n: number }
      ).n,
  );

async function commitPage(store: SqliteStore, partition: string, n: number, groups: GroupState[] = []): Promise<string[]> {
  const page = await store.readPage('logs', partition, n);
  await store.commit(commitOf(partition, page[page.length - 1]!.id, groups));
  return page.map((e) => e.id);
}

describe('sqlite store: ingest-log segments', () => {
  test('a processed segment is emptied whole; sequence numbers are never given out again, also after every segment was emptied and a reopen', async () => {
    const file = join(tempDir(), 'state.db');
    const store = new SqliteStore(config(file), undefined, Date.now, { segmentRows: 4, trimEvery: 1 });
    await store.open();
    const ids: string[] = [];
    try {
      for (let i = 0; i < 12; i++) await store.append('logs', [event({ id: `s-${i}`, time: 1000 + i, partition: 'A' })]);
      assert.deepEqual(
        segmentRows(file).filter((n) => n > 0),
        [4, 4, 4],
        'three segments of four',
      );
      for (let i = 0; i < 2; i++) {
        ids.push(...(await commitPage(store, 'A', 4)));
        await store.settled();
      }
      // The newest segment takes appends and stays; the two before it went whole.
      assert.deepEqual(segmentRows(file), [0, 0, 4, ...Array<number>(LOG_SLOTS - 3).fill(0)]);
      // The next segments reuse the emptied tables: a read goes by sequence, not by table.
      for (let i = 12; i < 18; i++) await store.append('logs', [event({ id: `s-${i}`, time: 1000 + i, partition: 'A' })]);
      assert.deepEqual(segmentRows(file), [4, 2, 4, ...Array<number>(LOG_SLOTS - 3).fill(0)]);
      // The writer reads its segments in order, a reader beside it merges every table.
      const reader = new SqliteStore(config(file));
      await reader.open({ readOnly: true });
      try {
        for (const s of [store, reader]) {
          assert.deepEqual(
            (await s.readPage('logs', 'A', 10)).map((e) => e.event.eventId),
            Array.from({ length: 10 }, (_, i) => `s-${i + 8}`),
          );
        }
      } finally {
        await reader.close();
      }
      for (let i = 0; i < 3; i++) {
        ids.push(...(await commitPage(store, 'A', 4)));
        await store.settled();
      }
      assert.equal(await store.pendingCount('logs'), 0);
      assert.deepEqual(segmentRows(file), [0, 2, ...Array<number>(LOG_SLOTS - 2).fill(0)]);
    } finally {
      await store.close();
    }
    assert.deepEqual(segmentRows(file), Array<number>(LOG_SLOTS).fill(0), 'a clean close leaves no processed entry');
    const again = new SqliteStore(config(file), undefined, Date.now, { segmentRows: 4, trimEvery: 1 });
    await again.open();
    try {
      await again.append('logs', [event({ id: 'after', time: 5000, partition: 'A' })]);
      // A number at or below the cursor (12) would hide the new entry behind it.
      const page = await again.readPage('logs', 'A', 10);
      assert.deepEqual(
        page.map((e) => e.event.eventId),
        ['after'],
      );
      assert.ok(Number(page[0]!.id) > Math.max(...ids.map(Number)), `new entry numbered ${page[0]!.id} after ${ids.join(',')}`);
      assert.equal(await again.pendingCount('logs'), 1);
    } finally {
      await again.close();
    }
  });

  test('a partition far behind holds every segment: processed entries are deleted by ranges instead; reads, counts and status stay right', async () => {
    const file = join(tempDir(), 'state.db');
    const store = new SqliteStore(config(file), undefined, Date.now, { segmentRows: 2, trimEvery: 1 });
    await store.open();
    try {
      // Interleaved: every segment holds entries of the lagging partition L.
      for (let i = 0; i < 40; i++) await store.append('logs', [event({ id: `p-${i}`, time: 1000 + i, partition: i % 2 ? 'L' : 'B' })]);
      assert.equal(segmentRows(file).filter((n) => n > 0).length, LOG_SLOTS, 'every table in use, the newest grown');
      for (let i = 0; i < 5; i++) {
        await commitPage(store, 'B', 4);
        await store.settled();
      }
      assert.equal(processedLeft(file), 0, 'no processed entry of B left');
      assert.equal(await store.pendingCount('logs'), 20);
      assert.deepEqual(await store.backlog('logs'), [{ partition: 'L', pending: 20 }]);
      assert.deepEqual(
        (await store.readPage('logs', 'L', 100)).map((e) => e.event.eventId),
        Array.from({ length: 20 }, (_, i) => `p-${2 * i + 1}`),
      );
      const status = await store.status();
      assert.deepEqual(
        status.pipelines[0]!.partitions.map((p) => [p.partition, p.pending]),
        [
          ['B', 0],
          ['L', 20],
        ],
      );
      // Once L catches up, its segments go and appends move on to emptied tables.
      for (let i = 0; i < 5; i++) {
        await commitPage(store, 'L', 4);
        await store.settled();
      }
      await store.commit(commitOf('L', null));
      await store.append('logs', [event({ id: 'later', time: 9000, partition: 'L' })]);
      assert.deepEqual(
        (await store.readPage('logs', 'L', 10)).map((e) => e.event.eventId),
        ['later'],
      );
    } finally {
      await store.close();
    }
  });
});

describe('sqlite store: segments and SIGKILL', () => {
  test('killed while appending, processing and emptying segments, a writer loses no acknowledged entry and serves no committed one again', async (t) => {
    const seed = Number(process.env.VIGIL_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
    t.diagnostic(`kill timings seed ${seed}`);
    let s = seed >>> 0;
    const rand = () => (s = (s * 1_103_515_245 + 12_345) >>> 0) / 2 ** 32;
    const file = join(tempDir(), 'state.db');
    const appended = new Set<string>();
    const committed = new Set<string>();
    for (let round = 0; round < 4; round++) {
      const out = await killWhileWorking('test/helpers/segment-writer.ts', [file, `r${round}`], 300 + rand() * 900);
      // The page whose commit was in flight at the kill may have landed or not.
      let inFlight: string[] = [];
      for (const line of out.split('\n')) {
        if (line.startsWith('appended ')) appended.add(line.slice(9));
        else if (line.startsWith('page ')) inFlight = line.slice(5).split(' ');
        else if (line === 'committed') {
          for (const id of inFlight) committed.add(id);
          inFlight = [];
        }
      }
      const store = new SqliteStore(config(file));
      await store.open();
      try {
        const pending = new Set<string>();
        for (const p of ['A', 'B']) for (const e of await store.readPage('logs', p, 100_000)) pending.add(e.event.eventId);
        for (const id of committed) assert.ok(!pending.has(id), `round ${round}: ${id} committed, served again (seed ${seed})`);
        for (const id of appended) {
          assert.ok(pending.has(id) || committed.has(id) || inFlight.includes(id), `round ${round}: ${id} acknowledged, then lost (seed ${seed})`);
        }
        for (const id of inFlight) if (!pending.has(id)) committed.add(id);
        assert.equal(await store.pendingCount('logs'), pending.size, `round ${round}: count and reads agree (seed ${seed})`);
      } finally {
        await store.close();
      }
    }
    assert.ok(committed.size > 20 && appended.size > 20, `the writers got going (${appended.size} appended, ${committed.size} committed)`);
  });
});

describe('sqlite store: the two group logs', () => {
  test('a fold empties the log it took while commits append to the other; loads and a reader beside see the newest state throughout', async () => {
    const file = join(tempDir(), 'state.db');
    const store = new SqliteStore(config(file), undefined, Date.now, { foldEvery: 2, foldChunk: 1 });
    await store.open();
    const counts = () => inFile(file, (db) => ['group_log', 'group_log_b'].map((t) => (db.prepare(`SELECT COUNT(*) AS n FROM ${t}`).get() as { n: number }).n));
    const reader = new SqliteStore(config(file));
    await reader.open({ readOnly: true });
    try {
      await store.commit(commitOf('P', null, [group('a', 1, true), group('b', 1, true)]));
      await store.commit(commitOf('P', null, [group('a', 2, false)]));
      // The fold is due: the first log is taken (its steps run between commits), the next commit goes to the second.
      assert.equal(counts()[1], 0);
      await store.commit(commitOf('P', null, [group('a', 3, true), group('c', 1, true)]));
      const [taken, next] = counts();
      assert.equal(next, 2);
      assert.ok(taken === 3 || taken === 0, `the folded log is emptied whole or not at all (${taken} rows)`);
      for (const s of [store, reader]) {
        assert.deepEqual([...(await s.loadGroups(['a', 'b', 'c']))].map(([k, g]) => [k, g.version]).sort(), [
          ['a', 3],
          ['b', 1],
          ['c', 1],
        ]);
        assert.deepEqual([(await s.status()).groups, (await s.status()).openWork], [3, 3]);
      }
      await store.settled();
      assert.deepEqual(counts(), [0, 2], 'the folded log emptied whole, the other kept');
      await store.commit(commitOf('P', null, [group('b', 2, false)]));
      await store.settled();
      assert.deepEqual(counts(), [0, 0], 'the second fold took the second log');
      for (const s of [store, reader]) {
        assert.deepEqual([...(await s.loadGroups(['a', 'b', 'c']))].map(([k, g]) => [k, g.version, g.openWorkId]).sort(), [
          ['a', 3, 'w-a'],
          ['b', 2, null],
          ['c', 1, 'w-c'],
        ]);
      }
    } finally {
      await reader.close();
      await store.close();
    }
  });
});

describe('sqlite store: migration to version 4', () => {
  test('a version-3 file keeps its entries, cursors and logged groups; numbers continue above the old counter; a reader reads it unmigrated', async () => {
    const file = join(tempDir(), 'state.db');
    const raw = new Database(file);
    raw.exec(readFileSync(join(ROOT, 'test/fixtures/sqlite-v3.sql'), 'utf8'));
    raw.close();
    const version = () => inFile(file, (db) => (db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string }).value);
    const ro = new SqliteStore(config(file));
    await ro.open({ readOnly: true });
    try {
      const st = await ro.status();
      assert.deepEqual([st.groups, st.openWork], [2, 1]);
      assert.deepEqual(
        st.pipelines[0]!.partitions.map((p) => [p.partition, p.cursor, p.pending]),
        [
          ['S', '4', 2],
          ['T', '8', 0],
        ],
      );
      assert.equal((await ro.loadGroups(['g_v3'])).get('g_v3')!.version, 2);
    } finally {
      await ro.close();
    }
    assert.equal(version(), '3', 'the reader migrated nothing');
    const store = new SqliteStore(config(file));
    await store.open();
    try {
      assert.equal(version(), String(SCHEMA_VERSION));
      assert.deepEqual(
        (await store.readPage('logs', 'S', 10)).map((e) => [e.id, e.event.eventId]),
        [
          ['5', 'v3-e'],
          ['6', 'v3-f'],
        ],
      );
      assert.equal(await store.pendingCount('logs'), 2);
      const groups = await store.loadGroups(['g_v3', 'g_new']);
      assert.deepEqual([...groups].map(([k, g]) => [k, g.version, g.openWorkId]).sort(), [
        ['g_new', 1, 'w-g_new'],
        ['g_v3', 2, null],
      ]);
      // T's cursor is 8, above every entry the file still held: a new entry must be numbered after it.
      await store.append('logs', [event({ id: 'v4-t', time: 9000, partition: 'T' })]);
      const t = await store.readPage('logs', 'T', 10);
      assert.deepEqual(
        t.map((e) => [e.id, e.event.eventId]),
        [['9', 'v4-t']],
      );
      await store.commit(commitOf('T', t[0]!.id, [group('g_new', 2, false)]));
      await commitPage(store, 'S', 2);
      assert.deepEqual(await store.backlog('logs'), []);
      assert.equal((await store.status()).openWork, 0);
    } finally {
      await store.close();
    }
    // Opening again is a no-op migration.
    const again = new SqliteStore(config(file));
    await again.open();
    assert.equal(version(), String(SCHEMA_VERSION));
    assert.equal((await again.loadGroups(['g_new'])).get('g_new')!.version, 2);
    await again.close();
  });
});
