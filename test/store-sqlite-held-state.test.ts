/**
 * The SQLite store's namespaces kept in memory (StateWrite `cached`; src/store/keyed-state.ts and
 * the `state_log` rows): what a rolled-back transaction leaves in memory, and a namespace taken
 * from `state_entries` into memory. The random comparison with the memory store is
 * store-sqlite-cached-model.test.ts; a SIGKILL is crash-correlation.test.ts.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import type { StateWrite } from '../src/store/state.ts';
import { SqliteStore, type SqliteStoreConfig } from '../src/store/sqlite/store.ts';
import { event } from './helpers/pages.ts';
import { commitOf } from './helpers/store-conformance.ts';
import { tempDir } from './helpers/vigil-process.ts';

const config = (path: string): SqliteStoreConfig => ({ path, synchronous: 'full', busy_timeout: 1000, dedupe_window: 24 * 3_600_000 });
const NS = 'trace-session';
const cached = (key: string, value: unknown, extra: Partial<StateWrite> = {}): StateWrite => ({
  namespace: NS,
  key,
  value,
  ttlMs: 60_000,
  maxEntries: 3,
  cached: true,
  ...extra,
});

/** What a store holds of the namespace: listState (newest written first) and its status. */
async function held(store: SqliteStore) {
  const list = (await store.listState(NS, 10)).map((e) => `${e.key}=${JSON.stringify(e.value)} v${e.version}`);
  const status = (await store.status()).state.find((s) => s.namespace === NS);
  return { list, status };
}

async function reopened(file: string, now: () => number): Promise<SqliteStore> {
  const store = new SqliteStore(config(file), undefined, now);
  await store.open();
  return store;
}

