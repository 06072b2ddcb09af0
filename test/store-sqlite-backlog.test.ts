/**
 * The SQLite writer's backlog (src/store/sqlite/backlog.ts): kept by its own commits instead of
 * counted in the file at every question, it must always answer what counting in the file answers.
 * A seeded random run of appends (duplicates, group commits with a refused append among them),
 * page commits (some refused as stale, some appending to other partitions and pipelines), segment
 * turnover and reopens; after each step the writer's answers are compared with a read-only store
 * beside it, which counts in the file, and each partition's page read from both.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { isVigilError } from '../src/errors.ts';
import { SqliteStore, type SqliteStoreConfig } from '../src/store/sqlite/store.ts';
import type { PageCommit } from '../src/store/types.ts';
import { event } from './helpers/pages.ts';
import { seededRandom, testSeed } from './helpers/random.ts';
import { tempDir } from './helpers/vigil-process.ts';

const config = (path: string): SqliteStoreConfig => ({ path, synchronous: 'full', busy_timeout: 1000, dedupe_window: 24 * 3_600_000 });
const PIPELINES = ['logs', 'traces'];
const PARTITIONS = ['A', 'B', 'C', 'D'];

test('the writer backlog answers as counting in the file does, through appends, commits, refusals, segment turnover and reopens', async () => {
  const random = seededRandom(41);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const file = join(tempDir(), 'state.db');
  const tuning = { segmentRows: 16, trimEvery: 2 };
  let store = new SqliteStore(config(file), undefined, Date.now, tuning);
  await store.open();
  const reader = new SqliteStore(config(file));
  let nextId = 0;
  const ids: string[] = [];
  const eventOf = (partition: string) => {
    // A fifth are ids seen before (dropped by the dedupe), some of them twice in one batch.
    const id = ids.length && random() < 0.2 ? pick(ids) : `e-${++nextId}`;
    ids.push(id);
    return event({ id, time: 1000 + nextId, partition });
  };
  let compared = 0;
  const compare = async (step: number, what: string) => {
    await reader.open({ readOnly: true });
    try {
      for (const p of PIPELINES) {
        const where = `seed ${testSeed()}, step ${step} (${what}), pipeline ${p}`;
        assert.deepEqual(await store.backlog(p), await reader.backlog(p), where);
        assert.equal(await store.pendingCount(p), await reader.pendingCount(p), where);
        // The writer answers a read of a partition it counts as empty without a statement: it must
        // find what the file holds (the correlation log's partition and a never-used one too).
        for (const partition of [...PARTITIONS, 'waiting', 'unused']) {
          const ids = async (s: SqliteStore) => (await s.readPage(p, partition, 1000)).map((e) => e.id);
          assert.deepEqual(await ids(store), await ids(reader), `${where}, partition ${partition}`);
        }
      }
    } finally {
      await reader.close();
    }
    compared++;
  };
  try {
    for (let step = 0; step < 160; step++) {
      const r = random();
      let what: string;
      if (r < 0.35) {
        what = 'group commit of appends';
        const appends = Array.from({ length: 1 + Math.floor(random() * 3) }, () => {
          const events = Array.from({ length: 1 + Math.floor(random() * 6) }, () => eventOf(pick(PARTITIONS)));
          // One in four carries a state write of a wrong version: refused alone, its events not appended.
          const refused = random() < 0.25;
          const state = refused ? [{ namespace: 'receiver', key: 'offset', value: 1, version: 99 }] : [];
          return { refused, done: store.append(pick(PIPELINES), events, { state }) };
        });
        for (const a of appends) {
          if (a.refused) await assert.rejects(a.done, (err: unknown) => isVigilError(err, 'VIGIL_STORE_CONFLICT'));
          else await a.done;
        }
      } else if (r < 0.8) {
        what = 'page commit';
        const pipeline = pick(PIPELINES);
        const partition = pick(PARTITIONS);
        const page = await store.readPage(pipeline, partition, 1 + Math.floor(random() * 8));
        if (!page.length) continue;
        const commit: PageCommit = { pipeline, partition, cursor: page[page.length - 1]!.id, groups: [], turns: [], revisions: [], outbox: [], failures: [] };
        // Some hand records on, to the same or another pipeline and partition, in the same transaction.
        if (random() < 0.3) commit.appends = [{ pipeline: pick(PIPELINES), events: [eventOf(pick(PARTITIONS)), eventOf(pick(PARTITIONS))] }];
        if (random() < 0.15) {
          // Stale: the page is committed once, then again (refused: the cursor moved).
          await store.commit({ ...commit, appends: undefined });
          await assert.rejects(store.commit(commit), (err: unknown) => isVigilError(err, 'VIGIL_STORE_CONFLICT'));
        } else await store.commit(commit);
      } else if (r < 0.95) {
        what = 'maintenance (segments emptied, trims)';
        await store.settled();
      } else {
        what = 'reopen';
        await store.close();
        store = new SqliteStore(config(file), undefined, Date.now, tuning);
        await store.open();
      }
      await compare(step, what);
    }
  } finally {
    await store.close();
  }
  assert.ok(compared > 100, `compared after ${compared} steps`);
});
