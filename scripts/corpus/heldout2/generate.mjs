#!/usr/bin/env node
// Held-out corpus generator, batch 2. Node builtins only.
// node generate.mjs [--seed N] [--only substr] [--out file] [--verbose]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';

const argv = process.argv.slice(2);
const opt = (k, d) => { const i = argv.indexOf(k); return i >= 0 ? argv[i + 1] : d; };
const SEED = Number(opt('--seed', '20261201'));
const ONLY = opt('--only', null);
const OUT = opt('--out', path.join(path.dirname(new URL(import.meta.url).pathname), 'cases.jsonl'));
const VERBOSE = argv.includes('--verbose');
const ALL = argv.includes('--all');

// ---------- seeded RNG ----------
function mulberry32(a) { return function () { a |= 0; a = (a + 0x6D2B79F5) | 0; let t = Math.imul(a ^ (a >>> 15), 1 | a); t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t; return ((t ^ (t >>> 14)) >>> 0) / 4294967296; }; }
const rng = mulberry32(SEED);
const rint = (a, b) => a + Math.floor(rng() * (b - a + 1));
const pick = (arr) => arr[Math.floor(rng() * arr.length)];
const ALNUM = 'abcdefghijklmnopqrstuvwxyz0123456789';
const rstr = (n) => Array.from({ length: n }, () => ALNUM[Math.floor(rng() * ALNUM.length)]).join('');
const DIRWORDS = ['task', 'run', 'agent', 'work', 'job', 'sbx', 'scratch', 'ws', 'step', 'tool'];

// ---------- environment ----------
const baseEnv = { ...process.env, LC_ALL: 'C.UTF-8', NO_COLOR: '1', PIP_DISABLE_PIP_VERSION_CHECK: '1', PIP_NO_INPUT: '1' };
for (const k of Object.keys(baseEnv)) {
  if (/^(RUST_BACKTRACE|NODE_OPTIONS|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|PYTHONWARNINGS|PYTHONDEVMODE|FORCE_COLOR|PG.*|GIT_.*)$/.test(k)) delete baseEnv[k];
}

const SIGNAMES = {};
for (const [n, v] of Object.entries(os.constants.signals)) if (!(v in SIGNAMES) || n === 'SIGABRT') SIGNAMES[v] = n;

function collapse(s) { return [...s.replace(/\s+/g, ' ').trim()].slice(0, 96).join(''); }

// ---------- definitions ----------
const defs = [];
function def(d) { defs.push({ n: d.cls === 'RecoveredError' ? 3 : 2, stream: 'stderr', ...d }); }

// helpers used by definitions
function padLines(ctx, prefix, min = 0, max = 7) {
  const k = rint(min, max);
  const notes = ['note: keep in sync with ops runbook', 'reviewed', 'TODO: tidy', 'see ticket', 'generated section below', 'local tweak', 'do not edit by hand'];
  return Array.from({ length: k }, (_, i) => `${prefix} ${pick(notes)} ${i}`).join('\n') + (k ? '\n' : '');
}

const PY = 'python3';
const q = JSON.stringify;

// =====================================================================
// PYTHON
// =====================================================================
def({
  name: 'py-asyncio-shard-lookup', n: 3, tool: 'python3', cls: 'ExecutionFailure',
  program: 'fetch every shard of a routing table concurrently with asyncio.gather and print the hosts',
  why: 'gather asks for one shard more than the routing table has',
  build(c) {
    const k = rint(3, 9);
    c.w('shards.py', `import asyncio
${padLines(c, '#')}
SHARDS = {s: f"db-{s}.internal" for s in range(${k})}

async def fetch(shard):
    await asyncio.sleep(0.01 * shard)
    if shard not in SHARDS:
        raise LookupError(f"shard {shard} not found in routing table")
    return SHARDS[shard]

async def main():
    hosts = await asyncio.gather(*(fetch(s) for s in range(${k + 1})))
    print("\\n".join(hosts))

asyncio.run(main())
`);
    return [PY, 'shards.py'];
  },
  sanity: /LookupError: shard \d+ not found/, sig: /^LookupError: /,
});

def({
  name: 'py-subprocess-check-ls', tool: 'python3', cls: 'ExecutionFailure',
  program: 'list the build output directory through subprocess.run(check=True) before packaging',
  why: 'build directory does not exist; ls fails and check=True raises',
  build(c) {
    const tag = `build-${rstr(5)}`;
    c.w('package.py', `import subprocess, sys, os
${padLines(c, '#')}
out = os.path.join(os.getcwd(), "${tag}")
subprocess.run(["ls", "-1", out], check=True)
print("packaged", out)
`);
    return [PY, 'package.py'];
  },
  sanity: /CalledProcessError: Command .* returned non-zero exit status 2/, sig: /^subprocess\.CalledProcessError: /,
});

def({
  name: 'py-unittest-valueerror-not-raised', tool: 'python3', cls: 'ExecutionFailure',
  program: 'unit-test that parse_port rejects negative port strings',
  why: 'parse_port never validates the range, so assertRaises fails',
  build(c) {
    c.w('netcfg.py', `${padLines(c, '#')}def parse_port(s):\n    return int(s.strip())\n`);
    const n = rint(1, 65535);
    c.w('test_netcfg.py', `import unittest
from netcfg import parse_port
${padLines(c, '#')}
class ParsePortTest(unittest.TestCase):
    def test_accepts_valid(self):
        self.assertEqual(parse_port(" ${n} "), ${n})

    def test_rejects_negative(self):
        with self.assertRaises(ValueError):
            parse_port("-${n}")

if __name__ == "__main__":
    unittest.main()
`);
    return [PY, '-m', 'unittest', 'test_netcfg'];
  },
  sanity: /FAILED \(failures=1\)/, sig: /^AssertionError: ValueError not raised/,
});

def({
  name: 'py-unittest-regex-none-group', tool: 'python3', cls: 'ExecutionFailure',
  program: 'unit-test extracting the semantic version from a release tag',
  why: 'regex requires a leading v, test tag has none, match() returns None and .group fails',
  build(c) {
    const v = `${rint(1, 9)}.${rint(0, 30)}.${rint(0, 99)}`;
    c.w('release.py', `import re
${padLines(c, '#')}
def version_of(tag):
    return re.match(r"v(\\d+\\.\\d+\\.\\d+)$", tag).group(1)
`);
    c.w('test_release.py', `import unittest
from release import version_of

class VersionTest(unittest.TestCase):
    def test_plain_tag(self):
        self.assertEqual(version_of("${v}"), "${v}")

if __name__ == "__main__":
    unittest.main()
`);
    return [PY, '-m', 'unittest', '-v', 'test_release'];
  },
  sanity: /FAILED \(errors=1\)/, sig: /^AttributeError: 'NoneType' object has no attribute 'group'/,
});

def({
  name: 'py-json-tool-single-quotes', n: 3, tool: 'python3', cls: 'ExecutionFailure',
  program: 'pretty-print and validate a hand-edited JSON settings file with python -m json.tool',
  why: 'a key was written with single quotes',
  build(c) {
    const lines = ['{'];
    const k = rint(1, 8);
    for (let i = 0; i < k; i++) lines.push(`  "opt_${i}": ${rint(1, 500)},`);
    lines.push(`  'retries': ${rint(1, 9)},`);
    lines.push('  "debug": false', '}');
    c.w('settings.json', lines.join('\n') + '\n');
    return [PY, '-m', 'json.tool', 'settings.json'];
  },
  sanity: /Expecting property name enclosed in double quotes/, sig: /^Expecting property name enclosed in double quotes/,
});

def({
  name: 'pip-venv-without-pip', tool: 'pip', cls: 'ExecutionFailure',
  program: 'create a virtualenv and install the project requirements into it with venv/bin/python -m pip',
  why: 'the venv was created with --without-pip, so there is no pip module',
  setup: 'python3 -m venv --without-pip .venv',
  build(c) {
    c.w('requirements.txt', 'requests>=2.31\n');
    return ['.venv/bin/python', '-m', 'pip', 'install', '-r', 'requirements.txt'];
  },
  sanity: /No module named pip/, sig: /No module named pip/,
});

def({
  name: 'pip-no-matching-distribution', tool: 'pip', cls: 'ExecutionFailure',
  program: 'install a pinned internal package offline from a local wheelhouse directory',
  why: 'the wheelhouse is empty, so no version can be found',
  build(c) {
    fs.mkdirSync(path.join(c.dir, 'wheelhouse'));
    const v = `${rint(0, 4)}.${rint(0, 20)}.${rint(0, 9)}`;
    return [PY, '-m', 'pip', 'install', '--no-index', '--find-links', 'wheelhouse', `acme-billing-client==${v}`];
  },
  sanity: /No matching distribution found for acme-billing-client/, sig: /^ERROR: No matching distribution found/,
});

def({
  name: 'pip-invalid-requirement', tool: 'pip', cls: 'ExecutionFailure',
  program: 'install the project requirements file offline',
  why: 'requirements.txt has a malformed specifier (==>)',
  build(c) {
    c.w('requirements.txt', `${padLines(c, '#', 0, 6)}flask[async>=2.${rint(0, 3)}\n`);
    return [PY, '-m', 'pip', 'install', '--no-index', '-r', 'requirements.txt'];
  },
  sanity: /Invalid requirement/, sig: /^ERROR: Invalid requirement/,
});

def({
  name: 'py-none-subscript-config', extra: true, tool: 'python3', cls: 'ExecutionFailure',
  program: 'read the database host from a nested JSON config section',
  why: 'config has no "database" section; .get returns None and is subscripted',
  build(c) {
    c.w('config.json', JSON.stringify({ service: { name: `svc-${rstr(4)}`, port: rint(1024, 9000) } }));
    c.w('dbhost.py', `import json
${padLines(c, '#')}
cfg = json.load(open("config.json"))
db = cfg.get("database")
print("connecting to", db["host"])
`);
    return [PY, 'dbhost.py'];
  },
  sanity: /not subscriptable/, sig: /^TypeError: 'NoneType' object is not subscriptable/,
});

def({
  name: 'py-unicode-decode-latin1', n: 3, tool: 'python3', cls: 'ExecutionFailure',
  program: 'count lines of a customer CSV export read as UTF-8',
  why: 'the export is Latin-1 encoded; the é byte is not valid UTF-8',
  build(c) {
    const head = 'id,name,city\n' + Array.from({ length: rint(0, 6) }, (_, i) => `${i},user${i},Oslo\n`).join('');
    c.wb('customers.csv', Buffer.concat([Buffer.from(head), Buffer.from([0x39, 0x2c, 0x52, 0x65, 0x6e, 0xe9, 0x2c, 0x4c, 0x79, 0x6f, 0x6e, 0x0a])]));
    c.w('count.py', `${padLines(c, '#')}with open("customers.csv", encoding="utf-8") as f:\n    print(sum(1 for _ in f))\n`);
    return [PY, 'count.py'];
  },
  sanity: /can't decode byte 0xe9/, sig: /^UnicodeDecodeError: /,
});

def({
  name: 'py-taskgroup-exceptiongroup', tool: 'python3', cls: 'ExecutionFailure',
  program: 'refresh two upstream caches concurrently in an asyncio.TaskGroup',
  why: 'both refresh tasks raise, TaskGroup raises an ExceptionGroup',
  build(c) {
    const a = rint(2, 40), b = rint(41, 90);
    c.w('refresh.py', `import asyncio
${padLines(c, '#')}
async def refresh(name, n):
    await asyncio.sleep(0.01)
    raise ConnectionError(f"{name}: upstream closed after {n} items")

async def main():
    async with asyncio.TaskGroup() as tg:
        tg.create_task(refresh("prices", ${a}))
        tg.create_task(refresh("stock", ${b}))

asyncio.run(main())
`);
    return [PY, 'refresh.py'];
  },
  sanity: /ExceptionGroup: unhandled errors in a TaskGroup \(2 sub-exceptions\)/, sig: /ExceptionGroup: unhandled errors/, sigStrip: /^\s*\|\s*/,
});

def({
  name: 'py-sqlite-no-such-column', extra: true, tool: 'python3', cls: 'ExecutionFailure',
  program: 'look up users by e-mail in a local SQLite database with the sqlite3 module',
  why: 'query misspells the column as emial',
  build(c) {
    const u = `${pick(['ana', 'bo', 'cy', 'dee'])}${rint(1, 999)}@example.org`;
    c.w('lookup.py', `import sqlite3
${padLines(c, '#')}
db = sqlite3.connect(":memory:")
db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT)")
db.execute("INSERT INTO users (email) VALUES (?)", ("${u}",))
row = db.execute("SELECT id FROM users WHERE emial = ?", ("${u}",)).fetchone()
print(row)
`);
    return [PY, 'lookup.py'];
  },
  sanity: /no such column: emial/, sig: /^sqlite3\.OperationalError: /,
});

