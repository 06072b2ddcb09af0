/**
 * bench:stall-timeline — how vigil answers around a stall of its event loop: vigil/sqlite as in
 * bench:ingest (the SQLite default chain), an open loop of --rate requests/s (55) of --encoding
 * (json or protobuf; json), and the main thread held busy --stall ms (1000) every --every s (6)
 * for --duration s (20). Prints each stall's neighbourhood as the longest latency of the requests
 * scheduled in each --bin ms (100), from two bins before it: a line that falls by a bin's width per
 * bin is requests answered together; one that stays flat, vigil not catching up. bench:ingest
 * --inject-stall times the bare servers under the same stalls (Performance, round 35).
 */
import { buildPayloads } from './otlp-payloads.ts';
import { percentile } from './quantile.ts';
import { injectStalls, load, loadSpec, startVigil, type Encoding } from './harness.ts';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const encoding = (args.encoding ?? 'json') as Encoding;
if (encoding !== 'json' && encoding !== 'protobuf') throw new Error(`--encoding must be json or protobuf, got '${encoding}'`);
const rate = Number(args.rate ?? 55);
const stallMs = Number(args.stall ?? 1000);
const everyMs = Number(args.every ?? 6) * 1000;
const durationMs = Number(args.duration ?? 20) * 1000;
const binMs = Number(args.bin ?? 100);
const warmupMs = 1000;

const vigil = await startVigil(encoding, 'sqlite', undefined);
const payloads = buildPayloads(512);
const payload = encoding === 'json' ? payloads.json : payloads.protobuf;
try {
  // Untimed: connections, compiled code and a first round of pages.
  await load(loadSpec(encoding, vigil.target, payload, 8, rate, 500, 3000, 1, 'random'));
  await vigil.drained!();
  // When each stall began, in ms since the epoch: the schedule's times are the worker thread's.
  const stalls: number[] = [];
  const called = performance.timeOrigin + performance.now();
  const cancel = injectStalls({ ms: stallMs, everyMs, fromMs: warmupMs, untilMs: warmupMs + durationMs }, (at) => stalls.push(called + at));
  const result = await load(loadSpec(encoding, vigil.target, payload, 8, rate, warmupMs, durationMs, 1_000_001, 'random'));
  cancel();
  await vigil.drained!();
  const sorted = [...result.latencies].sort((a, b) => a - b);
  const q = (p: number) => percentile(sorted, p).toFixed(1);
  console.log(
    `bench:stall-timeline — vigil/sqlite, OTLP/${encoding} at ${rate} requests/s for ${durationMs / 1000} s, the event loop held ${stallMs} ms every ${everyMs / 1000} s (Node.js ${process.version})`,
  );
  console.log(`${result.requests} requests: p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${q(1)} ms, ${sorted.filter((l) => l > 50).length} over 50 ms`);
  const bins = new Map<number, number>();
  result.latencies.forEach((latency, i) => {
    const bin = Math.floor(result.sentAt![i]! / binMs);
    bins.set(bin, Math.max(bins.get(bin) ?? 0, latency));
  });
  for (const epochMs of stalls) {
    const at = epochMs - result.measureFromEpochMs!;
    const first = Math.floor(at / binMs) - 2;
    const line = Array.from({ length: 24 }, (_, k) => {
      const v = bins.get(first + k);
      return v === undefined ? '-' : Math.round(v).toString();
    });
    console.log(`  stall at ${(at / 1000).toFixed(1)} s, longest latency (ms) per ${binMs} ms of schedule from ${(2 * binMs) / 1000} s before: ${line.join(' ')}`);
  }
} finally {
  await vigil.stop();
}
