import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { map, of, tap, type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { UNKNOWN_REVISION, UNRESOLVED_REVISION } from '../src/model/identity.ts';
import { isOccurrenceEvent, type Decision } from '../src/model/work.ts';
import { decide } from '../src/processors/recurrence/decide.ts';
import { recurrence, type RecurrenceOptions } from '../src/processors/recurrence/operator.ts';
import type { WorkPage } from '../src/processors/page.ts';
import { diagnosedPage, mapState } from './helpers/pages.ts';

const S = 1000;
const defaults: RecurrenceOptions = { minRecurrence: 2, groupingWindow: 60 * S, maxPerTurn: 5, scope: 'service' };

describe('decide (DESIGN 3.2)', () => {
  const rows: Array<[string, Partial<RecurrenceOptions>, number, number | undefined, number, Decision]> = [
    ['min_recurrence 0 rejects', { minRecurrence: 0 }, 5, 0, 1, 'Reject'],
    ['first occurrence below min', {}, 1, undefined, 0, 'BurstCoalesced'],
    ['first occurrence at min 1', { minRecurrence: 1 }, 1, undefined, 0, 'BurstThresholdReached'],
    ['second within window', {}, 2, 0, 10 * S, 'BurstThresholdReached'],
    ['second at exactly the window', {}, 2, 0, 60 * S, 'BurstThresholdReached'],
    ['second 1 ms beyond the window', {}, 2, 0, 60 * S + 1, 'ChronicRecurrence'],
    ['beyond the window below min', { minRecurrence: 3 }, 2, 0, 3600 * S, 'BurstCoalesced'],
    ['within the window below min', { minRecurrence: 3 }, 2, 0, 1 * S, 'BurstCoalesced'],
    ['same instant', {}, 2, 5 * S, 5 * S, 'BurstThresholdReached'],
    ['late arrival (negative gap) counts as beyond', {}, 2, 10 * S, 5 * S, 'ChronicRecurrence'],
    ['grouping_window 0: the first occurrence is still a burst', { groupingWindow: 0, minRecurrence: 1 }, 1, undefined, 0, 'BurstThresholdReached'],
    ['grouping_window 0: a repeat at the same instant is chronic (a burst needs window > 0)', { groupingWindow: 0 }, 2, 5 * S, 5 * S, 'ChronicRecurrence'],
    ['grouping_window 0 below min', { groupingWindow: 0, minRecurrence: 3 }, 2, 5 * S, 5 * S, 'BurstCoalesced'],
  ];
  for (const [name, policy, total, lastSeen, now, expected] of rows) {
    test(name, () => assert.equal(decide({ ...defaults, ...policy }, total, lastSeen, now), expected));
  }
});

/** Runs pages through the operator and a commit stand-in, in virtual time, summarising each page. */
function harness(opts: RecurrenceOptions, loadDelay = '') {
  const state = mapState();
  const scheduler = new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected));
  const answer = <T>(value: T): Observable<T> => (loadDelay ? scheduler.createColdObservable(`${loadDelay}(a|)`, { a: value }) : of(value));
  const operator = recurrence(opts, {
    loadGroups: (keys) => answer(state.pick(state.groups, keys)),
    loadTurns: (_p, ids) => answer(state.pick(state.turns, ids)),
    lookupRevisions: (ids) => answer(state.pick(state.revisions, ids)),
  });
  const summarise = (p: WorkPage) =>
    [
      p.items.map((i) => i.occurrence?.decision ?? '-').join(','),
      p.commit.outbox
        .map((o) => (o.kind !== 'work' || !isOccurrenceEvent(o.event) ? o.kind : `${o.event.type.replace('dev.vigil.work.', '')}#${o.event.data.count}`))
        .join(','),
    ].join(' | ');
  const run = (source: Observable<WorkPage>) =>
    source.pipe(
      operator,
      tap((p) => state.apply(p.commit)),
      map(summarise),
    );
  return { state, scheduler, run };
}