def({
  name: 'py-pickle-lambda-pool', n: 3, tool: 'python3', cls: 'ExecutionFailure',
  program: 'square a list of numbers in parallel with multiprocessing.Pool.map',
  why: 'a lambda is passed to Pool.map and cannot be pickled',
  build(c) {
    const n = rint(5, 40);
    c.w('par.py', `import multiprocessing as mp
${padLines(c, '#')}
if __name__ == "__main__":
    with mp.Pool(2) as pool:
        print(sum(pool.map(lambda x: x * x, range(${n}))))
`);
    return [PY, 'par.py'];
  },
  sanity: /Can't pickle <function <lambda>/, sig: /PicklingError: /, sigLast: true,
});

def({
  name: 'py-subprocess-timeout', tool: 'python3', cls: 'ExecutionFailure',
  program: 'run a health-check command with a short subprocess timeout',
  why: 'the checked command sleeps longer than the timeout',
  build(c) {
    const t = pick(['0.2', '0.3', '0.25', '0.4']);
    c.w('health.py', `import subprocess
${padLines(c, '#')}
subprocess.run(["sleep", "${rint(3, 9)}"], timeout=${t}, check=True)
print("healthy")
`);
    return [PY, 'health.py'];
  },
  sanity: /TimeoutExpired: Command .* timed out after/, sig: /^subprocess\.TimeoutExpired: /,
});

def({
  name: 'py-argparse-invalid-int', tool: 'python3', cls: 'ExecutionFailure', code: 2,
  program: 'export the newest N records; N is given with --limit',
  why: 'the agent passed a word instead of a number to --limit',
  build(c) {
    c.w('export.py', `import argparse
${padLines(c, '#')}
p = argparse.ArgumentParser(prog="export.py")
p.add_argument("--limit", type=int, default=10)
a = p.parse_args()
print("exporting", a.limit)
`);
    return [PY, 'export.py', '--limit', pick(['ten', 'all', 'twenty', '5k'])];
  },
  sanity: /error: argument --limit: invalid int value/, sig: /error: argument --limit/,
});

def({
  name: 'py-sys-exit-missing-key', extra: true, tool: 'python3', cls: 'ExecutionFailure', code: 1,
  program: 'validate that the deploy config defines db.host before deploying',
  why: 'the config lacks db.host, so the script exits with a message',
  build(c) {
    c.w(`deploy-${c.v}.ini`, `[db]\nport = ${rint(5000, 6000)}\n`);
    c.w('check.py', `import configparser, sys, os
${padLines(c, '#')}
path = os.path.abspath("deploy-${c.v}.ini")
cp = configparser.ConfigParser(); cp.read(path)
if not cp.has_option("db", "host"):
    sys.exit(f"config error: key 'db.host' missing in {path}")
print("ok")
`);
    return [PY, 'check.py'];
  },
  sanity: /config error: key 'db\.host' missing/, sig: /^config error: /,
});

def({
  name: 'py-silent-exit-4', extra: true, tool: 'python3', cls: 'ExecutionFailure', code: 4, silent: true,
  program: 'check that the dataset directory holds at least the expected number of shards (exit status only)',
  why: 'too few shards; the script exits 4 without printing',
  build(c) {
    for (let i = 0; i < rint(1, 3); i++) c.w(`data/shard-${i}.bin`, 'x');
    c.w('gate.py', `import os, sys
${padLines(c, '#')}
if len(os.listdir("data")) < ${rint(5, 9)}:
    sys.exit(4)
`);
    return [PY, 'gate.py'];
  },
  sanity: /^$/,
});

def({
  name: 'py-assert-ledger-totals', extra: true, tool: 'python3', cls: 'ExecutionFailure',
  program: 'reconcile ledger entries against the expected monthly total',
  why: 'one refund entry is counted with the wrong sign',
  build(c) {
    const vals = Array.from({ length: rint(3, 6) }, () => rint(10, 99));
    const refund = rint(5, 30);
    const expected = vals.reduce((a, b) => a + b, 0) - refund;
    c.w('reconcile.py', `${padLines(c, '#')}entries = ${q(vals)} + [${refund}]  # last one is a refund
expected = ${expected}
total = sum(entries)
assert total == expected, f"ledger totals differ: {total} != {expected}"
print("balanced")
`);
    return [PY, 'reconcile.py'];
  },
  sanity: /AssertionError: ledger totals differ/, sig: /^AssertionError: /,
});

// ---- python exit 0 ----
def({
  name: 'py-rec-cache-rebuild-log', tool: 'python3', cls: 'RecoveredError',
  program: 'load a cached index from JSON, rebuilding it when the cache is unreadable',
  why: 'cache file is empty; the error is logged and the index rebuilt',
  build(c) {
    c.w('cache/index.json', '');
    c.w('index.py', `import json, logging, os
${padLines(c, '#')}
logging.basicConfig(level=logging.WARNING)
log = logging.getLogger("cache")
path = os.path.abspath("cache/index.json")
try:
    idx = json.load(open(path))
except json.JSONDecodeError as e:
    log.error("could not load %s (%s: %s); rebuilding", path, type(e).__name__, e)
    idx = {f"doc{i}": i for i in range(${rint(3, 30)})}
print(len(idx))
`);
    return [PY, 'index.py'];
  },
  sanity: /JSONDecodeError: Expecting value/, sig: /^ERROR:cache:could not load/,
});

def({
  name: 'py-rec-asyncio-retry-refused', tool: 'python3', cls: 'RecoveredError',
  program: 'connect to a local metrics agent with retries and fall back to offline mode',
  why: 'nothing listens on the port; each attempt is refused and logged, then the fallback runs',
  build(c) {
    const port = c.freePort();
    const n = rint(2, 4);
    c.w('agent.py', `import asyncio, sys
${padLines(c, '#')}
async def main():
    for attempt in range(1, ${n} + 1):
        try:
            r, w = await asyncio.open_connection("127.0.0.1", ${port})
            w.close(); print("online"); return
        except OSError as e:
            print(f"attempt {attempt}/${n} failed: {type(e).__name__}: {e}", file=sys.stderr)
            await asyncio.sleep(0.01)
    print("offline mode")

asyncio.run(main())
`);
    return [PY, 'agent.py'];
  },
  sanity: /ConnectionRefusedError: \[Errno 111\]/, sig: /^attempt 1\/\d+ failed/,
});

def({
  name: 'py-rec-thread-keyerror', tool: 'python3', cls: 'RecoveredError',
  program: 'process regional batches in worker threads, then print a completion line',
  why: 'one batch lacks the region key; its thread dies with a traceback but the main thread finishes with exit 0',
  build(c) {
    const k = rint(2, 5);
    c.w('batches.py', `import threading
${padLines(c, '#')}
batches = [{"region": f"r{i}", "n": i} for i in range(${k})] + [{"n": 99}]
def process_batch(b):
    print(b["region"], b["n"])
ts = [threading.Thread(target=process_batch, args=(b,), name=f"worker-{i}") for i, b in enumerate(batches)]
for t in ts: t.start()
for t in ts: t.join()
print("all batches dispatched")
`);
    return [PY, 'batches.py'];
  },
  sanity: /Exception in thread worker-\d+/, sig: /^KeyError: 'region'/,
});

def({
  name: 'py-rec-logging-exception-hook', tool: 'python3', cls: 'RecoveredError',
  program: 'run optional post-deploy hooks, logging failures and continuing',
  why: 'the cache-warm hook exits non-zero; logging.exception prints the CalledProcessError and the deploy continues',
  build(c) {
    const code = rint(2, 9);
    c.w('hooks.py', `import logging, subprocess
${padLines(c, '#')}
logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
log = logging.getLogger("deploy")
try:
    subprocess.run(["sh", "-c", "exit ${code}"], check=True)
except subprocess.CalledProcessError:
    log.exception("post-deploy hook warm-cache failed")
print("deploy finished")
`);
    return [PY, 'hooks.py'];
  },
  sanity: /ERROR deploy: post-deploy hook warm-cache failed/, sig: /^subprocess\.CalledProcessError: /,
});

def({
  name: 'py-warn-userwarning', tool: 'python3', cls: 'StderrWarning',
  program: 'load settings and translate the old timeout key to the new one',
  why: 'legacy key present: warnings.warn emits a UserWarning',
  build(c) {
    c.w('settings.py', `import warnings
${padLines(c, '#')}
cfg = {"timeout": ${rint(5, 60)}}
if "timeout" in cfg:
    warnings.warn("config key 'timeout' is deprecated, use 'timeout_s'")
    cfg["timeout_s"] = cfg.pop("timeout")
print(cfg)
`);
    return [PY, 'settings.py'];
  },
  sanity: /UserWarning: config key/, n: 2,
});

def({
  name: 'py-warn-coroutine-never-awaited', tool: 'python3', cls: 'StderrWarning',
  program: 'flush buffered metrics at shutdown from synchronous code',
  why: 'async flush() is called without await: RuntimeWarning, the program still exits 0',
  build(c) {
    c.w('shutdown.py', `import asyncio
${padLines(c, '#')}
async def flush(n):
    await asyncio.sleep(0)
    return n
def shutdown():
    flush(${rint(1, 99)})
    print("bye")
shutdown()
`);
    return [PY, 'shutdown.py'];
  },
  sanity: /RuntimeWarning: coroutine 'flush' was never awaited/, n: 2,
});

def({
  name: 'py-warn-futurewarning', tool: 'python3', cls: 'StderrWarning',
  program: 'compute a report using a helper that announces a behaviour change',
  why: 'the helper emits a FutureWarning on every call',
  build(c) {
    c.w('report.py', `import warnings
${padLines(c, '#')}
def mean(xs):
    warnings.warn("mean() will return a Decimal in the next release", FutureWarning, stacklevel=2)
    return sum(xs) / len(xs)
print(mean(${q(Array.from({ length: rint(2, 6) }, () => rint(1, 50)))}))
`);
    return [PY, 'report.py'];
  },
  sanity: /FutureWarning: mean\(\) will return/, n: 2,
});

def({
  name: 'py-info-logging', tool: 'python3', cls: 'Uncertain',
  program: 'ETL job that logs progress at INFO level and a final summary',
  why: 'only INFO lines on stderr, including "0 errors"',
  build(c) {
    const n = rint(100, 900);
    c.w('etl.py', `import logging
${padLines(c, '#')}
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("etl")
log.info("reading %d rows", ${n})
log.info("loaded %d rows, 0 errors, 0 skipped", ${n})
print("${n}")
`);
    return [PY, 'etl.py'];
  },
  sanity: /INFO etl: loaded \d+ rows, 0 errors/, n: 2,
});

def({
  name: 'py-progress-stderr', tool: 'python3', cls: 'Uncertain',
  program: 'download-style progress counter printed to stderr while processing files',
  why: 'progress lines only',
  build(c) {
    const n = rint(3, 6);
    c.w('prog.py', `import sys
${padLines(c, '#')}
for i in range(1, ${n} + 1):
    print(f"[{i}/${n}] processing chunk_{i:03d}.parquet ... done", file=sys.stderr)
print("ok")
`);
    return [PY, 'prog.py'];
  },
  sanity: /processing chunk_001/, n: 2,
});

def({
  name: 'py-ok-summary', tool: 'python3', cls: 'NormalOutput',
  program: 'summarise a small JSON list of orders',
  why: 'works',
  build(c) {
    c.w('orders.json', JSON.stringify(Array.from({ length: rint(2, 5) }, (_, i) => ({ id: i, total: rint(5, 90) }))));
    c.w('sum.py', `import json\n${padLines(c, '#')}o = json.load(open("orders.json"))\nprint(len(o), sum(x["total"] for x in o))\n`);
    return [PY, 'sum.py'];
  },
  sanity: /^$/, n: 2,
});

// =====================================================================
// NODE
// =====================================================================
def({
  name: 'node-esm-module-not-found', tool: 'node', cls: 'ExecutionFailure',
  program: 'ESM entry point that imports a local helper module and prints a slug',
  why: 'the import says ./util.js but the file is util.mjs',
  build(c) {
    c.w('util.mjs', `export const slug = (s) => s.toLowerCase().replace(/\\W+/g, '-');\n`);
    c.w('main.mjs', `${padLines(c, '//')}import { slug } from './util.js';\nconsole.log(slug('Hello World ${rint(1, 99)}'));\n`);
    return ['node', 'main.mjs'];
  },
  sanity: /ERR_MODULE_NOT_FOUND/, sig: /^Error \[ERR_MODULE_NOT_FOUND\]/,
});

