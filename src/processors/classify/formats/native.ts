/**
 * Compilers, linkers and native runtimes: gcc/clang/javac `file:line[:col]: error: msg` (also
 * `fatal error:`), tsc `file(line,col): error TS2304: msg` and `file:line:col - error TS2304: msg`,
 * GNU ld `undefined reference to`, `multiple definition of`, `cannot find -lx`, glibc `Assertion
 * … failed.`, libstdc++ `terminate called after throwing an instance of 'T'` + `what():`, and the
 * shell's report of a signal (`Segmentation fault`, `Aborted`, `Killed`, …). A program prefix
 * (`gcc: error: …`, `cc1: fatal error: …`, argparse's `prog: error: …`) is a tool error; `collect2:
 * error: ld returned 1 exit status` only wraps the linker's own message.
 */
import { diagFile, Rank, type Finding, type Hit } from '../finding.ts';

const MARKERS = [': error: ', ': fatal error: ', ': runtime error: '];
// `file:12`, `file:12:5`, `C:\x\file.c:12:5`; the file part has no spaces and is not a bare number.
const LOCATION = /^((?:[A-Za-z]:)?[^\s:]+):(\d+)(?::\d+)?$/;
// tsc: `src/a.ts(3,5): error TS2304: msg` and `src/a.ts:3:5 - error TS2304: msg`.
const TSC = /^(.+?)(?:\(\d+,\d+\): | ?:\d+:\d+ - )error (TS\d+): (.*)$/;
const PROGRAM = /^[\w.+-]+$/;
const WARNING_CODE = / \[-W[\w=-]+\]$/;
const SIGNALS = /Segmentation fault|Aborted|Killed|Bus error|Floating point exception|Illegal instruction|Trace\/breakpoint trap/;
/** The signal behind each of the shell's reports (bash/dash `strsignal` wording). */
const SIGNAL_OF: Readonly<Record<string, string>> = {
  'Segmentation fault': 'SIGSEGV',
  Aborted: 'SIGABRT',
  Killed: 'SIGKILL',
  'Bus error': 'SIGBUS',
  'Floating point exception': 'SIGFPE',
  'Illegal instruction': 'SIGILL',
  'Trace/breakpoint trap': 'SIGTRAP',
};
const LINKER = /undefined reference to |multiple definition of |(?:^|\bld: )cannot find -l/;

/** A `…: error: …` line (the caller saw one of the markers in it). */
export function compilerDiagnostic(i: number, t: string): Hit | undefined {
  for (const marker of MARKERS) {
    const at = t.indexOf(marker);
    if (at <= 0) continue;
    const prefix = t.slice(0, at);
    const message = t.slice(at + marker.length);
    const loc = LOCATION.exec(prefix);
    if (loc && /\D/.test(loc[1]!)) {
      const code = WARNING_CODE.exec(message);
      return hit(i, Rank.Exception, t, 'cc', {
        kind: 'diag',
        tool: marker === ': runtime error: ' ? 'ubsan' : 'cc',
        code: code ? code[0].trim() : '',
        file: diagFile(loc[1]!),
        message: code ? message.slice(0, code.index) : message,
      });
    }
    if (PROGRAM.test(prefix)) {
      // `collect2: error: ld returned 1 exit status` says only that the linker failed above.
      const rank = prefix === 'collect2' && message.startsWith('ld returned') ? Rank.Wrapper : Rank.Tool;
      return hit(i, rank, t, 'cc', { kind: 'text', text: t });
    }
  }
  return undefined;
}

/** tsc diagnostics (the caller saw `error TS` in the line). */
export function tscDiagnostic(i: number, t: string): Hit | undefined {
  const m = TSC.exec(t);
  if (!m) return undefined;
  return hit(i, Rank.Exception, t, 'tsc', { kind: 'diag', tool: 'tsc', code: m[2]!, file: diagFile(m[1]!), message: m[3]! });
}

/** GNU ld's own errors (the caller saw `undefined reference to`, `multiple definition of` or `cannot find -l`). */
export function linkerError(i: number, t: string): Hit | undefined {
  if (LINKER.test(t)) {
    return hit(i, Rank.Exception, t, 'cc', { kind: 'text', text: t });
  }
  return undefined;
}

// `==123==ERROR: AddressSanitizer: heap-buffer-overflow on address …`, `WARNING: ThreadSanitizer: data race`.
const SANITIZER = /^(?:==\d+==ERROR: (?:Address|Leak|Memory|Thread|UndefinedBehavior|Hardware)Sanitizer: |WARNING: ThreadSanitizer: )/;

/** A sanitizer report's headline (the caller saw `Sanitizer`). */
export function sanitizerReport(i: number, t: string): Hit | undefined {
  if (!SANITIZER.test(t)) return undefined;
  return hit(i, Rank.Exception, t, 'cc', { kind: 'text', text: t });
}

