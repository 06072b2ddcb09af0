/** Python 3 failures, warnings and noise. */
import { failure, lineOf, noise, pad, recovered, warning, type Scenario } from '../scenario.ts';

const py = (file: string, ...args: string[]) => ['python3', file, ...args];

export const python: Scenario[] = [
  {
    id: 'py-zero-division',
    tool: 'python3',
    program: 'a nested function divides by a count that is zero',
    variants: 4,
    prepare: ({ rng }) => ({
      files: {
        'stats.py': `${pad(rng.int(0, 6))}def ratio(total, count):\n    return total / count\n\ndef summarize(rows):\n    return ratio(sum(rows), len(rows))\n\nprint(summarize([]))\n`,
      },
      cmd: py('stats.py'),
    }),
    expect: () => failure('ZeroDivisionError: division by zero'),
  },
  {
    id: 'py-keyerror-config',
    tool: 'python3',
    program: 'load_config() reads a key that the config dict lacks (key varies)',
    variants: 4,
    prepare: ({ rng, vars }) => {
      vars.key = rng.ident();
      return {
        files: {
          'app.py': `${pad(rng.int(0, 5))}import json\nCONFIG = {"host": "127.0.0.1", "port": ${rng.port()}}\n\ndef load_config(name):\n    return CONFIG[name]\n\ndef main():\n    value = load_config(${JSON.stringify(vars.key)})\n    print(value)\n\nmain()\n`,
        },
        cmd: py('app.py'),
      };
    },
    expect: ({ vars }) => failure(`KeyError: '${vars.key}'`),
  },
  {
    id: 'py-chained-runtime',
    tool: 'python3',
    program: 'a KeyError while reading settings is re-raised as RuntimeError during handling',
    prepare: ({ rng, vars }) => {
      vars.key = rng.ident();
      return {
        files: {
          'settings.py': `${pad(rng.int(0, 4))}SETTINGS = {}\n\ndef read_setting(key):\n    try:\n        return SETTINGS[key]\n    except KeyError:\n        raise RuntimeError(f"missing setting '{key}'")\n\nread_setting(${JSON.stringify(vars.key)})\n`,
        },
        cmd: py('settings.py'),
      };
    },
    expect: ({ vars }) => failure(`RuntimeError: missing setting '${vars.key}'`),
  },
  {
    id: 'py-raise-from-custom',
    tool: 'python3',
    program: 'parse_port() wraps a ValueError in a custom ConfigError (raise ... from)',
    prepare: ({ rng, vars }) => {
      vars.value = rng.pick(['80a', 'http', 'x' + rng.int(1, 99), 'port-' + rng.int(1, 9)]);
      return {
        files: {
          'ports.py': `${pad(rng.int(0, 4))}class ConfigError(Exception):\n    pass\n\ndef parse_port(value):\n    try:\n        return int(value)\n    except ValueError as e:\n        raise ConfigError(f"bad port {value!r}") from e\n\nparse_port(${JSON.stringify(vars.value)})\n`,
        },
        cmd: py('ports.py'),
      };
    },
    expect: ({ vars }) => failure(`ConfigError: bad port '${vars.value}'`),
  },
  {
    id: 'py-syntax-unclosed',
    tool: 'python3',
    program: 'a script with an unclosed parenthesis',
    prepare: ({ rng }) => ({
      files: { 'broken.py': `${pad(rng.int(0, 6))}def total(items:\n    return sum(items)\n` },
      cmd: py('broken.py'),
    }),
    expect: () => failure("SyntaxError: '(' was never closed"),
  },
  {
    id: 'py-indentation',
    tool: 'python3',
    program: 'a script with an unexpected indent',
    prepare: ({ rng }) => ({
      files: { 'indent.py': `${pad(rng.int(0, 6))}x = ${rng.int(1, 99)}\n    y = x + 1\n` },
      cmd: py('indent.py'),
    }),
    expect: () => failure('IndentationError: unexpected indent'),
  },
  {
    id: 'py-module-not-found',
    tool: 'python3',
    program: 'imports a module that is not installed (name varies)',
    variants: 4,
    prepare: ({ rng, vars }) => {
      vars.mod = `${rng.pick(['fastjson', 'yamlx', 'pgdriver', 'vendorlib'])}_${rng.int(1, 999)}`;
      return { files: { 'main.py': `${pad(rng.int(0, 3))}import os\nimport ${vars.mod}\n` }, cmd: py('main.py') };
    },
    expect: ({ vars }) => failure(`ModuleNotFoundError: No module named '${vars.mod}'`),
  },
  {
    id: 'py-file-not-found',
    tool: 'python3',
    program: 'opens a data file that does not exist in its temp dir',
    prepare: ({ rng, dir, vars }) => {
      vars.path = `${dir}/data-${rng.int(100, 99999)}.csv`;
      return {
        files: { 'load.py': `def load(path):\n    with open(path) as f:\n        return f.read()\n\nload(${JSON.stringify(vars.path)})\n` },
        cmd: py('load.py'),
      };
    },
    expect: ({ vars }) => failure(`FileNotFoundError: [Errno 2] No such file or directory: '${vars.path}'`),
  },
  {
    id: 'py-attribute-none',
    tool: 'python3',
    program: 'calls a method on the None that find_user() returned (attribute varies)',
    prepare: ({ rng, vars }) => {
      vars.attr = rng.pick(['email', 'name', 'profile', 'tenant_id']);
      return {
        files: {
          'users.py': `${pad(rng.int(0, 4))}USERS = {}\n\ndef find_user(uid):\n    return USERS.get(uid)\n\ndef email_of(uid):\n    return find_user(uid).${vars.attr}\n\nemail_of(${rng.int(1, 99999)})\n`,
        },
        cmd: py('users.py'),
      };
    },
    expect: ({ vars }) => failure(`AttributeError: 'NoneType' object has no attribute '${vars.attr}'`),
  },
  {
    id: 'py-type-concat',
    tool: 'python3',
    program: 'concatenates a str and an int in build_label()',
    prepare: ({ rng }) => ({
      files: { 'label.py': `${pad(rng.int(0, 4))}def build_label(prefix, n):\n    return prefix + n\n\nprint(build_label("item-", ${rng.int(1, 9999)}))\n` },
      cmd: py('label.py'),
    }),
    expect: () => failure('TypeError: can only concatenate str (not "int") to str'),
  },
  {
    id: 'py-json-decode',
    tool: 'python3',
    program: 'json.loads() on a payload that is not JSON (payload varies)',
    prepare: ({ rng, vars }) => {
      const junk = rng.pick(['<html>', 'OK', 'nil', '{bad}']);
      const lead = ' '.repeat(rng.int(0, 3));
      vars.payload = lead + junk;
      return {
        files: { 'parse.py': `import json\n\ndef parse_reply(body):\n    return json.loads(body)\n\nparse_reply(${JSON.stringify(vars.payload)})\n` },
        cmd: py('parse.py'),
      };
    },
    expect: (_c, run) => failure(lineOf(run.stderr, /^json\.decoder\.JSONDecodeError: /)),
  },
  {
    id: 'py-recursion',
    tool: 'python3',
    program: 'walk() recurses without a base case',
    prepare: ({ rng }) => ({
      files: { 'tree.py': `${pad(rng.int(0, 4))}def walk(node):\n    return walk(node + ${rng.int(1, 9)})\n\nwalk(0)\n` },
      cmd: py('tree.py'),
    }),
    expect: () => failure('RecursionError: maximum recursion depth exceeded'),
  },
  {
    id: 'py-unittest-assert',
    tool: 'python3',
    program: 'python -m unittest with one failing equality assertion (numbers vary)',
    prepare: ({ rng, vars }) => {
      const a = rng.int(2, 50);
      const b = rng.int(51, 99);
      vars.a = String(a * 2);
      vars.b = String(b);
      return {
        files: {
          'test_math.py': `import unittest\n\ndef double(x):\n    return x * 2\n\nclass DoubleTest(unittest.TestCase):\n    def test_ok(self):\n        self.assertEqual(double(1), 2)\n\n    def test_double(self):\n        self.assertEqual(double(${a}), ${b})\n\nif __name__ == "__main__":\n    unittest.main()\n`,
        },
        cmd: ['python3', '-m', 'unittest', 'test_math'],
      };
    },
    expect: ({ vars }) => failure(`AssertionError: ${vars.a} != ${vars.b}`),
  },
  {
    id: 'py-exception-group',
    tool: 'python3',
    program: 'raises an ExceptionGroup of two task failures (Python 3.11)',
    prepare: ({ rng, vars }) => {
      vars.n = String(rng.int(2, 40));
      return {
        files: {
          'tasks.py': `def run_all(n):\n    errors = [ValueError(f"task {n} bad input"), TypeError("task callback is not callable")]\n    raise ExceptionGroup(f"{n} tasks failed", errors)\n\nrun_all(${vars.n})\n`,
        },
        cmd: py('tasks.py'),
      };
    },
    expect: ({ vars }) => failure(`ExceptionGroup: ${vars.n} tasks failed (2 sub-exceptions)`),
  },
  {
    id: 'py-called-process',
    tool: 'python3',
    program: 'subprocess.run(check=True) of ls on a missing path; ls prints its own error first',
    prepare: ({ rng, dir, vars }) => {
      vars.path = `${dir}/build-${rng.int(1, 9999)}`;
      return {
        files: {
          'build.py': `import subprocess\n\ndef list_outputs(path):\n    subprocess.run(["ls", path], check=True)\n\nlist_outputs(${JSON.stringify(vars.path)})\n`,
        },
        cmd: py('build.py'),
      };
    },
    expect: ({ vars }) => failure(`subprocess.CalledProcessError: Command '['ls', '${vars.path}']' returned non-zero exit status 2.`),
  },
  {
    id: 'py-argparse-invalid-int',
    tool: 'python3',
    program: 'argparse rejects a non-integer --count (value varies)',
    prepare: ({ rng, vars }) => {
      vars.value = rng.pick(['ten', 'x' + rng.int(1, 9), 'many', '3.5']);
      return {
        files: { 'cli.py': `import argparse\np = argparse.ArgumentParser(prog="ingest")\np.add_argument("--count", type=int, required=True)\np.parse_args()\n` },
        cmd: py('cli.py', '--count', vars.value),
      };
    },
    expect: ({ vars }) => failure(`ingest: error: argument --count: invalid int value: '${vars.value}'`),
  },
  {
    id: 'py-sys-exit-message',
    tool: 'python3',
    program: 'sys.exit() with a fatal message naming a missing database file',
    prepare: ({ rng, dir, vars }) => {
      vars.path = `${dir}/state-${rng.int(1, 999)}.db`;
      return {
        files: {
          'db.py': `import os, sys\npath = ${JSON.stringify(vars.path)}\nif not os.path.exists(path):\n    sys.exit(f"fatal: cannot open database {path}")\n`,
        },
        cmd: py('db.py'),
      };
    },
    expect: ({ vars }) => failure(`fatal: cannot open database ${vars.path}`),
  },
  {
    id: 'py-c-nameerror',
    tool: 'python3',
    program: 'python3 -c one-liner using an undefined name (name varies)',
    prepare: ({ rng, vars }) => {
      vars.name = rng.pick(['reslt', 'totl', 'cnt', 'itemz']) + rng.int(1, 9);
      return { cmd: ['python3', '-c', `x = ${rng.int(1, 99)}\nprint(${vars.name} + x)`] };
    },
    expect: ({ vars }) => failure(`NameError: name '${vars.name}' is not defined`),
  },
  {
    id: 'py-conn-refused',
    tool: 'python3',
    program: 'socket.create_connection() to a local port where nothing listens',
    prepare: ({ rng }) => ({
      files: { 'client.py': `import socket\n\ndef connect(port):\n    return socket.create_connection(("127.0.0.1", port), timeout=2)\n\nconnect(${rng.port()})\n` },
      cmd: py('client.py'),
    }),
    expect: () => failure('ConnectionRefusedError: [Errno 111] Connection refused'),
  },
  {
    id: 'py-can-not-open-file',
    tool: 'python3',
    program: 'python3 asked to run a script path that does not exist',
    prepare: ({ rng, dir, vars }) => {
      vars.path = `${dir}/job_${rng.int(1, 9999)}.py`;
      return { cmd: ['python3', vars.path] };
    },
    expect: (_c, run) => failure(lineOf(run.stderr, /can't open file/)),
  },
  {
    id: 'py-logged-exception',
    tool: 'python3',
    program: 'a worker logs a caught ValueError with logging.exception (timestamps) and exits 0',
    prepare: ({ rng, vars }) => {
      vars.value = rng.pick(['abc', 'n/a', 'x' + rng.int(1, 99), '']);
      return {
        files: {
          'worker.py': `import logging\nlogging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)\nlog = logging.getLogger("worker")\n\ndef parse_size(raw):\n    return int(raw)\n\nlog.info("processing batch ${rng.int(1, 9999)}")\ntry:\n    parse_size(${JSON.stringify(vars.value)})\nexcept ValueError:\n    log.exception("could not parse size; using default")\nlog.info("done")\n`,
        },
        cmd: py('worker.py'),
      };
    },
    expect: ({ vars }) => recovered(`ValueError: invalid literal for int() with base 10: '${vars.value}'`),
  },
  {
    id: 'py-logged-error',
    tool: 'python3',
    program: 'a job runner logs an ERROR line (timestamped) about a failed job and exits 0',
    prepare: ({ rng, vars }) => {
      vars.uuid = rng.uuid();
      vars.n = String(rng.int(2, 9));
      return {
        files: {
          'runner.py': `import logging\nlogging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)\nlog = logging.getLogger("runner")\nlog.info("starting")\nlog.error("job ${vars.uuid} failed after ${vars.n} attempts")\nlog.info("continuing with next job")\n`,
        },
        cmd: py('runner.py'),
      };
    },
    expect: ({ vars }) => recovered(`ERROR runner: job ${vars.uuid} failed after ${vars.n} attempts`),
  },
  {
    id: 'py-thread-exception',
    tool: 'python3',
    program: 'a worker thread dies of an IndexError; the main thread carries on and exits 0',
    prepare: ({ rng, vars }) => {
      vars.n = String(rng.int(3, 40));
      return {
        files: {
          'pool.py': `import threading\n\ndef worker(items):\n    return items[${vars.n}]\n\nt = threading.Thread(target=worker, args=([1, 2],))\nt.start()\nt.join()\nprint("main done")\n`,
        },
        cmd: py('pool.py'),
      };
    },
    expect: () => recovered('IndexError: list index out of range'),
  },
  // -- warnings (exit 0)
  {
    id: 'py-userwarning',
    tool: 'python3',
    program: 'warnings.warn() with a UserWarning about an experimental option',
    prepare: ({ rng }) => ({
      files: { 'opt.py': `import warnings\n${pad(rng.int(0, 4))}warnings.warn("option 'fast_mode=${rng.int(1, 9)}' is experimental")\nprint("ok")\n` },
      cmd: py('opt.py'),
    }),
    expect: () => warning(),
  },
  {
    id: 'py-deprecation-imp',
    tool: 'python3',
    program: 'imports the deprecated imp module with -W default',
    prepare: ({ rng }) => ({
      files: { 'legacy.py': `${pad(rng.int(0, 3))}import imp\nprint(imp.get_suffixes()[0])\n` },
      cmd: ['python3', '-W', 'default', 'legacy.py'],
    }),
    expect: () => warning(),
  },
  {
    id: 'py-coroutine-never-awaited',
    tool: 'python3',
    program: 'calls an async function without awaiting it',
    prepare: ({ rng }) => ({
      files: { 'aio.py': `${pad(rng.int(0, 3))}async def fetch(n):\n    return n\n\nfetch(${rng.int(1, 99)})\nprint("scheduled")\n` },
      cmd: py('aio.py'),
    }),
    expect: () => warning(),
  },
  {
    id: 'py-resourcewarning',
    tool: 'python3',
    program: 'leaves a file unclosed, run with -W default (ResourceWarning)',
    prepare: ({ rng, dir }) => ({
      files: { 'leak.py': `def read(path):\n    return open(path).read()\n\nread(${JSON.stringify(`${dir}/leak.py`)})\nprint(${rng.int(1, 9)})\n` },
      cmd: ['python3', '-W', 'default', 'leak.py'],
    }),
    expect: () => warning(),
  },
  {
    id: 'py-logging-warning',
    tool: 'python3',
    program: 'logs a WARNING (timestamped) about a slow request that it retried successfully',
    prepare: ({ rng }) => ({
      files: {
        'http.py': `import logging\nlogging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)\nlog = logging.getLogger("http")\nlog.warning("request to 127.0.0.1:${rng.port()} took ${rng.int(900, 5000)}ms; retrying once after TimeoutError")\nlog.info("ok")\n`,
      },
      cmd: py('http.py'),
    }),
    expect: () => warning(),
  },
  // -- noise (exit 0)
  {
    id: 'py-info-logging',
    tool: 'python3',
    program: 'logs INFO lines to stderr (logging default handler)',
    prepare: ({ rng }) => ({
      files: {
        'svc.py': `import logging\nlogging.basicConfig(level=logging.INFO)\nlog = logging.getLogger("svc")\nlog.info("listening on 127.0.0.1:${rng.port()}")\nlog.info("loaded ${rng.int(1, 500)} routes in ${rng.int(1, 90)}ms")\n`,
      },
      cmd: py('svc.py'),
    }),
    expect: () => noise(),
  },
  {
    id: 'py-benign-error-words',
    tool: 'python3',
    program: 'prints a lint summary with benign uses of the word error to stderr',
    prepare: ({ rng }) => ({
      files: {
        'lint.py': `import sys\nn = ${rng.int(2, 90)}\nprint(f"checked {n} files: 0 errors", file=sys.stderr)\nprint("error_count=0 skipped=${rng.int(0, 5)}", file=sys.stderr)\nprint("ErrorHandler registered for /api/v${rng.int(1, 3)}", file=sys.stderr)\n`,
      },
      cmd: py('lint.py'),
    }),
    expect: () => noise(),
  },
  {
    id: 'py-benign-handler-names',
    tool: 'python3',
    program: 'a retry helper announces which exception types it retries',
    prepare: ({ rng }) => ({
      files: {
        'retry.py': `import sys\nprint("retry policy: attempts=${rng.int(2, 6)} backoff=${rng.int(10, 500)}ms", file=sys.stderr)\nprint("retrying on TimeoutError", file=sys.stderr)\nprint("registered handler for ConnectionResetError", file=sys.stderr)\n`,
      },
      cmd: py('retry.py'),
    }),
    expect: () => noise(),
  },
  {
    id: 'py-unittest-ok',
    tool: 'python3',
    program: 'python -m unittest where every test passes (the runner reports on stderr)',
    prepare: ({ rng }) => ({
      files: {
        'test_ok.py': `import unittest\n\nclass T(unittest.TestCase):\n${Array.from({ length: rng.int(1, 4) }, (_, i) => `    def test_${i}(self):\n        self.assertTrue(True)\n`).join('\n')}`,
      },
      cmd: ['python3', '-m', 'unittest', 'test_ok'],
    }),
    expect: () => noise(),
  },
  {
    id: 'py-stdout-only',
    tool: 'python3',
    program: 'prints its result to stdout only',
    variants: 2,
    prepare: ({ rng }) => ({ cmd: ['python3', '-c', `print(${rng.int(1, 999)} * 2)`] }),
    expect: () => ({ classification: 'NormalOutput', signature: null }),
  },
];
