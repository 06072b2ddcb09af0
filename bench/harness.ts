/**
 * What the ingest benches share (bench/ingest.ts, bench/ack-phases.ts): the load generator, run in
 * a worker thread, and vigil started in this process with the benches' pipeline.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { chosenYoungGeneration, restartWithYoungGeneration, tuneHeap } from '../src/service/heap.ts';
import type { MachineTimes } from './machine-speed.ts';
import { TIME_BASE_NANOS, type Payload } from './otlp-payloads.ts';

export type Encoding = 'json' | 'protobuf' | 'grpc';
export type TraceIds = 'random' | 'ordered';
/** Timestamps of a request: shifted to the time it is sent ('now', as an SDK's export), or the template's ('fixed', every request the same). */
export type Times = 'now' | 'fixed';
export type Setup = 'memory' | 'sqlite';

const ROOT = resolve(import.meta.dirname, '..');

// The benches run vigil in their own process: it starts with vigil run's young generation (on
// Node.js 24, a restart of the bench with the flag, before anything runs), unless told otherwise.
if (!process.env.VIGIL_BENCH_V8_DEFAULTS) restartWithYoungGeneration();

export interface LoadSpec {
  root: string;
  /** http://host:port/v1/traces, or host:port for gRPC. */
  target: string;
  grpc: boolean;
  contentType: string;
  template: Uint8Array;
  offsets: number[];
  /** The template's timestamps (offset, ns as text) and where they start: shifted per request unless `times` is 'fixed'. */
  timeFields: Array<[number, string]>;
  timeBase: string;
  times: Times;
  binary: boolean;
  concurrency: number;
  /** Requests per second for an open-loop run; 0 for back-to-back clients. */
  rate: number;
  warmupMs: number;
  durationMs: number;
  /** First request number (keeps trace ids unique across runs). */
  firstRequest: number;
  traceIds: TraceIds;
  /** Each HTTP request carries its number in an `x-bench-request` header, for a probe in the server to join its times to the client's (bench:ack-phases). */
  numberRequests?: boolean;
}

export interface LoadResult {
  /** Requests answered and timed (after the warm-up). */
  requests: number;
  /** Requests answered during the warm-up, not timed. */
  warmupRequests?: number;
  failures: number;
  /** Failed requests by why: `http 503`, `grpc status 8`, `request ECONNRESET`, ... */
  failureReasons?: Record<string, number>;
  elapsedMs: number;
  /** Request latencies in ms. */
  latencies: number[];
  /** When each of them was scheduled (open loop) or sent (back to back), in ms after the warm-up: latencies[i] belongs to sentAt[i] (a load's own result; not kept where slices are merged and sorted). */
  sentAt?: number[];
  /** When the timed part began (the end of the warm-up), in ms since the epoch: what sentAt counts from. */
  measureFromEpochMs?: number;
  /** Open loop: each timed request's number (its `x-bench-request` header) and how late the client sent it after its schedule (ms; its payload built, the timer late), in latencies' order. */
  requestNumbers?: number[];
  sendLateMs?: number[];
  /** The longest the main thread (every server's) did not get back to its event loop, in ms. */
  loopStallMs?: number;
  /** Time the main thread was busy (not waiting in its event loop) during the slices and drains, in ms. */
  busyMs?: number;
  /** CPU time the main thread ran during the slices and drains, in ms (Linux; NaN elsewhere). */
  cpuMs?: number;
  /** Bytes the process caused to be written to storage during the slices and drains (Linux; NaN elsewhere). */
  diskBytes?: number;
  /** The whole machine's CPU time during the slices and drains, by kind (ticks; bench/machine-speed.ts; Linux). */
  machine?: MachineTimes;
}

/**
 * The load generator, run in a worker thread (its own event loop, so the server under test has the
 * main thread to itself). Plain JavaScript: Node 20 does not apply tsx's loader to workers.
 */
