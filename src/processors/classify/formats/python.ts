/**
 * Python: tracebacks (with `During handling of the above exception` and `The above exception was
 * the direct cause` chains, caret lines, `[Previous line repeated N more times]`), exception
 * groups (3.11 `+ Exception Group Traceback`), and the header-less SyntaxError block a script that
 * does not compile prints. The name is the final exception line of the chain (what propagated);
 * the identity is the chain of exception types and the innermost frames of the program's own code.
 */
import { indentOf, isBlank } from '../frame.ts';
import { basename, collapseFrames, isWeakStack, MAX_FRAMES, Rank, type Finding, type Hit } from '../finding.ts';

const HEADER = 'Traceback (most recent call last):';
const GROUP_HEADER = 'Exception Group Traceback (most recent call last):';
const CHAIN_MARKERS = new Set([
  'During handling of the above exception, another exception occurred:',
  'The above exception was the direct cause of the following exception:',
]);
// `File "/x/y.py", line 12, in func` (the `, in func` part is absent in SyntaxError blocks); read by
// hand in tracebacks (frameKeyAt).
export const FRAME = /^File "([^"]*)", line \d+(?:, in (.+))?$/;
const TYPE = /^[A-Za-z_][\w.]*$/;

/**
 * `frameKey` of the frame `line` holds from `at` on (where `File "` starts), or undefined when it is
 * no frame: what `FRAME.exec(line.slice(at))` finds, read without the regular expression (its match
 * array, the slice and the captures cost more than the rest of a short traceback's parse; one per
 * frame of every traceback).
 */
export function frameKeyAt(line: string, at: number): string | undefined {
  const pathStart = at + 6; // after `File "`
  const pathEnd = line.indexOf('"', pathStart);
  if (pathEnd < 0 || !line.startsWith('", line ', pathEnd)) return undefined;
  let k = pathEnd + 8;
  const digits = k;
  while (k < line.length && line.charCodeAt(k) >= 48 && line.charCodeAt(k) <= 57) k++;
  if (k === digits) return undefined;
  if (k === line.length) return frameKey(line.slice(pathStart, pathEnd), '<module>');
  // `, in ` and at least one character up to the end, none a line terminator (`.` in `(.+)$`).
  if (!line.startsWith(', in ', k) || k + 5 === line.length) return undefined;
  for (let c = k + 5; c < line.length; c++) {
    const code = line.charCodeAt(c);
    if (code === 10 || code === 13 || code === 0x2028 || code === 0x2029) return undefined;
  }
  return frameKey(line.slice(pathStart, pathEnd), line.slice(k + 5));
}

/** A traceback starts here (the line, trimmed, is the header). */
export function isTracebackHeader(trimmed: string): boolean {
  return trimmed === HEADER || trimmed.endsWith(GROUP_HEADER);
}

/** Parses the traceback (chain) that starts at line `i`. */
export function pythonTraceback(lines: readonly string[], i: number): Hit {
  if (lines[i]!.trim().endsWith(GROUP_HEADER)) return exceptionGroup(lines, i);
  // Both lists are made with their first element (`[x]`, one slot) rather than pushed into from
  // empty (17 slots): a traceback mostly has one exception line and a frame or two.
  let types: string[] | undefined;
  let frames: readonly string[] = NO_FRAMES;
  let exceptionLine = '';
  let at = i;
  let j = i;
  for (;;) {
    // One traceback block: header, indented frames/source/carets, then the unindented exception line.
    let blockFrames: string[] | undefined;
    j++;
    while (j < lines.length) {
      const line = lines[j]!;
      const indent = indentOf(line);
      if (indent === line.length) {
        j++;
        continue;
      }
      if (indent === 0) break;
      // Only `File "…"` lines can be frames (source and caret lines are not).
      if (line.startsWith('File "', indent)) {
        const key = frameKeyAt(line, indent);
        if (key !== undefined) {
          if (blockFrames) blockFrames.push(key);
          else blockFrames = [key];
        }
      }
      j++;
    }
    if (j >= lines.length) break;
    exceptionLine = lines[j]!;
    at = j;
    const type = typeOf(exceptionLine);
    if (types) types.push(type);
    else types = [type];
    frames = blockFrames ?? NO_FRAMES;
    j++;
    // A chain goes on after blank lines, a marker, blank lines and a new header.
    let k = j;
    while (k < lines.length && isBlank(lines[k]!)) k++;
    if (k < lines.length && CHAIN_MARKERS.has(lines[k]!.trim())) {
      k++;
      while (k < lines.length && isBlank(lines[k]!)) k++;
      if (k < lines.length && lines[k]!.trim() === HEADER) {
        j = k;
        continue;
      }
    }
    break;
  }
  if (exceptionLine === '') return { next: j };
  return { finding: stackFinding(at, exceptionLine, types!, frames), next: j };
}
/** A block without frames (only read). */
const NO_FRAMES: readonly string[] = Object.freeze([]);

/**
 * A 3.11 exception group: `+ Exception Group Traceback …`, frames behind `|`, the group's own
 * line (`| ExceptionGroup: msg (2 sub-exceptions)`), then numbered sub-exceptions.
 */
function exceptionGroup(lines: readonly string[], i: number): Hit {
  const frames: string[] = [];
  const types: string[] = [];
  let groupLine = '';
  let at = i;
  let j = i + 1;
  for (; j < lines.length; j++) {
    const line = lines[j]!;
    const bar = line.indexOf('| ');
    const plus = line.trimStart().startsWith('+');
    if (bar < 0 && !plus) break;
    if (bar < 0) continue;
    const body = line.slice(bar + 2);
    const indent = indentOf(body);
    if (indent > 0) {
      const m = FRAME.exec(body.slice(indent));
      if (m && groupLine === '') frames.push(frameKey(m[1]!, m[2] ?? '<module>'));
      continue;
    }
    if (body === '' || body.startsWith('Traceback (') || CHAIN_MARKERS.has(body)) continue;
    if (groupLine === '') {
      groupLine = body;
      at = j;
    }
    types.push(typeOf(body));
  }
  if (groupLine === '') return { next: j };
  return { finding: stackFinding(at, groupLine, types, frames), next: j };
}