def({
  name: 'node-esm-require-not-defined', tool: 'node', cls: 'ExecutionFailure',
  program: 'ESM script that reads package.json and prints its version',
  why: 'uses require() inside an .mjs module',
  build(c) {
    c.w('package.json', JSON.stringify({ name: `pkg-${rstr(4)}`, version: `1.${rint(0, 9)}.${rint(0, 9)}` }));
    c.w('version.mjs', `${padLines(c, '//')}const fs = require('fs');\nconsole.log(JSON.parse(fs.readFileSync('package.json', 'utf8')).version);\n`);
    return ['node', 'version.mjs'];
  },
  sanity: /require is not defined in ES module scope/, sig: /^ReferenceError: require is not defined/,
});

def({
  name: 'node-worker-uncaught', tool: 'node', cls: 'ExecutionFailure',
  program: 'verify shard checksums in a worker_threads worker and report the result',
  why: 'the worker throws on a checksum mismatch and the main thread has no error handler',
  build(c) {
    const k = rint(1, 12);
    c.w('verify.mjs', `import { Worker, isMainThread, workerData } from 'node:worker_threads';
${padLines(c, '//')}
if (isMainThread) {
  const w = new Worker(new URL(import.meta.url), { workerData: { shard: ${k} } });
  w.on('exit', (code) => console.log('worker exited', code));
} else {
  throw new Error(\`checksum mismatch in shard \${workerData.shard}\`);
}
`);
    return ['node', 'verify.mjs'];
  },
  sanity: /checksum mismatch in shard \d+/, sig: /^Error: checksum mismatch in shard/,
});

const NODE_SERVER = (body, extra = '') => `
import http from 'node:http';
const srv = http.createServer((req, res) => { ${body} });
await new Promise((r) => srv.listen(0, '127.0.0.1', r));
const port = srv.address().port;
${extra}
`;

def({
  name: 'node-fetch-html-not-json', tool: 'node', cls: 'ExecutionFailure',
  program: 'call a local JSON API with fetch() and print the item count',
  why: 'the endpoint answers with an HTML error page; res.json() throws',
  build(c) {
    const p = pick(['/api/items', '/v1/items', '/items.json']);
    c.w('client.mjs', `${padLines(c, '//')}${NODE_SERVER(`res.writeHead(502, {'content-type': 'text/html'}); res.end('<!DOCTYPE html><html><body>Bad gateway</body></html>');`)}
try {
  const res = await fetch(\`http://127.0.0.1:\${port}${p}\`);
  const data = await res.json();
  console.log(data.items.length);
} finally { srv.close(); }
`);
    return ['node', 'client.mjs'];
  },
  sanity: /is not valid JSON/, sig: /^SyntaxError: Unexpected token '<'/,
});

def({
  name: 'node-fetch-abort-timeout', n: 3, tool: 'node', cls: 'ExecutionFailure',
  program: 'fetch a slow local endpoint with AbortSignal.timeout',
  why: 'the server answers after the timeout',
  build(c) {
    const t = rint(50, 150);
    c.w('slow.mjs', `${padLines(c, '//')}${NODE_SERVER(`setTimeout(() => res.end('{}'), 1500);`)}
try {
  const res = await fetch(\`http://127.0.0.1:\${port}/report\`, { signal: AbortSignal.timeout(${t}) });
  console.log(await res.text());
} finally { srv.close(); srv.closeAllConnections(); }
`);
    return ['node', 'slow.mjs'];
  },
  sanity: /aborted due to timeout/, sig: /TimeoutError\]?: The operation was aborted due to timeout/,
});

def({
  name: 'node-test-deepequal-slugs', tool: 'node', cls: 'ExecutionFailure', stream: 'stdout',
  program: 'node --test suite for a tag-normalising function',
  why: 'normalise() does not dedupe tags, deepStrictEqual fails',
  build(c) {
    const t = pick(['api', 'db', 'ui', 'ops']);
    c.w('tags.mjs', `${padLines(c, '//')}export const normalise = (tags) => tags.map((t) => t.trim().toLowerCase());\n`);
    c.w('tags.test.mjs', `import test from 'node:test';
import assert from 'node:assert';
import { normalise } from './tags.mjs';
${padLines(c, '//')}
test('normalise dedupes tags', () => {
  assert.deepStrictEqual(normalise([' ${t} ', '${t.toUpperCase()}', 'x${rint(1, 9)}']), ['${t}', 'x']);
});
`);
    return ['node', '--test', '--test-reporter=spec', 'tags.test.mjs'];
  },
  sanity: /fail 1/, sig: /AssertionError \[ERR_ASSERTION\]: Expected values to be strictly deep-equal/,
});

def({
  name: 'node-json-parse-undefined', extra: true, tool: 'node', cls: 'ExecutionFailure',
  program: 'restore saved UI state from an environment variable holding JSON',
  why: 'the env var is unset; String(undefined) is passed to JSON.parse',
  build(c) {
    c.w('restore.js', `${padLines(c, '//')}const raw = \`\${process.env.APP_STATE_${rstr(3).toUpperCase()}}\`;\nconst state = JSON.parse(raw);\nconsole.log(Object.keys(state));\n`);
    return ['node', 'restore.js'];
  },
  sanity: /"undefined" is not valid JSON/, sig: /^SyntaxError: "undefined" is not valid JSON/,
});

def({
  name: 'node-execsync-git-not-repo', tool: 'node', cls: 'ExecutionFailure',
  program: 'stamp the build with the current git commit via child_process.execSync',
  why: 'the build directory is not a git repository',
  build(c) {
    c.w('stamp.js', `const { execSync } = require('child_process');
${padLines(c, '//')}
const sha = execSync('git rev-parse --short HEAD').toString().trim();
console.log('build', sha);
`);
    return ['node', 'stamp.js'];
  },
  sanity: /not a git repository/, sig: /^Error: Command failed: git rev-parse/,
});

def({
  name: 'node-assert-strictequal-count', extra: true, tool: 'node', cls: 'ExecutionFailure',
  program: 'migration script asserting that the number of migrated rows matches the source',
  why: 'the filter drops inactive rows so the counts differ',
  build(c) {
    const n = rint(5, 20), off = rint(1, 4);
    c.w('migrate.js', `const assert = require('assert');
${padLines(c, '//')}
const rows = Array.from({ length: ${n} }, (_, i) => ({ id: i, active: i >= ${off} }));
const migrated = rows.filter((r) => r.active);
assert.strictEqual(migrated.length, rows.length);
console.log('migrated', migrated.length);
`);
    return ['node', 'migrate.js'];
  },
  sanity: /Expected values to be strictly equal/, sig: /^AssertionError \[ERR_ASSERTION\]: Expected values to be strictly equal/,
});

def({
  name: 'node-eaddrinuse', n: 3, tool: 'node', cls: 'ExecutionFailure',
  program: 'start the API server and the admin server from one process',
  why: 'both servers are configured with the same port',
  build(c) {
    const port = c.freePort();
    c.w('servers.js', `const http = require('http');
${padLines(c, '//')}
const PORT = ${port};
const api = http.createServer((q, s) => s.end('api')).listen(PORT, () => {
  http.createServer((q, s) => s.end('admin')).listen(PORT);
});
setTimeout(() => api.close(), 500).unref();
`);
    return ['node', 'servers.js'];
  },
  sanity: /EADDRINUSE/, sig: /^Error: listen EADDRINUSE/,
});

def({
  name: 'node-eisdir-read', extra: true, tool: 'node', cls: 'ExecutionFailure',
  program: 'read the release notes file and print its first line',
  why: 'the path points at a directory, not a file',
  build(c) {
    fs.mkdirSync(path.join(c.dir, 'NOTES'), { recursive: true });
    c.w('notes.js', `const fs = require('fs');\n${padLines(c, '//')}console.log(fs.readFileSync('NOTES', 'utf8').split('\\n')[0]);\n`);
    return ['node', 'notes.js'];
  },
  sanity: /EISDIR/, sig: /^Error: EISDIR: illegal operation on a directory/,
});

def({
  name: 'node-invalid-time-value', extra: true, tool: 'node', cls: 'ExecutionFailure',
  program: 'convert a log record timestamp to ISO format',
  why: 'the timestamp string is in an unparseable day/month format',
  build(c) {
    const d = `${rint(13, 28)}/${rint(1, 12)}/2025 ${rint(10, 23)}:${rint(10, 59)}`;
    c.w('ts.js', `${padLines(c, '//')}const rec = { at: '${d}' };\nconsole.log(new Date(rec.at).toISOString());\n`);
    return ['node', 'ts.js'];
  },
  sanity: /Invalid time value/, sig: /^RangeError: Invalid time value/,
});

def({
  name: 'node-rec-worker-restart', tool: 'node', cls: 'RecoveredError',
  program: 'run a job in a worker thread and restart it once if it crashes',
  why: 'first worker run throws; the error event is logged and the second run succeeds',
  build(c) {
    const id = rint(1, 20);
    c.w('supervise.mjs', `import { Worker, isMainThread, workerData, parentPort } from 'node:worker_threads';
${padLines(c, '//')}
if (isMainThread) {
  const run = (attempt) => {
    const w = new Worker(new URL(import.meta.url), { workerData: { attempt } });
    w.on('message', (m) => console.log(m));
    w.on('error', (err) => { console.error(\`worker ${id} crashed: \${err.message}; restarting\`); run(attempt + 1); });
  };
  run(1);
} else {
  if (workerData.attempt === 1) throw new Error('lock file busy');
  parentPort.postMessage('job done');
}
`);
    return ['node', 'supervise.mjs'];
  },
  sanity: /crashed: lock file busy/, sig: /^worker \d+ crashed: lock file busy/, checkStdout: /job done/,
});

def({
  name: 'node-rec-fetch-retry-refused', tool: 'node', cls: 'RecoveredError',
  program: 'sync settings from a local config service with retries, falling back to defaults',
  why: 'the service is down; each attempt logs ECONNREFUSED, then defaults are used',
  build(c) {
    const port = c.freePort(), n = rint(2, 4);
    c.w('sync.mjs', `${padLines(c, '//')}
for (let i = 1; i <= ${n}; i++) {
  try { await fetch('http://127.0.0.1:${port}/settings'); break; }
  catch (e) { console.error(\`[sync] attempt \${i} failed: \${e.cause?.code} \${e.cause?.address}:\${e.cause?.port}\`); }
}
console.log('using default settings');
`);
    return ['node', 'sync.mjs'];
  },
  sanity: /ECONNREFUSED/, sig: /^\[sync\] attempt 1 failed/,
});

def({
  name: 'node-warn-emitwarning-dep', tool: 'node', cls: 'StderrWarning',
  program: 'CLI that accepts a legacy --legacy-output option and warns about it',
  why: 'process.emitWarning DeprecationWarning with the pid in the prefix',
  build(c) {
    c.w('cli.js', `${padLines(c, '//')}process.emitWarning('the --legacy-output option is deprecated', 'DeprecationWarning', 'DEP_CLI_${rint(1, 9)}');\nconsole.log('written ${rint(1, 99)} files');\n`);
    return ['node', 'cli.js'];
  },
  sanity: /DeprecationWarning: the --legacy-output option/, n: 2,
});

def({
  name: 'node-warn-buffer-ctor', tool: 'node', cls: 'StderrWarning',
  program: 'old helper that allocates a buffer with new Buffer()',
  why: 'DEP0005 runtime deprecation',
  build(c) {
    c.w('buf.js', `${padLines(c, '//')}const b = new Buffer(${rint(4, 64)});\nconsole.log(b.length);\n`);
    return ['node', 'buf.js'];
  },
  sanity: /DEP0005/, n: 2,
});

def({
  name: 'node-build-log', tool: 'node', cls: 'Uncertain',
  program: 'bundler-like build script that reports what it did on stderr',
  why: 'informational lines only',
  build(c) {
    const n = rint(10, 90);
    c.w('build.js', `${padLines(c, '//')}console.error('[build] compiled ${n} modules in ${rint(100, 900)}ms');\nconsole.error('[build] 0 errors, 0 warnings');\nconsole.log('dist/app.js');\n`);
    return ['node', 'build.js'];
  },
  sanity: /compiled \d+ modules/, n: 2,
});

def({
  name: 'node-ok', tool: 'node', cls: 'NormalOutput',
  program: 'print the sum of numbers given on the command line',
  why: 'works',
  build(c) {
    c.w('sum.js', `${padLines(c, '//')}console.log(process.argv.slice(2).map(Number).reduce((a, b) => a + b, 0));\n`);
    return ['node', 'sum.js', String(rint(1, 9)), String(rint(1, 9))];
  },
  sanity: /^$/, n: 2,
});

// ---- npm ----
def({
  name: 'npm-ci-no-lockfile', tool: 'npm', cls: 'ExecutionFailure',
  program: 'clean-install dependencies with npm ci in a fresh checkout',
  why: 'the repository has no package-lock.json',
  build(c) {
    c.w('package.json', JSON.stringify({ name: `app-${rstr(4)}`, version: '1.0.0', dependencies: {} }, null, 2));
    return ['npm', 'ci', '--offline', '--no-audit', '--no-fund'];
  },
  sanity: /can only install with an existing package-lock\.json/, sig: /^npm error The `npm ci` command can only install/,
});

