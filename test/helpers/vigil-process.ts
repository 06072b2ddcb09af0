/** Runs the real `vigil` CLI as a child process for end-to-end tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');
/** The shipped command: bin/vigil.js runs the compiled dist/ (built by `npm run build`). */
export const BIN = join(ROOT, 'bin/vigil.js');

/**
 * How a test starts vigil (node's arguments before vigil's own): the sources through tsx's loader,
 * so a test sees the code as edited without a build; `VIGIL_TEST_BIN=dist` runs the compiled bin
 * instead (test/dist-bin.test.ts always does).
 */
export function vigilArgv(bin: 'sources' | 'dist' = process.env.VIGIL_TEST_BIN === 'dist' ? 'dist' : 'sources'): string[] {
  return bin === 'dist' ? [BIN] : ['--import', import.meta.resolve('tsx'), join(ROOT, 'src/cli/bin.ts')];
}

/** Temporary directories this process made: removed when it exits (each test file runs as a process of its own). */
const madeDirs: string[] = [];

/** A new directory in the system's temp dir, removed at this process's exit unless `VIGIL_KEEP_TEMP=1` (to look at a failed run). */
export function tempDir(prefix = 'vigil-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (madeDirs.push(dir) === 1) process.once('exit', removeTempDirs);
  return dir;
}

function removeTempDirs(): void {
  if (process.env.VIGIL_KEEP_TEMP === '1') return;
  for (const dir of madeDirs) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // A directory still in use (a tmpfs a failed test left mounted) stays, as it did before.
    }
  }
}

/**
 * A port free now, claimed for this test run across processes. The suite runs its files in parallel,
 * each asking the kernel for free ports that are only bound later (by a vigil child), and the kernel
 * may hand the same free port to two files in that gap: then one vigil cannot listen and exits,
 * and its test's health check reaches the other file's vigil on the shared health port — "ready" —
 * while its own receivers refuse every connection (CI failed once so). A claim is a file named by
 * the port in a shared directory, created exclusively; a port claimed in the last PORT_CLAIM_MS is
 * skipped, an older claim (an earlier run) is taken over.
 *
 * The port comes from below the kernel's ephemeral range (ip_local_port_range), where the kernel never
 * picks on its own: a server a test binds to port 0 (a capture server, the fake OpenAI) or a client's
 * outgoing socket cannot take a port claimed here before its vigil binds it. Ports from the ephemeral
 * range could: a fake OpenAI server once got the port another file had claimed for its vigil, and
 * recorded that file's readiness probe as a request of its agent (CI failed once so).
 */
export async function freePort(opts: { alsoFree?: number } = {}): Promise<number> {
  mkdirSync(PORT_CLAIMS, { recursive: true });
  const offset = opts.alsoFree;
  for (let attempt = 0; ; attempt++) {
    const port = await unclaimedCandidate(offset);
    // The second port is claimed first: a port in it is never a candidate of freePort() alone
    // (below the ephemeral range by `offset`), only of another caller asking for a pair.
    if (offset !== undefined && !claim(port + offset, attempt)) continue;
    if (claim(port, attempt)) return port;
  }
}

/** Claims `port` for this run; false when another file claimed it lately (taken over after 100 attempts). */
function claim(port: number, attempt: number): boolean {
  const file = join(PORT_CLAIMS, String(port));
  try {
    writeFileSync(file, String(process.pid), { flag: 'wx' });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    if (Date.now() - statSync(file).mtimeMs > PORT_CLAIM_MS || attempt >= 100) {
      writeFileSync(file, String(process.pid));
      return true;
    }
    return false;
  }
}

const PORT_CLAIMS = join(tmpdir(), 'vigil-test-ports');
/** Longer than the suite runs (a few minutes): no two of its files get the same port. */
const PORT_CLAIM_MS = 30 * 60_000;

/** Where claimed ports are drawn from: above the machine's services (PostgreSQL, Redis, RabbitMQ, NATS, ...), below the ephemeral range. */
const CLAIM_RANGE_LOW = 20_000;

/** The first port of the kernel's ephemeral range; undefined where it cannot be read (not Linux). */
export function ephemeralLow(): number | undefined {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) ? low : undefined;
  } catch {
    return undefined;
  }
}

