/**
 * When the correlation runner plans (src/service/correlation-runner.ts): a round that releases
 * reads the whole failure wait's records, so rounds run when something can go, not at every
 * append — a record sitting out its failure wait goes by time alone, one waiting for its trace's
 * session may go when a record tells it, and rounds stay a tenth of the wait apart — and a round
 * lets the receivers' requests in flight go first. The decisions are pure functions of the clock,
 * tested on numbers; the runner's loop runs over a real memory store with the real decoder's
 * records, its clock injected (nothing here waits for a wait to pass).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { join } from 'node:path';
import {
  CORRELATION_PIPELINE,
  DEFAULT_CORRELATION,
  splitForCorrelation,
  TRACE_FAILURES_NAMESPACE,
  TRACE_SESSION_NAMESPACE,
  WAITING_PARTITION,
  waitingEvent,
} from '../src/correlation/ingest.ts';
import { VigilError } from '../src/errors.ts';
import { IngestActivity, type ActivityTimers } from '../src/internal/ingest-activity.ts';
import { memoryLogger } from '../src/logger.ts';
import { decodeTracesJson } from '../src/receivers/otlp/json.ts';
import { mapTraces } from '../src/receivers/otlp/mapping.ts';
import {
  CorrelationRunner,
  MAX_RELEASE_BATCH_MS,
  MAX_RELEASED_PER_ROUND,
  releaseBatchMs,
  roundDue,
  roundWaitMs,
  type RoundWait,
} from '../src/service/correlation-runner.ts';
import { IDLE_POLL_MS } from '../src/service/pipeline-runner.ts';
import type { AgentEvent } from '../src/model/event.ts';
import { MemoryStore } from '../src/store/memory.ts';
import type { StateWrite } from '../src/store/state.ts';
import { SqliteStore } from '../src/store/sqlite/store.ts';
import { FROM_CURSOR, type StateStore } from '../src/store/types.ts';
import { aiSdkTurn, openaiTurn, tracesBody, type SpanRecord } from './helpers/agent-records.ts';
import { tempDir, waitFor } from './helpers/vigil-process.ts';

const T0 = Date.UTC(2026, 0, 1);

describe('the batch interval between rounds', () => {
  test('a tenth of the shorter wait, at most MAX_RELEASE_BATCH_MS; none when a wait is 0', () => {
    assert.equal(releaseBatchMs(DEFAULT_CORRELATION), MAX_RELEASE_BATCH_MS);
    assert.equal(releaseBatchMs({ sessionWait: 1500, failureWait: 400 }), 40);
    assert.equal(releaseBatchMs({ sessionWait: 300, failureWait: 5000 }), 30);
    assert.equal(releaseBatchMs({ sessionWait: 10_000, failureWait: 0 }), 0);
    assert.equal(releaseBatchMs({ sessionWait: 0, failureWait: 5000 }), 0);
  });
});

describe('whether a round is due', () => {
  const failure: RoundWait = { wakeAt: T0 + 5000, waitsFor: 'failure', lastRoundAt: T0, batchMs: 500 };
  const session: RoundWait = { wakeAt: T0 + 10_000, waitsFor: 'session', lastRoundAt: T0, batchMs: 500 };

  test('nothing known to wait: every wake-up runs a round; the loop sleeps at most the idle poll', () => {
    const none: RoundWait = { wakeAt: null, waitsFor: null, lastRoundAt: T0, batchMs: 500 };
    assert.equal(roundDue(none, true, T0), true);
    assert.equal(roundDue(none, false, T0), true);
    assert.equal(roundWaitMs(none, false, T0), IDLE_POLL_MS);
  });

  test('a failure wait: new records change nothing before its time', () => {
    assert.equal(roundDue(failure, true, T0 + 1000), false);
    assert.equal(roundDue(failure, true, T0 + 4999), false);
    assert.equal(roundDue(failure, false, T0 + 5000), true);
    assert.equal(roundWaitMs(failure, true, T0 + 4990), 10);
  });

  test('a session wait: a notice runs a round once the last one is a batch interval old; the time runs one too', () => {
    assert.equal(roundDue(session, true, T0 + 100), false, 'within the batch interval');
    assert.equal(roundWaitMs(session, true, T0 + 100), 400);
    assert.equal(roundDue(session, true, T0 + 500), true);
    assert.equal(roundDue(session, false, T0 + 500), false, 'the timer alone: not before its time');
    assert.equal(roundDue(session, false, T0 + 10_000), true);
  });

  test('rounds stay a batch interval apart even when the time has come', () => {
    const late: RoundWait = { ...failure, lastRoundAt: T0 + 4800 };
    assert.equal(roundDue(late, false, T0 + 5000), false);
    assert.equal(roundWaitMs(late, false, T0 + 5000), 300);
    assert.equal(roundDue(late, false, T0 + 5300), true);
  });
});

/** The real decoder's records of these spans, as the receiver sends them to the correlation log at `receivedAt`. */
function waiting(spans: SpanRecord[], receivedAt: number) {
  const decoded = decodeTracesJson(tracesBody(spans), { skipIrrelevant: true });
  const mapped = mapTraces(decoded.groups);
  const split = splitForCorrelation(mapped.events, false);
  assert.ok(split.waiting.length > 0, 'the records wait in the correlation log');
  return split.waiting.map((e) => waitingEvent(e, ['traces'], receivedAt));
}

