/**
 * The rules that hold across tools: a line headed by an exception type (`ValueError: …`,
 * `java.io.IOException: …`, `Error [ERR_X]: …`, `Connection Error: …`), a log level
 * (`ERROR app: …`, `[ERROR] …`, `CRITICAL:root:…`, `SEVERE: …`), git-style `fatal:`/`error:`/
 * `panic:` prefixes and git's `CONFLICT (…)`. Stricter than the reference rules: a head must be a
 * type name or a short capitalised phrase, so `registered handler for TimeoutError` or
 * `ErrorHandler registered` are no failures, and a zero or empty value (`error: none`,
 * `ERROR: 0`) is benign.
 */
import { Rank, type Hit } from '../finding.ts';

// A type name: `ValueError`, `pkg.mod.Error`, `Main$Inner`, optionally with a node code `[ERR_X]`.
const TYPE_HEAD = /^(?:Uncaught )?[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*(?: \[[A-Z][A-Z0-9_]*\])?$/;
// Two or three capitalised words ending in Error/Exception: `Connection Error`, `Unhandled Exception`.
// (Not a negation: `No ValueError: all rows parsed`.)
const PHRASE_HEAD = /^(?!No )(?:[A-Z][\w-]* ){1,2}[A-Z]\w*(?:Error|Exception)$/;
const FAILURE_SUFFIX = /(?:Error|Exception|Throwable)(?: \[[A-Z][A-Z0-9_]*\])?$/;
const LEVELS = new Set(['ERROR', 'FATAL', 'CRITICAL', 'SEVERE', 'PANIC', 'ALERT', 'EMERG', 'EMERGENCY', 'ERR', 'CRIT']);
const LOWER_PREFIXES = ['error:', 'fatal:', 'panic:'];
// Zero or empty values, and YAML block indicators (`error: |-` opens a TAP diagnostic's text).
const NULLISH = new Set(['', '0', 'none', 'null', 'nil', 'false', 'no', 'ok', 'n/a', '-', '[]', '{}', '0 errors', 'no errors', '|', '|-', '>', '>-']);

// TAP (node --test, prove, many runners): `not ok 3 - name`.
const TAP_NOT_OK = /^not ok \d+ - /;
// git explaining a failed commit (plain status text after a successful `git status`).
const GIT_HINTS = ['nothing to commit', 'no changes added to commit', 'nothing added to commit'];

/** A generic error line (trimmed line `t`), or undefined. */
export function genericError(i: number, t: string): Hit | undefined {
  if (t.charCodeAt(0) === 110 /* n */) {
    if (TAP_NOT_OK.test(t) && !t.includes('# TODO') && !t.includes('# SKIP')) {
      return { finding: { rank: Rank.Tool, line: i, signature: t, format: 'tap', key: { kind: 'text', text: t } }, next: i + 1 };
    }
    if (GIT_HINTS.some((h) => t.startsWith(h))) {
      return { finding: { rank: Rank.Hint, line: i, signature: t, format: 'git', key: { kind: 'text', text: t } }, next: i + 1 };
    }
  }
  if (!isGenericError(t)) return undefined;
  // `Uncaught ` (a REPL's) is framing, not part of the name.
  const line = t.startsWith('Uncaught ') ? t.slice(9) : t;
  return { finding: { rank: Rank.Tool, line: i, signature: line, format: formatOf(line), key: { kind: 'text', text: line } }, next: i + 1 };
}

// A log line that reports an error it embeds (a handled error, issue #13): `failed to parse
// settings, using defaults: SyntaxError: …`, `uncaught exception (ignored by handler): TypeError: …`,
// `could not load cache: FileNotFoundError(2, 'No such file')`, `… - java.io.IOException: …`: an
// exception type after `: `, `] ` or ` - `, followed by `: message` or `(` (a Python repr).
const EMBEDDED_TYPE = /(?:: |\] | - )(?:Uncaught )?(?:[A-Za-z_$][\w$]*\.)*[\w$]*(?:Error|Exception)(?: \[[A-Z][A-Z0-9_]*\])?(?:: (?=\S)|\((?=\S))/;
// An OS error as Python prints it (`[Errno 2] No such file or directory: 'x'`).
const ERRNO = /\[Errno \d+\] \S/;
// A log level after a location or prefix: `psql:migrate.sql:2: ERROR:  column …`, `… [123] FATAL:  …`.
const EMBEDDED_LEVEL = /(?:: |\] )(ERROR|FATAL|CRITICAL|PANIC):\s+(\S.*)$/;

