/**
 * Perl: `die` messages and the interpreter's fatal errors end with ` at FILE line N.`; the
 * interpreter's own fatal forms are recognised by their wording (`Can't locate`, `Illegal division
 * by zero`, `syntax error at`, …), so they count even when the program went on. Its warnings look
 * the same (see warning.ts) and are told apart by their wording too.
 */
import { Rank, type Hit } from '../finding.ts';

const AT_LINE = / at \S+ line \d+(?:, <[^>]*> (?:line|chunk) \d+)?\.$/;
// Anchored alternations: a line that starts otherwise fails at its first characters.
const FATAL =
  /^(?:Can't (?:locate |call method |use |open perl script |find string terminator)|Illegal (?:division by zero|modulus zero)|syntax error at |Undefined subroutine |Not an? (?:ARRAY|HASH|CODE|SCALAR|GLOB) reference|Global symbol |Bareword |Modification of a read-only value|Died at )/;
const WRAPPERS = /^(?:BEGIN failed--compilation aborted|Execution of |Compilation failed in require)/;

/** A perl fatal error (trimmed line `t`); `die` messages of the program itself are read by the generic rules. */
export function perlError(i: number, t: string): Hit | undefined {
  if (WRAPPERS.test(t) && (AT_LINE.test(t) || t.endsWith('compilation errors.'))) {
    return { finding: { rank: Rank.Wrapper, line: i, signature: t, format: 'perl', key: { kind: 'text', text: t } }, next: i + 1 };
  }
  if (!FATAL.test(t)) return undefined;
  return { finding: { rank: Rank.Tool, line: i, signature: t, format: 'perl', key: { kind: 'text', text: t } }, next: i + 1 };
}
