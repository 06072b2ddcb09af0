/**
 * The vigil rule set, format by format: which line names the failure, which class a text gets,
 * and what never counts as a failure. Texts are what the tools print (most from test/corpus's real
 * runs; Go, clang, older npm and the REPL from their documented output, as they are not on the
 * build machine). test/classify-corpus.test.ts measures the same on the whole corpus.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyLine, type ClassifiedLine } from '../src/processors/classify/classify.ts';

const run = (text: string, exit_code: number) => classifyLine(JSON.stringify({ text, exit_code }), 1) as ClassifiedLine;
const lines = (...l: string[]) => l.join('\n');

describe('failed runs are named by their most telling line', () => {
  const rows: Array<[name: string, text: string, signature: string]> = [
    [
      'Python: the final exception of a chain',
      lines(
        'Traceback (most recent call last):',
        '  File "/a/s.py", line 7, in read',
        '    return S[k]',
        '           ~^^^',
        "KeyError: 'port'",
        '',
        'During handling of the above exception, another exception occurred:',
        '',
        'Traceback (most recent call last):',
        '  File "/a/s.py", line 11, in <module>',
        '    read("port")',
        '  File "/a/s.py", line 9, in read',
        '    raise RuntimeError("missing port")',
        'RuntimeError: missing port',
      ),
      'RuntimeError: missing port',
    ],
    [
      'Python: direct cause chain',
      lines(
        'Traceback (most recent call last):',
        '  File "/a/p.py", line 6, in parse',
        '    return int(v)',
        "ValueError: invalid literal for int() with base 10: 'x'",
        '',
        'The above exception was the direct cause of the following exception:',
        '',
        'Traceback (most recent call last):',
        '  File "/a/p.py", line 10, in <module>',
        '    parse("x")',
        '  File "/a/p.py", line 8, in parse',
        '    raise ConfigError("bad port") from e',
        'ConfigError: bad port',
      ),
      'ConfigError: bad port',
    ],
    [
      'Python: SyntaxError with carets, no traceback header',
      lines('  File "/a/broken.py", line 3', '    def total(items:', '             ^', "SyntaxError: '(' was never closed"),
      "SyntaxError: '(' was never closed",
    ],
    [
      'Python: a traceback followed by other output (unittest)',
      lines(
        'F',
        '='.repeat(70),
        'FAIL: test_x (t.T.test_x)',
        '-'.repeat(70),
        'Traceback (most recent call last):',
        '  File "/a/t.py", line 4, in test_x',
        '    self.assertEqual(1, 2)',
        'AssertionError: 1 != 2',
        '',
        '-'.repeat(70),
        'Ran 1 test in 0.000s',
        '',
        'FAILED (failures=1)',
      ),
      'AssertionError: 1 != 2',
    ],
    [
      'Python: exception group',
      lines(
        '  + Exception Group Traceback (most recent call last):',
        '  |   File "/a/t.py", line 3, in <module>',
        '  |     raise ExceptionGroup("2 failed", errs)',
        '  | ExceptionGroup: 2 failed (2 sub-exceptions)',
        '  +-+---------------- 1 ----------------',
        '    | ValueError: a',
        '    +---------------- 2 ----------------',
        '    | TypeError: b',
        '    +------------------------------------',
      ),
      'ExceptionGroup: 2 failed (2 sub-exceptions)',
    ],
    [
      'Node: uncaught error under its source header',
      lines(
        '/a/u.js:7',
        '  return getUser(id).email;',
        '                    ^',
        '',
        "TypeError: Cannot read properties of undefined (reading 'email')",
        '    at emailOf (/a/u.js:7:21)',
        '    at node:internal/main/run_main_module:28:49',
        '',
        'Node.js v20.20.2',
      ),
      "TypeError: Cannot read properties of undefined (reading 'email')",
    ],
    [
      'Node: ERR_* code kept',
      lines(
        'node:internal/modules/esm/resolve:873',
        '  throw new ERR_MODULE_NOT_FOUND(packageName, fileURLToPath(base), null);',
        '        ^',
        '',
        "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from /a/main.mjs",
        '    at packageResolve (node:internal/modules/esm/resolve:873:9) {',
        "  code: 'ERR_MODULE_NOT_FOUND'",
        '}',
      ),
      "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from /a/main.mjs",
    ],
    [
      'Node: unhandled rejection of a non-Error names the reason',
      lines(
        'node:internal/process/promises:389',
        '      new UnhandledPromiseRejection(reason);',
        '      ^',
        '',
        'UnhandledPromiseRejection: This error originated either by throwing inside of an async function without a catch block, or by rejecting a promise which was not handled with .catch(). The promise rejected with the reason "lease expired".',
        '    at throwUnhandledRejectionsMode (node:internal/process/promises:389:7) {',
        "  code: 'ERR_UNHANDLED_REJECTION'",
        '}',
      ),
      'UnhandledPromiseRejection: The promise rejected with the reason "lease expired".',
    ],
    ['Node REPL: Uncaught is framing', 'Uncaught TypeError: x.map is not a function', 'TypeError: x.map is not a function'],
    [
      'Node: a thrown string',
      lines(
        '/a/w.js:1',
        'throw "worker 3 crashed";',
        '^',
        'worker 3 crashed',
        '(Use `node --trace-uncaught ...` to show where the exception was thrown)',
        '',
        'Node.js v20.20.2',
      ),
      'worker 3 crashed',
    ],
    [
      'JVM: the root cause of a Caused by chain',
      lines(
        'Exception in thread "main" java.lang.RuntimeException: failed',
        '\tat Main.load(Main.java:7)',
        'Caused by: java.io.FileNotFoundException: /a/c.yml (No such file or directory)',
        '\tat java.base/java.io.FileInputStream.open0(Native Method)',
        '\tat Main.load(Main.java:4)',
        '\t... 1 more',
      ),
      'java.io.FileNotFoundException: /a/c.yml (No such file or directory)',
    ],
    [
      'JVM: an exception without a cause loses its thread prefix',
      lines('Exception in thread "worker-1" java.lang.IllegalStateException: closed', '\tat Pool.take(Pool.java:9)'),
      'java.lang.IllegalStateException: closed',
    ],
    [
      'javac: the first error',
      lines('Main.java:6: error: cannot find symbol', '    System.out.println(cnt);', '                       ^', '  symbol:   variable cnt', '1 error'),
      'Main.java:6: error: cannot find symbol',
    ],
    [
      'rustc: error[E…], not the summary',
      lines(
        'error[E0308]: mismatched types',
        ' --> main.rs:3:5',
        '  |',
        '3 |     "998"',
        '  |     ^^^^^ expected `i32`, found `&str`',
        '',
        'error: aborting due to 1 previous error',
      ),
      'error[E0308]: mismatched types',
    ],
    [
      'Rust: a panic is named by its message, not its thread id or location',
      lines(
        '',
        "thread 'main' (8062) panicked at main.rs:5:5:",
        'index out of bounds: the len is 3 but the index is 61',
        'note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace',
      ),
      "thread 'main' panicked: index out of bounds: the len is 3 but the index is 61",
    ],
    ['Rust before 1.73: one-line panic', "thread 'main' panicked at 'config missing', src/main.rs:4:5", "thread 'main' panicked: config missing"],
    [
      'Go: panic with goroutine dump',
      lines(
        'panic: runtime error: index out of range [5] with length 3',
        '',
        'goroutine 1 [running]:',
        'main.main()',
        '\t/tmp/sandbox/prog.go:8 +0x1d',
        'exit status 2',
      ),
      'panic: runtime error: index out of range [5] with length 3',
    ],
    [
      'Go: fatal error',
      lines('fatal error: all goroutines are asleep - deadlock!', '', 'goroutine 1 [chan receive]:', 'main.main()', '\t/tmp/x.go:5 +0x2d', 'exit status 2'),
      'fatal error: all goroutines are asleep - deadlock!',
    ],
    [
      'gcc: the error, not the context line or the note',
      lines(
        "main.c: In function 'main':",
        "main.c:7:5: error: 'count' undeclared (first use in this function)",
        '    7 |     count = 42;',
        '      |     ^~~~~',
        'main.c:7:5: note: each undeclared identifier is reported only once',
      ),
      "main.c:7:5: error: 'count' undeclared (first use in this function)",
    ],
    [
      'clang: file:line:col: error:',
      lines("main.c:3:5: error: use of undeclared identifier 'y'", '    y = 2;', '    ^', '1 error generated.'),
      "main.c:3:5: error: use of undeclared identifier 'y'",
    ],
    [
      'ld: the undefined reference, not collect2',
      lines(
        "/usr/bin/ld: /tmp/ccUC8NOY.o: in function `main':",
        "main.c:(.text+0xa): undefined reference to `load_checksum'",
        'collect2: error: ld returned 1 exit status',
      ),
      "main.c:(.text+0xa): undefined reference to `load_checksum'",
    ],
    [
      'C++: terminate + what()',
      lines("terminate called after throwing an instance of 'std::runtime_error'", '  what():  cannot open /a/x.dat'),
      'std::runtime_error: cannot open /a/x.dat',
    ],
    ['shell: command not found', 'bash: line 1: frobnicate: command not found', 'bash: line 1: frobnicate: command not found'],
    ['shell: Permission denied', 'bash: line 1: ./tool.sh: Permission denied', 'bash: line 1: ./tool.sh: Permission denied'],
    ['coreutils: No such file or directory', 'cat: /a/x.log: No such file or directory', 'cat: /a/x.log: No such file or directory'],
    [
      'npm error: the telling line, not the code',
      lines(
        'npm error code ENOENT',
        'npm error syscall open',
        'npm error path /a/package.json',
        'npm error errno -2',
        "npm error enoent Could not read package.json: Error: ENOENT: no such file or directory, open '/a/package.json'",
        'npm error A complete log of this run can be found in: /r/.npm/_logs/x-debug-0.log',
      ),
      "npm error enoent Could not read package.json: Error: ENOENT: no such file or directory, open '/a".slice(0, 96),
    ],
    [
      'npm ≤ 8: npm ERR!',
      lines('npm ERR! code E404', 'npm ERR! 404 Not Found - GET https://registry.npmjs.org/nope - Not found', 'npm ERR! 404'),
      'npm ERR! 404 Not Found - GET https://registry.npmjs.org/nope - Not found',
    ],
    [
      "npm runs a script: the script's own failure wins",
      lines(
        '',
        '> srv@1.0.0 start',
        '> node server.js',
        '',
        'node:events:502',
        "      throw er; // Unhandled 'error' event",
        '      ^',
        '',
        'Error: listen EADDRINUSE: address already in use 127.0.0.1:5000',
        '    at Server.setupListenHandle [as _listen2] (node:net:1908:16)',
        'npm error code 1',
      ),
      'Error: listen EADDRINUSE: address already in use 127.0.0.1:5000',
    ],
    [
      'git: fatal',
      lines("fatal: ambiguous argument 'v9': unknown revision or path not in the working tree.", "Use '--' to separate paths from revisions, like this:"),
      "fatal: ambiguous argument 'v9': unknown revision or path not in the working tree.",
    ],
    [
      'git: merge conflict',
      lines('Auto-merging a.txt', 'CONFLICT (content): Merge conflict in a.txt', 'Automatic merge failed; fix conflicts and then commit the result.'),
      'CONFLICT (content): Merge conflict in a.txt',
    ],
    [
      "make: the recipe's failure, not make's",
      lines('gcc -c prog.c', "prog.c:4:17: error: expected ';' before '}' token", 'make: *** [Makefile:2: prog] Error 1'),
      "prog.c:4:17: error: expected ';' before '}' token",
    ],
    ['make: its own error', "make: *** No rule to make target 'deploy'.  Stop.", "make: *** No rule to make target 'deploy'. Stop."],
    [
      'perl: the fatal error, not the wrapper',
      lines(
        "Can't locate Acme/Widget.pm in @INC (you may need to install the Acme::Widget module) (@INC contains: /etc/perl)",
        'BEGIN failed--compilation aborted at w.pl line 2.',
      ),
      "Can't locate Acme/Widget.pm in @INC (you may need to install the Acme::Widget module) (@INC cont",
    ],
    [
      'argparse: prog: error: after the usage line',
      lines('usage: ingest [-h] --count COUNT', "ingest: error: argument --count: invalid int value: 'ten'"),
      "ingest: error: argument --count: invalid int value: 'ten'",
    ],
    [
      'log prefixes: timestamp cut, level kept',
      lines('2026-01-31 12:00:00,123 INFO worker: start', '2026-01-31 12:00:01,456 ERROR worker: job 42 failed'),
      'ERROR worker: job 42 failed',
    ],
    [
      'ANSI colour and CRLF',
      "\x1b[1m\x1b[31merror\x1b[0m\x1b[1m: pathspec 'x' did not match any file(s) known to git\x1b[0m\r\n",
      "error: pathspec 'x' did not match any file(s) known to git",
    ],
    ['no telling line: the first line', lines('', '  something went wrong  ', 'more'), 'something went wrong'],
    ['nothing at all: ExecutionError', '', 'ExecutionError'],
  ];
  for (const [name, text, signature] of rows) {
    test(name, () => {
      const r = run(text, 1);
      assert.equal(r.classification, 'ExecutionFailure');
      assert.equal(r.signature, signature);
      assert.match(String(r.fingerprint), /^v3:[0-9a-f]{16}$/);
    });
  }
});

describe('successful runs: recovered errors, warnings, noise', () => {
  const rows: Array<[name: string, text: string, classification: string, signature?: string]> = [
    [
      'a logged traceback is a recovered error',
      lines(
        '2026-01-31 12:00:00,123 ERROR worker: could not parse size',
        'Traceback (most recent call last):',
        '  File "/a/w.py", line 10, in <module>',
        '    int(raw)',
        "ValueError: invalid literal for int() with base 10: 'n/a'",
      ),
      'RecoveredError',
      "ValueError: invalid literal for int() with base 10: 'n/a'",
    ],
    [
      'a coreutils error a script carried on after',
      "cp: cannot stat '/a/o.env': No such file or directory",
      'RecoveredError',
      "cp: cannot stat '/a/o.env': No such file or directory",
    ],
    ['make -i', 'make: [Makefile:3: lint] Error 1 (ignored)', 'RecoveredError', 'make: [Makefile:3: lint] Error 1 (ignored)'],
    [
      'gcc warning',
      lines("u.c: In function 'main':", "u.c:2:9: warning: unused variable 'x' [-Wunused-variable]", '    2 |     int x = 4;', '      |         ^'),
      'StderrWarning',
    ],
    ['clang warning summary', lines("a.c:2:9: warning: unused variable 'x' [-Wunused-variable]", '1 warning generated.'), 'StderrWarning'],
    [
      'rustc warnings',
      lines('warning: unused variable: `x`', ' --> main.rs:3:9', '  |', '  = note: `#[warn(unused_variables)]` on by default', '', 'warning: 1 warning emitted'),
      'StderrWarning',
    ],
    ['javac -Xlint', lines('Raw.java:3: warning: [rawtypes] found raw type: List', '  List items = new ArrayList();', '  ^', '1 warning'), 'StderrWarning'],
    ['javac Note', lines('Note: Old.java uses or overrides a deprecated API.', 'Note: Recompile with -Xlint:deprecation for details.'), 'StderrWarning'],
    ['npm warn', 'npm warn deprecated inflight@1.0.6: This module is not supported, and leaks memory.', 'StderrWarning'],
    ['npm WARN (npm ≤ 8)', 'npm WARN config global `--global`, `--local` are deprecated. Use `--location=global` instead.', 'StderrWarning'],
    [
      'Node ExperimentalWarning',
      lines(
        '(node:17769) ExperimentalWarning: Permission is an experimental feature and might change at any time',
        '(Use `node --trace-warnings ...` to show where the warning was created)',
      ),
      'StderrWarning',
    ],
    ['Node DeprecationWarning', '(node:17762) [DEP0005] DeprecationWarning: Buffer() is deprecated due to security and usability issues.', 'StderrWarning'],
    [
      'Python warning with its file:line: prefix and source line',
      lines("/a/opt.py:4: UserWarning: falling back after ConnectionError: 'x'", '  warnings.warn(f"falling back after ConnectionError: {e!r}")'),
      'StderrWarning',
    ],
    [
      'Python RuntimeWarning',
      lines(
        "/a/aio.py:4: RuntimeWarning: coroutine 'fetch' was never awaited",
        '  fetch(53)',
        'RuntimeWarning: Enable tracemalloc to get the object allocation traceback',
      ),
      'StderrWarning',
    ],
    ['Python logging WARNING with a timestamp', '2026-01-31 12:00:00,123 WARNING http: request took 3338ms; retrying once after TimeoutError', 'StderrWarning'],
    ['perl uninitialized value', 'Use of uninitialized value $x in concatenation (.) or string at w.pl line 5.', 'StderrWarning'],
    ['make warning', "Makefile:4: warning: overriding recipe for target 'build'", 'StderrWarning'],
    ['git warning', "warning: in the working copy of 'a.txt', LF will be replaced by CRLF the next time Git touches it", 'StderrWarning'],
    ['JVM warning', 'OpenJDK 64-Bit Server VM warning: Option UseBiasedLocking was deprecated in version 15.0', 'StderrWarning'],
    ['bash warning', 'bash: warning: setlocale: LC_ALL: cannot change locale (fr_FR.UTF-8)', 'StderrWarning'],
    ['benign: 0 errors', 'checked 62 files: 0 errors', 'Uncertain'],
    ['benign: error_count=0', 'error_count=0 skipped=5', 'Uncertain'],
    ['benign: ErrorHandler registered', 'ErrorHandler registered for /api/v2', 'Uncertain'],
    ['benign: a handler for an exception type', 'registered handler for ConnectionResetError', 'Uncertain'],
    ['benign: errors: none', 'errors: none', 'Uncertain'],
    ['benign: error: none', 'error: none', 'Uncertain'],
    ['benign: ERROR: 0', 'ERROR: 0', 'Uncertain'],
    ['benign: ERRORS=0', 'ERRORS=0 WARNINGS=0', 'Uncertain'],
    ['noise: progress', lines("Cloning into 'copy'...", 'done.'), 'Uncertain'],
    ['noise: npm notice', lines('npm notice', 'npm notice 📦  lib@1.0.0', 'npm notice total files: 2'), 'Uncertain'],
    ['noise: unittest OK', lines('..', '-'.repeat(70), 'Ran 2 tests in 0.000s', '', 'OK'), 'Uncertain'],
  ];
  for (const [name, text, classification, signature] of rows) {
    test(name, () => {
      const r = run(text, 0);
      assert.equal(r.classification, classification);
      assert.equal(r.signature, signature ?? null);
    });
  }
});

describe('fallback names', () => {
  test('a failed run whose text names no failure: its first line that is not a warning', () => {
    const r = run('warning: cache is cold\nbuild broke after 3 steps\n', 1);
    assert.equal(r.signature, 'build broke after 3 steps');
    assert.equal(run('warning: only warnings\nwarning: here', 2).signature, 'warning: only warnings');
  });
});

describe('round two: what real tools printed that the first rules misjudged (issue #13)', () => {
  const rows: Array<[name: string, text: string, exitCode: number, classification: string, signature: string | null]> = [
    // handled errors on a successful run: the line that reports them
    [
      'a log line embedding an exception',
      'failed to parse settings, using defaults: SyntaxError: Expected double-quoted property name in JSON at position 14',
      0,
      'RecoveredError',
      'failed to parse settings, using defaults: SyntaxError: Expected double-quoted property name in J',
    ],
    [
      'an ignored uncaught exception',
      "uncaught exception (ignored by handler): TypeError: Cannot read properties of null (reading 'id')",
      0,
      'RecoveredError',
      "uncaught exception (ignored by handler): TypeError: Cannot read properties of null (reading 'id'",
    ],
    [
      'a bare Error embedded, with the stack console.error printed',
      lines('failed to refresh token: Error: invalid_grant: refresh token expired', '    at refresh (file:///a/auth.mjs:3:34)', '    at file:///a/auth.mjs:5:9'),
      0,
      'RecoveredError',
      'failed to refresh token: Error: invalid_grant: refresh token expired',
    ],
    [
      'a Python repr embedded',
      "could not load cache: FileNotFoundError(2, 'No such file or directory')",
      0,
      'RecoveredError',
      "could not load cache: FileNotFoundError(2, 'No such file or directory')",
    ],
    [
      'a Python OSError printed with str()',
      "could not load cache, rebuilding: [Errno 2] No such file or directory: 'cache.json'",
      0,
      'RecoveredError',
      "could not load cache, rebuilding: [Errno 2] No such file or directory: 'cache.json'",
    ],
    [
      'a level after a prefix (psql without ON_ERROR_STOP)',
      lines('psql:migrate.sql:2: ERROR:  column "x" of relation "a" does not exist', 'LINE 1: UPDATE a SET x = true;', '                     ^'),
      0,
      'RecoveredError',
      'psql:migrate.sql:2: ERROR: column "x" of relation "a" does not exist',
    ],
    [
      'valgrind: the first memory error headline',
      lines(
        '==18018== Invalid read of size 4',
        '==18018==    at 0x109163: main (v.c:2)',
        "==18018==  Address 0x4a40054 is 4 bytes after a block of size 16 alloc'd",
      ),
      0,
      'RecoveredError',
      '==18018== Invalid read of size 4',
    ],
    [
      'valgrind: uninitialised value, after its banner',
      lines(
        '==7== Memcheck, a memory error detector',
        '==7== Command: ./u',
        '==7== ',
        '==7== Conditional jump or move depends on uninitialised value(s)',
        '==7==    at 0x10913D: main (u.c:4)',
        '==7== ERROR SUMMARY: 1 errors from 1 contexts (suppressed: 0 from 0)',
      ),
      0,
      'RecoveredError',
      '==7== Conditional jump or move depends on uninitialised value(s)',
    ],
    [
      'valgrind: a clean run is noise',
      lines(
        '==7== Memcheck, a memory error detector',
        '==7== HEAP SUMMARY:',
        '==7== All heap blocks were freed -- no leaks are possible',
        '==7== ERROR SUMMARY: 0 errors from 0 contexts (suppressed: 0 from 0)',
      ),
      0,
      'Uncertain',
      null,
    ],
    // wrappers: named as printed, whatever the attempt
    [
      'a retry notice wrapping a connection error',
      '[retry] attempt 4 failed: connect ECONNREFUSED 127.0.0.1:34845; serving cached rates',
      0,
      'RecoveredError',
      '[retry] attempt 4 failed: connect ECONNREFUSED 127.0.0.1:34845; serving cached rates',
    ],
    [
      'a tool call that failed on its 3rd attempt',
      "tool run_python failed (attempt 3): Error: KeyError: 'results'",
      1,
      'ExecutionFailure',
      "tool run_python failed (attempt 3): Error: KeyError: 'results'",
    ],
    [
      'retry N/M failed: a tool line',
      "retry 2/2 failed: curl: (7) Failed to connect to 127.0.0.1 port 44734 after 0 ms: Couldn't connect to server",
      1,
      'ExecutionFailure',
      "retry 2/2 failed: curl: (7) Failed to connect to 127.0.0.1 port 44734 after 0 ms: Couldn't conne",
    ],
    ['a retry tag alone is no failure', '[retry] attempt 1 succeeded', 0, 'Uncertain', null],
    ['a retry notice without a failure is no failure', 'retrying in 2s', 0, 'Uncertain', null],
    // warnings without the word
    ["tar: Removing leading '/'", "tar: Removing leading `/' from member names", 0, 'StderrWarning', null],
    [
      'git hint: block',
      lines("hint: Using 'master' as the name for the initial branch. This default branch name", 'hint: is subject to change.'),
      0,
      'StderrWarning',
      null,
    ],
    [
      'git advice (detached HEAD)',
      lines(
        "Note: switching to 'abc'.",
        '',
        "You are in 'detached HEAD' state.",
        '',
        'Turn off this advice by setting config variable advice.detachedHead to false',
      ),
      0,
      'StderrWarning',
      null,
    ],
    ['make: a dropped circular dependency', 'make: Circular bundle.js <- bundle.js dependency dropped.', 0, 'StderrWarning', null],
    [
      'CMake Deprecation Warning at',
      lines(
        'CMake Deprecation Warning at CMakeLists.txt:1 (cmake_minimum_required):',
        '  Compatibility with CMake < 2.8.12 will be removed from a future version of',
      ),
      0,
      'StderrWarning',
      null,
    ],
    ['a Node process warning without Warning:', '(node:123) [DEP0040] The `punycode` module is deprecated.', 0, 'StderrWarning', null],
    ['npm notice stays noise', 'npm notice New major version of npm available! 10.8.2 -> 11.0.0', 0, 'Uncertain', null],
    // formats
    [
      'pytest: the E line of the exception',
      lines(
        '    def restock(inv, item):',
        '>       inv[item["sku"]] = 1',
        "E       KeyError: 'sku'",
        '',
        'inventory.py:2: KeyError',
        "FAILED test_inventory.py::test_restock - KeyError: 'sku'",
      ),
      1,
      'ExecutionFailure',
      "E KeyError: 'sku'",
    ],
    [
      'Maven: the javac error, not the COMPILATION ERROR header',
      lines('[ERROR] COMPILATION ERROR : ', '[ERROR] /a/src/main/java/demo/Limits.java:[5,46] cannot find symbol', '  symbol:   variable MAX'),
      1,
      'ExecutionFailure',
      '[ERROR] /a/src/main/java/demo/Limits.java:[5,46] cannot find symbol',
    ],
    ['dash: not found', 'sh: 1: kubectlx: not found', 127, 'ExecutionFailure', 'sh: 1: kubectlx: not found'],
    // silent deaths and exit statuses
    ['a silent death by SIGSEGV (139)', '', 139, 'ExecutionFailure', 'SIGSEGV'],
    ['a silent death by SIGKILL (137)', '', 137, 'ExecutionFailure', 'SIGKILL'],
    ['a silent SIGABRT (134)', '', 134, 'ExecutionFailure', 'SIGABRT'],
    ['a silent exit 3 stays ExecutionError', '', 3, 'ExecutionFailure', 'ExecutionError'],
    ['a silent exit 128 is no signal', '', 128, 'ExecutionFailure', 'ExecutionError'],
    [
      'a job-control crash line with | ',
      lines('bash: line 1:  2930 Done                    cat /dev/null', '      2931 Segmentation fault      | ./crash'),
      139,
      'ExecutionFailure',
      '2931 Segmentation fault | ./crash',
    ],
  ];
  for (const [name, text, exitCode, classification, signature] of rows) {
    test(name, () => {
      const r = run(text, exitCode);
      assert.equal(r.classification, classification);
      assert.equal(r.signature, signature);
    });
  }
});
