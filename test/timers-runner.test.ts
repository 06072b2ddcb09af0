/**
 * Durable timers through the PipelineRunner, in virtual time: the runner's clock is injected and
 * the test advances it by exactly the idle wait the runner asks for, so "fires at 60.5 s" is
 * checked to the millisecond without sleeping. The processor is the test-only timer probe.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { lastValueFrom, of, type OperatorFunction } from 'rxjs';
import { formatStatus } from '../src/cli/status.ts';
import { defaultsOf } from '../src/config/schema.ts';
import { memoryLogger } from '../src/logger.ts';
import type { WorkOutboxItem } from '../src/model/work.ts';
import { classifyFactory } from '../src/processors/classify/factory.ts';
import { forwardRecords } from '../src/processors/forward/operator.ts';
import { occurrenceRecords } from '../src/processors/occurrences/operator.ts';
import { newTimerPage, type WorkPage } from '../src/processors/page.ts';
import { recurrenceFactory } from '../src/processors/recurrence/factory.ts';
import { IDLE_POLL_MS, PipelineRunner } from '../src/service/pipeline-runner.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { stateClient } from '../src/store/state-client.ts';
import type { StateStore } from '../src/store/types.ts';
import { event } from './helpers/pages.ts';
import { timerProbe } from './helpers/timer-probe.ts';

const T0 = Date.UTC(2026, 0, 1);
const DELAY = 60_500;

/** A virtual clock and a pipeline `logs` of classify → recurrence → probe over `store`. */
function pipeline(store: StateStore, clock: { now: number }, opts: { rearm?: number; id?: string } = {}) {
  const logger = memoryLogger();
  const settings = (id: string) => ({ id, logger, pipeline: 'logs', store, state: stateClient(store, id, { owner: id }) });
  const chain: OperatorFunction<WorkPage, WorkPage> = (page$) =>
    page$.pipe(
      classifyFactory.create(settings('classify'), defaultsOf(classifyFactory.schema)),
      recurrenceFactory.create(settings('recurrence'), defaultsOf(recurrenceFactory.schema)),
      timerProbe(settings('probe').state, { delay: DELAY, rearm: opts.rearm ?? 0 }, () => clock.now),
    );
  const runner = new PipelineRunner({
    pipeline: 'logs',
    store,
    chain,
    logger,
    pageSize: 256,
    now: () => clock.now,
    processors: ['classify', 'recurrence', 'probe'],
  });
  return { runner, logger };
}

interface Fired {
  id: string;
  firedAt: number;
  due: number;
}

async function fired(store: StateStore): Promise<Fired[]> {
  const out = await store.readOutbox('logs', 'file', 1000);
  return out
    .filter((o): o is WorkOutboxItem & { seq: number } => o.kind === 'work' && o.event.type === 'dev.vigil.provider.retry')
    .map((o) => {
      const d = o.event.data as unknown as { fired_at: number; due: number };
      return { id: o.id, firedAt: d.fired_at, due: d.due };
    });
}

/** Runs rounds as the runner's loop does, advancing the clock by each idle wait, until `until`. */
async function runUntil(runner: PipelineRunner, clock: { now: number }, until: number): Promise<number[]> {
  const waits: number[] = [];
  while (clock.now < until) {
    if (await runner.runOnce()) continue;
    const wait = runner.idleWaitMs();
    assert.ok(wait > 0, `an idle round must not spin (at +${clock.now - T0} ms)`);
    waits.push(wait);
    clock.now = Math.min(until, clock.now + wait);
  }
  return waits;
}

