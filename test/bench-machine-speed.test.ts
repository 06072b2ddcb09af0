/**
 * The benches' machine gauges (bench/machine-speed.ts): the thread CPU clock counts the calling
 * thread's CPU, and only its own (not a worker's, as the load client of bench:ack-phases is one),
 * its run-queue wait only grows, and the calibration does its work on the calling thread and times
 * that CPU. The machine's CPU times (steal among them) are read from /proc/stat.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { calibrate, describeMachineTimes, machineShares, machineTimes, parseMachineTimes, threadTimes } from '../bench/machine-speed.ts';

const onLinux = process.platform === 'linux';
/** Slack for the clock's resolution where only /proc's stat is there (one tick of 10 ms on each end). */
const TICK_SLACK_MS = 20;

/** This thread's CPU in milliseconds. */
const threadCpuMs = (): number => threadTimes()!.cpuMs;
/** The process's CPU (every thread) in milliseconds. */
const processCpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

test('threadTimes counts the CPU this thread spends', { skip: !onLinux && 'reads /proc/thread-self' }, () => {
  const times = threadTimes();
  assert.ok(times !== undefined && Number.isFinite(times.cpuMs) && times.cpuMs >= 0, `a CPU time, got ${JSON.stringify(times)}`);
  const before = times.cpuMs;
  const processBefore = processCpuMs();
  // Spins on this thread until the process has used 300 ms more CPU: nearly all of it is this thread's.
  let x = 0;
  while (processCpuMs() - processBefore < 300) x = (x + 1) | 0;
  const after = threadTimes()!;
  const spent = after.cpuMs - before;
  const processSpent = processCpuMs() - processBefore;
  assert.ok(x !== 0);
  if (times.runQueueMs !== undefined) assert.ok(after.runQueueMs! >= times.runQueueMs, `the run-queue wait went back: ${times.runQueueMs} → ${after.runQueueMs}`);
  assert.ok(spent >= 150, `the thread's clock moved ${spent} ms while the process used ${processSpent} ms spinning on it`);
  assert.ok(spent <= processSpent + TICK_SLACK_MS, `the thread's clock (${spent} ms) cannot run ahead of the process's (${processSpent} ms)`);
});

test("threadTimes does not count another thread's CPU", { skip: !onLinux && 'reads /proc/thread-self' }, async () => {
  const before = threadCpuMs();
  const processBefore = processCpuMs();
  // A worker spins until the process has used 400 ms more CPU, while this thread waits idle.
  const worker = new Worker(
    `const { parentPort } = require('node:worker_threads');
     const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
     const from = cpu();
     let x = 0;
     while (cpu() - from < 400) x = (x + 1) | 0;
     parentPort.postMessage(x);`,
    { eval: true },
  );
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
  });
  await worker.terminate();
  const spent = threadCpuMs() - before;
  const processSpent = processCpuMs() - processBefore;
  assert.ok(processSpent >= 400, `the worker spun ${processSpent} ms`);
  assert.ok(spent < 150, `this thread's clock moved ${spent} ms while a worker used the CPU (${processSpent} ms in all)`);
});

test('calibrate does its work on the calling thread and times its CPU', { skip: !onLinux && 'reads /proc/thread-self' }, () => {
  const before = threadCpuMs();
  const took = calibrate();
  const spent = threadCpuMs() - before;
  assert.ok(Number.isFinite(took.wallMs) && took.wallMs > 0, `a duration, got ${took.wallMs}`);
  assert.ok(took.cpuMs !== undefined && took.cpuMs >= 50, `the timed work used ${took.cpuMs} ms of this thread's CPU`);
  // The timed pass is inside the whole call (which also ran the untimed tenth first).
  assert.ok(took.cpuMs <= spent + TICK_SLACK_MS, `the timed work's CPU (${took.cpuMs} ms) is within the call's (${spent} ms)`);
  assert.ok(spent - took.cpuMs >= 0.02 * took.cpuMs - TICK_SLACK_MS, `the untimed tenth ran first: the call used ${spent} ms, the timed work ${took.cpuMs} ms`);
  // Wall time covers the thread's CPU time (less a tick where only stat's resolution is there).
  assert.ok(took.wallMs >= took.cpuMs - TICK_SLACK_MS, `took ${took.wallMs} ms of wall time for ${took.cpuMs} ms of CPU`);
});

test("parseMachineTimes reads /proc/stat's total line: busy, idle (with I/O wait) and stolen", () => {
  // As read on this kind of machine: user nice system idle iowait irq softirq steal guest guest_nice.
  const stat = 'cpu  243550 0 32887 183747 4475 0 3242 56205 0 0\ncpu0 121000 0 16000 90000 2000 0 1600 28000 0 0\n';
  assert.deepEqual(parseMachineTimes(stat), { busy: 243550 + 32887 + 3242, idle: 183747 + 4475, steal: 56205 });
  // Not the total line, or a field missing or not a number: nothing is read.
  assert.equal(parseMachineTimes('cpu0 1 2 3 4 5 6 7 8 0 0\n'), undefined);
  assert.equal(parseMachineTimes('cpu  1 2 3 4 5 6 7\n'), undefined);
  assert.equal(parseMachineTimes('cpu  1 2 3 4 5 6 x 8 0 0\n'), undefined);
  assert.equal(parseMachineTimes(''), undefined);
});

test('machineShares splits the time between two readings; describeMachineTimes says it', () => {
  const from = { busy: 1000, idle: 5000, steal: 200 };
  const to = { busy: 1600, idle: 5300, steal: 300 };
  assert.deepEqual(machineShares(from, to), { busy: 0.6, idle: 0.3, steal: 0.1 });
  assert.equal(describeMachineTimes(from, to), "the machine's CPUs 60% busy, 30% idle, 10% stolen by the hypervisor");
  // Unread, or no time between: no shares.
  assert.equal(machineShares(undefined, to), undefined);
  assert.equal(machineShares(from, from), undefined);
  assert.match(describeMachineTimes(from, undefined), /not read/);
});

test('machineTimes reads this machine: the busy time grows while this thread spins', { skip: !onLinux && 'reads /proc/stat' }, () => {
  const from = machineTimes();
  assert.ok(from !== undefined, 'read /proc/stat');
  const processBefore = processCpuMs();
  let x = 0;
  while (processCpuMs() - processBefore < 300) x = (x + 1) | 0;
  const to = machineTimes()!;
  assert.ok(x !== 0);
  const shares = machineShares(from, to);
  assert.ok(shares !== undefined, 'time passed between the readings');
  // 300 ms of this thread's CPU are busy time of the machine's (ticks of 10 ms: at least 20 of them).
  assert.ok(to.busy - from.busy >= 20, `the machine's busy time grew ${to.busy - from.busy} ticks`);
  assert.ok(to.idle >= from.idle && to.steal >= from.steal, 'the counters only grow');
  assert.ok(Math.abs(shares.busy + shares.idle + shares.steal - 1) < 1e-9);
});
