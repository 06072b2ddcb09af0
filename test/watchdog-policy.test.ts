/**
 * The watchdog's policy in virtual time: the operator as marble diagrams (TestScheduler; its state
 * answered from maps), and whole sequences through the pipeline runner with an injected clock over
 * the memory store — retry once, skip when the conversation moved on, report after a second
 * failure, never retry a rate limit, report a login failure at once, leave a runtime that retries
 * on its own alone. No test sleeps.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { map, of, tap } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { memoryLogger } from '../src/logger.ts';
import type { ProviderEventData } from '../src/model/work.ts';
import { newTimerPage, newWorkPage, type WorkPage } from '../src/processors/page.ts';
import { watchdog, type WatchdogNamespace, type WatchdogStateView } from '../src/processors/watchdog/operator.ts';
import type { StateEntry, TimerSpec } from '../src/store/state.ts';
import type { PageCommit } from '../src/store/types.ts';
import fc from 'fast-check';
import { withNewest } from '../src/processors/watchdog/policy.ts';
import { checkProperty } from './helpers/random.ts';
import { ERRORS, T0, failure, marker, simulate, type Sim } from './helpers/watchdog.ts';

/** A WatchdogStateView over maps that answers synchronously, and applies commits as a store would (versions checked). */
function mapState() {
  const ns: Record<string, Map<string, StateEntry>> = { facts: new Map(), checkpoints: new Map(), reports: new Map() };
  const timers = new Map<string, TimerSpec>();
  const view: WatchdogStateView = {
    load: (n: WatchdogNamespace, keys) => of(new Map(keys.filter((k) => ns[n]!.has(k)).map((k) => [k, ns[n]!.get(k)!] as const))),
    put: (n, key, value, o = {}) => ({ namespace: n, key, value, ...o }),
    delete: (n, key, o = {}) => ({ namespace: n, key, value: null, ...o }),
    timer: (spec) => ({ ...spec, owner: 'watchdog' }),
    ownTimers: (page) => (page.timers ?? []).filter((t) => t.owner === 'watchdog'),
  };
  const apply = (c: PageCommit) => {
    for (const w of c.state ?? []) {
      const prev = ns[w.namespace]!.get(w.key);
      if (w.version !== undefined) assert.equal(w.version, (prev?.version ?? 0) + 1, `conditional write of ${w.namespace}/${w.key}`);
      if (w.value === null) ns[w.namespace]!.delete(w.key);
      else ns[w.namespace]!.set(w.key, { value: structuredClone(w.value), version: (prev?.version ?? 0) + 1 });
    }
    for (const t of c.timers?.clear ?? []) timers.delete(t.id);
    for (const t of c.timers?.set ?? []) timers.set(t.id, t);
  };
  return { view, apply, timers, ns };
}

const OPTS = { id: 'watchdog', pipeline: 'traces', retryAfterMs: 60_000, failureLimit: 20, openWork: false, startedAt: T0 - 3600_000 };

function logPage(...events: Parameters<typeof newWorkPage>[2][number]['event'][]): WorkPage {
  return newWorkPage(
    'traces',
    'sess-1',
    events.map((event, i) => ({ id: `${event.time}-${i}`, event })),
  );
}

function timerPage(run: string, due: number): WorkPage {
  return newTimerPage('traces', 'sess-1', [
    { id: `watchdog:retry:${run}`, owner: 'watchdog', partition: 'sess-1', due, payload: { partition: 'sess-1', run, deferrals: 0 }, version: 1 },
  ]);
}

/** What a page did, in a word: the provider events it added, else the timers it set, else '-'. */
function summary(p: WorkPage): string {
  const events = p.commit.outbox.flatMap((o) =>
    o.kind === 'work' && o.event.type.startsWith('dev.vigil.provider.')
      ? [`${o.event.type.slice('dev.vigil.provider.'.length)}:${(o.event.data as ProviderEventData).request_id}`]
      : [],
  );
  if (events.length) return events.join(',');
  const set = (p.commit.timers?.set ?? []).map((t) => `timer@+${t.due - T0}`);
  const cleared = (p.commit.timers?.clear ?? []).map((t) => `clear:${t.id}`);
  return [...set, ...cleared].join(',') || '-';
}

