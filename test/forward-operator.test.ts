import assert from 'node:assert/strict';
import { test } from 'node:test';
import { map } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import type { ForwardRecord } from '../src/model/forward.ts';
import { forwardRecords } from '../src/processors/forward/operator.ts';
import type { WorkPage } from '../src/processors/page.ts';
import { diagnosedPage } from './helpers/pages.ts';

const rec = (name: string): ForwardRecord => ({
  signal: 'traces',
  resource: { 'service.name': 'agent' },
  scope: { name: 's', version: '', attributes: {} },
  span: {
    traceId: 'a'.repeat(32),
    spanId: 'b'.repeat(16),
    parentSpanId: undefined,
    traceState: '',
    name,
    kind: 1,
    startTimeUnixNano: '1',
    startTimeMs: 0,
    endTimeUnixNano: '2',
    endTimeMs: 0,
    attributes: {},
    events: [],
    links: [],
    status: { code: 0, message: '' },
  },
});

function page(): WorkPage {
  const p = diagnosedPage([{ time: 0 }, { time: 1, normal: true }, { time: 2, normal: true }]);
  p.items[0]!.entry.event.forward = rec('failing');
  p.items[0]!.occurrence = { occurrenceId: 'o_1', groupKey: 'g_1', decision: 'BurstCoalesced', workId: null, revision: 'r', count: 1 };
  p.items[1]!.entry.event.forward = rec('ok');
  p.items[1]!.entry.event.forwardOnly = true;
  return p;
}

test('forwardRecords puts every carried record in the outbox, enriching only those with failure evidence', () => {
  const scheduler = new TestScheduler((a, e) => assert.deepStrictEqual(a, e));
  scheduler.run(({ cold, expectObservable }) => {
    const out = cold('a-b|', { a: page(), b: diagnosedPage([{ time: 5 }]) }).pipe(
      forwardRecords(),
      map((p) =>
        p.commit.outbox
          .map((o) =>
            o.kind === 'forward'
              ? `${(o.record as ForwardRecord & { signal: 'traces' }).span.name}:${JSON.stringify((o.record as { enrichment?: object }).enrichment ?? null)}`
              : o.kind,
          )
          .join(' '),
      ),
    );
    expectObservable(out).toBe('a-b|', {
      a: 'failing:{"vigil.classification":"ExecutionFailure","vigil.signature":"ZeroDivisionError: division by zero","vigil.fingerprint":"fp:zde","vigil.occurrence.id":"o_1","vigil.group.key":"g_1","vigil.decision":"BurstCoalesced"} ok:null',
      b: '',
    });
  });
});

test('forward item ids are stable per received record', () => {
  const a = page();
  const b = page();
  b.items[0]!.entry.event.eventId = a.items[0]!.entry.event.eventId;
  const collect = (p: WorkPage) => {
    let r: WorkPage | undefined;
    new TestScheduler(() => undefined).run(({ cold }) =>
      cold('a|', { a: p })
        .pipe(forwardRecords())
        .subscribe((x) => (r = x)),
    );
    return r!.commit.outbox.map((o) => o.id);
  };
  assert.equal(collect(a)[0], collect(b)[0], 'the same received record, the same id');
  assert.notEqual(collect(a)[0], collect(page())[0], 'another record, another id');
});

test('occurrenceRecords adds one item per counted occurrence, none for rejected ones', async () => {
  const { occurrenceRecords } = await import('../src/processors/occurrences/operator.ts');
  const p = diagnosedPage([{ time: 0 }, { time: 1 }, { time: 2, normal: true }]);
  p.items[0]!.occurrence = { occurrenceId: 'o_1', groupKey: 'g', decision: 'BurstCoalesced', workId: null, revision: 'r', count: 1 };
  p.items[1]!.occurrence = { occurrenceId: 'o_2', groupKey: 'g', decision: 'Reject', workId: null, revision: 'r', count: 0 };
  const scheduler = new TestScheduler((a, e) => assert.deepStrictEqual(a, e));
  scheduler.run(({ cold, expectObservable }) => {
    const out = cold('a|', { a: p }).pipe(
      occurrenceRecords(),
      map((x) => x.commit.outbox.map((o) => (o.kind === 'occurrence' ? `${o.id}:${o.occurrence.decision}:${o.occurrence.count}` : o.kind)).join(' ')),
    );
    expectObservable(out).toBe('a|', { a: 'o_1:BurstCoalesced:1' });
  });
});
