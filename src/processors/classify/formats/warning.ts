/**
 * Warnings of the common tools, for texts that hold no failure: the reference forms (`warning:`,
 * `warn:`, `[warning]`, `…Warning:` anywhere, a head ending in `warning`) plus `npm warn`, upper-case
 * `WARN`/`WARNING` log levels, javac's `Note:` lines and perl's warnings (which end ` at FILE line N.`
 * like its errors and are told by their wording).
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

/** Whether a trimmed line is a warning. */
export function isWarningLine(t: string): boolean {
  const lower = t.toLowerCase();
  for (const p of PREFIXES) if (lower.startsWith(p)) return true;
  if (lower.includes('warning:')) return true;
  for (const p of LEVELS) if (t.startsWith(p) || t.startsWith(`[${p.trim()}]`)) return true;
  const colon = lower.indexOf(':');
  if ((colon < 0 ? lower : lower.slice(0, colon)).trimEnd().endsWith('warning')) return true;
  if (t.startsWith('Note: ') && (t.includes('.java') || t.includes('-Xlint'))) return true;
  if (PERL_AT_LINE.test(t)) {
    if (PERL_WARNINGS.some((w) => t.startsWith(w))) return true;
    if (t.startsWith('Argument "') && t.includes(" isn't numeric")) return true;
    if (t.startsWith('Name "') && t.includes('used only once')) return true;
    if (t.startsWith('Subroutine ') && t.includes(' redefined')) return true;
  }
  return false;
}