/**
 * A runner over `store` on a clock the test moves, counting the correlation log's reads (and the
 * entries each returned, and whether it read from the cursor) and the rounds that planned (each
 * loads the failure records of its traces; a read ahead loads nothing).
 */
function runnerOn(store: MemoryStore, clock: { now: number }, activity?: IngestActivity) {
  const reads = { n: 0, entries: [] as number[], fromCursor: 0, planned: 0 };
  const readPage = store.readPage.bind(store);
  store.readPage = async (pipeline, partition, limit) => {
    const page = await readPage(pipeline, partition, limit);
    if (pipeline === CORRELATION_PIPELINE) {
      reads.n++;
      reads.fromCursor++;
      reads.entries.push(page.length);
    }
    return page;
  };
  const readAfter = store.readAfter.bind(store);
  store.readAfter = async (pipeline, partition, after, limit) => {
    const page = await readAfter(pipeline, partition, after, limit);
    if (pipeline === CORRELATION_PIPELINE) {
      reads.n++;
      if (after === FROM_CURSOR) reads.fromCursor++;
      reads.entries.push(page.length);
    }
    return page;
  };
  const loadState = store.loadState.bind(store);
  store.loadState = (namespace, keys) => {
    if (namespace === TRACE_FAILURES_NAMESPACE) reads.planned++;
    return loadState(namespace, keys);
  };
  return { runner: newRunner(store, clock, activity), reads };
}

/** A runner with the default waits over `store`, on a clock the test moves. */
function newRunner(store: StateStore, clock: { now: number }, activity?: IngestActivity): CorrelationRunner {
  return new CorrelationRunner({
    store,
    logger: memoryLogger(),
    settings: DEFAULT_CORRELATION,
    pageSize: 256,
    counting: new Set(['traces']),
    forwarding: new Set(),
    now: () => clock.now,
    activity,
  });
}

/** Lets the loop's wake-ups (a setImmediate each) and promise callbacks run. */
const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

