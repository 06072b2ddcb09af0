/**
 * `npm run bench:ingest` — OTLP ingest throughput and ack latency of vigil's `otlp` receiver, side
 * by side in the same run with bare servers that only decode the same payloads with independent
 * decoders:
 *
 * | encoding | bare server |
 * | --- | --- |
 * | OTLP/HTTP JSON | node:http + `JSON.parse` |
 * | OTLP/HTTP protobuf | node:http + protobufjs with the OTLP schema (the 0.214.0 otlp-transformer's generated root) |
 * | OTLP/gRPC | @grpc/grpc-js with that protobufjs decoder as the request deserializer |
 *
 * vigil runs in process in two setups: `vigil/memory` (memory store, classify: the setup of issue
 * 15's figures) and `vigil/sqlite` (the default: sqlite store with durable appends, classify →
 * watchdog → recurrence → file exporter; the watchdog asks for activity markers, so successful
 * model, tool and agent spans are kept as marks and a few markers per turn are appended).
 *
 * Load: batches of 512 realistic agent spans (bench/otlp-payloads.ts; one in 32 failed) with
 * fresh trace ids per request, so every failed span is appended, classified and counted. Each
 * server is measured twice: at full rate (8 keep-alive clients sending back to back: requests/s is
 * its maximum) and at half of that maximum (an open-loop schedule, latency counted from the
 * scheduled send, so a stall delays every request behind it), with the longest event-loop stall of
 * the main thread during it ("stall"). At full rate, "busy ms/req" is the time the main thread
 * spent off its event loop (event-loop utilization, drain included) per request: the server's own
 * cost, which on a shared machine moves less than its throughput; "cpu ms/req" is the CPU time the
 * main thread ran over the same time, per request (Linux), which does not grow while the thread
 * waits for a core, and "cpu/bare" the bare server's over vigil's: the throughput ratio with a core
 * to spare for each. The clients run in a worker thread.
 * With `--setups` including sqlite, a third, durable bare server joins the HTTP encodings:
 * `bare/fsync` (node:http, the same independent decoder, the request's failed spans appended to a
 * file and acknowledged once an fdatasync covers them, one fdatasync at a time shared by the
 * requests that arrived while the previous one ran; no vigil code): what this disk allows a durable
 * receiver. Its half-rate phase runs at vigil/sqlite's half rate, so their ack latencies compare at
 * the same load. "disk KB/req" is what the process wrote to storage per request in the half-rate
 * phase (its `write_bytes`: the WAL's and the checkpoints' writes for vigil/sqlite; Linux).
 * Servers are measured in alternating slices so background load on the shared machine hits all
 * alike, and a vigil slice lasts until its pipeline has processed everything it accepted (vigil
 * gets no processing time for free). A decoder table compares the decoders alone on batches of
 * several sizes.
 *
 * Options: --duration=SECONDS per server and phase (6), --rounds=N slices (3), --warmup=SECONDS (1),
 * --concurrency=N (8), --spans=N (512), --trace-ids=random|ordered (random: as SDKs make them; ordered: the
 * request number in their first 4 bytes, as this bench had them up to round 8 — the ids of a request
 * then sit side by side in every index keyed by them, which spares a store most of its page writes),
 * --times=now|fixed (now: every timestamp shifted to the moment its request is sent, as an SDK's export;
 * fixed: the same times in every request, as this bench had them up to round 15), --only=json,protobuf,grpc, --setups=memory,sqlite,
 * --half-rate=REQUESTS_PER_SECOND (the open-loop phase at this one rate for every server, to compare
 * latency at equal load; by default each server's half rate is half of its own full rate),
 * --half-warmup=SECONDS (0.5: each half-rate slice first sends at its rate this long, untimed; without it a
 * slice's first requests time the client's start — a new worker thread, new connections, its code not yet
 * compiled — and not the server: 20–45 ms on bare and vigil alike, several of the ~400 latencies a p99 reads),
 * --decode-threads=N (the otlp receiver's decode_threads; its default otherwise: 1 with two CPUs or more),
 * --bare-bytes=KB (bare/fsync appends at least KB kilobytes a request, its failed spans padded: to write
 *   as much as vigil/sqlite does, whose disk KB/req the table shows; README, Performance, round 37),
 * --stalls=FILE (the event loop's gaps in vigil's half-rate slices, for bench/stalls.ts; the gaps of
 * --long-gap=MS (40) or more are printed with where their time went: bench/thread-time.ts),
 * --sizes=16,128,512,2048 (decoder table; --sizes= skips it), --no-bare (vigil's servers only: to profile
 * vigil alone with `node --cpu-prof`; no ratios then),
 * --inject-stall=MS[@SECONDS] (in every server's half-rate slices alike, after the half warm-up, the main
 * thread is held busy MS ms every SECONDS s (3): how each recovers from the same stall of its event loop,
 * the bare servers the baseline; round 35).
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { cpus, loadavg, tmpdir } from 'node:os';
import { closeSync, fdatasync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:http';
import type { Server as HttpServer } from 'node:http';
import * as grpc from '@grpc/grpc-js';
import root0214 from 'otlp-transformer-0214/build/src/generated/root.js';
import { MainThreadTimes, cpuSnapshot, gapTimes, type GapTimes } from './thread-time.ts';
import { ACK_GOAL_MS, p99AgainstGoal, percentile } from './quantile.ts';
import { calibrate, describeCalibration, describeCalibrations, describeMachineTimes, machineTimes, machineTimesBetween, threadTimes } from './machine-speed.ts';
import { buildPayloads } from './otlp-payloads.ts';
import { DEFAULT_DECODE_THREADS } from '../src/receivers/otlp/config.ts';
import { protobufjsToNormalized } from './protobufjs-normalize.ts';
import {
  describeFailures,
  describeV8,
  load,
  loadSpec,
  startVigil,
  type Encoding,
  type LoadResult,
  type LoadSpec,
  type Running,
  type Setup,
  type Times,
  type TraceIds,
  injectStalls,
  type InjectedStalls,
} from './harness.ts';

type ServerName = 'bare' | 'bare/fsync' | `vigil/${Setup}`;

/** Gaps of the event loop longer than this are recorded with --stalls. */
const STALL_MS = 6;