def({
  name: 'npm-lint-eslint-not-found', tool: 'npm', cls: 'ExecutionFailure', code: 127,
  program: 'run the project lint script (eslint) through npm run',
  why: 'eslint is not installed in node_modules',
  build(c) {
    c.w('package.json', JSON.stringify({ name: `web-${rstr(4)}`, version: '0.1.0', scripts: { lint: `eslint src --max-warnings ${rint(0, 5)}` } }, null, 2));
    return ['npm', 'run', 'lint', '--silent'];
  },
  sanity: /eslint: not found/, sig: /eslint: not found/,
});

def({
  name: 'npm-version-dirty-tree', tool: 'npm', cls: 'ExecutionFailure',
  program: 'bump the package patch version with npm version patch',
  why: 'the git working tree has uncommitted changes',
  setup: 'git init -q && git add package.json && git -c user.email=a@b -c user.name=a commit -qm init && echo "// wip" > index.js && git add index.js',
  build(c) {
    c.w('package.json', JSON.stringify({ name: `lib-${rstr(4)}`, version: `1.${rint(0, 9)}.${rint(0, 9)}` }, null, 2));
    return ['npm', 'version', 'patch'];
  },
  sanity: /Git working directory not clean/, sig: /^npm error Git working directory not clean/,
});

def({
  name: 'npm-install-offline-nothing', tool: 'npm', cls: 'NormalOutput',
  program: 'npm install in a package without dependencies',
  why: 'nothing to install',
  build(c) {
    c.w('package.json', JSON.stringify({ name: `tool-${rstr(4)}`, version: '1.0.0' }, null, 2));
    return ['npm', 'install', '--offline', '--no-audit', '--no-fund'];
  },
  sanity: /^$/, n: 2,
});

// =====================================================================
// JAVA
// =====================================================================
def({
  name: 'java-executor-root-cause', n: 3, tool: 'java', cls: 'ExecutionFailure',
  program: 'reserve stock for an order on an ExecutorService thread and wait for the result',
  why: 'reservation drives a SKU negative; Future.get wraps it in ExecutionException',
  build(c) {
    const sku = rint(10, 999), have = rint(1, 5), want = have + rint(1, 5);
    c.w('Main.java', `import java.util.concurrent.*;
${padLines(c, '//')}
public class Main {
    static int reserve(int have, int want) {
        int left = have - want;
        if (left < 0) throw new IllegalStateException("inventory for sku-${sku} went negative (" + left + ")");
        return left;
    }
    public static void main(String[] args) throws Exception {
        ExecutorService ex = Executors.newFixedThreadPool(2);
        try {
            Future<Integer> f = ex.submit(() -> reserve(${have}, ${want}));
            System.out.println(f.get());
        } finally { ex.shutdown(); }
    }
}
`);
    return ['java', 'Main.java'];
  },
  sanity: /ExecutionException/, sig: /^Caused by: /, sigLast: true, javaStrip: true,
});

def({
  name: 'java-record-port-range', n: 3, tool: 'java', cls: 'ExecutionFailure',
  program: 'parse service endpoints into a record that validates the port',
  why: 'one endpoint has a port above 65535; the compact constructor throws',
  build(c) {
    const port = rint(65536, 99999);
    c.w('Endpoints.java', `import java.util.*;
${padLines(c, '//')}
public class Endpoints {
    record Endpoint(String host, int port) {
        Endpoint {
            if (port < 1 || port > 65535) throw new IllegalArgumentException("port out of range: " + port);
        }
    }
    public static void main(String[] args) {
        List<Endpoint> eps = new ArrayList<>();
        for (String s : List.of("db:5432", "cache:6379", "search:${port}")) {
            String[] p = s.split(":");
            eps.add(new Endpoint(p[0], Integer.parseInt(p[1])));
        }
        System.out.println(eps);
    }
}
`);
    return ['java', 'Endpoints.java'];
  },
  sanity: /port out of range/, sig: /java\.lang\.IllegalArgumentException: port out of range/, javaStrip: true,
});

def({
  name: 'java-classcast-string-integer', extra: true, tool: 'java', cls: 'ExecutionFailure',
  program: 'sum quantities from a loosely typed settings map',
  why: 'one quantity is stored as a String and cast to Integer',
  build(c) {
    c.w('Qty.java', `import java.util.*;
${padLines(c, '//')}
public class Qty {
    public static void main(String[] args) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("a", ${rint(1, 50)});
        m.put("b", "${rint(1, 50)}");
        int total = 0;
        for (Object v : m.values()) total += (Integer) v;
        System.out.println(total);
    }
}
`);
    return ['java', 'Qty.java'];
  },
  sanity: /ClassCastException/, sig: /java\.lang\.ClassCastException: /, javaStrip: true,
});

def({
  name: 'java-concurrent-modification', extra: true, tool: 'java', cls: 'ExecutionFailure',
  program: 'drop expired sessions from a list while iterating it',
  why: 'list.remove inside a for-each loop',
  build(c) {
    const n = rint(4, 12);
    c.w('Sessions.java', `import java.util.*;
${padLines(c, '//')}
public class Sessions {
    public static void main(String[] args) {
        List<Integer> ages = new ArrayList<>();
        for (int i = 0; i < ${n}; i++) ages.add(i * 7);
        for (Integer a : ages) if (a > ${rint(5, 20)}) ages.remove(a);
        System.out.println(ages);
    }
}
`);
    return ['java', 'Sessions.java'];
  },
  sanity: /ConcurrentModificationException/, sig: /java\.util\.ConcurrentModificationException/, javaStrip: true,
});

def({
  name: 'java-assert-balance', tool: 'java', cls: 'ExecutionFailure',
  program: 'apply withdrawals to an account with assertions enabled',
  why: 'withdrawals exceed the balance; assert fires',
  build(c) {
    const bal = rint(50, 200), w = bal + rint(5, 60);
    c.w('Account.java', `${padLines(c, '//')}public class Account {
    public static void main(String[] args) {
        int balance = ${bal};
        balance -= ${w};
        assert balance >= 0 : "balance must be non-negative: " + balance;
        System.out.println(balance);
    }
}
`);
    return ['java', '-ea', 'Account.java'];
  },
  sanity: /AssertionError: balance must be non-negative/, sig: /java\.lang\.AssertionError: /, javaStrip: true,
});

def({
  name: 'java-jar-no-manifest', tool: 'java', cls: 'ExecutionFailure',
  program: 'package a class into a jar and run it with java -jar',
  why: 'the jar was built without a Main-Class manifest entry',
  build(c) {
    const jar = `app-${rint(1, 9)}.${rint(0, 9)}.jar`;
    c.w('Hello.java', 'public class Hello { public static void main(String[] a) { System.out.println("hi"); } }\n');
    c.sh(`javac Hello.java && jar cf ${jar} Hello.class`);
    return ['java', '-jar', jar];
  },
  sanity: /no main manifest attribute/, sig: /^no main manifest attribute/,
});

def({
  name: 'javac-unreported-ioexception', tool: 'javac', cls: 'ExecutionFailure',
  program: 'compile a loader that reads a file with Files.readString',
  why: 'IOException is neither caught nor declared',
  build(c) {
    c.w('Loader.java', `import java.nio.file.*;
${padLines(c, '//')}
public class Loader {
    static String load(String p) {
        return Files.readString(Path.of(p));
    }
    public static void main(String[] a) { System.out.println(load("conf-${rint(1, 9)}.txt")); }
}
`);
    return ['javac', 'Loader.java'];
  },
  sanity: /unreported exception/, sig: /error: unreported exception/,
});

def({
  name: 'javac-missing-return', extra: true, tool: 'javac', cls: 'ExecutionFailure',
  program: 'compile a helper that maps HTTP status codes to categories',
  why: 'no return after the if-chain',
  build(c) {
    c.w('Status.java', `${padLines(c, '//')}public class Status {
    static String category(int code) {
        if (code < ${rint(300, 399)}) return "ok";
        if (code < 500) return "client";
    }
    public static void main(String[] a) { System.out.println(category(200)); }
}
`);
    return ['javac', 'Status.java'];
  },
  sanity: /missing return statement/, sig: /error: missing return statement/,
});

def({
  name: 'javac-lint-rawtypes', tool: 'javac', cls: 'StderrWarning',
  program: 'compile a legacy collection helper with -Xlint:all',
  why: 'raw List type produces lint warnings only',
  build(c) {
    c.w('Legacy.java', `import java.util.*;
${padLines(c, '//')}
public class Legacy {
    public static void main(String[] a) {
        List xs = new ArrayList();
        xs.add(${rint(1, 9)});
        System.out.println(xs);
    }
}
`);
    return ['javac', '-Xlint:all', 'Legacy.java'];
  },
  sanity: /warning: \[(rawtypes|unchecked)\]/, n: 2,
});

def({
  name: 'java-rec-thread-uncaught', tool: 'java', cls: 'RecoveredError',
  program: 'build search index shards on named threads, then report completion',
  why: 'one indexer thread divides by zero and dies; main still exits 0',
  build(c) {
    const k = rint(1, 4);
    c.w('Indexer.java', `${padLines(c, '//')}public class Indexer {
    public static void main(String[] a) throws Exception {
        Thread[] ts = new Thread[${k + 1}];
        for (int i = 0; i <= ${k}; i++) {
            final int docs = ${k} - i;
            ts[i] = new Thread(() -> System.out.println("avg " + (100 / docs)), "indexer-" + i);
            ts[i].start(); ts[i].join();
        }
        System.out.println("indexing finished");
    }
}
`);
    return ['java', 'Indexer.java'];
  },
  sanity: /Exception in thread "indexer-\d+" java\.lang\.ArithmeticException: \/ by zero/, sig: /java\.lang\.ArithmeticException: \/ by zero/, javaStrip: true,
});

def({
  name: 'java-rec-connect-retry', tool: 'java', cls: 'RecoveredError',
  program: 'send a payment to a local gateway with retries, queueing it when the gateway is down',
  why: 'nothing listens on the gateway port; each attempt logs ConnectException, then the payment is queued',
  build(c) {
    const port = c.freePort(), n = rint(2, 4);
    c.w('Client.java', `import java.net.*;
import java.io.*;
${padLines(c, '//')}
public class Client {
    public static void main(String[] a) {
        for (int i = 1; i <= ${n}; i++) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", ${port}), 300);
                System.out.println("sent"); return;
            } catch (IOException e) {
                System.err.println("payment gateway attempt " + i + "/${n} failed: " + e);
            }
        }
        System.out.println("queued payment for later");
    }
}
`);
    return ['java', 'Client.java'];
  },
  sanity: /java\.net\.ConnectException: Connection refused/, sig: /^payment gateway attempt 1\/\d+ failed/,
});

// =====================================================================
// C / C++
// =====================================================================
def({
  name: 'gxx-map-no-operator-less', tool: 'g++', cls: 'ExecutionFailure',
  program: 'count visits per grid cell using std::map keyed by a Point struct',
  why: 'Point has no operator<, so std::less<Point> fails to instantiate',
  build(c) {
    c.w('grid.cpp', `#include <map>
#include <iostream>
${padLines(c, '//')}
struct Point { int x, y; };
int main() {
    std::map<Point, int> visits;
    visits[Point{${rint(0, 9)}, ${rint(0, 9)}}]++;
    std::cout << visits.size() << "\\n";
}
`);
    return ['g++', '-std=c++17', '-c', 'grid.cpp', '-o', 'grid.o'];
  },
  sanity: /no match for .operator</, sig: /error: no match for .operator</,
});

def({
  name: 'gxx-vtable-undefined', tool: 'g++', cls: 'ExecutionFailure',
  program: 'link a shape program whose Circle class declares a virtual area()',
  why: 'Circle::area is declared but never defined, so the vtable is missing at link time',
  build(c) {
    c.w('shapes.cpp', `#include <iostream>
${padLines(c, '//')}
struct Shape { virtual ~Shape() {} virtual double area() const = 0; };
struct Circle : Shape { double r; explicit Circle(double r) : r(r) {} double area() const override; };
int main() { Circle c(${rint(1, 9)}.5); Shape &s = c; std::cout << s.area() << "\\n"; }
`);
    return ['g++', 'shapes.cpp', '-o', 'shapes'];
  },
  sanity: /undefined reference to `vtable for Circle'/, sig: /undefined reference to `vtable for Circle'/,
});