const LOAD_GENERATOR = `
const { parentPort, workerData: spec } = require('node:worker_threads');
const { request, Agent } = require('node:http');
const requireFromRoot = require('node:module').createRequire(spec.root + '/');
const template = Buffer.from(spec.template);
let next = spec.firstRequest;
const t0 = performance.now();
const measureFrom = t0 + spec.warmupMs;
const stopAt = measureFrom + spec.durationMs;
const latencies = [];
// When each timed request was scheduled (sent, for back-to-back clients), in ms after the warm-up.
const sentAt = [];
const requestNumbers = [];
const sendLateMs = [];
let failures = 0;
const failureReasons = {};
// Requests answered in the warm-up (not timed): the per-request figures of a slice count them too.
let warmupRequests = 0;
const timeFields = spec.timeFields.map(([at, ns]) => [at, BigInt(ns)]);
function body(n) {
  const b = Buffer.from(template);
  for (const offset of spec.offsets) {
    const prefix = traceIdPrefix(n, b, offset);
    if (spec.binary) b.writeUInt32BE(prefix, offset);
    else b.write(prefix.toString(16).padStart(8, '0'), offset, 'latin1');
  }
  if (spec.times === 'now') {
    // The template's first span starts now (its last ends about a second later): same digit count, written in place.
    const shift = BigInt(Date.now()) * 1000000n - BigInt(spec.timeBase);
    for (const [at, ns] of timeFields) {
      if (spec.binary) b.writeBigUInt64LE(ns + shift, at);
      else b.write(String(ns + shift), at, 'latin1');
    }
  }
  return b;
}
// The first 4 bytes of a trace id in request n. Random-looking as an SDK's (a hash of n and the
// id's next bytes, so every span of one trace gets the same), or the request number ('ordered':
// the ids of a request, and of consecutive requests, then sit side by side in any index).
function traceIdPrefix(n, b, offset) {
  if (spec.traceIds === 'ordered') return n >>> 0;
  const next = spec.binary ? b.readUInt32BE(offset + 4) : parseInt(b.toString('latin1', offset + 8, offset + 16), 16);
  let h = Math.imul(n ^ next, 0x9e3779b1);
  h = Math.imul(h ^ (h >>> 15), 0x85ebca77);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae3d);
  return (h ^ (h >>> 16)) >>> 0;
}
let send, close;
if (spec.grpc) {
  const grpc = requireFromRoot('@grpc/grpc-js');
  const client = new grpc.Client(spec.target, grpc.credentials.createInsecure(), { 'grpc.max_send_message_length': 64 << 20 });
  const id = (b) => b;
  send = (payload) => new Promise((resolve) => client.makeUnaryRequest('/opentelemetry.proto.collector.trace.v1.TraceService/Export', id, id, payload, (err) => resolve(err ? 'grpc status ' + err.code : true)));
  close = () => client.close();
} else {
  const agent = new Agent({ keepAlive: true, maxSockets: spec.rate > 0 ? 64 : spec.concurrency });
  const url = new URL(spec.target);
  send = (payload, n) => new Promise((resolve) => {
    const headers = { 'content-type': spec.contentType, 'content-length': payload.length };
    if (spec.numberRequests && n !== undefined) headers['x-bench-request'] = String(n);
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200 ? true : 'http ' + res.statusCode));
      res.on('error', (e) => resolve('response ' + (e.code ?? e.message)));
    });
    req.on('error', (e) => resolve('request ' + (e.code ?? e.message)));
    req.end(payload);
  });
  close = () => agent.destroy();
}
// A send resolves true, or why it failed (an HTTP status, a gRPC status, a socket error's code).
function record(ok, latency, at, n, late) {
  if (at < measureFrom) return void (warmupRequests += ok === true ? 1 : 0);
  if (ok === true) {
    latencies.push(latency);
    sentAt.push(at - measureFrom);
    if (n !== undefined) {
      requestNumbers.push(n);
      sendLateMs.push(late);
    }
  } else {
    failures++;
    failureReasons[ok] = (failureReasons[ok] ?? 0) + 1;
  }
}
async function client() {
  while (performance.now() < stopAt) {
    const payload = body(next++);
    const start = performance.now();
    const ok = await send(payload);
    record(ok, performance.now() - start, start);
  }
}
async function openLoop() {
  // Requests leave on a fixed schedule whatever the answers; latency counts from the scheduled time.
  const interval = 1000 / spec.rate;
  const inFlight = new Set();
  for (let i = 0; ; i++) {
    const scheduled = t0 + i * interval;
    if (scheduled >= stopAt) break;
    const wait = scheduled - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const n = next++;
    const payload = body(n);
    const sent = performance.now();
    const p = send(payload, n).then((ok) => { record(ok, performance.now() - scheduled, scheduled, n, sent - scheduled); inFlight.delete(p); });
    inFlight.add(p);
  }
  await Promise.all(inFlight);
}
const run = spec.rate > 0 ? openLoop() : Promise.all(Array.from({ length: spec.concurrency }, client));
run.then(() => {
  const elapsedMs = Math.max(performance.now(), stopAt) - measureFrom;
  close();
  parentPort.postMessage({ requests: latencies.length, warmupRequests, failures, failureReasons, elapsedMs, latencies, sentAt, measureFromEpochMs: performance.timeOrigin + measureFrom, requestNumbers, sendLateMs });
});
`;

export function loadSpec(
  encoding: Encoding,
  target: string,
  payload: Payload,
  concurrency: number,
  rate: number,
  warmupMs: number,
  durationMs: number,
  firstRequest: number,
  traceIds: TraceIds,
  times: Times = 'now',
): LoadSpec {
  return {
    root: ROOT,
    target,
    grpc: encoding === 'grpc',
    contentType: encoding === 'json' ? 'application/json' : 'application/x-protobuf',
    template: payload.template,
    offsets: payload.offsets,
    timeFields: payload.times,
    timeBase: String(TIME_BASE_NANOS),
    times,
    binary: encoding !== 'json',
    concurrency,
    rate,
    warmupMs,
    durationMs,
    firstRequest,
    traceIds,
  };
}

/** Stalls of the main thread to inject: `ms` long, every `everyMs`. */
export interface InjectedStalls {
  ms: number;
  everyMs: number;
}

