/** What a crashed run must have in common with an uninterrupted one (see crash-harness.ts). */
import assert from 'node:assert/strict';
import { summarize, type CrashStream, type RunResult } from './crash-harness.ts';

/** Compares the runs; a failure names the crashed run's kill-timing seed, to replay it. */
export function assertSameWork(stream: CrashStream, baseline: RunResult, crashed: RunResult, note: (m: string) => void): void {
  try {
    compare(stream, baseline, crashed, note);
  } catch (err) {
    if (err instanceof Error) err.message += `\n(kill timings seed ${crashed.seed}: replay with VIGIL_CRASH_SEED=${crashed.seed})`;
    throw err;
  }
}

function compare(stream: CrashStream, baseline: RunResult, crashed: RunResult, note: (m: string) => void): void {
  const a = summarize(baseline.events);
  const b = summarize(crashed.events);
  note(
    `stream: ${stream.records} records in ${stream.batches.length} batches, ${stream.groups.size} groups; ` +
      `baseline: ${baseline.lines} lines, ${a.byId.size} distinct events; crashed: ${crashed.lines} lines, ${b.byId.size} distinct events`,
  );
  for (const [name, s] of [
    ['baseline', a],
    ['crashed', b],
  ] as const) {
    assert.deepEqual(s.conflicting, [], `${name}: an event id delivered with two different contents`);
    for (const [group, works] of s.workOfGroup) assert.equal(works.size, 1, `${name}: group ${group} has ${works.size} work ids`);
    // Every group with at least min_recurrence (2) occurrences has work, and its newest event tells its true count.
    const expected = [...stream.groups].filter(([, n]) => n >= 2);
    assert.equal(s.created.size, expected.length, `${name}: work.created events`);
    for (const [group, count] of s.countOfGroup) {
      const name_ = s.nameOfGroup.get(group)!;
      assert.equal(count, stream.groups.get(name_), `${name}: count of ${name_}`);
    }
  }
  assert.deepEqual([...b.created].sort(), [...a.created].sort(), 'the same work.created event ids');
  assert.deepEqual([...b.workIds].sort(), [...a.workIds].sort(), 'the same work ids');
  assert.deepEqual(new Map([...b.countOfGroup].sort()), new Map([...a.countOfGroup].sort()), 'the same final count per group');
  assert.equal(crashed.groupsInStore, baseline.groupsInStore, 'the same number of groups in the store');
  assert.equal(crashed.groupsInStore, stream.groups.size, 'one group per (session, failure)');
  assert.equal(crashed.openWork, a.workIds.size, 'open work in the store');
}
