/**
 * Where an ingest request's ack time goes on the SQLite default (README, Performance, round 13):
 * vigil as `bench:ingest` runs it (classify → watchdog → recurrence, durable appends), an open-loop
 * client in a worker thread at a fixed rate, and each request's time inside vigil cut into phases:
 *
 * - to the append: the body read, decoded and mapped, until the store takes the append; where a
 *   decode thread took the body, cut again: the body read, its wait for the thread, the thread's
 *   decode and mapping (and its wait for a CPU meanwhile), the answer's wait for the event loop
 *   (bench/decode-worker-timed.ts runs vigil's worker and stamps its answers: README, Performance,
 *   round 43);
 * - the wait for the group commit's turn (a setImmediate), and the commit's transaction itself;
 * - the wait for the WAL's sync (off the event loop, group-committed with the other writes);
 * - from the sync to the end of the answer.
 *
 * Then the store's calls on the event loop (each call's own time, a request's share: README,
 * Performance, round 42), the WAL's syncs (how long each fdatasync took, as the store's sync
 * worker timed it, and how late the event loop handled each one's report: README, Performance,
 * round 38), and the client's slowest 1% joined to vigil's times by request number
 * (bench/ack-join.ts): how late the client sent each, how long it waited for vigil's handler, the
 * handler's time and its wait for the sync, the longest sync it waited behind, and the way back
 * (README, Performance, round 37).
 *
 * With the bench's configuration a request makes one append (its batch goes straight to its
 * pipeline); a request that made two (records waiting in the correlation log) is timed by its last.
 *
 *   npm run bench:ack-phases -- [--rate=45] [--seconds=20] [--encoding=json|protobuf] [--decode-threads=N] [--failure-wait=0s]
 *
 * `--failure-wait` sets `service.correlation.failure_wait` (0s by default, as bench:ingest; the
 * configuration's default is 5s, with which every batch carrying a failure waits in the correlation log).
 *
 * A diagnosis tool, not a target: it wraps methods of vigil's own classes from outside (the HTTP
 * receiver's request handler, the SQLite store's `append`, its group commit and its thread-pool
 * sync, the sync worker's reading of each sync's times), so
 * vigil's code carries no timing hooks. The client's own latencies (after a 3 s warm-up) are
 * printed beside them: the difference is the time before vigil's handler runs (the request
 * waiting for the event loop). The client's p99 comes with its 95% interval and whether that lies
 * under or over the 20 ms goal (bench/quantile.ts), since a 20 s run at a low rate holds only a few
 * hundred latencies.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { performance, PerformanceObserver, type EventLoopUtilization } from 'node:perf_hooks';
import { OtlpHttpServer } from '../src/receivers/otlp/http.ts';
import { SqliteStore } from '../src/store/sqlite/store.ts';
import { WalSyncer } from '../src/store/sqlite/wal-syncer.ts';
import { DecodePool } from '../src/receivers/otlp/decode-pool.ts';
import type { DecodeThreadTimes } from './decode-worker-timed.ts';
import { describeFailures, describeV8, load, loadSpec, startVigil } from './harness.ts';
import { buildPayloads } from './otlp-payloads.ts';
import { calibrate, describeCalibrations, describeMachineTimes, machineTimes, threadTimes, type MachineTimes, type ThreadTimes } from './machine-speed.ts';
import { ACK_GOAL_MS, p99AgainstGoal } from './quantile.ts';
import { slowestJoined, syncDurations, type SlowRequest } from './ack-join.ts';
import { DEFAULT_DECODE_THREADS } from '../src/receivers/otlp/config.ts';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const rate = Number(args.rate ?? 45);
const seconds = Number(args.seconds ?? 20);
const encoding = args.encoding ?? 'json';
// The receiver's decode_threads (unset: its default, one decode thread with two CPUs or more).
const decodeThreads = args['decode-threads'] === undefined ? undefined : Number(args['decode-threads']);
if (
  !(rate > 0) ||
  !(seconds > 0) ||
  (encoding !== 'json' && encoding !== 'protobuf') ||
  (decodeThreads !== undefined && !(Number.isInteger(decodeThreads) && decodeThreads >= 0))
) {
  console.error('usage: bench/ack-phases.ts [--rate=45] [--seconds=20] [--encoding=json|protobuf] [--decode-threads=N] [--failure-wait=0s]');
  process.exit(2);
}
const WARMUP_MS = 3000;

/** One request's times (performance.now()), as the wrapped methods saw them. */
interface Request {
  /** The client's number for it (its x-bench-request header). */
  n?: number;
  start: number;
  /** The body read whole, handed to the decode pool. */
  bodyRead?: number;
  /** On the decode thread: when its decode and mapping began and ended, and its wait for a CPU meanwhile (decode-worker-timed.ts). */
  thread?: NonNullable<DecodeThreadTimes['threadTimes']>;
  /** The pool's answer (the body decoded and mapped) taken on the event loop. */
  decoded?: number;
  submitted?: number;
  commitStart?: number;
  commitEnd?: number;
  synced?: number;
  end?: number;
}
const current = new AsyncLocalStorage<Request>();
const epoch = (t: number) => performance.timeOrigin + t;
const requests: Request[] = [];
let measuring = false;