describe('recurrence operator (marble tests, virtual time)', () => {
  test('a repeated failure within the window reaches the threshold once; a single one only groups', () => {
    const { scheduler, run } = harness(defaults);
    scheduler.run(({ cold, expectObservable }) => {
      const pages = cold('a-b-c|', {
        a: diagnosedPage([{ time: 0 }]),
        b: diagnosedPage([{ time: 10 * S }]),
        c: diagnosedPage([{ time: 20 * S, signature: 'UserWarning: other' }]),
      });
      expectObservable(run(pages)).toBe('a-b-c|', {
        a: 'BurstCoalesced | ',
        b: 'BurstThresholdReached | created#2',
        c: 'BurstCoalesced | ',
      });
    });
  });

  test('window boundary: exactly 60 s is a burst, 60 s + 1 ms is chronic', () => {
    for (const [gap, decision] of [
      [60 * S, 'BurstThresholdReached'],
      [60 * S + 1, 'ChronicRecurrence'],
    ] as const) {
      const { scheduler, run } = harness(defaults);
      scheduler.run(({ cold, expectObservable }) => {
        const pages = cold('ab|', { a: diagnosedPage([{ time: 1_000_000 }]), b: diagnosedPage([{ time: 1_000_000 + gap }]) });
        expectObservable(run(pages)).toBe('ab|', { a: 'BurstCoalesced | ', b: `${decision} | created#2` });
      });
    }
  });

  test('chronic recurrence over hours with min_recurrence 3', () => {
    const { scheduler, run } = harness({ ...defaults, minRecurrence: 3 });
    scheduler.run(({ cold, expectObservable }) => {
      const pages = cold('abc|', {
        a: diagnosedPage([{ time: 0 }]),
        b: diagnosedPage([{ time: 3600 * S }]),
        c: diagnosedPage([{ time: 7200 * S }]),
      });
      expectObservable(run(pages)).toBe('abc|', { a: 'BurstCoalesced | ', b: 'BurstCoalesced | ', c: 'ChronicRecurrence | created#3' });
    });
  });

  test('min_recurrence 0 rejects every occurrence and writes no group', () => {
    const { scheduler, run, state } = harness({ ...defaults, minRecurrence: 0 });
    scheduler.run(({ cold, expectObservable }) => {
      const pages = cold('a|', { a: diagnosedPage([{ time: 0 }, { time: 1 }, { time: 2 }]) });
      expectObservable(run(pages)).toBe('a|', { a: 'Reject,Reject,Reject | ' });
    });
    assert.equal(state.groups.size, 0);
  });

  test('an open work item is updated at most once per page with the count after the page', () => {
    const { scheduler, run } = harness(defaults);
    scheduler.run(({ cold, expectObservable }) => {
      const pages = cold('a-b|', {
        a: diagnosedPage([{ time: 0 }, { time: 1 * S }, { time: 2 * S }, { time: 3 * S }]),
        b: diagnosedPage([{ time: 4 * S }, { time: 5 * S }]),
      });
      expectObservable(run(pages)).toBe('a-b|', {
        a: 'BurstCoalesced,BurstThresholdReached,BurstThresholdReached,BurstThresholdReached | created#2,updated#4',
        b: 'BurstThresholdReached,BurstThresholdReached | updated#6',
      });
    });
  });

  test('max_per_turn caps work created in one turn, across pages of the same trace', () => {
    const { scheduler, run } = harness({ ...defaults, minRecurrence: 1, maxPerTurn: 2 });
    const f = (sig: string, time: number) => ({ time, signature: sig, turnId: 'trace-1' });
    scheduler.run(({ cold, expectObservable }) => {
      const pages = cold('ab|', {
        a: diagnosedPage([f('A', 0), f('B', 1)]),
        b: diagnosedPage([f('C', 2), { ...f('D', 3), turnId: 'trace-2' }]),
      });
      expectObservable(run(pages)).toBe('ab|', {
        a: 'BurstThresholdReached,BurstThresholdReached | created#1,created#1',
        b: 'BurstThresholdReached,BurstThresholdReached | created#1',
      });
    });
  });

  test('loads that answer later in virtual time keep pages in order', () => {
    const { scheduler, run } = harness(defaults, '--');
    scheduler.run(({ cold, expectObservable }) => {
      const pages = cold('ab|', { a: diagnosedPage([{ time: 0 }]), b: diagnosedPage([{ time: 1 }]) });
      // Groups and turns load in parallel (two frames); page b waits for page a (concatMap).
      expectObservable(run(pages)).toBe('--a-(b|)', { a: 'BurstCoalesced | ', b: 'BurstThresholdReached | created#2' });
    });
  });

  test('non-failures advance without occurrences', () => {
    const { scheduler, run } = harness(defaults);
    scheduler.run(({ cold, expectObservable }) => {
      const pages = cold('a|', {
        a: diagnosedPage([
          { time: 0, normal: true },
          { time: 1, normal: true },
        ]),
      });
      expectObservable(run(pages)).toBe('a|', { a: '-,- | ' });
    });
  });
});

