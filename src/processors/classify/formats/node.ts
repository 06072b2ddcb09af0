/**
 * Node.js / V8: uncaught errors and unhandled rejections as node prints them (a `file:line`,
 * source and caret header, the `Type [CODE]: message` line, `    at …` frames, an inspected
 * properties block with `[cause]:` errors, the `Node.js vNN` trailer), `err.stack` text as
 * OpenTelemetry's `exception.stacktrace` carries it, and thrown non-Error values. The name is the
 * error line (for a rejection with a non-Error reason: the reason); the identity is the error
 * type(s) and the innermost frames outside node's internals and node_modules.
 */
import { indentOf, isBlank } from '../frame.ts';
import { basename, isWeakStack, MAX_FRAMES, Rank, type Hit } from '../finding.ts';

// `TypeError: msg`, `Error [ERR_X]: msg`, `AssertionError [ERR_ASSERTION]: msg`, `Uncaught TypeError: msg`,
// `[UnhandledPromiseRejection: …]`, `DbError: msg`, `DOMException [TimeoutError]: msg` (a DOMException
// shows its name in brackets, as a code). The type is an identifier (no spaces).
const HEAD = /^(?:Uncaught )?\[?([A-Z$_][\w$.]*)(?: \[([A-Z][A-Za-z0-9_]*)\])?(?::(?: |$)|$)/;
// `at fn (loc)` / `at async fn (loc)` / `at new Foo (loc)` / `at loc`. The location has no `(`.
const V8_FRAME = /^at (?:async )?(?:new )?(?:(.+?) \(([^()]*)\)|([^\s()]+))(?: \{)?$/;
const REJECTION_REASON = 'The promise rejected with the reason ';
// The head of an error message that is itself an error line: `KeyError: `, `Error: `.
const WRAPPED_HEAD = /^(?:Uncaught )?((?:[A-Za-z_$][\w$]*\.)*[\w$]*(?:Error|Exception))(?: \[[A-Z][A-Z0-9_]*\])?: /;
const isTopFrame = (f: string) => f.startsWith('<top>@');
const isAnonymousFrame = (f: string) => f.startsWith('<anon>@');
const USE_TRACE_UNCAUGHT = '(Use `node --trace-uncaught ...` to show where the exception was thrown)';

/** Whether an indented line is a V8 frame (`at …`). */
export function isV8FrameLine(line: string, indent: number): boolean {
  return indent > 0 && line.startsWith('at ', indent) && V8_FRAME.test(line.slice(indent));
}

/**
 * A V8 error at line `i`: the head line, then (after at most a few message lines — an
 * AssertionError's diff, a `Require stack:` list) `at` frames. Without frames it is no V8 stack
 * (the generic rules may still read the line).
 */
export function nodeError(lines: readonly string[], i: number): Hit | undefined {
  const line = lines[i]!;
  const m = HEAD.exec(line);
  // An upper-case word (`ERROR:`, `FATAL:`) is a log level, never an Error class: no stack to seek.
  if (!m || !/[a-z]/.test(m[1]!)) return undefined;
  let j = i + 1;
  // Up to 40 message lines before the first frame.
  while (j < lines.length && j <= i + 40) {
    const l = lines[j]!;
    const indent = indentOf(l);
    if (indent > 0 && l.startsWith('at ', indent)) break;
    if (indent === 0 && l !== '' && HEAD.test(l) && j > i + 1) return undefined;
    j++;
  }
  if (j >= lines.length || !isV8FrameLine(lines[j]!, indentOf(lines[j]!))) return undefined;
  if (indentOf(lines[j]!) > 4 || lines[j]!.charCodeAt(0) === 9) return undefined; // JVM `\tat` and deeper
  // The innermost in-app frames, collapsed as `collapseFrames` does (outside the program dropped,
  // repeats skipped); once there are enough, the rest of the stack is only walked to its end.
  const inApp: string[] = [];
  for (; j < lines.length; j++) {
    const l = lines[j]!;
    const indent = indentOf(l);
    if (indent === 0) break;
    if (l.startsWith('at ', indent)) {
      if (inApp.length === MAX_FRAMES) continue;
      const f = V8_FRAME.exec(l.slice(indent));
      if (!f) continue;
      const key = frameKey(f[1] ?? '', f[2] ?? f[3] ?? '');
      const n = inApp.length;
      if (key.startsWith('!') || (n >= 1 && inApp[n - 1] === key) || (n >= 2 && inApp[n - 2] === key)) continue;
      inApp.push(key);
    } else if (!l.startsWith('...', indent)) break;
  }
  const types = [m[2] ? `${m[1]} [${m[2]}]` : m[1]!];
  // The inspected properties block (`{ code: …, [cause]: Error: … }`) up to its closing brace.
  if (j < lines.length && lines[j - 1]!.endsWith('{')) {
    for (; j < lines.length && lines[j] !== '}'; j++) {
      const body = lines[j]!.trimStart();
      if (body.startsWith('[cause]: ')) {
        const c = HEAD.exec(body.slice(9));
        if (c) types.push(c[1]!);
      }
    }
    if (j < lines.length) j++;
  }
  let signature = line.startsWith('Uncaught ') ? line.slice(9) : line;
  if (signature.startsWith('[')) signature = signature.slice(1);
  let message = m[0].length < line.length ? line.slice(m[0].length) : '';
  // `Error: Error: …`, `Error: KeyError: …` (an error rethrown as `new Error(String(err))`): the
  // inner error is the one that happened.
  if ((m[1] === 'Error' || m[1] === 'Exception') && !m[2]) {
    const inner = WRAPPED_HEAD.exec(message);
    if (inner) {
      types[0] = inner[1]!;
      message = message.slice(inner[0].length);
    }
  }
  if (m[1] === 'UnhandledPromiseRejection') {
    // The reason is the only telling part of node's long explanation.
    const at = signature.indexOf(REJECTION_REASON);
    if (at > 0) {
      message = signature.slice(at).replace(/\]$/, '');
      signature = `UnhandledPromiseRejection: ${message}`;
    }
  }
  const weak = isWeakStack(inApp, types[0], isTopFrame, isAnonymousFrame);
  return {
    finding: { rank: Rank.Exception, line: i, signature, format: 'node', key: { kind: 'stack', types, frames: inApp, message, weak } },
    next: j,
  };
}

/**
 * A thrown non-Error value: node prints the value on the line before the
 * `(Use \`node --trace-uncaught ...\`…)` hint. Called at that hint line.
 */
export function nodeThrownValue(lines: readonly string[], i: number): Hit | undefined {
  if (lines[i] !== USE_TRACE_UNCAUGHT || i === 0 || isBlank(lines[i - 1]!)) return undefined;
  const value = lines[i - 1]!;
  return { finding: { rank: Rank.Exception, line: i - 1, signature: value, format: 'node', key: { kind: 'text', text: value } }, next: i + 1 };
}

/** `function@module` for a frame; `!` marks frames outside the program (node internals, node_modules). */
function frameKey(fn: string, location: string): string {
  const external =
    location.startsWith('node:') ||
    location.includes('/node_modules/') ||
    location.includes('\\node_modules\\') ||
    location === '<anonymous>' ||
    location === 'native';
  // Frames outside the program are dropped by the caller: no need to name them.
  if (external) return '!';
  const file = basename(location.replace(/:\d+(?::\d+)?$/, '')).replace(/\.[cm]?[jt]sx?$/, '');
  let name = fn.replace(/ \[as [^\]]*\]$/, '');
  // Module code (CommonJS `Object.<anonymous>`, or no name: ESM top level, and anonymous arrows
  // that V8 cannot name) is `<top>`; a callback V8 names only by its receiver is `<anon>`.
  if (name === '' || name === 'Object.<anonymous>' || name === '<anonymous>') name = '<top>';
  else if (name.endsWith('.<anonymous>')) name = '<anon>';
  return `${name}@${file}`;
}