describe('watchdog operator (marble diagrams, virtual time)', () => {
  const scheduler = () => new TestScheduler((actual, expected) => assert.deepEqual(actual, expected));

  test('a temporary failure: a timer 60 s after it, then one retry when it fires', () => {
    const st = mapState();
    scheduler().run(({ cold, expectObservable }) => {
      const pages = cold('a 59999ms b', { a: logPage(failure({ run: 'R1', time: T0, ...ERRORS.server })), b: timerPage('R1', T0 + 60_000) });
      const out = pages.pipe(
        watchdog({ ...OPTS, now: () => T0 + 60_000 }, st.view),
        tap((p) => st.apply(p.commit)),
        map(summary),
      );
      expectObservable(out).toBe('a 59999ms b', { a: 'timer@+60000', b: 'retry:watchdog-retry:R1' });
    });
    const cp = st.ns.checkpoints!.get('sess-1')!.value as { version: number; state: string; attempts: Record<string, number> };
    assert.deepEqual([cp.version, cp.state, cp.attempts], [1, 'retried', { R1: 1 }]);
  });

  test("a rate limit: reported in the failure's own page, no timer; a login failure likewise", () => {
    const st = mapState();
    scheduler().run(({ cold, expectObservable }) => {
      const pages = cold('a 1s b', {
        a: logPage(failure({ run: 'R1', time: T0, ...ERRORS.rateLimit })),
        b: logPage(failure({ run: 'R2', time: T0 + 1000, ...ERRORS.login })),
      });
      expectObservable(
        pages.pipe(
          watchdog({ ...OPTS, now: () => T0 }, st.view),
          tap((p) => st.apply(p.commit)),
          map(summary),
        ),
      ).toBe('a 1s b', {
        a: 'report:watchdog-report:R1',
        b: 'report:watchdog-report:R2',
      });
    });
    assert.equal(st.timers.size, 0);
  });

  test('activity after the failure: the pending retry is cleared with its timer; the timer, fired anyway, does nothing', () => {
    const st = mapState();
    scheduler().run(({ cold, expectObservable }) => {
      const pages = cold('a 5s b 54999ms c', {
        a: logPage(failure({ run: 'R1', time: T0, ...ERRORS.server })),
        b: logPage(marker('model_request.ok', 'R1', T0 + 5000)),
        c: timerPage('R1', T0 + 60_000),
      });
      expectObservable(
        pages.pipe(
          watchdog({ ...OPTS, now: () => T0 + 60_000 }, st.view),
          tap((p) => st.apply(p.commit)),
          map(summary),
        ),
      ).toBe('a 5s b 54999ms c', {
        a: 'timer@+60000',
        b: 'clear:watchdog:retry:R1',
        c: '-',
      });
    });
    assert.equal(st.ns.checkpoints!.has('sess-1'), false);
  });
});

