/**
 * Fingerprint v2 (fingerprint3.ts, normalize.ts): the same failure keeps its identity across runs,
 * machines and inputs; different failures do not share one; a stack outweighs the message.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyLine, type ClassifiedLine } from '../src/processors/classify/classify.ts';
import { fingerprintFields, fingerprintV3 } from '../src/processors/classify/fingerprint3.ts';
import { normalizeMessage } from '../src/processors/classify/normalize.ts';

const fp = (text: string, exit_code = 1) => (classifyLine(JSON.stringify({ text, exit_code }), 1) as ClassifiedLine).fingerprint;
const lines = (...l: string[]) => l.join('\n');

const py = (dir: string, line: number, fn: string, last: string) =>
  lines(
    'Traceback (most recent call last):',
    `  File "${dir}/app.py", line ${line + 6}, in <module>`,
    '    main()',
    `  File "${dir}/app.py", line ${line}, in ${fn}`,
    '    return CONFIG[name]',
    last,
  );
const node = (dir: string, fn: string, head: string) =>
  lines(
    `${dir}/users.js:7`,
    '  return x;',
    '  ^',
    '',
    head,
    `    at ${fn} (${dir}/users.js:7:21)`,
    `    at Object.<anonymous> (${dir}/users.js:9:13)`,
    '    at Module._compile (node:internal/modules/cjs/loader:1521:14)',
    '',
    'Node.js v20.20.2',
  );

describe('normalizeMessage', () => {
  const rows: Array<[name: string, input: string, expected: string]> = [
    [
      'identifiers survive',
      'utf-8 x86_64 sha256 E0308 ERR_MODULE_NOT_FOUND int64 v2 worker-3 base64',
      'utf-8 x86_64 sha256 E0308 ERR_MODULE_NOT_FOUND int64 v2 worker-3 base64',
    ],
    ['words made of hex letters survive', 'deadbeef facade accepted', 'deadbeef facade accepted'],
    ['C++ and Ruby scopes are not IPv6', 'std::vector::at Class::method', 'std::vector::at Class::method'],
    ['relative paths keep their name, numbers go', 'src/app.ts:12:5', 'src/app.ts:<num>:<num>'],
    ['URLs keep host and path words', 'GET https://api.example.com:8443/v1/users/42 failed', 'GET https://api.example.com:<port>/v1/users/<num> failed'],
    ['and/or is no path', 'read and/or write', 'read and/or write'],
    ['an apostrophe is no quote', "can't open 'x.txt'", "can't open <quoted>"],
    ['curly, backtick and GNU quotes', "expected ‘;’ before “x” and `y` or `z'", 'expected <quoted> before <quoted> and <quoted> or <quoted>'],
    ['a path keeps only its extension', 'at /home/alice/proj/src/main.py', 'at <path>.py'],
    ['a path without extension', 'exec /usr/bin/python3 failed', 'exec <path> failed'],
    ['home-relative path', 'see ~/proj/notes.md', 'see <path>.md'],
    ['Windows path', 'C:\\Users\\alice\\AppData\\Local\\Temp\\a1.lock', '<path>.lock'],
    ['uuid', 'id 3f2a9c1e-8b4d-4e6f-9a1b-2c3d4e5f6a7b', 'id <uuid>'],
    ['ISO timestamp', 'at 2024-01-31T12:34:56.789Z', 'at <date>'],
    ['time of day', 'job failed at 03:00:01.250', 'job failed at <date>'],
    ['month-name date', 'since Jan 31, 2024', 'since <date>'],
    ['pointer vs small hex', 'at 0x7ffd5e8a1b20 flag 0xff', 'at <addr> flag <hex>'],
    ['hashes', 'object a4c33e931681070367959d720d4b0438c62c531f missing', 'object <hex> missing'],
    ['ipv4 and port', 'connect 127.0.0.1:5432', 'connect <ip>:<port>'],
    ['ipv6 loopback in brackets', '[::1]:6379', '[<ip>]:<port>'],
    ['localhost port', 'localhost:3000 refused', 'localhost:<port> refused'],
    ['pids and thread ids', "(node:17762) thread 'main' (8062)", '(node:<num>) thread <quoted> (<num>)'],
    ['durations, sizes, numbers', '12ms 1.5s 512MB 42 -3 1e-5 3.11.4 30 seconds', '<duration> <duration> <size> <num> <num> <num> <num> <duration>'],
    ['whitespace collapsed and trimmed', '  a \t b\n c  ', 'a b c'],
    [
      'JVM identity hashes, any length, all digits too',
      'Main$Conn@6b95977 [I@49476842 java.lang.Object@1b6d3586',
      'Main$Conn@<hex> [I@<hex> java.lang.Object@<hex>',
    ],
    ['an @ before a version, a domain or a short number is no hash', 'lodash@4.17.21 bob@cafe.example node@20', 'lodash@<num> bob@cafe.example node@<num>'],
    ['short git hashes (7 hex characters with a digit and a letter)', 'could not apply 5a07f44... update', 'could not apply <hex>... update'],
    [
      'a quoted relative path keeps its extension, as an absolute one does',
      "cannot stat 'dist/app.js' or '/tmp/a/dist/app.js'",
      "cannot stat '<path>.js' or '<path>.js'",
    ],
    ['a path right after prog: (not a URL)', 'psql:/tmp/work-1/report.sql:6: ERROR', 'psql:<path>.sql:<num>: ERROR'],
  ];
  for (const [name, input, expected] of rows) {
    test(name, () => {
      assert.equal(normalizeMessage(input), expected);
      assert.equal(normalizeMessage(expected), expected, 'idempotent');
    });
  }
});

describe('the same failure, different volatile parts: one fingerprint', () => {
  const pairs: Array<[name: string, a: string, b: string]> = [
    [
      'Python: temp dir, line numbers and the key differ',
      py('/tmp/vigil-a1', 7, 'load_config', "KeyError: 'port'"),
      py('/home/bob/x', 19, 'load_config', "KeyError: 'host'"),
    ],
    [
      'Node: dir and the property differ',
      node('/tmp/a', 'emailOf', "TypeError: Cannot read properties of undefined (reading 'email')"),
      node('/srv/app', 'emailOf', "TypeError: Cannot read properties of undefined (reading 'name')"),
    ],
    ['Node: a port', 'Error: connect ECONNREFUSED 127.0.0.1:58458', 'Error: connect ECONNREFUSED 127.0.0.1:6379'],
    [
      'gcc: quote style (C vs UTF-8 locale) and position',
      "main.c:7:5: error: 'count2' undeclared (first use in this function)",
      'main.c:9:3: error: ‘total7’ undeclared (first use in this function)',
    ],
    [
      'rustc: coloured output',
      'error[E0425]: cannot find value `a` in this scope\n --> main.rs:3:20',
      '\x1b[1m\x1b[38;5;9merror[E0425]\x1b[0m\x1b[1m: cannot find value `b` in this scope\x1b[0m\n\x1b[0m \x1b[1m\x1b[38;5;12m--> \x1b[0mmain.rs:9:20',
    ],
    [
      'Rust panic: with and without a backtrace, another thread id',
      "thread 'main' (81) panicked at main.rs:3:9:\ninvalid state: 7752\nnote: run with `RUST_BACKTRACE=1`",
      "thread 'main' (90210) panicked at main.rs:3:9:\ninvalid state: 12\nstack backtrace:\n   0: __rustc::rust_begin_unwind\n   1: main::check\n             at ./main.rs:3:9",
    ],
    ['shell: a pid', 'bash: line 1:  7842 Segmentation fault      ./crash', 'bash: line 1: 12 Segmentation fault ./crash'],
    [
      'a timestamped log line',
      '2026-01-01 00:00:00,001 ERROR runner: job 7a8569ff-1bb8-48d1-8031-9084a6ff1e73 failed after 8 attempts',
      'ERROR runner: job 00000000-1111-2222-3333-444455556666 failed after 3 attempts',
    ],
    [
      'a Python chain through a wrapper (make)',
      py('/a', 4, 'column', "KeyError: 'x'"),
      `${py('/b', 4, 'column', "KeyError: 'y'")}\nmake: *** [Makefile:2: report] Error 1`,
    ],
  ];
  for (const [name, a, b] of pairs) test(name, () => assert.equal(fp(a), fp(b)));
  test('the exit code does not change the identity', () => assert.equal(fp("fatal: ambiguous argument 'a'", 128), fp("fatal: ambiguous argument 'b'", 0)));
});

describe('different failures: different fingerprints', () => {
  const pairs: Array<[name: string, a: string, b: string]> = [
    ['Python: same type, different function', py('/a', 7, 'load_config', "KeyError: 'port'"), py('/a', 7, 'read_cache', "KeyError: 'port'")],
    ['Python: same function, different type', py('/a', 7, 'load_config', "KeyError: 'port'"), py('/a', 7, 'load_config', "IndexError: 'port'")],
    [
      'Python top-level code (weak stack): the message counts',
      lines('Traceback (most recent call last):', '  File "<string>", line 1, in <module>', "NameError: name 'x' is not defined"),
      lines('Traceback (most recent call last):', '  File "<string>", line 1, in <module>', 'NameError: free variable referenced before assignment'),
    ],
    ['Node: same error, different function', node('/a', 'emailOf', 'TypeError: x is not a function'), node('/a', 'nameOf', 'TypeError: x is not a function')],
    ['rustc: different codes', 'error[E0308]: mismatched types\n --> main.rs:3:5', 'error[E0382]: mismatched types\n --> main.rs:3:5'],
    [
      'compiler: the same error in different files',
      "a.c:1:1: error: 'x' undeclared (first use in this function)",
      "b.c:1:1: error: 'x' undeclared (first use in this function)",
    ],
    [
      'compiler: a relative directory counts',
      'error[E0425]: cannot find value `a` in this scope\n --> src/main.rs:2:20',
      'error[E0425]: cannot find value `a` in this scope\n --> main.rs:2:20',
    ],
    ['identifiers with digits: utf-8 vs utf-16', 'LookupError: unknown encoding utf-8', 'LookupError: unknown encoding utf-16'],
    ['different commands not found', 'bash: line 1: frobnicate: command not found', 'bash: line 1: kubectl: command not found'],
    ['null pointer vs a real address', 'Segmentation fault at 0x0', 'Segmentation fault at 0x7ffd5e8a1b20'],
  ];
  for (const [name, a, b] of pairs) test(name, () => assert.notEqual(fp(a), fp(b)));
});

describe('round two: identities the first rules split or merged (issue #13, #11)', () => {
  const nodeTop = (dir: string, head: string, frame = `at Object.<anonymous> (${dir}/main.js:2:19)`) =>
    lines(`${dir}/main.js:2`, '  x', '  ^', '', head, `    ${frame}`, '    at Module._compile (node:internal/modules/cjs/loader:1521:14)', '', 'Node.js v20.20.2');
  const jvmMain = (msg: string) => lines(`Exception in thread "main" java.lang.IllegalStateException: ${msg}`, '\tat Main.main(Main.java:6)');
  const pyLambda = (msg: string) =>
    lines(
      'Traceback (most recent call last):',
      '  File "/a/app.py", line 3, in <module>',
      '    rows.sort(key=lambda r: check(r))',
      '  File "/a/app.py", line 3, in <lambda>',
      `RuntimeError: ${msg}`,
    );
  const same: Array<[name: string, a: [string, number], b: [string, number]]> = [
    ['a silent SIGSEGV and the shell reporting it', ['', 139], ['bash: line 1:  7842 Segmentation fault      ./crash', 139]],
    ['the job-control form, with `| `', ['      2931 Segmentation fault      | ./crash', 139], ['| bash: line 1: 17950 Segmentation fault      ./crash', 139]],
    ['a silent SIGKILL and `Killed`', ['', 137], ['deadline.sh: line 6: 13384 Killed                  python3 worker.py', 137]],
    [
      'a wrapper, whatever the attempt',
      ["tool run_python failed (attempt 3): Error: KeyError: 'results'", 0],
      ["tool run_python failed (attempt 1): Error: KeyError: 'results'", 1],
    ],
    ['a wrapper and its inner error printed alone', ["tool run_python failed (attempt 3): Error: KeyError: 'results'", 1], ["KeyError: 'results'", 1]],
    [
      'a retry tag and notice around a tool line, and the tool line',
      ["[retry] retry 2/2 failed: curl: (7) Failed to connect to 127.0.0.1 port 44734 after 0 ms: Couldn't connect to server", 1],
      ["curl: (7) Failed to connect to 127.0.0.1 port 28616 after 0 ms: Couldn't connect to server", 7],
    ],
    [
      'attempt N failed with a port',
      ['[retry] attempt 1 failed: connect ECONNREFUSED 127.0.0.1:34845', 0],
      ['[retry] attempt 5 failed: connect ECONNREFUSED 127.0.0.1:59622', 0],
    ],
    [
      'a JVM identity hash in a weak stack (7 digits, 8, all digits)',
      [jvmMain('connection Main$Conn@6b95977 already closed'), 1],
      [jvmMain('connection Main$Conn@49476842 already closed'), 1],
    ],
    [
      'a missing command from a script, another path, bash -c',
      ['deploy.sh: line 8: kubectlx: command not found', 127],
      ['/tmp/run-1/deploy.sh: line 5: kubectlx: command not found', 127],
    ],
    ['… and bash -c', ['bash: line 1: kubectlx: command not found', 127], ['deploy.sh: line 8: kubectlx: command not found', 127]],
    [
      'a quoted relative and absolute path',
      ["cp: cannot stat 'dist/app.js': No such file or directory", 1],
      ["cp: cannot stat '/tmp/agent-1/dist/app.js': No such file or directory", 1],
    ],
    ['psql scripts in temp dirs', ['psql:/tmp/work-p3/report.sql:6: ERROR:  division by zero', 3], ['psql:/tmp/work-u9/report.sql:4: ERROR:  division by zero', 3]],
    [
      'a generic error at top level: the value after the last colon is volatile',
      [nodeTop('/a', 'Error: invalid port: auto'), 1],
      [nodeTop('/b', 'Error: invalid port: :8080'), 1],
    ],
    [
      'a rethrown Error: Error: groups by its frames',
      [nodeTop('/a', "Error: Error: ENOENT: no such file or directory, open '/a/c.json'", 'at loadConfig (/a/main.js:11:11)'), 1],
      [nodeTop('/b', "Error: ENOENT: no such file or directory, open '/b/c.json'", 'at loadConfig (/b/main.js:7:24)'), 1],
    ],
  ];
  for (const [name, [a, ea], [b, eb]] of same) test(`one failure: ${name}`, () => assert.equal(fp(a, ea), fp(b, eb)));

  const different: Array<[name: string, a: [string, number], b: [string, number]]> = [
    [
      'Cannot find module and ENOENT at the same top-level frame',
      [nodeTop('/a', "Error: Cannot find module './config-local'"), 1],
      [nodeTop('/a', "Error: ENOENT: no such file or directory, open 'input.csv'"), 1],
    ],
    [
      'two JSON parse errors at the same top-level frame',
      [nodeTop('/a', 'SyntaxError: Unexpected end of JSON input'), 1],
      [nodeTop('/a', 'SyntaxError: Expected double-quoted property name in JSON at position 12'), 1],
    ],
    [
      'two messages from one anonymous callback',
      [nodeTop('/a', 'Error: record 26 has no id', 'at /a/main.js:3:20'), 1],
      [nodeTop('/a', 'Error: quota exceeded for 48', 'at /a/main.js:3:20'), 1],
    ],
    [
      'two messages from a callback named only by its receiver',
      [nodeTop('/a', 'Error: cache miss', 'at Timeout.<anonymous> (/a/main.js:3:20)'), 1],
      [nodeTop('/a', 'Error: pool closed', 'at Timeout.<anonymous> (/a/main.js:3:20)'), 1],
    ],
    ['a generic Python error raised in a lambda', [pyLambda('unsupported mode in row'), 1], [pyLambda('checksum mismatch in row'), 1]],
    ['a generic JVM error in main', [jvmMain('pool exhausted'), 1], [jvmMain('connection already closed'), 1]],
    ['silent exits 1 and 3', ['', 1], ['', 3]],
    ['SIGSEGV and SIGKILL', ['', 139], ['', 137]],
    ['an upper-case code after the last colon is kept', [nodeTop('/a', 'Error: connect: ECONNREFUSED'), 1], [nodeTop('/a', 'Error: connect: ETIMEDOUT'), 1]],
  ];
  for (const [name, [a, ea], [b, eb]] of different) test(`two failures: ${name}`, () => assert.notEqual(fp(a, ea), fp(b, eb)));

  test('a named function keeps outweighing the message of a generic type', () => {
    const named = (head: string) => nodeTop('/a', head, 'at loadConfig (/a/main.js:7:24)');
    assert.equal(fp(named('Error: cache miss'), 1), fp(named('Error: pool closed'), 1));
  });
});

describe('a stack outweighs the message', () => {
  test('same types and in-app frames, different messages: one fingerprint', () => {
    assert.equal(fp(py('/a', 7, 'load_config', 'LookupError: user alice not found')), fp(py('/a', 7, 'load_config', 'LookupError: user bob not found')));
  });
  test('frames ignore library frames and collapse recursion', () => {
    const deep = lines(
      'Traceback (most recent call last):',
      ...Array.from({ length: 50 }, () => '  File "/a/tree.py", line 2, in walk\n    return walk(n + 1)'),
      '  [Previous line repeated 996 more times]',
      'RecursionError: maximum recursion depth exceeded',
    );
    const shallow = lines(
      'Traceback (most recent call last):',
      '  File "/a/tree.py", line 4, in <module>',
      '  File "/a/tree.py", line 2, in walk',
      '  File "/a/tree.py", line 2, in walk',
      'RecursionError: maximum recursion depth exceeded',
    );
    assert.deepEqual(fingerprintFields({ kind: 'stack', types: ['RecursionError'], frames: ['tree:walk'], message: '', weak: false }).slice(0, 3), [
      'stack',
      'RecursionError',
      'tree:walk',
    ]);
    assert.equal(fp(deep), fp(shallow.replace('  File "/a/tree.py", line 4, in <module>\n', '')));
  });
});

describe('format', () => {
  test('v3: and 16 hex digits, stable', () => {
    const f = fingerprintV3({ kind: 'text', text: 'ValueError: x' });
    assert.match(f, /^v3:[0-9a-f]{16}$/);
    assert.equal(fingerprintV3({ kind: 'text', text: 'ValueError: x' }), f);
  });
  test('fields are length-prefixed: no two splits hash alike', () => {
    assert.notEqual(
      fingerprintV3({ kind: 'diag', tool: 'cc', code: 'a', file: 'b', message: 'c' }),
      fingerprintV3({ kind: 'diag', tool: 'cc', code: 'ab', file: '', message: 'c' }),
    );
  });
  test('kinds never collide: a text equal to a diag message', () => {
    assert.notEqual(fingerprintV3({ kind: 'text', text: 'x' }), fingerprintV3({ kind: 'diag', tool: '', code: '', file: '', message: 'x' }));
  });
});
