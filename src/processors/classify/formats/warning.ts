/**
 * Warnings of the common tools, for texts that hold no failure: the reference forms (`warning:`,
 * `warn:`, `[warning]`, `…Warning:` anywhere, a head ending in `warning`) plus `npm warn`, upper-case
 * `WARN`/`WARNING` log levels, javac's `Note:` lines and perl's warnings (which end ` at FILE line N.`
 * like its errors and are told by their wording) — and the notices that warn without the word:
 * git's advice (`hint:` lines, `Turn off this advice by setting config variable advice.…`), a tool
 * saying it dropped, ignored or removed part of what it was given (`tar: Removing leading '/' from
 * member names`, `make: Circular a <- a dependency dropped.`), a `… Warning at` head (CMake's
 * `CMake Deprecation Warning at CMakeLists.txt:1 (…):`) and Node.js's process warnings
 * (`(node:123) …`, `(Use \`node --trace-warnings …\`)`).
 */

const PREFIXES = ['warning:', 'warn:', '[warning]', '[warn]', 'npm warn '];
const LEVELS = ['WARN ', 'WARNING ', 'WARN:'];
const PERL_WARNINGS = [
  'Use of uninitialized value',
  'Useless use of ',
  'Odd number of elements',
  'Deep recursion on',
  'Scalar value @',
  'Possible attempt to',
  'Unquoted string ',
  'Found = in conditional',
  'Statement unlikely to be reached',
  'Reversed ',
  'Possible precedence',
];
const PERL_AT_LINE = / at \S+ line \d+(?:, <[^>]*> (?:line|chunk) \d+)?\.$/;
const GIT_ADVICE = ['Turn off this advice by setting config variable advice.', 'Disable this message with "git config advice.'];
// `prog: Removing leading …`, `prog[2]: Ignoring …`: what a tool left out of what it was given.
const TOOL_NOTICE = /^[\w.+-]+(?:\[\d+\])?: (?:Removing|Ignoring|Skipping|Omitting|Dropping) /;
const TOOL_DROPPED = /^[\w.+-]+(?:\[\d+\])?: .* (?:dropped|ignored)\.$/;
// `CMake Deprecation Warning at x:1 (…):`, `CMake Warning (dev) at …`, `CMake Warning (dev) in CMakeLists.txt:`.
const WARNING_AT = /^(?:[A-Z][\w-]* ){0,3}\w*Warning(?: \([^)]*\))? (?:at|in) /;
const NODE_PROCESS_WARNING = /^\(node:\d+\) |^\(Use `node --trace-/;

/** Whether a trimmed line is a warning. */
export function isWarningLine(t: string): boolean {
  const lower = t.toLowerCase();
  for (const p of PREFIXES) if (lower.startsWith(p)) return true;
  if (lower.includes('warning:')) return true;
  for (const p of LEVELS) if (t.startsWith(p) || t.startsWith(`[${p.trim()}]`)) return true;
  const colon = lower.indexOf(':');
  if ((colon < 0 ? lower : lower.slice(0, colon)).trimEnd().endsWith('warning')) return true;
  if (t.startsWith('Note: ') && (t.includes('.java') || t.includes('-Xlint'))) return true;
  if (lower.startsWith('hint:') || GIT_ADVICE.some((a) => t.startsWith(a))) return true;
  if (TOOL_NOTICE.test(t) || TOOL_DROPPED.test(t) || WARNING_AT.test(t) || NODE_PROCESS_WARNING.test(t)) return true;
  if (PERL_AT_LINE.test(t)) {
    if (PERL_WARNINGS.some((w) => t.startsWith(w))) return true;
    if (t.startsWith('Argument "') && t.includes(" isn't numeric")) return true;
    if (t.startsWith('Name "') && t.includes('used only once')) return true;
    if (t.startsWith('Subroutine ') && t.includes(' redefined')) return true;
  }
  return false;
}
