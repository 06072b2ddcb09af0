/**
 * Round two (issue #13 and #11 item 4): what real tools print that the first rules misjudged.
 *
 * - Errors a program handled and reported on a successful run: a log line embedding an exception,
 *   a retry notice, a memory checker's report (RecoveredError).
 * - Notices that are warnings without the word (tar, git `hint:`).
 * - Grouping precision: a generic error type thrown from top-level or anonymous code, where only
 *   the message tells two failures apart.
 * - Grouping recall: JVM identity hashes, the shell's job-control crash reports, a process killed
 *   by a signal that prints nothing (named by the signal: `SIGSEGV` for exit 139).
 * - Wrappers: a line that wraps a real error is named by the line as printed (as issue #13 names a
 *   handled error) and is the same failure as that error seen unwrapped; the attempt number never
 *   makes another failure.
 */
import { failure, lineOf, recovered, warning, type Scenario } from '../scenario.ts';

const CRASH_C = (n: number) => `#include <stdio.h>\nint main(void) {\n    int *p = 0;\n    printf("%d\\n", p[${n}]);\n    return 0;\n}\n`;

/** A "tool" that fails the way a tool run by an agent does: one `Type: message` line on stderr, exit 1. */
const KEYERROR_TOOL = (key: string, pad: number) =>
  `import json, sys\n${'# padding\n'.repeat(pad)}def run():\n    data = json.loads('{"items": []}')\n    return data[${JSON.stringify(key)}]\n\ntry:\n    run()\nexcept Exception as e:\n    print(f"{type(e).__name__}: {e}", file=sys.stderr)\n    sys.exit(1)\n`;

