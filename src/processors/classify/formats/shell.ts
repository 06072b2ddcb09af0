/**
 * The shell and coreutils: `bash: line 3: foo: command not found`, `x.sh: line 2: VAR: unbound
 * variable`, dash's `sh: 1: foo: not found`, `syntax error near unexpected token`, and the
 * strerror messages every Unix tool appends to `prog: [context: ]operand: Message` (`No such file
 * or directory`, `Permission denied`, `File exists`, …). The name is the line as printed; the
 * identity leaves out where the shell was (`deploy.sh: line 8: `, `bash: line 1: `, `sh: 1: `): the
 * same command missing from a script, from `bash -c` or from the script at another path is one
 * failure.
 */
import { Rank, type Hit } from '../finding.ts';

const SUFFIXES = [
  ': command not found',
  ': unbound variable',
  ': No such file or directory',
  ': Permission denied',
  ': Is a directory',
  ': Not a directory',
  ': File exists',
  ': Operation not permitted',
  ': Directory not empty',
  ': Read-only file system',
  ': No space left on device',
  ': Too many open files',
  ': Connection refused',
  ': Connection timed out',
  ': Network is unreachable',
  ': Address already in use',
  ': Text file busy',
  ': Argument list too long',
  ': Broken pipe',
  ': Input/output error',
  ': bad substitution',
  ': integer expression expected',
  ': too many arguments',
  ': ambiguous redirect',
  ': numeric argument required',
];
const INFIXES = ['syntax error near unexpected token', 'syntax error: unexpected end of file'];

const SUFFIX_SET = new Set(SUFFIXES);
// dash: `sh: 1: kubectlx: not found`.
const DASH_NOT_FOUND = /^[^:\s]+: \d+: [^:]+: not found$/;
// Where the shell was: `bash: line 3: `, `/tmp/x/deploy.sh: line 8: `, `sh: 1: `.
const SHELL_LOCATION = /^(?:[^:]*: line \d+|[^:\s]+: \d+): /;

/** A shell or coreutils error line, by its ending (trimmed line `t`). */
export function shellError(i: number, t: string): Hit | undefined {
  // Every suffix is `: Message` with no further `: ` in it: one lookup of the text after the last `: `.
  const k = t.lastIndexOf(': ');
  let matched = k > 0 && SUFFIX_SET.has(t.slice(k));
  if (!matched && t.includes('syntax error')) matched = INFIXES.some((s) => t.includes(s));
  if (!matched && t.endsWith('(os error 2)')) matched = true;
  if (!matched && t.endsWith(': not found')) matched = DASH_NOT_FOUND.test(t);
  // There must be something before the message: a program, a script position, an operand.
  if (!matched || t.indexOf(': ') <= 0) return undefined;
  const where = SHELL_LOCATION.exec(t);
  const what = where ? t.slice(where[0].length) : t;
  return { finding: { rank: Rank.Tool, line: i, signature: t, format: 'shell', key: { kind: 'text', text: what } }, next: i + 1 };
}