/**
 * With --stalls=FILE: the event loop's gaps over STALL_MS during vigil's half-rate slices (a 1 ms
 * timer that notes when it ran late), as [start, end, slice, times] with times in microseconds of
 * the monotonic clock, the clock of V8's CPU profiles, and where the gap's wall time went
 * (bench/thread-time.ts: the main thread's schedstat read on every tick, the process's threads and
 * the machine every 10 ms: about 10 µs a tick and 0.2 ms every 10 ms, a few per cent of the main
 * thread in --stalls runs); written to FILE at the end, the long gaps printed. Run under `node
 * --cpu-prof`, bench/stalls.ts then tells what the event loop ran during them.
 */
class StallRecorder {
  readonly gaps: Array<[number, number, string, GapTimes]> = [];
  private timer: NodeJS.Timeout | undefined;
  private main: MainThreadTimes | undefined;

  start(label: string): void {
    const main = (this.main = new MainThreadTimes());
    let last = process.hrtime.bigint();
    let lastMain = main.read();
    let snapshot = cpuSnapshot();
    let ticks = 0;
    this.timer = setInterval(() => {
      const now = process.hrtime.bigint();
      const nowMain = main.read();
      if (now - last > BigInt(STALL_MS * 1e6)) {
        const after = cpuSnapshot();
        const times = gapTimes(Number(now - last) / 1e6, lastMain, nowMain, snapshot, after, process.pid);
        this.gaps.push([Number(last / 1000n), Number(now / 1000n), label, times]);
        snapshot = after;
      } else if (++ticks % 10 === 0) {
        snapshot = cpuSnapshot();
      }
      last = now;
      lastMain = nowMain;
    }, 1);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.main?.close();
  }

