/**
 * What the event loop ran while requests waited: reads a V8 CPU profile of a `bench:ingest` run
 * and the event-loop gaps that run recorded with `--stalls=FILE`, and attributes the profile's
 * samples that fall inside the gaps, by the function they were in (self) and by the functions on
 * their stack (inclusive; vigil's own, from src/). README, Performance, round 12:
 *
 *   node --cpu-prof --cpu-prof-dir=prof --cpu-prof-interval 250 --import tsx bench/ingest.ts \
 *     --sizes= --only=json,protobuf --setups=sqlite --no-bare --stalls=prof/gaps.json
 *   node --import tsx bench/stalls.ts prof prof/gaps.json [--long=12]
 *
 * With `--long=MS`, every gap of MS or more is also listed with what filled it, by stage (the
 * request's decode, its mapping and the rest of its handling, the group commit of appends, a
 * pipeline page, an exporter's delivery, a correlation round, the garbage collector, idle: the
 * thread waiting for a CPU or for the 1 ms timer), then the stages' totals over those gaps: whether
 * the long gaps are one long task or several requests' work back to back (README, Performance,
 * round 25). A 1000 µs sampling interval (`--cpu-prof-interval 1000`) disturbs the run least.
 *
 * The first argument is a profile or the directory `--cpu-prof-dir` wrote: there the main
 * thread's profile is taken (thread id 0 in the file name; every worker thread writes its own).
 * Samples and gaps share a clock: V8 stamps samples in microseconds of the monotonic clock, which
 * is the clock of `process.hrtime`, where the gaps were read.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

function mainThreadProfile(path: string): string {
  if (!statSync(path).isDirectory()) return path;
  // CPU.<date>.<time>.<pid>.<thread id>.<sequence>.cpuprofile
  const main = readdirSync(path).filter((f) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(f));
  if (main.length !== 1) throw new Error(`expected one main-thread profile (thread id 0) in ${path}, found ${main.length}: ${main.join(', ')}`);
  return join(path, main[0]!);
}

/**
 * The stage a sample belongs to, by the frames on its stack (leaf first): the first rule that
 * matches any frame wins, so a request's decode counts as decode, not as the request's handling.
 */
const STAGES: ReadonlyArray<[stage: string, test: (f: ProfileNode['callFrame']) => boolean]> = [
  ['decode', (f) => f.functionName === 'decodeBody'],
  ['map', (f) => f.functionName === 'mapTraces' || f.functionName === 'mapLogs'],
  ['append commit', (f) => f.functionName === 'commitAppends'],
  ['pipeline page', (f) => f.url.endsWith('/service/pipeline-runner.ts') || f.url.includes('/src/processors/')],
  ['delivery', (f) => f.url.endsWith('/service/exporter-runner.ts')],
  ['correlation round', (f) => f.url.endsWith('/service/correlation-runner.ts')],
  ['request, other', (f) => f.url.includes('/src/receivers/')],
];

export function stageOf(stack: readonly ProfileNode[]): string {
  const leaf = stack[0]!.callFrame.functionName;
  if (leaf === '(garbage collector)') return 'garbage collector';
  if (leaf === '(idle)' || leaf === '(program)') return 'idle';
  for (const [stage, test] of STAGES) if (stack.some((n) => test(n.callFrame))) return stage;
  return 'other';
}

function main(): void {
  const args = process.argv.slice(2);
  const [profileArg, gapsArg] = args.filter((a) => !a.startsWith('--'));
  const longArg = args.find((a) => a.startsWith('--long='));
  const longMs = longArg === undefined ? undefined : Number(longArg.slice('--long='.length));
  if (!profileArg || !gapsArg || (longMs !== undefined && !(longMs > 0))) {
    throw new Error('usage: bench/stalls.ts PROFILE_OR_DIRECTORY GAPS.json [--long=MS]');
  }
  const profile = JSON.parse(readFileSync(mainThreadProfile(profileArg), 'utf8')) as Profile;
  const gaps = (JSON.parse(readFileSync(gapsArg, 'utf8')) as { gaps: Array<[number, number, string]> }).gaps.sort((a, b) => a[0] - b[0]);
  const { nodes, parent } = treeOf(profile);
  const name = (n: ProfileNode) => `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').slice(-2).join('/')}`;
  const ours = (n: ProfileNode) => n.callFrame.url.includes('/src/');

  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let inGaps = 0;
  forSamplesInGaps(profile, gaps, (sample) => {
    inGaps++;
    const leaf = nodes.get(sample)!;
    self.set(name(leaf), (self.get(name(leaf)) ?? 0) + 1);
    const seen = new Set<string>();
    for (let id: number | undefined = sample; id !== undefined; id = parent.get(id)) {
      const n = nodes.get(id)!;
      if (!ours(n) || seen.has(name(n))) continue;
      seen.add(name(n));
      inclusive.set(name(n), (inclusive.get(name(n)) ?? 0) + 1);
    }
  });

  const stalled = gaps.reduce((sum, [start, end]) => sum + (end - start), 0) / 1000;
  const longest = gaps.reduce((max, [start, end]) => Math.max(max, end - start), 0) / 1000;
  console.log(`${gaps.length} gaps, ${stalled.toFixed(0)} ms stalled in all, the longest ${longest.toFixed(1)} ms; ${inGaps} profile samples inside them`);
  if (inGaps === 0) throw new Error('no samples inside the gaps: were the profile and the gaps taken in the same run?');
  const table = (title: string, counts: Map<string, number>, rows: number) => {
    console.log(`\n${title}`);
    for (const [k, c] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, rows)) console.log(`${((100 * c) / inGaps).toFixed(1).padStart(6)}%  ${k}`);
  };
  table('self (the function a sample was in; native calls count in their caller)', self, 20);
  table("inclusive (vigil's functions on the sample's stack)", inclusive, 40);
  if (longMs !== undefined) longGaps(gaps, stagesByGap(profile, gaps), longMs);
}

