/**
 * bench/thread-time.ts: the parsing of /proc's lines, the split of a gap's wall time, and a real
 * gap of this test's own main thread — busy, then asleep in a blocking call — read from /proc.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { MainThreadTimes, cpuSnapshot, gapTimes, parseProcStat, parseSchedstat } from '../bench/thread-time.ts';

test('parses a schedstat line and the cpu line of /proc/stat (ticks of 10 ms)', () => {
  assert.deepEqual(parseSchedstat('285035254 367918 16\n'), [285035254, 367918]);
  const stat = 'cpu  13014 5 4767 26846 280 3 214 7 0 0\ncpu0 3111 0 2067 17249 21 0 104 0 0 0\n';
  assert.deepEqual(parseProcStat(stat), { busyMs: (13014 + 5 + 4767 + 3 + 214 + 7) * 10, idleMs: 268460, iowaitMs: 2800 });
});

test('a gap splits into the main thread on a CPU, waiting, neither; the other threads and processes from the snapshots', () => {
  const before = {
    threads: new Map([
      [10, [1e9, 5e8] as const],
      [11, [2e9, 0] as const],
    ]),
    machine: { busyMs: 1000, idleMs: 500, iowaitMs: 0 },
  };
  const after = {
    // Thread 12 started in the gap: all its time counts.
    threads: new Map([
      [10, [1.03e9, 5.2e8] as const],
      [11, [2.015e9, 0] as const],
      [12, [5e6, 0] as const],
    ]),
    machine: { busyMs: 1090, idleMs: 540, iowaitMs: 10 },
  };
  const { busiest, ...t } = gapTimes(100, [1e9, 5e8], [1.03e9, 5.2e8], before, after, 10);
  // The busiest other threads first; these task ids are not this process's, so their start is unknown.
  assert.deepEqual(
    busiest?.map(([tid, ms, started]) => [tid, Math.round(ms * 1000) / 1000, started]),
    [
      [11, 15, NaN],
      [12, 5, NaN],
    ],
  );
  assert.deepEqual(Object.fromEntries(Object.entries(t).map(([k, v]) => [k, Math.round(v * 1000) / 1000])), {
    mainCpu: 30,
    mainWait: 20,
    mainOff: 50,
    otherThreads: 20,
    otherProcesses: 40,
    idle: 40,
    iowait: 10,
  });
});

test('a real gap of this thread: 60 ms of work reads as on a CPU, 150 ms asleep in a blocking call as neither', () => {
  const main = new MainThreadTimes();
  try {
    const before = cpuSnapshot();
    const t0 = process.hrtime.bigint();
    const m0 = main.read();
    while (process.hrtime.bigint() - t0 < 60_000_000n); // busy
    execFileSync('sleep', ['0.15']); // the thread blocks in waitpid
    const m1 = main.read();
    const wall = Number(process.hrtime.bigint() - t0) / 1e6;
    const t = gapTimes(wall, m0, m1, before, cpuSnapshot(), process.pid);
    // The sleep ran in a child process: no thread of this one was busy for it.
    assert.ok(t.otherThreads < 50, JSON.stringify(t));
    // On a CPU: the 60 ms loop, less whatever time a busy machine's run queue took from it.
    assert.ok(t.mainCpu + t.mainWait >= 55 && t.mainCpu < 100, JSON.stringify(t));
    assert.ok(t.mainOff >= 140, JSON.stringify(t));
  } finally {
    main.close();
  }
});