describe('sqlite store: namespaces kept in memory', () => {
  test('a group of appends rolled back whole (one failed part-way) leaves memory as before it, then runs again isolated', async () => {
    const file = join(tempDir(), 'state.db');
    const now = () => 1_000_000;
    let store = await reopened(file, now);
    try {
      await store.append('logs', [], { state: [cached('k1', 1), cached('k2', 2), cached('k3', 3)] });
      const broken = event({ id: 'bad', time: 1 });
      (broken.payload as Record<string, unknown>).size = 10n; // JSON cannot hold a BigInt: that append throws at this record
      // The first append writes k1 again (to the newest end) and k4 (evicting k2) before the
      // second fails: the group is rolled back and run again, so the first one's writes count once.
      const [first, second] = await Promise.allSettled([
        store.append('logs', [], { state: [cached('k1', 'one'), cached('k4', 4)] }),
        store.append('logs', [broken], { state: [cached('k3', 'never')] }),
      ]);
      assert.equal(first.status, 'fulfilled');
      assert.equal(second.status, 'rejected');
      const expected = { list: ['k4=4 v1', 'k1="one" v2', 'k3=3 v1'], status: { namespace: NS, entries: 3, evicted: 1 } };
      assert.deepEqual(await held(store), expected);
      await store.close();
      store = await reopened(file, now);
      assert.deepEqual(await held(store), expected);
    } finally {
      await store.close();
    }
  });

  test('a page commit that fails after its state writes leaves memory as before it, evictions and order included', async () => {
    const file = join(tempDir(), 'state.db');
    const now = () => 1_000_000;
    let store = await reopened(file, now);
    try {
      await store.append('logs', [], { state: [cached('k1', 1), cached('k2', 2), cached('k3', 3)] });
      const before = await held(store);
      // The outbox item is serialized after the state writes: the transaction throws there.
      const bad = commitOf('logs', 'p', null, {
        state: [cached('k1', 'again'), cached('k5', 5), cached('k6', 6), { namespace: NS, key: 'k3', value: null, maxEntries: 3 }],
        outbox: [{ big: 1n } as never],
      });
      await assert.rejects(store.commit(bad));
      assert.deepEqual(await held(store), before);
      // And it goes on from there: the same writes without the bad item.
      await store.commit(commitOf('logs', 'p', null, { state: bad.state }));
      const after = { list: ['k6=6 v1', 'k5=5 v1', 'k1="again" v2'], status: { namespace: NS, entries: 3, evicted: 1 } };
      assert.deepEqual(await held(store), after);
      await store.close();
      store = await reopened(file, now);
      assert.deepEqual(await held(store), after);
    } finally {
      await store.close();
    }
  });

  test("a namespace's entries in state_entries move to memory at its first cached write, in write order, with versions and expiries", async () => {
    const file = join(tempDir(), 'state.db');
    let clock = 1_000_000;
    const now = () => clock;
    let store = await reopened(file, now);
    try {
      // Written as an earlier vigil wrote them: plain writes, rows of state_entries.
      await store.append('logs', [], { state: [{ namespace: NS, key: 'old1', value: 'a', ttlMs: 5_000, maxEntries: 3 }] });
      clock += 10;
      await store.append('logs', [], { state: [{ namespace: NS, key: 'old2', value: 'b', version: 1, maxEntries: 3 }] });
      await store.append('logs', [], { state: [{ namespace: NS, key: 'old2', value: 'b2', version: 2, maxEntries: 3 }] });
      clock += 10;
      await store.append('logs', [], { state: [cached('new', 'c', { version: 1 })] });
      const expected = { list: ['new="c" v1', 'old2="b2" v2', 'old1="a" v1'], status: { namespace: NS, entries: 3, evicted: 0 } };
      assert.deepEqual(await held(store), expected);
      assert.equal((await store.loadState(NS, ['old1'])).get('old1')?.expiresAt, 1_000_000 + 5_000);
      await store.close();
      const db = new Database(file, { readonly: true });
      try {
        assert.deepEqual(db.prepare('SELECT COUNT(*) AS n FROM state_entries WHERE namespace = ?').get(NS), { n: 0 });
        assert.deepEqual(
          db.prepare('SELECT key FROM state_log WHERE namespace = ? ORDER BY seq').all(NS),
          ['old1', 'old2', 'new'].map((key) => ({ key })),
        );
      } finally {
        db.close();
      }
      store = await reopened(file, now);
      assert.deepEqual(await held(store), expected);
      // Past old1's expiry: gone, as from the table.
      clock += 5_000;
      assert.deepEqual((await held(store)).list, ['new="c" v1', 'old2="b2" v2']);
    } finally {
      await store.close();
    }
  });

  test('dedupe ids an earlier vigil kept by id alone (seen_events) still drop redeliveries until they expire, then the table is no longer read', async () => {
    const file = join(tempDir(), 'state.db');
    let clock = 1_000_000;
    let store = await reopened(file, () => clock);
    await store.close();
    const db = new Database(file);
    db.prepare('INSERT INTO seen_events (pipeline, event_id, expires) VALUES (?, ?, ?)').run('logs', 'old', clock + 1000);
    db.close();
    store = await reopened(file, () => clock);
    try {
      assert.deepEqual(await store.append('logs', [event({ id: 'old', time: 5 })]), { appended: 0, duplicates: 1 });
      clock += 2000; // past its expiry, and past the purge interval
      assert.deepEqual(await store.append('logs', [event({ id: 'old', time: 5 })]), { appended: 1, duplicates: 0 });
      assert.deepEqual(await store.append('logs', [event({ id: 'old', time: 5 })]), { appended: 0, duplicates: 1 });
    } finally {
      await store.close();
    }
    const check = new Database(file, { readonly: true });
    try {
      assert.deepEqual(check.prepare('SELECT COUNT(*) AS n FROM seen_events').get(), { n: 0 });
      assert.deepEqual(check.prepare('SELECT time, event_id FROM seen_ids').all(), [{ time: 5, event_id: 'old' }]);
    } finally {
      check.close();
    }
  });
});