def({
  name: 'gcc-multiple-definition', tool: 'gcc', cls: 'ExecutionFailure',
  program: 'link a counter module and main that both define a global counter',
  why: 'int counter is defined (not declared extern) in the header included by both files',
  build(c) {
    c.w('counter.h', `${padLines(c, '//')}int counter = ${rint(0, 9)};\nvoid bump(void);\n`);
    c.w('counter.c', '#include "counter.h"\nvoid bump(void) { counter++; }\n');
    c.w('main.c', '#include <stdio.h>\n#include "counter.h"\nint main(void) { bump(); printf("%d\\n", counter); return 0; }\n');
    return ['gcc', 'main.c', 'counter.c', '-o', 'app'];
  },
  sanity: /multiple definition of `counter'/, sig: /multiple definition of `counter'/,
});

def({
  name: 'gcc-werror-unused-variable', extra: true, tool: 'gcc', cls: 'ExecutionFailure',
  program: 'compile a checksum tool with -Wall -Werror',
  why: 'a leftover temporary variable is unused',
  build(c) {
    c.w('sum.c', `#include <stdio.h>
${padLines(c, '//')}
int main(int argc, char **argv) {
    int tmp_${rstr(3)} = ${rint(1, 99)};
    unsigned s = 0;
    for (int i = 1; i < argc; i++) s += (unsigned)argv[i][0];
    printf("%u\\n", s);
    return 0;
}
`);
    return ['gcc', '-Wall', '-Werror', '-c', 'sum.c', '-o', 'sum.o'];
  },
  sanity: /unused variable/, sig: /error: unused variable/,
});

def({
  name: 'gxx-no-matching-std-max', extra: true, tool: 'g++', cls: 'ExecutionFailure',
  program: 'clamp a measured value to a configured floor with std::max',
  why: 'std::max is called with an int and a double; template deduction fails',
  build(c) {
    c.w('clamp.cpp', `#include <algorithm>
#include <iostream>
${padLines(c, '//')}
int main() {
    int measured = ${rint(1, 99)};
    double floor_v = ${rint(1, 9)}.5;
    std::cout << std::max(measured, floor_v) << "\\n";
}
`);
    return ['g++', '-c', 'clamp.cpp', '-o', 'clamp.o'];
  },
  sanity: /no matching function for call to .max/, sig: /error: no matching function for call to .max/,
});

def({
  name: 'gcc-wformat-warning', tool: 'gcc', cls: 'StderrWarning',
  program: 'compile a size reporter with -Wall',
  why: '%d used for a size_t: format warning only',
  build(c) {
    c.w('size.c', `#include <stdio.h>
#include <string.h>
${padLines(c, '//')}
int main(void) { const char *s = "${rstr(rint(3, 12))}"; printf("%d\\n", strlen(s)); return 0; }
`);
    return ['gcc', '-Wall', '-c', 'size.c', '-o', 'size.o'];
  },
  sanity: /warning: format/, n: 2,
});

def({
  name: 'c-stack-smashing', n: 3, tool: 'c', cls: 'ExecutionFailure', code: 134,
  program: 'copy a user name into a fixed 8-byte buffer and greet the user',
  why: 'strcpy overflows the stack buffer; the stack protector aborts',
  build(c) {
    c.w('greet.c', `#include <stdio.h>
#include <string.h>
${padLines(c, '//')}
void greet(const char *name) { char buf[8]; strcpy(buf, name); printf("hi %s\\n", buf); }
int main(int argc, char **argv) { greet(argv[1]); return 0; }
`);
    c.sh('gcc -O0 -fstack-protector-all -o greet greet.c');
    return ['./greet', `user_${rstr(rint(20, 40))}`];
  },
  sanity: /stack smashing detected/, sig: /stack smashing detected/,
});

def({
  name: 'c-free-invalid-pointer', tool: 'c', cls: 'ExecutionFailure', code: 134,
  program: 'trim leading spaces from a heap string and free it',
  why: 'free() is called on the advanced pointer, not the malloc result',
  build(c) {
    const sp = ' '.repeat(rint(2, 8));
    c.w('trim.c', `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
${padLines(c, '//')}
int main(void) {
    char *s = strdup("${sp}value-${rint(1, 999)}");
    while (*s == ' ') s++;
    printf("%s\\n", s);
    free(s);
    return 0;
}
`);
    c.sh('gcc -O0 -o trim trim.c');
    return ['./trim'];
  },
  sanity: /free\(\): invalid pointer/, sig: /^free\(\): invalid pointer/,
});

def({
  name: 'c-sigfpe-silent', tool: 'c', cls: 'ExecutionFailure', code: 136, silent: true,
  program: 'compute average request size from totals passed as arguments',
  why: 'request count is 0; integer division by zero raises SIGFPE with no output',
  build(c) {
    c.w('avg.c', `#include <stdlib.h>
#include <stdio.h>
${padLines(c, '//')}
int main(int argc, char **argv) { volatile int total = atoi(argv[1]), n = atoi(argv[2]); printf("%d\\n", total / n); return 0; }
`);
    c.sh('gcc -O0 -o avg avg.c');
    return ['./avg', String(rint(100, 9999)), '0'];
  },
  sanity: /^$/,
});

def({
  name: 'cxx-vector-at-out-of-range', n: 3, tool: 'c++', cls: 'ExecutionFailure', code: 134,
  program: 'print the N-th slowest request from a vector of latencies',
  why: 'N is larger than the vector; .at() throws std::out_of_range uncaught',
  build(c) {
    const n = rint(3, 8), idx = n + rint(0, 5);
    c.w('nth.cpp', `#include <vector>
#include <iostream>
${padLines(c, '//')}
int main() {
    std::vector<int> lat(${n}, 42);
    std::cout << lat.at(${idx}) << "\\n";
}
`);
    c.sh('g++ -O0 -o nth nth.cpp');
    return ['./nth'];
  },
  sanity: /std::out_of_range/, sig: /what\(\): /,
});

def({
  name: 'c-rec-perror-defaults', tool: 'c', cls: 'RecoveredError',
  program: 'load saved state from a binary file or start from defaults',
  why: 'state file missing: perror is printed, defaults are used, exit 0',
  build(c) {
    c.w('state.c', `#include <stdio.h>
${padLines(c, '//')}
int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); puts("starting with defaults"); return 0; }
    fclose(f); puts("state loaded"); return 0;
}
`);
    c.sh('gcc -O0 -o state state.c');
    return ['./state', path.join(c.dir, `state-${rint(1, 99)}.bin`)];
  },
  sanity: /No such file or directory/, sig: /: No such file or directory/,
});

// =====================================================================
// MAKE / CMAKE
// =====================================================================
def({
  name: 'make-no-makefile', extra: true, tool: 'make', cls: 'ExecutionFailure', code: 2,
  program: 'run make in the checkout root to build the project',
  why: 'the Makefile lives in a subdirectory; there is none in the cwd',
  build(c) {
    c.w(`src-${rstr(3)}/Makefile`, 'all:\n\t@echo ok\n');
    return ['make'];
  },
  sanity: /No targets specified and no makefile found/, sig: /No targets specified and no makefile found/, n: 2,
});

def({
  name: 'make-recipe-before-target', tool: 'make', cls: 'ExecutionFailure', code: 2,
  program: 'Makefile with a build rule for a small tool',
  why: 'a tab-indented line sits above the first target',
  build(c) {
    c.w('Makefile', `${padLines(c, '#', 0, 6)}\techo preparing -O${rint(0, 3)}\nall:\n\t@echo built\n`);
    return ['make'];
  },
  sanity: /recipe commences before first target/, sig: /recipe commences before first target/,
});

def({
  name: 'make-recipe-python-missing-fixture', tool: 'make', cls: 'ExecutionFailure', code: 2,
  program: 'make test runs a Python fixture loader before the tests',
  why: 'the fixture file is missing; Python raises FileNotFoundError and make reports Error 1',
  build(c) {
    const f = `fixtures/users-${rint(1, 9)}.csv`;
    c.w('load.py', `${padLines(c, '#')}import csv\nrows = list(csv.reader(open("${f}")))\nprint(len(rows))\n`);
    c.w('Makefile', `${padLines(c, '#', 0, 4)}test:\n\tpython3 load.py\n\t@echo tests passed\n`);
    return ['make', 'test'];
  },
  sanity: /make: \*\*\* \[Makefile:\d+: test\] Error 1/, sig: /^FileNotFoundError: /,
});

def({
  name: 'make-rec-ignored-rmdir', tool: 'make', cls: 'RecoveredError',
  program: 'make clean removes the build directory, ignoring errors with a - prefix',
  why: 'the build directory does not exist; rmdir fails, make prints "(ignored)" and exits 0',
  build(c) {
    c.w('Makefile', `${padLines(c, '#', 0, 5)}clean:\n\t-rmdir build-${rint(1, 9)}\n\t@echo cleaned\n`);
    return ['make', 'clean'];
  },
  sanity: /Error 1 \(ignored\)/, sig: /^rmdir: failed to remove/,
});

def({
  name: 'make-warn-overriding-recipe', tool: 'make', cls: 'StderrWarning',
  program: 'Makefile that includes a local override of the build target',
  why: 'two recipes for the same target: make warns and uses the later one',
  build(c) {
    c.w('Makefile', `${padLines(c, '#', 0, 5)}build:\n\t@echo building v${rint(1, 9)}\n\nbuild:\n\t@echo building local\n`);
    return ['make', 'build'];
  },
  sanity: /warning: overriding recipe for target 'build'/, n: 2,
});

def({
  name: 'make-up-to-date', tool: 'make', cls: 'NormalOutput',
  program: 'rebuild an output file whose input has not changed',
  why: 'nothing to do; message goes to stdout',
  build(c) {
    c.w('in.txt', 'x\n');
    c.w('Makefile', 'out.txt: in.txt\n\tcp in.txt out.txt\n');
    c.sh('make -s && touch out.txt');
    return ['make', 'out.txt'];
  },
  sanity: /^$/, n: 2,
});

def({
  name: 'cmake-version-too-new', tool: 'cmake', cls: 'ExecutionFailure',
  program: 'configure a CMake project that requires a recent CMake',
  why: 'cmake_minimum_required asks for a version newer than the installed 3.25',
  build(c) {
    c.w('CMakeLists.txt', `${padLines(c, '#', 0, 4)}cmake_minimum_required(VERSION 3.${rint(28, 31)})\nproject(app C)\nadd_executable(app main.c)\n`);
    c.w('main.c', 'int main(void){return 0;}\n');
    return ['cmake', '-S', '.', '-B', 'build'];
  },
  sanity: /or higher is required/, sig: /CMake 3\.\d+ or higher is required/,
});

def({
  name: 'cmake-no-cmakelists', tool: 'cmake', cls: 'ExecutionFailure',
  program: 'configure the project by running cmake on the build directory',
  why: 'cmake is pointed at the empty build dir instead of the source dir',
  build(c) {
    fs.mkdirSync(path.join(c.dir, `build-${pick(['debug', 'release', 'ci'])}`));
    return ['cmake', '-S', path.join(c.dir, fs.readdirSync(c.dir).find((d) => d.startsWith('build-'))), '-B', 'out'];
  },
  sanity: /does not appear to contain CMakeLists\.txt/, sig: /does not appear to contain CMakeLists\.txt/,
});

def({
  name: 'cmake-dev-warning-no-project', tool: 'cmake', cls: 'StderrWarning',
  program: 'configure a tiny CMake project',
  why: 'no project() call: CMake prints a developer warning and continues',
  build(c) {
    c.w('CMakeLists.txt', `cmake_minimum_required(VERSION 3.${rint(13, 20)})\n${padLines(c, '#', 0, 3)}add_custom_target(noop)\n`);
    return ['cmake', '-S', '.', '-B', 'build'];
  },
  sanity: /CMake Warning \(dev\)/, n: 2,
});

// =====================================================================
// GIT
// =====================================================================
const GITINIT = 'git init -q -b main . && git config user.email dev@example.com && git config user.name Dev';

def({
  name: 'git-worktree-already-checked-out', tool: 'git', cls: 'ExecutionFailure',
  program: 'add a second worktree for an existing feature branch',
  why: 'the branch is already checked out in the main worktree',
  build(c) {
    const br = `feature/${pick(['login', 'cache', 'export', 'billing'])}-${rint(1, 99)}`;
    c.sh(`${GITINIT} && echo a > a.txt && git add . && git commit -qm init && git checkout -qb ${br}`);
    return ['git', 'worktree', 'add', `../wt-${rstr(4)}`, br];
  },
  sanity: /is already checked out at/, sig: /^fatal: '.*' is already checked out at/,
});

def({
  name: 'git-stash-pop-overwrite', tool: 'git', cls: 'ExecutionFailure',
  program: 'stash work in progress, edit the same file, then pop the stash',
  why: 'the file has local changes again, so stash pop refuses to overwrite it',
  build(c) {
    const f = pick(['config.yml', 'app.py', 'README.md']);
    c.sh(`${GITINIT} && echo v1 > ${f} && git add . && git commit -qm init && echo stash-${rint(1, 99)} >> ${f} && git stash -q && echo local >> ${f}`);
    return ['git', 'stash', 'pop'];
  },
  sanity: /would be overwritten by merge/, sig: /^error: Your local changes to the following files would be overwritten/,
});