  /** The gaps of `longMs` or more, each with where its time went, and their sums. */
  report(longMs: number): string {
    const long = this.gaps.filter(([start, end]) => (end - start) / 1000 >= longMs);
    const f = (ms: number) => ms.toFixed(1).padStart(7);
    const header = `   gap ms | main thread: on a CPU  waiting  neither | other threads  other processes  idle  iowait (ms, both CPUs)  slice; busiest other threads`;
    // The busiest other threads: task id, ms on a CPU, and when the thread started (s after the process).
    const busiest = (t: GapTimes) => (t.busiest ?? []).map(([tid, ms, started]) => `${tid}: ${ms.toFixed(1)} (from ${(started / 1000).toFixed(2)} s)`).join(', ');
    const line = (wall: number, t: GapTimes, label: string) =>
      `${f(wall)}   |        ${f(t.mainCpu)}  ${f(t.mainWait)}  ${f(t.mainOff)} |      ${f(t.otherThreads)}          ${f(t.otherProcesses)} ${f(t.idle)} ${f(t.iowait)}  ${label}${t.busiest ? `; ${busiest(t)}` : ''}`;
    const sum: Omit<GapTimes, 'busiest'> = { mainCpu: 0, mainWait: 0, mainOff: 0, otherThreads: 0, otherProcesses: 0, idle: 0, iowait: 0 };
    let wall = 0;
    const rows = long.map(([start, end, label, t]) => {
      wall += (end - start) / 1000;
      for (const k of Object.keys(sum) as Array<keyof typeof sum>) sum[k] += t[k];
      return line((end - start) / 1000, t, label);
    });
    return [`${long.length} gaps of ${longMs} ms or more, where their time went (bench/thread-time.ts):`, header, ...rows, line(wall, sum, 'all of them')].join(
      '\n',
    );
  }
}

const otlp = (root0214 as any).opentelemetry.proto;
const TraceRequest = otlp.collector.trace.v1.ExportTraceServiceRequest;
const EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';

