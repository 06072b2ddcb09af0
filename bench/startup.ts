/**
 * `npm run bench:startup`: how fast `vigil validate` and `vigil run` start, and how much memory
 * they take, as shipped (the compiled bin, dist/) beside the sources run through tsx's loader (how
 * the bin ran before it was compiled), in one run, alternating the two so a neighbour's load hits
 * both alike.
 *
 *   npm run bench:startup -- [--rounds 10] [--config pipeline.yaml]
 *
 * validate: wall time from spawn to exit, and the child's peak RSS. run: wall time from spawn to
 * the health check's first 200 (receivers listening, pipelines running), RSS at that moment, then
 * SIGTERM and the time to exit 0. Needs a current build (`npm run build`). Peak RSS is reported by
 * a one-line preload that writes `process.resourceUsage().maxRSS` at exit, the same for both.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, tempDir, waitFor } from '../test/helpers/vigil-process.ts';

const ROOT = resolve(import.meta.dirname, '..');
const { values: args } = parseArgs({
  options: { rounds: { type: 'string', default: '10' }, config: { type: 'string', default: join(ROOT, 'pipeline.yaml') } },
});
const ROUNDS = Number(args.rounds);
const CONFIG = resolve(args.config);

if (!existsSync(join(ROOT, 'dist/cli/bin.js'))) {
  process.stderr.write('bench:startup needs dist/: run `npm run build` first\n');
  process.exit(1);
}

const REPORT_MAX_RSS = `data:text/javascript,${encodeURIComponent("import{writeSync}from'node:fs';process.on('exit',()=>{try{writeSync(3,String(process.resourceUsage().maxRSS))}catch{}})")}`;

interface Variant {
  name: string;
  argv: string[];
}
const VARIANTS: Variant[] = [
  { name: 'compiled (dist/, the bin)', argv: ['--import', REPORT_MAX_RSS, join(ROOT, 'bin/vigil.js')] },
  { name: 'sources through tsx', argv: ['--import', 'tsx', '--import', REPORT_MAX_RSS, join(ROOT, 'src/cli/bin.ts')] },
];

interface Sample {
  ms: number;
  /** RSS in KiB: peak for validate, at readiness for run. */
  rssKiB: number;
  peakKiB: number;
  stopMs?: number;
}

function launch(v: Variant, cli: string[], env: NodeJS.ProcessEnv) {
  const started = performance.now();
  const child = spawn(process.execPath, [...v.argv, ...cli], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let maxRss = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  (child.stdio[3] as NodeJS.ReadableStream).on('data', (d: Buffer) => (maxRss += d.toString()));
  const exited = new Promise<{ code: number | null; at: number }>((res) => child.on('exit', (code) => res({ code, at: performance.now() })));
  const closed = new Promise<void>((res) => child.on('close', () => res()));
  return { child, started, exited, closed, stderr: () => stderr, maxRssKiB: () => (maxRss === '' ? NaN : Number(maxRss)) };
}

async function validateOnce(v: Variant): Promise<Sample> {
  const p = launch(v, ['validate', '-c', CONFIG], {});
  const { code, at } = await p.exited;
  await p.closed;
  if (code !== 0) throw new Error(`${v.name}: validate exited ${code}: ${p.stderr()}`);
  return { ms: at - p.started, rssKiB: p.maxRssKiB(), peakKiB: p.maxRssKiB() };
}

function vmRssKiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

async function runOnce(v: Variant): Promise<Sample> {
  const dir = tempDir('vigil-bench-startup-');
  const [otlp, health, metrics] = [await freePort(), await freePort(), await freePort()];
  const p = launch(v, ['run', '-c', CONFIG], {
    VIGIL_OTLP_HTTP_ENDPOINT: `127.0.0.1:${otlp}`,
    VIGIL_HEALTH_ENDPOINT: `127.0.0.1:${health}`,
    VIGIL_METRICS_ADDRESS: `127.0.0.1:${metrics}`,
    VIGIL_STATE_PATH: join(dir, 'state.db'),
    VIGIL_WORK_EVENTS: join(dir, 'work-events.jsonl'),
  });
  const readyAt = await waitFor(
    async () => {
      if (p.child.exitCode !== null) throw new Error(`${v.name}: run exited ${p.child.exitCode}: ${p.stderr()}`);
      const res = await fetch(`http://127.0.0.1:${health}/healthz`).catch(() => undefined);
      return res?.status === 200 ? performance.now() : undefined;
    },
    'vigil to be ready',
    60_000,
    5,
  );
  const rssKiB = vmRssKiB(p.child.pid!);
  const stopping = performance.now();
  p.child.kill('SIGTERM');
  const { code, at } = await p.exited;
  await p.closed;
  if (code !== 0) throw new Error(`${v.name}: run exited ${code} after SIGTERM: ${p.stderr()}`);
  return { ms: readyAt - p.started, rssKiB, peakKiB: p.maxRssKiB(), stopMs: at - stopping };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
// No peak for a `vigil run` that restarted itself (Node.js 24: src/service/heap.ts): the restart keeps
// only stdin, stdout and stderr, not the pipe the preload writes it to.
const mib = (kib: number) => (Number.isNaN(kib) ? 'n/a' : `${(kib / 1024).toFixed(1)} MiB`);

async function measure(what: string, once: (v: Variant) => Promise<Sample>): Promise<void> {
  const samples = new Map<Variant, Sample[]>(VARIANTS.map((v) => [v, []]));
  await once(VARIANTS[0]!); // warm the file cache for both
  await once(VARIANTS[1]!);
  for (let r = 0; r < ROUNDS; r++) for (const v of r % 2 ? [...VARIANTS].reverse() : VARIANTS) samples.get(v)!.push(await once(v));
  const base = samples.get(VARIANTS[1]!)!;
  console.log(`\n${what} (median of ${ROUNDS}; min–max)`);
  for (const v of VARIANTS) {
    const s = samples.get(v)!;
    const ms = s.map((x) => x.ms);
    const ratio = median(ms) / median(base.map((x) => x.ms));
    const stop = s[0]!.stopMs === undefined ? '' : `  stop ${median(s.map((x) => x.stopMs!)).toFixed(0)} ms`;
    console.log(
      `  ${v.name.padEnd(28)} ${median(ms).toFixed(0).padStart(5)} ms (${Math.min(...ms).toFixed(0)}–${Math.max(...ms).toFixed(0)}, ${ratio.toFixed(2)}×)  RSS ${mib(median(s.map((x) => x.rssKiB)))}  peak ${mib(median(s.map((x) => x.peakKiB)))}${stop}`,
    );
  }
}

console.log(`node ${process.version}, ${CONFIG}, load ${(await import('node:os')).loadavg()[0]!.toFixed(2)}`);
await measure('vigil validate: spawn → exit', validateOnce);
await measure('vigil run: spawn → /healthz 200 (RSS at that moment)', runOnce);