describe('the runner plans when something can go', () => {
  test('records appended while the first sits out its failure wait start no round; its time does; each notice reads its own records ahead', async () => {
    const store = new MemoryStore();
    const clock = { now: T0 };
    const first = waiting([aiSdkTurn(T0, 'sess-A').generateText], T0);
    await store.append(CORRELATION_PIPELINE, first);
    const { runner, reads } = runnerOn(store, clock);
    runner.start();
    try {
      await waitFor(() => (reads.planned === 1 ? true : undefined), 'the first round');
      await turns();
      assert.deepEqual(
        { wakeAt: runner.roundWait().wakeAt, waitsFor: runner.roundWait().waitsFor },
        { wakeAt: T0 + DEFAULT_CORRELATION.failureWait, waitsFor: 'failure' },
      );
      assert.deepEqual(reads.entries, [first.length]);
      const appended: number[] = [];
      for (let i = 1; i <= 10; i++) {
        clock.now = T0 + i * 400;
        const records = waiting([aiSdkTurn(clock.now, 'sess-A').generateText], clock.now);
        appended.push(records.length);
        await store.append(CORRELATION_PIPELINE, records);
        runner.notify();
        await turns();
      }
      assert.equal(reads.planned, 1, 'ten appends within the wait: no round planned');
      assert.deepEqual(reads.entries, [first.length, ...appended], 'each notice read its request’s records ahead, and only those');
      assert.equal(reads.fromCursor, 1, 'the reads ahead read after the entries read before');
      clock.now = T0 + DEFAULT_CORRELATION.failureWait;
      runner.notify();
      await waitFor(() => (runner.stats.rounds === 1 ? true : undefined), 'the round at the first record’s time');
      assert.ok(runner.stats.released.own >= 1, 'the first record went');
      assert.equal(runner.roundWait().waitsFor, 'failure', 'the next waits for its own failure wait');
      assert.equal(
        reads.entries.slice(11).reduce((a, b) => a + b, 0),
        0,
        'the round read no record again',
      );
    } finally {
      await runner.stop();
    }
  });

  test(`a round releases at most ${MAX_RELEASED_PER_ROUND} records, in one commit, with the state of each, and the next follows at once`, async () => {
    const store = new MemoryStore();
    const clock = { now: T0 };
    const ids: string[] = [];
    const add = async (records: AgentEvent[], state?: StateWrite[]) => {
      ids.push(...records.map((e) => e.eventId));
      await store.append(CORRELATION_PIPELINE, records, state ? { state } : undefined);
    };
    while (ids.length < MAX_RELEASED_PER_ROUND - 1) await add(waiting([aiSdkTurn(T0, 'sess-A').generateText], T0).slice(0, MAX_RELEASED_PER_ROUND - 1 - ids.length));
    // The last record of the first round awaits its trace's session, which only the store knows
    // (written by an earlier request): a round that did not load the state of its last record
    // would hold it back (the session wait has not passed) and release one record fewer.
    const chat = openaiTurn(T0, undefined).chat;
    const awaiting = waiting([chat], T0);
    assert.equal(awaiting.length, 1);
    assert.equal(awaiting[0]!.awaitsSession, true);
    await add(awaiting, [{ namespace: TRACE_SESSION_NAMESPACE, key: chat.traceId, value: 'sess-B', ttlMs: DEFAULT_CORRELATION.traceTtl }]);
    while (ids.length < 2 * MAX_RELEASED_PER_ROUND + 10) await add(waiting([aiSdkTurn(T0, 'sess-A').generateText], T0));
    const commits: number[] = [];
    const commit = store.commit.bind(store);
    store.commit = (c) => {
      if (c.pipeline === CORRELATION_PIPELINE) commits.push(c.appends!.reduce((n, a) => n + a.events.length, 0));
      return commit(c);
    };
    clock.now = T0 + DEFAULT_CORRELATION.failureWait;
    const runner = newRunner(store, clock);
    runner.start();
    try {
      // Loop turns only, no timer: a round that released its most does not sleep before the next.
      for (let i = 0; i < 200 && commits.reduce((a, b) => a + b, 0) < ids.length; i++) await turns(1);
    } finally {
      await runner.stop();
    }
    assert.deepEqual(commits, [MAX_RELEASED_PER_ROUND, MAX_RELEASED_PER_ROUND, ids.length - 2 * MAX_RELEASED_PER_ROUND]);
    const page = await store.readPage('traces', 'sess-A', ids.length + 1);
    assert.deepEqual(
      page.map((e) => e.event.eventId),
      ids.filter((id) => id !== awaiting[0]!.eventId),
      'all of them, in arrival order',
    );
    const inSession = await store.readPage('traces', 'sess-B', 10);
    assert.deepEqual(
      inSession.map((e) => e.event.eventId),
      [awaiting[0]!.eventId],
      'the chat span went in the session the store knew',
    );
  });

  test('a record waiting for its session: a notice runs a round, but not within a batch interval of the last', async () => {
    const store = new MemoryStore();
    const clock = { now: T0 };
    const turn = openaiTurn(T0, undefined);
    await store.append(CORRELATION_PIPELINE, waiting([turn.chat], T0));
    const { runner, reads } = runnerOn(store, clock);
    runner.start();
    try {
      await waitFor(() => (reads.n === 1 ? true : undefined), 'the first round');
      await turns();
      assert.equal(runner.roundWait().waitsFor, 'session');
      runner.notify();
      await turns();
      assert.equal(reads.n, 1, 'within the batch interval');
      clock.now = T0 + releaseBatchMs(DEFAULT_CORRELATION);
      runner.notify();
      await waitFor(() => (reads.n === 2 ? true : undefined), 'a round once the interval passed');
    } finally {
      await runner.stop();
    }
  });
});

describe('a notice during a round', () => {
  test('records appended while a round read the log count as a notice: the session they may tell is planned once the interval passed', async () => {
    const store = new MemoryStore();
    const clock = { now: T0 };
    await store.append(CORRELATION_PIPELINE, waiting([openaiTurn(T0, undefined).chat], T0));
    const { runner, reads } = runnerOn(store, clock);
    // The first read gets a notice while it runs (an append the round may have missed), and the
    // clock moves past the batch interval: nothing else will wake the loop before the session wait.
    const readAfter = store.readAfter.bind(store);
    let first = true;
    store.readAfter = async (pipeline, partition, after, limit) => {
      const page = await readAfter(pipeline, partition, after, limit);
      if (first && pipeline === CORRELATION_PIPELINE) {
        first = false;
        runner.notify();
        clock.now = T0 + releaseBatchMs(DEFAULT_CORRELATION);
      }
      return page;
    };
    runner.start();
    try {
      await waitFor(() => (reads.n >= 2 ? true : undefined), 'a second round for the notice the first one got', 2000, 10);
    } finally {
      await runner.stop();
    }
  });
});

