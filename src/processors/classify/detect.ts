/**
 * The vigil detection engine: frames a text (frame.ts), walks its lines once, lets the format
 * detectors (formats/*.ts) claim the lines they recognise — a detector that recognises the start
 * of a block (a traceback, a stack, an npm error block) consumes the whole block, so a 10,000-line
 * stack costs one pass — and keeps the most telling finding: the highest rank, and among equals
 * the first (a later stack replaces an earlier one: the last traceback is the one that ended the
 * program). Texts without a failure are checked for warnings.
 *
 * Each line is first tested with a few native regular expressions (`hasMarker`) for anything a
 * detector could claim, so that ordinary lines (progress, source, prose) cost those tests and
 * nothing else.
 */
import { frameLines, indentOf } from './frame.ts';
import { Rank, type Finding, type Hit } from './finding.ts';
import { embeddedError, genericError, isGenericError } from './formats/generic.ts';
import { goPanic } from './formats/go.ts';
import { jvmTrace, mavenCompilerError } from './formats/jvm.ts';
import { makeError } from './formats/make.ts';
import {
  assertionFailure,
  compilerDiagnostic,
  cxxTerminate,
  glibcAbort,
  linkerError,
  memcheckError,
  sanitizerReport,
  signalReport,
  tscDiagnostic,
} from './formats/native.ts';
import { nodeError, nodeThrownValue } from './formats/node.ts';
import { npmError } from './formats/npm.ts';
import { perlError } from './formats/perl.ts';
import { isTracebackHeader, pytestError, pythonSyntaxBlock, pythonTraceback } from './formats/python.ts';
import { rustcDiagnostic, rustPanic } from './formats/rust.ts';
import { shellError } from './formats/shell.ts';
import { isWarningLine } from './formats/warning.ts';
import { mayWrap, unwrap } from './formats/wrapper.ts';

/** Lines longer than this are judged on their first 4 KiB (a signature is 96 characters). */
const MAX_LINE = 4096;

