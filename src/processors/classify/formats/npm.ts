/**
 * npm (`npm error …`, npm ≤ 8 `npm ERR! …`): the first line that says what went wrong, skipping
 * the bookkeeping lines (`code`, `errno`, `syscall`, `path`, the log file, blank continuations).
 * npm only runs other programs' scripts, so any failure found in the script's own output ranks
 * higher than npm's lines.
 */
import { Rank, type Hit } from '../finding.ts';

const PREFIXES = ['npm error ', 'npm ERR! '];
const BOOKKEEPING =
  /^(?:code|errno|syscall|path|workspace|location|command|signal|A complete log of this run|Log files were not written|You can rerun the command|To see a list of|\s|$)/;

/** A block of npm error lines starting at line `i`. */
export function npmError(lines: readonly string[], i: number): Hit | undefined {
  const first = lines[i]!;
  const prefix = PREFIXES.find((p) => first.startsWith(p) || first === p.trimEnd());
  if (!prefix) return undefined;
  let chosen = -1;
  let j = i;
  for (; j < lines.length; j++) {
    const l = lines[j]!;
    if (!l.startsWith(prefix) && l !== prefix.trimEnd()) break;
    if (chosen < 0 && !BOOKKEEPING.test(l.slice(prefix.length))) chosen = j;
  }
  if (chosen < 0) chosen = i; // only bookkeeping: `npm error code E…` is still better than nothing
  const signature = lines[chosen]!;
  // `Lifecycle script … failed` only says that the script (whose output is above) failed.
  const rank = signature.includes('Lifecycle script') || signature.includes('command failed') ? Rank.Wrapper : Rank.Tool;
  return { finding: { rank, line: chosen, signature, format: 'npm', key: { kind: 'text', text: signature } }, next: j };
}