describe('the runner keeps what it read', () => {
  for (const kind of ['memory', 'sqlite'] as const) {
    test(`${kind}: a round after a release reads only what came after the entries it kept; a failed round reads from the cursor again`, async () => {
      const dir = tempDir();
      const store: StateStore =
        kind === 'memory'
          ? new MemoryStore()
          : new SqliteStore({ path: join(dir, 'state.db'), synchronous: 'full', busy_timeout: 1000, dedupe_window: 24 * 3_600_000 });
      await store.open();
      try {
        const clock = { now: T0 };
        // Three requests' failure records, 1 s apart.
        for (let i = 0; i < 3; i++) await store.append(CORRELATION_PIPELINE, waiting([aiSdkTurn(T0 + i * 1000, 'sess-A').generateText], T0 + i * 1000));
        const perRequest = (await store.readAfter!(CORRELATION_PIPELINE, WAITING_PARTITION, FROM_CURSOR, 1000)).length / 3;
        const read = { fromCursor: 0, after: 0 };
        const readPage = store.readPage.bind(store);
        const readAfter = store.readAfter!.bind(store);
        store.readPage = async (p, part, limit) => {
          const page = await readPage(p, part, limit);
          if (p === CORRELATION_PIPELINE) read.fromCursor += page.length;
          return page;
        };
        store.readAfter = async (p, part, after, limit) => {
          const page = await readAfter(p, part, after, limit);
          if (p === CORRELATION_PIPELINE) {
            if (after === FROM_CURSOR) read.fromCursor += page.length;
            else read.after += page.length;
          }
          return page;
        };
        const runner = newRunner(store, clock);
        clock.now = T0 + DEFAULT_CORRELATION.failureWait + 1;
        assert.equal(await runner.runOnce(), true, 'the first request went');
        assert.deepEqual(read, { fromCursor: 3 * perRequest, after: 0 });
        // The SQLite writer keeps appended entries for pages while a log is behind, but not this
        // log's (readerKeeps): the runner keeps what it reads.
        const heldBy = (s: StateStore) => (s instanceof SqliteStore ? (s as unknown as { appendedEntries: { size: number } }).appendedEntries.size : 0);
        const heldBefore = heldBy(store);
        await store.append(CORRELATION_PIPELINE, waiting([aiSdkTurn(T0 + 3000, 'sess-A').generateText], T0 + 3000));
        assert.equal(heldBy(store), heldBefore, 'the store keeps none of the new entries');
        clock.now = T0 + 1000 + DEFAULT_CORRELATION.failureWait + 1;
        assert.equal(await runner.runOnce(), true, 'the second went');
        assert.deepEqual(read, { fromCursor: 3 * perRequest, after: perRequest }, 'only the new request was read');
        assert.equal(runner.stats.released.own, 2 * perRequest);
        // A failed commit: the next round reads from the cursor, and releases the same records.
        const commit = store.commit.bind(store);
        store.commit = async () => {
          throw new VigilError('VIGIL_STORE_UNAVAILABLE', 'the disk went away');
        };
        clock.now = T0 + 2000 + DEFAULT_CORRELATION.failureWait + 1;
        await assert.rejects(runner.runOnce(), /the disk went away/);
        store.commit = commit;
        assert.equal(await runner.runOnce(), true);
        assert.deepEqual(read, { fromCursor: 5 * perRequest, after: perRequest }, 'read again from the cursor');
        assert.equal(runner.stats.released.own, 3 * perRequest);
        const left = await readPage(CORRELATION_PIPELINE, WAITING_PARTITION, 1000);
        assert.deepEqual(
          left.map((e) => e.event.route?.receivedAt),
          Array.from({ length: perRequest }, () => T0 + 3000),
          'the log holds the last request only',
        );
      } finally {
        await store.close();
      }
    });
  }
});

/** Loop turns and timers the test fires by hand (IngestActivity's). */
class ManualTimers implements ActivityTimers {
  readonly turns: Array<() => void> = [];
  setTimeout(): unknown {
    return 0;
  }
  clearTimeout(): void {}
  afterIo(fn: () => void): void {
    this.turns.push(fn);
  }
  turn(): void {
    for (const fn of this.turns.splice(0)) fn();
  }
}

describe('the correlation runner lets requests go first', () => {
  test('a round waits while a request is in flight and reads the log once it is answered', async () => {
    const store = new MemoryStore();
    const clock = { now: T0 + DEFAULT_CORRELATION.failureWait };
    await store.append(CORRELATION_PIPELINE, waiting([aiSdkTurn(T0, 'sess-A').generateText], T0));
    const timers = new ManualTimers();
    const activity = new IngestActivity(25, timers);
    const { runner, reads } = runnerOn(store, clock, activity);
    const answered = activity.begin();
    const round = runner.runOnce();
    await turns();
    assert.equal(reads.n, 0, 'the round waits for the request');
    answered();
    timers.turn();
    timers.turn();
    assert.equal(await round, true, 'then it released the record');
    assert.equal(reads.n, 1);
  });
});