const EPHEMERAL_LOW = ephemeralLow();

/**
 * A port free now: drawn from below the ephemeral range where there is room (at least 1,000 ports),
 * else the kernel's choice. With `offset`, `port + offset` is free too and also below the range (a
 * Redis Cluster node listens on its port + 10,000 for its cluster bus).
 */
async function unclaimedCandidate(offset?: number): Promise<number> {
  const high = EPHEMERAL_LOW === undefined ? undefined : EPHEMERAL_LOW - (offset ?? 0);
  for (;;) {
    const port = high === undefined || high - CLAIM_RANGE_LOW < 1000 ? await listenOnce(0) : CLAIM_RANGE_LOW + Math.floor(Math.random() * (high - CLAIM_RANGE_LOW));
    try {
      await listenOnce(port);
      if (offset !== undefined) await listenOnce(port + offset);
      return port;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EADDRINUSE' && code !== 'EACCES' && code !== 'ERR_SOCKET_BAD_PORT') throw err;
    }
  }
}

/** Binds 127.0.0.1:`port` (0: the kernel picks), closes, and returns the port bound. */
function listenOnce(port: number): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => {
      const bound = (srv.address() as { port: number }).port;
      srv.close(() => resolvePort(bound));
    });
  });
}

export interface VigilChild {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** `entry`: what node runs instead of vigil's bin (e.g. `['--import', 'tsx', script]`). */
export function spawnVigil(
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string; bin?: 'sources' | 'dist'; entry?: string[] } = {},
): VigilChild {
  const child = spawn(process.execPath, [...(opts.entry ?? vigilArgv(opts.bin)), ...args], {
    cwd: opts.cwd ?? ROOT,
    env: { ...process.env, ...opts.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  if (opts.input !== undefined) child.stdin!.end(opts.input);
  const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Polls `check` until it returns a value (not undefined) or the time runs out. */
export async function waitFor<T>(check: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 15_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ''}`);
}

/**
 * Waits until `ready` answers true for a vigil child just spawned (a health check, a receiver
 * answering). It fails at once when the child exits, and on a timeout it kills the child: a child
 * not yet in its test's list of children would outlive the test file, and the runner would wait
 * for it forever. Either way the error carries the child's stderr as it was at the failure (a
 * message built before the wait would hold none of it).
 */
export async function untilReady(v: VigilChild, ready: () => Promise<boolean>, what = 'vigil to be ready', timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    const status = v.child.exitCode ?? v.child.signalCode;
    if (status !== null) throw new Error(`vigil exited (${status}) while waiting for ${what}:\n${v.stderr().slice(-4000)}`);
    if (Date.now() >= deadline) {
      v.child.kill('SIGKILL');
      const why = lastError ? `: ${(lastError as Error).message}` : '';
      throw new Error(`timed out waiting for ${what}${why}; vigil killed. Its stderr:\n${v.stderr().slice(-4000)}`, { cause: lastError });
    }
    try {
      if (await ready()) return;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** `ready` for `untilReady`: the health check extension answers 200 at `base` (`http://127.0.0.1:<port>`). */
export const healthy = (base: string) => async (): Promise<boolean> => (await fetch(`${base}/healthz`)).status === 200;

/** `ready` for `untilReady`: an OTLP/HTTP receiver accepts an empty JSON request at `url`. */
export const accepting = (url: string) => async (): Promise<boolean> =>
  (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status === 200;

/**
 * Crash tests' writer child: runs the test helper `script` (through tsx) with `args`, waits until
 * it prints `ready`, lets it work `delayMs`, then SIGKILLs it; resolves to everything it printed
 * (its record of what it had acknowledged when it died).
 */
export async function killWhileWorking(script: string, args: string[], delayMs: number): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, script), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const exited = new Promise((r) => child.once('exit', r));
  await new Promise<void>((resolveReady, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('ready\n')) resolveReady();
    });
    child.once('exit', () => reject(new Error(`${script} exited before it was ready: ${out}`)));
  });
  await new Promise((r) => setTimeout(r, delayMs));
  child.kill('SIGKILL');
  await exited;
  return out;
}

export function writeConfig(dir: string, yaml: string): string {
  const file = join(dir, 'pipeline.yaml');
  writeFileSync(file, yaml);
  return file;
}