/** Count, total, longest and how many of 10 ms or more, of the durations added under one name. */
interface Tally {
  n: number;
  ms: number;
  max: number;
  over10: number;
}
function tally(tallies: Map<string, Tally>, name: string, ms: number): void {
  let t = tallies.get(name);
  if (!t) tallies.set(name, (t = { n: 0, ms: 0, max: 0, over10: 0 }));
  t.n++;
  t.ms += ms;
  t.max = Math.max(t.max, ms);
  if (ms >= 10) t.over10++;
}

// The wrapped methods are private: reached through the prototypes, as any outside probe would.
type Wrapped = Record<string, (...a: unknown[]) => unknown>;
const receiver = OtlpHttpServer.prototype as unknown as Wrapped;
const handle = receiver.handle!;
receiver.handle = function (this: unknown, ...a: unknown[]) {
  const header = (a[0] as { headers: Record<string, string | undefined> }).headers['x-bench-request'];
  const r: Request = { start: performance.now(), n: header === undefined ? undefined : Number(header) };
  if (measuring) requests.push(r);
  return current.run(r, async () => {
    try {
      return await handle.apply(this, a);
    } finally {
      r.end = performance.now();
    }
  });
};
// The decode pool's threads run vigil's worker inside bench/decode-worker-timed.ts, which stamps
// each answer with the thread's times; the pool's answer is taken where it resolves.
const pool = DecodePool.prototype as unknown as Wrapped;
const TIMED_WORKER = new URL('./decode-worker-timed.ts', import.meta.url).href;
const startThread = pool.start!;
pool.start = function (this: { workerUrl: string }, ...a: unknown[]) {
  this.workerUrl = TIMED_WORKER;
  return startThread.apply(this, a);
};
const decodeAndMap = pool.decodeAndMap!;
pool.decodeAndMap = function (this: unknown, ...a: unknown[]) {
  const r = current.getStore();
  if (r) r.bodyRead = performance.now();
  const done = decodeAndMap.apply(this, a) as Promise<DecodeThreadTimes>;
  if (r)
    done.then(
      (body) => {
        r.decoded = performance.now();
        r.thread = body.threadTimes;
      },
      () => undefined,
    );
  return done;
};
interface PendingAppend {
  request?: Request;
}
const store = SqliteStore.prototype as unknown as Wrapped;
// The store's calls as the event loop runs them: each call's synchronous part (its statements, a
// commit's transaction, the JSON to and from its rows), not its wait for the disk. Wall time, so a
// collection or a lost CPU inside a call counts: what the loop could not do meanwhile.
const STORE_CALLS = [
  'commitAppends',
  'commit',
  'readPage',
  'readOutbox',
  'ackOutbox',
  'loadState',
  'loadGroups',
  'loadTurns',
  'lookupRevisions',
  'backlog',
  'dueTimers',
  'append',
];
const storeCalls = new Map<string, Tally>();
for (const name of STORE_CALLS) {
  const call = store[name]!;
  store[name] = function (this: unknown, ...a: unknown[]) {
    const t0 = performance.now();
    try {
      return call.apply(this, a);
    } finally {
      if (measuring) tally(storeCalls, name, performance.now() - t0);
    }
  };
}
const append = store.append!;
store.append = function (this: { appends: PendingAppend[] }, ...a: unknown[]) {
  const r = current.getStore();
  const done = append.apply(this, a) as Promise<unknown>;
  if (r) {
    r.submitted = performance.now();
    const queued = this.appends[this.appends.length - 1];
    if (queued) queued.request = r;
    done.then(
      () => (r.synced = performance.now()),
      () => undefined,
    );
  }
  return done;
};
// Every WAL sync's start and end (ms since the epoch): the fdatasync timed by the store's sync
// worker, and when its report was handled on the event loop; or, where the thread pool syncs (the
// worker stopped), from the sync's start until its completion was handled on the loop.
const syncs: Array<{ start: number; end: number; handled?: number }> = [];
const syncOnce = store.syncOnce!;
store.syncOnce = async function (this: unknown, ...a: unknown[]) {
  const start = performance.now();
  try {
    return await syncOnce.apply(this, a);
  } finally {
    if (measuring) syncs.push({ start: epoch(start), end: epoch(performance.now()) });
  }
};
const syncer = WalSyncer.prototype as unknown as Wrapped;
const timedSync = syncer.timed!;
syncer.timed = function (this: unknown, ...a: unknown[]) {
  const [began, ended] = a as [number, number];
  if (measuring) syncs.push({ start: began, end: ended, handled: epoch(performance.now()) });
  return timedSync.apply(this, a);
};
const commitAppends = store.commitAppends!;
store.commitAppends = function (this: { appends: PendingAppend[] }) {
  const batch = [...this.appends];
  const t0 = performance.now();
  commitAppends.call(this);
  const t1 = performance.now();
  for (const a of batch) {
    if (!a.request) continue;
    a.request.commitStart = t0;
    a.request.commitEnd = t1;
  }
};