/** glibc's failed assertion: `prog: file.c:5: func: Assertion \`x' failed.` */
export function assertionFailure(i: number, t: string): Hit | undefined {
  if (!t.endsWith("' failed.") || !t.includes(': Assertion `')) return undefined;
  return hit(i, Rank.Tool, t, 'cc', { kind: 'text', text: t });
}

// glibc's reports before it aborts the process: fortify and stack protector failures (`*** stack
// smashing detected ***: terminated`, `*** buffer overflow detected ***: terminated`) and the
// malloc checks (`free(): invalid pointer`, `double free or corruption (out)`, `malloc(): corrupted
// top size`, `munmap_chunk(): invalid pointer`, `corrupted size vs. prev_size`).
const GLIBC_ABORT =
  /^(?:\*\*\* [a-z][a-z -]{2,40} \*\*\*: terminated|(?:free|malloc|realloc|calloc|munmap_chunk|malloc_consolidate|_int_free|_int_malloc|tcache_thread_shutdown)\(\): [a-z][\w .,()!-]{2,60}|double free or corruption \([!\w]+\)|corrupted (?:size vs\. prev_size|double-linked list)(?: \(not small\))?)$/;

/**
 * glibc's last words before SIGABRT (the caller saw `***`, `(): `, `double free` or `corrupted `):
 * named and identified by the line, so a stack smash and a bad free are two failures, not one
 * silent `SIGABRT`.
 */
export function glibcAbort(i: number, t: string): Hit | undefined {
  if (!GLIBC_ABORT.test(t)) return undefined;
  return hit(i, Rank.Exception, t, 'cc', { kind: 'text', text: t });
}

/** libstdc++: `terminate called after throwing an instance of 'T'` and the `what():` line after it. */
export function cxxTerminate(lines: readonly string[], i: number, t: string): Hit | undefined {
  const m = /^terminate called after throwing an instance of '([^']+)'$/.exec(t);
  if (!m) return undefined;
  const next = (lines[i + 1] ?? '').trim();
  const what = next.startsWith('what():') ? next.slice(7).trim() : '';
  const signature = what ? `${m[1]}: ${what}` : m[1]!;
  return {
    finding: { rank: Rank.Exception, line: i, signature, format: 'cc', key: { kind: 'stack', types: [m[1]!], frames: [], message: what, weak: true } },
    next: what ? i + 2 : i + 1,
  };
}

/**
 * The shell's report of a process killed by a signal: `bash: line 1: 123 Segmentation fault ./x`,
 * a job-control line (`     124 Segmentation fault      | ./x`, `| bash: line 1: …` as an agent's
 * pipe prints it), or the word alone (`Killed`, `Aborted (core dumped)`). Named by the line;
 * identified by the signal, so that it is the same failure as a silent death with exit status
 * 128 + n (vigil.ts).
 */
export function signalReport(i: number, t: string): Hit | undefined {
  const m = SIGNALS.exec(t);
  if (!m) return undefined;
  // Alone (`Killed`, `Aborted (core dumped)`), or after a pid (`bash: line 1: 123 Killed  cmd`).
  const before = t.slice(0, m.index);
  const after = t.slice(m.index + m[0].length);
  if (before === '' ? after !== '' && after !== ' (core dumped)' : !/(?:^|: |\s)\d+\s+$/.test(before)) return undefined;
  return hit(i, Rank.Tool, t, 'shell', { kind: 'status', name: SIGNAL_OF[m[0]]! });
}

// valgrind memcheck's error headlines, after its `==PID== ` prefix.
const MEMCHECK =
  /^==\d+== (?:Invalid (?:read|write) of size \d+|Invalid free\(\)|Mismatched free\(\)|Conditional jump or move depends on uninitialised value|Use of uninitialised value of size|Syscall param .* (?:points to|contains) uninitialised|Source and destination overlap|Process terminating with default action of signal|[\d,]+ bytes in [\d,]+ blocks are (?:definitely|possibly) lost|Argument '\w+' of function \w+ has a fishy)/;

/**
 * A valgrind (memcheck) error report: the headline of its first error, as printed (`==123== Invalid
 * read of size 4`). A memory error is a failure even when the program goes on and exits 0.
 */
export function memcheckError(i: number, t: string): Hit | undefined {
  if (!MEMCHECK.test(t)) return undefined;
  return hit(i, Rank.Exception, t, 'valgrind', { kind: 'text', text: t.slice(t.indexOf('== ') + 3) });
}

function hit(i: number, rank: Finding['rank'], signature: string, format: string, key: Finding['key']): Hit {
  return { finding: { rank, line: i, signature, format, key }, next: i + 1 };
}
