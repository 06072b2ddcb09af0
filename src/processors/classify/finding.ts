/**
 * What a format detector reports: the most telling line of one failure and the parts its identity
 * (fingerprint v3) is made of.
 */

/**
 * How telling a finding is. The engine keeps the highest rank; among equals, the first (a later
 * stack replaces an earlier one: the last traceback is the one that ended the program).
 */
export const Rank = {
  /**
   * A line that names a failure only when the run failed (`nothing to commit, working tree clean`
   * explains a failed `git commit`, and is plain status text after a successful `git status`).
   */
  Hint: 0,
  /** A wrapper that only says something below failed: `make: *** [...] Error 1`, `collect2: error: ld returned 1`. */
  Wrapper: 1,
  /** A tool's own error line: `fatal: …`, `cat: x: No such file or directory`, `ERROR: …`, `ValueError: …` without a stack. */
  Tool: 2,
  /** A language exception with its stack, a panic, a compiler or linker diagnostic. */
  Exception: 3,
} as const;
export type Rank = (typeof Rank)[keyof typeof Rank];

/** The identity parts of a failure; see fingerprint3.ts. */
export type FailureKey =
  /** An exception with a stack: types of the chain and the innermost in-app frames outweigh the message. */
  | { kind: 'stack'; types: string[]; frames: string[]; message: string; weak: boolean }
  /** A compiler/linker/panic diagnostic: tool, code, file (basename) and message; never the line numbers. */
  | { kind: 'diag'; tool: string; code: string; file: string; message: string }
  /**
   * How a process ended when nothing names the failure better: killed by a signal (`SIGSEGV`, from
   * the exit status 128 + n or the shell's `Segmentation fault` report — the same failure either
   * way), or a plain non-zero exit status (`ExecutionError` with its code).
   */
  | { kind: 'status'; name: string; code?: number }
  /** Anything else: the telling line itself. */
  | { kind: 'text'; text: string };

export interface Finding {
  rank: Rank;
  /** Index of the telling line in the framed lines (for ordering). */
  line: number;
  /** The failure's name, before whitespace collapsing and the 96-character cut. */
  signature: string;
  /** The format that recognised it: `python`, `node`, `jvm`, `rust`, `go`, `cc`, `shell`, `npm`, `git`, `make`, `perl`, `generic`. */
  format: string;
  key: FailureKey;
}

/** A detector's answer at one line: maybe a finding, and the index of the next line to read. */
export interface Hit {
  finding?: Finding;
  next: number;
}

/** Basename of a path (either separator), without its directory. */
export function basename(path: string): string {
  const cut = Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\'));
  return cut < 0 ? path : path.slice(cut + 1);
}

/**
 * The file of a diagnostic as it counts for identity: a relative path as printed (relative to the
 * build's directory, it is the same on every machine), an absolute one by its basename (its
 * directory is a checkout, a home or a temp dir).
 */
export function diagFile(path: string): string {
  const absolute = path.startsWith('/') || path.startsWith('~') || /^[A-Za-z]:[\\/]/.test(path);
  return absolute ? basename(path) : path.replace(/^\.\//, '');
}

/** Removes consecutive duplicates (recursion collapses to one frame) and keeps at most `max`. */
export function collapseFrames(frames: readonly string[], max: number): string[] {
  const out: string[] = [];
  for (const f of frames) {
    if (out.length && out[out.length - 1] === f) continue;
    // A recursion through two frames (a → b → a → b) collapses too: skip a frame seen in the last two.
    if (out.length >= 2 && out[out.length - 2] === f) continue;
    out.push(f);
    if (out.length === max) break;
  }
  return out;
}

/** Innermost in-app frames that count towards a stack fingerprint. */
export const MAX_FRAMES = 3;

/**
 * Exception types that programs raise for failures of every kind, with the message saying which:
 * JavaScript's `Error` family, Python's `Exception`/`RuntimeError`/`ValueError`/`TypeError`/`OSError`,
 * the JVM's `RuntimeException`/`IllegalStateException`/`IllegalArgumentException`. Compared by
 * the last dotted part (`java.lang.RuntimeException`).
 */
const GENERIC_TYPES = new Set([
  'Error',
  'TypeError',
  'SyntaxError',
  'RangeError',
  'AggregateError',
  'Exception',
  'RuntimeError',
  'ValueError',
  'OSError',
  'RuntimeException',
  'IllegalStateException',
  'IllegalArgumentException',
  'UnsupportedOperationException',
]);

export function isGenericType(type: string | undefined): boolean {
  if (!type) return false;
  const dot = type.lastIndexOf('.');
  return GENERIC_TYPES.has(dot < 0 ? type : type.slice(dot + 1));
}

/**
 * Whether a stack is weak — its frames do not tell its failures apart, so the message must: no
 * in-app frame, only top-level frames, or a generic type raised from top-level or anonymous code
 * (`Error: Cannot find module 'x'` and `Error: ENOENT: …` at a script's top level are two failures).
 * `frames` innermost first; `type` the exception that propagated.
 */
export function isWeakStack(frames: readonly string[], type: string | undefined, topLevel: (f: string) => boolean, anonymous: (f: string) => boolean): boolean {
  if (frames.every(topLevel)) return true;
  const inner = frames[0]!;
  return isGenericType(type) && (topLevel(inner) || anonymous(inner));
}