/**
 * Milliseconds of profile samples by stage (stageOf) inside each gap, in the gaps' order (sorted
 * by start, as main sorts them). A sample counts with its time delta, the time since the sample
 * before it, in the gap its timestamp falls in.
 */
export function stagesByGap(profile: Profile, gaps: ReadonlyArray<readonly [number, number, string]>): Array<Map<string, number>> {
  const { nodes, parent } = treeOf(profile);
  const stages = gaps.map(() => new Map<string, number>());
  const stageCache = new Map<number, string>();
  forSamplesInGaps(profile, gaps, (sample, g, deltaUs) => {
    let stage = stageCache.get(sample);
    if (stage === undefined) {
      const stack: ProfileNode[] = [];
      for (let id: number | undefined = sample; id !== undefined; id = parent.get(id)) stack.push(nodes.get(id)!);
      stage = stageOf(stack);
      stageCache.set(sample, stage);
    }
    const m = stages[g]!;
    m.set(stage, (m.get(stage) ?? 0) + deltaUs / 1000);
  });
  return stages;
}

/** The profile's nodes by id, and each node's parent. */
function treeOf(profile: Profile): { nodes: Map<number, ProfileNode>; parent: Map<number, number> } {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  return { nodes, parent };
}

/** Calls `visit` for each sample whose timestamp falls in a gap (gaps sorted by start), with the gap's index and the sample's time delta (µs). */
function forSamplesInGaps(
  profile: Profile,
  gaps: ReadonlyArray<readonly [number, number, string]>,
  visit: (sample: number, gap: number, deltaUs: number) => void,
): void {
  let time = profile.startTime;
  let g = 0;
  profile.samples.forEach((sample, i) => {
    time += profile.timeDeltas[i]!;
    while (g < gaps.length && gaps[g]![1] < time) g++;
    if (g >= gaps.length || time < gaps[g]![0]) return;
    visit(sample, g, profile.timeDeltas[i]!);
  });
}

/** Each gap of `longMs` or more with its stages (ms, largest first), then the stages' totals over them. */
function longGaps(gaps: ReadonlyArray<readonly [number, number, string]>, stages: Array<Map<string, number>>, longMs: number): void {
  const totals = new Map<string, number>();
  let count = 0;
  let stalled = 0;
  console.log(`\ngaps of ${longMs} ms or more, with their slice, by stage (ms of profile samples; the rest of a gap fell between samples):`);
  gaps.forEach(([start, end, slice], i) => {
    const ms = (end - start) / 1000;
    if (ms < longMs) return;
    count++;
    stalled += ms;
    const parts = [...stages[i]!].sort((a, b) => b[1] - a[1]);
    for (const [stage, v] of parts) totals.set(stage, (totals.get(stage) ?? 0) + v);
    console.log(`${ms.toFixed(1).padStart(7)}  ${slice}: ${parts.map(([stage, v]) => `${stage} ${v.toFixed(1)}`).join(', ')}`);
  });
  console.log(`\n${count} gaps of ${longMs} ms or more, ${stalled.toFixed(0)} ms in all; by stage:`);
  for (const [stage, v] of [...totals].sort((a, b) => b[1] - a[1])) console.log(`${v.toFixed(0).padStart(7)} ms  ${stage}`);
}

// Run as a script (node bench/stalls.ts …); imported by its test, it only exports.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) main();