def({
  name: 'git-cherry-pick-conflict', n: 3, tool: 'git', cls: 'ExecutionFailure', stream: 'merged',
  program: 'cherry-pick a timeout fix from a release branch onto main',
  why: 'main changed the same line, the pick conflicts',
  build(c) {
    const t = rint(10, 90);
    c.sh(`${GITINIT} && printf 'timeout=5\\n' > svc.conf && git add . && git commit -qm init && git checkout -qb release && printf 'timeout=${t}\\n' > svc.conf && git commit -qam "bump timeout to ${t}" && git checkout -q main && printf 'timeout=7\\n' > svc.conf && git commit -qam "tune timeout"`);
    return ['git', 'cherry-pick', 'release'];
  },
  sanity: /CONFLICT/, sig: /^error: could not apply [0-9a-f]+\.\.\./,
});

def({
  name: 'git-submodule-missing-repo', tool: 'git', cls: 'ExecutionFailure',
  program: 'add a sibling library repository as a git submodule',
  why: 'the library path does not exist',
  build(c) {
    const lib = `../lib-${rstr(5)}`;
    c.sh(`${GITINIT} && echo a > a.txt && git add . && git commit -qm init`);
    return ['git', '-c', 'protocol.file.allow=always', 'submodule', 'add', lib, 'vendor/lib'];
  },
  sanity: /fatal: repository '.*' does not exist/, sig: /^fatal: repository '.*' does not exist/,
});

def({
  name: 'git-commit-nothing-stderr-empty', tool: 'git', cls: 'ExecutionFailure', code: 1, silent: true,
  program: 'commit the generated changelog after regenerating it',
  why: 'regeneration produced identical content; git commit exits 1 and prints its reason on stdout only',
  build(c) {
    c.sh(`${GITINIT} && echo "v${rint(1, 9)}" > CHANGELOG.md && git add . && git commit -qm init`);
    return ['git', 'commit', '-am', 'update changelog'];
  },
  sanity: /^$/, n: 2,
});

def({
  name: 'git-apply-patch-fails', tool: 'git', cls: 'ExecutionFailure',
  program: 'apply a saved patch to the service config',
  why: 'the patch context no longer matches the file',
  build(c) {
    const pre = Array.from({ length: rint(2, 9) }, (_, i) => `line${i}`).join('\n');
    c.w('app.conf', `${pre}\nworkers=4\nport=8080\n`);
    c.w('fix.patch', `--- a/app.conf\n+++ b/app.conf\n@@ -1,2 +1,2 @@\n-workers=2\n-port=${rint(3000, 3999)}\n+workers=8\n+port=9090\n`);
    c.sh(GITINIT);
    return ['git', 'apply', 'fix.patch'];
  },
  sanity: /patch does not apply/, sig: /^error: patch failed: /,
});

def({
  name: 'git-branch-already-exists', extra: true, tool: 'git', cls: 'ExecutionFailure', code: 128,
  program: 'create a topic branch for the next task',
  why: 'a branch with that name already exists',
  build(c) {
    const br = `fix/${pick(['timeout', 'typo', 'npe', 'leak'])}-${rint(100, 999)}`;
    c.sh(`${GITINIT} && echo a > a && git add . && git commit -qm init && git branch ${br}`);
    return ['git', 'checkout', '-b', br];
  },
  sanity: /already exists/, sig: /^fatal: a branch named/,
});

def({
  name: 'git-ambiguous-revision', extra: true, tool: 'git', cls: 'ExecutionFailure', code: 128,
  program: 'diff the working branch against the remote main branch',
  why: 'the repo has no remote, so origin/<branch> is unknown',
  build(c) {
    const br = pick(['main', 'develop', 'trunk', 'release-2']);
    c.sh(`${GITINIT} && echo a > a && git add . && git commit -qm init`);
    return ['git', 'diff', '--stat', `origin/${br}`];
  },
  sanity: /ambiguous argument/, sig: /^fatal: ambiguous argument/,
});

def({
  name: 'git-crlf-warning', tool: 'git', cls: 'StderrWarning',
  program: 'stage a new script in a repo configured with core.autocrlf=true',
  why: 'git warns that LF will be replaced by CRLF',
  build(c) {
    const f = `scripts/run-${rint(1, 99)}.sh`;
    c.sh(`${GITINIT} && git config core.autocrlf true && mkdir -p scripts && printf '#!/bin/sh\\necho hi\\n' > ${f}`);
    return ['git', 'add', f];
  },
  sanity: /LF will be replaced by CRLF/, n: 2,
});

def({
  name: 'git-clone-local-progress', tool: 'git', cls: 'Uncertain',
  program: 'clone a local repository into a working copy',
  why: '"Cloning into" and "done." progress on stderr',
  build(c) {
    c.sh(`mkdir origin && cd origin && ${GITINIT} && echo a > a && git add . && git commit -qm init`);
    return ['git', 'clone', 'origin', `copy-${rstr(4)}`];
  },
  sanity: /Cloning into/, n: 2,
});

def({
  name: 'git-stash-nothing', tool: 'git', cls: 'NormalOutput',
  program: 'stash local changes before switching branches',
  why: 'clean tree: "No local changes to save" goes to stdout',
  build(c) {
    c.sh(`${GITINIT} && echo ${rint(1, 99)} > a && git add . && git commit -qm init`);
    return ['git', 'stash'];
  },
  sanity: /^$/, n: 2,
});

// =====================================================================
// DOCKER (no daemon on this machine)
// =====================================================================
def({
  name: 'docker-ps-no-daemon', tool: 'docker', cls: 'ExecutionFailure',
  program: 'list running containers filtered by name',
  why: 'the docker daemon is not running',
  build(c) { return ['docker', 'ps', '--filter', `name=web-${rint(1, 99)}`]; },
  sanity: /Cannot connect to the Docker daemon/, sig: /Cannot connect to the Docker daemon/,
});

def({
  name: 'docker-run-no-daemon', extra: true, tool: 'docker', cls: 'ExecutionFailure',
  program: 'start a database container published on a local port',
  why: 'the docker daemon is not running',
  build(c) { return ['docker', 'run', '--rm', '-d', '-p', `${rint(15000, 25000)}:5432`, '--name', `pg-${rstr(4)}`, 'postgres:16']; },
  sanity: /Cannot connect to the Docker daemon/, sig: /Cannot connect to the Docker daemon/,
});

def({
  name: 'docker-unknown-flag', tool: 'docker', cls: 'ExecutionFailure', code: 125,
  program: 'run a web container detached',
  why: 'the flag is misspelled --detatch',
  build(c) { return ['docker', 'run', '--detatch', '--name', `web-${rint(1, 99)}`, 'nginx:1.25']; },
  sanity: /unknown flag: --detatch/, sig: /unknown flag: --detatch/,
});

// =====================================================================
// CURL / JQ / SQLITE / PSQL / REDIS
// =====================================================================
def({
  name: 'curl-http-500-fail', tool: 'curl', cls: 'ExecutionFailure', code: 22,
  program: 'call a local health endpoint with curl --fail and stop on HTTP errors',
  why: 'the local server answers 500',
  build(c) {
    c.w('srv.mjs', `import http from 'node:http';
const s = http.createServer((q, r) => { r.writeHead(500); r.end('boom'); });
s.listen(0, '127.0.0.1', () => { console.log(s.address().port); });
setTimeout(() => s.close(), 4000).unref();
`);
    c.w('run.sh', `node srv.mjs > port.txt 2>/dev/null &
for i in $(seq 50); do [ -s port.txt ] && break; sleep 0.05; done
exec curl -sS --fail -o /dev/null "http://127.0.0.1:$(cat port.txt)/health?probe=${rint(1, 999)}"
`);
    return ['bash', 'run.sh'];
  },
  sanity: /returned error: 500/, sig: /^curl: \(22\)/,
});

def({
  name: 'curl-file-missing', extra: true, tool: 'curl', cls: 'ExecutionFailure', code: 37,
  program: 'read a local fixture through a file:// URL with curl',
  why: 'the fixture file does not exist',
  build(c) { return ['curl', '-sS', `file://${c.dir}/fixtures/resp-${rint(1, 99)}.json`]; },
  sanity: /Couldn't open file/, sig: /^curl: \(37\)/,
});

def({
  name: 'curl-timeout-no-response', tool: 'curl', cls: 'ExecutionFailure', code: 28,
  program: 'query a local service with a half-second curl timeout',
  why: 'the service accepts the connection but never answers',
  build(c) {
    c.w('hang.py', 'import socket, sys, time\ns = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(5)\nprint(s.getsockname()[1], flush=True)\ntime.sleep(4)\n');
    c.w('run.sh', `python3 hang.py > port.txt &
P=$!
for i in $(seq 50); do [ -s port.txt ] && break; sleep 0.05; done
curl -sS -m 0.${rint(3, 6)} "http://127.0.0.1:$(cat port.txt)/status"
rc=$?; kill $P; exit $rc
`);
    return ['bash', 'run.sh'];
  },
  sanity: /Operation timed out after/, sig: /^curl: \(28\)/,
});

def({
  name: 'curl-progress-meter', tool: 'curl', cls: 'Uncertain',
  program: 'copy a local file with curl -o, leaving the progress meter on',
  why: 'the progress table is the only stderr',
  build(c) {
    c.w('data.bin', 'x'.repeat(rint(1000, 90000)));
    return ['curl', '-o', 'copy.bin', `file://${c.dir}/data.bin`];
  },
  sanity: /% Total/, n: 2,
});

def({
  name: 'jq-iterate-null', n: 3, tool: 'jq', cls: 'ExecutionFailure', code: 5,
  program: 'list item ids from a saved API response with jq',
  why: 'the response has "data", not "items"',
  build(c) {
    const data = { data: Array.from({ length: rint(1, 6) }, (_, i) => ({ id: `it-${i}`, qty: rint(1, 9) })) };
    c.w('resp.json', JSON.stringify(data, null, 2) + '\n');
    return ['jq', '-r', '.items[] | .id', 'resp.json'];
  },
  sanity: /Cannot iterate over null/, sig: /^jq: error \(at .*\): Cannot iterate over null/,
});

def({
  name: 'jq-compile-error', extra: true, tool: 'jq', cls: 'ExecutionFailure', code: 3,
  program: 'filter items priced above a threshold with jq',
  why: 'the select() call is missing its closing parenthesis',
  build(c) {
    c.w('items.json', JSON.stringify([{ price: 5 }, { price: 50 }]));
    return ['jq', `.[] | select(.price > ${rint(5, 40)}`, 'items.json'];
  },
  sanity: /compile error/, sig: /^jq: error: syntax error/,
});

def({
  name: 'jq-e-false-silent', tool: 'jq', cls: 'ExecutionFailure', code: 1, silent: true,
  program: 'gate a deploy on the ready flag of a status file with jq -e',
  why: 'ready is false: jq -e exits 1, prints "false" on stdout and nothing on stderr',
  build(c) {
    c.w('status.json', JSON.stringify({ ready: false, checks: rint(1, 9) }));
    return ['jq', '-e', '.ready', 'status.json'];
  },
  sanity: /^$/, n: 2,
});

def({
  name: 'jq-ok', tool: 'jq', cls: 'NormalOutput',
  program: 'extract names from a JSON list with jq',
  why: 'works',
  build(c) {
    c.w('l.json', JSON.stringify(Array.from({ length: rint(1, 5) }, (_, i) => ({ name: `n${i}` }))));
    return ['jq', '-r', '.[].name', 'l.json'];
  },
  sanity: /^$/, n: 2,
});

def({
  name: 'sqlite-fk-constraint', tool: 'sqlite3', cls: 'ExecutionFailure',
  program: 'load orders into a SQLite database with foreign keys enforced',
  why: 'an order references a customer id that does not exist',
  build(c) {
    const cid = rint(100, 999);
    c.w('load.sql', `PRAGMA foreign_keys = ON;
${padLines(c, '--', 0, 6)}CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), total REAL);
INSERT INTO customers VALUES (1, 'ana');
INSERT INTO orders (customer_id, total) VALUES (1, 9.5);
INSERT INTO orders (customer_id, total) VALUES (${cid}, 12.0);
`);
    return ['sqlite3', '-bail', 'shop.db', '.read load.sql'];
  },
  sanity: /FOREIGN KEY constraint failed/, sig: /FOREIGN KEY constraint failed/,
});