describe('watchdog policy through the pipeline runner (virtual clock, memory store)', () => {
  test('retry once: 60 s after the failure, at that time, never again', async () => {
    const sim = await simulate();
    await sim.send(
      marker('tool.ok', 'R1', T0 - 2000, { tool_name: 'read_file' }),
      failure({ run: 'R1', time: T0, ...ERRORS.server }),
      marker('turn.end', 'R1', T0 + 10, { status: 'ok', title: 'Fix the tests' }),
    );
    await sim.until(T0 + 59_999);
    assert.deepEqual(sim.events(), []);
    await sim.until(T0 + 60_000);
    const [retry, ...more] = sim.events();
    assert.deepEqual(more, []);
    assert.equal(retry!.type, 'dev.vigil.provider.retry');
    assert.equal(retry!.request_id, 'watchdog-retry:R1');
    assert.equal(retry!.committedAt, T0 + 60_000, 'fired at its due time');
    assert.equal(retry!.time, new Date(T0 + 60_000).toISOString());
    assert.deepEqual(
      {
        partition: retry!.partition,
        category: retry!.category,
        temporary: retry!.temporary,
        step: retry!.step,
        title: retry!.title,
        retried: retry!.retried,
        status: retry!.status_code,
      },
      { partition: 'sess-1', category: 'provider_error', temporary: true, step: 'read_file', title: 'Fix the tests', retried: false, status: 500 },
    );
    assert.match(retry!.prompt!, /Continue from where you left off, without redoing work/);
    await sim.until(T0 + 600_000);
    assert.equal(sim.events().length, 1, 'one retry, ever');
    assert.equal(sim.work(), 0, 'a handled provider failure opens no ordinary work');
  });

  test('two records of one failed run (a runtime retrying on its own): one retry, 60 s after the last', async () => {
    const sim = await simulate();
    await sim.send(failure({ run: 'R1', time: T0, ...ERRORS.overloaded }));
    await sim.send(failure({ run: 'R1', time: T0 + 20_000, ...ERRORS.overloaded }));
    await sim.until(T0 + 79_999);
    assert.deepEqual(sim.events(), []);
    await sim.until(T0 + 200_000);
    assert.deepEqual(
      sim.events().map((e) => [e.request_id, e.committedAt - T0]),
      [['watchdog-retry:R1', 80_000]],
    );
  });

  for (const [what, moved] of [
    ['a successful model request', marker('model_request.ok', 'R1', T0 + 5000)],
    ['a tool call', marker('tool.ok', 'R1', T0 + 5000, { tool_name: 'bash' })],
    ['a new prompt', marker('prompt', 'R2', T0 + 5000)],
    ['another turn that finished', marker('turn.end', 'R2', T0 + 5000, { status: 'ok' })],
    [
      "the failed turn's own end, with activity after the failure folded into it",
      marker('turn.end', 'R1', T0 + 5000, { status: 'ok', last_activity_ms: T0 + 4000 }),
    ],
  ] as const) {
    test(`skip when the conversation moved on: ${what}`, async () => {
      const sim = await simulate();
      await sim.send(failure({ run: 'R1', time: T0, ...ERRORS.server }));
      await sim.send(moved);
      await sim.until(T0 + 120_000);
      assert.deepEqual(sim.events(), []);
      assert.equal((await sim.store.status()).pipelines[0]!.timers.pending, 0, 'the timer was cleared with the checkpoint');
    });
  }

  test("not moved on: the failed turn's own end (the agent caught the error and stopped)", async () => {
    const sim = await simulate();
    await sim.send(failure({ run: 'R1', time: T0, ...ERRORS.server }), marker('turn.end', 'R1', T0 + 100, { status: 'ok' }));
    await sim.until(T0 + 60_000);
    assert.deepEqual(
      sim.events().map((e) => e.request_id),
      ['watchdog-retry:R1'],
    );
  });

  test('activity of other conversations does not move this one on', async () => {
    const sim = await simulate();
    await sim.send(failure({ run: 'R1', time: T0, ...ERRORS.server }));
    await sim.send(marker('model_request.ok', 'X1', T0 + 5000, {}, 'sess-other'), marker('turn.end', 'X1', T0 + 6000, { status: 'ok' }, 'sess-other'));
    await sim.until(T0 + 60_000);
    assert.deepEqual(
      sim.events().map((e) => e.request_id),
      ['watchdog-retry:R1'],
    );
  });

  test('a newer failed run replaces the pending retry: the older is skipped, the newer retried at its own time', async () => {
    const sim = await simulate();
    await sim.send(failure({ run: 'R1', time: T0, ...ERRORS.server }));
    await sim.send(failure({ run: 'R2', time: T0 + 30_000, ...ERRORS.overloaded }));
    await sim.until(T0 + 200_000);
    assert.deepEqual(
      sim.events().map((e) => [e.request_id, e.committedAt - T0]),
      [['watchdog-retry:R2', 90_000]],
    );
  });

  test('report after a second failure: the failure after the retry reports the chain once, "After one automatic retry."', async () => {
    const sim = await simulate();
    await sim.send(marker('turn.end', 'R0', T0 - 60_000, { status: 'ok', title: 'Refactor the parser' }));
    await sim.send(failure({ run: 'R1', time: T0, ...ERRORS.server }));
    await sim.until(T0 + 60_000);
    // The agent host re-prompts; the new turn fails again.
    await sim.send(marker('tool.ok', 'R2', T0 + 65_000, { tool_name: 'run_tests' }), failure({ run: 'R2', time: T0 + 70_000, ...ERRORS.overloaded }));
    await sim.until(T0 + 600_000);
    const events = sim.events();
    assert.deepEqual(
      events.map((e) => [e.type, e.request_id]),
      [
        ['dev.vigil.provider.retry', 'watchdog-retry:R1'],
        ['dev.vigil.provider.report', 'watchdog-report:R1'],
      ],
    );
    const report = events[1]!;
    assert.equal(report.retried, true);
    assert.equal(report.category, 'overloaded');
    assert.equal(
      report.line,
      '[run failed] #sess-1 "Refactor the parser": 529 Overloaded. Last step: run_tests. After one automatic retry. Anthropic is overloaded: this passes, retrying later usually works.',
    );
    assert.equal(report.time, new Date(T0 + 70_000).toISOString());
    assert.equal(report.failed_at, new Date(T0).toISOString(), 'the chain is named by its first failure');
  });

  // The retry's run ends with its root span unset (the agent caught the error): its turn.end is not
  // the chain's good outcome, whichever is judged first. The JS SDK times a span from Date.now() at
  // its start (whole milliseconds) plus the monotonic clock's duration, so a child span's end can
  // read up to a millisecond after its parent's: the failure comes after its own turn's end.
  const retriedRunFails: Array<[string, Array<Parameters<Sim['send']>>]> = [
    [
      'its failed model request timed 1 ms after its own turn.end, in one page',
      [[failure({ run: 'R2', time: T0 + 70_001, ...ERRORS.server }), marker('turn.end', 'R2', T0 + 70_000, { status: 'ok' })]],
    ],
    [
      "its own turn.end in the failure's millisecond, listed first",
      [[marker('turn.end', 'R2', T0 + 70_000, { status: 'ok' }), failure({ run: 'R2', time: T0 + 70_000, ...ERRORS.server })]],
    ],
    [
      'its turn.end judged a page before its failure',
      [[marker('turn.end', 'R2', T0 + 70_001, { status: 'ok' })], [failure({ run: 'R2', time: T0 + 70_000, ...ERRORS.server })]],
    ],
  ];
  for (const [order, pages] of retriedRunFails) {
    test(`the retry's run fails, ${order}: the chain is reported, not retried again`, async () => {
      const sim = await simulate();
      await sim.send(failure({ run: 'R1', time: T0, ...ERRORS.server }));
      await sim.until(T0 + 60_000);
      for (const page of pages) await sim.send(...page);
      await sim.until(T0 + 600_000);
      assert.deepEqual(
        sim.events().map((e) => [e.request_id, e.retried]),
        [
          ['watchdog-retry:R1', false],
          ['watchdog-report:R1', true],
        ],
      );
    });
  }

  test('a finished turn after the retry ends the chain: a later failure of another run starts a new one', async () => {
    const sim = await simulate();
    await sim.send(failure({ run: 'R1', time: T0, ...ERRORS.server }));
    await sim.until(T0 + 60_000);
    await sim.send(marker('turn.end', 'R2', T0 + 66_000, { status: 'ok' }));
    await sim.send(failure({ run: 'R3', time: T0 + 300_000, ...ERRORS.server }));
    // A second record of R3's failure, and a late one of R2's: R3 is judged, R2 ended a chain that R3 replaced.
    await sim.send(failure({ run: 'R3', time: T0 + 300_000, ...ERRORS.server }), failure({ run: 'R2', time: T0 + 65_000, ...ERRORS.server }));
    await sim.until(T0 + 400_000);
    assert.deepEqual(
      sim.events().map((e) => e.request_id),
      ['watchdog-retry:R1', 'watchdog-retry:R3'],
    );
  });

  test('a successful model request after the retry ends the chain: a later failure starts a new one', async () => {
    const sim = await simulate();
    await sim.send(failure({ run: 'R1', time: T0, ...ERRORS.server }));
    await sim.until(T0 + 60_000);
    await sim.send(marker('model_request.ok', 'R2', T0 + 65_000), marker('turn.end', 'R2', T0 + 66_000, { status: 'ok' }));
    await sim.send(failure({ run: 'R3', time: T0 + 300_000, ...ERRORS.server }));
    await sim.until(T0 + 400_000);
    assert.deepEqual(
      sim.events().map((e) => e.request_id),
      ['watchdog-retry:R1', 'watchdog-retry:R3'],
    );
  });

  test('never retry a rate limit: one report at once, nothing later', async () => {
    const sim = await simulate();
    await sim.send(failure({ run: 'R1', time: T0, ...ERRORS.rateLimit }));
    assert.deepEqual(
      sim.events().map((e) => [e.type, e.committedAt - T0]),
      [['dev.vigil.provider.report', 0]],
    );
    const [r] = sim.events();
    assert.equal(r!.category, 'rate_limited');
    assert.equal(r!.retried, false);
    assert.match(r!.hint, /OpenAI: wait about 2\.4s/);
    await sim.until(T0 + 600_000);
    assert.equal(sim.events().length, 1);
    assert.equal((await sim.store.status()).pipelines[0]!.timers.pending, 0);
  });

  test('a tool call that ended in the same millisecond as the failure is its last step, whatever the page order', async () => {
    // Seen under load: the failure listed before the tool call it followed, both at one millisecond.
    const sim = await simulate();
    await sim.send(failure({ run: 'R1', time: T0, ...ERRORS.rateLimit }), marker('tool.ok', 'R1', T0, { tool_name: 'read_json' }));
    const [r, ...more] = sim.events();
    assert.deepEqual(more, []);
    assert.equal(r!.step, 'read_json');
  });

  test('report a login failure at once, with the hint naming the provider to log in to', async () => {
    const sim = await simulate();
    await sim.send(failure({ run: 'R1', time: T0, ...ERRORS.login }));
    const [r, ...more] = sim.events();
    assert.deepEqual(more, []);
    assert.equal(r!.request_id, 'watchdog-report:R1');
    assert.equal(r!.category, 'not_logged_in');
    assert.equal(
      r!.line,
      '[run failed] #sess-1 "Untitled": Invalid API key · Please run /login. Last step: model request. Log in to Anthropic again (Claude Code: /login).',
    );
    await sim.send(failure({ run: 'R2', time: T0 + 1000, ...ERRORS.auth }));
    assert.deepEqual(
      sim
        .events()
        .map((e) => [e.request_id, e.category])
        .slice(1),
      [['watchdog-report:R2', 'invalid_credentials']],
    );
  });

  test("a runtime's own pending checkpoint suppresses vigil's retry; a finished turn clears it", async () => {
    const sim = await simulate();
    const checkpoint = { version: 1, resume_at_ms: T0 + 30_000, attempts: { 'anthropic:claude': 1 } };
    await sim.send(
      failure({ run: 'R1', time: T0, ...ERRORS.overloaded }),
      marker('retry.checkpoint', 'R1', T0 + 1, { detail: checkpoint, raw_size: JSON.stringify(checkpoint).length }),
    );
    await sim.until(T0 + 120_000);
    assert.deepEqual(sim.events(), [], 'the runtime retries on its own: vigil does not retry twice');
    // The runtime's turn finished (its checkpoint is cleared); a later failure gets vigil's retry.
    await sim.send(marker('turn.end', 'R1b', T0 + 130_000, { status: 'ok' }));
    await sim.send(failure({ run: 'R2', time: T0 + 200_000, ...ERRORS.overloaded }));
    await sim.until(T0 + 300_000);
    assert.deepEqual(
      sim.events().map((e) => e.request_id),
      ['watchdog-retry:R2'],
    );
  });

  test('a runtime checkpoint pending when the timer fires (sent after the failure) suppresses the retry too', async () => {
    const sim = await simulate();
    await sim.send(failure({ run: 'R1', time: T0, ...ERRORS.server }));
    await sim.send(marker('retry.checkpoint', 'R1', T0 - 1, { detail: { version: 1, resume_at_ms: T0 + 90_000, attempts: {} }, raw_size: 50 }));
    await sim.until(T0 + 120_000);
    assert.deepEqual(sim.events(), []);
  });

  test('a runtime checkpoint of version 2 or with 65 counters: a clear error, and the retry deferred (not dropped) until a finished turn', async () => {
    for (const detail of [
      { version: 2, resume_at_ms: T0 + 1000 },
      { version: 1, attempts: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 1])) },
    ]) {
      const sim = await simulate();
      await sim.send(failure({ run: 'R1', time: T0, ...ERRORS.server }), marker('retry.checkpoint', 'R1', T0 + 1, { detail, raw_size: 100 }));
      await sim.until(T0 + 200_000);
      assert.deepEqual(sim.events(), []);
      const errors = sim.logger.entries.filter((e) => e.level === 'error').map((e) => String(e.msg));
      assert.ok(
        errors.some((m) => /version is 2; this vigil reads version 1 only|65 attempt counters, over the bound of 64/.test(m)),
        errors.join('\n'),
      );
      assert.ok(
        errors.some((m) => /retry is deferred to/.test(m)),
        'deferred, said so',
      );
      assert.equal((await sim.store.status()).pipelines[0]!.timers.pending, 1, 'the retry is still pending');
      await sim.send(marker('turn.end', 'R2', T0 + 210_000, { status: 'ok' }));
      await sim.until(T0 + 400_000);
      assert.deepEqual(sim.events(), [], 'a finished turn cleared it: the conversation moved on');
      assert.equal((await sim.store.status()).pipelines[0]!.timers.pending, 0);
    }
  });

  test('history: a failure older than the first start is judged and never acted on', async () => {
    const sim = await simulate({ startedAt: T0 });
    await sim.send(failure({ run: 'old', time: T0 - 1000, ...ERRORS.auth }), failure({ run: 'old2', time: T0 - 500, ...ERRORS.server }));
    await sim.until(T0 + 120_000);
    assert.deepEqual(sim.events(), []);
    await sim.send(failure({ run: 'new', time: T0 + 1000, ...ERRORS.auth }));
    assert.deepEqual(
      sim.events().map((e) => e.request_id),
      ['watchdog-report:new'],
    );
  });

  test('open_work: handled provider failures also go on to recurrence', async () => {
    const off = await simulate();
    await off.send(failure({ run: 'R1', time: T0, ...ERRORS.auth }));
    assert.equal(off.work(), 0);
    const on = await simulate({ openWork: true });
    await on.send(failure({ run: 'R1', time: T0, ...ERRORS.auth }));
    assert.equal(on.work(), 1);
    assert.equal(on.events().length, 1);
  });

  test('the recent reports: newest first by failure time, at most failure_limit', async () => {
    const sim = await simulate({ failureLimit: 3 });
    for (const i of [0, 4, 1, 3, 2]) await sim.send(failure({ run: `R${i}`, time: T0 + i * 1000, ...ERRORS.auth }));
    const { watchdogFactory } = await import('../src/processors/watchdog/factory.ts');
    const { stateClient } = await import('../src/store/state-client.ts');
    const status = await watchdogFactory.status!(stateClient(sim.store, 'watchdog', { owner: 'watchdog' }), {
      retry_after: 60_000,
      failure_limit: 3,
      open_work: false,
    });
    assert.deepEqual(
      status.failures!.map((f) => f.run),
      ['R4', 'R3', 'R2'],
    );
    assert.equal(status.failures![0]!.failed_at_ms, T0 + 4000);
    assert.deepEqual(status.counts, { report: 5 });
  });
});

void memoryLogger;

describe('the newest lists (tools, turn ends)', () => {
  test('withNewest keeps what a stable sort of the list and the new item, cut to the newest, keeps', () => {
    const item = fc.record({ ms: fc.integer({ min: 0, max: 20 }), id: fc.nat() });
    checkProperty(
      fc.property(fc.array(item, { maxLength: 12 }), item, fc.integer({ min: 1, max: 10 }), fc.boolean(), (xs, x, max, sorted) => {
        const list = sorted ? [...xs].sort((a, b) => a.ms - b.ms) : xs;
        const before = JSON.stringify(list);
        assert.deepEqual(withNewest(list, x, max), [...list, x].sort((a, b) => a.ms - b.ms).slice(-max));
        assert.equal(JSON.stringify(list), before, 'the list given is not changed');
      }),
      { numRuns: 500 },
    );
  });
});