await main();

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
  const durationMs = Number(args.duration ?? 6) * 1000;
  const rounds = Number(args.rounds ?? 3);
  const warmupMs = Number(args.warmup ?? 1) * 1000;
  const halfWarmupMs = Number(args['half-warmup'] ?? 0.5) * 1000;
  // NaN would never end an open-loop slice (its schedule compares against it).
  if (!(halfWarmupMs >= 0 && Number.isFinite(halfWarmupMs))) throw new Error(`--half-warmup must be a number of seconds >= 0, got '${args['half-warmup']}'`);
  const concurrency = Number(args.concurrency ?? 8);
  const fixedHalfRate = args['half-rate'] !== undefined ? Number(args['half-rate']) : undefined;
  const spans = Number(args.spans ?? 512);
  const traceIdsArg = args['trace-ids'] ?? 'random';
  if (traceIdsArg !== 'random' && traceIdsArg !== 'ordered') throw new Error(`--trace-ids must be random or ordered, got '${traceIdsArg}'`);
  const traceIds: TraceIds = traceIdsArg;
  const timesArg = args.times ?? 'now';
  if (timesArg !== 'now' && timesArg !== 'fixed') throw new Error(`--times must be now or fixed, got '${timesArg}'`);
  const times: Times = timesArg;
  const setups = (args.setups ?? 'memory,sqlite').split(',').filter((s) => s !== '') as Setup[];
  const encodings = (['json', 'protobuf', 'grpc'] as const).filter((e) => args.only === undefined || args.only.split(',').includes(e));
  const withBare = !('no-bare' in args);
  const decodeThreads = args['decode-threads'] !== undefined ? Number(args['decode-threads']) : undefined;
  const bareBytes = args['bare-bytes'] !== undefined ? Number(args['bare-bytes']) * 1024 : 0;
  if (!(bareBytes >= 0)) throw new Error(`--bare-bytes must be a number of kilobytes, got '${args['bare-bytes']}'`);
  const stalls = args.stalls !== undefined ? new StallRecorder() : undefined;
  const injected = parseInjectedStall(args['inject-stall']);
  const sizes = (args.sizes ?? '16,128,512,2048')
    .split(',')
    .filter((x) => x !== '')
    .map(Number);

  const payloads = buildPayloads(spans);
  const load0 = loadavg()[0]!;
  const speed0 = calibrate();
  console.log(
    `bench:ingest — ${spans} spans per request (${payloads.errorSpans} failed; trace ids ${traceIds === 'random' ? 'random, as an SDK makes them' : 'ordered by request'}; times ${times === 'now' ? 'of the moment each request is sent' : 'the same in every request'}); vigil/memory: memory store, classify; vigil/sqlite: sqlite store (durable appends), ` +
      `classify → watchdog → recurrence → file exporter (activity markers on). Full rate: ${concurrency} clients back to back; half rate: open loop at ${fixedHalfRate !== undefined ? `${fixedHalfRate} requests/s for every server` : "half of each server's full rate"}, each slice after ${halfWarmupMs / 1000} s untimed at its rate; ` +
      `${durationMs / 1000} s per server and phase in ${rounds} alternating slices${injected ? `; injected stalls: ${injected.ms} ms every ${injected.everyMs / 1000} s in every half-rate slice` : ''}; Node.js ${process.version} (${describeV8()}), ${cpus().length} CPU(s), load average ${load0.toFixed(2)} at start, calibration work ${describeCalibration(speed0)} (bench/machine-speed.ts)`,
  );
  console.log(
    `payload: OTLP/JSON ${(payloads.json.template.length / 1024).toFixed(0)} KiB, OTLP/protobuf ${(payloads.protobuf.template.length / 1024).toFixed(0)} KiB per request; vigil's decode_threads: ${decodeThreads ?? `the default (${DEFAULT_DECODE_THREADS})`}${bareBytes > 0 ? `; bare/fsync appends at least ${bareBytes / 1024} KB a request (--bare-bytes)` : ''}\n`,
  );

  if (sizes.length > 0) await decoderTable(sizes);

  const rows: Array<{ encoding: Encoding; server: ServerName; full: LoadResult; half: LoadResult }> = [];
  let firstRequest = 1;
  for (const encoding of encodings) {
    const payload = encoding === 'json' ? payloads.json : payloads.protobuf;
    const servers = new Map<ServerName, Running>(withBare ? [['bare', await startBare(encoding)]] : []);
    if (withBare && setups.includes('sqlite') && encoding !== 'grpc') servers.set('bare/fsync', await startBareDurable(encoding, bareBytes));
    for (const setup of setups) servers.set(`vigil/${setup}`, await startVigil(encoding, setup, decodeThreads));
    const spec = (server: Running, rate: number, warmup: number, duration: number): LoadSpec => {
      const s = loadSpec(encoding, server.target, payload, concurrency, rate, warmup, duration, firstRequest, traceIds, times);
      firstRequest += 1_000_000;
      return s;
    };
    try {
      for (const server of servers.values()) {
        await load(spec(server, 0, warmupMs, 0));
        await server.drained?.();
      }
      const full = await alternate(servers, rounds, (server) => spec(server, 0, 0, durationMs / rounds));
      // bare/fsync is the durable baseline of vigil/sqlite: it runs at vigil/sqlite's half rate (its own maximum is far higher).
      const halfRate = (name: ServerName) => fixedHalfRate ?? rateOf(full.get(name === 'bare/fsync' && full.has('vigil/sqlite') ? 'vigil/sqlite' : name)!) / 2;
      const half = await alternate(
        servers,
        rounds,
        (server, name) => spec(server, halfRate(name), halfWarmupMs, durationMs / rounds),
        stalls && { recorder: stalls, encoding },
        injected && { ...injected, fromMs: halfWarmupMs, untilMs: halfWarmupMs + durationMs / rounds },
      );
      for (const name of servers.keys()) rows.push({ encoding, server: name, full: full.get(name)!, half: half.get(name)! });
      for (const [name, server] of servers) if (server.summary) console.log(`  (${encoding}) ${name}: ${await server.summary()}`);
    } finally {
      for (const server of servers.values()) await server.stop();
    }
  }

  console.log('');
  console.log('                        | full rate                                                  | half rate                                                 |');
  console.log(
    'encoding   server       |   spans/s   req/s  p50 ms  p99 ms  failures  busy ms/req  cpu ms/req |  req/s  p50 ms  p99 ms  p99.9 ms  fail  stall ms  disk KB/req | vigil/bare  cpu/bare',
  );
  for (const { encoding, server, full, half } of rows) {
    const bare = rows.find((r) => r.encoding === encoding && r.server === 'bare');
    const ratio = server === 'bare' || !bare ? '' : `${(rateOf(full) / rateOf(bare.full)).toFixed(2)}×`;
    // The bare server's main-thread CPU per request over this one's: the throughput ratio a machine with a core to spare for each would show.
    const cpuRatio = server === 'bare' || !bare ? '' : `${(perRequest(bare.full.cpuMs, bare.full) / perRequest(full.cpuMs, full)).toFixed(2)}×`;
    console.log(
      `${encoding.padEnd(10)} ${server.padEnd(12)} | ${fmt(rateOf(full) * spans).padStart(9)} ${rateOf(full).toFixed(0).padStart(7)} ${ms(full, 50)} ${ms(full, 99)} ${String(full.failures).padStart(9)} ${perRequest(full.busyMs, full).toFixed(2).padStart(12)} ${perRequest(full.cpuMs, full).toFixed(2).padStart(11)} | ` +
        `${rateOf(half).toFixed(0).padStart(6)} ${ms(half, 50)} ${ms(half, 99)} ${ms(half, 99.9).padStart(9)} ${String(half.failures).padStart(5)} ${(half.loopStallMs ?? NaN).toFixed(1).padStart(9)} ${perRequest(
          (half.diskBytes ?? NaN) / 1024,
          half,
        )
          .toFixed(1)
          .padStart(12)} | ${ratio.padStart(10)} ${cpuRatio.padStart(9)}`,
    );
  }
  for (const { encoding, server, full, half } of rows)
    for (const [phase, r] of [
      ['full', full],
      ['half', half],
    ] as const)
      if (r.failures > 0) console.log(`  failed requests, ${encoding} ${server} at ${phase} rate: ${describeFailures(r.failureReasons)}`);
  // The goal's verdict needs the p99's own uncertainty: a half-rate slice holds a few hundred latencies.
  console.log('');
  console.log(`half-rate p99 with its 95% interval (distribution-free, from the order statistics; bench/quantile.ts) against the ${ACK_GOAL_MS} ms goal:`);
  for (const { encoding, server, half } of rows) {
    const sorted = half.latencies;
    if (sorted.length === 0) continue;
    const { text, verdict } = p99AgainstGoal(sorted, ACK_GOAL_MS);
    // Steal slows the bare servers as much as vigil: a verdict taken while the hypervisor took much is the machine's.
    const machine = half.machine && describeMachineTimes({ busy: 0, idle: 0, steal: 0 }, half.machine);
    console.log(`  ${encoding.padEnd(10)} ${server.padEnd(12)} p99 ${ms(half, 99).trim()} ms, ${text}: ${verdict}${machine ? ` (its slices: ${machine})` : ''}`);
  }
  if (stalls) {
    writeFileSync(args.stalls!, JSON.stringify({ gaps: stalls.gaps }));
    console.log(
      `\n${stalls.gaps.length} event-loop gaps over ${STALL_MS} ms in vigil's half-rate slices written to ${args.stalls} (bench/stalls.ts reads them with the CPU profile)`,
    );
    console.log(`\n${stalls.report(Number(args['long-gap'] ?? 40))}`);
  }
  console.log(
    `\nload average ${loadavg()[0]!.toFixed(2)} at the end; ${describeCalibrations(speed0, calibrate())}; a shared machine: compare the ratios, not the absolute figures`,
  );
}

