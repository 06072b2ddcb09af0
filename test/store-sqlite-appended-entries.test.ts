/**
 * Pages served from the entries the SQLite writer appended (src/store/sqlite/appended-entries.ts)
 * instead of read back from the file: the bounds, the floor below which the file is read, and a
 * seeded random comparison of two stores run side by side — one keeping a few entries, or keeping
 * them only while the backlog is long (so that its pages come from memory, from the file and from
 * both over a run), one reading every page from its file — through appends (duplicates included), appends issued together, page reads,
 * `readAfter`, commits at any point of a page, refused commits and reopens.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { AgentEvent } from '../src/model/event.ts';
import { AppendedEntries } from '../src/store/sqlite/appended-entries.ts';
import { SqliteStore, type SqliteStoreConfig, type SqliteStoreTuning } from '../src/store/sqlite/store.ts';
import type { LogEntry } from '../src/store/types.ts';
import { event } from './helpers/pages.ts';
import { seededRandom, testSeed } from './helpers/random.ts';
import { commitOf } from './helpers/store-conformance.ts';
import { tempDir } from './helpers/vigil-process.ts';

const config = (path: string): SqliteStoreConfig => ({ path, synchronous: 'full', busy_timeout: 1000, dedupe_window: 24 * 3_600_000 });

const ev = (id: string, partition = 'A'): AgentEvent => event({ id, time: 1000, partition });
const ids = (page: readonly LogEntry[] | undefined) => page?.map((e) => e.id);

describe('appended entries: what a page may take from memory', () => {
  test('holds what was appended after the floor, in order, until the cursor passes it', () => {
    const held = new AppendedEntries(1_000_000, 1000);
    held.reset(10);
    for (let seq = 11; seq <= 15; seq++) held.add('logs', seq % 2 ? 'A' : 'B', seq, ev(`e${seq}`, seq % 2 ? 'A' : 'B'), 100);
    assert.deepEqual(ids(held.read('logs', 'A', 10, 10)), ['11', '13', '15']);
    assert.deepEqual(ids(held.read('logs', 'A', 11, 1)), ['13']);
    assert.deepEqual(ids(held.read('logs', 'B', 12, 10)), ['14']);
    assert.deepEqual(held.read('logs', 'C', 10, 10), [], 'a partition with nothing held has nothing after the floor');
    assert.equal(held.read('logs', 'A', 9, 10), undefined, 'below the floor the file may hold more');
    held.passed('logs', 'A', 13);
    assert.deepEqual(ids(held.read('logs', 'A', 13, 10)), ['15']);
    assert.equal(held.size, 3);
  });

  test('past its byte bound the oldest entry leaves and raises the floor', () => {
    const held = new AppendedEntries(250, 1000);
    held.reset(0);
    held.add('logs', 'A', 1, ev('a1'), 100);
    held.add('logs', 'B', 2, ev('b2', 'B'), 100);
    held.add('logs', 'A', 3, ev('a3'), 100);
    assert.equal(held.size, 2);
    assert.equal(held.read('logs', 'A', 0, 10), undefined, 'entry 1 is in the file only');
    assert.deepEqual(ids(held.read('logs', 'A', 1, 10)), ['3']);
    assert.deepEqual(ids(held.read('logs', 'B', 1, 10)), ['2']);
  });

  test('a partition that stops moving cannot keep the later entries of others in memory past the count bound', () => {
    const held = new AppendedEntries(1_000_000, 4);
    held.reset(0);
    held.add('logs', 'stuck', 1, ev('s1', 'stuck'), 10);
    for (let seq = 2; seq <= 20; seq++) {
      held.add('logs', 'A', seq, ev(`a${seq}`), 10);
      held.passed('logs', 'A', seq);
    }
    assert.equal(held.size, 0, 'the stuck entry left once four slots were taken behind it');
    assert.equal(held.read('logs', 'stuck', 0, 10), undefined, 'and its partition is read from the file');
    assert.deepEqual(held.read('logs', 'A', 20, 10), []);
  });

  test('an entry not held drops what was held before it and raises the floor to it', () => {
    const held = new AppendedEntries();
    held.reset(0);
    held.add('logs', 'A', 1, ev('a1'), 10);
    held.skip('logs', 2);
    held.add('logs', 'A', 3, ev('a3'), 10);
    assert.equal(held.size, 1);
    assert.equal(held.read('logs', 'A', 0, 10), undefined, 'entries 1 and 2 are in the file only');
    assert.deepEqual(ids(held.read('logs', 'A', 2, 10)), ['3']);
  });

  test('entries are frozen once served: a page cannot change what the next one sees', () => {
    const held = new AppendedEntries();
    held.reset(0);
    const e = ev('x');
    held.add('logs', 'A', 1, e, 10);
    assert.deepEqual(ids(held.read('logs', 'A', 0, 10)), ['1']);
    assert.throws(() => {
      (e as { service: string }).service = 'changed';
    }, TypeError);
    assert.throws(() => {
      (e.payload as { state: string }).state = 'ok';
    }, TypeError);
  });
});

/** One store keeping a few entries, one keeping none; the same steps on both. */
class SideBySide {
  readonly dir = tempDir('vigil-appended-');
  held: SqliteStore;
  file: SqliteStore;
  clock = Date.UTC(2026, 0, 1);
  /** Pages the holding store served wholly from memory. */
  fromMemory = 0;
  fromFile = 0;

