/**
 * The benches' machine gauges (bench/machine-speed.ts): the thread CPU clock counts the calling
 * thread's CPU, and only its own (not a worker's, as the load client of bench:ack-phases is one),
 * its run-queue wait only grows, and the calibration does its work on the calling thread and times
 * that CPU.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { calibrate, threadTimes } from '../bench/machine-speed.ts';

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
