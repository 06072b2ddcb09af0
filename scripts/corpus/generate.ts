/**
 * Builds test/corpus/cases.jsonl: runs real tools (python3, node, java, gcc, rustc, bash, git, npm,
 * make, perl, tsc) on programs that fail, warn or print noise in known ways, several variants each
 * with different volatile parts (temp dirs with random names, numbers, ids, ports, pids, quoted
 * values), and labels every run from the scenario's own knowledge of what it made the program do.
 *
 *   npm run corpus:generate            # all scenarios
 *   npm run corpus:generate -- py-     # only scenarios whose id starts with py- (printed, not written)
 *   npm run corpus:generate -- py-,git-init   # several prefixes, comma-separated
 *
 * One case per line: {id, tool, program, text, exit_code, expected: {classification, signature,
 * failure_id}}. Variant parameters are seeded, so a regeneration labels the same failures the same
 * way; temp dir names, pids and timestamps differ from run to run, as they do in real life.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:net';
import { collapseAndCut } from '../../src/processors/classify/text.ts';
import type { Ctx, Prepared, Rng, Run, Scenario } from './scenario.ts';
import { WORDS } from './scenario.ts';
import { scenarios } from './scenarios/index.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const OUT = join(ROOT, 'test/corpus/cases.jsonl');
/** Longest text kept in a case; longer outputs (deep JVM stacks) keep their head and tail. */
const MAX_TEXT = 24_000;

export interface CorpusCase {
  id: string;
  tool: string;
  program: string;
  text: string;
  exit_code: number;
  expected: { classification: string; signature: string | null; failure_id: string | null };
}

/** mulberry32, seeded from the scenario id and the variant. */
function rngFor(seedText: string, usedPorts: Set<number>, allocated: number[] = []): Rng {
  let h = 2166136261;
  for (let i = 0; i < seedText.length; i++) h = Math.imul(h ^ seedText.charCodeAt(i), 16777619);
  let a = h >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  const hex = (n: number) => Array.from({ length: n }, () => '0123456789abcdef'[int(0, 15)]).join('');
  return {
    int,
    pick: (items) => items[int(0, items.length - 1)]!,
    ident: () => `${WORDS[int(0, WORDS.length - 1)]}_${int(1, 999)}`,
    hex,
    uuid: () => `${hex(8)}-${hex(4)}-4${hex(3)}-${'89ab'[int(0, 3)]}${hex(3)}-${hex(12)}`,
    port: () => {
      // Ports chosen here are checked free before the run (see freePorts).
      for (;;) {
        const p = int(20000, 60000);
        if (!usedPorts.has(p)) {
          usedPorts.add(p);
          allocated.push(p);
          return p;
        }
      }
    },
  };
}

/** Environment for the tools: the machine's PATH and HOME, a plain terminal, no inherited npm/node settings. */
function baseEnv(v: number): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, val] of Object.entries(process.env)) {
    if (val === undefined) continue;
    if (/^(npm_|NODE_|INIT_CWD$|RUST_BACKTRACE$|PYTHON|LC_|LANG$|FORCE_COLOR$|NO_COLOR$|GIT_)/.test(k)) continue;
    env[k] = val;
  }
  env.TERM = 'dumb';
  env.PYTHONDONTWRITEBYTECODE = '1';
  // Alternate the locale: gcc and others quote with ‘…’ under UTF-8 and '…' under C.
  env.LANG = v % 2 === 0 ? 'C.UTF-8' : 'C';
  env.GIT_AUTHOR_NAME = env.GIT_COMMITTER_NAME = 'Corpus Bot';
  env.GIT_AUTHOR_EMAIL = env.GIT_COMMITTER_EMAIL = 'bot@example.invalid';
  env.GIT_CONFIG_NOSYSTEM = '1';
  return env;
}