def({
  name: 'sqlite-no-such-column', extra: true, tool: 'sqlite3', cls: 'ExecutionFailure',
  program: 'report users by e-mail domain from a SQLite database',
  why: 'the query misspells email as emial',
  build(c) {
    c.w('q.sql', `CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT);
INSERT INTO users (email) VALUES ('a@x.org');
${padLines(c, '--', 0, 6)}SELECT substr(emial, instr(emial, '@') + 1) AS domain, count(*) FROM users GROUP BY ${rint(1, 1)};
`);
    return ['sqlite3', '-bail', ':memory:', '.read q.sql'];
  },
  sanity: /no such column: emial/, sig: /no such column: emial/,
});

const PSQL = ['psql', '-X', '-q', '-h', '127.0.0.1', '-U', 'postgres', '-d', 'test', '-v', 'ON_ERROR_STOP=1'];

def({
  name: 'psql-not-null-violation', n: 3, tool: 'psql', cls: 'ExecutionFailure', code: 3,
  program: 'seed a temp users table from a SQL script',
  why: 'one seed row has no email but the column is NOT NULL',
  build(c) {
    c.w('seed.sql', `CREATE TEMP TABLE users_tmp (id int PRIMARY KEY, email text NOT NULL);
${padLines(c, '--', 0, 6)}INSERT INTO users_tmp VALUES (1, 'a@example.org');
INSERT INTO users_tmp VALUES (${rint(2, 99)}, NULL);
`);
    return [...PSQL, '-f', 'seed.sql'];
  },
  sanity: /violates not-null constraint/, sig: /ERROR:\s+null value in column "email"/,
});

def({
  name: 'psql-invalid-integer-input', extra: true, tool: 'psql', cls: 'ExecutionFailure',
  program: 'filter a temp table by an id typed in by the user',
  why: 'the id value has a stray letter',
  build(c) {
    const bad = `${rint(10, 999)}${pick(['a', 'O', 'l', 'x'])}`;
    return [...PSQL, '-c', `CREATE TEMP TABLE t (id int); SELECT * FROM t WHERE id = '${bad}';`];
  },
  sanity: /invalid input syntax for type integer/, sig: /^ERROR:\s+invalid input syntax for type integer/,
});

def({
  name: 'psql-column-missing-hint', tool: 'psql', cls: 'ExecutionFailure', code: 3,
  program: 'select e-mails from a temp users table via a script',
  why: 'misspelled column; PostgreSQL suggests the right one',
  build(c) {
    c.w('q.sql', `CREATE TEMP TABLE users_tmp (id int, email text);
${padLines(c, '--', 0, 6)}SELECT u.emial FROM users_tmp u WHERE u.id = ${rint(1, 99)};
`);
    return [...PSQL, '-f', 'q.sql'];
  },
  sanity: /column u\.emial does not exist/, sig: /ERROR:\s+column u\.emial does not exist/,
});

def({
  name: 'psql-copy-missing-file', extra: true, tool: 'psql', cls: 'ExecutionFailure', code: 3,
  program: 'bulk-load a CSV into a temp table with \\copy',
  why: 'the CSV path is wrong',
  build(c) {
    c.w('load.sql', `CREATE TEMP TABLE prices (sku text, price numeric);
${padLines(c, '--', 0, 5)}\\copy prices FROM 'exports/prices-${rint(1, 30)}.csv' WITH (FORMAT csv)
`);
    return [...PSQL, '-f', 'load.sql'];
  },
  sanity: /No such file or directory/, sig: /No such file or directory/,
});

def({
  name: 'redis-set-ok', tool: 'redis-cli', cls: 'NormalOutput',
  program: 'store a short-lived job marker key in local redis',
  why: 'works (key heldout2:tmp:*, 20 s expiry)',
  build(c) { return ['redis-cli', '-h', '127.0.0.1', 'SET', `heldout2:tmp:${rstr(6)}`, String(rint(1, 99)), 'EX', '20']; },
  sanity: /^$/, n: 2,
});

// =====================================================================
// PERL
// =====================================================================
def({
  name: 'perl-cant-locate-method', tool: 'perl', cls: 'ExecutionFailure',
  program: 'parse a report with a helper class that was never loaded',
  why: 'Report::Parser is used without require/use',
  build(c) {
    c.w('report.pl', `use strict; use warnings;
${padLines(c, '#')}
my $p = Report::Parser->new(file => "r${rint(1, 99)}.txt");
print $p->summary, "\\n";
`);
    return ['perl', 'report.pl'];
  },
  sanity: /Can't locate object method "new" via package "Report::Parser"/, sig: /^Can't locate object method "new"/,
});

def({
  name: 'perl-missing-module', tool: 'perl', cls: 'ExecutionFailure',
  program: 'read a YAML config with YAML::Tiny and print the service name',
  why: 'YAML::Tiny is not installed',
  build(c) {
    c.w('conf.pl', `${padLines(c, '#')}use YAML::Tiny;\nmy $y = YAML::Tiny->read("svc-${rint(1, 9)}.yml");\nprint $y->[0]{name}, "\\n";\n`);
    return ['perl', 'conf.pl'];
  },
  sanity: /Can't locate YAML\/Tiny\.pm in @INC/, sig: /^Can't locate YAML\/Tiny\.pm/,
});

def({
  name: 'perl-division-by-zero', extra: true, tool: 'perl', cls: 'ExecutionFailure',
  program: 'print the hit ratio from cache counters',
  why: 'the lookup counter is zero',
  build(c) {
    c.w('ratio.pl', `use strict; use warnings;
${padLines(c, '#')}
my %c = (hits => ${rint(0, 50)}, lookups => 0);
printf "%.2f\\n", $c{hits} / $c{lookups};
`);
    return ['perl', 'ratio.pl'];
  },
  sanity: /Illegal division by zero/, sig: /^Illegal division by zero/,
});

def({
  name: 'perl-warn-odd-hash', tool: 'perl', cls: 'StderrWarning',
  program: 'build an options hash from a flat list of command-line pairs',
  why: 'odd number of elements: perl warns and continues',
  build(c) {
    c.w('opts.pl', `use strict; use warnings;
${padLines(c, '#')}
my %o = ("verbose", 1, "level", ${rint(1, 9)}, "dry-run");
print scalar(keys %o), "\\n";
`);
    return ['perl', 'opts.pl'];
  },
  sanity: /Odd number of elements in hash assignment/, n: 2,
});

def({
  name: 'perl-rec-eval-skip-record', tool: 'perl', cls: 'RecoveredError',
  program: 'import records, skipping any that fail checksum validation',
  why: 'one record fails; the die is caught by eval and a skip line is warned',
  build(c) {
    const bad = rint(2, 9);
    c.w('import.pl', `use strict; use warnings;
${padLines(c, '#')}
my $ok = 0;
for my $i (1 .. 10) {
    eval { die "bad checksum\\n" if $i == ${bad}; $ok++; 1 } or warn "skipping record $i: $@";
}
print "imported $ok\\n";
`);
    return ['perl', 'import.pl'];
  },
  sanity: /skipping record \d+: bad checksum/, sig: /^skipping record \d+: bad checksum/,
});

// =====================================================================
// SHELL / COREUTILS / ARCHIVERS / TEXT TOOLS
// =====================================================================
def({
  name: 'bash-crlf-shebang', tool: 'bash', cls: 'ExecutionFailure', code: 127,
  program: 'run a deploy script that was saved with Windows line endings',
  why: 'the shebang line ends in \\r, so the interpreter /bin/bash\\r is not found (bash 5.2 wording)',
  build(c) {
    const f = `deploy-${rint(1, 9)}.sh`;
    c.w(f, `#!/bin/bash\r\necho deploying\r\n`);
    fs.chmodSync(path.join(c.dir, f), 0o755);
    return ['bash', '-c', `./${f}`];
  },
  sanity: /cannot execute: required file not found/, sig: /cannot execute: required file not found/,
});

def({
  name: 'bash-syntax-unexpected-fi', tool: 'bash', cls: 'ExecutionFailure', code: 2,
  program: 'release script that checks the tag before pushing',
  why: 'an if block lacks its then',
  build(c) {
    c.w('release.sh', `#!/bin/bash
${padLines(c, '#')}TAG=v${rint(1, 5)}.${rint(0, 9)}
if [ -z "$TAG" ]
  echo "no tag"; exit 1
fi
echo "releasing $TAG"
`);
    return ['bash', 'release.sh'];
  },
  sanity: /syntax error near unexpected token `fi'/, sig: /syntax error near unexpected token `fi'/,
});

def({
  name: 'bash-arith-division-by-zero', extra: true, tool: 'bash', cls: 'ExecutionFailure',
  program: 'compute the percentage of passed tests in a shell script',
  why: 'no tests ran, total is 0',
  build(c) {
    c.w('pct.sh', `#!/bin/bash
set -e
${padLines(c, '#')}passed=${rint(0, 9)}
total=0
echo "pass rate: $(( passed * 100 / total ))%"
`);
    return ['bash', 'pct.sh'];
  },
  sanity: /division by 0/, sig: /division by 0/,
});

def({
  name: 'sh-bad-substitution', tool: 'sh', cls: 'ExecutionFailure', code: 2,
  program: 'POSIX sh build script that lower-cases the target name',
  why: '${var,,} is a bash-only expansion; dash rejects it',
  build(c) {
    c.w('build.sh', `${padLines(c, '#')}TARGET=${pick(['Linux', 'Darwin', 'FreeBSD'])}\necho "building for \${TARGET,,}"\n`);
    return ['sh', 'build.sh'];
  },
  sanity: /Bad substitution/, sig: /Bad substitution/,
});

def({
  name: 'bash-readonly-variable', extra: true, tool: 'bash', cls: 'ExecutionFailure',
  program: 'script that sets a prefix, then tries to override it per environment',
  why: 'the prefix was declared readonly',
  build(c) {
    c.w('env.sh', `#!/bin/bash
set -e
readonly PREFIX=/opt/app
${padLines(c, '#')}PREFIX=/srv/app-${rint(1, 9)}
echo "$PREFIX"
`);
    return ['bash', 'env.sh'];
  },
  sanity: /readonly variable/, sig: /PREFIX: readonly variable/,
});

def({
  name: 'timeout-124-silent', tool: 'timeout', cls: 'ExecutionFailure', code: 124, silent: true,
  program: 'wait for a migration lock with a hard time limit via timeout(1)',
  why: 'the wait exceeds the limit; timeout exits 124 without output',
  build(c) { return ['timeout', `0.${rint(2, 4)}`, 'sleep', String(rint(3, 9))]; },
  sanity: /^$/,
});

def({
  name: 'bash-rec-optional-dep', tool: 'bash', cls: 'RecoveredError',
  program: 'check an optional Python dependency and fall back to JSON output when it is missing',
  why: 'tomli_w is not installed; the failure is reported and the script continues',
  build(c) {
    c.w('fmt.sh', `#!/bin/bash
${padLines(c, '#')}if ! out=$(python3 -c "import tomli_w" 2>&1); then
  echo "optional dependency check failed: $(echo "$out" | tail -n1); using json output" >&2
fi
echo '{"n": ${rint(1, 99)}}'
`);
    return ['bash', 'fmt.sh'];
  },
  sanity: /No module named 'tomli_w'/, sig: /^optional dependency check failed/,
});

def({
  name: 'bash-progress-stderr', tool: 'bash', cls: 'Uncertain',
  program: 'multi-step build script announcing each step on stderr',
  why: 'progress lines only',
  build(c) {
    const n = rint(3, 5);
    c.w('steps.sh', `#!/bin/bash\n${padLines(c, '#')}for i in $(seq ${n}); do echo "==> step $i/${n}" >&2; done\necho done\n`);
    return ['bash', 'steps.sh'];
  },
  sanity: /==> step 1/, n: 2,
});

def({
  name: 'bash-pipefail-cat-missing', tool: 'bash', cls: 'ExecutionFailure', code: 1,
  program: 'count ERROR lines in the service log with a cat | grep | wc pipeline under set -o pipefail',
  why: 'the log file name is wrong; cat fails and pipefail makes the pipeline fail',
  build(c) {
    c.w(`logs/service-${rint(1, 9)}.log`, 'INFO start\nERROR boom\n');
    return ['bash', '-c', `set -o pipefail; cat logs/service.log | grep ERROR | wc -l`];
  },
  sanity: /No such file or directory/, sig: /^cat: logs\/service\.log: No such file or directory/,
});

def({
  name: 'sed-unterminated-s', tool: 'sed', cls: 'ExecutionFailure',
  program: 'change the port in a YAML config in place with sed -i',
  why: 'the s command is missing its closing delimiter',
  build(c) {
    c.w('config.yml', 'port: 8080\n');
    return ['sed', '-i', `s/port: 8080/port: ${rint(1000, 99999)}`, 'config.yml'];
  },
  sanity: /unterminated `s' command/, sig: /unterminated `s' command/,
});

