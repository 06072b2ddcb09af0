/**
 * A second batch, written after the engine against the first batch was done, to check it on
 * outputs it was not shaped on: test runners, sanitizers, pip, more git/npm/make situations.
 * Labels follow the same conventions (README "Diagnostics: formats, signatures, fingerprints").
 */
import { failure, lineOf, pad, recovered, TSC, type Scenario } from '../scenario.ts';

export const secondBatch: Scenario[] = [
  {
    id: 'py-missing-argument',
    tool: 'python3',
    program: 'calls a function without one of its required arguments',
    prepare: ({ rng }) => ({
      files: { 'calc.py': `${pad(rng.int(0, 4))}def scale(value, factor):\n    return value * factor\n\nprint(scale(${rng.int(1, 99)}))\n` },
      cmd: ['python3', 'calc.py'],
    }),
    expect: () => failure("TypeError: scale() missing 1 required positional argument: 'factor'"),
  },
  {
    id: 'py-sqlite-no-table',
    tool: 'python3',
    program: 'queries a table that does not exist in a fresh sqlite database (table name fixed, db path varies)',
    prepare: ({ rng, dir }) => ({
      files: {
        'q.py': `import sqlite3\n\ndef count_users(path):\n    con = sqlite3.connect(path)\n    return con.execute("SELECT count(*) FROM users").fetchone()\n\ncount_users(${JSON.stringify(`${dir}/db-${rng.int(1, 999)}.sqlite`)})\n`,
      },
      cmd: ['python3', 'q.py'],
    }),
    expect: () => failure('sqlite3.OperationalError: no such table: users'),
  },
  {
    id: 'py-unicode-decode',
    tool: 'python3',
    program: 'decodes bytes that are not UTF-8 (the byte and position vary)',
    prepare: ({ rng }) => ({
      files: { 'dec.py': `def decode(raw):\n    return raw.decode("utf-8")\n\ndecode(bytes([${rng.int(0x80, 0xbf)}]) * ${rng.int(1, 4)})\n` },
      cmd: ['python3', 'dec.py'],
    }),
    expect: (_c, run) => failure(lineOf(run.stderr, /^UnicodeDecodeError: 'utf-8' codec can't decode byte/)),
  },
  {
    id: 'py-keyboard-interrupt',
    tool: 'python3',
    program: 'a long loop interrupted by SIGINT (KeyboardInterrupt traceback)',
    variants: 2,
    prepare: ({ rng }) => ({
      files: { 'loop.py': `import os, signal\n\ndef work(n):\n    os.kill(os.getpid(), signal.SIGINT)\n    return n\n\nwork(${rng.int(1, 9)})\n` },
      cmd: ['python3', 'loop.py'],
    }),
    expect: () => failure('KeyboardInterrupt'),
  },
  {
    id: 'py-assert-message',
    tool: 'python3',
    program: 'an assert with a message fails in validate() (count varies)',
    prepare: ({ rng, vars }) => {
      vars.n = String(-rng.int(1, 50));
      return {
        files: { 'v.py': `def validate(count):\n    assert count >= 0, f"count must be >= 0, got {count}"\n\nvalidate(${vars.n})\n` },
        cmd: ['python3', 'v.py'],
      };
    },
    expect: ({ vars }) => failure(`AssertionError: count must be >= 0, got ${vars.n}`),
  },
  {
    id: 'pip-no-matching-distribution',
    tool: 'python3',
    program: 'pip install --no-index of a package that is not available (offline)',
    variants: 2,
    prepare: () => ({ cmd: ['python3', '-m', 'pip', 'install', '--no-index', '--disable-pip-version-check', 'vigil-corpus-nonexistent-pkg'] }),
    expect: (_c, run) => failure(lineOf(run.stderr, /^ERROR: Could not find a version that satisfies the requirement/)),
  },
  {
    id: 'py-json-tool',
    tool: 'python3',
    program: 'python -m json.tool on a file that is not JSON',
    prepare: ({ rng }) => ({ files: { 'bad.json': `${' '.repeat(rng.int(0, 3))}{"a": 1,}\n` }, cmd: ['python3', '-m', 'json.tool', 'bad.json'] }),
    expect: (_c, run) => failure(lineOf(run.stderr, /^Expecting property name enclosed in double quotes/)),
  },
  {
    id: 'node-test-runner-fail',
    tool: 'node',
    program: 'node --test with one failing strictEqual (TAP on stdout, combined)',
    prepare: ({ rng, vars }) => {
      vars.name = 'adds two numbers';
      return {
        files: {
          'add.test.js': `const test = require('node:test');\nconst assert = require('node:assert');\ntest('adds two numbers', () => {\n  assert.strictEqual(1 + ${rng.int(1, 9)}, ${rng.int(20, 99)});\n});\n`,
        },
        cmd: ['node', '--test', 'add.test.js'],
        stream: 'combined',
      };
    },
    expect: (_c, run) => failure(lineOf(run.stdout, /^not ok 1 - adds two numbers/)),
  },
  {
    id: 'node-missing-arg-typeerror',
    tool: 'node',
    program: 'calls toUpperCase on an undefined argument inside formatName()',
    prepare: ({ rng }) => ({
      files: { 'fmt.js': `${pad(rng.int(0, 3), '//')}function formatName(name) {\n  return name.toUpperCase();\n}\nformatName();\n` },
      cmd: ['node', 'fmt.js'],
    }),
    expect: () => failure("TypeError: Cannot read properties of undefined (reading 'toUpperCase')"),
  },
  {
    id: 'java-thread-exception-recovered',
    tool: 'java',
    program: 'a worker thread dies of an ArithmeticException; main carries on and exits 0',
    prepare: ({ rng }) => ({
      files: {
        'Main.java': `public class Main {\n  static int rate(int n) { return ${rng.int(1, 99)} / n; }\n  public static void main(String[] a) throws Exception {\n    Thread t = new Thread(() -> rate(0));\n    t.start();\n    t.join();\n    System.out.println("main done");\n  }\n}\n`,
      },
      setup: [['javac', 'Main.java']],
      cmd: ['java', '-cp', '.', 'Main'],
    }),
    expect: () => recovered('java.lang.ArithmeticException: / by zero'),
  },
  {
    id: 'java-missing-jar',
    tool: 'java',
    program: 'java -jar of a jar that does not exist',
    variants: 2,
    prepare: ({ dir }) => ({ cmd: ['java', '-jar', `${dir}/app.jar`] }),
    expect: (_c, run) => failure(lineOf(run.stderr, /^Error: Unable to access jarfile/)),
  },
  {
    id: 'asan-heap-overflow',
    tool: 'gcc',
    program: 'a C program built with -fsanitize=address reads past a heap buffer',
    prepare: ({ rng }) => ({
      files: {
        'buf.c': `#include <stdlib.h>\nint main(void) {\n    int *a = malloc(4 * sizeof(int));\n    int r = a[${rng.int(4, 9)}];\n    free(a);\n    return r;\n}\n`,
      },
      setup: [['gcc', '-fsanitize=address', '-g', 'buf.c', '-o', 'buf']],
      cmd: ['./buf'],
    }),
    expect: (_c, run) => failure(lineOf(run.stderr, /ERROR: AddressSanitizer: heap-buffer-overflow/)),
  },
  {
    id: 'cargo-test-fail',
    tool: 'cargo',
    program: 'cargo test with one failing assert_eq (combined output)',
    variants: 2,
    prepare: ({ rng }) => ({
      files: {
        'Cargo.toml': `[package]\nname = "calc_${rng.int(1, 999)}"\nversion = "0.1.0"\nedition = "2021"\n`,
        'src/lib.rs': `pub fn add(a: i32, b: i32) -> i32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn it_adds() {\n        assert_eq!(super::add(2, 2), ${rng.int(5, 9)});\n    }\n}\n`,
      },
      cmd: ['cargo', 'test', '--offline', '-q'],
      env: { RUST_BACKTRACE: undefined },
      stream: 'combined',
    }),
    expect: () => failure("thread 'tests::it_adds' panicked: assertion `left == right` failed"),
  },
  {
    id: 'bash-exit-code-only',
    tool: 'bash',
    program: 'a script that exits 3 without a word',
    variants: 2,
    // Always 3, as the program says: a silent failure is identified by its exit status.
    prepare: () => ({ cmd: ['bash', '-c', 'true; exit 3'] }),
    expect: () => failure('ExecutionError'),
  },
  {
    id: 'bash-set-e-curl-missing-file',
    tool: 'bash',
    program: 'a set -e script whose cp of a missing artifact stops it (path varies)',
    prepare: ({ rng, dir, vars }) => {
      vars.path = `${dir}/dist/app-${rng.int(1, 999)}.tar.gz`;
      return { files: { 'release.sh': `#!/bin/bash\nset -e\necho "packaging"\ncp ${vars.path} /tmp/\necho "done"\n` }, cmd: [`${dir}/release.sh`] };
    },
    expect: ({ vars }) => failure(`cp: cannot stat '${vars.path}': No such file or directory`),
  },
  {
    id: 'git-nothing-to-commit',
    tool: 'git',
    program: 'git commit with nothing staged (git says so on stdout; combined)',
    prepare: ({ rng }) => ({
      files: { 'a.txt': `${rng.int(1, 9)}\n` },
      setup: [
        ['git', 'init', '-q', '-b', 'main'],
        ['git', 'add', '-A'],
        ['git', 'commit', '-q', '-m', 'init'],
      ],
      cmd: ['git', 'commit', '-m', `update ${rng.int(1, 99)}`],
      stream: 'combined',
    }),
    expect: () => failure('nothing to commit, working tree clean'),
  },
  {
    id: 'git-no-upstream',
    tool: 'git',
    program: 'git push from a repository that has no remote at all',
    prepare: () => ({
      files: { 'a.txt': 'a\n' },
      setup: [
        ['git', 'init', '-q', '-b', 'main'],
        ['git', 'add', '-A'],
        ['git', 'commit', '-q', '-m', 'init'],
        ['git', 'checkout', '-q', '-b', 'feature'],
      ],
      cmd: ['git', 'push'],
    }),
    // (First labelled "no upstream branch": git checks for a remote first. The label was wrong, not vigil.)
    expect: () => failure('fatal: No configured push destination.'),
  },
  {
    id: 'git-apply-fails',
    tool: 'git',
    program: 'git apply of a patch whose context does not match',
    prepare: ({ rng }) => ({
      files: {
        'a.txt': `one\ntwo-${rng.int(1, 99)}\nthree\n`,
        'fix.patch': 'diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n',
      },
      setup: [['git', 'init', '-q', '-b', 'main']],
      cmd: ['git', 'apply', 'fix.patch'],
    }),
    expect: () => failure('error: patch failed: a.txt:1'),
  },
  {
    id: 'npm-ci-no-lockfile',
    tool: 'npm',
    program: 'npm ci in a package without a lockfile',
    prepare: ({ rng }) => ({ files: { 'package.json': JSON.stringify({ name: `app-${rng.int(1, 999)}`, version: '1.0.0' }) }, cmd: ['npm', 'ci', '--offline'] }),
    expect: (_c, run) => failure(lineOf(run.stderr, /^npm error The `npm ci` command can only install/)),
  },
  {
    id: 'make-missing-directory',
    tool: 'make',
    program: 'make -C of a directory that does not exist',
    prepare: ({ dir, vars }) => {
      vars.d = `${dir}/service`;
      return { cmd: ['make', '-C', vars.d] };
    },
    expect: ({ vars }) => failure(`make: *** ${vars.d}: No such file or directory. Stop.`),
  },
  {
    id: 'perl-die-newline',
    tool: 'perl',
    program: 'die with a message that ends in a newline (no "at line" suffix)',
    prepare: ({ rng, dir, vars }) => {
      vars.path = `${dir}/in-${rng.int(1, 99)}.csv`;
      return { cmd: ['perl', '-e', `open(my $f, "<", "${vars.path}") or die "open ${vars.path}: $!\\n"`] };
    },
    expect: ({ vars }) => failure(`open ${vars.path}: No such file or directory`),
  },
  {
    id: 'tsc-ts2307',
    tool: 'tsc',
    program: 'tsc on a file importing a module that is not installed',
    prepare: ({ rng }) => ({
      files: { 'app.ts': `${pad(rng.int(0, 3), '//')}import { parse } from 'yaml-lite-missing';\nexport const v = parse('a: 1');\n` },
      cmd: ['node', TSC, '--noEmit', '--pretty', 'false', 'app.ts'],
      stream: 'combined',
    }),
    expect: (_c, run) => failure(lineOf(run.stdout, /error TS2307: Cannot find module 'yaml-lite-missing'/)),
  },
];
