/**
 * Go: `panic: …` (maybe `[recovered]`), a blank line, `goroutine N [running]:` and frames
 * (`pkg.Func(...)` then `\t/path/file.go:12 +0x1d`); runtime `fatal error: …` (deadlocks, maps
 * written concurrently). The name is the panic line; the identity is the panic and the innermost
 * frames of the program's own packages (`main`, or a module path with a dot), not the runtime's.
 */
import { indentOf, isBlank } from '../frame.ts';
import { collapseFrames, MAX_FRAMES, Rank, type Hit } from '../finding.ts';

const GOROUTINE = /^goroutine \d+ \[[^\]]*\]:$/;
// `main.(*Server).handle(...)`, `github.com/x/y.Func(0x1, 0x2)`, `created by main.main in goroutine 1`.
const FUNC = /^(?:created by )?([\w./*()-]+?)\((?:[^()]*)\)(?: in goroutine \d+)?$/;

/** `panic: …` or `fatal error: …` at the start of line `i` (trimmed line `t`). */
export function goPanic(lines: readonly string[], i: number, t: string): Hit | undefined {
  const isPanic = t.startsWith('panic: ');
  if (!isPanic && !t.startsWith('fatal error: ')) return undefined;
  if (indentOf(lines[i]!) > 0) return undefined;
  // Frames, when the goroutine dump follows (after blank or `[signal …` lines).
  let j = i + 1;
  while (j < lines.length && j <= i + 4 && !GOROUTINE.test(lines[j]!)) j++;
  const frames: string[] = [];
  if (j < lines.length && GOROUTINE.test(lines[j]!)) {
    for (j++; j < lines.length; j++) {
      const l = lines[j]!;
      if (isBlank(l) || GOROUTINE.test(l)) break;
      if (indentOf(l) > 0) continue; // the `\t/path/file.go:12 +0x1d` line
      const f = FUNC.exec(l);
      if (!f) break;
      const fn = f[1]!;
      const pkg = fn.slice(0, fn.lastIndexOf('/') + 1) + fn.slice(fn.lastIndexOf('/') + 1).split('.')[0];
      const inApp = pkg === 'main' || pkg.split('/')[0]!.includes('.');
      if (inApp) frames.push(fn.slice(fn.lastIndexOf('/') + 1));
    }
  } else {
    j = i + 1;
  }
  const signature = t.replace(/ \[recovered\]$/, '');
  const message = signature.slice(signature.indexOf(': ') + 2);
  // A runtime panic's frames name where it happened; without in-app frames the message decides.
  const inApp = collapseFrames(frames, MAX_FRAMES);
  return {
    finding: {
      rank: Rank.Exception,
      line: i,
      signature,
      format: 'go',
      key: { kind: 'stack', types: [isPanic ? 'panic' : 'fatal error'], frames: inApp, message, weak: inApp.every((f) => f === 'main.main') },
    },
    next: j,
  };
}
