/**
 * The pipeline runner reads the next partition's page while the current page commits (read-ahead).
 * A page read ahead can be overtaken: another sidecar commits that partition before the runner
 * gets to it. The commit of the stale page must then be refused (the store checks the cursor the
 * page was read after; group versions alone would pass, since groups are loaded after the other
 * commit) and the page read again: every entry is counted exactly once. A read-ahead that fails
 * fails only its own partition. Real stores: memory, a SQLite file and the machine's Redis.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import type { OperatorFunction } from 'rxjs';
import { defaultsOf } from '../src/config/schema.ts';
import { memoryLogger } from '../src/logger.ts';
import type { AgentEvent } from '../src/model/event.ts';
import type { WorkOutboxItem } from '../src/model/work.ts';
import { classifyFactory } from '../src/processors/classify/factory.ts';
import type { WorkPage } from '../src/processors/page.ts';
import { recurrenceFactory } from '../src/processors/recurrence/factory.ts';
import { PipelineRunner } from '../src/service/pipeline-runner.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { SqliteStore } from '../src/store/sqlite/store.ts';
import { stateClient } from '../src/store/state-client.ts';
import type { LogEntry, PageCommit, StateStore } from '../src/store/types.ts';
import { localRedisStore } from './helpers/stores.ts';
import { deletePrefix, REDIS_URL, uniquePrefix } from './helpers/redis-server.ts';
import { tempDir } from './helpers/vigil-process.ts';

const PER_PARTITION = 30;
const T0 = Date.UTC(2026, 0, 1);

const prefixes: string[] = [];
after(async () => {
  for (const p of prefixes) await deletePrefix(REDIS_URL, p);
});

const stores: Array<[string, () => StateStore]> = [
  ['memory', () => new MemoryStore()],
  ['sqlite', () => new SqliteStore({ path: join(tempDir('vigil-readahead-'), 'state.db'), synchronous: 'normal', busy_timeout: 5000, dedupe_window: 3_600_000 })],
  [
    'redis',
    () => {
      const prefix = uniquePrefix('readahead');
      prefixes.push(prefix);
      return localRedisStore(prefix);
    },
  ],
];

/** One failure signature in every partition: all events count towards one group. */
function failure(i: number, partition: string): AgentEvent {
  return {
    eventId: `${partition}-${i}`,
    kind: 'execution.completed',
    payload: { state: 'error', outcome: { error: 'Traceback (most recent call last):\n  File "job.py", line 1\nKeyError: step failed' } },
    partition,
    time: T0 + i * 1000,
    service: 'agent',
    source: 'jsonl',
  };
}

function runnerOver(store: StateStore, logger = memoryLogger(), pageSize = 256): PipelineRunner {
  const settings = (id: string) => ({ id, logger, pipeline: 'logs', store, state: stateClient(store, id, { owner: id }) });
  const chain: OperatorFunction<WorkPage, WorkPage> = (page$) =>
    page$.pipe(
      classifyFactory.create(settings('classify'), defaultsOf(classifyFactory.schema)),
      recurrenceFactory.create(settings('recurrence'), defaultsOf(recurrenceFactory.schema)),
    );
  return new PipelineRunner({ pipeline: 'logs', store, chain, logger, pageSize });
}

/** The store with `commit` and `readPage` wrapped by the test (the store itself is real). */
function intercepted(
  store: StateStore,
  hooks: { commit?: (cm: PageCommit, done: Promise<void>) => Promise<void>; readPage?: (partition: string, read: () => Promise<LogEntry[]>) => Promise<LogEntry[]> },
): StateStore {
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'commit' && hooks.commit) return (cm: PageCommit) => hooks.commit!(cm, target.commit(cm));
      if (prop === 'readPage' && hooks.readPage) {
        return (pipeline: string, partition: string, limit: number) => hooks.readPage!(partition, () => target.readPage(pipeline, partition, limit));
      }
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/** The group's count as its newest work event states it, and how many work events were filed. */
async function counted(store: StateStore): Promise<{ count: number; created: number }> {
  const out = (await store.readOutbox('logs', 'test', 1000)).filter((o): o is WorkOutboxItem & { seq: number } => o.kind === 'work');
  const keys = [...new Set(out.map((o) => (o.event.data as { group_key: string }).group_key))];
  assert.equal(keys.length, 1, 'one signature, one group');
  const group = (await store.loadGroups(keys)).get(keys[0]!);
  return { count: group?.count ?? 0, created: out.filter((o) => o.event.type === 'dev.vigil.work.created').length };
}

