/**
 * GNU make: `make: *** No rule to make target 'x'.  Stop.`, `Makefile:3: *** missing separator.
 * Stop.` (make's own errors) and `make[1]: *** [Makefile:2: all] Error 1` / `make: [...] Error 1
 * (ignored)` (a recipe failed: the recipe's own output above it is more telling).
 */
import { Rank, type Hit } from '../finding.ts';

const RECIPE_FAILED = /^(?:g?make)(?:\[\d+\])?: (?:\*\*\* )?\[[^\]]*\] (?:Error \d+|Segmentation fault|Killed|Interrupt)/;
const MAKE_ERROR = /^(?:(?:g?make)(?:\[\d+\])?|[^\s:]+:\d+): \*\*\* /;

/** A make error line (trimmed line `t`). */
export function makeError(i: number, t: string): Hit | undefined {
  const wrapper = RECIPE_FAILED.test(t);
  if (!wrapper && !MAKE_ERROR.test(t)) return undefined;
  return { finding: { rank: wrapper ? Rank.Wrapper : Rank.Tool, line: i, signature: t, format: 'make', key: { kind: 'text', text: t } }, next: i + 1 };
}