function run(argv: string[], cwd: string, env: Record<string, string>): Run {
  const r = spawnSync(argv[0]!, argv.slice(1), { cwd, env, encoding: 'utf8', timeout: 120_000, maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw r.error;
  const signals: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGABRT: 6, SIGKILL: 9, SIGSEGV: 11, SIGTERM: 15 };
  const exitCode = r.status ?? 128 + (signals[r.signal ?? ''] ?? 0);
  return { stdout: r.stdout, stderr: r.stderr, exitCode };
}

function clip(text: string): string {
  if (text.length <= MAX_TEXT) return text;
  const half = MAX_TEXT / 2;
  // Cut at line boundaries so the kept head and tail are whole lines.
  const head = text.slice(0, text.lastIndexOf('\n', half) + 1);
  const tail = text.slice(text.indexOf('\n', text.length - half) + 1);
  return head + tail;
}

async function runScenario(s: Scenario, usedPorts: Set<number>): Promise<CorpusCase[]> {
  const out: CorpusCase[] = [];
  for (let v = 0; v < (s.variants ?? 3); v++) {
    const dir = mkdtempSync(join(tmpdir(), 'vigil-'));
    try {
      // A port another process listens on would change what the program does: draw again.
      let ctx: Ctx;
      let prepared: Prepared;
      for (let attempt = 0; ; attempt++) {
        const allocated: number[] = [];
        ctx = { dir, v, rng: rngFor(`${s.id}#${v}${attempt ? `#${attempt}` : ''}`, usedPorts, allocated), vars: {} };
        prepared = s.prepare(ctx);
        let free = true;
        for (const p of allocated) if (!(await assertFree(p))) free = false;
        if (free || attempt === 5) break;
      }
      for (const [name, content] of Object.entries(prepared.files ?? {})) {
        mkdirSync(dirname(join(dir, name)), { recursive: true });
        writeFileSync(join(dir, name), content, { mode: name.endsWith('.sh') && !name.includes('noexec') ? 0o755 : 0o644 });
      }
      const env = { ...baseEnv(v) };
      for (const [k, val] of Object.entries(prepared.env ?? {})) {
        if (val === undefined) delete env[k];
        else env[k] = val;
      }
      for (const step of prepared.setup ?? []) {
        const r = run(step, dir, env);
        if (r.exitCode !== 0) throw new Error(`${s.id}#${v}: setup ${step.join(' ')} failed (${r.exitCode}):\n${r.stderr}${r.stdout}`);
      }
      const r = run(prepared.cmd, dir, env);
      const text = clip(prepared.stream === 'combined' ? r.stdout + r.stderr : r.stderr);
      const expected = s.expect(ctx, r, text);
      const failed = r.exitCode !== 0;
      if (failed !== (expected.classification === 'ExecutionFailure')) {
        throw new Error(`${s.id}#${v}: exit ${r.exitCode} but labelled ${expected.classification}:\n${text.slice(0, 1500)}`);
      }
      const isFailure = expected.classification === 'ExecutionFailure' || expected.classification === 'RecoveredError';
      out.push({
        id: `${s.id}#${v}`,
        tool: s.tool,
        program: s.program,
        text,
        exit_code: r.exitCode,
        expected: {
          classification: expected.classification,
          signature: expected.signature === null ? null : collapseAndCut(expected.signature),
          failure_id: isFailure ? (s.failureId ?? s.id) : null,
        },
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return out;
}

/** Checks that no chosen port is in use (a connect must be refused for the labels to hold). */
async function assertFree(port: number): Promise<boolean> {
  return new Promise((res) => {
    const srv = createServer();
    srv.once('error', () => res(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => res(true)));
  });
}

async function main(): Promise<void> {
  const filter = process.argv[2];
  const prefixes = filter ? filter.split(',') : [];
  const selected = filter ? scenarios.filter((s) => prefixes.some((p) => s.id.startsWith(p))) : scenarios;
  const ids = new Set<string>();
  for (const s of scenarios) {
    if (ids.has(s.id)) throw new Error(`duplicate scenario id ${s.id}`);
    ids.add(s.id);
  }
  const usedPorts = new Set<number>();
  const cases: CorpusCase[] = [];
  for (const s of selected) {
    const started = Date.now();
    cases.push(...(await runScenario(s, usedPorts)));
    process.stderr.write(`${s.id}: ${s.variants ?? 3} variants in ${Date.now() - started} ms\n`);
  }
  for (const p of usedPorts) if (!(await assertFree(p))) process.stderr.write(`warning: port ${p} was in use after the run\n`);
  const body = cases.map((c) => JSON.stringify(c)).join('\n') + '\n';
  if (filter) {
    process.stdout.write(body);
    return;
  }
  writeFileSync(OUT, body);
  const byClass: Record<string, number> = {};
  for (const c of cases) byClass[c.expected.classification] = (byClass[c.expected.classification] ?? 0) + 1;
  process.stderr.write(`wrote ${cases.length} cases (${(body.length / 1e6).toFixed(2)} MB) to ${OUT}: ${JSON.stringify(byClass)}\n`);
}

await main();