export const round2: Scenario[] = [
  // -- handled errors on a successful run
  {
    id: 'node-settings-fallback',
    tool: 'node',
    program: 'settings.json is not valid JSON; the program logs the SyntaxError, uses defaults and exits 0',
    prepare: ({ rng }) => ({
      files: {
        'settings.json': `{"port": ${rng.int(1, 99999)},}\n`,
        'app.js': `const fs = require('fs');\nlet settings = {};\ntry {\n  settings = JSON.parse(fs.readFileSync('settings.json', 'utf8'));\n} catch (err) {\n  console.error('failed to parse settings, using defaults:', String(err));\n}\nconsole.log('listening on', settings.port ?? 8080);\n`,
      },
      cmd: ['node', 'app.js'],
    }),
    expect: (_c, run) => recovered(lineOf(run.stderr, /^failed to parse settings, using defaults: SyntaxError: /)),
  },
  {
    id: 'node-uncaught-ignored',
    tool: 'node',
    program: 'an uncaughtException handler logs a TypeError from a timer and keeps the process alive until it ends normally',
    prepare: ({ rng, vars }) => {
      vars.prop = rng.pick(['id', 'name', 'status']);
      return {
        files: {
          'worker.js': `process.on('uncaughtException', (err) => {\n  console.error('uncaught exception (ignored by handler):', String(err));\n});\nfunction poll(job) {\n  return job.${vars.prop};\n}\nsetTimeout(() => poll(null), ${rng.int(1, 20)});\nsetTimeout(() => console.log('done'), 50);\n`,
        },
        cmd: ['node', 'worker.js'],
      };
    },
    expect: ({ vars }) => recovered(`uncaught exception (ignored by handler): TypeError: Cannot read properties of null (reading '${vars.prop}')`),
  },
  {
    id: 'node-retry-econnrefused',
    tool: 'node',
    program: 'a client retries a refused connection, logging `[retry] attempt N failed: …`, then carries on offline (exit 0)',
    prepare: ({ rng, vars }) => {
      vars.port = String(rng.port());
      return {
        files: {
          'client.js': `const net = require('net');\nlet attempt = 0;\nfunction connect() {\n  attempt++;\n  const s = net.connect(${vars.port}, '127.0.0.1');\n  s.on('connect', () => s.end());\n  s.on('error', (err) => {\n    console.error(\`[retry] attempt \${attempt} failed: \${err.message}\`);\n    if (attempt < ${rng.int(2, 3)}) setTimeout(connect, 5);\n    else console.log('continuing offline');\n  });\n}\nconnect();\n`,
        },
        cmd: ['node', 'client.js'],
      };
    },
    // A wrapper: named by its (first) line as printed, identified by the error it wraps.
    expect: ({ vars }) => recovered(`[retry] attempt 1 failed: connect ECONNREFUSED 127.0.0.1:${vars.port}`),
  },
  {
    id: 'py-retry-logged',
    tool: 'python3',
    program: 'a client retries a refused connection, printing `attempt N/3 failed: ConnectionRefusedError: …`, then gives up quietly (exit 0)',
    prepare: ({ rng, vars }) => {
      vars.port = String(rng.port());
      return {
        files: {
          'client.py': `import socket, sys\n\ndef connect(port):\n    with socket.create_connection(("127.0.0.1", port), timeout=1):\n        pass\n\nfor attempt in range(1, ${rng.int(2, 4)}):\n    try:\n        connect(${vars.port})\n        break\n    except OSError as e:\n        print(f"attempt {attempt}/3 failed: {type(e).__name__}: {e}", file=sys.stderr)\nprint("using cached data")\n`,
        },
        cmd: ['python3', 'client.py'],
      };
    },
    expect: () => recovered('attempt 1/3 failed: ConnectionRefusedError: [Errno 111] Connection refused'),
  },
  {
    id: 'py-cache-rebuild-errno',
    tool: 'python3',
    program: 'a missing cache file is reported as `could not load cache, rebuilding: [Errno 2] …` and rebuilt (exit 0)',
    prepare: ({ rng, vars }) => {
      vars.file = `cache-${rng.int(1, 999)}.json`;
      return {
        files: {
          'build.py': `import json, sys\ntry:\n    with open(${JSON.stringify(vars.file)}) as f:\n        cache = json.load(f)\nexcept OSError as e:\n    print(f"could not load cache, rebuilding: {e}", file=sys.stderr)\n    cache = {}\nprint(len(cache))\n`,
        },
        cmd: ['python3', 'build.py'],
      };
    },
    expect: ({ vars }) => recovered(`could not load cache, rebuilding: [Errno 2] No such file or directory: '${vars.file}'`),
  },
  {
    id: 'valgrind-invalid-read',
    tool: 'valgrind',
    program: 'valgrind -q runs a C program that reads past a heap block; the program still exits 0',
    prepare: ({ rng }) => ({
      files: {
        'r.c': `#include <stdlib.h>\n#include <stdio.h>\nint main(void) {\n    int *a = malloc(4 * sizeof(int));\n    int r = a[${rng.int(4, 9)}];\n    free(a);\n    printf("%d\\n", r & 0);\n    return 0;\n}\n`,
      },
      setup: [['gcc', '-g', '-O0', 'r.c', '-o', 'r']],
      cmd: ['valgrind', '-q', './r'],
    }),
    expect: (_c, run) => recovered(lineOf(run.stderr, /^==\d+== Invalid read of size 4$/)),
  },
  {
    id: 'valgrind-uninitialised',
    tool: 'valgrind',
    program: 'valgrind (not quiet) runs a C program that branches on an uninitialised value; exit 0',
    prepare: ({ rng }) => ({
      files: { 'u.c': `#include <stdio.h>\nint main(void) {\n    int x;\n    if (x > ${rng.int(1, 99)}) printf("big\\n");\n    return 0;\n}\n` },
      setup: [['gcc', '-g', '-O0', 'u.c', '-o', 'u']],
      cmd: ['valgrind', './u'],
    }),
    expect: (_c, run) => recovered(lineOf(run.stderr, /^==\d+== Conditional jump or move depends on uninitialised value\(s\)$/)),
  },
  // -- notices that are warnings without the word
  {
    id: 'tar-leading-slash',
    tool: 'tar',
    program: 'tar archives a file by its absolute path (tar strips the leading / and says so)',
    prepare: ({ rng, dir }) => ({ files: { [`data-${rng.int(1, 99)}.txt`]: 'x\n' }, cmd: ['bash', '-c', `tar czf out.tgz ${dir}/data-*.txt`] }),
    expect: () => warning(),
  },
  {
    id: 'git-init-hint',
    tool: 'git',
    program: 'git init without init.defaultBranch configured (git prints its hint: block)',
    variants: 2,
    prepare: () => ({ cmd: ['git', 'init', 'repo'], env: { GIT_CONFIG_GLOBAL: '/dev/null' } }),
    expect: () => warning(),
  },
  {
    id: 'git-push-rejected-hint',
    tool: 'git',
    program: 'git push rejected as non-fast-forward: the error and git hint: lines (the error names it)',
    variants: 2,
    prepare: ({ rng }) => ({
      setup: [
        ['git', 'init', '-q', '--bare', '-b', 'main', 'origin.git'],
        ['git', 'clone', '-q', 'origin.git', 'a'],
        ['git', '-C', 'a', 'commit', '-q', '--allow-empty', '-m', 'one'],
        ['git', '-C', 'a', 'push', '-q', 'origin', 'HEAD:main'],
        ['git', 'clone', '-q', 'origin.git', 'b'],
        ['git', '-C', 'a', 'commit', '-q', '--allow-empty', '-m', `two ${rng.int(1, 99)}`],
        ['git', '-C', 'a', 'push', '-q', 'origin', 'HEAD:main'],
        ['git', '-C', 'b', 'commit', '-q', '--allow-empty', '-m', 'other'],
      ],
      cmd: ['git', '-C', 'b', 'push', 'origin', 'HEAD:main'],
      env: { GIT_CONFIG_GLOBAL: '/dev/null' },
    }),
    expect: (_c, run) => failure(lineOf(run.stderr, /^error: failed to push some refs to /)),
  },
  // -- grouping precision: generic types thrown from top-level or anonymous code
  {
    id: 'node-top-missing-module',
    tool: 'node',
    program: 'main.js requires a local module file that is missing, at top level (a missing source file, not a missing package)',
    prepare: ({ rng }) => ({
      files: { 'main.js': `${'// pad\n'.repeat(rng.int(0, 3))}const cfg = require('./config-local');\nconsole.log(cfg);\n` },
      cmd: ['node', 'main.js'],
    }),
    expect: () => failure("Error: Cannot find module './config-local'"),
  },
  {
    id: 'node-top-enoent',
    tool: 'node',
    program: 'main.js reads a file that does not exist, at top level (file name varies)',
    prepare: ({ rng, vars }) => {
      vars.file = `input-${rng.int(1, 999)}.csv`;
      return {
        files: {
          'main.js': `${'// pad\n'.repeat(rng.int(0, 3))}const fs = require('fs');\nconst rows = fs.readFileSync('${vars.file}', 'utf8');\nconsole.log(rows);\n`,
        },
        cmd: ['node', 'main.js'],
      };
    },
    expect: ({ vars }) => failure(`Error: ENOENT: no such file or directory, open '${vars.file}'`),
  },
  {
    id: 'node-top-json-token',
    tool: 'node',
    program: 'main.js parses data.json at top level; the file has a trailing comma (position varies)',
    prepare: ({ rng }) => ({
      files: {
        'data.json': `{"n": ${rng.int(1, 99999)},}`,
        'main.js': `const fs = require('fs');\nconst data = JSON.parse(fs.readFileSync('data.json', 'utf8'));\nconsole.log(data.n);\n`,
      },
      cmd: ['node', 'main.js'],
    }),
    expect: (_c, run) => failure(lineOf(run.stderr, /^SyntaxError: Expected double-quoted property name in JSON at position \d+/)),
  },
  {
    id: 'node-top-json-end',
    tool: 'node',
    program: 'main.js parses data.json at top level; the file is cut short',
    prepare: ({ rng }) => ({
      files: {
        'data.json': `{"n": ${rng.int(1, 99999)}, "items": [`,
        'main.js': `const fs = require('fs');\nconst data = JSON.parse(fs.readFileSync('data.json', 'utf8'));\nconsole.log(data.n);\n`,
      },
      cmd: ['node', 'main.js'],
    }),
    expect: (_c, run) => failure(lineOf(run.stderr, /^SyntaxError: (?:Unexpected end of JSON input|Expected .* in JSON at position \d+)/)),
  },
  {
    id: 'node-anon-missing-field',
    tool: 'node',
    program: 'an anonymous forEach callback throws Error("record N has no id") (N varies)',
    prepare: ({ rng }) => ({
      files: {
        'main.js': `const records = [{ id: 1 }, {}];\nrecords.forEach((r, i) => {\n  if (!r.id) throw new Error('record ' + (i + ${rng.int(0, 50)}) + ' has no id');\n});\n`,
      },
      cmd: ['node', 'main.js'],
    }),
    expect: (_c, run) => failure(lineOf(run.stderr, /^Error: record \d+ has no id$/)),
  },
  {
    id: 'node-anon-quota',
    tool: 'node',
    program: 'an anonymous forEach callback in the same file throws Error("quota exceeded for N")',
    prepare: ({ rng }) => ({
      files: {
        'main.js': `const records = [{ id: 1 }, {}];\nrecords.forEach((r, i) => {\n  if (!r.id) throw new Error('quota exceeded for ' + (i + ${rng.int(0, 50)}));\n});\n`,
      },
      cmd: ['node', 'main.js'],
    }),
    expect: (_c, run) => failure(lineOf(run.stderr, /^Error: quota exceeded for \d+$/)),
  },
  // -- grouping recall
  {
    id: 'java-identity-hash',
    tool: 'java',
    program: 'main throws an IllegalStateException naming an object by its identity hash (Main$Conn@1b6d3586), which changes run to run',
    variants: 6,
    prepare: ({ rng }) => ({
      files: {
        'Main.java': `public class Main {\n  static class Conn {}\n  public static void main(String[] args) {\n    for (int i = 0; i < ${rng.int(0, 5000)}; i++) new Object().hashCode();\n    Conn c = new Conn();\n    throw new IllegalStateException("connection " + c + " already closed");\n  }\n}\n`,
      },
      setup: [['javac', '-g', 'Main.java']],
      cmd: ['java', '-cp', '.', 'Main'],
    }),
    expect: (_c, run) =>
      failure(lineOf(run.stderr, /IllegalStateException: connection Main\$Conn@[0-9a-f]+ already closed/).replace(/^Exception in thread "main" /, '')),
  },
  {
    id: 'c-segfault-pipeline',
    tool: 'bash',
    program: 'the crashing C program at the end of a pipeline: bash reports it on a job-control line starting `| `',
    failureId: 'c-segfault-bash',
    prepare: ({ rng }) => ({
      files: { 'crash.c': CRASH_C(rng.int(0, 9)) },
      setup: [['gcc', 'crash.c', '-o', 'crash']],
      cmd: ['bash', '-c', rng.pick(['cat /dev/null | ./crash', 'set -o pipefail; echo go | ./crash | cat'])],
    }),
    expect: (_c, run) => failure(lineOf(run.stderr, /Segmentation fault/)),
  },
  {
    id: 'c-segfault-silent',
    tool: 'gcc',
    program: 'the crashing C program run directly: it prints nothing and dies of SIGSEGV (exit 139)',
    failureId: 'c-segfault-bash',
    prepare: ({ rng }) => ({ files: { 'crash.c': CRASH_C(rng.int(0, 9)) }, setup: [['gcc', 'crash.c', '-o', 'crash']], cmd: ['./crash'] }),
    expect: () => failure('SIGSEGV'),
  },
  {
    id: 'sh-killed-silent',
    tool: 'bash',
    program: 'a shell that is killed with SIGKILL prints nothing (exit 137): the same failure as bash reporting `Killed`',
    failureId: 'bash-killed',
    variants: 2,
    prepare: ({ rng }) => ({ cmd: ['sh', '-c', `sleep 0.0${rng.int(1, 5)}; kill -9 $$`] }),
    expect: () => failure('SIGKILL'),
  },
  {
    id: 'py-abort-silent',
    tool: 'python3',
    program: 'python calls os.abort() and prints nothing (exit 134)',
    variants: 2,
    prepare: ({ rng }) => ({ files: { 'a.py': `import os\nx = ${rng.int(1, 99)}\nos.abort()\n` }, cmd: ['python3', 'a.py'] }),
    expect: () => failure('SIGABRT'),
  },
  // -- wrappers (issue #11 item 4)
  {
    id: 'tool-keyerror-results',
    tool: 'python3',
    program: "a tool script fails with KeyError: 'results' and reports it as one line (exit 1)",
    variants: 2,
    prepare: ({ rng }) => ({ files: { 'run_python.py': KEYERROR_TOOL('results', rng.int(0, 3)) }, cmd: ['python3', 'run_python.py'] }),
    expect: () => failure("KeyError: 'results'"),
  },
  {
    id: 'agent-tool-wrapper',
    tool: 'node',
    program: "an agent runs the tool up to 3 times, logging `tool run_python failed (attempt N): Error: KeyError: 'results'`, then gives up (exit 1)",
    failureId: 'tool-keyerror-results',
    prepare: ({ rng }) => ({
      files: {
        'run_python.py': KEYERROR_TOOL('results', rng.int(0, 3)),
        'agent.js': `const { spawnSync } = require('child_process');\nfor (let attempt = 1; attempt <= ${rng.int(1, 3)}; attempt++) {\n  const r = spawnSync('python3', ['run_python.py'], { encoding: 'utf8' });\n  if (r.status === 0) process.exit(0);\n  console.error(\`tool run_python failed (attempt \${attempt}): \${new Error(r.stderr.trim())}\`);\n}\nprocess.exit(1);\n`,
      },
      cmd: ['node', 'agent.js'],
    }),
    expect: () => failure("tool run_python failed (attempt 1): Error: KeyError: 'results'"),
  },
  {
    id: 'agent-tool-retry-recovered',
    tool: 'node',
    program: 'an agent retries the failing tool once (`[retry] attempt 1 failed: KeyError: …`) and then answers without it (exit 0)',
    failureId: 'tool-keyerror-results',
    prepare: ({ rng }) => ({
      files: {
        'run_python.py': KEYERROR_TOOL('results', rng.int(0, 3)),
        'agent.js': `const { spawnSync } = require('child_process');\nfor (let attempt = 1; attempt <= 2; attempt++) {\n  const r = spawnSync('python3', ['run_python.py'], { encoding: 'utf8' });\n  if (r.status === 0) break;\n  console.error(\`[retry] attempt \${attempt} failed: \${r.stderr.trim()}\`);\n}\nconsole.log('answered without the tool');\n`,
      },
      cmd: ['node', 'agent.js'],
    }),
    expect: () => recovered("[retry] attempt 1 failed: KeyError: 'results'"),
  },
  {
    id: 'node-error-error',
    tool: 'node',
    program: 'a loader rethrows a caught Error as new Error(String(err)): node prints `Error: Error: …`',
    prepare: ({ rng, vars }) => {
      vars.name = `plugin-${rng.int(1, 999)}`;
      return {
        files: {
          'loader.js': `function loadPlugin(name) {\n  try {\n    throw new Error('plugin ' + name + ' is disabled');\n  } catch (err) {\n    throw new Error(String(err));\n  }\n}\nloadPlugin('${vars.name}');\n`,
        },
        cmd: ['node', 'loader.js'],
      };
    },
    expect: ({ vars }) => failure(`Error: Error: plugin ${vars.name} is disabled`),
  },
];