for (const [name, make] of stores) {
  describe(`pipeline runner read-ahead (${name})`, () => {
    test('a page read ahead and then partly committed by another sidecar is refused and read again: every entry counted once', async () => {
      const store = make();
      await store.open();
      await store.whenReady?.();
      try {
        await store.registerExporter('logs', 'test');
        const partitions = ['p-a', 'p-b'];
        for (const p of partitions)
          await store.append(
            'logs',
            Array.from({ length: PER_PARTITION }, (_, i) => failure(i, p)),
          );
        // The other sidecar's pages are smaller: its commit leaves the cursor inside this runner's
        // page, so only the check of the cursor the page was read after can refuse the stale page.
        const SMALL = PER_PARTITION / 3;
        const other = runnerOver(store, memoryLogger(), SMALL);
        const order: string[] = [];
        let raced = false;
        let readsOfB = 0;
        let otherDone!: () => void;
        const otherCommitted = new Promise<void>((resolve) => (otherDone = resolve));
        const logger = memoryLogger();
        const runner = runnerOver(
          intercepted(store, {
            readPage: async (partition, read) => {
              order.push(`read ${partition}`);
              const entries = await read();
              // A runner that goes on while its commits are in flight (commitVisibleOnSend) gets p-b only after the race.
              if (partition === 'p-b' && readsOfB++ === 0) await otherCommitted;
              return entries;
            },
            commit: async (cm, done) => {
              await done;
              order.push(`commit ${cm.partition}`);
              if (cm.partition === 'p-a' && !raced) {
                raced = true;
                // Another sidecar commits p-b's first entries now: after this runner read p-b ahead, before it commits it.
                assert.ok(await other.runOnce());
                order.push('other committed p-b');
                otherDone();
              }
            },
          }),
          logger,
        );
        const backlog = (await store.backlog('logs')).map((b) => b.partition);
        assert.deepEqual(backlog, partitions, 'the round takes p-a, then p-b');

        await runner.drain();

        // The race happened as intended: p-b was read ahead before the other sidecar committed it.
        assert.deepEqual(order.slice(0, 4), ['read p-a', 'read p-b', 'commit p-a', 'other committed p-b']);
        assert.ok(
          logger.entries.some((e) => String(e.msg).startsWith('commit conflict')),
          'the stale page was refused',
        );
        assert.equal(other.stats.entries, SMALL, 'the other sidecar committed the start of p-b');
        assert.equal(runner.stats.entries, 2 * PER_PARTITION - SMALL, 'this runner committed p-a and, read again, the rest of p-b');
        assert.equal(runner.stats.failedPages + other.stats.failedPages, 0);
        assert.deepEqual(await store.backlog('logs'), []);
        const c = await counted(store);
        assert.equal(c.count, partitions.length * PER_PARTITION, 'each entry counted exactly once');
        assert.equal(c.created, 1, 'one work item filed');
      } finally {
        await store.close();
      }
    });

    test('a read-ahead that fails fails its own partition only; it is retried and nothing is lost', async () => {
      const store = make();
      await store.open();
      await store.whenReady?.();
      try {
        await store.registerExporter('logs', 'test');
        const partitions = ['p-a', 'p-b', 'p-c'];
        for (const p of partitions)
          await store.append(
            'logs',
            Array.from({ length: PER_PARTITION }, (_, i) => failure(i, p)),
          );
        let failOnce = true;
        const logger = memoryLogger();
        const runner = runnerOver(
          intercepted(store, {
            readPage: async (partition, read) => {
              if (partition === 'p-b' && failOnce) {
                failOnce = false;
                throw new Error('injected read failure');
              }
              return read();
            },
          }),
          logger,
        );
        assert.ok(await runner.runOnce());
        assert.equal(runner.stats.failedPages, 1);
        assert.equal(runner.stats.entries, 2 * PER_PARTITION, 'p-a and p-c committed in the same round');
        assert.deepEqual(
          (await store.backlog('logs')).map((b) => b.partition),
          ['p-b'],
        );
        await runner.drain();
        assert.deepEqual(await store.backlog('logs'), []);
        const c = await counted(store);
        assert.equal(c.count, partitions.length * PER_PARTITION);
        assert.ok(logger.entries.some((e) => String(e.msg).startsWith('processing a page failed') && String(e.error).includes('injected read failure')));
      } finally {
        await store.close();
      }
    });
  });
}