/** Runs every server's slices in alternating order; sums them up per server. */
async function alternate(
  servers: Map<ServerName, Running>,
  rounds: number,
  spec: (server: Running, name: ServerName) => LoadSpec,
  stalls?: { recorder: StallRecorder; encoding: Encoding },
  injected?: InjectedStalls & { fromMs: number; untilMs: number },
): Promise<Map<ServerName, LoadResult>> {
  const totals = new Map<ServerName, LoadResult>([...servers.keys()].map((name) => [name, emptyResult()]));
  const names = [...servers.keys()];
  for (let round = 0; round < rounds; round++) {
    for (const name of round % 2 === 0 ? names : [...names].reverse()) {
      const server = servers.get(name)!;
      const loop = monitorEventLoopDelay({ resolution: 1 });
      const elu0 = performance.eventLoopUtilization();
      const cpu0 = mainThreadCpuMs();
      const disk0 = diskWriteBytes();
      const machine0 = machineTimes();
      loop.enable();
      if (stalls && name.startsWith('vigil/')) stalls.recorder.start(`${stalls.encoding} ${name}`);
      const stop = injected && injectStalls(injected);
      const result = await load(spec(server, name));
      stop?.();
      stalls?.recorder.stop();
      loop.disable();
      result.loopStallMs = loop.max / 1e6;
      if (server.drained) {
        // Processing what was accepted is part of vigil's cost.
        const t0 = performance.now();
        await server.drained();
        result.elapsedMs += performance.now() - t0;
      }
      result.busyMs = performance.eventLoopUtilization(elu0).active;
      result.cpuMs = mainThreadCpuMs() - cpu0;
      result.diskBytes = diskWriteBytes() - disk0;
      const slice = machineTimesBetween(machine0, machineTimes());
      const total = totals.get(name)!;
      if (slice) {
        const m = (total.machine ??= { busy: 0, idle: 0, steal: 0 });
        m.busy += slice.busy;
        m.idle += slice.idle;
        m.steal += slice.steal;
      }
      total.requests += result.requests;
      total.warmupRequests = (total.warmupRequests ?? 0) + (result.warmupRequests ?? 0);
      total.failures += result.failures;
      for (const [why, n] of Object.entries(result.failureReasons ?? {})) (total.failureReasons ??= {})[why] = (total.failureReasons[why] ?? 0) + n;
      total.elapsedMs += result.elapsedMs;
      total.loopStallMs = Math.max(total.loopStallMs ?? 0, result.loopStallMs);
      total.busyMs = (total.busyMs ?? 0) + (result.busyMs ?? 0);
      total.cpuMs = (total.cpuMs ?? 0) + (result.cpuMs ?? 0);
      total.diskBytes = (total.diskBytes ?? 0) + (result.diskBytes ?? 0);
      for (const l of result.latencies) total.latencies.push(l);
    }
  }
  for (const t of totals.values()) t.latencies.sort((a, b) => a - b);
  return totals;
}

