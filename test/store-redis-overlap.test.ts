/**
 * On a single Redis node the pipeline runner sends the next partition's page while a commit is in
 * flight (`commitVisibleOnSend`): the store writes the commit script to its one connection within
 * `commit`, and Redis runs a connection's commands in order, so the next page's loads see the
 * commit applied, or refused. A private `redis-server`, so that writes can be paused
 * (`CLIENT PAUSE WRITE`): the runner is then seen to go on before a commit could have run, and its
 * next load to wait behind that commit.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { concatMap, type OperatorFunction } from 'rxjs';
import { defaultsOf } from '../src/config/schema.ts';
import { memoryLogger } from '../src/logger.ts';
import type { AgentEvent } from '../src/model/event.ts';
import type { GroupState, OutboxItem } from '../src/model/work.ts';
import { classifyFactory } from '../src/processors/classify/factory.ts';
import type { WorkPage } from '../src/processors/page.ts';
import { recurrenceFactory } from '../src/processors/recurrence/factory.ts';
import { PipelineRunner } from '../src/service/pipeline-runner.ts';
import { RedisStore } from '../src/store/redis/store.ts';
import { stateClient } from '../src/store/state-client.ts';
import type { StateStore } from '../src/store/types.ts';
import { event } from './helpers/pages.ts';
import { seededRandom, testSeed } from './helpers/random.ts';
import { RedisServer, uniquePrefix } from './helpers/redis-server.ts';

let server: RedisServer;
before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  await server?.stop();
});

function redisStore(cluster = false): RedisStore {
  return new RedisStore({
    url: server?.url ?? 'redis://127.0.0.1:6379',
    key_prefix: uniquePrefix('overlap'),
    cluster: { enabled: cluster, nodes: [] },
    dedupe_window: 3_600_000,
    connect_timeout: 2000,
    command_timeout: 10_000,
  });
}

function group(key: string, version: number): GroupState {
  return { groupKey: key, count: version, firstSeen: 0, lastSeen: version, lastDecision: 'BurstThresholdReached', openWorkId: null, workGeneration: 0, version };
}

const item = (id: string): OutboxItem => ({ kind: 'occurrence', id, occurrence: { occurrence_id: id } as never });

/** The store as a runner sees it, with `commitVisibleOnSend` as the test sets it. */
function declaring(store: RedisStore, visibleOnSend: boolean): StateStore {
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'commitVisibleOnSend') return visibleOnSend;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  }) as unknown as StateStore;
}