// The markers of the lines a detector could claim, in three expressions: V8 scans an alternation of
// a few literals (or of literals behind one anchor) with a skip table, well under a nanosecond per
// character, but one alternation of all of them alternative by alternative at every position
// (several times slower). Literal alternatives only: linear.
// The markers of most failure lines: cheap to scan for (few, distinct literals).
const COMMON_MARKER = /rror|RROR|xception|Throwable|Traceback|File "|anic|ANIC|atal|ATAL|\*\*\*/;
// The strerror endings after `: `, and line starts (`^`, multiline so that a whole text can be
// scanned too).
const COLON_OR_START_MARKER = new RegExp(
  [
    ': (?:command not found|unbound variable|No such file|Permission denied|Is a directory|Not a directory|File exists|Operation not permitted|Directory not empty|Read-only|No space|Too many|Connection refused|Connection timed out|Network is unreachable|Address already in use|Text file busy|Argument list too long|Broken pipe|Input/output|bad substitution|integer expression|too many arguments|ambiguous redirect|numeric argument)',
    "^[ \\t]*(?:Can't |Illegal |Undefined subroutine |Not an? [A-Z]+ reference|Global symbol |Bareword |Modification of |Died at |BEGIN failed|Execution of |Compilation failed|CONFLICT \\(|not ok |nothing to commit|no changes added|nothing added|npm |terminate called|thread '|Caused by: |\\[?ERR\\b)",
  ].join('|'),
  'm',
);
// A few distinctive words.
const WORD_MARKER =
  /CRIT|SEVERE|ALERT|EMERG|undefined reference|multiple definition|cannot find -l|Assertion|\(\): |double free|corrupted |Sanitizer: |Segmentation fault|Aborted|Killed|Floating point|Illegal instruction|Trace\/breakpoint|Bus error|node --trace-uncaught|\[Errno |ttempt \d|[Rr]etry| failed \(|== (?:Invalid|Conditional|Use of|Syscall|Source and|Process term|Argument|[\d,]+ bytes)/;

/** Whether a line — or a whole text — holds anything a detector could claim. */
function hasMarker(text: string): boolean {
  return COMMON_MARKER.test(text) || COLON_OR_START_MARKER.test(text) || WORD_MARKER.test(text);
}

/** Anything a warning line could hold (warning.ts); a text without one has no warning. */
const WARNING_MARKER =
  /warn|Warn|WARN|Note: |Use of uninit|Useless use|Odd number|Deep recursion|Scalar value|Possible |Unquoted string|Found = |Statement unlikely|Reversed |Argument "|Name "|Subroutine |hint:|advice\.|: Removing |: Ignoring |: Skipping |: Omitting |: Dropping | dropped\.| ignored\.|\(node:|\(Use `node/;

/** The outcome of reading a text. */
export interface Detection {
  /** The most telling failure, if any. */
  failure?: Finding;
  /** True when there is no failure and some line is a warning. */
  warning: boolean;
}

/** Reads a text: its most telling failure, else whether it warns. */
export function detect(text: string): Detection {
  if (typeof text !== 'string' || text === '') return { warning: false };
  // One native scan of the whole text: a text without any marker holds no failure.
  if (!hasMarker(text)) return { warning: WARNING_MARKER.test(text) && hasWarning(frameLines(text)) };
  const lines = frameLines(text);
  lastAtLine = UNKNOWN;
  let best: Finding | undefined;
  for (let i = 0; i < lines.length;) {
    let line = lines[i]!;
    if (line.length > MAX_LINE) line = lines[i] = line.slice(0, MAX_LINE);
    // No marker is shorter than three characters (blank lines, carets, braces end here).
    if (line.length < 3 || !hasMarker(line)) {
      i++;
      continue;
    }
    const hit = detectAt(lines, i, line);
    if (hit?.finding) best = better(best, hit.finding);
    i = hit && hit.next > i ? hit.next : i + 1;
  }
  if (best) return { failure: best, warning: false };
  return { warning: WARNING_MARKER.test(text) && hasWarning(lines) };
}

function better(best: Finding | undefined, f: Finding): Finding {
  if (!best || f.rank > best.rank) return f;
  if (f.rank === best.rank && f.rank === Rank.Exception && f.key.kind === 'stack' && best.key.kind === 'stack') return f;
  return best;
}

/** Tries the detectors that can start at line `i`, most specific first. */
function detectAt(lines: string[], i: number, line: string): Hit | undefined {
  const indent = indentOf(line);
  let t = line.slice(indent);
  const end = t.length - 1;
  if (end >= 0 && (t.charCodeAt(end) === 32 || t.charCodeAt(end) === 9)) t = t.trimEnd();
  if (t === '') return undefined;
  const c = t.charCodeAt(0);
  let hit: Hit | undefined;

  // Block starts, by their first character.
  switch (c) {
    case 84 /* T */:
      if (isTracebackHeader(t)) return pythonTraceback(lines, i);
      break;
    case 43 /* + */:
      if (isTracebackHeader(t)) return pythonTraceback(lines, i);
      break;
    case 70 /* F */:
      if (t.startsWith('File "') && (hit = pythonSyntaxBlock(lines, i))) return hit;
      break;
    case 69 /* E */:
      if (t.startsWith('Exception in thread "') && (hit = jvmTrace(lines, i))) return hit;
      if (t.startsWith('E   ') && (hit = pytestError(lines, i, t))) return hit;
      break;
    case 91 /* [ */:
      if (t.startsWith('[ERROR] ') && (hit = mavenCompilerError(i, t))) return hit;
      break;
    case 61 /* = */:
      if ((hit = memcheckError(i, t))) return hit;
      break;
    case 67 /* C */:
      if (indent === 0 && t.startsWith('Caused by: ') && (hit = jvmTrace(lines, i))) return hit;
      break;
    case 116 /* t */:
      if (t.startsWith("thread '") && (hit = rustPanic(lines, i, t))) return hit;
      if (t.startsWith('terminate called') && (hit = cxxTerminate(lines, i, t))) return hit;
      break;
    case 101 /* e */:
      if ((t.startsWith('error[') || t.startsWith('error: ')) && (hit = rustcDiagnostic(lines, i, t))) return hit;
      break;
    case 112 /* p */:
    case 102 /* f */:
      if (indent === 0 && (hit = goPanic(lines, i, t))) return hit;
      break;
    case 110 /* n */:
      if (t.startsWith('npm ') && (hit = npmError(lines, i))) return hit;
      break;
    case 40 /* ( */:
      if ((hit = nodeThrownValue(lines, i))) return hit;
      break;
  }

  // Exception heads with a stack (V8 `    at fn (file:1:2)`, JVM `\tat pkg.C.m(F.java:1)`): only
  // where a frame follows, or (JVM) the head says a trace starts.
  if (indent === 0) {
    const frameBelow = lastFrameLine(lines) > i;
    if (frameBelow && (hit = nodeError(lines, i))) return hit;
    if ((frameBelow || line.startsWith('Exception in thread "') || line.startsWith('Caused by: ')) && (hit = jvmTrace(lines, i))) return hit;
  }

  // A line around another error (`tool x failed (attempt 3): Error: KeyError: …`): named as printed,
  // identified as the error it wraps would be on its own.
  if (mayWrap(t)) {
    const inner = unwrap(t);
    if (inner !== undefined) return wrapped(i, t, inner);
  }

  // Single-line diagnostics, by a substring each.
  if (t.includes('error')) {
    if ((hit = compilerDiagnostic(i, t))) return hit;
    if (t.includes('error TS') && (hit = tscDiagnostic(i, t))) return hit;
  }
  if ((hit = linkerError(i, t))) return hit;
  if (t.includes('Sanitizer: ') && (hit = sanitizerReport(i, t))) return hit;
  if (t.includes('Assertion') && (hit = assertionFailure(i, t))) return hit;
  if ((t.includes('***') || t.includes('(): ') || t.includes('double free') || t.includes('corrupted ')) && (hit = glibcAbort(i, t))) return hit;
  if ((t.includes('***') || t.includes('] Error ')) && (hit = makeError(i, t))) return hit;
  if ((hit = perlError(i, t))) return hit;
  if ((hit = shellError(i, t))) return hit;
  if ((hit = signalReport(i, t))) return hit;
  return genericError(i, t) ?? embeddedError(i, t);
}

/**
 * A wrapper line `t` (at line `i`) around the error `inner`: the inner error's finding, as the
 * detectors read it alone, named by the whole line; an inner text they do not recognise is the
 * identity itself (so `retry 2/2 failed: curl: (7) …` is the same failure as the curl line, which a
 * failed run names by its first line).
 */
function wrapped(i: number, t: string, inner: string): Hit {
  const saved = lastAtLine;
  lastAtLine = UNKNOWN;
  const innerLines = [inner];
  const hit = hasMarker(inner) ? detectAt(innerLines, 0, inner) : undefined;
  lastAtLine = saved;
  const f = hit?.finding;
  const rank = f && f.rank > Rank.Tool ? f.rank : Rank.Tool;
  return { finding: { rank, line: i, signature: t, format: f?.format ?? 'wrapper', key: f?.key ?? { kind: 'text', text: inner } }, next: i + 1 };
}

const UNKNOWN = -2;
/**
 * Index of the last line shaped like a stack frame (indented, then `at `: V8's and the JVM's) in
 * the text being read, or -1; UNKNOWN until first needed. Scratch state of one `detect` call
 * (detectors never call `detect`). Lines are only ever shortened (MAX_LINE), so a line that was no
 * frame never becomes one.
 */
let lastAtLine = UNKNOWN;

function lastFrameLine(lines: readonly string[]): number {
  if (lastAtLine !== UNKNOWN) return lastAtLine;
  lastAtLine = -1;
  for (let j = lines.length - 1; j >= 0; j--) {
    const l = lines[j]!;
    let k = 0;
    while (k < l.length && (l.charCodeAt(k) === 32 || l.charCodeAt(k) === 9)) k++;
    if (k > 0 && l.startsWith('at ', k)) {
      lastAtLine = j;
      break;
    }
  }
  return lastAtLine;
}

function hasWarning(lines: readonly string[]): boolean {
  for (const line of lines) {
    const t = line.trim();
    if (t !== '' && isWarningLine(t) && !isGenericError(t)) return true;
  }
  return false;
}