/**
 * CPU time the main thread has run, in ms: unlike the event loop's busy time it does not grow
 * while the thread waits for a core, so on a loaded machine it is the steadier measure of a
 * server's own cost. Linux (bench/machine-speed.ts); NaN elsewhere.
 */
function mainThreadCpuMs(): number {
  return threadTimes()?.cpuMs ?? NaN;
}

/** Bytes this process has caused to be written to storage (its `write_bytes`; Linux; NaN elsewhere): the page cache's writeback, the WAL's and the file's alike. */
function diskWriteBytes(): number {
  try {
    return Number(/^write_bytes: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))![1]);
  } catch {
    return NaN;
  }
}

/** --inject-stall=MS[@SECONDS]: undefined when not given. */
function parseInjectedStall(arg: string | undefined): InjectedStalls | undefined {
  if (arg === undefined) return undefined;
  const [ms, every = '3'] = arg.split('@');
  const out = { ms: Number(ms), everyMs: Number(every) * 1000 };
  if (!(out.ms > 0 && out.everyMs > out.ms)) throw new Error(`--inject-stall must be MS or MS@SECONDS with MS > 0 and SECONDS*1000 > MS, got '${arg}'`);
  return out;
}

function emptyResult(): LoadResult {
  return { requests: 0, failures: 0, elapsedMs: 0, latencies: [] };
}