// The machine's speed before and after (the same fixed work): runs are comparable only when it held.
const speedBefore = calibrate();
const vigil = await startVigil(encoding, 'sqlite', decodeThreads, args['failure-wait'] ?? '0s');
const payload = buildPayloads(512)[encoding];
// The client: one request every 1/rate s (open loop), fresh random-looking trace ids per request (as bench:ingest).
// How busy vigil's event loop is over the measured time: a request's wait for it is most of the tail.
let busyFrom: EventLoopUtilization | undefined;
// The main thread's CPU over the measured time (vigil's receiver, store and pipeline; not the
// client's thread), and its time ready to run but waiting for a CPU (the machine's contention).
let timesFrom: ThreadTimes | undefined;
// The whole machine's CPU time over it: how much the hypervisor took (steal) slows everything alike.
let machineFrom: MachineTimes | undefined;
// And how much of it the garbage collector took (its pauses are on the same thread).
let gcMs = 0;
let gcCount = 0;
// By kind (minor: the young generation's scavenges; major: mark-compact's pauses; incremental
// marking's steps; weak callbacks), with each kind's longest: one long pause can hold the p99.
const gcKinds = new Map<string, Tally>();
const GC_KIND: Record<number, string> = { 1: 'minor', 4: 'major', 8: 'incremental', 16: 'weak callbacks' };
const gc = new PerformanceObserver((list) => {
  if (!measuring) return;
  for (const e of list.getEntries()) {
    gcMs += e.duration;
    gcCount++;
    const kind = GC_KIND[(e as { detail?: { kind?: number } }).detail?.kind ?? 0] ?? 'other';
    tally(gcKinds, kind, e.duration);
  }
});
gc.observe({ entryTypes: ['gc'] });
setTimeout(() => {
  measuring = true;
  busyFrom = performance.eventLoopUtilization();
  timesFrom = threadTimes();
  machineFrom = machineTimes();
}, WARMUP_MS);
const result = await load({ ...loadSpec(encoding, vigil.target, payload, 0, rate, WARMUP_MS, seconds * 1000, 0, 'random'), numberRequests: true });
const busy = performance.eventLoopUtilization(busyFrom).utilization;
const timesTo = threadTimes();
const machineTo = machineTimes();
gc.disconnect();
await vigil.stop();
const speedAfter = calibrate();

