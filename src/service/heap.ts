/**
 * V8 settings for the process that runs vigil, set once at its start (`vigil run`; the benchmarks
 * set the same, so they measure what users run).
 *
 * Allocation-site pretenuring is off. V8 allocates the objects of a site whose objects mostly
 * survived a scavenge straight in the old generation; vigil's request and page objects live just
 * long enough (a request waits for its sync, a page for its commit) for many of its sites to be
 * chosen, and then die young anyway. Their young children stay alive behind those dead old
 * objects until the next mark-compact: every scavenge copies them and promotes them. Off, the
 * garbage collector took about half the time at 45 requests/s on the SQLite default, with
 * shorter scavenges and a lower ack p99 in 11 comparisons of 12 (README, Performance, round 24).
 *
 * The young generation's semi-spaces are at most 16 MB, as V8 sizes them on Node.js 20 and 22.
 * Node.js 24's V8 lets them grow to 64 MB: a scavenge then runs a quarter as often but copies more
 * of what is alive at that moment (the requests in flight, the pages waiting for their commits)
 * and holds the event loop about twice as long, 7–9 ms on average against 3–3.5, on the SQLite
 * default at half its maximum rate; protobuf's ack p99 followed (README, Performance, round 34).
 * V8 reads this size only when the process starts (a flag set at run time changes nothing), so a
 * process started without it replaces itself with one started with it.
 */
import { setFlagsFromString } from 'node:v8';

/** The young generation vigil runs with (MB per semi-space). */
export const YOUNG_GENERATION_FLAG = '--max-semi-space-size=16';

/** Idempotent: setting a flag to what it is changes nothing. */
export function tuneHeap(): void {
  setFlagsFromString('--no-allocation-site-pretenuring');
}

/** The young-generation size the command line or NODE_OPTIONS chose (the flag as given), if any. */
export function chosenYoungGeneration(execArgv: readonly string[], nodeOptions: string | undefined): string | undefined {
  const chosen = (arg: string) => arg.startsWith('--max-semi-space-size') || arg.startsWith('--max_semi_space_size');
  return execArgv.find(chosen) ?? (nodeOptions ?? '').split(/\s+/).find(chosen);
}

/**
 * Whether this process needs YOUNG_GENERATION_FLAG and can restart itself with it: not on Node.js
 * 20 and 22, whose V8 already sizes the young generation so; not when the command line or
 * NODE_OPTIONS chose a size (the operator's choice stands); not where `process.execve` is missing
 * (Node.js before 22.15, Windows). Pure, for tests.
 */
export function needsYoungGenerationRestart(nodeMajor: number, execArgv: readonly string[], nodeOptions: string | undefined, canExecve: boolean): boolean {
  return nodeMajor >= 24 && canExecve && chosenYoungGeneration(execArgv, nodeOptions) === undefined;
}

/**
 * Replaces this process with the same command started with YOUNG_GENERATION_FLAG, where
 * needsYoungGenerationRestart says so; returns otherwise. `process.execve` keeps the process id,
 * the environment, stdin, stdout and stderr (no other open file: call it first, before the process
 * opens or starts anything), so a supervisor, a pid file or a SIGKILL reaches the restarted process
 * as it would have this one.
 */
export function restartWithYoungGeneration(): void {
  const execve = (process as { execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => never }).execve;
  const major = Number(process.versions.node.split('.')[0]);
  if (!needsYoungGenerationRestart(major, process.execArgv, process.env.NODE_OPTIONS, typeof execve === 'function')) return;
  try {
    execve!.call(process, process.execPath, [process.execPath, YOUNG_GENERATION_FLAG, ...process.execArgv, ...process.argv.slice(1)], process.env);
  } catch {
    // execve(2) refused (the process is unchanged then): vigil runs with V8's young generation.
  }
}