/** A slice's measure (taken over its warm-up too) per request answered in it. */
function perRequest(ms: number | undefined, r: LoadResult): number {
  return (ms ?? NaN) / (r.requests + (r.warmupRequests ?? 0));
}

function rateOf(r: LoadResult): number {
  return r.requests / (r.elapsedMs / 1000);
}

function ms(r: LoadResult, p: number): string {
  return percentile(r.latencies, p / 100)
    .toFixed(1)
    .padStart(7);
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

// ---------------------------------------------------------------------------------------------
// The bare servers: receive, decode with an independent decoder, answer. Nothing else.

async function startBare(encoding: Encoding): Promise<Running> {
  if (encoding === 'grpc') return startBareGrpc();
  return startBareHttp(encoding, (_request, answer) => answer(true));
}

/**
 * A bare node:http server: each request's body decoded by the independent decoder and handed to
 * `handle`, which answers it (200, or 503 when `ok` is false); `cleanup` runs once it has stopped.
 */
async function startBareHttp(encoding: 'json' | 'protobuf', handle: (request: any, answer: (ok: boolean) => void) => void, cleanup = () => {}): Promise<Running> {
  const decode = encoding === 'json' ? (body: Buffer) => JSON.parse(body.toString('utf8')) : (body: Buffer) => TraceRequest.decode(body);
  const answer = encoding === 'json' ? '{}' : '';
  const contentType = encoding === 'json' ? 'application/json' : 'application/x-protobuf';
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () =>
      handle(decode(Buffer.concat(chunks)), (ok) => {
        res.writeHead(ok ? 200 : 503, { 'content-type': contentType, 'content-length': answer.length });
        res.end(answer);
      }),
    );
  });
  const port = await listen(server);
  return {
    target: `http://127.0.0.1:${port}/v1/traces`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          cleanup();
          resolve();
        });
      }),
  };
}

/**
 * The durable baseline of vigil/sqlite (no vigil code): node:http, the same independent decoder,
 * then the request's failed spans appended to a file (one JSON line, written on the event loop as
 * SQLite's page writes are) and acknowledged once an fdatasync of the file covers them. Group
 * commit: one fdatasync at a time in the thread pool; the requests written while it runs wait for
 * the next one, which covers them all (never more than that one and the next). The file is in the
 * same temporary directory (the same disk) as vigil/sqlite's database.
 */
async function startBareDurable(encoding: 'json' | 'protobuf', minBytes: number): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-bench-bare-'));
  const fd = openSync(join(dir, 'spans.jsonl'), 'a');
  let waiting: Array<(err: Error | null) => void> = [];
  let syncing = false;
  const syncNext = () => {
    if (syncing || waiting.length === 0) return;
    syncing = true;
    const covered = waiting;
    waiting = [];
    fdatasync(fd, (err) => {
      syncing = false;
      for (const done of covered) done(err);
      syncNext();
    });
  };
  return startBareHttp(
    encoding,
    (request, answer) => {
      const failed = [];
      for (const rs of request.resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? []) for (const span of ss.spans ?? []) if (span.status?.code === 2) failed.push(span);
      const line = JSON.stringify(failed);
      // Padded to minBytes (--bare-bytes), as many bytes as vigil writes a request, where asked.
      writeSync(fd, line.length + 1 >= minBytes ? line + '\n' : line + ' '.repeat(minBytes - line.length - 1) + '\n');
      waiting.push((err) => answer(!err));
      syncNext();
    },
    () => {
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    },
  );
}