/**
 * A line that reports an error inside a longer message: an embedded exception type, a Python
 * `[Errno N]` OS error, or an upper-case level after a prefix. Named by the whole line (what was
 * being done is part of the name); a zero or empty value after a level is benign.
 */
export function embeddedError(i: number, t: string): Hit | undefined {
  const level = t.includes('ERROR') || t.includes('FATAL') || t.includes('CRIT') || t.includes('PANIC') ? EMBEDDED_LEVEL.exec(t) : null;
  const typed = (t.includes('Error') || t.includes('Exception')) && EMBEDDED_TYPE.test(t);
  const found = typed || (t.includes('[Errno ') && ERRNO.test(t)) || (level !== null && !isNullish(level[2]!));
  if (!found) return undefined;
  return { finding: { rank: Rank.Tool, line: i, signature: t, format: 'generic', key: { kind: 'text', text: t } }, next: i + 1 };
}

/** Whether a trimmed line reads as a failure by the generic rules. */
export function isGenericError(t: string): boolean {
  const c = t.charCodeAt(0);
  // git's merge conflicts.
  if (c === 67 /* C */ && t.startsWith('CONFLICT (')) return true;
  const colon = t.indexOf(':');
  const head = colon < 0 ? t : t.slice(0, colon);
  const rest = colon < 0 ? '' : t.slice(colon + 1).trim();
  // `error: x`, `fatal: x`, `panic: x` (git, rustc without location, Go): lowercase words need the colon.
  if (c === 101 || c === 102 || c === 112) {
    const lower = t.slice(0, 6).toLowerCase();
    if (LOWER_PREFIXES.some((p) => lower.startsWith(p))) return !isNullish(rest);
  }
  // Upper-case log levels: `ERROR: x`, `ERROR app: x`, `[ERROR] x`, `ERROR:root:x`, `FATAL x`.
  const token = levelToken(t);
  if (token && LEVELS.has(token)) return !isNullish(token.length < t.length ? t.slice(t.indexOf(token) + token.length).replace(/^[\]:\s]+/, '') : '');
  // `Error: x`, `FATAL: x` with mixed case heads equal to a level word (the reference's rule).
  const lowerHead = head.trim().toLowerCase();
  if (colon > 0 && (lowerHead === 'error' || lowerHead === 'fatal' || lowerHead === 'panic')) return !isNullish(rest);
  // Exception type heads.
  if (!FAILURE_SUFFIX.test(head)) return false;
  if (colon < 0 && !TYPE_HEAD.test(head)) return false;
  if (!TYPE_HEAD.test(head) && !PHRASE_HEAD.test(head)) return false;
  return colon < 0 || !isNullish(rest);
}

/** The leading upper-case word of a line, without brackets (`[ERROR] x` → `ERROR`); empty if none. */
function levelToken(t: string): string {
  let start = 0;
  if (t.charCodeAt(0) === 91 /* [ */) start = 1;
  let end = start;
  while (end < t.length && end - start < 10) {
    const c = t.charCodeAt(end);
    if (c < 65 || c > 90) break;
    end++;
  }
  if (end === start) return '';
  const after = t.charCodeAt(end);
  // Followed by the end, `:`, `]` or a space: a word, not `ERROR_COUNT=0` or `ERRORS`.
  if (end < t.length && after !== 58 && after !== 93 && after !== 32) return '';
  if (start === 1 && after !== 93) return '';
  return t.slice(start, end);
}

function isNullish(value: string): boolean {
  return NULLISH.has(value.trim().toLowerCase().replace(/[.!]$/, ''));
}

function formatOf(t: string): string {
  if (t.startsWith('fatal: ') || t.startsWith('error: ') || t.startsWith('CONFLICT (')) return 'git';
  return 'generic';
}
