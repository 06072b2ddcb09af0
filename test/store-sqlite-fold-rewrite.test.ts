/**
 * The end of a group-log fold by rewrite (SqliteStore.rewriteLog): instead of deleting the folded
 * rows in chunks, the log is emptied at once and the newest state of each group logged since the
 * fold started is written back. Checked, seeded, against the chunked deletes (`foldRewrite:
 * false`) and a model: with commits landing between the fold's steps, the writer's loads, a reader
 * beside it and the status counts see the newest state of every group at every step, and after a
 * reopen.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import type { GroupState } from '../src/model/work.ts';
import { SqliteStore, type SqliteStoreConfig } from '../src/store/sqlite/store.ts';
import type { PageCommit } from '../src/store/types.ts';
import { seededRandom, testSeed } from './helpers/random.ts';
import { tempDir } from './helpers/vigil-process.ts';

const config = (path: string): SqliteStoreConfig => ({ path, synchronous: 'full', busy_timeout: 1000, dedupe_window: 24 * 3_600_000 });

const commitOf = (groups: GroupState[]): PageCommit => ({
  pipeline: 'logs',
  partition: 'P',
  cursor: null,
  groups,
  turns: [],
  revisions: [],
  outbox: [],
  failures: [],
});

const sorted = (groups: Iterable<[string, GroupState]>) => [...groups].sort(([a], [b]) => a.localeCompare(b));

async function readOnly<T>(file: string, fn: (s: SqliteStore) => Promise<T>): Promise<T> {
  const ro = new SqliteStore(config(file));
  await ro.open({ readOnly: true });
  try {
    return await fn(ro);
  } finally {
    await ro.close();
  }
}

/** Runs the seeded commits on a store; returns how many folds ended by rewrite. */
async function run(rewrite: boolean, salt: number): Promise<{ rewrites: number; groupsTable: unknown[] }> {
  const seed = testSeed();
  const random = seededRandom(salt);
  const file = join(tempDir(), 'state.db');
  // Small folds in small steps: commits land before, between and after the fold's steps.
  const store = new SqliteStore(config(file), undefined, Date.now, { foldRows: 40, foldEvery: 1000, foldChunk: 3, foldRewrite: rewrite });
  let rewrites = 0;
  const inner = store as unknown as { rewriteLog: (db: unknown, upTo: number) => boolean };
  const rewriteLog = inner.rewriteLog.bind(store);
  inner.rewriteLog = (db, upTo) => {
    const done = rewriteLog(db, upTo);
    if (done) rewrites++;
    return done;
  };
  await store.open();
  const keys = Array.from({ length: 30 }, (_, i) => `g${String(i).padStart(2, '0')}`);
  const model = new Map<string, GroupState>();
  const label = `seed ${seed}, ${rewrite ? 'rewrite' : 'chunked deletes'}`;
  try {
    for (let step = 0; step < 150; step++) {
      const page = new Map<string, GroupState>();
      for (let n = 1 + Math.floor(random() * 8); n > 0; n--) {
        const k = keys[Math.floor(random() * keys.length)]!;
        if (page.has(k)) continue;
        const version = (model.get(k)?.version ?? 0) + 1;
        page.set(k, {
          groupKey: k,
          count: Math.floor(random() * 1000),
          firstSeen: 0,
          lastSeen: step,
          lastDecision: 'ChronicRecurrence',
          openWorkId: random() < 0.4 ? `w-${k}-${version}` : null,
          workGeneration: version % 3,
          version,
        });
      }
      await store.commit(commitOf([...page.values()]));
      for (const g of page.values()) model.set(g.groupKey, { ...g });
      // None, one or a few of the fold's steps before the next commit.
      for (let t = Math.floor(random() * 4); t > 0; t--) await new Promise((r) => setImmediate(r));
      assert.deepEqual(sorted(await store.loadGroups(keys)), sorted(model), `${label}, step ${step}: the writer loads the newest states`);
      assert.deepEqual(sorted(await readOnly(file, (ro) => ro.loadGroups(keys))), sorted(model), `${label}, step ${step}: a reader beside the writer too`);
      const st = await store.status();
      assert.deepEqual([st.groups, st.openWork], [model.size, [...model.values()].filter((g) => g.openWorkId).length], `${label}, step ${step}: the status counts`);
    }
    await store.settled();
  } finally {
    await store.close();
  }
  const again = new SqliteStore(config(file));
  await again.open();
  try {
    assert.deepEqual(sorted(await again.loadGroups(keys)), sorted(model), `${label}: after a reopen`);
  } finally {
    await again.close();
  }
  const db = new Database(file, { readonly: true });
  try {
    return { rewrites, groupsTable: db.prepare('SELECT group_key, version, open_work, state FROM groups ORDER BY group_key').raw().all() };
  } finally {
    db.close();
  }
}

describe('sqlite store: a fold ended by rewriting the group log', () => {
  test('gives the same states at every step as deleting the folded rows in chunks (seeded)', async () => {
    const seed = testSeed();
    const fast = await run(true, 21);
    const general = await run(false, 21);
    assert.ok(fast.rewrites >= 3, `seed ${seed}: folds ended by rewrite (${fast.rewrites})`);
    assert.equal(general.rewrites, 0);
    assert.deepEqual(fast.groupsTable, general.groupsTable, `seed ${seed}: the same groups table once closed`);
  });
});