/**
 * Holds the main thread busy `ms` every `everyMs`, from `fromMs` after now until `untilMs` less a
 * second (so every stall's aftermath is timed): the same stalls for every server a bench times.
 * `onStall` is told when each began, in ms after this call. Returns what cancels those not yet due.
 */
export function injectStalls({ ms, everyMs, fromMs, untilMs }: InjectedStalls & { fromMs: number; untilMs: number }, onStall?: (atMs: number) => void): () => void {
  const t0 = performance.now();
  const timers: NodeJS.Timeout[] = [];
  for (let at = fromMs + everyMs; at <= untilMs - 1000; at += everyMs) {
    timers.push(
      setTimeout(() => {
        const start = performance.now();
        onStall?.(start - t0);
        while (performance.now() < start + ms);
      }, at),
    );
  }
  return () => timers.forEach(clearTimeout);
}

export function load(spec: LoadSpec): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(LOAD_GENERATOR, { eval: true, workerData: spec });
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

export interface Running {
  /** The URL (HTTP) or host:port (gRPC) the clients send to. */
  target: string;
  stop(): Promise<void>;
  summary?: () => Promise<string>;
  /** Resolves once everything accepted so far has been processed (vigil's pipeline is idle). */
  drained?: () => Promise<void>;
}

/** What `vigil run` sets for its process (src/service/heap.ts), so a benchmark measures what users run; VIGIL_BENCH_V8_DEFAULTS=1 leaves V8's own. */
export function tuneBenchHeap(): void {
  if (!process.env.VIGIL_BENCH_V8_DEFAULTS) tuneHeap();
}

/** The V8 settings the bench runs vigil with, for its header. */
export function describeV8(): string {
  if (process.env.VIGIL_BENCH_V8_DEFAULTS) return "V8's defaults (VIGIL_BENCH_V8_DEFAULTS)";
  const young = chosenYoungGeneration(process.execArgv, process.env.NODE_OPTIONS) ?? "V8's default (vigil run's on Node.js 20 and 22)";
  return `V8: no allocation-site pretenuring (as vigil run), young generation ${young}`;
}

export async function startVigil(encoding: Encoding, setup: Setup, decodeThreads: number | undefined, failureWait = '0s'): Promise<Running> {
  tuneBenchHeap();
  const { components } = await import('../src/components.ts');
  const { loadConfigText } = await import('../src/config/load.ts');
  const { createLogger } = await import('../src/logger.ts');
  const { Service } = await import('../src/service/service.ts');
  const { freePort } = await import('../test/helpers/vigil-process.ts');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'vigil-bench-'));
  const protocol = encoding === 'grpc' ? `grpc: { endpoint: 127.0.0.1:${port} }` : `http: { endpoint: 127.0.0.1:${port} }`;
  const config = loadConfigText(
    `receivers:
  otlp:
    protocols:
      ${protocol}${decodeThreads === undefined ? '' : `\n    decode_threads: ${decodeThreads}`}
processors:
  classify: {}
  watchdog: {}
  recurrence: {}
exporters:
  file/work: { path: ${join(dir, 'work-events.jsonl')} }
state:
  ${setup === 'sqlite' ? `sqlite: { path: ${join(dir, 'state.db')} }` : 'memory: {}'}
service:
  # The failure wait is latency, not work: with it a slice's drain would time 5 s of idle waiting.
  # Without it nothing waits in the correlation log, so a batch skips it (README, Ingest).
  correlation: { failure_wait: ${failureWait} }
  pipelines:
    traces: { receivers: [otlp], processors: [${setup === 'sqlite' ? 'classify, watchdog, recurrence' : 'classify'}], exporters: [file/work] }
`,
    'bench.yaml',
    components(),
  );
  const service = new Service(config, components(), { logger: createLogger({ level: 'error' }) });
  await service.start();
  return {
    target: encoding === 'grpc' ? `127.0.0.1:${port}` : `http://127.0.0.1:${port}/v1/traces`,
    stop: async () => {
      await service.shutdown();
      rmSync(dir, { recursive: true, force: true });
    },
    drained: async () => {
      for (;;) {
        const status = (await service.status()) as { store: { pipelines: Array<{ partitions: Array<{ pending: number }> }> } };
        const pending = status.store.pipelines.flatMap((p) => p.partitions).reduce((n, p) => n + p.pending, 0);
        if (pending === 0) return;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    summary: async () => {
      const status = (await service.status()) as { receivers: { otlp: { traces: Record<string, number> } }; ingest: Record<string, number> };
      const t = status.receivers.otlp.traces;
      return `${t.requests} requests, ${t.accepted} spans accepted (${t.irrelevant} not relevant, checked but not built), ${status.ingest.appended} events (failures and activity markers) appended and processed`;
    },
  };
}

/** Failed requests by reason, most frequent first: `3 × http 503, 1 × request ECONNRESET`. */
export function describeFailures(reasons: Record<string, number> | undefined): string {
  const all = Object.entries(reasons ?? {}).sort((a, b) => b[1] - a[1]);
  return all.length === 0 ? 'no reason recorded' : all.map(([why, n]) => `${n} × ${why}`).join(', ');
}
