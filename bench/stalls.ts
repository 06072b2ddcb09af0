/**
 * What the event loop ran while requests waited: reads a V8 CPU profile of a `bench:ingest` run
 * and the event-loop gaps that run recorded with `--stalls=FILE`, and attributes the profile's
 * samples that fall inside the gaps, by the function they were in (self) and by the functions on
 * their stack (inclusive; vigil's own, from src/). README, Performance, round 12:
 *
 *   node --cpu-prof --cpu-prof-dir=prof --cpu-prof-interval 250 --import tsx bench/ingest.ts \
 *     --sizes= --only=json,protobuf --setups=sqlite --no-bare --stalls=prof/gaps.json
 *   node --import tsx bench/stalls.ts prof prof/gaps.json
 *
 * The first argument is a profile or the directory `--cpu-prof-dir` wrote: there the main
 * thread's profile is taken (thread id 0 in the file name; every worker thread writes its own).
 * Samples and gaps share a clock: V8 stamps samples in microseconds of the monotonic clock, which
 * is the clock of `process.hrtime`, where the gaps were read.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
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

function main(): void {
  const [profileArg, gapsArg] = process.argv.slice(2);
  if (!profileArg || !gapsArg) throw new Error('usage: bench/stalls.ts PROFILE_OR_DIRECTORY GAPS.json');
  const profile = JSON.parse(readFileSync(mainThreadProfile(profileArg), 'utf8')) as Profile;
  const gaps = (JSON.parse(readFileSync(gapsArg, 'utf8')) as { gaps: Array<[number, number, string]> }).gaps.sort((a, b) => a[0] - b[0]);
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const name = (n: ProfileNode) => `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').slice(-2).join('/')}`;
  const ours = (n: ProfileNode) => n.callFrame.url.includes('/src/');

  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let inGaps = 0;
  let time = profile.startTime;
  let g = 0;
  profile.samples.forEach((sample, i) => {
    time += profile.timeDeltas[i]!;
    while (g < gaps.length && gaps[g]![1] < time) g++;
    if (g >= gaps.length || time < gaps[g]![0]) return;
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
}

main();