describe('recurrence identity and revision (DESIGN 3.3)', () => {
  function occurrences(pages: WorkPage[], opts = defaults) {
    const state = mapState();
    const out: WorkPage[] = [];
    const operator = recurrence(opts, {
      loadGroups: (keys) => of(state.pick(state.groups, keys)),
      loadTurns: (_p, ids) => of(state.pick(state.turns, ids)),
      lookupRevisions: (ids) => of(state.pick(state.revisions, ids)),
    });
    for (const p of pages) {
      of(p)
        .pipe(operator)
        .subscribe((x) => {
          state.apply(x.commit);
          out.push(x);
        });
    }
    return out.flatMap((p) => p.items.map((i) => i.occurrence));
  }

  test('revision comes from an earlier execution.started, then the store, then payload/resource; else unresolved', () => {
    const occ = occurrences([
      diagnosedPage([
        { time: 0, kind: 'execution.started', executionId: 'x1', payload: { revision: 'r-started' } },
        { time: 1, executionId: 'x1' },
      ]),
      diagnosedPage([{ time: 2, executionId: 'x1' }]),
      diagnosedPage([{ time: 3, executionId: 'x2', revision: 'r-resource' }]),
      diagnosedPage([{ time: 4, executionId: 'x3' }]),
      diagnosedPage([{ time: 5 }]),
    ]);
    assert.deepEqual(
      occ.filter(Boolean).map((o) => o!.revision),
      ['r-started', 'r-started', 'r-resource', UNRESOLVED_REVISION, UNKNOWN_REVISION],
    );
  });

  test('ids are stable: the same evidence gives the same occurrence id and group key', () => {
    const a = occurrences([diagnosedPage([{ id: 'same', time: 0 }])]);
    const b = occurrences([diagnosedPage([{ id: 'same', time: 0 }])]);
    assert.equal(a[0]!.occurrenceId, b[0]!.occurrenceId);
    assert.equal(a[0]!.groupKey, b[0]!.groupKey);
  });

  test('scope: service groups across sessions; scope: session keeps them apart', () => {
    const pages = () => [diagnosedPage([{ time: 0 }], 's1'), diagnosedPage([{ time: 1 }], 's2')];
    const byService = occurrences(pages());
    assert.equal(byService[0]!.groupKey, byService[1]!.groupKey);
    assert.equal(byService[1]!.decision, 'BurstThresholdReached');
    const bySession = occurrences(pages(), { ...defaults, scope: 'session' });
    assert.notEqual(bySession[0]!.groupKey, bySession[1]!.groupKey);
    assert.equal(bySession[1]!.decision, 'BurstCoalesced');
  });

  test('different revisions of the same failure are different groups', () => {
    const occ = occurrences([
      diagnosedPage([
        { time: 0, revision: 'v1' },
        { time: 1, revision: 'v2' },
      ]),
    ]);
    assert.notEqual(occ[0]!.groupKey, occ[1]!.groupKey);
  });
});

