/**
 * The correlation runner's kept entries (src/correlation/kept-entries.ts): after any sequence of
 * reads appended and prefixes released, a trace's index names exactly the positions of its kept
 * entries that may be failure records, ascending — what planRelease would find by a scan.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { isTraceFailure } from '../src/correlation/failure-keys.ts';
import { KeptEntries } from '../src/correlation/kept-entries.ts';
import type { AgentEvent } from '../src/model/event.ts';
import type { LogEntry } from '../src/store/types.ts';
import { checkProperty } from './helpers/random.ts';

const TRACES = ['t1', 't2', 't3'];

/** A record of a trace (or of none): a failed execution, a failed tool result, or a record that is no failure. */
function entry(id: number, trace: number, kind: number): LogEntry {
  const traceId = trace < TRACES.length ? TRACES[trace] : undefined;
  const event = (kind === 0
    ? { kind: 'execution.completed', payload: { state: 'error' } }
    : kind === 1
      ? { kind: 'tool.result', payload: { type: 'tool_result', status: 'error' } }
      : { kind: 'execution.completed', payload: { state: 'ok' } }) as unknown as AgentEvent;
  return { id: String(id), event: { ...event, eventId: `e${id}`, source: 'otlp.traces', traceId } as AgentEvent };
}

/** The positions a scan finds. */
function scan(entries: readonly LogEntry[], traceId: string): number[] {
  const out: number[] = [];
  entries.forEach((e, i) => {
    if (e.event.traceId === traceId && isTraceFailure(e.event)) out.push(i);
  });
  return out;
}

test('property: the index by trace is what a scan of the kept entries finds, through reads and releases', () => {
  const op = fc.oneof(
    fc.record({ add: fc.array(fc.tuple(fc.integer({ min: 0, max: TRACES.length }), fc.integer({ min: 0, max: 2 })), { maxLength: 6 }) }),
    fc.record({ drop: fc.integer({ min: 0, max: 8 }) }),
    fc.constant({ clear: true as const }),
  );
  checkProperty(
    fc.property(fc.array(op, { maxLength: 30 }), (ops) => {
      const kept = new KeptEntries();
      const mirror: LogEntry[] = [];
      let id = 0;
      for (const o of ops) {
        if ('add' in o) {
          const more = o.add.map(([trace, kind]) => entry(++id, trace, kind));
          kept.add(more);
          mirror.push(...more);
        } else if ('drop' in o) {
          const n = Math.min(o.drop, mirror.length);
          kept.drop(n);
          mirror.splice(0, n);
        } else {
          kept.clear();
          mirror.length = 0;
        }
        assert.deepEqual(kept.entries, mirror);
        assert.equal(kept.length, mirror.length);
        for (const t of TRACES) assert.deepEqual(kept.indicesOf(t), scan(mirror, t), `trace ${t} after ${JSON.stringify(o)}`);
      }
    }),
    { numRuns: 300 },
  );
});

test('the index does not hold what was released or cleared', () => {
  const kept = new KeptEntries();
  kept.add([entry(1, 0, 0), entry(2, 0, 2), entry(3, 0, 1), entry(4, 1, 0)]);
  assert.deepEqual(kept.indicesOf('t1'), [0, 2]);
  kept.drop(1);
  assert.deepEqual(kept.indicesOf('t1'), [1]);
  kept.drop(2);
  assert.deepEqual(kept.indicesOf('t1'), []);
  assert.deepEqual(kept.indicesOf('t2'), [0]);
  kept.clear();
  assert.deepEqual(kept.indicesOf('t2'), []);
  kept.add([entry(5, 1, 1)]);
  assert.deepEqual(kept.indicesOf('t2'), [0]);
});