async function startBareGrpc(): Promise<Running> {
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 64 << 20 });
  server.addService(
    {
      Export: {
        path: EXPORT_PATH,
        requestStream: false,
        responseStream: false,
        requestDeserialize: (b: Buffer) => TraceRequest.decode(b),
        requestSerialize: () => Buffer.alloc(0),
        responseSerialize: () => Buffer.alloc(0),
        responseDeserialize: () => ({}),
      },
    },
    { Export: (_call: unknown, callback: grpc.sendUnaryData<object>) => callback(null, {}) },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return { target: `127.0.0.1:${port}`, stop: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())) };
}

function listen(server: HttpServer): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
}

// ---------------------------------------------------------------------------------------------
// vigil in process

// ---------------------------------------------------------------------------------------------
// The decoders alone

/** Per request and per span, on batches of each size: vigil's decoders beside protobufjs and JSON.parse. */
async function decoderTable(sizes: number[]): Promise<void> {
  const { decodeTracesJson } = await import('../src/receivers/otlp/json.ts');
  const { decodeTracesProtobuf } = await import('../src/receivers/otlp/protobuf.ts');
  console.log(
    'decoders alone (CPU time per request, best of 7 rounds; vigil "check" builds only the spans the relevance test lets through, "+marks" also keeps the ' +
      'facts of successful model, tool and agent spans as activity marks (never built), "build" builds all; "protobufjs + normalize" converts protobufjs\'s ' +
      'output to the records "build" makes, without validation or bounds (bench/protobufjs-normalize.ts): a lower bound for protobufjs behind vigil\'s checks):',
  );
  console.log(
    'spans  | protobufjs decode  protobufjs + normalize  vigil check  +marks  vigil build | JSON.parse  vigil check  +marks  vigil build | µs/span (vigil check: protobuf, JSON; +marks)',
  );
  for (const size of sizes) {
    const p = buildPayloads(size);
    const json = Buffer.from(p.json.template);
    const pb = Buffer.from(p.protobuf.template);
    const t = {
      pbjs: cpuMs(() => TraceRequest.decode(pb)),
      pbjsNormalize: cpuMs(() => protobufjsToNormalized(TraceRequest.decode(pb))),
      pbCheck: cpuMs(() => decodeTracesProtobuf(pb, { skipIrrelevant: true })),
      pbMarks: cpuMs(() => decodeTracesProtobuf(pb, { skipIrrelevant: true, markers: true })),
      pbBuild: cpuMs(() => decodeTracesProtobuf(pb)),
      parse: cpuMs(() => JSON.parse(json.toString('utf8'))),
      jsonCheck: cpuMs(() => decodeTracesJson(json, { skipIrrelevant: true })),
      jsonMarks: cpuMs(() => decodeTracesJson(json, { skipIrrelevant: true, markers: true })),
      jsonBuild: cpuMs(() => decodeTracesJson(json)),
    };
    const f = (v: number) => `${v.toFixed(3)} ms`.padStart(11);
    const us = (v: number) => ((v * 1000) / size).toFixed(2);
    console.log(
      `${String(size).padStart(6)} | ${f(t.pbjs).padStart(17)} ${f(t.pbjsNormalize).padStart(23)} ${f(t.pbCheck)} ${f(t.pbMarks).padStart(7)} ${f(t.pbBuild)} | ${f(t.parse)} ${f(t.jsonCheck)} ${f(t.jsonMarks).padStart(7)} ${f(t.jsonBuild)} | ` +
        `${us(t.pbCheck)}, ${us(t.jsonCheck)}; ${us(t.pbMarks)}, ${us(t.jsonMarks)}`,
    );
  }
  console.log('');
}

/** CPU milliseconds per call: the best of 7 rounds, each long enough to be measured. */
function cpuMs(fn: () => unknown): number {
  let n = 1;
  for (;;) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < n; i++) fn();
    const c = process.cpuUsage(c0);
    if (c.user + c.system > 20_000) break;
    n *= 2;
  }
  let best = Infinity;
  for (let round = 0; round < 7; round++) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < n; i++) fn();
    const c = process.cpuUsage(c0);
    best = Math.min(best, (c.user + c.system) / 1000 / n);
  }
  return best;
}