const complete = requests.filter((r) => r.end !== undefined && r.synced !== undefined && r.commitEnd !== undefined && r.submitted !== undefined);
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
};
const phases: Array<[string, (r: Request) => number]> = [
  ['read, decode, map', (r) => r.submitted! - r.start],
  ['  read the body', (r) => (r.bodyRead ?? NaN) - r.start],
  ['  to the decode thread', (r) => (r.thread?.began ?? NaN) - epoch(r.bodyRead ?? NaN)],
  ['  decode and map on it', (r) => (r.thread?.ended ?? NaN) - (r.thread?.began ?? NaN)],
  ['    of which waiting for a CPU', (r) => r.thread?.runQueueMs ?? NaN],
  ['  back to the event loop', (r) => epoch(r.decoded ?? NaN) - (r.thread?.ended ?? NaN)],
  ['  to the append', (r) => r.submitted! - (r.decoded ?? NaN)],
  ['wait for the commit turn', (r) => r.commitStart! - r.submitted!],
  ['commit transaction', (r) => r.commitEnd! - r.commitStart!],
  ['wait for the WAL sync', (r) => r.synced! - r.commitEnd!],
  ['sync to answer', (r) => r.end! - r.synced!],
  ['in vigil, total', (r) => r.end! - r.start],
];
const totals = complete.map((r) => r.end! - r.start);
// Once, not per request: a sort of every total per request was about 0.4 GB of garbage a run.
const p99Total = quantile(totals, 0.99);
const slowest = complete.filter((r) => r.end! - r.start >= p99Total);
const f = (n: number) => n.toFixed(2).padStart(7);
console.log(
  `bench:ack-phases — OTLP/${encoding}, 512 spans per request, ${rate} requests/s for ${seconds} s after a ${WARMUP_MS / 1000} s warm-up; SQLite default; failure_wait ${args['failure-wait'] ?? '0s'}; decode_threads ${decodeThreads ?? `the default (${DEFAULT_DECODE_THREADS})`}; Node.js ${process.version} (${describeV8()})`,
);
console.log(
  `vigil's event loop busy ${(busy * 100).toFixed(0)}% of the measured time; garbage collection ${gcMs.toFixed(0)} ms in ${gcCount} pauses (${((gcMs / (seconds * 1000)) * 100).toFixed(1)}%)`,
);
console.log(
  `  pauses by kind: ${[...gcKinds].map(([kind, k]) => `${kind} ${k.n} (${k.ms.toFixed(0)} ms, longest ${k.max.toFixed(1)} ms, ${k.over10} of 10 ms or more)`).join('; ') || 'none'}`,
);
const requestsMeasured = rate * seconds;
const cpuMs = timesFrom && timesTo ? timesTo.cpuMs - timesFrom.cpuMs : undefined;
const waitMs = timesFrom?.runQueueMs !== undefined && timesTo?.runQueueMs !== undefined ? timesTo.runQueueMs - timesFrom.runQueueMs : undefined;
console.log(
  `main thread: ${cpuMs === undefined ? 'CPU n/a (no /proc/thread-self)' : `CPU ${(cpuMs / 1000).toFixed(1)} s, ${(cpuMs / requestsMeasured).toFixed(2)} ms a request`}` +
    `${waitMs === undefined ? '' : `; waited ${(waitMs / 1000).toFixed(2)} s for a CPU (run queue)`}. ` +
    `Machine: ${describeMachineTimes(machineFrom, machineTo)} over the measured time; ${describeCalibrations(speedBefore, speedAfter)}`,
);
const storeMs = [...storeCalls.values()].reduce((sum, c) => sum + c.ms, 0);
console.log(
  `the store's calls on the event loop (each call's own time, its wait for the disk not included): ${(storeMs / requestsMeasured).toFixed(2)} ms a request` +
    `${cpuMs === undefined ? '' : `, against the main thread's ${(cpuMs / requestsMeasured).toFixed(2)} ms of CPU`}`,
);
console.log(
  `  ${[...storeCalls]
    .sort((a, b) => b[1].ms - a[1].ms)
    .map(([name, c]) => `${name} ${(c.n / requestsMeasured).toFixed(2)} a request, ${(c.ms / requestsMeasured).toFixed(2)} ms (longest ${c.max.toFixed(1)})`)
    .join('; ')}`,
);
// With a few hundred latencies a p99 is a handful of requests: printed with its interval, as bench:ingest does.
const latencies = [...result.latencies].sort((x, y) => x - y);
const p99 = latencies.length === 0 ? undefined : p99AgainstGoal(latencies, ACK_GOAL_MS);
console.log(
  `client: ${latencies.length} answered, ${result.failures} failed; p50 ${quantile(latencies, 0.5).toFixed(1)} ms, p99 ${quantile(latencies, 0.99).toFixed(1)} ms` +
    (p99 ? ` (95% ${p99.text}; against the ${ACK_GOAL_MS} ms goal: ${p99.verdict})` : ''),
);
if (result.failures > 0) console.log(`  failed: ${describeFailures(result.failureReasons)}`);
console.log(`${'phase (ms)'.padEnd(31)}     p50      p90      p99   mean of the slowest 1% (${slowest.length} requests)`);
for (const [name, of] of phases) {
  // The decode thread's rows are empty for bodies decoded on the event loop (no thread, or not pooled).
  const xs = complete.map(of).filter(Number.isFinite);
  if (xs.length === 0) {
    console.log(`${name.padEnd(31)}     (no body went to a decode thread)`);
    continue;
  }
  const slow = slowest.map(of).filter(Number.isFinite);
  const mean = slow.reduce((a, b) => a + b, 0) / slow.length;
  console.log(`${name.padEnd(31)} ${f(quantile(xs, 0.5))}  ${f(quantile(xs, 0.9))}  ${f(quantile(xs, 0.99))}  ${f(mean)}`);
}

