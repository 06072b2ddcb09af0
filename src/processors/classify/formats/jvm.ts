/**
 * JVM stack traces: `Exception in thread "main" pkg.Type: msg`, `printStackTrace` output (and
 * OpenTelemetry's `exception.stacktrace`) starting at `pkg.Type: msg`, `\tat pkg.Class.method(File.java:N)`
 * frames, `... N more`, `Suppressed:` blocks and `Caused by:` chains. The name is the root cause
 * (the last `Caused by:`); the identity is the chain of types and the root cause's innermost frames
 * of the program's own code (JDK, Kotlin, Scala and test-runner frames do not count).
 */
import { indentOf } from '../frame.ts';
import { collapseFrames, diagFile, isWeakStack, MAX_FRAMES, Rank, type Hit } from '../finding.ts';

const THREAD_PREFIX = /^Exception in thread "[^"]*" /;
const CAUSED_BY = 'Caused by: ';
// `pkg.Outer$Inner: msg` or `pkg.Type` alone; the type holds a dot or ends in Error/Exception/Throwable.
const TYPE_LINE = /^([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)(?::(?: |$)|$)/;
// `at [module/]pkg.Class.method(Source)`; the method name directly followed by `(`.
const JVM_FRAME = /^at (?:[\w.$-]+(?:@[\w.-]+)?\/)?([\w$.<>]+)\(([^()]*)\)$/;
const EXTERNAL = /^(?:java|javax|jdk|sun|com\.sun|kotlin|kotlinx|scala|org\.junit|org\.gradle|org\.apache\.maven)\./;

/** Whether line `i` starts a JVM trace (called for lines starting `Exception in thread "`, `Caused by: ` or a type-like head). */
export function jvmTrace(lines: readonly string[], i: number): Hit | undefined {
  const first = lines[i]!;
  let head = first.replace(THREAD_PREFIX, '');
  const standaloneCause = head.startsWith(CAUSED_BY);
  if (standaloneCause) head = head.slice(CAUSED_BY.length);
  const m = TYPE_LINE.exec(head);
  if (!m) return undefined;
  const hasThread = head !== first && !standaloneCause;
  const next = lines[i + 1];
  const framesFollow = next !== undefined && isJvmFrame(next);
  // A bare `pkg.Type: msg` is a JVM trace only when JVM frames follow; the other starts are explicit.
  if (!hasThread && !standaloneCause && !framesFollow) return undefined;
  if (!hasThread && !standaloneCause && !m[1]!.includes('.') && !/(?:Error|Exception|Throwable)$/.test(m[1]!)) return undefined;

  const chain: Array<{ line: number; text: string; type: string; frames: string[] }> = [];
  let current = { line: i, text: head, type: m[1]!, frames: [] as string[] };
  chain.push(current);
  let j = i + 1;
  let suppressed = false;
  for (; j < lines.length; j++) {
    const l = lines[j]!;
    const indent = indentOf(l);
    const body = l.slice(indent);
    if (indent > 0 && body.startsWith('at ')) {
      const f = JVM_FRAME.exec(body);
      if (!f) break;
      if (!suppressed) current.frames.push(frameKey(f[1]!));
      continue;
    }
    if (indent > 0 && body.startsWith('...')) continue;
    if (indent > 0 && body.startsWith('Suppressed: ')) {
      suppressed = true;
      continue;
    }
    if (body.startsWith(CAUSED_BY) && (indent === 0 || suppressed)) {
      if (indent > 0) continue;
      suppressed = false;
      const c = TYPE_LINE.exec(body.slice(CAUSED_BY.length));
      if (!c) break;
      current = { line: j, text: body.slice(CAUSED_BY.length), type: c[1]!, frames: [] };
      chain.push(current);
      continue;
    }
    break;
  }
  const root = chain[chain.length - 1]!;
  // The root cause's own frames first; when they are all elided (`... 1 more`), its wrappers'.
  let inApp: string[] = [];
  for (let k = chain.length - 1; k >= 0 && inApp.length === 0; k--) inApp = chain[k]!.frames.filter((f) => !f.startsWith('!'));
  const frames = collapseFrames(inApp, MAX_FRAMES);
  const colon = root.text.indexOf(': ');
  return {
    finding: {
      rank: Rank.Exception,
      line: root.line,
      signature: root.text,
      format: 'jvm',
      key: {
        kind: 'stack',
        types: chain.map((c) => c.type),
        frames,
        message: colon < 0 ? '' : root.text.slice(colon + 2),
        weak: isWeakStack(frames, root.type, isMainFrame, isAnonymousFrame),
      },
    },
    next: j,
  };
}

const isMainFrame = (f: string) => f === 'main' || f.endsWith('.main');
// A lambda (`lambda$main$0`, normalized `lambda$main$`) or an anonymous class (`Main$1.run` → `Main$.run`).
const isAnonymousFrame = (f: string) => f.includes('lambda$') || f.includes('$.');

function isJvmFrame(line: string): boolean {
  const indent = indentOf(line);
  return indent > 0 && JVM_FRAME.test(line.slice(indent));
}

/** `Class.method`, generated parts normalized; `!` marks JDK and runtime frames. */
function frameKey(qualified: string): string {
  if (EXTERNAL.test(qualified)) return '!';
  // Generated names only when there is something to normalize (most frames have no `$` or accessor).
  const name =
    qualified.includes('$') || qualified.includes('GeneratedMethodAccessor')
      ? qualified
          .replace(/\$\$Lambda\$?[\w/$.]*/g, '$$Lambda')
          .replace(/lambda\$(\w+?)\$\d+/g, 'lambda$$$1')
          .replace(/GeneratedMethodAccessor\d+/g, 'GeneratedMethodAccessor')
          .replace(/\$\d+/g, '$$')
      : qualified;
  // `Class.method`: the last two dotted parts.
  const last = name.lastIndexOf('.');
  const prev = last > 0 ? name.lastIndexOf('.', last - 1) : -1;
  return name.slice(prev + 1);
}

// Maven's report of a javac error: `[ERROR] /path/src/main/java/demo/Limits.java:[5,46] cannot find symbol`.
const MAVEN_JAVAC = /^\[ERROR\] (.+\.(?:java|kt|scala|groovy)):\[\d+(?:,\d+)?\] (.+)$/;

/** A compiler error as Maven prints it: named as printed, identified like javac's own diagnostic. */
export function mavenCompilerError(i: number, t: string): Hit | undefined {
  const m = MAVEN_JAVAC.exec(t);
  if (!m) return undefined;
  return {
    finding: { rank: Rank.Exception, line: i, signature: t, format: 'jvm', key: { kind: 'diag', tool: 'javac', code: '', file: diagFile(m[1]!), message: m[2]! } },
    next: i + 1,
  };
}