def({
  name: 'sed-cant-read', extra: true, tool: 'sed', cls: 'ExecutionFailure', code: 2,
  program: 'bump the image tag in a deployment file with sed -i',
  why: 'the file name is wrong',
  build(c) { return ['sed', '-i', 's/tag: .*/tag: v2/', `k8s/deploy-${pick(['api', 'web', 'worker'])}.yaml`]; },
  sanity: /can't read/, sig: /^sed: can't read/,
});

def({
  name: 'find-exec-missing-terminator', tool: 'find', cls: 'ExecutionFailure',
  program: 'delete old log files with find -exec',
  why: 'the -exec clause lacks its \\; terminator',
  build(c) {
    c.w(`logs/a-${rint(1, 9)}.log`, 'x');
    return ['find', 'logs', '-name', '*.log', '-mtime', `+${rint(1, 30)}`, '-exec', 'rm', '{}'];
  },
  sanity: /missing argument to `-exec'/, sig: /missing argument to `-exec'/,
});

def({
  name: 'find-start-dir-missing', extra: true, tool: 'find', cls: 'ExecutionFailure',
  program: 'list generated protobuf files under the build tree',
  why: 'the build tree has not been generated',
  build(c) { return ['find', path.join(c.dir, `gen-${rstr(4)}`), '-name', '*.pb.go']; },
  sanity: /No such file or directory/, sig: /^find: /,
});

def({
  name: 'xargs-unmatched-quote', tool: 'xargs', cls: 'ExecutionFailure',
  program: 'echo titles from a list through xargs',
  why: 'one title contains an apostrophe',
  build(c) {
    c.w('titles.txt', `intro\nit's-${rint(1, 99)}\nend\n`);
    return ['sh', '-c', 'xargs echo < titles.txt'];
  },
  sanity: /unmatched single quote/, sig: /unmatched single quote/,
});

def({
  name: 'awk-division-by-zero', n: 3, tool: 'awk', cls: 'ExecutionFailure', code: 2,
  program: 'compute bytes per request per line of a stats file with awk',
  why: 'one line has zero requests',
  build(c) {
    const rows = Array.from({ length: rint(1, 6) }, () => `${rint(100, 999)} ${rint(1, 9)}`);
    rows.push(`${rint(100, 999)} 0`);
    c.w('stats.txt', rows.join('\n') + '\n');
    return ['awk', '{ print $1 / $2 }', 'stats.txt'];
  },
  sanity: /division by zero attempted/, sig: /fatal: division by zero attempted/,
});

def({
  name: 'sort-check-disorder', tool: 'sort', cls: 'ExecutionFailure',
  program: 'verify that an allow-list file is sorted with sort -c',
  why: 'one entry is out of order',
  build(c) {
    const names = Array.from({ length: rint(2, 6) }, (_, i) => `host${String(i).padStart(2, '0')}`);
    names.push('alpha-' + rstr(3));
    c.w('allow.txt', names.join('\n') + '\n');
    return ['sort', '-c', 'allow.txt'];
  },
  sanity: /disorder/, sig: /disorder: /,
});

def({
  name: 'gzip-unexpected-eof', tool: 'gzip', cls: 'ExecutionFailure',
  program: 'decompress a downloaded CSV archive with gzip -d',
  why: 'the archive was truncated during transfer',
  build(c) {
    const f = `export-${rint(1, 99)}.csv`;
    c.w(f, Array.from({ length: 2000 }, (_, i) => `${i},${rstr(8)}`).join('\n'));
    c.sh(`gzip ${f} && head -c ${rint(200, 900)} ${f}.gz > t && mv t ${f}.gz`);
    return ['gzip', '-d', `${f}.gz`];
  },
  sanity: /unexpected end of file/, sig: /unexpected end of file/,
});

def({
  name: 'xz-format-not-recognized', tool: 'xz', cls: 'ExecutionFailure',
  program: 'unpack a .xz database dump',
  why: 'the file is actually plain text renamed to .xz',
  build(c) {
    const f = `dump-${rint(1, 99)}.sql.xz`;
    c.w(f, 'CREATE TABLE t (id int);\n');
    return ['xz', '-d', f];
  },
  sanity: /File format not recognized/, sig: /File format not recognized/,
});

def({
  name: 'tar-truncated-archive', tool: 'tar', cls: 'ExecutionFailure',
  program: 'extract a release tarball',
  why: 'the tarball is truncated',
  build(c) {
    c.w('src/big.txt', Array.from({ length: 4000 }, () => rstr(20)).join('\n'));
    const t = `release-${rint(1, 9)}.${rint(0, 9)}.tar.gz`;
    c.sh(`tar czf full.tgz src && head -c ${rint(3000, 20000)} full.tgz > ${t} && rm -rf src full.tgz`);
    return ['tar', 'xzf', t];
  },
  sanity: /Unexpected EOF in archive/, sig: /^tar: Unexpected EOF in archive/,
});

def({
  name: 'unzip-not-a-zip', tool: 'unzip', cls: 'ExecutionFailure', code: 9, stream: 'merged',
  program: 'unpack a downloaded plugin bundle with unzip',
  why: 'the download saved an HTML error page with a .zip name',
  build(c) {
    const f = `plugin-${rint(1, 99)}.zip`;
    c.w(f, '<html><body>404 Not Found</body></html>\n');
    return ['unzip', '-q', f];
  },
  sanity: /End-of-central-directory signature not found/, sig: /cannot find zipfile directory/,
});

def({
  name: 'openssl-bad-certificate', tool: 'openssl', cls: 'ExecutionFailure',
  program: 'print the expiry date of a PEM certificate',
  why: 'the file holds a private key placeholder, not a certificate',
  build(c) {
    const f = `tls-${rint(1, 9)}.pem`;
    c.w(f, '-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n');
    return ['openssl', 'x509', '-in', f, '-noout', '-enddate'];
  },
  sanity: /Could not read certificate|unable to load certificate|Unable to load certificate/i, sig: /^(Could not read certificate|unable to load certificate)/i,
});

def({
  name: 'grep-leading-star-warning', tool: 'grep', cls: 'StderrWarning',
  program: 'count request lines in a log with an extended regex that starts with *',
  why: 'GNU grep 3.8 warns about the leading * and still counts matches (exit 0)',
  build(c) {
    c.w('app.log', Array.from({ length: rint(2, 6) }, (_, i) => `request done ${i}`).join('\n') + '\n');
    return ['grep', '-E', '-c', '*request done', 'app.log'];
  },
  sanity: /warning: \* at start of expression/, n: 2,
});

def({
  name: 'gzip-verbose-ratio', tool: 'gzip', cls: 'Uncertain',
  program: 'compress a log file verbosely',
  why: 'gzip -v prints the compression ratio on stderr',
  build(c) {
    const f = `app-${rint(1, 99)}.log`;
    c.w(f, Array.from({ length: rint(50, 300) }, (_, i) => `line ${i} ok`).join('\n'));
    return ['gzip', '-v', f];
  },
  sanity: /replaced with/, n: 2,
});

def({
  name: 'tar-ok', tool: 'tar', cls: 'NormalOutput',
  program: 'archive a source directory',
  why: 'works',
  build(c) {
    c.w(`src/f${rint(1, 9)}.txt`, 'x');
    return ['tar', 'czf', 'src.tgz', 'src'];
  },
  sanity: /^$/, n: 2,
});

// =====================================================================
// RUNNER
// =====================================================================
function freePort() {
  // pick a port in a high range that is not listening now (checked with ss-free method: try bind via python)
  for (let i = 0; i < 20; i++) {
    const p = rint(20000, 60000);
    const r = spawnSync('python3', ['-c', `import socket;s=socket.socket();s.bind(("127.0.0.1",${p}));s.close()`]);
    if (r.status === 0) return p;
  }
  throw new Error('no free port');
}

function runVariant(d, v) {
  const dir = path.join('/tmp', `${pick(DIRWORDS)}-${rstr(8)}`);
  fs.mkdirSync(dir, { recursive: true });
  const env = { ...baseEnv, GIT_CONFIG_GLOBAL: path.join(dir, '.gitconfig-h2'), GIT_CONFIG_NOSYSTEM: '1' };
  fs.writeFileSync(env.GIT_CONFIG_GLOBAL, '[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = true\n');
  const ctx = {
    dir, v,
    w(rel, s) { const p = path.join(dir, rel); fs.mkdirSync(path.dirname(p), { recursive: true }); fs.writeFileSync(p, s); },
    wb(rel, b) { const p = path.join(dir, rel); fs.mkdirSync(path.dirname(p), { recursive: true }); fs.writeFileSync(p, b); },
    sh(script) {
      const r = spawnSync('bash', ['-c', script], { cwd: dir, env, encoding: 'utf8', timeout: 60000 });
      if (r.status !== 0) throw new Error(`setup failed (${r.status}): ${script}\n${r.stderr}`);
    },
    freePort,
  };
  try {
    const cmd = d.build(ctx);
    if (d.setup) ctx.sh(d.setup);
    let bin = cmd[0], args = cmd.slice(1);
    if (d.stream === 'merged') { args = ['-c', 'exec "$@" 2>&1', 'sh', bin, ...args]; bin = 'sh'; }
    const r = spawnSync(bin, args, { cwd: dir, env, encoding: 'utf8', timeout: d.timeout || 60000, maxBuffer: 64 << 20 });
    if (r.error) throw r.error;
    const code = r.status !== null ? r.status : 128 + os.constants.signals[r.signal];
    const text = d.stream === 'stdout' || d.stream === 'merged' ? r.stdout : r.stderr;
    return { code, text, stdout: r.stdout };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function check(d, res) {
  const { code, text } = res;
  const errs = [];
  if (d.cls === 'ExecutionFailure') {
    if (code === 0) errs.push('exit 0 for ExecutionFailure');
    if (d.code !== undefined && code !== d.code) errs.push(`exit ${code} != planned ${d.code}`);
  } else {
    if (code !== 0) errs.push(`exit ${code} for ${d.cls}`);
    if (d.cls === 'NormalOutput' && text !== '') errs.push('NormalOutput but text not empty');
    if (d.cls !== 'NormalOutput' && text.trim() === '') errs.push(`${d.cls} but text empty`);
  }
  if (d.silent && text !== '') errs.push('planned silent but text not empty');
  if (d.sanity && !(d.sanity.source === '^$' ? text === '' : d.sanity.test(text))) errs.push(`sanity ${d.sanity} failed`);
  if (d.checkStdout && !d.checkStdout.test(res.stdout)) errs.push('stdout check failed');
  let signature = null;
  if (d.cls === 'ExecutionFailure' || d.cls === 'RecoveredError') {
    if (d.silent) {
      signature = code >= 128 ? (SIGNAMES[code - 128] || 'ExecutionError') : 'ExecutionError';
    } else {
      const lines = text.split('\n').filter((l) => d.sig.test(l));
      if (!lines.length) errs.push(`signature ${d.sig} not found`);
      else {
        let line = d.sigLast ? lines[lines.length - 1] : lines[0];
        if (d.sigStrip) line = line.replace(d.sigStrip, '');
        if (d.javaStrip) line = line.replace(/^\s*Exception in thread "[^"]*" /, '').replace(/^\s*Caused by: /, '');
        signature = collapse(line);
      }
    }
  }
  return { errs, signature };
}

const out = [];
const refused = [];
for (const d of defs) {
  if (ONLY && !d.name.includes(ONLY)) continue;
  if (d.extra && !ALL) continue;
  for (let v = 1; v <= d.n; v++) {
    let res;
    try { res = runVariant(d, v); } catch (e) { refused.push(`${d.name}#${v}: ${e.message}`); continue; }
    const { errs, signature } = check(d, res);
    if (VERBOSE) process.stderr.write(`--- ${d.name}#${v} exit=${res.code}\n${res.text.slice(0, 1500)}\n`);
    if (errs.length) { refused.push(`${d.name}#${v}: ${errs.join('; ')}\n    exit=${res.code} text=${JSON.stringify(res.text.slice(0, 600))}`); continue; }
    const isFail = d.cls === 'ExecutionFailure' || d.cls === 'RecoveredError';
    out.push({
      id: `${d.name}#${v}`, tool: d.tool, program: d.program, text: res.text, exit_code: res.code,
      expected: { classification: d.cls, signature: isFail ? signature : null, failure_id: isFail ? (d.fid || d.name) : null },
    });
  }
}
fs.writeFileSync(OUT, out.map((o) => JSON.stringify(o)).join('\n') + (out.length ? '\n' : ''));
const by = (k) => out.reduce((m, o) => ((m[k(o)] = (m[k(o)] || 0) + 1), m), {});
console.log(`seed ${SEED}: wrote ${out.length} cases to ${OUT}; refused ${refused.length}`);
console.log('classes', JSON.stringify(by((o) => o.expected.classification)));
console.log('failure_ids', new Set(out.map((o) => o.expected.failure_id).filter(Boolean)).size);
for (const r of refused) console.log('REFUSED', r);