  constructor(readonly tuning: SqliteStoreTuning) {
    this.held = this.make('held', tuning);
    this.file = this.make('file', { heldBytes: 0 });
  }

  private make(name: string, tuning: SqliteStoreTuning): SqliteStore {
    return new SqliteStore(config(join(this.dir, `${name}.db`)), undefined, () => this.clock, { segmentRows: 16, trimEvery: 2, ...tuning });
  }

  async open(): Promise<void> {
    await this.held.open();
    await this.file.open();
    // As a pipeline runner does first: from then on the writer counts the pipeline's backlog, and
    // holds entries only while it is long enough (`holdFrom`).
    await this.held.backlog('logs');
    await this.file.backlog('logs');
    this.spy();
  }

  /** Counts where the holding store's pages came from. */
  private spy(): void {
    const entries = (this.held as unknown as { appendedEntries: AppendedEntries }).appendedEntries;
    const read = entries.read.bind(entries);
    entries.read = (...args) => {
      const page = read(...args);
      if (page === undefined) this.fromFile++;
      else this.fromMemory++;
      return page;
    };
  }

  async reopen(): Promise<void> {
    await this.held.close();
    await this.file.close();
    this.held = this.make('held', this.tuning);
    this.file = this.make('file', { heldBytes: 0 });
    await this.open();
  }

  async close(): Promise<void> {
    await this.held.close();
    await this.file.close();
  }
}

/** A page as the file gives it: the events through JSON, as every read from the file parses them. */
const asStored = (page: readonly LogEntry[]) => page.map((e) => ({ id: e.id, event: JSON.parse(JSON.stringify(e.event)) as unknown }));

async function both<T>(run: SideBySide, fn: (s: SqliteStore) => Promise<T>): Promise<[PromiseSettledResult<T>, PromiseSettledResult<T>]> {
  const [a, b] = await Promise.allSettled([fn(run.held), fn(run.file)]);
  return [a!, b!];
}