describe('redis store (single node): the pipeline runner goes on while a commit is in flight', () => {
  test('a single node declares it, a cluster does not', () => {
    assert.equal(redisStore().commitVisibleOnSend, true);
    assert.equal(redisStore(true).commitVisibleOnSend, false);
  });

  test("the next page's loads wait behind the commit on the connection; a commit refused mid-round leaves the pages after it on the stored state", async () => {
    const store = redisStore();
    const admin = new Redis(server.url);
    await store.open();
    await store.whenReady();
    try {
      // Every page bumps one shared group from the version it loads; B's first commit carries a stale version and is refused.
      const seen: string[] = [];
      let loadingB!: () => void;
      const runnerAtB = new Promise<void>((resolve) => (loadingB = resolve));
      let refuseB = true;
      const chain: OperatorFunction<WorkPage, WorkPage> = (pages) =>
        pages.pipe(
          concatMap(async (page) => {
            if (page.partition === 'B') loadingB();
            const v = (await store.loadGroups(['g'])).get('g')?.version ?? 0;
            seen.push(`${page.partition}:${v}`);
            const stale = page.partition === 'B' && refuseB;
            refuseB &&= page.partition !== 'B';
            page.commit.groups = [group('g', stale ? v : v + 1)];
            page.commit.outbox = [item(`${page.partition}-out`)];
            return page;
          }),
        );
      const logger = memoryLogger();
      const runner = new PipelineRunner({ pipeline: 'logs', store, chain, logger, pageSize: 10 });
      await store.registerExporter('logs', 'x');
      for (const p of ['A', 'B', 'C']) await store.append('logs', [event({ id: `e-${p}`, time: 1, partition: p })]);
      assert.deepEqual(
        (await store.backlog('logs')).map((b) => b.partition),
        ['A', 'B', 'C'],
      );

      // Writes paused: A's commit is on the connection but cannot run.
      await admin.call('CLIENT', 'PAUSE', '60000', 'WRITE');
      const round = runner.runOnce();
      await runnerAtB;
      assert.deepEqual(seen, ['A:0'], "the runner went on to B before A's commit could run; B's load waits behind it");
      await admin.call('CLIENT', 'UNPAUSE');
      assert.equal(await round, true);
      // B loaded after A's commit; C after B's refused one, so it saw A's version.
      assert.deepEqual(seen, ['A:0', 'B:1', 'C:1']);
      assert.equal(runner.stats.pages, 2);
      assert.equal(runner.stats.failedPages, 0);
      assert.equal(logger.entries.filter((e) => String(e.msg).startsWith('commit conflict')).length, 1, "B's commit was refused");
      assert.deepEqual(
        (await store.backlog('logs')).map((b) => b.partition),
        ['B'],
      );

      // The next round takes B again, on C's commit.
      assert.equal(await runner.runOnce(), true);
      assert.deepEqual(seen, ['A:0', 'B:1', 'C:1', 'B:2']);
      assert.equal((await store.loadGroups(['g'])).get('g')?.version, 3);
      assert.deepEqual(
        (await store.readOutbox('logs', 'x', 10)).map((o) => o.kind === 'occurrence' && o.id),
        ['A-out', 'C-out', 'B-out'],
      );
      assert.deepEqual(await store.backlog('logs'), []);
    } finally {
      await admin.call('CLIENT', 'UNPAUSE').catch(() => undefined);
      admin.disconnect();
      await store.close();
    }
  });

  test('randomized: the same pages and refusals give the same groups, work and state as a runner that waits for each commit', async () => {
    const rnd = seededRandom(41);
    const partitions = 2 + Math.floor(rnd() * 5);
    const signatures = 1 + Math.floor(rnd() * 6);
    const pageSize = 3 + Math.floor(rnd() * 20);
    const total = 60 + Math.floor(rnd() * 200);
    const events: AgentEvent[] = [];
    for (let i = 0; i < total; i++) {
      const sig = Math.floor(rnd() * signatures);
      events.push(
        event({
          id: `e-${i}`,
          time: Date.UTC(2026, 0, 1) + i * 60_000,
          partition: `s-${Math.floor(rnd() * partitions)}`,
          payload: {
            state: 'error',
            outcome: { error: `Traceback (most recent call last):\n  File "job.py", line 1\n${'KVX'[sig % 3]}${'abcdef'[sig]}Error: failed` },
          },
        }),
      );
    }
    // Pages whose first commit carries one group at a stale version (the store refuses it), by their first entry.
    const refused = new Set(events.filter(() => rnd() < 0.25).map((e) => e.eventId));
    const context = `seed ${testSeed()}: ${partitions} partitions, ${signatures} signatures, pages of ${pageSize}, ${total} events, ${refused.size} refusals`;

    const run = async (overlap: boolean) => {
      const store = redisStore();
      await store.open();
      await store.whenReady();
      try {
        const tried = new Set<string>();
        let injected = 0;
        const viewed = declaring(store, overlap);
        const logger = memoryLogger();
        const settings = (id: string) => ({ id, logger, pipeline: 'logs', store: viewed, state: stateClient(viewed, id, { owner: id }) });
        const classify = classifyFactory.create(settings('classify'), defaultsOf(classifyFactory.schema));
        const recurrence = recurrenceFactory.create(settings('recurrence'), defaultsOf(recurrenceFactory.schema));
        const chain: OperatorFunction<WorkPage, WorkPage> = (pages) =>
          pages.pipe(
            classify,
            recurrence,
            concatMap(async (page) => {
              const first = page.items[0]?.entry.event.eventId;
              if (first !== undefined && refused.has(first) && !tried.has(first) && page.commit.groups.length) {
                tried.add(first);
                injected++;
                const g = page.commit.groups[0]!;
                page.commit.groups = [{ ...g, version: g.version + 1 }, ...page.commit.groups.slice(1)];
              }
              return page;
            }),
          );
        const runner = new PipelineRunner({ pipeline: 'logs', store: viewed, chain, logger, pageSize });
        await store.registerExporter('logs', 'x');
        for (let i = 0; i < events.length; i += 7) await store.append('logs', events.slice(i, i + 7));
        await runner.drain();
        const outbox = (await store.readOutbox('logs', 'x', 10_000)).map(({ seq, ...o }) => (void seq, o));
        const keys = [...new Set(outbox.flatMap((o) => (o.kind === 'work' ? [(o.event.data as { group_key: string }).group_key] : [])))].sort();
        const groups = [...(await store.loadGroups(keys))].sort(([a], [b]) => a.localeCompare(b));
        const conflicts = logger.entries.filter((e) => String(e.msg).startsWith('commit conflict')).length;
        return { outbox, groups, conflicts, injected, stats: runner.stats, backlog: await store.backlog('logs') };
      } finally {
        await store.close();
      }
    };

    const waited = await run(false);
    const overlapped = await run(true);
    assert.deepEqual(overlapped.backlog, [], context);
    assert.equal(overlapped.stats.failedPages, 0, context);
    assert.equal(overlapped.stats.entries, total, `${context}: every entry committed once`);
    assert.equal(overlapped.injected, waited.injected, context);
    assert.equal(overlapped.conflicts, overlapped.injected, `${context}: only the injected refusals; no page was planned before a commit it should have seen`);
    assert.deepEqual(overlapped.groups, waited.groups, context);
    assert.deepEqual(overlapped.outbox, waited.outbox, context);
  });
});
