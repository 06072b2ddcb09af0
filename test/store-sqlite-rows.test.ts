/**
 * Multi-row INSERTs (src/store/sqlite/rows.ts): a page commit writes its group states, outbox
 * entries and recent failures, and a fold its upserts, in statements of several rows each. Checked
 * against a statement per row (`rowChunks: [1]`, the general path), seeded: the same tables, row
 * for row, after every commit and every fold step.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import type { GroupState, OutboxItem } from '../src/model/work.ts';
import { RowInserter } from '../src/store/sqlite/rows.ts';
import { SqliteStore, type SqliteStoreConfig } from '../src/store/sqlite/store.ts';
import type { PageCommit, RecentFailure } from '../src/store/types.ts';
import { seededRandom, testSeed } from './helpers/random.ts';
import { tempDir } from './helpers/vigil-process.ts';

const config = (path: string): SqliteStoreConfig => ({ path, synchronous: 'full', busy_timeout: 1000, dedupe_window: 24 * 3_600_000 });

/** Every row the commits and folds write, in key order, as stored. */
function tables(file: string): Record<string, unknown[]> {
  const db = new Database(file, { readonly: true });
  try {
    const all = (sql: string) => db.prepare(sql).raw().all();
    return {
      group_log: all('SELECT seq, group_key, version, open_work, state FROM group_log ORDER BY seq'),
      groups: all('SELECT group_key, version, open_work, state FROM groups ORDER BY group_key'),
      outbox: all('SELECT pipeline, seq, item FROM outbox ORDER BY pipeline, seq'),
      outbox_heads: all('SELECT pipeline, last_seq FROM outbox_heads ORDER BY pipeline'),
      recent_failures: all('SELECT id, time, failure FROM recent_failures ORDER BY id'),
    };
  } finally {
    db.close();
  }
}

describe('sqlite store: multi-row inserts', () => {
  test('RowInserter inserts any number of rows, in order, as a statement per row does (seeded)', () => {
    const seed = testSeed();
    const random = seededRandom(11);
    const db = new Database(':memory:');
    try {
      db.exec('CREATE TABLE a (k INTEGER PRIMARY KEY, v TEXT, w INTEGER); CREATE TABLE b (k INTEGER PRIMARY KEY, v TEXT, w INTEGER)');
      const chunked = new RowInserter(db, 'INSERT INTO a (k, v, w) VALUES', 3);
      const single = db.prepare('INSERT INTO b (k, v, w) VALUES (?, ?, ?)');
      let k = 0;
      for (let round = 0; round < 60; round++) {
        const n = Math.floor(random() * (round < 10 ? 4 : 300));
        const values: unknown[] = [];
        for (let i = 0; i < n; i++) values.push(++k, `v${Math.floor(random() * 1e6)}`, random() < 0.2 ? null : Math.floor(random() * 100));
        chunked.run(values);
        for (let i = 0; i < n; i++) single.run(values.slice(i * 3, i * 3 + 3));
        assert.deepEqual(
          db.prepare('SELECT * FROM a ORDER BY k').raw().all(),
          db.prepare('SELECT * FROM b ORDER BY k').raw().all(),
          `seed ${seed}, round ${round} (${n} rows)`,
        );
      }
      assert.throws(() => chunked.run([1, 2]), /not rows of 3/);
    } finally {
      db.close();
    }
  });

  test('page commits and fold steps write the same rows in multi-row statements as in a statement per row (seeded)', async () => {
    const seed = testSeed();
    const random = seededRandom(12);
    const files = [join(tempDir(), 'state.db'), join(tempDir(), 'state.db')];
    // Small folds in small steps: upserts and deletes of the log run between the commits.
    const tuning = { foldRows: 300, foldEvery: 5, foldChunk: 1 + Math.floor(random() * 100) };
    const [batched, perRow] = [
      new SqliteStore(config(files[0]!), undefined, () => 1_000_000, tuning),
      new SqliteStore(config(files[1]!), undefined, () => 1_000_000, { ...tuning, rowChunks: [1] }),
    ];
    await batched.open();
    await perRow.open();
    const versions = new Map<string, number>();
    const keys = Array.from({ length: 400 }, (_, i) => `g_${i.toString(16).padStart(4, '0')}`);
    try {
      for (let step = 0; step < 40; step++) {
        const groups: GroupState[] = [];
        const taken = new Set<string>();
        for (let n = Math.floor(random() * (step % 7 === 0 ? 3 : 300)); n > 0; n--) {
          const key = keys[Math.floor(random() * keys.length)]!;
          if (taken.has(key)) continue;
          taken.add(key);
          const version = (versions.get(key) ?? 0) + 1;
          versions.set(key, version);
          groups.push({
            groupKey: key,
            count: Math.floor(random() * 1000),
            firstSeen: step,
            lastSeen: step * 1000 + Math.floor(random() * 1000),
            lastDecision: random() < 0.5 ? 'ChronicRecurrence' : 'BurstThresholdReached',
            openWorkId: random() < 0.3 ? `w_${key}_${version}` : null,
            workGeneration: version % 3,
            version,
          });
        }
        const outbox: OutboxItem[] = Array.from({ length: Math.floor(random() * 80) }, (_, i) => ({
          kind: 'forward',
          id: `f_${step}_${i}`,
          signal: 'logs',
          record: { body: 'x'.repeat(Math.floor(random() * 500)), n: random() },
        })) as unknown as OutboxItem[];
        const failures: RecentFailure[] = Array.from({ length: Math.floor(random() * 60) }, (_, i) => ({
          time: step * 100 + Math.floor(random() * 200),
          partition: `P${i % 3}`,
          groupKey: keys[i]!,
          occurrenceId: `o_${step}_${i}`,
          signature: `E${i}: failed`,
          decision: 'ChronicRecurrence',
        }));
        const commit: PageCommit = {
          pipeline: random() < 0.8 ? 'logs' : 'traces',
          partition: 'P',
          cursor: null,
          groups,
          turns: [],
          revisions: [],
          outbox,
          failures,
        };
        await batched.commit(commit);
        await perRow.commit(commit);
        // Each store runs its fold steps in turns of its own (and its syncs take their time): compared once both are done.
        await Promise.all([batched.settled(), perRow.settled()]);
        assert.deepEqual(tables(files[0]!), tables(files[1]!), `seed ${seed}, step ${step}: the same rows`);
      }
      await Promise.all([batched.settled(), perRow.settled()]);
      assert.deepEqual(tables(files[0]!), tables(files[1]!), `seed ${seed}: the same rows after the folds`);
      assert.deepEqual(await batched.loadGroups(keys), await perRow.loadGroups(keys), `seed ${seed}: the same groups loaded`);
      assert.deepEqual(await batched.readOutbox('logs', 'x', 10_000), await perRow.readOutbox('logs', 'x', 10_000), `seed ${seed}: the same outbox`);
      assert.deepEqual((await batched.status()).recentFailures, (await perRow.status()).recentFailures, `seed ${seed}: the same recent failures`);
    } finally {
      await batched.close();
      await perRow.close();
    }
    assert.deepEqual(tables(files[0]!), tables(files[1]!), `seed ${seed}: the same rows after close (log folded)`);
  });
});
