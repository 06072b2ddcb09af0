/**
 * The shell and coreutils: `bash: line 3: foo: command not found`, `x.sh: line 2: VAR: unbound
 * variable`, `syntax error near unexpected token`, and the strerror messages every Unix tool
 * appends to `prog: [context: ]operand: Message` (`No such file or directory`, `Permission denied`,
 * `File exists`, …). The name is the line as printed.
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

/** A shell or coreutils error line, by its ending (trimmed line `t`). */
export function shellError(i: number, t: string): Hit | undefined {
  // Every suffix is `: Message` with no further `: ` in it: one lookup of the text after the last `: `.
  const k = t.lastIndexOf(': ');
  let matched = k > 0 && SUFFIX_SET.has(t.slice(k));
  if (!matched && t.includes('syntax error')) matched = INFIXES.some((s) => t.includes(s));
  if (!matched && t.endsWith('(os error 2)')) matched = true;
  // There must be something before the message: a program, a script position, an operand.
  if (!matched || t.indexOf(': ') <= 0) return undefined;
  return { finding: { rank: Rank.Tool, line: i, signature: t, format: 'shell', key: { kind: 'text', text: t } }, next: i + 1 };
}