describe('durable timers in the pipeline runner (virtual time)', () => {
  test('a timer set by a page fires at its due time, not at the next poll, exactly once', async () => {
    const store = new MemoryStore();
    await store.registerExporter('logs', 'file');
    const clock = { now: T0 };
    const { runner } = pipeline(store, clock);
    await store.append('logs', [event({ id: 'e1', time: T0, partition: 'S' })]);
    const waits = await runUntil(runner, clock, T0 + 120_000);
    assert.deepEqual(await fired(store), [{ id: 'probe-retry:e1:1', firedAt: T0 + DELAY, due: T0 + DELAY }]);
    // The loop polled each second until the last half second, which it slept exactly.
    assert.ok(waits.includes(500), `waits: ${waits.slice(55, 65).join(', ')}`);
    assert.ok(waits.every((w) => w <= IDLE_POLL_MS));
    assert.deepEqual(runner.stats.timersFired, 1);
    const st = await store.status();
    assert.deepEqual(st.pipelines.find((p) => p.pipeline === 'logs')!.timers, { pending: 0, nextDue: null });
    assert.equal((await store.loadState('probe', ['e1'])).size, 0, 'the probe deleted its checkpoint when it fired');
  });

  test('after a restart the timer fires with the remaining delay (due times are absolute)', async () => {
    const store = new MemoryStore();
    await store.registerExporter('logs', 'file');
    const clock = { now: T0 };
    const first = pipeline(store, clock).runner;
    await store.append('logs', [event({ id: 'r1', time: T0, partition: 'S' })]);
    await runUntil(first, clock, T0 + 30_000);
    assert.deepEqual(await fired(store), []);
    // "Restart" 40 s later: a new runner over the same store; it knows nothing but the store.
    clock.now = T0 + 40_000;
    const restarted = pipeline(store, clock).runner;
    await runUntil(restarted, clock, T0 + 200_000);
    assert.deepEqual(await fired(store), [{ id: 'probe-retry:r1:1', firedAt: T0 + DELAY, due: T0 + DELAY }]);
  });

  test('a restart after the due time fires at once; a processor re-arming its timer gets it again', async () => {
    const store = new MemoryStore();
    await store.registerExporter('logs', 'file');
    const clock = { now: T0 };
    await store.append('logs', [event({ id: 'x1', time: T0, partition: 'S' })]);
    await runUntil(pipeline(store, clock, { rearm: 1 }).runner, clock, T0 + 1_000);
    clock.now = T0 + 100_000; // down past the due time
    const late = pipeline(store, clock, { rearm: 1 }).runner;
    await late.runOnce();
    await runUntil(late, clock, T0 + 300_000);
    assert.deepEqual(await fired(store), [
      { id: 'probe-retry:x1:1', firedAt: T0 + 100_000, due: T0 + DELAY },
      { id: 'probe-retry:x1:2', firedAt: T0 + 2 * DELAY, due: T0 + 2 * DELAY },
    ]);
  });

  test('two sidecars firing the same timer at the same moment: one commit wins, the event is emitted once', async () => {
    const store = new MemoryStore();
    await store.registerExporter('logs', 'file');
    const clock = { now: T0 };
    const sidecarA = pipeline(store, clock);
    const sidecarB = pipeline(store, clock);
    const [a, b] = [sidecarA.runner, sidecarB.runner];
    await store.append(
      'logs',
      ['s1', 's2', 's3'].map((id, i) => event({ id, time: T0 + i, partition: `P${i}` })),
    );
    await runUntil(a, clock, T0 + 1_000);
    clock.now = T0 + DELAY + 10;
    // Both read the due timers before either commits.
    await Promise.all([a.runOnce(), b.runOnce(), a.runOnce(), b.runOnce()]);
    await runUntil(a, clock, T0 + DELAY + 5_000);
    await runUntil(b, clock, T0 + DELAY + 10_000);
    assert.deepEqual((await fired(store)).map((f) => f.id).sort(), ['probe-retry:s1:1', 'probe-retry:s2:1', 'probe-retry:s3:1']);
    assert.equal(a.stats.timersFired + b.stats.timersFired, 3);
    const conflicts = [...sidecarA.logger.entries, ...sidecarB.logger.entries].filter((e) => /timer page conflict/.test(String(e.msg)));
    assert.ok(conflicts.length > 0, 'the race happened: a sidecar had its timer commit refused');
  });

  test('a timer whose owner is not in the pipeline is cleared with a warning', async () => {
    const store = new MemoryStore();
    const clock = { now: T0 };
    const { runner, logger } = pipeline(store, clock);
    await store.commit({
      pipeline: 'logs',
      partition: 'S',
      cursor: null,
      groups: [],
      turns: [],
      revisions: [],
      outbox: [],
      failures: [],
      timers: { set: [{ id: 'old', owner: 'watchdog/removed', partition: 'S', due: T0 + 10, payload: null }] },
    });
    await runUntil(runner, clock, T0 + 2_000);
    assert.equal(runner.stats.timersOrphaned, 1);
    assert.ok(
      logger.entries.some((r) => r.level === 'warn' && /owner is not a processor/.test(String(r.msg))),
      JSON.stringify(logger.entries),
    );
    assert.deepEqual((await store.dueTimers('logs', T0 + 10_000, 10)).timers, []);
  });
});

describe('stages without timers pass a timer page through unchanged', () => {
  const store = new MemoryStore();
  const logger = memoryLogger();
  const settings = (id: string) => ({ id, logger, pipeline: 'logs', store, state: stateClient(store, id, { owner: id }) });
  const stages: Array<[string, OperatorFunction<WorkPage, WorkPage>]> = [
    ['classify', classifyFactory.create(settings('classify'), defaultsOf(classifyFactory.schema))],
    ['recurrence', recurrenceFactory.create(settings('recurrence'), defaultsOf(recurrenceFactory.schema))],
    ['forward', forwardRecords()],
    ['occurrences', occurrenceRecords()],
    ['probe (not the owner)', timerProbe(settings('probe').state, { delay: 1, rearm: 0 })],
  ];
  for (const [name, op] of stages) {
    test(name, async () => {
      const page = newTimerPage('logs', 'S', [{ id: 't', owner: 'watchdog', partition: 'S', due: 1, payload: { run: 'r' }, version: 3 }]);
      const snapshot = structuredClone(page);
      const out = await lastValueFrom(of(page).pipe(op));
      assert.equal(out, page, 'the same page object');
      assert.deepEqual(out, snapshot, 'unchanged');
      assert.equal(out.commit.cursor, null);
    });
  }
});

test('status shows pending timers with the next due time per pipeline, and entries per state namespace', async () => {
  const store = new MemoryStore();
  await store.commit({
    pipeline: 'logs',
    partition: 'S',
    cursor: null,
    groups: [],
    turns: [],
    revisions: [],
    outbox: [],
    failures: [],
    state: [
      { namespace: 'watchdog', key: 'run-1', value: { attempts: 1 } },
      { namespace: 'trace-session', key: 't1', value: 'S', maxEntries: 1 },
      { namespace: 'trace-session', key: 't2', value: 'S', maxEntries: 1 },
    ],
    timers: {
      set: [
        { id: 'a', owner: 'watchdog', partition: 'S', due: T0 + 60_000, payload: null },
        { id: 'b', owner: 'watchdog', partition: 'S', due: T0, payload: null },
      ],
    },
  });
  const text = formatStatus(await store.status());
  assert.match(text, /pipeline logs:\n(.*\n)* {2}timers: 2 pending, next due 2026-01-01T00:00:00.000Z\n/);
  assert.match(text, /processor state:\n {2}trace-session: 1 entries, 1 evicted at the bound\n {2}watchdog: 1 entries\n/);
});
