/**
 * Rust: rustc/cargo diagnostics (`error[E0308]: …` or `error: …` followed by ` --> file:line:col`)
 * and panics (`thread 'main' (123) panicked at src/main.rs:4:5:` with the message on the next
 * lines; before 1.73: `panicked at 'msg', src/main.rs:4:5`). `error: aborting due to …` and
 * `error: could not compile …` only wrap the real diagnostic. A panic is named
 * `thread 'main' panicked: <message>` (the location is volatile, the thread id more so) and
 * identified by its message and the file it panicked in, so a run with RUST_BACKTRACE=1 groups
 * with one without.
 */
import { basename, diagFile, Rank, type Hit } from '../finding.ts';

const DIAG = /^error(?:\[(E\d{4})\])?: (.*)$/;
const LOCATION = /^\s*--> (.+?):\d+:\d+$/;
const PANIC = /^thread '([^']*)'(?: \(\d+\))? panicked at (.*)$/;
const OLD_PANIC_MESSAGE = /^'(.*)', (.+?):\d+:\d+$/;

/** `error[E…]: …` / `error: …` at line `i` (trimmed line `t`). */
export function rustcDiagnostic(lines: readonly string[], i: number, t: string): Hit | undefined {
  const m = DIAG.exec(t);
  if (!m) return undefined;
  const message = m[2]!;
  if (message.startsWith('aborting due to') || message.startsWith('could not compile')) {
    return { finding: { rank: Rank.Wrapper, line: i, signature: t, format: 'rust', key: { kind: 'text', text: t } }, next: i + 1 };
  }
  const loc = i + 1 < lines.length ? LOCATION.exec(lines[i + 1]!) : null;
  if (!loc && !m[1]) return undefined; // a plain `error: …` without a location is some other tool's
  return {
    finding: {
      rank: Rank.Exception,
      line: i,
      signature: t,
      format: 'rust',
      key: { kind: 'diag', tool: 'rustc', code: m[1] ?? '', file: loc ? diagFile(loc[1]!) : '', message },
    },
    next: i + 1,
  };
}

/** A panic at line `i` (trimmed line `t` starts with `thread '`). */
export function rustPanic(lines: readonly string[], i: number, t: string): Hit | undefined {
  const m = PANIC.exec(t);
  if (!m) return undefined;
  let message: string;
  let location: string;
  let next = i + 1;
  const old = OLD_PANIC_MESSAGE.exec(m[2]!);
  if (old) {
    message = old[1]!;
    location = old[2]!;
  } else {
    location = m[2]!.replace(/:\d+:\d+:$/, '');
    message = lines[i + 1] ?? '';
    next = i + 2;
  }
  return {
    finding: {
      rank: Rank.Exception,
      line: i,
      signature: `thread '${m[1]}' panicked: ${message}`,
      format: 'rust',
      key: { kind: 'diag', tool: 'rust-panic', code: '', file: basename(location), message },
    },
    next,
  };
}
