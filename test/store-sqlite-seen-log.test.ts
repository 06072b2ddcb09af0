/**
 * The SQLite store's dedupe log (schema version 5, src/store/sqlite/seen.ts): event ids go to a
 * log in sequence and are folded into `seen_events` later, in key order, so the dedupe must answer
 * exactly as before at every moment: before, during and after folds, across group commits with a
 * refused append among them, page commits that append, ids that expire, a clean close and an open
 * that finds a previous run's log rows. The reference is a model of the dedupe window (an id is a
 * duplicate while the last time it was accepted plus the window is ahead).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import type { OutboxItem } from '../src/model/work.ts';
import { SqliteStore, type SqliteStoreConfig } from '../src/store/sqlite/store.ts';
import { SEEN_LOGS } from '../src/store/sqlite/schema.ts';
import { SeenLog } from '../src/store/sqlite/seen.ts';
import { event } from './helpers/pages.ts';
import { seededRandom, testSeed } from './helpers/random.ts';
import { tempDir } from './helpers/vigil-process.ts';

const WINDOW = 1000;
const config = (path: string): SqliteStoreConfig => ({ path, synchronous: 'full', busy_timeout: 1000, dedupe_window: WINDOW });

function counts(file: string): { seen: number; logs: number[] } {
  const db = new Database(file, { readonly: true });
  try {
    return {
      seen: (db.prepare('SELECT COUNT(*) AS n FROM seen_events').get() as { n: number }).n,
      logs: SEEN_LOGS.map((t) => (db.prepare(`SELECT COUNT(*) AS n FROM ${t}`).get() as { n: number }).n),
    };
  } finally {
    db.close();
  }
}

describe('sqlite store: the dedupe log', () => {
  test("a fold gives its log's live ids once each, in key order, in steps that can be taken again", () => {
    const random = seededRandom(58);
    const seen = new SeenLog();
    const hex = () => Array.from({ length: 16 }, () => Math.floor(random() * 16).toString(16)).join('');
    const expected: string[] = [];
    const other = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      const pipeline = random() < 0.5 ? 'logs' : 'traces';
      const id = random() < 0.1 ? `x${i}` : hex();
      const log = random() < 0.8 ? 0 : 1;
      const expires = random() < 0.05 ? 50 : 200;
      seen.note(pipeline, id, expires, log);
      if (log === 0 && expires > 100) expected.push(`${pipeline} ${id}`);
      if (log === 1) other.add(`${pipeline} ${id}`);
    }
    seen.committed();
    const fold = seen.foldOrder(0, 100);
    const got: string[] = [];
    while (!fold.done) {
      const n = 1 + Math.floor(random() * 300);
      let refused: string[] = [];
      // A step whose upsert fails gives the same ids again.
      if (random() < 0.3) {
        assert.throws(() =>
          fold.step(n, (ids) => {
            refused = ids.map((x) => `${x.pipeline} ${x.eventId}`);
            throw new Error('refused');
          }),
        );
      }
      fold.step(n, (ids) => {
        const names = ids.map((x) => `${x.pipeline} ${x.eventId}`);
        if (refused.length) assert.deepEqual(names, refused, `seed ${testSeed()}`);
        got.push(...names);
      });
    }
    assert.deepEqual(got, [...new Set(expected)].sort(), `seed ${testSeed()}`);
    assert.equal(seen.size, other.size, 'the fold forgot its ids (upserted or expired), and only those');
  });

  test('ids stay in the log until it holds enough, then a fold moves them to seen_events in steps; duplicates are found in both', async () => {
    const file = join(tempDir(), 'state.db');
    const store = new SqliteStore(config(file), undefined, () => 100, { seenFoldRows: 10, foldChunk: 3 });
    await store.open();
    try {
      const ids = (from: number, n: number) => Array.from({ length: n }, (_, i) => event({ id: `id-${from + i}`, time: 1 }));
      assert.deepEqual(await store.append('logs', ids(0, 6)), { appended: 6, duplicates: 0 });
      await store.settled();
      assert.deepEqual(counts(file), { seen: 0, logs: [6, 0] }, 'below the threshold: logged, not folded');
      assert.deepEqual(await store.append('logs', ids(4, 6)), { appended: 4, duplicates: 2 }, 'duplicates found in the log');
      // 10 ids logged: the fold starts; the next append goes to the other log while it runs.
      const next = store.append('logs', ids(8, 4));
      assert.deepEqual(await next, { appended: 2, duplicates: 2 });
      await store.settled();
      assert.deepEqual(counts(file), { seen: 10, logs: [0, 2] }, 'folded log emptied, the other keeps its ids');
      assert.deepEqual(await store.append('logs', ids(0, 12)), { appended: 0, duplicates: 12 }, 'duplicates found in seen_events and the log');
    } finally {
      await store.close();
    }
    assert.deepEqual(counts(file), { seen: 12, logs: [0, 0] }, 'a clean close folds both logs');
  });

  test("an open folds a previous run's log rows (a crash between folds); the newest expiry wins", async () => {
    const file = join(tempDir(), 'state.db');
    let now = 100;
    const store = new SqliteStore(config(file), undefined, () => now);
    await store.open();
    await store.close();
    // What a killed writer leaves: rows in both logs, one id in both and in seen_events, with different expiries.
    const db = new Database(file);
    db.prepare('INSERT INTO seen_events (pipeline, event_id, expires) VALUES (?, ?, ?)').run('logs', 'x', 500);
    db.prepare(`INSERT INTO ${SEEN_LOGS[0]} (pipeline, event_id, expires) VALUES (?, ?, ?), (?, ?, ?)`).run('logs', 'x', 1500, 'logs', 'y', 600);
    db.prepare(`INSERT INTO ${SEEN_LOGS[1]} (pipeline, event_id, expires) VALUES (?, ?, ?)`).run('logs', 'x', 1200);
    db.close();
    const reopened = new SqliteStore(config(file), undefined, () => now);
    await reopened.open();
    try {
      assert.deepEqual(counts(file), { seen: 2, logs: [0, 0] });
      now = 1000; // y expired (600), x not (1500)
      assert.deepEqual(await reopened.append('logs', [event({ id: 'x', time: 1 }), event({ id: 'y', time: 1 })]), { appended: 1, duplicates: 1 });
    } finally {
      await reopened.close();
    }
  });

  test('the writer forgets the ids of an append or page commit that rolled back', async () => {
    const file = join(tempDir(), 'state.db');
    const store = new SqliteStore(config(file), undefined, () => 100, { seenFoldRows: 1000 });
    await store.open();
    try {
      const broken = event({ id: 'broken', time: 1 });
      (broken.payload as Record<string, unknown>).size = 10n; // JSON cannot hold a BigInt: this append throws after logging 'z'
      const outcomes = await Promise.allSettled([store.append('logs', [event({ id: 'a', time: 1 })]), store.append('logs', [event({ id: 'z', time: 1 }), broken])]);
      assert.equal(outcomes[0]!.status, 'fulfilled');
      assert.equal(outcomes[1]!.status, 'rejected');
      // A page commit whose append logs 'w' and then fails (an outbox item JSON cannot hold).
      await assert.rejects(
        store.commit({
          pipeline: 'logs',
          partition: 'session-1',
          cursor: null,
          groups: [],
          outbox: [{ size: 10n } as unknown as OutboxItem],
          failures: [],
          turns: [],
          revisions: [],
          appends: [{ pipeline: 'logs', events: [event({ id: 'w', time: 1 })] }],
        }),
      );
      assert.deepEqual(await store.append('logs', [event({ id: 'z', time: 1 }), event({ id: 'w', time: 1 }), event({ id: 'a', time: 1 })]), {
        appended: 2,
        duplicates: 1,
      });
    } finally {
      await store.close();
    }
  });

  test('randomized: the dedupe answers as the model of its window through folds, group commits, refusals, expiries and reopens', async () => {
    const random = seededRandom(57);
    const file = join(tempDir(), 'state.db');
    let now = 1;
    const tuning = { seenFoldRows: 7, foldChunk: 2 };
    let store = new SqliteStore(config(file), undefined, () => now, tuning);
    await store.open();
    const accepted = new Map<string, number>(); // key -> expiry of its last acceptance
    let nextId = 0;
    const pipelines = ['logs', 'traces'];
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const known: Array<[string, string]> = [];
    const draw = (): [string, string] => (known.length && random() < 0.4 ? pick(known) : [pick(pipelines), `e-${++nextId}`]);
    try {
      for (let step = 0; step < 300; step++) {
        const where = `seed ${testSeed()}, step ${step}`;
        const r = random();
        if (r < 0.05) {
          await store.close();
          store = new SqliteStore(config(file), undefined, () => now, tuning);
          await store.open();
          continue;
        }
        if (r < 0.15) {
          now += Math.floor(random() * WINDOW * 0.6);
          continue;
        }
        if (r < 0.3) {
          await store.settled();
          continue;
        }
        // A group of appends, each a batch of one pipeline; sometimes one of them fails.
        const batches = Array.from({ length: 1 + Math.floor(random() * 3) }, () => {
          const pipeline = pick(pipelines);
          const ids = Array.from({ length: 1 + Math.floor(random() * 5) }, () => draw()).filter(([p]) => p === pipeline);
          const events = ids.map(([, id]) => event({ id, time: 1 }));
          const fails = random() < 0.15;
          if (fails) {
            const broken = event({ id: `broken-${step}`, time: 1 });
            (broken.payload as Record<string, unknown>).size = 10n;
            events.push(broken);
          }
          return { pipeline, ids: ids.map(([, id]) => id), events, fails };
        });
        const outcomes = await Promise.allSettled(batches.map((b) => store.append(b.pipeline, b.events)));
        batches.forEach((b, i) => {
          const outcome = outcomes[i]!;
          if (b.fails) {
            assert.equal(outcome.status, 'rejected', where);
            return;
          }
          let appended = 0;
          let duplicates = 0;
          for (const id of b.ids) {
            const key = `${b.pipeline}/${id}`;
            if ((accepted.get(key) ?? 0) > now) duplicates++;
            else {
              appended++;
              accepted.set(key, now + WINDOW);
              known.push([b.pipeline, id]);
            }
          }
          assert.deepEqual(outcome, { status: 'fulfilled', value: { appended, duplicates } }, where);
        });
      }
    } finally {
      await store.close();
    }
    assert.deepEqual(counts(file).logs, [0, 0]);
  });
});
