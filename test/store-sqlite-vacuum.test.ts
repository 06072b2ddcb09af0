/**
 * The SQLite store gives free pages back to the file system (incremental auto-vacuum) in steps,
 * each a transaction in a turn of the event loop of its own, as its trims and folds run: all at
 * once, a vacuum held the loop 86–134 ms once a minute (README, Performance, round 32). A real
 * SQLite file, its free pages made by a table filled and dropped beside the store, and the free
 * list read after every turn of the loop by a connection of its own.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { SqliteStore, type SqliteStoreConfig } from '../src/store/sqlite/store.ts';
import { event } from './helpers/pages.ts';
import { tempDir } from './helpers/vigil-process.ts';

const config = (path: string): SqliteStoreConfig => ({ path, synchronous: 'full', busy_timeout: 1000, dedupe_window: 24 * 3_600_000 });
/** Bytes of free pages a step gives back at most: 64 pages of 4 KiB, 32 of the 8 KiB a new file has. */
const STEP_BYTES = 256 * 1024;
const T0 = Date.UTC(2026, 0, 1);

test('a vacuum gives the free pages back in steps of at most 256 KiB of pages, a turn of the loop each', { timeout: 60_000 }, async (t) => {
  const file = join(tempDir(), 'state.db');
  let now = T0;
  const created = new SqliteStore(config(file), undefined, () => now);
  await created.open();
  await created.close();
  // About 1,500 free pages: a table of a row a page, filled and dropped while the store is closed.
  const raw = new Database(file);
  const pageSize = raw.pragma('page_size', { simple: true }) as number;
  const STEP = STEP_BYTES / pageSize;
  raw.exec('CREATE TABLE junk (b BLOB)');
  const insert = raw.prepare(`INSERT INTO junk (b) VALUES (zeroblob(${pageSize - 100}))`);
  raw.transaction(() => {
    for (let i = 0; i < 1500; i++) insert.run();
  })();
  raw.exec('DROP TABLE junk');
  raw.pragma('wal_checkpoint(TRUNCATE)');
  raw.close();

  const store = new SqliteStore(config(file), undefined, () => now);
  await store.open();
  // A failed check must not leave the store's threads holding the test's process.
  t.after(() => store.close());
  const reader = new Database(file, { readonly: true });
  t.after(() => reader.close());
  const freePages = () => reader.pragma('freelist_count', { simple: true }) as number;
  const before = freePages();
  assert.ok(before >= 1400, `free pages made: ${before}`);

  // The free list after every turn of the loop, from before the append that starts the vacuum.
  const seen: number[] = [];
  let sampling = true;
  const sample = () => {
    seen.push(freePages());
    if (sampling) setImmediate(sample);
  };
  setImmediate(sample);
  now += 61_000; // a vacuum is due (the first purge after a minute)
  assert.deepEqual(await store.append('logs', [event({ id: 'e1', time: now })]), { appended: 1, duplicates: 0 });
  await store.settled();
  sampling = false;
  await new Promise((resolve) => setImmediate(resolve));
  seen.push(freePages());

  assert.equal(seen.at(-1), 0, 'every free page given back');
  const steps = seen.slice(1).map((n, i) => seen[i]! - n);
  assert.ok(
    steps.every((d) => d <= STEP),
    `at most ${STEP} pages between two turns; the largest step gave back ${Math.max(...steps)}`,
  );
  assert.ok(steps.filter((d) => d > 0).length >= Math.floor(before / STEP), `in ${Math.ceil(before / STEP)} steps or so: ${steps.filter((d) => d > 0).length}`);
  reader.close();

  // The store is whole: the event is there after a reopen.
  await store.close();
  const again = new SqliteStore(config(file), undefined, () => now);
  await again.open();
  assert.deepEqual(
    (await again.readPage('logs', 'session-1', 10)).map((e) => e.event.eventId),
    ['e1'],
  );
  await again.close();
});
