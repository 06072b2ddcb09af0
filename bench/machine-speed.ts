/**
 * How fast the machine is at the moment, and what the calling thread got of it: what tells a
 * change in the code from a change in the machine between runs (README, Performance, round 18).
 * On this shared VM the same fixed work took 0.64 s or 0.95–1.0 s of CPU depending on the minute,
 * on either core, with no steal time reported; identical `bench:ack-phases` runs used 9.7–15.2 s of
 * the main thread's CPU, and their p99 followed. On other days the hypervisor took a large share of
 * the machine's time (steal), which slows every server alike: the benches print that share
 * (machineTimes) beside their figures (README, Performance, round 39).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { TICKS_PER_SECOND, parseSchedstat } from './thread-time.ts';

/** CPU time the calling thread has had, and time it waited, ready, for a CPU (both since it started). */
export interface ThreadTimes {
  cpuMs: number;
  /** Undefined where the kernel keeps no scheduler statistics (only /proc/.../stat's CPU times). */
  runQueueMs: number | undefined;
}

/**
 * The calling thread's times, from /proc/thread-self: `schedstat` (nanoseconds on a CPU, and
 * waiting on a run queue) where the kernel has it, else `stat`'s CPU times (10 ms resolution);
 * undefined off Linux. Node.js 20 has no per-thread CPU clock of its own (`process.threadCpuUsage`
 * came in 23), and `process.cpuUsage()` also counts the collector's helpers, the thread pool and any
 * worker (a bench's load client).
 */
export function threadTimes(): ThreadTimes | undefined {
  try {
    const [onCpu, waiting] = parseSchedstat(readFileSync('/proc/thread-self/schedstat', 'latin1'));
    if (Number.isFinite(onCpu) && Number.isFinite(waiting)) return { cpuMs: onCpu / 1e6, runQueueMs: waiting / 1e6 };
  } catch {
    // No scheduler statistics: the CPU times of stat below.
  }
  let stat: string;
  try {
    stat = readFileSync('/proc/thread-self/stat', 'latin1');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces: the fields after it are counted from its end.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the line, so 12 and 13 after the name (state is field 3).
  const ticks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ticks) ? { cpuMs: (ticks * 1000) / TICKS_PER_SECOND, runQueueMs: undefined } : undefined;
}

/** The whole machine's CPU time by kind (ticks of all CPUs together), or the shares of it (machineShares). */
export interface MachineTimes {
  busy: number;
  /** Idle, with the time idle waiting for I/O. */
  idle: number;
  steal: number;
}

/**
 * The whole machine's CPU time by kind since boot, from /proc/stat's first line: undefined off
 * Linux. Steal is time a virtual CPU was ready to run while the hypervisor ran something else: on
 * a shared VM it is what slows everything at once, the bare servers too, without showing in any
 * process's own CPU time.
 */
export function machineTimes(): MachineTimes | undefined {
  try {
    return parseMachineTimes(readFileSync('/proc/stat', 'latin1'));
  } catch {
    return undefined;
  }
}

/** /proc/stat's text → its first line's times; undefined if that line is not the CPUs' total. Pure, for tests. */
export function parseMachineTimes(procStat: string): MachineTimes | undefined {
  const line = procStat.split('\n', 1)[0]!;
  if (!line.startsWith('cpu ')) return undefined;
  // cpu user nice system idle iowait irq softirq steal guest guest_nice (guest time is within user).
  const [, user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
  const all = [user, nice, system, idle, iowait, irq, softirq, steal];
  if (all.some((n) => n === undefined || !Number.isFinite(n))) return undefined;
  return { busy: user! + nice! + system! + irq! + softirq!, idle: idle! + iowait!, steal: steal! };
}

/** The machine's CPU time by kind between two readings; undefined if either is unread. */
export function machineTimesBetween(from: MachineTimes | undefined, to: MachineTimes | undefined): MachineTimes | undefined {
  return from && to ? { busy: to.busy - from.busy, idle: to.idle - from.idle, steal: to.steal - from.steal } : undefined;
}

/** The shares (0–1) of the machine's CPU time between two readings that were busy, idle and stolen; undefined if unread. */
export function machineShares(from: MachineTimes | undefined, to: MachineTimes | undefined): MachineTimes | undefined {
  const t = machineTimesBetween(from, to);
  const all = t ? t.busy + t.idle + t.steal : 0;
  return t && all > 0 ? { busy: t.busy / all, idle: t.idle / all, steal: t.steal / all } : undefined;
}

/** The machine's CPUs between two readings: how much of their time was busy, idle and stolen. */
export function describeMachineTimes(from: MachineTimes | undefined, to: MachineTimes | undefined): string {
  const shares = machineShares(from, to);
  if (!shares) return "the machine's CPU times: not read (no /proc/stat, or too short a time)";
  const pct = (n: number) => `${(100 * n).toFixed(0)}%`;
  return `the machine's CPUs ${pct(shares.busy)} busy, ${pct(shares.idle)} idle, ${pct(shares.steal)} stolen by the hypervisor`;
}

/** What the calibration work took: wall time, and the thread's CPU time (undefined off Linux). */
export interface Calibration {
  wallMs: number;
  cpuMs: number | undefined;
}

/**
 * A fixed piece of work, timed now: hashing in native code, short-lived objects and their JSON
 * (allocation, the young generation's collector, compiled JavaScript) and a sort with a JavaScript
 * comparator. About 0.6 s of CPU on an idle machine of this kind. Its CPU time is the machine's
 * speed (waiting for a CPU is not in it); its wall time also counts what else ran. Run it before
 * and after a measurement, with nothing else running in the process. A tenth of the work runs
 * first, untimed: in a fresh process the first pass also compiles the loops.
 */
export function calibrate(): Calibration {
  work(0.1);
  const cpuFrom = threadTimes()?.cpuMs;
  const start = performance.now();
  work(1);
  const wallMs = performance.now() - start;
  const cpuTo = threadTimes()?.cpuMs;
  return { wallMs, cpuMs: cpuFrom !== undefined && cpuTo !== undefined ? cpuTo - cpuFrom : undefined };
}

/** How a calibration reads in a bench's output. */
export function describeCalibration(c: Calibration): string {
  return c.cpuMs === undefined ? `${c.wallMs.toFixed(0)} ms` : `${c.cpuMs.toFixed(0)} ms of CPU (${c.wallMs.toFixed(0)} ms)`;
}

/** A run's calibrations before and after it, and how to read them: the closing line every bench prints. */
export function describeCalibrations(before: Calibration, after: Calibration): string {
  return `the calibration work took ${describeCalibration(before)} before, ${describeCalibration(after)} after (bench/machine-speed.ts: compare runs only where these agree)`;
}

function work(scale: number): void {
  const block = Buffer.alloc(1 << 20, 7);
  for (let i = 0; i < 150 * scale; i++) createHash('sha256').update(block).digest();
  let keep = 0;
  for (let j = 0; j < 40 * scale; j++) {
    const objects: Array<{ n: number; s: string }> = [];
    for (let i = 0; i < 50_000; i++) objects.push({ n: i, s: String(i * 7) });
    keep += JSON.stringify(objects).length;
  }
  let seed = 1;
  const xs: number[] = [];
  for (let i = 0; i < 200_000 * scale; i++) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    xs.push(seed);
  }
  xs.sort((a, b) => a - b);
  keep += xs[0]!;
  // Uses the results, so that none of the work can be left out.
  if (keep === 0) throw new Error('unreachable');
}