describe('recurrence: one failure, one occurrence (marble tests, virtual time)', () => {
  /** A harness whose state also keeps the `occurrences` namespace, shared by the pipelines it runs. */
  function sharedHarness(opts: RecurrenceOptions) {
    const state = mapState();
    const counted = new Map<string, { value: unknown; version: number }>();
    const scheduler = new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected));
    const operator = recurrence(opts, {
      loadGroups: (keys) => of(state.pick(state.groups, keys)),
      loadTurns: (_p, ids) => of(state.pick(state.turns, ids)),
      lookupRevisions: (ids) => of(state.pick(state.revisions, ids)),
      loadCounted: (ids) => of(state.pick(counted, ids)),
    });
    const events: Array<{ pipeline: string; id: string; type: string; count: number; decision: string; related: string[] }> = [];
    const run = (source: Observable<WorkPage>) =>
      source.pipe(
        operator,
        tap((p) => {
          state.apply(p.commit);
          for (const w of p.commit.state ?? []) {
            const cur = counted.get(w.key)?.version ?? 0;
            assert.equal(w.version, cur + 1, `a conditional write of ${w.key} on the version it read`);
            counted.set(w.key, { value: w.value, version: w.version! });
          }
          for (const o of p.commit.outbox) {
            if (o.kind !== 'work' || !isOccurrenceEvent(o.event)) continue;
            events.push({
              pipeline: p.pipeline,
              id: o.id,
              type: o.event.type.replace('dev.vigil.work.', ''),
              count: o.event.data.count,
              decision: o.event.data.decision,
              related: (o.event.data.evidence.related ?? []).map((r) => r.event_id),
            });
          }
        }),
        map((p) => p.items.map((i) => i.occurrence?.decision ?? '-').join(',')),
      );
    return { scheduler, run, events, state };
  }

  /** A page whose second item is evidence of the first (as the correlation log releases them). */
  function withEvidence(pipeline: string) {
    const page = diagnosedPage(
      [
        { id: 'span-1', time: 0 },
        { id: 'log-1', time: 5 },
      ],
      'session-1',
      pipeline,
    );
    page.items[0]!.entry.event.correlation = {
      anchor: 'span-1',
      counted: 'span-1',
      related: [{ eventId: 'log-1', source: 'otlp.logs', kind: 'execution.completed', excerpt: 'Error: boom' }],
    };
    page.items[1]!.entry.event.correlation = { anchor: 'span-1', counted: 'span-1' };
    return page;
  }

  test('a record that is evidence of another is not counted; the counted one lists it', () => {
    const { scheduler, run, events } = sharedHarness({ ...defaults, minRecurrence: 1 });
    scheduler.run(({ cold, expectObservable }) => {
      expectObservable(run(cold('a|', { a: withEvidence('traces') }))).toBe('a|', { a: 'BurstThresholdReached,-' });
    });
    assert.deepEqual(events, [{ pipeline: 'traces', id: events[0]!.id, type: 'created', count: 1, decision: 'BurstThresholdReached', related: ['log-1'] }]);
  });

  test('two pipelines with the same records: counted once; the second delivers the same events; a repeated record counts nothing', () => {
    const { scheduler, run, events, state } = sharedHarness(defaults);
    const pageOf = (pipeline: string, specs: Array<{ id: string; time: number }>) => diagnosedPage(specs, 'session-1', pipeline);
    scheduler.run(({ cold, expectObservable }) => {
      const pages = cold('a-b-c-d-e|', {
        a: pageOf('logs', [{ id: 'r1', time: 0 }]),
        b: pageOf('logs', [
          { id: 'r2', time: 1 * S },
          { id: 'r3', time: 2 * S },
        ]),
        c: pageOf('logs/b', [
          { id: 'r1', time: 0 },
          { id: 'r2', time: 1 * S },
        ]),
        d: pageOf('logs/b', [{ id: 'r3', time: 2 * S }]),
        e: pageOf('logs', [{ id: 'r3', time: 2 * S }]),
      });
      expectObservable(run(pages)).toBe('a-b-c-d-e|', {
        a: 'BurstCoalesced',
        b: 'BurstThresholdReached,BurstThresholdReached',
        c: 'BurstCoalesced,BurstThresholdReached',
        d: 'BurstThresholdReached',
        e: 'BurstThresholdReached',
      });
    });
    const of2 = (p: string) => events.filter((e) => e.pipeline === p).map(({ pipeline: _p, ...e }) => e);
    assert.deepEqual(of2('logs'), [
      { id: of2('logs')[0]!.id, type: 'created', count: 2, decision: 'BurstThresholdReached', related: [] },
      { id: of2('logs')[1]!.id, type: 'updated', count: 3, decision: 'BurstThresholdReached', related: [] },
    ]);
    assert.deepEqual(of2('logs/b'), of2('logs'), 'the same events, by id and content');
    assert.equal([...state.groups.values()][0]!.count, 3, 'three records, counted once each');
  });
});