/** A header-less SyntaxError block: `  File "x.py", line N` at indent 2, code, carets, `SyntaxError: …`. */
export function pythonSyntaxBlock(lines: readonly string[], i: number): Hit | undefined {
  const line = lines[i]!;
  if (indentOf(line) !== 2) return undefined;
  const m = FRAME.exec(line.slice(2));
  if (!m || m[2] !== undefined) return undefined;
  // Source and caret lines are indented; the error line is not. Bounded: a block is a few lines.
  for (let j = i + 1; j < lines.length && j <= i + 6; j++) {
    const l = lines[j]!;
    if (isBlank(l) || indentOf(l) > 0) continue;
    const type = typeOf(l);
    if (!/(?:Error|Exception)$/.test(type)) return undefined;
    return { finding: stackFinding(j, l, [type], [frameKey(m[1]!, '<module>')]), next: j + 1 };
  }
  return undefined;
}

function stackFinding(at: number, exceptionLine: string, types: string[], blockFrames: readonly string[]): Finding {
  const colon = exceptionLine.indexOf(': ');
  const message = colon < 0 ? '' : exceptionLine.slice(colon + 2);
  const frames = innermostInApp(blockFrames);
  const weak = isWeakStack(frames, types[types.length - 1], isModuleFrame, isAnonymousFrame);
  return {
    rank: Rank.Exception,
    line: at,
    signature: exceptionLine,
    format: 'python',
    key: { kind: 'stack', types, frames, message, weak },
  };
}

/**
 * `collapseFrames(blockFrames.filter((f) => !f.startsWith('!')).reverse(), MAX_FRAMES)` in one pass
 * from the end (Python lists the innermost call last; in-app frames only: stdlib and packages are
 * not the program), into an array of its own length: the filtered, the reversed and the collapsed
 * arrays were three arrays of 17 slots for every traceback.
 */
export function innermostInApp(blockFrames: readonly string[]): string[] {
  let f0 = '';
  let f1 = '';
  let n = 0;
  for (let k = blockFrames.length - 1; k >= 0; k--) {
    const f = blockFrames[k]!;
    if (f.startsWith('!')) continue;
    // A recursion collapses: a frame equal to either of the last two kept is skipped.
    if (n >= 1 && (n === 1 ? f0 : f1) === f) continue;
    if (n === 2 && f0 === f) continue;
    if (n === 0) f0 = f;
    else if (n === 1) f1 = f;
    else return MAX_FRAMES === 3 ? [f0, f1, f] : collapseFrames(blockFrames.filter((x) => !x.startsWith('!')).reverse(), MAX_FRAMES);
    n++;
  }
  return n === 0 ? [] : n === 1 ? [f0] : [f0, f1];
}

const isModuleFrame = (f: string) => f.endsWith(':<module>');
// `<lambda>`, `<listcomp>`, `<genexpr>`, `<dictcomp>`, `<setcomp>`.
const isAnonymousFrame = (f: string) => f.endsWith('>') && !f.endsWith(':<module>');

/** The exception type of an exception line: `pkg.Name` before `: `, or the whole line. */
function typeOf(line: string): string {
  const t = line.trim();
  const colon = t.indexOf(': ');
  const head = colon < 0 ? (t.endsWith(':') ? t.slice(0, -1) : t) : t.slice(0, colon);
  return TYPE.test(head) ? head : '';
}

/**
 * `module:function` of a frame; a frame outside the program (stdlib, site-packages, frozen
 * modules) is prefixed `!` so that callers can drop it.
 */
export function frameKey(path: string, func: string): string {
  const external =
    path.includes('/lib/python') || path.includes('site-packages') || path.includes('dist-packages') || path.startsWith('<frozen') || path.includes('\\Lib\\');
  // Frames outside the program are dropped by the caller: no need to name them.
  if (external) return '!';
  const base = basename(path);
  return `${base.endsWith('.py') ? base.slice(0, -3) : base}:${func}`;
}

// pytest's explanation lines: `E       KeyError: 'sku'`, `E       AssertionError: …`.
const PYTEST_E = /^E {3,}(\S.*)$/;
const EXCEPTION_LINE = /^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)(?::\s|$)/;

// The location pytest prints under its `E` lines: `inventory.py:2: KeyError`.
const PYTEST_LOCATION = /^(\S+\.py):\d+: \S/;

/**
 * A pytest failure: the first `E   Type: message` line of its report, named as printed (with the
 * `E`), identified by the exception line and the file pytest locates it in (pytest prints a
 * test's traceback as source excerpts, not as `File "…"` frames).
 */
export function pytestError(lines: readonly string[], i: number, t: string): Hit | undefined {
  const m = PYTEST_E.exec(t);
  if (!m || !EXCEPTION_LINE.test(m[1]!)) return undefined;
  let file = '';
  for (let j = i + 1; j < lines.length && j <= i + 20; j++) {
    const loc = PYTEST_LOCATION.exec(lines[j]!);
    if (loc) {
      file = basename(loc[1]!);
      break;
    }
  }
  return {
    finding: { rank: Rank.Exception, line: i, signature: t, format: 'pytest', key: { kind: 'diag', tool: 'pytest', code: '', file, message: m[1]! } },
    next: i + 1,
  };
}