describe('sqlite store: pages from the appended entries agree with pages read from the file', () => {
  for (const [label, tuning] of [
    ['small bounds (entries leave by count)', { heldEntries: 40, holdFrom: 0 }],
    ['a byte bound of a few entries', { heldBytes: 6000, holdFrom: 0 }],
    ['held only while the backlog is 12 or more', { holdFrom: 12 }],
    ['the default bounds', { holdFrom: 0 }],
  ] as const) {
    test(`random steps, ${label}`, async () => {
      const random = seededRandom(label.length);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
      const run = new SideBySide(tuning);
      await run.open();
      const steps: string[] = [];
      const partitions = ['A', 'B', 'C', 'D'];
      let next = 0;
      const fail = (what: string): never => {
        throw new Error(
          `${label}: ${what}\nsteps:\n  ${steps.slice(-40).join('\n  ')}\nreplay with VIGIL_TEST_SEED=${testSeed()} node --import tsx --test test/store-sqlite-appended-entries.test.ts`,
        );
      };
      /** Both stores' answers to one read: the same page, as the file gives it; returns the file's. */
      const samePages = (read: string, a: PromiseSettledResult<LogEntry[]>, b: PromiseSettledResult<LogEntry[]>): LogEntry[] => {
        if (a.status !== 'fulfilled' || b.status !== 'fulfilled') return fail(`${read} failed: ${a.status} / ${b.status}`);
        steps.push(`${read} → ${ids(b.value)!.join(',')}`);
        try {
          assert.deepStrictEqual(asStored(a.value), asStored(b.value));
        } catch {
          fail(`${read}: held ${JSON.stringify(ids(a.value))}, file ${JSON.stringify(ids(b.value))}`);
        }
        return b.value;
      };
      const batch = () =>
        Array.from({ length: 1 + Math.floor(random() * 5) }, () => {
          // Now and then an id given before: both stores must skip the duplicate.
          const id = next > 0 && random() < 0.15 ? `e${Math.floor(random() * next)}` : `e${next++}`;
          return ev(id, pick(partitions));
        });
      try {
        for (let step = 0; step < 400; step++) {
          const r = random();
          if (r < 0.35) {
            const events = batch();
            steps.push(`append ${events.map((e) => `${e.eventId}@${e.partition}`).join(' ')}`);
            // Each store gets its own objects: the holding one freezes what it keeps.
            const [a, b] = await both(run, (s) => s.append('logs', structuredClone(events)));
            assert.deepEqual(a, b, 'append outcomes');
          } else if (r < 0.45) {
            const groups = [batch(), batch()];
            steps.push(`together ${groups.map((g) => g.map((e) => `${e.eventId}@${e.partition}`).join(' ')).join(' | ')}`);
            const [a, b] = await both(run, (s) => Promise.all(groups.map((g) => s.append('logs', structuredClone(g)))));
            assert.deepEqual(a, b, 'appends together');
          } else if (r < 0.85) {
            const partition = pick(partitions);
            const limit = 1 + Math.floor(random() * 12);
            const file = samePages(`readPage ${partition} ${limit}`, ...(await both(run, (s) => s.readPage('logs', partition, limit))));
            if (file.length && random() < 0.8) {
              // Commit through the page, or to any entry of it; now and then one already passed (refused on both).
              const stale = random() < 0.1;
              const cursor = stale ? String(Math.max(1, Number(file[0]!.id) - 1)) : file[random() < 0.5 ? file.length - 1 : Math.floor(random() * file.length)]!.id;
              steps.push(`commit ${partition} ${cursor}${stale ? ' (stale)' : ''}`);
              const [ca, cb] = await both(run, (s) => s.commit(commitOf('logs', partition, cursor)));
              if (ca.status !== cb.status) fail(`commit ${partition} ${cursor}: ${ca.status} / ${cb.status}`);
            }
          } else if (r < 0.99) {
            const partition = pick(partitions);
            const after = String(Math.floor(random() * (next + 2)));
            samePages(`readAfter ${partition} ${after}`, ...(await both(run, (s) => s.readAfter('logs', partition, after, 4))));
          } else {
            steps.push('reopen');
            await run.reopen();
          }
          if (step % 50 === 49) {
            await run.held.settled();
            await run.file.settled();
          }
        }
        // The run went through both paths, or it showed nothing about their agreement.
        assert.ok(run.fromMemory >= 10, `pages from memory: ${run.fromMemory}, from the file: ${run.fromFile}`);
        if (label !== 'the default bounds') assert.ok(run.fromFile >= 5, `pages from the file: ${run.fromFile}`);
      } finally {
        await run.close();
      }
    });
  }
});

describe('sqlite store: a log whose reader keeps what it reads', () => {
  test('its entries are never kept, nor do they drop what is kept of other logs; its pages come from the file', async () => {
    const dir = tempDir('vigil-reader-kept-');
    const store = new SqliteStore(config(join(dir, 'state.db')), undefined, () => Date.UTC(2026, 0, 1), { holdFrom: 0 });
    await store.open();
    try {
      const held = (store as unknown as { appendedEntries: AppendedEntries }).appendedEntries;
      store.readerKeeps('waiting');
      await store.backlog('logs');
      await store.backlog('waiting');
      const logs = [ev('l1'), ev('l2')];
      await store.append('logs', logs);
      assert.equal(held.size, 2, 'the other log is kept while it is behind (holdFrom 0)');
      const waiting = [ev('w1'), ev('w2', 'B')];
      await store.append('waiting', waiting);
      await store.append('logs', [ev('l3')]);
      assert.equal(held.size, 3, "the reader's log is not kept, and did not drop what was kept before it");
      const page = await store.readAfter('waiting', 'A', '0', 10);
      assert.deepEqual(ids(page), ['3']);
      assert.notEqual(page[0]!.event, waiting[0], 'read back from the file, not the appended object');
      assert.deepEqual(page[0]!.event, JSON.parse(JSON.stringify(waiting[0])));
      assert.deepEqual(ids(await store.readPage('waiting', 'B', 10)), ['4']);
      const logsPage = await store.readPage('logs', 'A', 10);
      assert.deepEqual(ids(logsPage), ['1', '2', '5']);
      assert.equal(logsPage[0]!.event, logs[0], 'the other log is served from what was appended');
    } finally {
      await store.close();
    }
  });
});