// The client's slowest 1%, each joined by its number to vigil's times for the same request
// (bench/ack-join.ts): the client late to send it, the wait for vigil's handler, the handler, the
// way back; and the WAL syncs that held it.
const server = new Map(
  complete
    .filter((r) => r.n !== undefined)
    .map((r) => [r.n!, { start: epoch(r.start), end: epoch(r.end!), commitEnd: epoch(r.commitEnd!), synced: epoch(r.synced!) }]),
);
const syncSpans = syncs.map((s) => ({ start: s.start, end: s.end }));
const sd = syncDurations(syncSpans, ACK_GOAL_MS);
const inWorker = syncs.filter((s) => s.handled !== undefined);
console.log(
  `WAL syncs (${inWorker.length ? "fdatasync in the store's sync worker, the call alone" : 'fdatasync in the thread pool, until its completion was handled'}): ${sd.n}, p50 ${sd.p50.toFixed(2)} ms, p99 ${sd.p99.toFixed(2)} ms, longest ${sd.max.toFixed(1)} ms, ${sd.over} of ${ACK_GOAL_MS} ms or more`,
);
if (inWorker.length) {
  const late = syncDurations(
    inWorker.map((s) => ({ start: s.end, end: s.handled! })),
    ACK_GOAL_MS,
  );
  console.log(
    `  their reports handled on the event loop after: p50 ${late.p50.toFixed(2)} ms, p99 ${late.p99.toFixed(2)} ms, longest ${late.max.toFixed(1)} ms, ${late.over} of ${ACK_GOAL_MS} ms or more`,
  );
}
const slow =
  result.requestNumbers && result.sendLateMs && result.sentAt && result.measureFromEpochMs !== undefined
    ? slowestJoined(
        {
          latencies: result.latencies,
          sentAt: result.sentAt,
          measureFromEpochMs: result.measureFromEpochMs,
          sendLateMs: result.sendLateMs,
          requestNumbers: result.requestNumbers,
        },
        server,
        syncSpans,
      )
    : [];
if (slow.length > 0) {
  const mean = (of: (x: SlowRequest) => number) => (slow.reduce((a, x) => a + of(x), 0) / slow.length).toFixed(1);
  const heldBySlowSync = slow.filter((x) => x.longestSync >= ACK_GOAL_MS).length;
  console.log(
    `client's slowest 1% (${slow.length} requests, ${mean((x) => x.latency)} ms on average): client late to send ${mean((x) => x.late)}, sent → vigil's handler ${mean((x) => x.toHandler)}, ` +
      `in vigil ${mean((x) => x.inVigil)} (of which waiting for the WAL sync ${mean((x) => x.syncWait)}), answer → client ${mean((x) => x.toClient)} ms; ` +
      `${heldBySlowSync} of them waited while a sync of ${ACK_GOAL_MS} ms or more ran`,
  );
  for (const x of slow)
    console.log(
      `  ${x.latency.toFixed(1).padStart(6)} ms: late ${x.late.toFixed(1)}, to handler ${x.toHandler.toFixed(1)}, in vigil ${x.inVigil.toFixed(1)} (sync wait ${x.syncWait.toFixed(1)}, longest sync ${x.longestSync.toFixed(1)}), to client ${x.toClient.toFixed(1)}`,
    );
}
