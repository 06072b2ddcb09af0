#!/usr/bin/env node
// Held-out corpus generator: runs real tools on this machine and records
// their output as labelled cases (one JSON object per line in cases.jsonl).
//
//   node generate.mjs [--seed N] [--only PREFIX] [--out FILE]
//
// Labels are fixed per case definition, decided from what each program was
// written to do.  The signature line is located in the real output by a
// per-definition matcher (the volatile parts differ per run) and then
// normalised (whitespace collapsed, trimmed, first 96 chars).
//
// Each definition: name (case id prefix), tool, cls (expected classification),
// fid (failure_id when several definitions are the same failure; else name),
// variants, program (the intent, written to the case), why (what actually
// goes wrong -- internal documentation, not written to the case), gen(ctx)
// (writes the program into a fresh temp dir and returns the command), expect
// (sanity regex the real output must match), check (extra exit-code checks),
// sig (picks the signature line out of the real output).  Definitions marked
// `extra` were written and verified but are left out of the default corpus to
// keep its size near the brief's target; `--all` includes them.
import { spawnSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
function opt(name) { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : undefined; }
const seed = opt('--seed') !== undefined ? Number(opt('--seed')) >>> 0 : (Date.now() ^ (process.pid << 8)) >>> 0;
const ONLY = opt('--only');
const ALL = argv.includes('--all'); // also run the definitions marked extra (not part of the default corpus)
const OUT = opt('--out') || path.join(HERE, 'cases.jsonl');
console.log(`seed: ${seed}   (replay with: node generate.mjs --seed ${seed})`);

// ---------------------------------------------------------------- rng
function hashStr(s) { let h = 2166136261 >>> 0; for (const c of s) { h ^= c.codePointAt(0); h = Math.imul(h, 16777619) >>> 0; } return h; }
function mulberry32(a) { return () => { a = (a + 0x6D2B79F5) >>> 0; let t = a; t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; }; }

// ---------------------------------------------------------------- ports
const listening = new Set();
{
  const r = spawnSync('ss', ['-ltnH'], { encoding: 'utf8' });
  for (const line of (r.stdout || '').split('\n')) { const m = line.match(/:(\d+)\s/); if (m) listening.add(Number(m[1])); }
}

// ---------------------------------------------------------------- helpers
const WORDS = ['agent', 'task', 'run', 'job', 'work', 'build', 'sandbox', 'exec', 'step', 'tool', 'probe', 'scratch'];
const NAMES = ['alpha', 'bravo', 'cedar', 'delta', 'ember', 'fjord', 'garnet', 'harbor', 'iris', 'juniper', 'kestrel', 'lumen', 'maple', 'nimbus', 'onyx', 'pylon'];
const NOTES = ['keep in sync with the API schema', 'TODO: move to config', 'see issue tracker', 'legacy path, do not touch',
  'added during the migration', 'helper used by the nightly job', 'reviewed', 'small utility', 'owner: platform team', 'perf: fine for now'];

function mkctx(id, v) {
  const r = mulberry32(hashStr(`${seed}:${id}:${v}`));
  const int = (a, b) => a + Math.floor(r() * (b - a + 1));
  const pick = (arr) => arr[Math.floor(r() * arr.length)];
  const alnum = (n) => { let s = ''; const A = 'abcdefghijklmnopqrstuvwxyz0123456789'; for (let i = 0; i < n; i++) s += A[Math.floor(r() * A.length)]; return s; };
  let dir;
  for (;;) { dir = path.join(os.tmpdir(), `${pick(WORDS)}-${alnum(8)}`); if (!fs.existsSync(dir)) break; }
  fs.mkdirSync(dir, { recursive: true });
  const ctx = {
    v, dir, r, int, pick, alnum,
    hex: (n) => { let s = ''; for (let i = 0; i < n; i++) s += '0123456789abcdef'[Math.floor(r() * 16)]; return s; },
    name: () => pick(NAMES),
    // n comment lines: shifts line numbers between variants
    pad: (cm, lo = 0, hi = 9) => { const n = int(lo, hi); let s = ''; for (let i = 0; i < n; i++) s += `${cm} ${pick(NOTES)}\n`; return s; },
    closedPort: () => { for (;;) { const p = int(20000, 60999); if (!listening.has(p)) return p; } },
  };
  return ctx;
}

const BASE_ENV = { ...process.env, LC_ALL: 'C.UTF-8', LANG: 'C.UTF-8' };
delete BASE_ENV.RUST_BACKTRACE; delete BASE_ENV.NODE_OPTIONS; delete BASE_ENV.JAVA_TOOL_OPTIONS; delete BASE_ENV.PYTHONWARNINGS;
delete BASE_ENV.MAVEN_OPTS; delete BASE_ENV.PGPASSWORD; delete BASE_ENV.PGUSER; delete BASE_ENV.PGDATABASE;

function gitEnv(dir, extra = '') {
  const g = path.join(dir, '.gitconfig-home');
  fs.writeFileSync(g, `[user]\n\tname = Dev Agent\n\temail = agent@example.invalid\n${extra}`);
  return { GIT_CONFIG_GLOBAL: g, GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0' };
}

function runProc(cmd, args, { cwd, env = {}, input, merge = false, timeout = 180000 } = {}) {
  let c = cmd, a = args;
  if (merge) { c = 'sh'; a = ['-c', 'exec "$@" 2>&1', 'sh', cmd, ...args]; }
  const r = spawnSync(c, a, { cwd, env: { ...BASE_ENV, ...env }, input, encoding: 'utf8', timeout, maxBuffer: 256 << 20 });
  if (r.error) throw new Error(`spawn ${cmd}: ${r.error.message}`);
  let code = r.status;
  if (code === null) code = 128 + os.constants.signals[r.signal];
  return { code, stdout: r.stdout || '', stderr: r.stderr || '', signal: r.signal };
}

const SIGNAMES = Object.fromEntries(Object.entries(os.constants.signals).filter(([k]) => !['SIGIOT', 'SIGPOLL', 'SIGUNUSED'].includes(k)).map(([k, n]) => [n, k]));
function norm(s) { return s.replace(/\s+/g, ' ').trim().slice(0, 96); }

// signature matchers (text -> line or null)
const first = (re) => (t) => t.split('\n').find((l) => re.test(l)) ?? null;
const last = (re) => (t) => { const ls = t.split('\n').filter((l) => re.test(l)); return ls.length ? ls[ls.length - 1] : null; };
// Rust panic convention: "thread '<name>' panicked: <message>" (1.95 prints location on the header line, message on the next)
const rustPanic = (t) => {
  const ls = t.split('\n');
  for (let i = 0; i < ls.length; i++) { const m = ls[i].match(/^thread '([^']+)'(?: \(\d+\))? panicked at .*:$/); if (m) return `thread '${m[1]}' panicked: ${ls[i + 1]}`; }
  return null;
};
// JVM convention: last "Caused by:" line without prefix, else the exception line without 'Exception in thread "main" '
const jvmRoot = (headRe) => (t) => {
  const ls = t.split('\n');
  const cb = ls.filter((l) => /^\s*Caused by: /.test(l));
  if (cb.length) return cb[cb.length - 1].replace(/^\s*Caused by: /, '');
  const h = ls.find((l) => headRe.test(l));
  return h ? h.replace(/^Exception in thread "[^"]*" /, '') : null;
};
// npm: first "npm error" line that is not bookkeeping
const npmErr = (t) => t.split('\n').find((l) => /^npm error /.test(l) && !/^npm error\s*$/.test(l) &&
  !/^npm error (code|errno|syscall|path|A complete log of this run|workspace|location|command)\b/.test(l)) ?? null;

// ---------------------------------------------------------------- definitions
const DEFS = [];
// cls: ExecutionFailure | RecoveredError | StderrWarning | Uncertain | NormalOutput
// fid: failure_id (defaults to name for failures; null for the rest)
function def(d) { DEFS.push(d); }
const FAIL = 'ExecutionFailure', REC = 'RecoveredError', WARN = 'StderrWarning', UNC = 'Uncertain', NORM = 'NormalOutput';
const files = (ctx, obj) => { for (const [p, c] of Object.entries(obj)) { const f = path.join(ctx.dir, p); fs.mkdirSync(path.dirname(f), { recursive: true }); fs.writeFileSync(f, c); if (/\.(sh)$/.test(p) || p.startsWith('bin/')) fs.chmodSync(f, 0o755); } };
const setup = (ctx, script, env = {}) => { const r = runProc('bash', ['-eo', 'pipefail', '-c', script], { cwd: ctx.dir, env }); if (r.code !== 0) throw new Error(`setup failed (${r.code}):\n${r.stdout}\n${r.stderr}`); return r; };

// ================================================================ PYTHON
const PY_KEYERROR = (pad) => `import json
import sys
${pad}
def load(path):
    with open(path) as f:
        return json.load(f)


def summarize(resp):
    rows = resp["results"]
    return {"count": len(rows), "first": rows[0] if rows else None}


if __name__ == "__main__":
    resp = load(sys.argv[1])
    print(json.dumps(summarize(resp)))
`;
function pyKeyErrorFiles(ctx) {
  const items = Array.from({ length: ctx.int(1, 5) }, (_, i) => ({ id: ctx.int(100, 999), name: ctx.name() }));
  files(ctx, { 'fetch_report.py': PY_KEYERROR(ctx.pad('#', 0, 12)), 'response.json': JSON.stringify({ status: 'ok', page: ctx.int(1, 9), items }) });
}
def({ name: 'py-keyerror-results', tool: 'python3', cls: FAIL, variants: 2,
  program: 'summarise a saved API response (count and first row of its results) as JSON',
  why: 'summarise an API response saved as JSON; reads resp["results"] but the payload has "items"',
  gen(ctx) { pyKeyErrorFiles(ctx); return { cmd: ['python3', ctx.v === 2 ? path.join(ctx.dir, 'fetch_report.py') : 'fetch_report.py', 'response.json'] }; },
  expect: /KeyError: 'results'/, sig: last(/^KeyError: /) });

def({ name: 'py-config-chained', tool: 'python3', cls: FAIL, variants: 3,
  program: 'load the app\'s JSON settings file given on the command line and print its keys',
  why: 'load a JSON settings file; JSONDecodeError is re-raised as ConfigError with `raise ... from e`',
  gen(ctx) {
    const key = ctx.pick(['timeout', 'retries', 'region', 'endpoint']);
    files(ctx, {
      'settings.json': `{\n  "${key}": ${ctx.int(1, 90)},\n  "debug": true,\n}\n`,
      'app.py': `import json\nimport sys\n${ctx.pad('#', 0, 8)}\n\nclass ConfigError(Exception):\n    pass\n\n\ndef load_config(path):\n    try:\n        with open(path) as f:\n            return json.load(f)\n    except json.JSONDecodeError as e:\n        raise ConfigError(f"invalid config file {path}") from e\n\n\ncfg = load_config(sys.argv[1])\nprint("loaded", sorted(cfg))\n`,
    });
    return { cmd: ['python3', 'app.py', path.join(ctx.dir, 'settings.json')] };
  },
  expect: /The above exception was the direct cause/, sig: last(/^(__main__\.)?ConfigError: /) });

def({ name: 'py-env-fallback-during-handling', tool: 'python3', cls: FAIL, variants: 2,
  program: 'determine the port to listen on from APP_PORT, falling back to a .env file next to the script',
  why: 'read PORT from the environment, on KeyError fall back to reading .env which does not exist (implicit chaining)',
  gen(ctx) {
    files(ctx, { 'serve.py': `import os\n${ctx.pad('#', 0, 6)}\n\ndef get_port():\n    try:\n        return int(os.environ["APP_PORT"])\n    except KeyError:\n        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".env")) as f:\n            for line in f:\n                if line.startswith("APP_PORT="):\n                    return int(line.split("=", 1)[1])\n\n\nprint("listening on", get_port())\n` });
    return { cmd: ['python3', 'serve.py'] };
  },
  expect: /During handling of the above exception/, sig: last(/^FileNotFoundError: /) });

def({ name: 'py-zerodiv-average', tool: 'python3', cls: FAIL, variants: 3, extra: true,
  program: 'print the average score of the students who passed',
  why: 'compute the average score of passing students; the filter leaves an empty list',
  gen(ctx) {
    const scores = Array.from({ length: ctx.int(3, 8) }, () => ctx.int(10, 49));
    files(ctx, { 'stats.py': `${ctx.pad('#', 0, 10)}import sys\n\nSCORES = ${JSON.stringify(scores)}\nTHRESHOLD = ${ctx.int(50, 70)}\n\n\ndef average(xs):\n    return sum(xs) / len(xs)\n\n\npassing = [s for s in SCORES if s >= THRESHOLD]\nprint(f"average of passing: {average(passing):.2f}")\n` });
    return { cmd: ['python3', 'stats.py'] };
  },
  expect: /ZeroDivisionError/, sig: last(/^ZeroDivisionError/) });

def({ name: 'py-none-group', tool: 'python3', cls: FAIL, variants: 3, extra: true,
  program: 'print the major version number of the release tag given on the command line',
  why: 'extract the major version from a git tag with re.match(r"v(\\d+)") and .group(1); tag has no leading v',
  gen(ctx) {
    const tag = `${ctx.int(1, 9)}.${ctx.int(0, 20)}.${ctx.int(0, 9)}`;
    files(ctx, { 'version.py': `import re\nimport sys\n${ctx.pad('#', 0, 8)}\n\ndef major(tag):\n    return int(re.match(r"v(\\d+)", tag).group(1))\n\n\nprint("major:", major(sys.argv[1]))\n` });
    return { cmd: ['python3', 'version.py', tag] };
  },
  expect: /NoneType/, sig: last(/^AttributeError: /) });

def({ name: 'py-modulenotfound-utils', tool: 'python3', cls: FAIL, variants: 2,
  program: 'print URL slugs for the post titles given on the command line',
  why: 'script imports slugify from a local utils package that was never created',
  gen(ctx) {
    files(ctx, { 'publish.py': `${ctx.pad('#', 0, 6)}import sys\nfrom utils.text import slugify\n\nfor title in sys.argv[1:]:\n    print(slugify(title))\n` });
    return { cmd: ['python3', 'publish.py', `${ctx.name()} post`] };
  },
  expect: /No module named 'utils'/, sig: last(/^ModuleNotFoundError: /) });

def({ name: 'py-typeerror-concat', tool: 'python3', cls: FAIL, variants: 2, extra: true,
  program: 'print a banner saying how many files were processed for a user',
  why: 'build a log message by concatenating a string with an int count',
  gen(ctx) {
    files(ctx, { 'report.py': `${ctx.pad('#', 0, 8)}\ndef banner(name, count):\n    return "processed " + count + " files for " + name\n\n\nprint(banner("${ctx.name()}", ${ctx.int(2, 500)}))\n` });
    return { cmd: ['python3', 'report.py'] };
  },
  expect: /can only concatenate/, sig: last(/^TypeError: /) });

def({ name: 'py-valueerror-int-arg', tool: 'python3', cls: FAIL, variants: 2,
  program: 'paginate output according to a --limit command-line option',
  why: 'parse the --limit argument with int(); the user passes a non-numeric value',
  gen(ctx) {
    const val = ctx.pick(['ten', '12x', 'all', '5k', 'none', 'max']);
    files(ctx, { 'paginate.py': `import argparse\n${ctx.pad('#', 0, 8)}\nparser = argparse.ArgumentParser()\nparser.add_argument("--limit")\nargs = parser.parse_args()\nlimit = int(args.limit)\nprint("limit", limit)\n` });
    return { cmd: ['python3', 'paginate.py', '--limit', val] };
  },
  expect: /invalid literal for int/, sig: last(/^ValueError: /) });

def({ name: 'py-toplevel-runtime-db', tool: 'python3', cls: FAIL, variants: 2,
  program: 'run database migrations',
  why: 'migration script raises a bare RuntimeError at module level when the DB handle is missing',
  gen(ctx) {
    files(ctx, { 'migrate.py': `${ctx.pad('#', 0, 8)}DB = None\n\nif DB is None:\n    raise RuntimeError("database not initialised; call init_db() first")\n\nprint("migrating")\n` });
    return { cmd: ['python3', 'migrate.py'] };
  },
  expect: /database not initialised/, sig: last(/^RuntimeError: /) });

def({ name: 'py-toplevel-runtime-queue', tool: 'python3', cls: FAIL, variants: 2,
  program: 'add a job to the in-memory job queue',
  why: 'job enqueuer raises a bare RuntimeError at module level when the in-memory queue is full',
  gen(ctx) {
    const cap = 8;
    files(ctx, { 'enqueue.py': `${ctx.pad('#', 0, 8)}QUEUE = list(range(${cap}))\nCAPACITY = ${cap}\n\nif len(QUEUE) >= CAPACITY:\n    raise RuntimeError(f"job queue is full (capacity {CAPACITY})")\n\nQUEUE.append("job-${ctx.int(100, 999)}")\n` });
    return { cmd: ['python3', 'enqueue.py'] };
  },
  expect: /job queue is full/, sig: last(/^RuntimeError: /) });

def({ name: 'py-json-expecting-delimiter', tool: 'python3', cls: FAIL, variants: 2, extra: true,
  program: 'load test fixtures from fixtures.json and print how many keys they have',
  why: 'json.load a hand-edited fixtures file that is missing a comma between two keys',
  gen(ctx) {
    files(ctx, { 'fixtures.json': `{\n  "user": "${ctx.name()}",\n  "id": ${ctx.int(1, 999)}\n  "active": true\n}\n`,
      'seed.py': `import json\n${ctx.pad('#', 0, 5)}\nwith open("fixtures.json") as f:\n    data = json.load(f)\nprint(len(data))\n` });
    return { cmd: ['python3', 'seed.py'] };
  },
  expect: /Expecting ',' delimiter/, sig: last(/^json\.decoder\.JSONDecodeError: /) });

def({ name: 'py-json-expecting-value-empty', tool: 'python3', cls: FAIL, variants: 2, extra: true,
  program: 'read a JSON payload from stdin (the previous pipeline step) and print its id',
  why: 'json.loads the stdout of a previous step, which was empty',
  gen(ctx) {
    files(ctx, { 'consume.py': `import json\nimport sys\n${ctx.pad('#', 0, 5)}\nraw = sys.stdin.read()\npayload = json.loads(raw)\nprint(payload["id"])\n` });
    return { cmd: ['python3', 'consume.py'], input: ctx.v === 1 ? '' : '\n' };
  },
  expect: /Expecting value/, sig: last(/^json\.decoder\.JSONDecodeError: /) });

def({ name: 'py-unittest-discount', tool: 'python3', cls: FAIL, variants: 2,
  program: 'unit-test apply_discount(price, pct) with python -m unittest',
  why: 'unittest for apply_discount; the implementation subtracts a flat amount instead of a percentage',
  gen(ctx) {
    const price = ctx.int(2, 40) * 10;
    files(ctx, {
      'pricing.py': `${ctx.pad('#', 0, 6)}def apply_discount(price, pct):\n    return price - pct\n`,
      'test_pricing.py': `import unittest\nfrom pricing import apply_discount\n\n\nclass DiscountTest(unittest.TestCase):\n    def test_ten_percent(self):\n        self.assertEqual(apply_discount(${price}, 10), ${price * 0.9})\n\n\nif __name__ == "__main__":\n    unittest.main()\n`,
    });
    return { cmd: ['python3', '-m', 'unittest', 'test_pricing'] };
  },
  expect: /FAILED \(failures=1\)/, sig: last(/^AssertionError: /) });

def({ name: 'py-pytest-restock-keyerror', tool: 'pytest', cls: FAIL, variants: 2, use: 'stdout',
  program: 'run the pytest suite for the inventory restock() helper',
  why: 'pytest test for restock(); the item dict uses "id" but restock reads item["sku"]',
  gen(ctx) {
    files(ctx, {
      'inventory.py': `${ctx.pad('#', 0, 6)}def restock(inv, item):\n    inv[item["sku"]] = inv.get(item["sku"], 0) + item["qty"]\n    return inv\n`,
      'test_inventory.py': `from inventory import restock\n\n\ndef test_restock_adds_quantity():\n    inv = {"${ctx.name()}": ${ctx.int(1, 9)}}\n    item = {"id": "${ctx.name()}", "qty": ${ctx.int(1, 9)}}\n    assert restock(inv, item)\n`,
    });
    return { cmd: ['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'test_inventory.py'] };
  },
  expect: /1 failed/, sig: last(/^E\s+KeyError: /) });

def({ name: 'py-recursion-tree', tool: 'python3', cls: FAIL, variants: 2, extra: true,
  program: 'print the depth of a node in a parent-pointer tree',
  why: 'walk a parent-pointer tree recursively; the data has a cycle so it never terminates',
  gen(ctx) {
    const a = ctx.name(), b = a + '-child';
    files(ctx, { 'tree.py': `${ctx.pad('#', 0, 6)}PARENT = {"${a}": "${b}", "${b}": "${a}"}\n\n\ndef depth(node):\n    if node not in PARENT:\n        return 0\n    return 1 + depth(PARENT[node])\n\n\nprint(depth("${a}"))\n` });
    return { cmd: ['python3', 'tree.py'] };
  },
  expect: /RecursionError/, sig: last(/^RecursionError: /) });

def({ name: 'py-asyncio-wait-for-timeout', tool: 'python3', cls: FAIL, variants: 2,
  program: 'poll a service status asynchronously with a timeout and print it',
  why: 'asyncio.wait_for on a slow fake fetch with a too-short timeout',
  gen(ctx) {
    files(ctx, { 'poll.py': `import asyncio\n${ctx.pad('#', 0, 6)}\n\nasync def fetch_status():\n    await asyncio.sleep(${(ctx.int(5, 9) / 10).toFixed(1)})\n    return "ok"\n\n\nasync def main():\n    status = await asyncio.wait_for(fetch_status(), timeout=0.${ctx.int(1, 3)})\n    print(status)\n\n\nasyncio.run(main())\n` });
    return { cmd: ['python3', 'poll.py'] };
  },
  expect: /TimeoutError/, sig: last(/^(asyncio\.exceptions\.)?TimeoutError/) });

def({ name: 'py-calledprocesserror-git', tool: 'python3', cls: FAIL, variants: 2, extra: true,
  program: 'print a build stamp containing the current git commit',
  why: 'get the current commit with subprocess.run(["git","rev-parse","HEAD"], check=True) outside a git repo',
  gen(ctx) {
    files(ctx, { 'stamp.py': `import subprocess\n${ctx.pad('#', 0, 6)}\nsha = subprocess.run(["git", "rev-parse", "HEAD"], check=True, capture_output=False, text=True).stdout\nprint("build", sha)\n` });
    return { cmd: ['python3', 'stamp.py'], env: { ...gitEnv(ctx.dir), GIT_CEILING_DIRECTORIES: path.dirname(ctx.dir) } };
  },
  expect: /CalledProcessError/, sig: last(/^subprocess\.CalledProcessError: /) });

def({ name: 'py-sysexit-missing-env', tool: 'python3', cls: FAIL, variants: 2, extra: true,
  program: 'sync data to a remote API using the API_KEY environment variable',
  why: 'CLI checks for API_KEY and calls sys.exit("error: ...") when it is missing',
  gen(ctx) {
    files(ctx, { 'sync.py': `import os\nimport sys\n${ctx.pad('#', 0, 6)}\nif "API_KEY" not in os.environ:\n    sys.exit("error: missing required environment variable API_KEY")\nprint("syncing")\n` });
    return { cmd: ['python3', 'sync.py'] };
  },
  expect: /missing required/, sig: first(/^error: missing required/) });

// ---- silent signal deaths + shell job-control reports (python)
const PY_SEGV = (pad) => `import ctypes\n${pad}\n\ndef read_header(addr):\n    return ctypes.string_at(addr)\n\n\nprint(read_header(8))\n`;
def({ name: 'py-ctypes-segv', tool: 'python3', cls: FAIL, variants: 2,
  program: 'read a 16-byte native header through ctypes and print it',
  why: 'read a native header through ctypes.string_at on a NULL address (segfaults, nothing printed)',
  gen(ctx) { files(ctx, { 'native.py': PY_SEGV(ctx.pad('#', 0, 5)) }); return { cmd: ['python3', 'native.py'] }; },
  check: (r) => r.code === 139 });
def({ name: 'py-ctypes-segv-bash', fid: 'py-ctypes-segv', tool: 'bash', cls: FAIL, variants: 2,
  program: 'shell step that runs the ctypes header reader and passes on its exit status',
  why: 'bash runs the ctypes NULL-read script and propagates its status; bash reports the crash',
  gen(ctx) {
    files(ctx, { 'native.py': PY_SEGV(ctx.pad('#', 0, 5)), 'run.sh': `#!/bin/bash\n${ctx.pad('#', 0, 3)}python3 native.py\nexit $?\n` });
    return ctx.v === 1 ? { cmd: ['bash', '-c', 'python3 native.py; exit $?'] } : { cmd: ['bash', 'run.sh'] };
  },
  expect: /Segmentation fault/, sig: first(/Segmentation fault/) });

const PY_ABORT = (pad) => `import os\nimport sys\n${pad}\n\ndef on_corrupt_index(path):\n    # hard stop so the supervisor restarts us with a core\n    os.abort()\n\n\non_corrupt_index("index.db")\n`;
def({ name: 'py-os-abort', tool: 'python3', cls: FAIL, variants: 2,
  program: 'index maintenance script that hard-stops (so the supervisor restarts it) when the index is corrupt',
  why: 'indexer calls os.abort() on a corrupt index (SIGABRT, nothing printed)',
  gen(ctx) { files(ctx, { 'indexer.py': PY_ABORT(ctx.pad('#', 0, 5)) }); return { cmd: ['python3', 'indexer.py'] }; },
  check: (r) => r.code === 134 });
def({ name: 'py-os-abort-bash', fid: 'py-os-abort', tool: 'bash', cls: FAIL, variants: 1,
  program: 'shell step that runs the index maintenance script and passes on its exit status',
  why: 'bash wrapper runs the aborting indexer and exits with its status; bash prints the Aborted report',
  gen(ctx) {
    files(ctx, { 'indexer.py': PY_ABORT(ctx.pad('#', 0, 5)), 'reindex.sh': `#!/bin/bash\n${ctx.pad('#', 0, 3)}python3 indexer.py\nexit $?\n` });
    return ctx.v === 1 ? { cmd: ['bash', '-c', 'python3 indexer.py; exit $?'] } : { cmd: ['bash', 'reindex.sh'] };
  },
  expect: /Aborted/, sig: first(/Aborted/) });

const PY_SPIN = `import time\n\n# busy worker that never finishes its batch\nwhile True:\n    sum(range(10000))\n`;
def({ name: 'py-spin-sigkill', tool: 'python3', cls: FAIL, variants: 2,
  program: 'CPU-bound batch worker run under a hard `timeout -s KILL` deadline',
  why: 'busy-looping worker run under `timeout -s KILL`; killed, prints nothing',
  gen(ctx) { files(ctx, { 'worker.py': PY_SPIN }); return { cmd: ['timeout', '-s', 'KILL', `0.${ctx.int(3, 8)}`, 'python3', 'worker.py'] }; },
  check: (r) => r.code === 137 });
def({ name: 'py-spin-sigkill-bash', fid: 'py-spin-sigkill', tool: 'bash', cls: FAIL, variants: 2,
  program: 'shell step that runs the batch worker in the background and SIGKILLs it at a deadline',
  why: 'bash starts the busy-looping worker, kills it with SIGKILL after a deadline and waits; bash reports Killed',
  gen(ctx) {
    files(ctx, { 'worker.py': PY_SPIN, 'deadline.sh': `#!/bin/bash\n${ctx.pad('#', 0, 3)}python3 worker.py &\npid=$!\nsleep 0.${ctx.int(3, 6)}\nkill -KILL "$pid"\nwait "$pid"\n` });
    return ctx.v === 1 ? { cmd: ['bash', '-c', `python3 worker.py & pid=$!; sleep 0.${ctx.int(3, 6)}; kill -KILL $pid; wait $pid`] } : { cmd: ['bash', 'deadline.sh'] };
  },
  expect: /Killed/, sig: first(/Killed/) });

// ---- python recovered errors
def({ name: 'py-rec-settings-defaults', tool: 'python3', cls: REC, variants: 3,
  program: 'UI script that loads settings.json, falling back to defaults if it cannot be parsed',
  why: 'load settings.json; on JSONDecodeError log "failed to parse settings, using defaults: ..." and continue',
  gen(ctx) {
    files(ctx, { 'settings.json': `{${ctx.pick(["'theme': 'dark'", "timeout: 30", "'retries': 3"])}}\n`,
      'ui.py': `import json\nimport sys\n${ctx.pad('#', 0, 6)}\nDEFAULTS = {"theme": "light", "timeout": 10}\ntry:\n    with open("settings.json") as f:\n        settings = json.load(f)\nexcept json.JSONDecodeError as e:\n    print(f"failed to parse settings, using defaults: {type(e).__name__}: {e}", file=sys.stderr)\n    settings = DEFAULTS\nprint("theme", settings["theme"])\n` });
    return { cmd: ['python3', 'ui.py'] };
  },
  expect: /failed to parse settings/, sig: first(/^failed to parse settings/) });

def({ name: 'py-rec-logging-exception', tool: 'python3', cls: REC, variants: 2,
  program: 'import a price CSV and print the total, logging and skipping rows that fail to import',
  why: 'import CSV rows, converting price with float(); bad rows are logged with logging.exception and skipped',
  gen(ctx) {
    const n = ctx.int(3, 7), bad = ctx.int(1, n);
    let csv = 'sku,price\n';
    for (let i = 1; i <= n; i++) csv += `${ctx.name()}-${i},${i === bad ? 'n/a' : ctx.int(1, 99) + '.99'}\n`;
    files(ctx, { 'prices.csv': csv, 'importer.py': `import csv\nimport logging\n${ctx.pad('#', 0, 6)}\ntotal = 0.0\nwith open("prices.csv") as f:\n    for i, row in enumerate(csv.DictReader(f), 1):\n        try:\n            total += float(row["price"])\n        except ValueError:\n            logging.exception("failed to import row %d", i)\nprint(f"total {total:.2f}")\n` });
    return { cmd: ['python3', 'importer.py'] };
  },
  expect: /ERROR:root:failed to import row/, sig: last(/^ValueError: /) });

def({ name: 'py-rec-task-never-retrieved', tool: 'python3', cls: REC, variants: 2,
  program: 'serve requests while refreshing a cache in a fire-and-forget asyncio task',
  why: 'fire-and-forget asyncio task raises ConnectionError; nobody awaits it so asyncio logs "Task exception was never retrieved"',
  gen(ctx) {
    files(ctx, { 'bg.py': `import asyncio\nimport gc\n${ctx.pad('#', 0, 6)}\n\nasync def refresh_cache():\n    raise ConnectionError("upstream closed the connection")\n\n\nasync def main():\n    t = asyncio.get_running_loop().create_task(refresh_cache())\n    await asyncio.sleep(0.0${ctx.int(1, 5)})\n    del t\n    gc.collect()\n    print("served ${ctx.int(3, 40)} requests")\n\n\nasyncio.run(main())\n` });
    return { cmd: ['python3', 'bg.py'] };
  },
  expect: /Task exception was never retrieved/, sig: last(/^ConnectionError: /) });

def({ name: 'py-rec-retry-connrefused', tool: 'python3', cls: REC, variants: 3,
  program: 'fetch exchange rates from a local service with retries, falling back to cached rates',
  why: 'HTTP client retries a closed local port; logs only the last failed attempt and falls back to cached data',
  gen(ctx) {
    const port = ctx.closedPort(), n = ctx.int(2, 5);
    files(ctx, { 'client.py': `import socket\nimport sys\n${ctx.pad('#', 0, 6)}\nATTEMPTS = ${n}\nfor attempt in range(1, ATTEMPTS + 1):\n    try:\n        socket.create_connection(("127.0.0.1", ${port}), timeout=1).close()\n        break\n    except OSError as e:\n        if attempt == ATTEMPTS:\n            print(f"[retry] attempt {attempt} failed: {type(e).__name__}: {e}; using cached data", file=sys.stderr)\nprint("rates: cached")\n` });
    return { cmd: ['python3', 'client.py'] };
  },
  expect: /\[retry\] attempt \d+ failed: ConnectionRefusedError/, sig: first(/^\[retry\] attempt/) });

// ---- python warnings / uncertain / normal
def({ name: 'py-warn-deprecation', tool: 'python3', cls: WARN, variants: 2,
  program: 'print a total using the module\'s legacy old_total() helper',
  why: 'script calls its own deprecated helper which issues warnings.warn(..., DeprecationWarning)',
  gen(ctx) { files(ctx, { 'legacy.py': `import warnings\n${ctx.pad('#', 0, 5)}\n\ndef old_total(xs):\n    warnings.warn("old_total() is deprecated, use total()", DeprecationWarning, stacklevel=2)\n    return sum(xs)\n\n\nprint(old_total([${ctx.int(1, 9)}, ${ctx.int(1, 9)}]))\n` }); return { cmd: ['python3', 'legacy.py'] }; },
  expect: /DeprecationWarning/ });
def({ name: 'py-warn-user', tool: 'python3', cls: WARN, variants: 1,
  program: 'load a config dict, warning about deprecated keys',
  why: 'config loader warns (UserWarning) about a renamed key and continues',
  gen(ctx) { files(ctx, { 'cfg.py': `import warnings\n${ctx.pad('#', 0, 5)}\ncfg = {"timeout": ${ctx.int(5, 60)}}\nif "timeout" in cfg:\n    warnings.warn("config key 'timeout' is deprecated, use 'timeout_s'")\nprint(cfg)\n` }); return { cmd: ['python3', 'cfg.py'] }; },
  expect: /UserWarning/ });
def({ name: 'py-warn-syntax-is-literal', tool: 'python3', cls: WARN, variants: 1,
  program: 'choose a fast or normal code path from a mode string',
  why: 'compare a string with `is` against a literal (compile-time SyntaxWarning)',
  gen(ctx) { files(ctx, { 'mode.py': `${ctx.pad('#', 0, 5)}mode = "${ctx.pick(['fast', 'safe', 'slow'])}"\nif mode is "fast":\n    print("fast path")\nelse:\n    print("normal path")\n` }); return { cmd: ['python3', 'mode.py'] }; },
  expect: /SyntaxWarning/ });
def({ name: 'py-info-logging', tool: 'python3', cls: UNC, variants: 1,
  program: 'ETL step that extracts and loads rows, logging progress at INFO level',
  why: 'ETL step logs progress with logging.INFO to stderr',
  gen(ctx) { files(ctx, { 'etl.py': `import logging\nlogging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")\nlog = logging.getLogger("etl")\nrows = ${ctx.int(100, 5000)}\nlog.info("extracted %d rows from %s", rows, "${ctx.name()}")\nlog.info("loaded %d rows", rows)\nprint("done")\n` }); return { cmd: ['python3', 'etl.py'] }; },
  expect: /INFO/ });
def({ name: 'py-progress-stderr', tool: 'python3', cls: UNC, variants: 1,
  program: 'batch job that reports progress on stderr',
  why: 'batch job writes a progress counter to stderr',
  gen(ctx) { const n = ctx.int(3, 6); files(ctx, { 'batch.py': `import sys\nN = ${n}\nfor i in range(1, N + 1):\n    print(f"processing batch {i}/{N}", file=sys.stderr)\nprint("ok")\n` }); return { cmd: ['python3', 'batch.py'] }; },
  expect: /processing batch/ });
def({ name: 'py-usage-stderr', tool: 'python3', cls: UNC, variants: 1,
  program: 'CSV-to-JSON converter invoked without arguments (prints usage)',
  why: 'tool prints its usage text to stderr when called without arguments and exits 0',
  gen(ctx) { files(ctx, { 'tool.py': `import sys\nif len(sys.argv) < 2:\n    print("usage: tool.py <input.csv> [--out DIR]\\n\\nConvert a CSV export into JSON files.", file=sys.stderr)\n    sys.exit(0)\n` }); return { cmd: ['python3', 'tool.py'] }; },
  expect: /usage:/ });
def({ name: 'py-normal', tool: 'python3', cls: NORM, variants: 1,
  program: 'print the three most common words of a short text',
  why: 'word count of a small text file, prints the result to stdout',
  gen(ctx) { files(ctx, { 'wc.py': `import collections\ntext = "${Array.from({ length: 8 }, () => ctx.name()).join(' ')}"\nprint(collections.Counter(text.split()).most_common(3))\n` }); return { cmd: ['python3', 'wc.py'] }; } });

// ================================================================ NODE
def({ name: 'node-undefined-name', tool: 'node', cls: FAIL, variants: 2,
  program: 'print the upper-cased display name of the user whose id is given on the command line',
  why: 'look up a user by id with Array.find and read .name; the id is not in the list',
  gen(ctx) {
    const users = Array.from({ length: ctx.int(2, 5) }, (_, i) => ({ id: i + 1, name: ctx.name() }));
    files(ctx, { 'users.js': `${ctx.pad('//', 0, 8)}const users = ${JSON.stringify(users)};\n\nfunction displayName(id) {\n  return users.find((u) => u.id === id).name.toUpperCase();\n}\n\nconsole.log(displayName(Number(process.argv[2])));\n` });
    return { cmd: ['node', 'users.js', String(ctx.int(10, 99))] };
  },
  expect: /reading 'name'/, sig: first(/^TypeError: /) });

def({ name: 'node-cannot-find-left-pad', tool: 'node', cls: FAIL, variants: 2,
  program: 'print a number left-padded to 8 characters using the left-pad package',
  why: 'format a table using require("left-pad"), which was never installed',
  gen(ctx) {
    files(ctx, { 'table.js': `${ctx.pad('//', 0, 6)}const leftPad = require('left-pad');\nconsole.log(leftPad('${ctx.int(1, 999)}', 8));\n` });
    return { cmd: ['node', ctx.v === 2 ? path.join(ctx.dir, 'table.js') : 'table.js'] };
  },
  expect: /Cannot find module 'left-pad'/, sig: first(/^Error: Cannot find module/) });

const NODE_CFG = (pad, wrap) => `const fs = require('fs');\nconst path = require('path');\n${pad}\nfunction loadConfig() {\n  const file = path.join(__dirname, 'config.json');\n${wrap ? `  try {\n    return JSON.parse(fs.readFileSync(file, 'utf8'));\n  } catch (err) {\n    throw new Error(String(err));\n  }\n` : `  return JSON.parse(fs.readFileSync(file, 'utf8'));\n`}}\n\nconst cfg = loadConfig();\nconsole.log('port', cfg.port);\n`;
def({ name: 'node-enoent-config', tool: 'node', cls: FAIL, variants: 2,
  program: 'start a server with settings read from config.json next to the script',
  why: 'read config.json next to the script with fs.readFileSync; the file does not exist',
  gen(ctx) { files(ctx, { 'server.js': NODE_CFG(ctx.pad('//', 0, 6), false) }); return { cmd: ['node', 'server.js'] }; },
  expect: /ENOENT/, sig: first(/^Error: ENOENT/) });
def({ name: 'node-enoent-config-wrapped', fid: 'node-enoent-config', tool: 'node', cls: FAIL, variants: 2,
  program: 'start a server with settings read from config.json next to the script (errors re-thrown as new Error)',
  why: 'same config.json read, but the catch block rethrows new Error(String(err)) (prints "Error: Error: ENOENT ...")',
  gen(ctx) { files(ctx, { 'server.js': NODE_CFG(ctx.pad('//', 0, 6), true) }); return { cmd: ['node', 'server.js'] }; },
  expect: /Error: Error: ENOENT/, sig: first(/^Error: Error: ENOENT/) });

def({ name: 'node-json-trailing-comma', tool: 'node', cls: FAIL, variants: 2,
  program: 'print the package name from manifest.json',
  why: 'JSON.parse a package manifest that has a trailing comma',
  gen(ctx) {
    files(ctx, { 'manifest.json': `{"name": "${ctx.name()}", "version": "1.${ctx.int(0, 9)}.0",}`, 'read.js': `${ctx.pad('//', 0, 6)}const fs = require('fs');\nconst m = JSON.parse(fs.readFileSync('manifest.json', 'utf8'));\nconsole.log(m.name);\n` });
    return { cmd: ['node', 'read.js'] };
  },
  expect: /SyntaxError/, sig: first(/^SyntaxError: /) });

def({ name: 'node-json-truncated', tool: 'node', cls: FAIL, variants: 2,
  program: 'print how many entries the on-disk cache.json holds',
  why: 'JSON.parse a cache file that was truncated mid-write',
  gen(ctx) {
    files(ctx, { 'cache.json': `{"entries": [${ctx.int(1, 99)}, ${ctx.int(1, 99)}`, 'cache.js': `${ctx.pad('//', 0, 6)}const fs = require('fs');\nconst cache = JSON.parse(fs.readFileSync('cache.json', 'utf8'));\nconsole.log(cache.entries.length);\n` });
    return { cmd: ['node', 'cache.js'] };
  },
  expect: /SyntaxError/, sig: first(/^SyntaxError: /) });

def({ name: 'node-unhandled-rejection-503', tool: 'node', cls: FAIL, variants: 2,
  program: 'sync orders from the upstream /v1/orders endpoint',
  why: 'async main awaits a fake upstream call that rejects; no catch (unhandled rejection crash)',
  gen(ctx) {
    files(ctx, { 'sync.mjs': `${ctx.pad('//', 0, 6)}async function callUpstream(path) {\n  await new Promise((r) => setTimeout(r, ${ctx.int(1, 20)}));\n  throw new Error(\`upstream returned 503 for \${path}\`);\n}\n\nasync function main() {\n  const body = await callUpstream('/v1/orders');\n  console.log(body);\n}\n\nmain();\n` });
    return { cmd: ['node', 'sync.mjs'] };
  },
  expect: /upstream returned 503/, sig: first(/^Error: upstream returned 503/) });

def({ name: 'node-unhandled-rejection-string', tool: 'node', cls: FAIL, variants: 2, extra: true,
  program: 'promise-based timeout helper used by a request wrapper',
  why: 'promise-based timeout helper rejects with a plain string; nobody catches it',
  gen(ctx) {
    files(ctx, { 'timeout.js': `${ctx.pad('//', 0, 6)}function withTimeout(ms) {\n  return new Promise((_, reject) => setTimeout(() => reject('timeout after ' + ms + 'ms'), ms));\n}\nwithTimeout(${ctx.int(5, 40)});\n` });
    return { cmd: ['node', 'timeout.js'] };
  },
  expect: /UnhandledPromiseRejection/, sig: first(/^\[?UnhandledPromiseRejection/) });

def({ name: 'node-esm-missing-export', tool: 'node', cls: FAIL, variants: 2, extra: true,
  program: 'print a timestamp formatted with the project\'s lib.mjs helpers',
  why: 'ESM module imports { formatDate } from ./lib.mjs, which only exports formatTime',
  gen(ctx) {
    files(ctx, { 'lib.mjs': `${ctx.pad('//', 0, 5)}export function formatTime(d) { return d.toISOString().slice(11, 19); }\n`, 'main.mjs': `import { formatDate } from './lib.mjs';\nconsole.log(formatDate(new Date(${ctx.int(1e12, 2e12)})));\n` });
    return { cmd: ['node', 'main.mjs'] };
  },
  expect: /does not provide an export named/, sig: first(/^SyntaxError: /) });

def({ name: 'node-toplevel-error-token', tool: 'node', cls: FAIL, variants: 2,
  program: 'CLI that talks to an API using the API_TOKEN environment variable',
  why: 'CLI throws new Error at top level when API_TOKEN is missing',
  gen(ctx) { files(ctx, { 'cli.js': `${ctx.pad('//', 0, 8)}const token = process.env.API_TOKEN;\nif (!token) throw new Error('API_TOKEN is not set');\nconsole.log('ok');\n` }); return { cmd: ['node', 'cli.js'] }; },
  expect: /API_TOKEN is not set/, sig: first(/^Error: API_TOKEN/) });

def({ name: 'node-toplevel-error-port', tool: 'node', cls: FAIL, variants: 3,
  program: 'CLI that validates the port given as its first argument',
  why: 'CLI throws new Error at top level when --port is not numeric (message includes the user value)',
  gen(ctx) { files(ctx, { 'cli.js': `${ctx.pad('//', 0, 8)}const value = process.argv[2];\nif (!/^\\d+$/.test(value)) throw new Error(\`invalid port: \${value}\`);\nconsole.log('port', value);\n` }); return { cmd: ['node', 'cli.js', ctx.pick(['http', 'eighty', '80a', 'auto', ':8080'])] }; },
  expect: /invalid port/, sig: first(/^Error: invalid port/) });

def({ name: 'node-anon-timer-heartbeat', tool: 'node', cls: FAIL, variants: 2,
  program: 'watchdog that checks a heartbeat timestamp shortly after start-up',
  why: 'anonymous setTimeout callback throws Error("heartbeat missed") in a watchdog',
  gen(ctx) { files(ctx, { 'watchdog.js': `${ctx.pad('//', 0, 8)}let last = Date.now() - ${ctx.int(6000, 9000)};\nsetTimeout(() => {\n  if (Date.now() - last > 5000) throw new Error('heartbeat missed');\n}, ${ctx.int(1, 10)});\n` }); return { cmd: ['node', 'watchdog.js'] }; },
  expect: /heartbeat missed/, sig: first(/^Error: heartbeat missed/) });

def({ name: 'node-anon-tick-stream-closed', tool: 'node', cls: FAIL, variants: 2, extra: true,
  program: 'flush pending writes to an output stream on the next tick',
  why: 'anonymous process.nextTick callback throws Error("stream already closed") when writing after close',
  gen(ctx) { files(ctx, { 'writer.js': `${ctx.pad('//', 0, 8)}const state = { closed: true, pending: ${ctx.int(1, 9)} };\nprocess.nextTick(() => {\n  if (state.closed) throw new Error('stream already closed');\n});\n` }); return { cmd: ['node', 'writer.js'] }; },
  expect: /stream already closed/, sig: first(/^Error: stream already closed/) });

def({ name: 'node-http-econnrefused', tool: 'node', cls: FAIL, variants: 3,
  program: 'health check: GET /healthz on a local service and print the status code',
  why: 'health check does http.get to a local service port that nothing listens on; no error handler',
  gen(ctx) { const port = ctx.closedPort(); files(ctx, { 'health.js': `${ctx.pad('//', 0, 6)}const http = require('http');\nhttp.get('http://127.0.0.1:${port}/healthz', (res) => console.log(res.statusCode));\n` }); return { cmd: ['node', 'health.js'] }; },
  expect: /ECONNREFUSED/, sig: first(/^Error: connect ECONNREFUSED/) });

def({ name: 'node-fetch-failed', tool: 'node', cls: FAIL, variants: 2,
  program: 'fetch items from a local API and print them',
  why: 'await fetch() to a closed local port at top level of an ES module (TypeError: fetch failed with [cause])',
  gen(ctx) { const port = ctx.closedPort(); files(ctx, { 'pull.mjs': `${ctx.pad('//', 0, 6)}const res = await fetch('http://127.0.0.1:${port}/api/items');\nconsole.log(await res.json());\n` }); return { cmd: ['node', 'pull.mjs'] }; },
  expect: /fetch failed/, sig: first(/^TypeError: fetch failed/) });

def({ name: 'node-stack-overflow', tool: 'node', cls: FAIL, variants: 2, extra: true,
  program: 'deep-clone an object graph and print it',
  why: 'recursive deep-clone on an object graph that contains a self reference',
  gen(ctx) { files(ctx, { 'clone.js': `${ctx.pad('//', 0, 6)}function clone(o) {\n  if (typeof o !== 'object' || o === null) return o;\n  const out = {};\n  for (const k of Object.keys(o)) out[k] = clone(o[k]);\n  return out;\n}\nconst node = { id: ${ctx.int(1, 99)} };\nnode.self = node;\nconsole.log(clone(node));\n` }); return { cmd: ['node', 'clone.js'] }; },
  expect: /Maximum call stack/, sig: first(/^RangeError: /) });

def({ name: 'node-reference-error', tool: 'node', cls: FAIL, variants: 2, extra: true,
  program: 'compute the retry budget from settings at start-up',
  why: 'script uses a variable `config` that was renamed to `settings`',
  gen(ctx) { files(ctx, { 'boot.js': `${ctx.pad('//', 0, 6)}const settings = { retries: ${ctx.int(1, 5)} };\nfunction start() {\n  return config.retries * 2;\n}\nconsole.log(start());\n` }); return { cmd: ['node', 'boot.js'] }; },
  expect: /config is not defined/, sig: first(/^ReferenceError: /) });

def({ name: 'node-test-cart-total', tool: 'node', cls: FAIL, variants: 2, use: 'stdout',
  program: 'run the node:test suite for the shopping-cart total() function (spec reporter)',
  why: 'node --test (spec reporter) for cart total; implementation ignores qty',
  gen(ctx) {
    const a = ctx.int(1, 9), b = ctx.int(1, 9), q = ctx.int(2, 4);
    files(ctx, { 'cart.mjs': `${ctx.pad('//', 0, 5)}export function total(items) {\n  return items.reduce((s, i) => s + i.price, 0);\n}\n`,
      'cart.test.mjs': `import { test } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { total } from './cart.mjs';\n\ntest('total multiplies price by qty', () => {\n  assert.equal(total([{ price: ${a}, qty: ${q} }, { price: ${b}, qty: 1 }]), ${a * q + b}, 'total should include qty');\n});\n` });
    return { cmd: ['node', '--test', '--test-reporter=spec', 'cart.test.mjs'] };
  },
  expect: /total should include qty/, sig: first(/^\s*AssertionError \[ERR_ASSERTION\]: total should include qty/) });

// ---- node recovered / wrapper
def({ name: 'node-rec-uncaught-handler', tool: 'node', cls: REC, variants: 2,
  program: 'long-running job worker with a process-wide uncaughtException handler that logs and keeps going',
  why: 'long-running worker with process.on("uncaughtException") that logs and keeps going; a timer callback reads .close of null',
  gen(ctx) {
    files(ctx, { 'worker.js': `${ctx.pad('//', 0, 6)}process.on('uncaughtException', (err) => {\n  console.error('uncaught exception (ignored by handler): ' + err.constructor.name + ': ' + err.message);\n});\nlet conn = null;\nsetTimeout(() => { conn.close(); }, ${ctx.int(1, 10)});\nsetTimeout(() => console.log('processed ${ctx.int(2, 90)} jobs'), 30);\n` });
    return { cmd: ['node', 'worker.js'] };
  },
  expect: /ignored by handler/, sig: first(/^uncaught exception \(ignored by handler\)/) });

def({ name: 'node-rec-retry-econnrefused', tool: 'node', cls: REC, variants: 3,
  program: 'fetch exchange rates from a local service with retries, serving cached rates on failure',
  why: 'client retries a closed local port a few times (only the final failed attempt is logged) and falls back to cache',
  gen(ctx) {
    const port = ctx.closedPort(), n = ctx.int(1, 5);
    files(ctx, { 'rates.mjs': `import net from 'node:net';\n${ctx.pad('//', 0, 5)}\nfunction tryConnect() {\n  return new Promise((resolve, reject) => {\n    const s = net.connect(${port}, '127.0.0.1', () => { s.end(); resolve(); });\n    s.on('error', reject);\n  });\n}\nconst MAX = ${n};\nfor (let attempt = 1; attempt <= MAX; attempt++) {\n  try { await tryConnect(); break; } catch (err) {\n    if (attempt === MAX) console.error(\`[retry] attempt \${attempt} failed: \${err.message}; serving cached rates\`);\n  }\n}\nconsole.log('rates: cached');\n` });
    return { cmd: ['node', 'rates.mjs'] };
  },
  expect: /\[retry\] attempt \d+ failed: connect ECONNREFUSED/, sig: first(/^\[retry\] attempt/) });

def({ name: 'node-rec-refresh-token', tool: 'node', cls: REC, variants: 2,
  program: 'refresh the OAuth token at start-up, keeping the cached token if the refresh fails',
  why: 'token refresh rejects; the caller catches it, logs console.error("failed to refresh token:", err) and keeps the old token',
  gen(ctx) {
    files(ctx, { 'auth.mjs': `${ctx.pad('//', 0, 5)}async function refresh() { throw new Error('invalid_grant: refresh token expired'); }\ntry {\n  await refresh();\n} catch (err) {\n  console.error('failed to refresh token:', err);\n}\nconsole.log('using cached token ${ctx.hex(8)}');\n` });
    return { cmd: ['node', 'auth.mjs'] };
  },
  expect: /failed to refresh token/, sig: first(/^failed to refresh token:/) });

// node agent wrapper around the python KeyError script (same failure as py-keyerror-results)
const AGENT = (max, giveUp) => `import { spawnSync } from 'node:child_process';\n\nconst MAX_ATTEMPTS = ${max};\nfunction runPython(args) {\n  const r = spawnSync('python3', args, { encoding: 'utf8' });\n  if (r.status !== 0) {\n    const lines = r.stderr.trim().split('\\n');\n    throw new Error(lines[lines.length - 1]);\n  }\n  return r.stdout;\n}\nlet out = null;\nfor (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {\n  try { out = runPython(['fetch_report.py', 'response.json']); break; } catch (err) {\n    if (attempt === MAX_ATTEMPTS) {\n      console.error(\`tool run_python failed (attempt \${attempt}): \${err}\`);\n      ${giveUp ? "console.log('continuing without report');" : 'process.exit(1);'}\n    }\n  }\n}\nif (out) console.log(out);\n`;
def({ name: 'agent-wrap-py-keyerror', fid: 'py-keyerror-results', tool: 'node', cls: FAIL, variants: 1,
  program: 'agent harness that runs fetch_report.py as a tool (with retries) and fails the step when the tool keeps failing',
  why: 'agent harness runs fetch_report.py through a tool wrapper with retries and exits 1 after the last attempt',
  gen(ctx) { pyKeyErrorFiles(ctx); files(ctx, { 'agent.mjs': AGENT(ctx.int(1, 5), false) }); return { cmd: ['node', 'agent.mjs'] }; },
  expect: /tool run_python failed \(attempt \d+\): Error: KeyError: 'results'/, sig: first(/^tool run_python failed/) });
def({ name: 'agent-wrap-py-keyerror-continue', fid: 'py-keyerror-results', tool: 'node', cls: REC, variants: 1,
  program: 'agent harness that runs fetch_report.py as a tool (with retries) and continues without the report when it keeps failing',
  why: 'same agent harness, but after the last failed attempt it logs the wrapper line and continues without the report (exit 0)',
  gen(ctx) { pyKeyErrorFiles(ctx); files(ctx, { 'agent.mjs': AGENT(ctx.int(2, 6), true) }); return { cmd: ['node', 'agent.mjs'] }; },
  expect: /tool run_python failed \(attempt \d+\): Error: KeyError: 'results'/, sig: first(/^tool run_python failed/) });

// ---- node warnings / uncertain / normal
def({ name: 'node-warn-buffer-dep', tool: 'node', cls: WARN, variants: 2,
  program: 'allocate and zero a buffer (legacy code using new Buffer)',
  why: 'legacy code allocates with new Buffer(n) (DEP0005 DeprecationWarning)',
  gen(ctx) { files(ctx, { 'buf.js': `const b = new Buffer(${ctx.int(4, 64)});\nb.fill(0);\nconsole.log(b.length);\n` }); return { cmd: ['node', 'buf.js'] }; },
  expect: /DeprecationWarning/ });
def({ name: 'node-warn-experimental-loader', tool: 'node', cls: WARN, variants: 1,
  program: 'run the app with a custom module-resolution loader hook',
  why: 'run a script with a custom --loader hook (ExperimentalWarning notice)',
  gen(ctx) { files(ctx, { 'hooks.mjs': 'export async function resolve(s, c, next) { return next(s, c); }\n', 'app.mjs': `console.log('app ${ctx.name()} started');\n` }); return { cmd: ['node', '--loader', './hooks.mjs', 'app.mjs'] }; },
  expect: /ExperimentalWarning/ });
def({ name: 'node-warn-experimental-permission', tool: 'node', cls: WARN, variants: 1,
  program: 'list the working directory under Node\'s permission model',
  why: 'run a script under the permission model (--experimental-permission), ExperimentalWarning notice',
  gen(ctx) { files(ctx, { 'app.js': `console.log(require('fs').readdirSync('.').length);\n` }); return { cmd: ['node', '--experimental-permission', `--allow-fs-read=${ctx.dir}`, 'app.js'] }; },
  expect: /ExperimentalWarning/ });
def({ name: 'node-warn-maxlisteners', tool: 'node', cls: WARN, variants: 1,
  program: 'register job listeners on an event bus and print how many there are',
  why: 'subscribe more than 10 listeners to one EventEmitter event (MaxListenersExceededWarning)',
  gen(ctx) { files(ctx, { 'bus.js': `const { EventEmitter } = require('events');\nconst bus = new EventEmitter();\nfor (let i = 0; i < ${ctx.int(11, 20)}; i++) bus.on('job', () => {});\nconsole.log(bus.listenerCount('job'));\n` }); return { cmd: ['node', 'bus.js'] }; },
  expect: /MaxListenersExceededWarning/ });
def({ name: 'node-info-stderr', tool: 'node', cls: UNC, variants: 1,
  program: 'dev-server start-up that reports compile time and URL',
  why: 'dev server logs startup info with console.error and exits after setup',
  gen(ctx) { files(ctx, { 'dev.js': `console.error('[dev] compiled ${ctx.int(3, 90)} modules in ${ctx.int(10, 900)}ms');\nconsole.error('[dev] ready on http://localhost:${ctx.int(3000, 3999)}');\n` }); return { cmd: ['node', 'dev.js'] }; },
  expect: /\[dev\]/ });
def({ name: 'node-test-pass', tool: 'node', cls: NORM, variants: 1,
  program: 'run a passing node:test test file',
  why: 'node --test with a passing test (report goes to stdout)',
  gen(ctx) { files(ctx, { 'ok.test.mjs': `import { test } from 'node:test';\nimport assert from 'node:assert';\ntest('adds', () => assert.equal(${ctx.int(1, 9)} + 1 > 0, true));\n` }); return { cmd: ['node', '--test', 'ok.test.mjs'] }; } });
def({ name: 'node-normal', tool: 'node', cls: NORM, variants: 1,
  program: 'print a JSON summary (count and sum) of a small array',
  why: 'print a JSON summary of a small array to stdout',
  gen(ctx) { files(ctx, { 'sum.js': `const xs = [${ctx.int(1, 9)}, ${ctx.int(1, 9)}, ${ctx.int(1, 9)}];\nconsole.log(JSON.stringify({ n: xs.length, sum: xs.reduce((a, b) => a + b) }));\n` }); return { cmd: ['node', 'sum.js'] }; } });

// ================================================================ NPM
const pkg = (ctx, scripts, extra = {}) => JSON.stringify({ name: `${ctx.name()}-app`, version: `0.${ctx.int(1, 9)}.0`, private: true, scripts, ...extra }, null, 2) + '\n';
def({ name: 'npm-missing-script-build', tool: 'npm', cls: FAIL, variants: 2,
  program: 'build the package with `npm run build`',
  why: 'npm run build in a package that only defines start and test scripts',
  gen(ctx) { files(ctx, { 'package.json': pkg(ctx, { start: 'node index.js', test: 'node --test' }) }); return { cmd: ['npm', 'run', 'build'] }; },
  expect: /Missing script/, sig: npmErr });
def({ name: 'npm-test-exit-silent', tool: 'npm', cls: FAIL, variants: 2,
  program: 'run the package tests (`npm test`, which checks that a coverage report exists)',
  why: 'npm test where the test script is a shell check that exits 2 without printing anything',
  gen(ctx) { files(ctx, { 'package.json': pkg(ctx, { test: `test -f coverage/lcov-${ctx.int(1, 9)}.info || exit 2` }) }); return { cmd: ['npm', 'test'] }; },
  check: (r) => r.code === 2 && r.stderr.trim() === '' });
def({ name: 'npm-build-script-throws', tool: 'npm', cls: FAIL, variants: 2,
  program: 'build the package with `npm run build` (node build.js)',
  why: 'npm run build runs node build.js, which throws because the dist directory is missing',
  gen(ctx) { files(ctx, { 'package.json': pkg(ctx, { build: 'node build.js' }), 'build.js': `${ctx.pad('//', 0, 5)}const fs = require('fs');\nif (!fs.existsSync('dist')) throw new Error('dist directory missing, run prepare first');\n` }); return { cmd: ['npm', 'run', 'build'] }; },
  expect: /dist directory missing/, sig: first(/^Error: dist directory missing/) });
def({ name: 'npm-start-missing-express', tool: 'npm', cls: FAIL, variants: 2, extra: true,
  program: 'start the express server with `npm start`',
  why: 'npm start runs server.js which requires express, never installed',
  gen(ctx) { files(ctx, { 'package.json': pkg(ctx, { start: 'node server.js' }), 'server.js': `${ctx.pad('//', 0, 5)}const express = require('express');\nexpress().listen(${ctx.int(3000, 3999)});\n` }); return { cmd: ['npm', 'start'] }; },
  expect: /Cannot find module 'express'/, sig: first(/^Error: Cannot find module/) });
def({ name: 'npm-ci-no-lockfile', tool: 'npm', cls: FAIL, variants: 2, extra: true,
  program: 'clean-install dependencies with `npm ci`',
  why: 'npm ci in a project without package-lock.json',
  gen(ctx) { files(ctx, { 'package.json': pkg(ctx, { test: 'node --test' }) }); return { cmd: ['npm', 'ci', '--offline', '--no-audit', '--no-fund'] }; },
  expect: /package-lock/, sig: npmErr });
def({ name: 'npm-ejsonparse', tool: 'npm', cls: FAIL, variants: 2,
  program: 'install the package\'s dependencies with `npm install`',
  why: 'npm install after a hand edit left package.json with a missing comma',
  gen(ctx) { files(ctx, { 'package.json': `{\n  "name": "${ctx.name()}-svc",\n  "version": "1.0.${ctx.int(0, 9)}"\n  "private": true\n}\n` }); return { cmd: ['npm', 'install', '--offline', '--no-audit', '--no-fund'] }; },
  expect: /EJSONPARSE/, sig: npmErr });
def({ name: 'npm-warn-unknown-config', tool: 'npm', cls: WARN, variants: 1,
  program: 'run the package\'s hello script with an extra CLI flag',
  why: 'npm run with an unknown CLI config flag (npm warn, still runs the script)',
  gen(ctx) { files(ctx, { 'package.json': pkg(ctx, { hello: 'echo hi' }) }); return { cmd: ['npm', 'run', 'hello', `--${ctx.pick(['fast', 'strict-mode', 'ci-mode'])}=true`] }; },
  expect: /npm warn/ });
def({ name: 'npm-pack-notice', tool: 'npm', cls: UNC, variants: 1,
  program: 'preview the package tarball with `npm pack --dry-run`',
  why: 'npm pack --dry-run lists the tarball contents as npm notice lines',
  gen(ctx) { files(ctx, { 'package.json': pkg(ctx, {}, { private: undefined }), 'index.js': `module.exports = ${ctx.int(1, 99)};\n` }); return { cmd: ['npm', 'pack', '--dry-run'] }; },
  expect: /npm notice/ });
def({ name: 'npm-pkg-get-normal', tool: 'npm', cls: NORM, variants: 1,
  program: 'print the package version with `npm pkg get version`',
  why: 'npm pkg get version',
  gen(ctx) { files(ctx, { 'package.json': pkg(ctx, {}) }); return { cmd: ['npm', 'pkg', 'get', 'version'] }; } });

// ================================================================ JAVA
const javac = (ctx, srcs, extra = []) => runProc('javac', [...extra, '-d', 'out', ...srcs], { cwd: ctx.dir });
function javaRun(ctx, mainSrc, cls, runArgs = [], jvmArgs = []) {
  const c = javac(ctx, [mainSrc], ['-g']);
  if (c.code !== 0) throw new Error('javac failed: ' + c.stderr);
  return { cmd: ['java', ...jvmArgs, '-cp', 'out', cls, ...runArgs] };
}
def({ name: 'javac-cannot-find-symbol', tool: 'javac', cls: FAIL, variants: 2,
  program: 'compile an invoice calculator that adds tax to a total',
  why: 'compile InvoiceService.java which calls a method renamed from computeTax to calculateTax',
  gen(ctx) { files(ctx, { 'InvoiceService.java': `${ctx.pad('//', 0, 10)}public class InvoiceService {\n    static double calculateTax(double amount) { return amount * 0.${ctx.int(10, 25)}; }\n\n    public static void main(String[] args) {\n        double total = ${ctx.int(10, 500)}.0;\n        System.out.println(total + computeTax(total));\n    }\n}\n` }); return { cmd: ['javac', '-d', 'out', 'InvoiceService.java'] }; },
  expect: /cannot find symbol/, sig: first(/^InvoiceService\.java:\d+: error: /) });
def({ name: 'javac-incompatible-types', tool: 'javac', cls: FAIL, variants: 2,
  program: 'compile a report that prints the count column of a row',
  why: 'compile Report.java which assigns a String from a map to an int',
  gen(ctx) { files(ctx, { 'Report.java': `import java.util.Map;\n${ctx.pad('//', 0, 10)}public class Report {\n    public static void main(String[] args) {\n        Map<String, String> row = Map.of("count", "${ctx.int(1, 99)}");\n        int count = row.get("count");\n        System.out.println(count);\n    }\n}\n` }); return { cmd: ['javac', '-d', 'out', 'Report.java'] }; },
  expect: /incompatible types/, sig: first(/^Report\.java:\d+: error: /) });
def({ name: 'javac-missing-semicolon', tool: 'javac', cls: FAIL, variants: 2, extra: true,
  program: 'compile a hello-world greeter',
  why: 'compile Greeter.java with a missing semicolon after a println',
  gen(ctx) { files(ctx, { 'Greeter.java': `${ctx.pad('//', 0, 10)}public class Greeter {\n    public static void main(String[] args) {\n        System.out.println("hello ${ctx.name()}")\n    }\n}\n` }); return { cmd: ['javac', '-d', 'out', 'Greeter.java'] }; },
  expect: /';' expected/, sig: first(/^Greeter\.java:\d+: error: /) });

def({ name: 'java-npe-trim', tool: 'java', cls: FAIL, variants: 2,
  program: 'print the configured region (system property app.region) and build number',
  why: 'read an optional system property and call .trim() on it without a null check',
  gen(ctx) { files(ctx, { 'Env.java': `${ctx.pad('//', 0, 8)}public class Env {\n    static String region() {\n        String region = System.getProperty("app.region");\n        return region.trim();\n    }\n    public static void main(String[] args) {\n        System.out.println("region=" + region() + " build=${ctx.int(100, 999)}");\n    }\n}\n` }); return javaRun(ctx, 'Env.java', 'Env'); },
  expect: /NullPointerException/, sig: jvmRoot(/^Exception in thread/) });
def({ name: 'java-causedby-properties', tool: 'java', cls: FAIL, variants: 2,
  program: 'start an application after loading its app.properties file',
  why: 'load app.properties; FileNotFoundException wrapped in UncheckedIOException wrapped in IllegalStateException',
  gen(ctx) {
    files(ctx, { 'Boot.java': `import java.io.*;\nimport java.util.Properties;\n${ctx.pad('//', 0, 8)}public class Boot {\n    static Properties load(String path) {\n        try (InputStream in = new FileInputStream(path)) {\n            Properties p = new Properties();\n            p.load(in);\n            return p;\n        } catch (IOException e) {\n            throw new UncheckedIOException("cannot read " + path, e);\n        }\n    }\n    static void start(String path) {\n        try {\n            load(path);\n        } catch (RuntimeException e) {\n            throw new IllegalStateException("application failed to start", e);\n        }\n    }\n    public static void main(String[] args) { start(args[0]); }\n}\n` });
    return javaRun(ctx, 'Boot.java', 'Boot', [path.join(ctx.dir, 'conf', 'app.properties')]);
  },
  expect: /Caused by: java\.io\.FileNotFoundException/, sig: jvmRoot(/^Exception in thread/) });

const JAVA_CONN = (pad, warm) => `import java.util.*;\n${pad}public class Pool {\n    static class Conn { boolean closed; }\n    static void send(Conn c, String msg) {\n        if (c.closed) throw new IllegalStateException("connection " + c + " is closed");\n    }\n    public static void main(String[] args) {\n        List<Object> warm = new ArrayList<>();\n        for (int i = 0; i < ${warm}; i++) { Object o = new Object(); System.identityHashCode(o); warm.add(o); }\n        Conn c = new Conn();\n        c.closed = true;\n        send(c, "PING");\n    }\n}\n`;
def({ name: 'java-identity-hash-closed-conn', tool: 'java', cls: FAIL, variants: 3,
  program: 'send a PING over a pooled connection',
  why: 'send on a pooled connection that was already closed; message embeds the default toString (Pool$Conn@hash)',
  gen(ctx) { files(ctx, { 'Pool.java': JAVA_CONN(ctx.pad('//', 0, 6), ctx.int(0, 500)) }); return javaRun(ctx, 'Pool.java', 'Pool'); },
  expect: /Pool\$Conn@[0-9a-f]+ is closed/, sig: jvmRoot(/^Exception in thread/) });
def({ name: 'java-identity-hash-lock-cause', tool: 'java', cls: FAIL, variants: 3,
  program: 'run the nightly-report job after acquiring the scheduler lock',
  why: 'scheduler wraps a failure to acquire a lock object; root cause message embeds java.lang.Object@hash',
  gen(ctx) {
    files(ctx, { 'Sched.java': `import java.util.*;\n${ctx.pad('//', 0, 6)}public class Sched {\n    static final Object LOCK = new Object();\n    static class LockTimeoutException extends Exception {\n        LockTimeoutException(String m) { super(m); }\n    }\n    static void acquire(Object lock) throws LockTimeoutException {\n        throw new LockTimeoutException("timed out waiting for " + lock + " after ${ctx.int(1, 30)}s");\n    }\n    static void runJob() {\n        try { acquire(LOCK); } catch (LockTimeoutException e) { throw new RuntimeException("job nightly-report failed", e); }\n    }\n    public static void main(String[] args) {\n        for (int i = 0; i < ${ctx.int(0, 400)}; i++) System.identityHashCode(new Object());\n        runJob();\n    }\n}\n` });
    return javaRun(ctx, 'Sched.java', 'Sched');
  },
  expect: /Caused by: Sched\$LockTimeoutException: timed out waiting for java\.lang\.Object@/, sig: jvmRoot(/^Exception in thread/) });
def({ name: 'java-aioobe', tool: 'java', cls: FAIL, variants: 2, extra: true,
  program: 'print the Nth column of a CSV row, N given on the command line',
  why: 'pick the Nth column of a CSV row where N comes from args; row has fewer columns',
  gen(ctx) { const cols = ctx.int(2, 4); files(ctx, { 'Col.java': `${ctx.pad('//', 0, 8)}public class Col {\n    public static void main(String[] args) {\n        String[] row = "${Array.from({ length: cols }, () => ctx.name()).join(',')}".split(",");\n        int n = Integer.parseInt(args[0]);\n        System.out.println(row[n]);\n    }\n}\n` }); return javaRun(ctx, 'Col.java', 'Col', [String(cols + ctx.int(0, 3))]); },
  expect: /ArrayIndexOutOfBoundsException/, sig: jvmRoot(/^Exception in thread/) });
def({ name: 'java-nfe-port', tool: 'java', cls: FAIL, variants: 2,
  program: 'start a server on the port given as the first argument',
  why: 'parse the PORT argument with Integer.parseInt; the user passes a non-numeric value',
  gen(ctx) { files(ctx, { 'Server.java': `${ctx.pad('//', 0, 8)}public class Server {\n    public static void main(String[] args) {\n        int port = Integer.parseInt(args[0]);\n        System.out.println("listening on " + port);\n    }\n}\n` }); return javaRun(ctx, 'Server.java', 'Server', [ctx.pick(['80a', 'http', 'eight', '8o80', ':443'])]); },
  expect: /NumberFormatException/, sig: jvmRoot(/^Exception in thread/) });
def({ name: 'java-toplevel-runtime-dburl', tool: 'java', cls: FAIL, variants: 2,
  program: 'application start-up that requires the db.url system property',
  why: 'main throws new RuntimeException("missing required property db.url")',
  gen(ctx) { files(ctx, { 'App.java': `${ctx.pad('//', 0, 8)}public class App {\n    public static void main(String[] args) {\n        String url = System.getProperty("db.url");\n        if (url == null) throw new RuntimeException("missing required property db.url");\n    }\n}\n` }); return javaRun(ctx, 'App.java', 'App'); },
  expect: /db\.url/, sig: jvmRoot(/^Exception in thread/) });
def({ name: 'java-toplevel-runtime-schema', tool: 'java', cls: FAIL, variants: 2,
  program: 'import a database dump after checking its schema version',
  why: 'main throws new RuntimeException("unsupported schema version ...") while reading a dump header',
  gen(ctx) { files(ctx, { 'App.java': `${ctx.pad('//', 0, 8)}public class App {\n    public static void main(String[] args) {\n        int version = 3;\n        if (version > 2) throw new RuntimeException("unsupported schema version " + version);\n    }\n}\n` }); return javaRun(ctx, 'App.java', 'App'); },
  expect: /unsupported schema version/, sig: jvmRoot(/^Exception in thread/) });
def({ name: 'java-main-class-typo', tool: 'java', cls: FAIL, variants: 2,
  program: 'run the compiled demo.Main program',
  why: 'run `java -cp out demo.Mian` (typo for demo.Main)',
  gen(ctx) { files(ctx, { 'demo/Main.java': `package demo;\npublic class Main { public static void main(String[] a) { System.out.println(${ctx.int(1, 9)}); } }\n` }); const c = javac(ctx, ['demo/Main.java']); if (c.code) throw new Error(c.stderr); return { cmd: ['java', '-cp', 'out', 'demo.Mian'] }; },
  expect: /ClassNotFoundException/, sig: jvmRoot(/^Error: Could not find/) });
def({ name: 'java-oom-heap', tool: 'java', cls: FAIL, variants: 2, extra: true,
  program: 'cache every parsed record in memory (JVM started with -Xmx24m)',
  why: 'cache every parsed record in an unbounded list under -Xmx24m',
  gen(ctx) { files(ctx, { 'Cache.java': `import java.util.*;\n${ctx.pad('//', 0, 6)}public class Cache {\n    public static void main(String[] args) {\n        List<long[]> cache = new ArrayList<>();\n        while (true) cache.add(new long[${ctx.int(8, 64) * 1024}]);\n    }\n}\n` }); return javaRun(ctx, 'Cache.java', 'Cache', [], ['-Xmx24m']); },
  expect: /OutOfMemoryError/, sig: jvmRoot(/^Exception in thread/) });
def({ name: 'java-stackoverflow', tool: 'java', cls: FAIL, variants: 2, extra: true,
  program: 'print a factorial computed recursively',
  why: 'recursive factorial without a base case',
  gen(ctx) { files(ctx, { 'Fact.java': `${ctx.pad('//', 0, 6)}public class Fact {\n    static long fact(long n) { return n * fact(n - 1); }\n    public static void main(String[] args) { System.out.println(fact(${ctx.int(5, 20)})); }\n}\n` }); return javaRun(ctx, 'Fact.java', 'Fact'); },
  expect: /StackOverflowError/, sig: jvmRoot(/^Exception in thread/) });

const MVN_POM = (artifact) => `<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>demo</groupId><artifactId>${artifact}</artifactId><version>1.0</version>
<properties><maven.compiler.release>17</maven.compiler.release><project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties>
<dependencies><dependency><groupId>org.junit.jupiter</groupId><artifactId>junit-jupiter</artifactId><version>5.10.2</version><scope>test</scope></dependency></dependencies>
<build><plugins>
<plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId><version>3.13.0</version></plugin>
<plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-surefire-plugin</artifactId><version>3.2.5</version></plugin>
<plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
</plugins></build></project>
`;
const MVN = ['mvn', '-o', '-B', '-q', '-Dstyle.color=never', 'test'];
def({ name: 'mvn-junit-add-failure', tool: 'mvn', cls: FAIL, variants: 2, use: 'stdout',
  program: 'run the Maven project\'s JUnit 5 tests offline (mvn -o test) for Calc.add',
  why: 'mvn -o test; JUnit 5 test expects Calc.add(a,b)==a+b but add subtracts',
  gen(ctx) {
    const a = ctx.int(2, 9), b = ctx.int(2, 9);
    files(ctx, { 'pom.xml': MVN_POM(`calc-${ctx.name()}`), 'src/main/java/demo/Calc.java': `package demo;\n${ctx.pad('//', 0, 4)}public class Calc {\n    public static int add(int a, int b) { return a - b; }\n}\n`,
      'src/test/java/demo/CalcTest.java': `package demo;\nimport org.junit.jupiter.api.Test;\nimport static org.junit.jupiter.api.Assertions.assertEquals;\nclass CalcTest {\n    @Test void addsNumbers() { assertEquals(${a + b}, Calc.add(${a}, ${b})); }\n}\n` });
    return { cmd: MVN };
  },
  expect: /AssertionFailedError/, sig: first(/^org\.opentest4j\.AssertionFailedError: /) });
def({ name: 'mvn-compile-cannot-find-symbol', tool: 'mvn', cls: FAIL, variants: 2, use: 'stdout',
  program: 'build and test the Maven project offline (mvn -o test)',
  why: 'mvn -o test; main source refers to a constant that does not exist',
  gen(ctx) {
    files(ctx, { 'pom.xml': MVN_POM(`svc-${ctx.name()}`), 'src/main/java/demo/Limits.java': `package demo;\n${ctx.pad('//', 0, 6)}public class Limits {\n    public static int max() { return Defaults.MAX_RETRIES * ${ctx.int(2, 9)}; }\n}\n`,
      'src/main/java/demo/Defaults.java': 'package demo;\npublic class Defaults { public static final int MAX_RETRY = 3; }\n' });
    return { cmd: MVN };
  },
  expect: /cannot find symbol/, sig: first(/^\[ERROR\] \/.*\.java:\[\d+,\d+\] /) });

def({ name: 'java-rec-connect-fallback', tool: 'java', cls: REC, variants: 2,
  program: 'report to a local metrics endpoint, continuing offline if it is unreachable',
  why: 'connect to a closed local port, catch the exception, printStackTrace and continue in offline mode',
  gen(ctx) { const port = ctx.closedPort(); files(ctx, { 'Client.java': `import java.net.*;\n${ctx.pad('//', 0, 6)}public class Client {\n    public static void main(String[] args) {\n        try (Socket s = new Socket("127.0.0.1", ${port})) {\n            System.out.println("connected");\n        } catch (Exception e) {\n            System.err.println("metrics endpoint unavailable, continuing offline");\n            e.printStackTrace();\n        }\n        System.out.println("done");\n    }\n}\n` }); return javaRun(ctx, 'Client.java', 'Client'); },
  expect: /ConnectException/, sig: first(/^java\.net\.ConnectException/) });
def({ name: 'java-rec-jul-severe', tool: 'java', cls: REC, variants: 2, extra: true,
  program: 'load currency rate rows, logging and skipping bad ones',
  why: 'java.util.logging SEVERE with a caught IllegalArgumentException from parsing a currency code; continues',
  gen(ctx) { files(ctx, { 'Fx.java': `import java.util.*;\nimport java.util.logging.*;\n${ctx.pad('//', 0, 6)}public class Fx {\n    static final Logger LOG = Logger.getLogger("fx");\n    public static void main(String[] args) {\n        try {\n            Currency.getInstance("${ctx.pick(['EURO', 'USDX', 'GBPP'])}");\n        } catch (IllegalArgumentException e) {\n            LOG.log(Level.SEVERE, "skipping rate row ${ctx.int(2, 80)}", e);\n        }\n        System.out.println("rates loaded");\n    }\n}\n` }); return javaRun(ctx, 'Fx.java', 'Fx'); },
  expect: /SEVERE/, sig: first(/^java\.lang\.IllegalArgumentException/) });

def({ name: 'javac-note-deprecation', tool: 'javac', cls: WARN, variants: 2,
  program: 'compile a program that prints a timestamp built with java.util.Date',
  why: 'compile code that uses the deprecated java.util.Date(int,int,int) constructor (javac prints Note: lines)',
  gen(ctx) { files(ctx, { 'Legacy.java': `import java.util.Date;\npublic class Legacy {\n    public static void main(String[] a) { Date d = new Date(${ctx.int(100, 125)}, ${ctx.int(0, 11)}, 1); System.out.println(d.getTime()); }\n}\n` }); return { cmd: ['javac', '-d', 'out', 'Legacy.java'] }; },
  expect: /Note: .*deprecat/ });
def({ name: 'javac-note-unchecked', tool: 'javac', cls: WARN, variants: 1,
  program: 'compile a program that builds and prints a list',
  why: 'compile code using a raw List type (javac Note: unchecked or unsafe operations)',
  gen(ctx) { files(ctx, { 'Raw.java': `import java.util.*;\npublic class Raw {\n    public static void main(String[] a) { List xs = new ArrayList(); xs.add("${ctx.name()}"); System.out.println(xs); }\n}\n` }); return { cmd: ['javac', '-d', 'out', 'Raw.java'] }; },
  expect: /unchecked/ });
def({ name: 'javac-xlint-warning', tool: 'javac', cls: WARN, variants: 1,
  program: 'compile a custom exception class with -Xlint:all',
  why: 'compile with -Xlint:all; a missing serialVersionUID triggers a warning',
  gen(ctx) { files(ctx, { 'Evt.java': `public class Evt extends Exception {\n    public Evt(String m) { super(m); }\n}\n` }); return { cmd: ['javac', '-Xlint:all', '-d', 'out', 'Evt.java'] }; },
  expect: /warning/ });
def({ name: 'jvm-noverify-warning', tool: 'java', cls: WARN, variants: 1,
  program: 'run a hello program with the JVM flag -Xverify:none',
  why: 'start a JVM with the deprecated -Xverify:none flag',
  gen(ctx) { files(ctx, { 'Hi.java': `public class Hi { public static void main(String[] a) { System.out.println("hi ${ctx.name()}"); } }\n` }); return javaRun(ctx, 'Hi.java', 'Hi', [], ['-Xverify:none']); },
  expect: /VM warning/ });
def({ name: 'jvm-picked-up-tool-options', tool: 'java', cls: UNC, variants: 1,
  program: 'run a Java program with JAVA_TOOL_OPTIONS set in the environment',
  why: 'run a JVM with JAVA_TOOL_OPTIONS set (JVM prints "Picked up JAVA_TOOL_OPTIONS")',
  gen(ctx) { files(ctx, { 'Hi.java': `public class Hi { public static void main(String[] a) { System.out.println("ok"); } }\n` }); const r = javaRun(ctx, 'Hi.java', 'Hi'); return { ...r, env: { JAVA_TOOL_OPTIONS: `-Dfile.encoding=UTF-8 -Dapp.instance=${ctx.name()}` } }; },
  expect: /Picked up JAVA_TOOL_OPTIONS/ });
def({ name: 'java-normal', tool: 'java', cls: NORM, variants: 1,
  program: 'print the sum of two integers',
  why: 'sum a few integers and print the result',
  gen(ctx) { files(ctx, { 'Sum.java': `public class Sum { public static void main(String[] a) { System.out.println(${ctx.int(1, 99)} + ${ctx.int(1, 99)}); } }\n` }); return javaRun(ctx, 'Sum.java', 'Sum'); } });

// ================================================================ RUST
const rustc = (file, extra = []) => ['rustc', '--edition', '2021', ...extra, file, '-o', 'prog'];
function rustRun(ctx, file, args = [], env = {}) {
  const c = runProc('rustc', ['--edition', '2021', '-g', file, '-o', 'prog'], { cwd: ctx.dir });
  if (c.code !== 0) throw new Error('rustc failed: ' + c.stderr);
  return { cmd: ['./prog', ...args], env };
}
def({ name: 'rustc-e0308-mismatched', tool: 'rustc', cls: FAIL, variants: 2,
  program: 'compile a program that parses a count from a string and prints it',
  why: 'function declared to return u32 returns a String',
  gen(ctx) { files(ctx, { 'main.rs': `${ctx.pad('//', 0, 8)}fn parse_count(s: &str) -> u32 {\n    s.trim().to_string()\n}\n\nfn main() {\n    println!("{}", parse_count(" ${ctx.int(1, 99)} "));\n}\n` }); return { cmd: rustc('main.rs') }; },
  expect: /E0308/, sig: first(/^error\[E\d+\]/) });
def({ name: 'rustc-e0425-unresolved', tool: 'rustc', cls: FAIL, variants: 2,
  program: 'compile a program that prints the sum of a vector',
  why: 'uses a variable total_count that was never declared (renamed to total)',
  gen(ctx) { files(ctx, { 'main.rs': `${ctx.pad('//', 0, 8)}fn main() {\n    let items = vec![${ctx.int(1, 9)}, ${ctx.int(1, 9)}];\n    let total: i32 = items.iter().sum();\n    println!("{} {}", total, total_count);\n}\n` }); return { cmd: rustc('main.rs') }; },
  expect: /E0425/, sig: first(/^error\[E\d+\]/) });
def({ name: 'rustc-e0382-moved', tool: 'rustc', cls: FAIL, variants: 2, extra: true,
  program: 'compile a program that counts names and prints them',
  why: 'passes a Vec by value to a function then uses it again',
  gen(ctx) { files(ctx, { 'main.rs': `${ctx.pad('//', 0, 8)}fn consume(v: Vec<String>) -> usize { v.len() }\n\nfn main() {\n    let names = vec![String::from("${ctx.name()}")];\n    let n = consume(names);\n    println!("{} {:?}", n, names);\n}\n` }); return { cmd: rustc('main.rs') }; },
  expect: /E0382/, sig: first(/^error\[E\d+\]/) });
def({ name: 'cargo-e0599-no-method', tool: 'cargo', cls: FAIL, variants: 2,
  program: 'cargo build a small CLI that prints a vector\'s length',
  why: 'cargo build of a crate that calls a misspelled method .lenght() on a Vec',
  gen(ctx) {
    files(ctx, { 'Cargo.toml': `[package]\nname = "${ctx.name()}_cli"\nversion = "0.1.${ctx.int(0, 9)}"\nedition = "2021"\n\n[dependencies]\n`, 'src/main.rs': `${ctx.pad('//', 0, 6)}fn main() {\n    let v: Vec<u32> = vec![1, 2, 3];\n    println!("{}", v.lenght());\n}\n` });
    return { cmd: ['cargo', 'build', '--offline'] };
  },
  expect: /E0599/, sig: first(/^error\[E\d+\]/) });

const RS_UNWRAP_NONE = (pad) => `use std::collections::HashMap;\n${pad}\nfn main() {\n    let mut env: HashMap<&str, &str> = HashMap::new();\n    env.insert("HOME", "/root");\n    let key = std::env::args().nth(1).unwrap_or_default();\n    let value = env.get(key.as_str()).copied().unwrap();\n    println!("{}", value);\n}\n`;
def({ name: 'rust-panic-unwrap-none', tool: 'rust', cls: FAIL, variants: 4,
  program: 'print the value of the config key given on the command line',
  why: 'look up a config key in a HashMap and .unwrap() the Option; key missing (run with and without RUST_BACKTRACE)',
  gen(ctx) { files(ctx, { 'main.rs': RS_UNWRAP_NONE(ctx.pad('//', 0, 8)) }); const bt = ctx.v >= 3 ? { RUST_BACKTRACE: ctx.v === 3 ? '1' : 'full' } : {}; return rustRun(ctx, 'main.rs', [ctx.pick(['DATABASE_URL', 'PORT', 'TOKEN'])], bt); },
  expect: /called `Option::unwrap\(\)` on a `None` value/, sig: rustPanic });
def({ name: 'rust-panic-index-oob', tool: 'rust', cls: FAIL, variants: 3,
  program: 'print the name of the shard whose number is given on the command line',
  why: 'index a Vec of shard names with a shard number taken from argv without a bounds check',
  gen(ctx) { const n = ctx.int(2, 5); files(ctx, { 'main.rs': `${ctx.pad('//', 0, 8)}fn main() {\n    let shards: Vec<String> = (0..${n}).map(|i| format!("shard-{}", i)).collect();\n    let idx: usize = std::env::args().nth(1).unwrap().parse().unwrap();\n    println!("{}", shards[idx]);\n}\n` }); return rustRun(ctx, 'main.rs', [String(n + ctx.int(0, 6))], ctx.v === 3 ? { RUST_BACKTRACE: '1' } : {}); },
  expect: /index out of bounds/, sig: rustPanic });
def({ name: 'rust-panic-parse-unwrap', tool: 'rust', cls: FAIL, variants: 2, extra: true,
  program: 'print the retry count given on the command line',
  why: 'parse a retry count from argv with .parse::<u32>().unwrap(); value not numeric',
  gen(ctx) { files(ctx, { 'main.rs': `${ctx.pad('//', 0, 8)}fn main() {\n    let raw = std::env::args().nth(1).unwrap_or_default();\n    let retries: u32 = raw.parse().unwrap();\n    println!("retries={}", retries);\n}\n` }); return rustRun(ctx, 'main.rs', [ctx.pick(['three', '3x', 'many'])]); },
  expect: /ParseIntError/, sig: rustPanic });
def({ name: 'rust-panic-expect-config', tool: 'rust', cls: FAIL, variants: 2,
  program: 'read config.toml and print its size',
  why: 'read config.toml with .expect("failed to read config.toml"); file missing',
  gen(ctx) { files(ctx, { 'main.rs': `${ctx.pad('//', 0, 8)}fn main() {\n    let text = std::fs::read_to_string("config.toml").expect("failed to read config.toml");\n    println!("{}", text.len());\n}\n` }); return rustRun(ctx, 'main.rs'); },
  expect: /failed to read config\.toml/, sig: rustPanic });
def({ name: 'rust-main-returns-err', tool: 'rust', cls: FAIL, variants: 2, extra: true,
  program: 'read an input file and print its size',
  why: 'main() -> Result<(), Box<dyn Error>> propagates an io::Error with ? when opening a missing input file',
  gen(ctx) { files(ctx, { 'main.rs': `use std::error::Error;\n${ctx.pad('//', 0, 8)}fn main() -> Result<(), Box<dyn Error>> {\n    let data = std::fs::read("input-${ctx.int(1, 9)}.bin")?;\n    println!("{}", data.len());\n    Ok(())\n}\n` }); return rustRun(ctx, 'main.rs'); },
  expect: /^Error: /m, sig: first(/^Error: /) });
def({ name: 'rust-stack-overflow', tool: 'rust', cls: FAIL, variants: 2, extra: true,
  program: 'compute and print a tree depth recursively',
  why: 'unbounded recursion in a tree depth function (stack overflow, SIGABRT)',
  gen(ctx) { files(ctx, { 'main.rs': `${ctx.pad('//', 0, 8)}fn depth(n: u64, buf: [u8; 512]) -> u64 {\n    if n == u64::MAX { return 0; }\n    1 + depth(n + 1, buf) + buf[(n % 512) as usize] as u64\n}\n\nfn main() {\n    println!("{}", depth(${ctx.int(0, 9)}, [0u8; 512]));\n}\n` }); return rustRun(ctx, 'main.rs'); },
  expect: /overflowed its stack/, sig: first(/has overflowed its stack/) });
def({ name: 'cargo-test-discount', tool: 'cargo', cls: FAIL, variants: 2, merge: true,
  program: 'run `cargo test` for the pricing crate\'s apply_discount',
  why: 'cargo test; apply_discount uses integer division so the assert_eq fails',
  gen(ctx) {
    const price = ctx.int(3, 9) * 10 + 5;
    files(ctx, { 'Cargo.toml': `[package]\nname = "pricing_${ctx.name()}"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n`,
      'src/lib.rs': `${ctx.pad('//', 0, 6)}pub fn apply_discount(price: u32, pct: u32) -> u32 {\n    price - price / 100 * pct\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn applies_discount() {\n        assert_eq!(apply_discount(${price}, 10), ${price - Math.round(price * 0.1)});\n    }\n}\n` });
    return { cmd: ['cargo', 'test', '--offline', '-q'] };
  },
  expect: /assertion `left == right` failed/, sig: rustPanic });
def({ name: 'rust-rec-cache-rebuild', tool: 'rust', cls: REC, variants: 2,
  program: 'load the index cache, rebuilding it if it cannot be read',
  why: 'read a cache file; on error eprintln!("failed to load cache, rebuilding: {e}") and rebuild',
  gen(ctx) { files(ctx, { 'main.rs': `fn main() {\n    let cache = match std::fs::read_to_string(".cache/index-${ctx.int(1, 9)}.json") {\n        Ok(s) => s,\n        Err(e) => { eprintln!("failed to load cache, rebuilding: {}", e); String::from("{}") }\n    };\n    println!("cache bytes: {}", cache.len());\n}\n` }); return rustRun(ctx, 'main.rs'); },
  expect: /failed to load cache/, sig: first(/^failed to load cache/) });
def({ name: 'rustc-warn-unused', tool: 'rustc', cls: WARN, variants: 1,
  program: 'compile a small program',
  why: 'compile a program with an unused variable (rustc warning, exit 0)',
  gen(ctx) { files(ctx, { 'main.rs': `fn main() {\n    let retries = ${ctx.int(1, 9)};\n    println!("ok");\n}\n` }); return { cmd: rustc('main.rs') }; },
  expect: /warning: unused variable/ });
def({ name: 'cargo-build-warn-dead-code', tool: 'cargo', cls: WARN, variants: 1,
  program: 'cargo build a small tool crate',
  why: 'cargo build of a crate with an unused function (dead_code warning)',
  gen(ctx) { files(ctx, { 'Cargo.toml': `[package]\nname = "tool_${ctx.name()}"\nversion = "0.1.0"\nedition = "2021"\n`, 'src/main.rs': 'fn helper() -> u8 { 1 }\nfn main() { println!("hi"); }\n' }); return { cmd: ['cargo', 'build', '--offline'] }; },
  expect: /warning: function `helper` is never used/ });
def({ name: 'cargo-build-progress', tool: 'cargo', cls: UNC, variants: 2,
  program: 'cargo build a fresh crate',
  why: 'clean cargo build; cargo reports Compiling/Finished progress on stderr',
  gen(ctx) { files(ctx, { 'Cargo.toml': `[package]\nname = "app_${ctx.name()}"\nversion = "0.${ctx.int(1, 9)}.0"\nedition = "2021"\n`, 'src/main.rs': 'fn main() { println!("hi"); }\n' }); return { cmd: ['cargo', 'build', '--offline'] }; },
  expect: /Compiling/ });
def({ name: 'rust-normal', tool: 'rust', cls: NORM, variants: 1,
  program: 'print the sum of a small vector',
  why: 'print the sum of a small vector',
  gen(ctx) { files(ctx, { 'main.rs': `fn main() { let v = vec![${ctx.int(1, 9)}, ${ctx.int(1, 9)}]; println!("{}", v.iter().sum::<i32>()); }\n` }); return rustRun(ctx, 'main.rs'); } });

// ================================================================ C / C++
def({ name: 'gcc-undeclared', tool: 'gcc', cls: FAIL, variants: 2,
  program: 'compile a C program that prints the mean of an array',
  why: 'compile stats.c which uses `count` that was renamed to `n`',
  gen(ctx) { files(ctx, { 'stats.c': `#include <stdio.h>\n${ctx.pad('//', 0, 10)}\ndouble mean(const int *xs, int n) {\n    long s = 0;\n    for (int i = 0; i < n; i++) s += xs[i];\n    return (double)s / count;\n}\n\nint main(void) {\n    int xs[] = {${ctx.int(1, 9)}, ${ctx.int(1, 9)}};\n    printf("%f\\n", mean(xs, 2));\n    return 0;\n}\n` }); return { cmd: ['gcc', '-Wall', '-o', 'stats', 'stats.c'] }; },
  expect: /undeclared/, sig: first(/^stats\.c:\d+:\d+: error: /) });
def({ name: 'gcc-expected-semicolon', tool: 'gcc', cls: FAIL, variants: 2, extra: true,
  program: 'compile a C port parser',
  why: 'compile parse.c with a missing semicolon before return',
  gen(ctx) { files(ctx, { 'parse.c': `#include <stdlib.h>\n${ctx.pad('//', 0, 10)}\nint parse_port(const char *s) {\n    int p = atoi(s)\n    return p > 0 ? p : ${ctx.int(1000, 9000)};\n}\n\nint main(void) { return parse_port("80") == 80 ? 0 : 1; }\n` }); return { cmd: ['gcc', '-c', 'parse.c'] }; },
  expect: /error: expected .*before/, sig: first(/^parse\.c:\d+:\d+: error: /) });
def({ name: 'gxx-cannot-convert-arg', tool: 'g++', cls: FAIL, variants: 2,
  program: 'compile a C++ program that prints the result of a small parser',
  why: 'compile a C++ parser that calls Parser::parse with an int instead of a std::string',
  gen(ctx) { files(ctx, { 'parser.cpp': `#include <string>\n#include <iostream>\n${ctx.pad('//', 0, 10)}\nstruct Parser {\n    int parse(const std::string &s) { return (int)s.size(); }\n};\n\nint main() {\n    Parser p;\n    std::cout << p.parse(${ctx.int(1, 999)}) << "\\n";\n}\n` }); return { cmd: ['g++', '-std=c++17', '-c', 'parser.cpp'] }; },
  expect: /cannot convert/, sig: first(/^parser\.cpp:\d+:\d+: error: /) });
def({ name: 'gxx-vector-no-member', tool: 'g++', cls: FAIL, variants: 2, extra: true,
  program: 'compile a C++ queue example',
  why: 'compile C++ code that calls .push() on a std::vector (should be push_back)',
  gen(ctx) { files(ctx, { 'queue.cpp': `#include <vector>\n${ctx.pad('//', 0, 10)}\nint main() {\n    std::vector<int> q;\n    q.push(${ctx.int(1, 99)});\n    return (int)q.size();\n}\n` }); return { cmd: ['g++', '-std=c++17', '-o', 'queue', 'queue.cpp'] }; },
  expect: /has no member named/, sig: first(/^queue\.cpp:\d+:\d+: error: /) });
def({ name: 'ld-undefined-reference', tool: 'gcc', cls: FAIL, variants: 2,
  program: 'build a C program that prints a checksum of a string',
  why: 'link main.c which calls compute_checksum() declared in a header but never implemented',
  gen(ctx) { files(ctx, { 'checksum.h': 'unsigned compute_checksum(const char *buf, unsigned len);\n', 'main.c': `#include <stdio.h>\n#include "checksum.h"\n${ctx.pad('//', 0, 10)}\nint main(void) {\n    const char *msg = "${ctx.name()}";\n    printf("%u\\n", compute_checksum(msg, ${ctx.int(3, 6)}));\n    return 0;\n}\n` }); return { cmd: ['gcc', '-o', 'app', 'main.c'] }; },
  expect: /undefined reference to `compute_checksum'/, sig: first(/undefined reference to/) });

const C_SEGV = (pad) => `#include <stdio.h>\n#include <string.h>\n${pad}\nstatic char *value_of(char *line) {\n    char *eq = strchr(line, '=');\n    return eq ? eq + 1 : NULL;\n}\n\nint main(int argc, char **argv) {\n    FILE *f = fopen(argv[1], "r");\n    char buf[256];\n    size_t total = 0;\n    while (fgets(buf, sizeof buf, f)) total += strlen(value_of(buf));\n    printf("%zu\\n", total);\n    return 0;\n}\n`;
function cSegvSetup(ctx) {
  let conf = ''; const n = ctx.int(1, 4); for (let i = 0; i < n; i++) conf += `${ctx.name()}_${i}=${ctx.int(1, 999)}\n`; conf += `${ctx.name()}\n`;
  files(ctx, { 'cfgsum.c': C_SEGV(ctx.pad('//', 0, 6)), 'app.conf': conf });
  const c = runProc('gcc', ['-O0', '-o', 'cfgsum', 'cfgsum.c'], { cwd: ctx.dir }); if (c.code) throw new Error(c.stderr);
}
def({ name: 'c-segv-null-strlen', tool: 'c', cls: FAIL, variants: 1,
  program: 'sum the lengths of the values in a key=value config file',
  why: 'sum the lengths of config values; a line without "=" makes value_of return NULL, strlen(NULL) segfaults silently',
  gen(ctx) { cSegvSetup(ctx); return { cmd: ['./cfgsum', 'app.conf'] }; },
  check: (r) => r.code === 139 && r.stderr === '' });
def({ name: 'c-segv-null-strlen-bash', fid: 'c-segv-null-strlen', tool: 'bash', cls: FAIL, variants: 3,
  program: 'shell step that runs the config-value summer and passes on its exit status',
  why: 'shell step runs the config-summing binary and exits with its status; bash prints the Segmentation fault job report',
  gen(ctx) {
    cSegvSetup(ctx); files(ctx, { 'check.sh': `#!/bin/bash\n${ctx.pad('#', 0, 4)}./cfgsum app.conf\nexit $?\n` });
    if (ctx.v === 3) return { cmd: ['bash', '-c', '(./cfgsum app.conf; exit $?) 2>&1 | sed "s/^/| /"; exit ${PIPESTATUS[0]}'], merge: true };
    return ctx.v === 1 ? { cmd: ['bash', '-c', './cfgsum app.conf; exit $?'] } : { cmd: ['bash', 'check.sh'] };
  },
  expect: /Segmentation fault/, sig: first(/Segmentation fault/) });
def({ name: 'c-assert-header', tool: 'c', cls: FAIL, variants: 3,
  program: 'parse a packet header given on the command line and print its length',
  why: 'packet parser asserts the header length is positive; input has an empty header (assert -> SIGABRT)',
  gen(ctx) {
    files(ctx, { 'pkt.c': `#include <assert.h>\n#include <stdio.h>\n#include <string.h>\n${ctx.pad('//', 0, 8)}\nstatic int parse_header(const char *h) {\n    size_t len = strlen(h);\n    assert(len > 0);\n    return (int)len;\n}\n\nint main(int argc, char **argv) {\n    printf("%d\\n", parse_header(argc > 1 ? argv[1] : ""));\n    return 0;\n}\n` });
    const c = runProc('gcc', ['-g', '-o', 'pkt', 'pkt.c'], { cwd: ctx.dir }); if (c.code) throw new Error(c.stderr);
    return ctx.v === 3 ? { cmd: ['bash', '-c', './pkt ""; exit $?'] } : { cmd: ['./pkt', ''] };
  },
  expect: /Assertion `len > 0' failed/, sig: first(/Assertion `len > 0' failed/) });
def({ name: 'cxx-uncaught-runtime-error', tool: 'c++', cls: FAIL, variants: 2,
  program: 'C++ service start-up that reads service.yaml',
  why: 'C++ service throws std::runtime_error("config file missing: ...") from main, never caught (terminate -> SIGABRT)',
  gen(ctx) {
    files(ctx, { 'svc.cpp': `#include <stdexcept>\n#include <fstream>\n#include <string>\n${ctx.pad('//', 0, 8)}\nint main() {\n    std::ifstream in("service.yaml");\n    if (!in) throw std::runtime_error("config file missing: service.yaml");\n    return 0;\n}\n` });
    const c = runProc('g++', ['-o', 'svc', 'svc.cpp'], { cwd: ctx.dir }); if (c.code) throw new Error(c.stderr);
    return { cmd: ['./svc'] };
  },
  // Corrected by vigil's maintainers: the README's convention names an uncaught C++ exception
  // `<type>: <what()>` (\`std::runtime_error: …\`), not by the \`what():\` line.
  expect: /what\(\):\s+config file missing/, sig: (t) => { const ty = /instance of '([^']+)'/.exec(t); const w = /what\(\):\s+(.*)/.exec(t); return ty && w ? `${ty[1]}: ${w[1]}` : null; } });
def({ name: 'c-double-free', tool: 'c', cls: FAIL, variants: 2, extra: true,
  program: 'allocate, use and release a scratch buffer',
  why: 'free a buffer in an error path and again in cleanup (glibc detects double free, SIGABRT)',
  gen(ctx) {
    files(ctx, { 'buf.c': `#include <stdlib.h>\n#include <string.h>\n${ctx.pad('//', 0, 8)}\nint main(void) {\n    char *b = malloc(${ctx.int(8, 64)});\n    strcpy(b, "x");\n    if (b[0] == 'x') free(b);  /* error path */\n    free(b);                   /* cleanup */\n    return 0;\n}\n` });
    const c = runProc('gcc', ['-O0', '-o', 'buf', 'buf.c'], { cwd: ctx.dir }); if (c.code) throw new Error(c.stderr);
    return { cmd: ['./buf'] };
  },
  expect: /double free/, sig: first(/double free/) });
const C_OOB = (pad, n) => `#include <stdio.h>\n#include <stdlib.h>\n${pad}\nint main(void) {\n    int n = ${n};\n    int *xs = calloc(n, sizeof(int));\n    long s = 0;\n    for (int i = 0; i <= n; i++) s += xs[i];\n    printf("%ld\\n", s);\n    free(xs);\n    return 0;\n}\n`;
def({ name: 'asan-heap-overflow', tool: 'c', cls: FAIL, variants: 2,
  program: 'sum an integer array (AddressSanitizer build)',
  why: 'sum an array with an off-by-one loop (i <= n), built with -fsanitize=address',
  gen(ctx) { files(ctx, { 'sum.c': C_OOB(ctx.pad('//', 0, 6), ctx.int(2, 9)) }); const c = runProc('gcc', ['-g', '-fsanitize=address', '-o', 'sum', 'sum.c'], { cwd: ctx.dir }); if (c.code) throw new Error(c.stderr); return { cmd: ['./sum'] }; },
  expect: /heap-buffer-overflow/, sig: first(/ERROR: AddressSanitizer/) });
def({ name: 'valgrind-invalid-read', tool: 'valgrind', cls: REC, variants: 2,
  program: 'sum an integer array, run under valgrind',
  why: 'same off-by-one array sum, plain build, run under valgrind (reports Invalid read, program exits 0)',
  gen(ctx) { files(ctx, { 'sum.c': C_OOB(ctx.pad('//', 0, 6), ctx.int(2, 9)) }); const c = runProc('gcc', ['-g', '-O0', '-o', 'sum', 'sum.c'], { cwd: ctx.dir }); if (c.code) throw new Error(c.stderr); return { cmd: ['valgrind', '-q', './sum'] }; },
  expect: /Invalid read of size 4/, sig: first(/Invalid read of size/) });
def({ name: 'valgrind-invalid-read-errexit', fid: 'valgrind-invalid-read', tool: 'valgrind', cls: FAIL, variants: 1,
  program: 'sum an integer array, run under valgrind with --error-exitcode=3 (CI mode)',
  why: 'same off-by-one array sum under valgrind --error-exitcode=3 (CI mode: errors fail the run)',
  gen(ctx) { files(ctx, { 'sum.c': C_OOB(ctx.pad('//', 0, 6), ctx.int(2, 9)) }); const c = runProc('gcc', ['-g', '-O0', '-o', 'sum', 'sum.c'], { cwd: ctx.dir }); if (c.code) throw new Error(c.stderr); return { cmd: ['valgrind', '-q', '--error-exitcode=3', './sum'] }; },
  expect: /Invalid read of size 4/, sig: first(/Invalid read of size/) });
def({ name: 'ubsan-signed-overflow', tool: 'c', cls: REC, variants: 2,
  program: 'accumulate a running total (UndefinedBehaviorSanitizer build)',
  why: 'accumulate request sizes in an int, built with -fsanitize=undefined; overflow is reported at runtime, program continues and exits 0',
  gen(ctx) { files(ctx, { 'acc.c': `#include <limits.h>\n#include <stdio.h>\n${ctx.pad('//', 0, 6)}\nint main(int argc, char **argv) {\n    int total = INT_MAX - ${ctx.int(0, 3)};\n    for (int i = 0; i < 5; i++) total += argc;\n    printf("%d\\n", total);\n    return 0;\n}\n` }); const c = runProc('gcc', ['-g', '-fsanitize=undefined', '-o', 'acc', 'acc.c'], { cwd: ctx.dir }); if (c.code) throw new Error(c.stderr); return { cmd: ['./acc'] }; },
  expect: /runtime error: signed integer overflow/, sig: first(/runtime error: /) });
def({ name: 'gcc-warn-unused', tool: 'gcc', cls: WARN, variants: 1,
  program: 'compile a scaling helper with -Wall',
  why: 'compile with -Wall; an unused local variable',
  gen(ctx) { files(ctx, { 'util.c': `int scale(int x) {\n    int unused_${ctx.name()} = ${ctx.int(1, 9)};\n    return x * 2;\n}\n` }); return { cmd: ['gcc', '-Wall', '-c', 'util.c'] }; },
  expect: /warning: unused variable/ });
def({ name: 'gcc-warn-implicit-decl', tool: 'gcc', cls: WARN, variants: 1,
  program: 'compile a program that prints the length of a string',
  why: 'compile C that calls strlen without including string.h (implicit declaration warning under gcc 12)',
  gen(ctx) { files(ctx, { 'len.c': `#include <stdio.h>\nint main(void) { printf("%d\\n", (int)strlen("${ctx.name()}")); return 0; }\n` }); return { cmd: ['gcc', '-o', 'len', 'len.c'] }; },
  expect: /implicit/ });
def({ name: 'c-stderr-progress', tool: 'c', cls: UNC, variants: 1,
  program: 'plugin loader that reports progress on stderr',
  why: 'C tool prints its loading progress to stderr',
  gen(ctx) { files(ctx, { 'load.c': `#include <stdio.h>\nint main(void) { int n = ${ctx.int(2, 6)}; for (int i = 1; i <= n; i++) fprintf(stderr, "loading plugin %d/%d\\n", i, n); puts("ready"); return 0; }\n` }); const c = runProc('gcc', ['-o', 'load', 'load.c'], { cwd: ctx.dir }); if (c.code) throw new Error(c.stderr); return { cmd: ['./load'] }; },
  expect: /loading plugin/ });
def({ name: 'valgrind-clean-summary', tool: 'valgrind', cls: UNC, variants: 2,
  program: 'run a small allocation test under valgrind',
  why: 'run a correct program under valgrind (no errors; valgrind prints its banner and summary on stderr)',
  gen(ctx) { files(ctx, { 'ok.c': `#include <stdio.h>\n#include <stdlib.h>\nint main(void) { int *p = malloc(${ctx.int(2, 9)} * sizeof(int)); p[0] = 1; printf("%d\\n", p[0]); free(p); return 0; }\n` }); const c = runProc('gcc', ['-g', '-o', 'ok', 'ok.c'], { cwd: ctx.dir }); if (c.code) throw new Error(c.stderr); return { cmd: ['valgrind', './ok'] }; },
  expect: /ERROR SUMMARY: 0 errors/ });
def({ name: 'gcc-normal', tool: 'gcc', cls: NORM, variants: 1,
  program: 'compile a C helper',
  why: 'compile a correct C file',
  gen(ctx) { files(ctx, { 'ok.c': `int add(int a, int b) { return a + b + ${ctx.int(0, 9)}; }\n` }); return { cmd: ['gcc', '-Wall', '-c', 'ok.c'] }; } });

// ================================================================ MAKE / CMAKE
def({ name: 'make-no-rule-config-h', tool: 'make', cls: FAIL, variants: 2,
  program: 'build the app with make',
  why: 'make all where main.o depends on a generated config.h that has no rule',
  gen(ctx) { files(ctx, { 'Makefile': `${ctx.pad('#', 0, 6)}all: app\napp: main.o\n\tcc -o app main.o\nmain.o: main.c config.h\n\tcc -c main.c\n`, 'main.c': 'int main(void){return 0;}\n' }); return { cmd: ['make'] }; },
  expect: /No rule to make target 'config\.h'/, sig: first(/^make: \*\*\* No rule/) });
def({ name: 'make-missing-separator', tool: 'make', cls: FAIL, variants: 2,
  program: 'build the app with make',
  why: 'Makefile whose recipe line is indented with spaces instead of a tab',
  gen(ctx) { files(ctx, { 'Makefile': `${ctx.pad('#', 0, 6)}build:\n    cc -o app main.c\n` }); return { cmd: ['make'] }; },
  expect: /missing separator/, sig: first(/missing separator/) });
def({ name: 'make-recipe-gcc-error', tool: 'make', cls: FAIL, variants: 2,
  program: 'build the server with make',
  why: 'make builds server.c which references an undeclared identifier MAX_CLIENTS',
  gen(ctx) { files(ctx, { 'Makefile': 'CFLAGS=-Wall\nserver: server.c\n\t$(CC) $(CFLAGS) -o server server.c\n', 'server.c': `${ctx.pad('//', 0, 8)}int main(void) {\n    int slots[MAX_CLIENTS];\n    (void)slots;\n    return 0;\n}\n` }); return { cmd: ['make'] }; },
  expect: /MAX_CLIENTS/, sig: first(/^server\.c:\d+:\d+: error: /) });
def({ name: 'make-recipe-protoc-missing', tool: 'make', cls: FAIL, variants: 2, extra: true,
  program: 'generate protobuf bindings with `make gen`',
  why: 'make gen runs protoc, which is not installed',
  gen(ctx) { files(ctx, { 'Makefile': `${ctx.pad('#', 0, 6)}gen:\n\tprotoc --python_out=. api.proto\n`, 'api.proto': 'syntax = "proto3";\n' }); return { cmd: ['make', 'gen'] }; },
  expect: /protoc/, sig: first(/protoc: (No such file|not found|command not found)/) });
def({ name: 'make-recipe-silent-check', tool: 'make', cls: FAIL, variants: 2,
  program: 'deploy with `make deploy` (which first checks the environment)',
  why: 'make deploy first runs a silent `@test -f .env` check which fails',
  gen(ctx) { files(ctx, { 'Makefile': `${ctx.pad('#', 0, 6)}deploy: check-env\n\t@echo deploying\ncheck-env:\n\t@test -f .env\n` }); return { cmd: ['make', 'deploy'] }; },
  expect: /Error 1/, sig: first(/^make: \*\*\* /) });
def({ name: 'make-circular-dropped', tool: 'make', cls: WARN, variants: 2,
  program: 'bundle the JavaScript sources with make',
  why: 'Makefile with a target that lists itself as a prerequisite (make drops the circular dependency)',
  gen(ctx) { files(ctx, { 'Makefile': `all: bundle.js\nbundle.js: bundle.js src.js\n\t@cat src.js > bundle.js\n`, 'src.js': `console.log(${ctx.int(1, 99)});\n` }); return { cmd: ['make'] }; },
  expect: /Circular/ });
def({ name: 'make-normal', tool: 'make', cls: NORM, variants: 1,
  program: 'build a hello-world C program with make',
  why: 'make a trivial C target (commands echoed to stdout)',
  gen(ctx) { files(ctx, { 'Makefile': 'hello: hello.c\n\tcc -o hello hello.c\n', 'hello.c': `int main(void){return ${ctx.int(0, 0)};}\n` }); return { cmd: ['make'] }; } });
def({ name: 'cmake-fatal-libfoo', tool: 'cmake', cls: FAIL, variants: 2,
  program: 'configure the C project with cmake',
  why: 'configure a project whose CMakeLists.txt aborts with message(FATAL_ERROR) when LIBFOO_DIR is unset',
  gen(ctx) { files(ctx, { 'CMakeLists.txt': `cmake_minimum_required(VERSION 3.16)\nproject(${ctx.name()} C)\n${ctx.pad('#', 0, 6)}if(NOT DEFINED LIBFOO_DIR)\n  message(FATAL_ERROR "LIBFOO_DIR is not set; pass -DLIBFOO_DIR=/path/to/libfoo")\nendif()\n` }); return { cmd: ['cmake', '-S', '.', '-B', 'build'] }; },
  expect: /LIBFOO_DIR is not set/, sig: first(/^CMake Error at /) });
def({ name: 'cmake-find-package-zorro', tool: 'cmake', cls: FAIL, variants: 2, extra: true,
  program: 'configure the project with cmake',
  why: 'configure a project that find_package(Zorro REQUIRED)s a package that is not installed',
  gen(ctx) { files(ctx, { 'CMakeLists.txt': `cmake_minimum_required(VERSION 3.16)\nproject(${ctx.name()} NONE)\n${ctx.pad('#', 0, 6)}find_package(Zorro 2.1 REQUIRED)\n` }); return { cmd: ['cmake', '-S', '.', '-B', 'build'] }; },
  expect: /Zorro/, sig: first(/^CMake Error at /) });
def({ name: 'cmake-deprecation-min-version', tool: 'cmake', cls: WARN, variants: 1,
  program: 'configure an older cmake project',
  why: 'configure an old project with cmake_minimum_required(VERSION 2.8)',
  gen(ctx) { files(ctx, { 'CMakeLists.txt': `cmake_minimum_required(VERSION 2.8)\nproject(${ctx.name()} NONE)\n` }); return { cmd: ['cmake', '-S', '.', '-B', 'build'] }; },
  expect: /Deprecation Warning/ });
def({ name: 'cmake-notice', tool: 'cmake', cls: UNC, variants: 1,
  program: 'configure a project that prints its build profile',
  why: 'configure a project that prints a message(NOTICE) banner (goes to stderr)',
  gen(ctx) { files(ctx, { 'CMakeLists.txt': `cmake_minimum_required(VERSION 3.16)\nproject(${ctx.name()} NONE)\nmessage(NOTICE "Building ${ctx.name()} with profile release")\n` }); return { cmd: ['cmake', '-S', '.', '-B', 'build'] }; },
  expect: /Building/ });

// ================================================================ GIT
const GIT_INIT = `git init -q -b main repo\ncd repo\n`;
function gitCase(ctx, script, extraCfg = '') { const env = gitEnv(ctx.dir, '[init]\n\tdefaultBranch = main\n' + extraCfg); setup(ctx, script, env); return env; }
def({ name: 'git-merge-conflict', tool: 'git', cls: FAIL, variants: 2, merge: true,
  program: 'merge the feature branch into main',
  why: 'merge a feature branch that edited the same line of src/app.txt as main',
  gen(ctx) {
    const br = `feature-${ctx.int(1, 99)}`;
    const env = gitCase(ctx, `${GIT_INIT}mkdir src; echo "greeting=hello" > src/app.txt; git add .; git commit -qm init\ngit checkout -qb ${br}\necho "greeting=hi ${ctx.name()}" > src/app.txt; git commit -qam feature\ngit checkout -q main\necho "greeting=hey ${ctx.name()}" > src/app.txt; git commit -qam main\n`);
    return { cmd: ['git', '-C', 'repo', 'merge', '--no-edit', br], env };
  },
  expect: /CONFLICT \(content\)/, sig: first(/^CONFLICT \(content\)/) });
def({ name: 'git-push-no-upstream', tool: 'git', cls: FAIL, variants: 3,
  program: 'push the new feature branch',
  why: 'git push on a new local branch that has no upstream configured',
  gen(ctx) {
    const br = `feature/${ctx.name()}-${ctx.int(1, 999)}`;
    const env = gitCase(ctx, `git init -q --bare remote.git\n${GIT_INIT}git remote add origin ../remote.git\necho a > a.txt; git add .; git commit -qm init; git push -q origin main\ngit checkout -qb ${br}\n`);
    return { cmd: ['git', '-C', 'repo', 'push'], env };
  },
  expect: /has no upstream branch/, sig: first(/^fatal: /) });
def({ name: 'git-pull-no-tracking', tool: 'git', cls: FAIL, variants: 2,
  program: 'pull the latest changes into the work-in-progress branch',
  why: 'git pull on a branch with no tracking information',
  gen(ctx) {
    const env = gitCase(ctx, `git init -q --bare remote.git\n${GIT_INIT}git remote add origin ../remote.git\necho a > a.txt; git add .; git commit -qm init; git push -q origin main\ngit checkout -qb wip-${ctx.int(1, 99)}\n`, '[pull]\n\trebase = false\n');
    return { cmd: ['git', '-C', 'repo', 'pull'], env };
  },
  expect: /no tracking information/, sig: first(/no tracking information/) });
def({ name: 'git-push-detached', tool: 'git', cls: FAIL, variants: 2,
  program: 'push the checked-out work',
  why: 'git push while in detached HEAD state (checked out a commit by sha)',
  gen(ctx) {
    const env = gitCase(ctx, `git init -q --bare remote.git\n${GIT_INIT}git remote add origin ../remote.git\nfor i in 1 2 ${ctx.int(3, 9)}; do echo $i > n.txt; git add .; git commit -qm "c$i"; done\ngit push -q origin main\ngit checkout -q HEAD~1\n`);
    return { cmd: ['git', '-C', 'repo', 'push'], env };
  },
  expect: /not currently on a branch/, sig: first(/^fatal: /) });
def({ name: 'git-checkout-would-overwrite', tool: 'git', cls: FAIL, variants: 2,
  program: 'switch to the release branch',
  why: 'switch branches with uncommitted changes to a file that differs between branches',
  gen(ctx) {
    const env = gitCase(ctx, `${GIT_INIT}echo v1 > settings.ini; git add .; git commit -qm init\ngit checkout -qb release; echo v2 > settings.ini; git commit -qam rel\ngit checkout -q main\necho "local ${ctx.name()}" > settings.ini\n`);
    return { cmd: ['git', '-C', 'repo', 'checkout', 'release'], env };
  },
  expect: /would be overwritten by checkout/, sig: first(/^error: /) });
def({ name: 'git-not-a-repo', tool: 'git', cls: FAIL, variants: 2,
  program: 'show the repository status',
  why: 'git status in a directory that is not a repository',
  gen(ctx) { const env = gitEnv(ctx.dir); return { cmd: ['git', 'status'], env: { ...env, GIT_CEILING_DIRECTORIES: path.dirname(ctx.dir) } }; },
  expect: /not a git repository/, sig: first(/^fatal: /) });
def({ name: 'git-rebase-conflict', tool: 'git', cls: FAIL, variants: 2, merge: true,
  program: 'rebase the topic branch onto main',
  why: 'rebase a topic branch onto main where both changed the same line',
  gen(ctx) {
    const env = gitCase(ctx, `${GIT_INIT}echo "title=${ctx.name()}" > README; git add .; git commit -qm init\ngit checkout -qb topic; echo "title=topic ${ctx.int(1, 99)}" > README; git commit -qam "update title"\ngit checkout -q main; echo "title=main ${ctx.int(1, 99)}" > README; git commit -qam "main title"\ngit checkout -q topic\n`);
    return { cmd: ['git', '-C', 'repo', 'rebase', 'main'], env };
  },
  expect: /could not apply/, sig: first(/^error: could not apply/) });
def({ name: 'git-pathspec-no-match', tool: 'git', cls: FAIL, variants: 2, extra: true,
  program: 'stage src/main.py',
  why: 'git add a misspelled path',
  gen(ctx) { const env = gitCase(ctx, `${GIT_INIT}mkdir src; echo x > src/main.py; git add .; git commit -qm init\n`); return { cmd: ['git', '-C', 'repo', 'add', 'src/mian.py'], env }; },
  expect: /did not match any files/, sig: first(/^fatal: |^error: /) });
def({ name: 'git-push-rejected-fetch-first', tool: 'git', cls: FAIL, variants: 2, extra: true,
  program: 'push the local commit to the shared remote',
  why: 'git push to a remote that has commits the local branch lacks (non-fast-forward)',
  gen(ctx) {
    const env = gitCase(ctx, `git init -q --bare remote.git\n${GIT_INIT}git remote add origin ../remote.git\necho a > a.txt; git add .; git commit -qm init; git push -q -u origin main\ncd ..; git clone -q -b main remote.git other; cd other; echo b > b.txt; git add .; git commit -qm other; git push -q origin main; cd ../repo\necho c > c.txt; git add .; git commit -qm "local ${ctx.int(1, 99)}"\n`);
    return { cmd: ['git', '-C', 'repo', 'push'], env };
  },
  expect: /failed to push some refs/, sig: first(/^error: failed to push/) });
def({ name: 'git-unrelated-histories', tool: 'git', cls: FAIL, variants: 2, extra: true,
  program: 'merge an imported branch into main',
  why: 'merge a branch from an unrelated repository',
  gen(ctx) {
    const br = `imported-${ctx.int(1, 99)}`;
    const env = gitCase(ctx, `git init -q -b main other; cd other; echo o > o.txt; git add .; git commit -qm other; cd ..\n${GIT_INIT}echo r > r.txt; git add .; git commit -qm repo; git fetch -q ../other main:${br}\n`);
    return { cmd: ['git', '-C', 'repo', 'merge', '--no-edit', br], env };
  },
  expect: /unrelated histories/, sig: first(/^fatal: /) });
def({ name: 'git-commit-nothing', tool: 'git', cls: FAIL, variants: 2, extra: true, use: 'stdout',
  program: 'commit the current changes',
  why: 'git commit -m when the working tree is clean (message goes to stdout)',
  gen(ctx) { const env = gitCase(ctx, `${GIT_INIT}echo x > x.txt; git add .; git commit -qm init\n`); return { cmd: ['git', '-C', 'repo', 'commit', '-m', `fix ${ctx.name()}`], env }; },
  expect: /nothing to commit/, sig: first(/^nothing to commit/) });
def({ name: 'git-hint-initial-branch', tool: 'git', cls: WARN, variants: 2,
  program: 'create a new repository with git init',
  why: 'git init with no init.defaultBranch configured (hint: block about the initial branch name)',
  gen(ctx) { const env = gitEnv(ctx.dir); return { cmd: ['git', 'init', `proj-${ctx.name()}`], env }; },
  expect: /^hint: /m });
def({ name: 'git-detached-head-note', tool: 'git', cls: WARN, variants: 2,
  program: 'check out the previous commit to inspect it',
  why: 'check out an older commit by sha (git prints the detached HEAD advice)',
  gen(ctx) { const env = gitCase(ctx, `${GIT_INIT}for i in 1 2 ${ctx.int(3, 6)}; do echo $i > n; git add .; git commit -qm c$i; done\n`); return { cmd: ['bash', '-c', 'cd repo && git checkout "$(git rev-parse HEAD~1)"'], env }; },
  expect: /detached HEAD/ });
def({ name: 'git-crlf-warning', tool: 'git', cls: WARN, variants: 1,
  program: 'stage new notes in a repository configured with core.autocrlf=true',
  why: 'git add a LF file with core.autocrlf=true',
  gen(ctx) { const env = gitCase(ctx, `${GIT_INIT}git config core.autocrlf true\nprintf 'a\\nb\\n' > notes-${ctx.int(1, 9)}.txt\n`); return { cmd: ['git', '-C', 'repo', 'add', '.'], env }; },
  expect: /CRLF/ });
def({ name: 'git-switch-info', tool: 'git', cls: UNC, variants: 1,
  program: 'create and switch to a fix branch',
  why: 'git switch -c creates a new branch ("Switched to a new branch" on stderr)',
  gen(ctx) { const env = gitCase(ctx, `${GIT_INIT}echo x > x; git add .; git commit -qm init\n`); return { cmd: ['git', '-C', 'repo', 'switch', '-c', `fix/${ctx.name()}-${ctx.int(1, 99)}`], env }; },
  expect: /Switched to a new branch/ });
def({ name: 'git-clone-info', tool: 'git', cls: UNC, variants: 1,
  program: 'clone a local repository',
  why: 'git clone a local bare repository ("Cloning into ..." on stderr)',
  gen(ctx) { const env = gitCase(ctx, `${GIT_INIT}echo x > x; git add .; git commit -qm init; cd ..; git clone -q --bare repo src.git\n`); return { cmd: ['git', 'clone', 'src.git', `work-${ctx.name()}`], env }; },
  expect: /Cloning into/ });
def({ name: 'git-push-progress', tool: 'git', cls: UNC, variants: 1,
  program: 'push main to a new remote for the first time',
  why: 'first git push -u of main to a local bare remote (ref update summary on stderr)',
  gen(ctx) { const env = gitCase(ctx, `git init -q --bare remote.git\n${GIT_INIT}git remote add origin ../remote.git; echo ${ctx.int(1, 9)} > x; git add .; git commit -qm init\n`); return { cmd: ['git', '-C', 'repo', 'push', '-u', 'origin', 'main'], env }; },
  expect: /\[new branch\]/ });
def({ name: 'git-normal', tool: 'git', cls: NORM, variants: 1,
  program: 'show the commit log in one-line format',
  why: 'git log --oneline in a small repository',
  gen(ctx) { const env = gitCase(ctx, `${GIT_INIT}echo x > x; git add .; git commit -qm "init ${ctx.name()}"\n`); return { cmd: ['git', '-C', 'repo', 'log', '--oneline'], env }; } });

// ================================================================ PERL
def({ name: 'perl-die-open-conf', tool: 'perl', cls: FAIL, variants: 2,
  program: 'print the application config file',
  why: 'open the app config with `open ... or die "Can\'t open $path: $!"`; file missing',
  gen(ctx) { files(ctx, { 'load.pl': `use strict;\nuse warnings;\n${ctx.pad('#', 0, 8)}my $path = shift // "${ctx.dir}/etc/app.conf";\nopen(my $fh, '<', $path) or die "Can't open $path: $!";\nprint while <$fh>;\n` }); return { cmd: ['perl', 'load.pl'] }; },
  expect: /Can't open/, sig: first(/^Can't open /) });
def({ name: 'perl-syntax-error', tool: 'perl', cls: FAIL, variants: 2,
  program: 'print whether the report has many rows',
  why: 'perl report script with a missing closing parenthesis in an if condition',
  gen(ctx) { files(ctx, { 'report.pl': `use strict;\nuse warnings;\n${ctx.pad('#', 0, 8)}my @rows = (${ctx.int(1, 9)}, ${ctx.int(1, 9)});\nif (scalar(@rows) > 1 {\n    print "many\\n";\n}\n` }); return { cmd: ['perl', 'report.pl'] }; },
  expect: /syntax error/, sig: first(/^syntax error at /) });
def({ name: 'perl-strict-global-symbol', tool: 'perl', cls: FAIL, variants: 2, extra: true,
  program: 'print the sum of a list',
  why: 'perl script under use strict uses $total without declaring it',
  gen(ctx) { files(ctx, { 'sum.pl': `use strict;\nuse warnings;\n${ctx.pad('#', 0, 8)}my @xs = (${ctx.int(1, 9)}, ${ctx.int(1, 9)});\n$total += $_ for @xs;\nprint "$total\\n";\n` }); return { cmd: ['perl', 'sum.pl'] }; },
  expect: /Global symbol/, sig: first(/^Global symbol /) });
def({ name: 'perl-cant-locate-module', tool: 'perl', cls: FAIL, variants: 2, extra: true,
  program: 'stream-parse a CSV file with a CPAN module',
  why: 'perl script uses a CPAN module (Text::CSV_XS::Stream) that is not installed',
  gen(ctx) { files(ctx, { 'csv.pl': `${ctx.pad('#', 0, 6)}use strict;\nuse Text::CSV_XS::Stream;\nprint "ok\\n";\n` }); return { cmd: ['perl', 'csv.pl'] }; },
  expect: /Can't locate/, sig: first(/^Can't locate /) });
def({ name: 'perl-undefined-sub', tool: 'perl', cls: FAIL, variants: 2, extra: true,
  program: 'normalise and print rows',
  why: 'perl script calls normalize_row() which was never defined',
  gen(ctx) { files(ctx, { 'etl.pl': `use strict;\nuse warnings;\n${ctx.pad('#', 0, 8)}my @rows = ("${ctx.name()}", "${ctx.name()}");\nprint normalize_row($_), "\\n" for @rows;\n` }); return { cmd: ['perl', 'etl.pl'] }; },
  expect: /Undefined subroutine/, sig: first(/^Undefined subroutine/) });
def({ name: 'perl-rec-eval-skip-row', tool: 'perl', cls: REC, variants: 2,
  program: 'parse six rows, skipping (and reporting) any that fail',
  why: 'parse rows inside eval { }, warn "error: failed to parse row N: ...; skipping" and continue',
  gen(ctx) { const bad = ctx.int(2, 5); files(ctx, { 'parse.pl': `use strict;\nuse warnings;\nmy $n = 0;\nfor my $row (1 .. 6) {\n    eval {\n        die "unexpected field count 3\\n" if $row == ${bad};\n        $n++;\n        1;\n    } or do {\n        my $err = $@; chomp $err;\n        print STDERR "error: failed to parse row $row: $err; skipping\\n";\n    };\n}\nprint "parsed $n rows\\n";\n` }); return { cmd: ['perl', 'parse.pl'] }; },
  expect: /failed to parse row/, sig: first(/^error: failed to parse row/) });
def({ name: 'perl-warn-uninitialized', tool: 'perl', cls: WARN, variants: 1,
  program: 'greet a user by name',
  why: 'perl with warnings interpolates an undefined hash value',
  gen(ctx) { files(ctx, { 'greet.pl': `use strict;\nuse warnings;\n${ctx.pad('#', 0, 5)}my %user = (id => ${ctx.int(1, 99)});\nprint "hello $user{name}\\n";\n` }); return { cmd: ['perl', 'greet.pl'] }; },
  expect: /Use of uninitialized value/ });
def({ name: 'perl-warn-used-once', tool: 'perl', cls: WARN, variants: 2,
  program: 'set a timeout in a config package variable',
  why: 'perl -w script assigns a package variable that is never used again ("used only once: possible typo")',
  gen(ctx) { files(ctx, { 'cfg.pl': `${ctx.pad('#', 0, 5)}$Config::timeot = ${ctx.int(5, 60)};\nprint "ok\\n";\n` }); return { cmd: ['perl', '-w', 'cfg.pl'] }; },
  expect: /used only once/ });
def({ name: 'perl-normal', tool: 'perl', cls: NORM, variants: 1,
  program: 'print the sum of two numbers',
  why: 'perl one-liner summing numbers',
  gen(ctx) { return { cmd: ['perl', '-e', `my $s = 0; $s += $_ for (${ctx.int(1, 9)}, ${ctx.int(1, 9)}); print "$s\\n";`] }; } });

// ================================================================ SHELL / COREUTILS
def({ name: 'bash-command-not-found-kubectlx', tool: 'bash', cls: FAIL, variants: 3,
  program: 'deploy the Kubernetes manifests in k8s/',
  why: 'deploy script calls a misspelled kubectl binary (kubectlx)',
  gen(ctx) { files(ctx, { 'deploy.sh': `#!/bin/bash\n${ctx.pad('#', 0, 6)}echo "deploying ${ctx.name()}" >/dev/null\nkubectlx apply -f k8s/\n` }); return ctx.v === 3 ? { cmd: ['bash', '-c', 'kubectlx apply -f k8s/'] } : { cmd: ['bash', ctx.v === 1 ? 'deploy.sh' : path.join(ctx.dir, 'deploy.sh')] }; },
  expect: /kubectlx: command not found/, sig: first(/kubectlx: command not found/) });
def({ name: 'bash-unbound-variable', tool: 'bash', cls: FAIL, variants: 2,
  program: 'release script that prints the deployment target',
  why: 'set -u release script references DEPLOY_ENV, which is not exported',
  gen(ctx) { files(ctx, { 'release.sh': `#!/bin/bash\nset -euo pipefail\n${ctx.pad('#', 0, 6)}echo "release ${ctx.int(1, 9)}.${ctx.int(0, 9)}" >/dev/null\necho "target: $DEPLOY_ENV"\n` }); return { cmd: ['bash', 'release.sh'] }; },
  expect: /unbound variable/, sig: first(/unbound variable/) });
def({ name: 'bash-permission-denied', tool: 'bash', cls: FAIL, variants: 2,
  program: 'run the project\'s test script',
  why: 'run a helper script that was checked out without the executable bit',
  gen(ctx) { fs.writeFileSync(path.join(ctx.dir, 'run-tests.sh'), `#!/bin/sh\necho ${ctx.int(1, 9)}\n`, { mode: 0o644 }); return { cmd: ['bash', '-c', './run-tests.sh'] }; },
  expect: /Permission denied/, sig: first(/Permission denied/) });
def({ name: 'bash-redirect-missing-dir', tool: 'bash', cls: FAIL, variants: 2,
  program: 'write the build banner into logs/build.log',
  why: 'redirect build output into logs/ which was never created',
  gen(ctx) { return { cmd: ['bash', '-c', `echo "build ${ctx.int(1, 99)}" > ${ctx.dir}/logs/build.log`] }; },
  expect: /No such file or directory/, sig: first(/No such file or directory/) });
def({ name: 'dash-not-found-protoc', tool: 'sh', cls: FAIL, variants: 2,
  program: 'generate Go protobuf bindings (POSIX sh script)',
  why: 'POSIX sh build script calls protoc, which is not installed',
  gen(ctx) { files(ctx, { 'gen.sh': `#!/bin/sh\n${ctx.pad('#', 0, 5)}set -e\nprotoc --go_out=. api.proto\n` }); return { cmd: ['sh', 'gen.sh'] }; },
  expect: /protoc: not found/, sig: first(/protoc: not found/) });
def({ name: 'bash-syntax-eof', tool: 'bash', cls: FAIL, variants: 2, extra: true,
  program: 'report whether the build directory exists',
  why: 'bash script with an if block missing its fi',
  gen(ctx) { files(ctx, { 'check.sh': `#!/bin/bash\n${ctx.pad('#', 0, 5)}if [ -d build ]; then\n  echo "build exists ${ctx.int(1, 9)}"\n` }); return { cmd: ['bash', 'check.sh'] }; },
  expect: /syntax error/, sig: first(/syntax error/) });
def({ name: 'bash-set-e-grep-silent', tool: 'bash', cls: FAIL, variants: 2,
  program: 'pre-commit check that the changelog has an Unreleased section',
  why: 'set -e pre-commit script greps quietly for a changelog entry; grep finds nothing so the script exits 1 silently',
  gen(ctx) { files(ctx, { 'CHANGELOG.md': `# Changelog\n\n## ${ctx.int(1, 3)}.${ctx.int(0, 9)}.0\n- initial\n`, 'precommit.sh': `#!/bin/bash\nset -e\ngrep -q "## Unreleased" CHANGELOG.md\necho ok\n` }); return { cmd: ['bash', 'precommit.sh'] }; },
  check: (r) => r.code === 1 && r.stderr === '' });
def({ name: 'bash-env-guard-exit3', tool: 'bash', cls: FAIL, variants: 2,
  program: 'start script that requires a .env file',
  why: 'start script exits 3 without a message when .env is missing',
  gen(ctx) { files(ctx, { 'start.sh': `#!/bin/bash\n${ctx.pad('#', 0, 4)}[ -f .env ] || exit 3\necho starting\n` }); return { cmd: ['bash', 'start.sh'] }; },
  check: (r) => r.code === 3 && r.stderr === '' });
def({ name: 'cp-cannot-stat-dist', tool: 'coreutils', cls: FAIL, variants: 2,
  program: 'copy the built bundle into public/',
  why: 'copy the built bundle dist/app.js into public/ before the build ran',
  gen(ctx) { fs.mkdirSync(path.join(ctx.dir, 'public')); return { cmd: ['cp', ctx.v === 1 ? 'dist/app.js' : path.join(ctx.dir, 'dist/app.js'), 'public/'] }; },
  expect: /cannot stat/, sig: first(/^cp: cannot stat/) });
def({ name: 'mkdir-exists', tool: 'coreutils', cls: FAIL, variants: 2, extra: true,
  program: 'create the build directory',
  why: 'mkdir build without -p when build/ already exists',
  gen(ctx) { fs.mkdirSync(path.join(ctx.dir, 'build')); return { cmd: ['mkdir', 'build'] }; },
  expect: /File exists/, sig: first(/^mkdir: /) });
def({ name: 'bash-rec-fallback-mirror', tool: 'bash', cls: REC, variants: 2,
  program: 'fetch a cached artifact, rebuilding if the cache misses',
  why: 'script tries to copy a cached artifact, logs "error: ... falling back to rebuild" and continues (exit 0)',
  gen(ctx) { files(ctx, { 'fetch.sh': `#!/bin/bash\nif ! err=$(cp cache/artifact-${ctx.int(100, 999)}.tgz . 2>&1); then\n  echo "error: cache miss ($err); falling back to rebuild" >&2\nfi\necho rebuilt\n` }); return { cmd: ['bash', 'fetch.sh'] }; },
  expect: /cache miss/, sig: first(/^error: cache miss/) });
def({ name: 'bash-warn-here-doc', tool: 'bash', cls: WARN, variants: 1,
  program: 'print release notes from a here-document',
  why: 'bash script with an unterminated here-document (bash warns, still runs)',
  gen(ctx) { files(ctx, { 'notes.sh': `#!/bin/bash\ncat <<EOF\nrelease ${ctx.int(1, 9)}\n` }); return { cmd: ['bash', 'notes.sh'] }; },
  expect: /warning: here-document/ });
def({ name: 'dd-stats', tool: 'coreutils', cls: UNC, variants: 1,
  program: 'create a zero-filled disk image with dd',
  why: 'create a zero-filled image with dd (dd prints transfer statistics on stderr)',
  gen(ctx) { return { cmd: ['dd', 'if=/dev/zero', `of=${ctx.dir}/disk.img`, 'bs=4k', `count=${ctx.int(2, 64)}`] }; },
  expect: /records in/ });
def({ name: 'shell-normal', tool: 'bash', cls: NORM, variants: 1,
  program: 'count the lines of a generated file',
  why: 'count lines of a generated file',
  gen(ctx) { return { cmd: ['bash', '-c', `seq 1 ${ctx.int(3, 40)} > n.txt && wc -l < n.txt`] }; } });

// ---- tar / gzip
def({ name: 'tar-cannot-stat', tool: 'tar', cls: FAIL, variants: 2,
  program: 'back up the config and data directories into a tarball',
  why: 'archive config/ and data/ where config/ does not exist',
  gen(ctx) { fs.mkdirSync(path.join(ctx.dir, 'data')); fs.writeFileSync(path.join(ctx.dir, 'data', 'x'), String(ctx.int(1, 99))); return { cmd: ['tar', 'czf', `backup-${ctx.int(1, 999)}.tgz`, 'config', 'data'] }; },
  expect: /Cannot stat/, sig: first(/Cannot stat/) });
def({ name: 'tar-not-gzip', tool: 'tar', cls: FAIL, variants: 2,
  program: 'extract the downloaded release tarball',
  why: 'extract a downloaded release.tar.gz that is actually an HTML error page',
  gen(ctx) { files(ctx, { 'release.tar.gz': `<!DOCTYPE html><html><body>404 ${ctx.hex(6)}</body></html>\n` }); return { cmd: ['tar', 'xzf', 'release.tar.gz'] }; },
  expect: /not in gzip format/, sig: first(/not in gzip format/) });
def({ name: 'gzip-unexpected-eof', tool: 'gzip', cls: FAIL, variants: 2, extra: true,
  program: 'decompress an uploaded log archive',
  why: 'gunzip a log archive that was truncated during upload',
  gen(ctx) {
    const name = `app-${ctx.int(1, 28)}.log`;
    setup(ctx, `seq 1 ${ctx.int(20000, 60000)} > ${name}; gzip ${name}; head -c ${ctx.int(2000, 9000)} ${name}.gz > t; mv t ${name}.gz`);
    return { cmd: ['gzip', '-d', `${name}.gz`] };
  },
  expect: /unexpected end of file/, sig: first(/unexpected end of file/) });
def({ name: 'tar-removing-leading-slash', tool: 'tar', cls: WARN, variants: 2,
  program: 'archive the site directory by absolute path',
  why: 'archive a directory given by absolute path (tar strips the leading /)',
  gen(ctx) { fs.mkdirSync(path.join(ctx.dir, 'site')); fs.writeFileSync(path.join(ctx.dir, 'site', 'index.html'), `<p>${ctx.name()}</p>`); return { cmd: ['tar', 'czf', path.join(ctx.dir, 'site.tgz'), path.join(ctx.dir, 'site')] }; },
  expect: /Removing leading/ });
def({ name: 'tar-removing-dotdot', tool: 'tar', cls: WARN, variants: 1,
  program: 'archive the shared sibling directory',
  why: 'archive a sibling directory via ../ (tar strips the leading ../)',
  gen(ctx) { fs.mkdirSync(path.join(ctx.dir, 'shared')); fs.writeFileSync(path.join(ctx.dir, 'shared', 'a'), 'a'); fs.mkdirSync(path.join(ctx.dir, 'work')); return { cmd: ['bash', '-c', `cd work && tar cf ../shared-${ctx.int(1, 9)}.tar ../shared`] }; },
  expect: /Removing leading/ });
def({ name: 'gzip-verbose', tool: 'gzip', cls: UNC, variants: 1,
  program: 'compress a data file verbosely',
  why: 'gzip -v a file (compression ratio printed on stderr)',
  gen(ctx) { setup(ctx, `seq 1 ${ctx.int(500, 5000)} > data.txt`); return { cmd: ['gzip', '-v', 'data.txt'] }; },
  expect: /replaced with/ });

// ---- jq / sqlite3
def({ name: 'jq-cannot-index-array', tool: 'jq', cls: FAIL, variants: 2,
  program: 'extract .name from an API response with jq',
  why: 'jq .name on an API response that is a JSON array',
  gen(ctx) { return { cmd: ['jq', '.name'], input: JSON.stringify(Array.from({ length: ctx.int(1, 4) }, () => ({ name: ctx.name() }))) }; },
  expect: /Cannot index array/, sig: first(/^jq: error/) });
def({ name: 'jq-parse-error', tool: 'jq', cls: FAIL, variants: 2, extra: true,
  program: 'pretty-print a JSON log record with jq',
  why: 'pipe a log file with two concatenated objects missing a separator into jq',
  gen(ctx) { return { cmd: ['jq', '.'], input: `{"level":"info","n":${ctx.int(1, 99)}\n"msg":"started"}\n` }; },
  expect: /parse error/, sig: first(/parse error/) });
def({ name: 'sqlite-no-such-table', tool: 'sqlite3', cls: FAIL, variants: 2,
  program: 'look up a user by id in the SQLite database',
  why: 'query a users table in a fresh SQLite database before the migration ran',
  gen(ctx) { return { cmd: ['sqlite3', path.join(ctx.dir, 'app.db')], input: `SELECT id, email FROM users WHERE id = ${ctx.int(1, 99)};\n` }; },
  expect: /no such table: users/, sig: first(/no such table/) });
def({ name: 'sqlite-unique-email', tool: 'sqlite3', cls: FAIL, variants: 2, extra: true,
  program: 'seed the SQLite users table',
  why: 'seed script inserts the same email twice into a UNIQUE column',
  gen(ctx) { const e = `${ctx.name()}@example.com`; return { cmd: ['sqlite3', path.join(ctx.dir, 'seed.db')], input: `CREATE TABLE users(id INTEGER PRIMARY KEY, email TEXT UNIQUE);\nINSERT INTO users(email) VALUES('${e}');\nINSERT INTO users(email) VALUES('${e}');\n` }; },
  expect: /UNIQUE constraint failed/, sig: first(/UNIQUE constraint failed/) });

// ---- psql / redis / curl
const PSQL = ['psql', '-h', '127.0.0.1', '-U', 'postgres', '-X', '-q'];
def({ name: 'psql-relation-missing', tool: 'psql', cls: FAIL, variants: 2,
  program: 'count a customer\'s archived orders in PostgreSQL',
  why: 'query orders_archive, a table that was never created',
  gen(ctx) { return { cmd: [...PSQL, '-c', `SELECT count(*) FROM orders_archive WHERE customer_id = ${ctx.int(1, 9999)}`] }; },
  expect: /relation "orders_archive" does not exist/, sig: first(/^ERROR: /) });
def({ name: 'psql-syntax-form', tool: 'psql', cls: FAIL, variants: 2, extra: true,
  program: 'list customers in PostgreSQL',
  why: 'run a query with FROM misspelled as FORM',
  gen(ctx) { return { cmd: [...PSQL, '-c', `SELECT id, name FORM customers LIMIT ${ctx.int(1, 50)}`] }; },
  expect: /syntax error at or near/, sig: first(/^ERROR: /) });
def({ name: 'psql-role-missing', tool: 'psql', cls: FAIL, variants: 2,
  program: 'run a query as the read-only application role',
  why: 'connect as role app_readonly, which does not exist on the local server',
  gen(ctx) { return { cmd: ['psql', '-h', '127.0.0.1', '-U', 'app_readonly', '-d', 'postgres', '-X', '-c', `SELECT ${ctx.int(1, 9)}`] }; },
  expect: /role "app_readonly" does not exist/, sig: first(/^psql: error: /) });
def({ name: 'psql-script-division-by-zero', tool: 'psql', cls: FAIL, variants: 2,
  program: 'run the hit-ratio report script (ON_ERROR_STOP=1)',
  why: 'report.sql with ON_ERROR_STOP computes a ratio that divides by zero',
  gen(ctx) { files(ctx, { 'report.sql': `${ctx.pad('--', 0, 5)}CREATE TEMP TABLE t(hits int, misses int);\nINSERT INTO t VALUES (${ctx.int(1, 99)}, 0);\nSELECT hits / misses AS ratio FROM t;\n` }); return { cmd: [...PSQL, '-v', 'ON_ERROR_STOP=1', '-f', path.join(ctx.dir, 'report.sql')] }; },
  expect: /division by zero/, sig: first(/ERROR: +division by zero/) });
def({ name: 'psql-duplicate-key', tool: 'psql', cls: FAIL, variants: 2, extra: true,
  program: 'seed a temporary users table (ON_ERROR_STOP=1)',
  why: 'seed a temp table twice with the same primary key under ON_ERROR_STOP',
  gen(ctx) { const id = ctx.int(1, 500); files(ctx, { 'seed.sql': `${ctx.pad('--', 0, 5)}CREATE TEMP TABLE users_tmp(id int PRIMARY KEY, name text);\nINSERT INTO users_tmp VALUES (${id}, 'a');\nINSERT INTO users_tmp VALUES (${id}, 'b');\n` }); return { cmd: [...PSQL, '-v', 'ON_ERROR_STOP=1', '-f', 'seed.sql'] }; },
  expect: /duplicate key value/, sig: first(/ERROR: +duplicate key/) });
def({ name: 'psql-rec-script-continues', tool: 'psql', cls: REC, variants: 2,
  program: 'run a migration script with psql -f (no ON_ERROR_STOP)',
  why: 'migration script without ON_ERROR_STOP: one statement fails (column missing), psql reports it and continues, exit 0',
  gen(ctx) { files(ctx, { 'migrate.sql': `CREATE TEMP TABLE accounts(id int, email text);\nUPDATE accounts SET emial_verified = true WHERE id = ${ctx.int(1, 99)};\nSELECT count(*) FROM accounts;\n` }); return { cmd: [...PSQL, '-f', 'migrate.sql'] }; },
  expect: /column "emial_verified"/, sig: first(/ERROR: /) });
def({ name: 'psql-warning-no-transaction', tool: 'psql', cls: WARN, variants: 1,
  program: 'run a query and then COMMIT',
  why: 'run COMMIT outside a transaction',
  gen(ctx) { return { cmd: [...PSQL, '-c', `SELECT ${ctx.int(1, 9)}`, '-c', 'COMMIT'] }; },
  expect: /WARNING: +there is no transaction in progress/ });
def({ name: 'psql-notice-drop-if-exists', tool: 'psql', cls: UNC, variants: 2,
  program: 'drop a scratch table if it exists',
  why: 'DROP TABLE IF EXISTS on a table that does not exist (NOTICE ... skipping)',
  gen(ctx) { return { cmd: [...PSQL, '-c', `DROP TABLE IF EXISTS pg_temp.scratch_${ctx.alnum(6)}`] }; },
  expect: /NOTICE/ });
def({ name: 'psql-normal', tool: 'psql', cls: NORM, variants: 1,
  program: 'compute a value with SELECT',
  why: 'SELECT a constant',
  gen(ctx) { return { cmd: [...PSQL, '-At', '-c', `SELECT ${ctx.int(1, 999)} + 1`] }; } });
def({ name: 'redis-conn-refused', tool: 'redis-cli', cls: FAIL, variants: 2,
  program: 'ping the Redis instance configured for the app',
  why: 'redis-cli ping against a port where no Redis runs',
  gen(ctx) { return { cmd: ['redis-cli', '-p', String(ctx.closedPort()), 'ping'] }; },
  expect: /Connection refused/, sig: first(/^Could not connect to Redis/) });
def({ name: 'redis-wrongtype', tool: 'redis-cli', cls: FAIL, variants: 2, extra: true,
  program: 'push a job onto a Redis list (redis-cli -e)',
  why: 'LPUSH onto a key that holds a string (redis-cli -e makes the error reply fail the run)',
  gen(ctx) { const key = `heldout:tmp:${ctx.alnum(10)}`; runProc('redis-cli', ['set', key, 'x', 'EX', '30']); return { cmd: ['redis-cli', '-e', 'lpush', key, `job-${ctx.int(1, 999)}`] }; },
  expect: /WRONGTYPE/, sig: first(/WRONGTYPE/) });
def({ name: 'redis-normal', tool: 'redis-cli', cls: NORM, variants: 1,
  program: 'ping the local Redis',
  why: 'redis-cli ping',
  gen(ctx) { return { cmd: ['redis-cli', 'ping'] }; } });
def({ name: 'curl-conn-refused', tool: 'curl', cls: FAIL, variants: 2,
  program: 'query the local API\'s status endpoint with curl',
  why: 'curl -sS a local API port that nothing listens on',
  gen(ctx) { return { cmd: ['curl', '-sS', `http://127.0.0.1:${ctx.closedPort()}/api/v1/status`] }; },
  expect: /Failed to connect/, sig: first(/^curl: \(7\)/) });
def({ name: 'curl-conn-refused-retry-wrapper', fid: 'curl-conn-refused', tool: 'bash', cls: FAIL, variants: 2,
  program: 'wait-for-API script that polls the local status endpoint with curl a few times',
  why: 'bash retry loop around the same curl -sS to a closed local API port; prints only the final attempt and exits 1',
  gen(ctx) {
    const n = ctx.int(2, 4), port = ctx.closedPort();
    files(ctx, { 'wait-api.sh': `#!/bin/bash\nMAX=${n}\nfor i in $(seq 1 $MAX); do\n  if out=$(curl -sS http://127.0.0.1:${port}/api/v1/status 2>&1); then echo "$out"; exit 0; fi\n  sleep 0.1\ndone\necho "retry $MAX/$MAX failed: $out" >&2\nexit 1\n` });
    return { cmd: ['bash', 'wait-api.sh'] };
  },
  expect: /^retry \d+\/\d+ failed: curl: \(7\)/m, sig: first(/^retry \d+\/\d+ failed/) });
def({ name: 'curl-404-fail', tool: 'curl', cls: FAIL, variants: 2, needsHttp: true,
  program: 'fetch the API status JSON from the local server with curl -f',
  why: 'curl -fsS a path that does not exist on a local static file server',
  gen(ctx) { return { cmd: ['curl', '-fsS', `http://127.0.0.1:${HTTP.port}/api/v${ctx.int(1, 3)}/status.json`] }; },
  expect: /returned error: 404/, sig: first(/^curl: \(22\)/) });
def({ name: 'curl-progress-meter', tool: 'curl', cls: UNC, variants: 1, needsHttp: true,
  program: 'download index.html from the local server with curl -o',
  why: 'download a file with curl -o (progress meter on stderr)',
  gen(ctx) { return { cmd: ['curl', '-o', path.join(ctx.dir, 'index.html'), `http://127.0.0.1:${HTTP.port}/index.html?v=${ctx.int(1, 99)}`] }; },
  expect: /% Total/ });
def({ name: 'curl-normal', tool: 'curl', cls: NORM, variants: 1, needsHttp: true,
  program: 'fetch index.html from the local server with curl',
  why: 'curl -fsS a file that exists on the local static server',
  gen(ctx) { return { cmd: ['curl', '-fsS', `http://127.0.0.1:${HTTP.port}/index.html`] }; } });

// ---------------------------------------------------------------- local http server for curl cases
const HTTP = { port: 0, proc: null };
async function startHttp() {
  const ctx = mkctx('http-server', 0);
  fs.writeFileSync(path.join(ctx.dir, 'index.html'), '<h1>ok</h1>\n');
  HTTP.dir = ctx.dir;
  HTTP.port = ctx.closedPort();
  HTTP.proc = spawn('python3', ['-m', 'http.server', String(HTTP.port), '--bind', '127.0.0.1'], { cwd: ctx.dir, stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    const r = spawnSync('curl', ['-fsS', '-o', '/dev/null', `http://127.0.0.1:${HTTP.port}/index.html`]);
    if (r.status === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('http server did not start');
}
function stopHttp() { if (HTTP.proc) { HTTP.proc.kill('SIGTERM'); HTTP.proc = null; } if (HTTP.dir) fs.rmSync(HTTP.dir, { recursive: true, force: true }); }

// ---------------------------------------------------------------- main loop
const cases = [];
const problems = [];
async function main() {
  const defs = DEFS.filter((d) => (ALL || ONLY || !d.extra) && (!ONLY || d.name.startsWith(ONLY)));
  if (defs.some((d) => d.needsHttp)) await startHttp();
  try {
    for (const d of defs) {
      for (let v = 1; v <= d.variants; v++) {
        const id = `${d.name}#${v}`;
        const ctx = mkctx(d.name, v);
        let r = null;
        try {
          const spec = d.gen(ctx);
          const [cmd, ...args] = spec.cmd;
          r = runProc(cmd, args, { cwd: ctx.dir, env: spec.env || {}, input: spec.input ?? '', merge: d.merge || spec.merge });
          const use = d.merge || spec.merge ? 'stdout' : (d.use || 'stderr');
          const text = r[use];
          const isFail = d.cls === FAIL;
          if (isFail !== (r.code !== 0)) throw new Error(`exit code ${r.code} does not fit ${d.cls}`);
          if (d.cls === NORM && text !== '') throw new Error('expected empty stderr');
          if (!isFail && d.cls !== NORM && text.trim() === '') throw new Error('expected non-empty stderr');
          if (d.expect && !d.expect.test(text)) throw new Error(`output does not match ${d.expect}`);
          if (d.check && !d.check(r)) throw new Error(`check failed (code ${r.code})`);
          let signature = null, failure_id = null;
          if (d.cls === FAIL || d.cls === REC) {
            failure_id = d.fid || d.name;
            if (text.trim() === '') signature = r.code >= 128 && SIGNAMES[r.code - 128] ? SIGNAMES[r.code - 128] : 'ExecutionError';
            else {
              if (!d.sig) throw new Error('no signature matcher');
              const line = d.sig(text);
              if (!line) throw new Error('signature line not found');
              signature = norm(line);
            }
          }
          cases.push({ id, tool: d.tool, program: d.program, text, exit_code: r.code, expected: { classification: d.cls, signature, failure_id } });
          process.stdout.write(`ok   ${id.padEnd(48)} exit=${String(r.code).padEnd(4)} ${signature ?? d.cls}\n`);
        } catch (e) {
          problems.push(`${id}: ${e.message}`);
          process.stdout.write(`FAIL ${id}: ${e.message.split('\n')[0]}\n`);
          if (process.env.HELDOUT_DEBUG) console.log(e.stack, r && `\n--- code ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`);
        } finally {
          if (!process.env.HELDOUT_KEEP) fs.rmSync(ctx.dir, { recursive: true, force: true });
        }
      }
    }
  } finally { stopHttp(); }
  fs.writeFileSync(OUT, cases.map((c) => JSON.stringify(c)).join('\n') + '\n');
  const by = {};
  for (const c of cases) { const k = `${c.tool} ${c.expected.classification}`; by[k] = (by[k] || 0) + 1; }
  console.log(`\nwrote ${cases.length} cases to ${OUT} (seed ${seed})`);
  console.log(`distinct failure ids: ${new Set(cases.map((c) => c.expected.failure_id).filter(Boolean)).size}`);
  if (problems.length) { console.log(`\n${problems.length} problem(s):\n  ` + problems.join('\n  ')); process.exitCode = 1; }
}
await main();
