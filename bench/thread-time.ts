/**
 * Where the wall time of an event-loop gap went, from Linux's accounting in /proc: the main
 * thread's time on a CPU and waiting in a run queue for one (its `schedstat`, in ns), the time it
 * was neither (off a CPU: blocked in a system call, waiting on a lock, or its CPU taken by the
 * host), the CPU time of the process's other threads (V8's garbage-collection helpers, libuv's
 * pool, the SQLite checkpoint worker, the bench's clients) and of the rest of the machine
 * (`/proc/stat`, in ticks of 10 ms). `bench:ingest -- --stalls=FILE` prints it for the long gaps.
 *
 * A guest without steal accounting (this machine's `/proc/stat` shows none) counts the time its
 * virtual CPU was taken by the host as time on a CPU for whatever ran on it: such a gap reads as
 * the main thread on a CPU with no profile samples in it (bench/stalls.ts), not as waiting.
 */
import { closeSync, openSync, readSync, readdirSync, readFileSync } from 'node:fs';

/** A thread's [ns on a CPU, ns waiting in a run queue], from the start of its `schedstat` line. */
export type SchedTimes = readonly [cpuNs: number, waitNs: number];

export function parseSchedstat(line: string): SchedTimes {
  const [cpu, wait] = line.trim().split(/\s+/);
  return [Number(cpu), Number(wait)];
}

/** The machine's CPU time in ms over all its CPUs, from the `cpu` line of /proc/stat. */
export interface MachineTimes {
  busyMs: number;
  idleMs: number;
  iowaitMs: number;
}

/** Linux's clock ticks per second (USER_HZ), the unit of /proc's stat times: 100 on every Linux ABI Node runs on. */
export const TICKS_PER_SECOND = 100;
const TICK_MS = 1000 / TICKS_PER_SECOND;

export function parseProcStat(text: string): MachineTimes {
  const line = text.slice(0, text.indexOf('\n'));
  const fields = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest and guest_nice are within user and nice)
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = fields;
  return { busyMs: (user + nice + system + irq + softirq + steal) * TICK_MS, idleMs: idle * TICK_MS, iowaitMs: iowait * TICK_MS };
}

/** Every thread of this process (by task id) and the machine, at one moment. */
export interface CpuSnapshot {
  threads: Map<number, SchedTimes>;
  machine: MachineTimes;
}

export function cpuSnapshot(): CpuSnapshot {
  const threads = new Map<number, SchedTimes>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      threads.set(Number(tid), parseSchedstat(readFileSync(`/proc/self/task/${tid}/schedstat`, 'latin1')));
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return { threads, machine: parseProcStat(readFileSync('/proc/stat', 'latin1')) };
}

/** The main thread's times, read cheaply (one pread of an open file, about 10 µs) on every tick. */
export class MainThreadTimes {
  private readonly fd = openSync('/proc/thread-self/schedstat', 'r');
  private readonly buf = Buffer.alloc(128);

  read(): SchedTimes {
    const n = readSync(this.fd, this.buf, 0, this.buf.length, 0);
    return parseSchedstat(this.buf.toString('latin1', 0, n));
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** Where a gap's wall time went, in ms. */
export interface GapTimes {
  /** The main thread: on a CPU, waiting for one, neither. */
  mainCpu: number;
  mainWait: number;
  mainOff: number;
  /** The process's other threads' CPU time (from the snapshot before the gap, at most 10 ms earlier). */
  otherThreads: number;
  /** The machine's CPU time not this process's, and its idle and iowait time, over all CPUs. */
  otherProcesses: number;
  idle: number;
  iowait: number;
  /** The other threads that ran most in the gap: [task id, ms on a CPU, ms after the process started that the thread did]. */
  busiest?: Array<[tid: number, ms: number, startedMs: number]>;
}

/** When a thread of this process started, in ms after the process did (from field 22 of their `stat`, in ticks of 10 ms). */
export function threadStartedMs(tid: number): number {
  const startTicks = (stat: string) => Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  try {
    return (startTicks(readFileSync(`/proc/self/task/${tid}/stat`, 'latin1')) - startTicks(readFileSync('/proc/self/stat', 'latin1'))) * TICK_MS;
  } catch {
    return NaN; // ended since
  }
}

/**
 * The gap from `mainBefore` to `mainAfter` (the main thread's times at its ends, `wallMs` apart),
 * with the other threads and the machine from `before` (taken at most a few ms before the gap)
 * to `after`.
 */
export function gapTimes(wallMs: number, mainBefore: SchedTimes, mainAfter: SchedTimes, before: CpuSnapshot, after: CpuSnapshot, mainTid: number): GapTimes {
  const mainCpu = (mainAfter[0] - mainBefore[0]) / 1e6;
  const mainWait = (mainAfter[1] - mainBefore[1]) / 1e6;
  let processCpu = 0;
  let otherThreads = 0;
  const others: Array<[number, number]> = [];
  for (const [tid, [cpu]] of after.threads) {
    const ms = (cpu - (before.threads.get(tid)?.[0] ?? 0)) / 1e6;
    processCpu += ms;
    if (tid === mainTid) continue;
    otherThreads += ms;
    others.push([tid, ms]);
  }
  const busy = after.machine.busyMs - before.machine.busyMs;
  return {
    mainCpu,
    mainWait,
    mainOff: Math.max(0, wallMs - mainCpu - mainWait),
    otherThreads,
    otherProcesses: Math.max(0, busy - processCpu),
    idle: after.machine.idleMs - before.machine.idleMs,
    iowait: after.machine.iowaitMs - before.machine.iowaitMs,
    busiest: others
      .sort((a, b) => b[1] - a[1])
      .slice(0, 3)
      .filter(([, ms]) => ms >= 1)
      .map(([tid, ms]) => [tid, ms, threadStartedMs(tid)]),
  };
}
