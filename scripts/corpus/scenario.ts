/**
 * The corpus generator's vocabulary: a scenario is a program that fails (or warns, or prints
 * noise) in a known way; the generator runs it for real, several times with different volatile
 * parts, and labels each run from what the scenario knows it did — never from vigil's output.
 */
import { fileURLToPath } from 'node:url';
import type { Classification } from '../../src/model/event.ts';

/** What one real run printed. */
export interface Run {
  stdout: string;
  stderr: string;
  /** Exit status; 128 + signal number when a signal ended the process. */
  exitCode: number;
}

/** A small deterministic generator of volatile parts (seeded per scenario and variant). */
export interface Rng {
  /** Integer in [lo, hi]. */
  int(lo: number, hi: number): number;
  pick<T>(items: readonly T[]): T;
  /** A lowercase identifier like `orders_42`. */
  ident(): string;
  /** A random hex string of `n` digits. */
  hex(n: number): string;
  uuid(): string;
  /** A free TCP port number (nothing listens on it). */
  port(): number;
}

export interface Ctx {
  /** The variant's own temporary directory (random name); programs are written and run here. */
  dir: string;
  /** 0-based variant index. */
  v: number;
  rng: Rng;
  /** Values the program builder chose, for the expected label. */
  vars: Record<string, string>;
}

export interface Prepared {
  /** Files to write, relative to the variant's directory. */
  files?: Record<string, string>;
  /** Commands run before the measured one (builds, repository setup); they must succeed. */
  setup?: string[][];
  /** The measured command (argv). */
  cmd: string[];
  /** Extra environment; `undefined` removes a variable. */
  env?: Record<string, string | undefined>;
  /** `stderr` (default): the text is what the program wrote to stderr; `combined`: stdout then stderr. */
  stream?: 'stderr' | 'combined';
}

export interface Expected {
  classification: Classification;
  /** The failure's name as a person would give it (null for non-failures). */
  signature: string | null;
}

export interface Scenario {
  /** Names the underlying failure: every variant of a scenario is the same failure. */
  id: string;
  tool: string;
  /** What the program does, for a reader of the corpus. */
  program: string;
  /** Number of variants (default 3). */
  variants?: number;
  prepare(ctx: Ctx): Prepared;
  /** The label, from the scenario's knowledge of what it made the program do. */
  expect(ctx: Ctx, run: Run, text: string): Expected;
  /** Failure cases that are the same failure as another scenario's (same failure_id). */
  failureId?: string;
}

// ---------------------------------------------------------------------------------------------
// Label helpers

/** Removes ANSI escape sequences (the generator knows when it asked a tool for colour). */
export function stripAnsi(text: string): string {
  return text.replace(/\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g, '');
}

/** The first line of the text that matches `re` (ANSI removed); throws when the program did not print it. */
export function lineOf(text: string, re: RegExp): string {
  for (const line of stripAnsi(text).split(/\r?\n/)) if (re.test(line)) return line;
  throw new Error(`expected a line matching ${re} in:\n${text.slice(0, 2000)}`);
}

/** The line after the first line matching `re`. */
export function lineAfter(text: string, re: RegExp): string {
  const lines = stripAnsi(text).split(/\r?\n/);
  const i = lines.findIndex((l) => re.test(l));
  if (i < 0 || i + 1 >= lines.length) throw new Error(`expected a line after ${re} in:\n${text.slice(0, 2000)}`);
  return lines[i + 1]!;
}

export const failure = (signature: string): Expected => ({ classification: 'ExecutionFailure', signature });
export const recovered = (signature: string): Expected => ({ classification: 'RecoveredError', signature });
export const warning = (): Expected => ({ classification: 'StderrWarning', signature: null });
export const noise = (): Expected => ({ classification: 'Uncertain', signature: null });
export const normal = (): Expected => ({ classification: 'NormalOutput', signature: null });

/** `n` blank-ish comment lines, so that line numbers differ between variants. */
export function pad(n: number, comment = '#'): string {
  return Array.from({ length: n }, (_, i) => `${comment} padding ${i}`).join('\n') + (n ? '\n' : '');
}

/** tsc from this repository's own devDependencies (typescript), run by node. */
export const TSC = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));

export const WORDS = [
  'orders',
  'users',
  'billing',
  'cache',
  'session',
  'invoice',
  'report',
  'ledger',
  'tenant',
  'widget',
  'queue',
  'shard',
  'token',
  'profile',
  'upload',
];
