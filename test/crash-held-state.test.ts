/**
 * SIGKILL test of the SQLite store's namespaces kept in memory (StateWrite `cached`; the
 * `state_log` rows, src/store/keyed-state.ts). A child process (this file, run again with
 * VIGIL_HELD_STATE_CHILD set) opens a SqliteStore (`synchronous: full`) and writes processor state
 * at random without pause: batches of two to four appends issued together (one group commit),
 * page commits, cached puts (most), deletes, conditional writes with the right next version,
 * writes without `cached` now and then (a namespace not held goes to `state_entries` and is taken
 * into memory at its next cached write), short values and long ones (kept in their row only), and
 * up to three batches in flight at once (a group commits while the previous one's sync runs).
 * It prints each append or commit before issuing it ("issued") and once its promise resolves
 * ("acked"). The test SIGKILLs it 50-600 ms after it opened, reopens the file and reads every key.
 *
 * What must hold, per key: the value (and version) of its last acknowledged write, or of a write
 * issued after it that was not acknowledged when the child died (it may or may not have landed);
 * a key whose last acknowledged write deleted it is absent or holds such a later value; a key
 * never acknowledged holds its value from before the child or a value the child issued. Beyond
 * that, per file: what is read is the state after some prefix of the writes in the order the store
 * applied them — each append or commit all or nothing — that includes every acknowledged one;
 * listState agrees with loadState; and the next child, and a final writer open, read exactly what
 * the check read. The rounds (KILLS) run on one file, each child going on from what the last kill
 * left; half of the checks open the file read-only, so that the next child recovers the killed
 * child's write-ahead log itself, on top of which it writes and is killed again.
 *
 * Eviction and expiry: none. Every write bounds its namespace at MAX_ENTRIES (1,000) and only 20
 * keys per namespace are ever written, so nothing is evicted; the TTL some writes carry is an
 * hour, so nothing expires during the test. A key is absent only if a delete made it so.
 *
 * A SIGKILL leaves the kernel's page cache in place: this sees what the store had handed to the
 * file system when it acknowledged (that the ack follows the transaction that holds the write,
 * and that memory and the `state_log` rows agree), not whether the fdatasync happened (a power
 * cut, which no test here simulates). VIGIL_TEST_SEED replays the writes and the kill delays; the
 * kill instant itself is wall-clock, so a replay reaches a failure again only by chance.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import type { StateWrite } from '../src/store/state.ts';
import { SqliteStore, type SqliteStoreConfig } from '../src/store/sqlite/store.ts';
import { seededRandom, testSeed } from './helpers/random.ts';
import { commitOf } from './helpers/store-conformance.ts';
import { ROOT, tempDir } from './helpers/vigil-process.ts';

const CHILD_ENV = 'VIGIL_HELD_STATE_CHILD';
const NAMESPACES = ['held-a', 'held-b'];
const KEYS = Array.from({ length: 20 }, (_, i) => `k${String(i).padStart(2, '0')}`);
const IDS = NAMESPACES.flatMap((ns) => KEYS.map((key) => `${ns}/${key}`));
/** Far above the 20 keys of a namespace: nothing is evicted. */
const MAX_ENTRIES = 1_000;
const KILLS = 8;
const config = (path: string): SqliteStoreConfig => ({ path, synchronous: 'full', busy_timeout: 1000, dedupe_window: 86_400_000 });

/** An entry as compared: value and version (expiry is not compared: nothing expires here). */
interface Entry {
  value: unknown;
  version: number;
}
/** Every live key, as `namespace/key`. */
type Snapshot = Record<string, Entry>;
/** One state write as the child issued it: `value` null deletes; `version` is the one it leaves (0: absent). */
interface IssuedWrite {
  id: string;
  value: unknown;
  version: number;
}
interface Op {
  op: number;
  kind: 'append' | 'commit';
  writes: IssuedWrite[];
}
type Line = { t: 'opened'; state: Snapshot } | ({ t: 'issued' } & Op) | { t: 'acked'; op: number } | { t: 'failed'; op: number; error: string };

/** What a child printed up to its death: ops in the order the store applies them (op numbers 0, 1, ...). */
interface ChildLog {
  opened: Snapshot | undefined;
  ops: Op[];
  acked: Set<number>;
  failed: string | undefined;
}

async function readSnapshot(store: SqliteStore): Promise<Snapshot> {
  const out: Snapshot = {};
  for (const ns of NAMESPACES) {
    const loaded = await store.loadState(ns, KEYS);
    for (const key of KEYS) {
      const e = loaded.get(key);
      if (e) out[`${ns}/${key}`] = { value: e.value, version: e.version };
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The child: writes until it is killed.

async function child(spec: { file: string; round: number }): Promise<void> {
  const print = (line: Line) => process.stdout.write(`${JSON.stringify(line)}\n`);
  // The parent kills it long before; this only keeps an orphan from living on.
  setTimeout(() => process.exit(3), 60_000).unref();
  const rnd = seededRandom(1_000 + spec.round);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const store = new SqliteStore(config(spec.file));
  await store.open();
  const opened = await readSnapshot(store);
  /** The version each key has once every write issued so far is applied (0: absent). */
  const versions = new Map(Object.entries(opened).map(([id, e]) => [id, e.version]));
  print({ t: 'opened', state: opened });
  const inFlightLimit = 1 + Math.floor(rnd() * 3);
  const inFlight = new Set<Promise<unknown>>();
  let nextOp = 0;
  let written = 0;

  const stateWrite = (): { write: StateWrite; issued: IssuedWrite } => {
    const namespace = pick(NAMESPACES);
    const key = pick(KEYS);
    const id = `${namespace}/${key}`;
    const current = versions.get(id) ?? 0;
    const write: StateWrite = { namespace, key, value: null, maxEntries: MAX_ENTRIES, cached: true };
    const r = rnd();
    if (r < 0.15) {
      // A delete, conditional now and then (the version a write would get: a delete of an absent key too).
      if (rnd() < 0.3) write.version = current + 1;
      versions.set(id, 0);
      return { write, issued: { id, value: null, version: 0 } };
    }
    const w = ++written;
    const size = rnd();
    // Short values stay in memory; longer than 64 characters of JSON, only in their row.
    write.value = size < 0.6 ? { r: spec.round, w } : { r: spec.round, w, pad: 'x'.repeat(size < 0.97 ? 60 + Math.floor(rnd() * 400) : 3_000) };
    if (r < 0.45) write.version = current + 1;
    if (rnd() < 0.1) delete write.cached;
    if (rnd() < 0.2) write.ttlMs = 3_600_000;
    versions.set(id, current + 1);
    return { write, issued: { id, value: write.value, version: current + 1 } };
  };

  for (;;) {
    const count = rnd() < 0.1 ? 1 : 2 + Math.floor(rnd() * 3);
    // A commit runs its transaction within the call, the appends at the next turn of the event
    // loop, in the order issued: the commit goes first, so issue order is the order applied.
    const kinds: Array<Op['kind']> = Array.from({ length: count }, (_, i) => (i === 0 && rnd() < 0.3 ? 'commit' : 'append'));
    const batch = kinds.map((kind) => {
      const writes = Array.from({ length: 1 + Math.floor(rnd() * 5) }, stateWrite);
      return { op: nextOp++, kind, state: writes.map((w) => w.write), issued: writes.map((w) => w.issued) };
    });
    for (const b of batch) print({ t: 'issued', op: b.op, kind: b.kind, writes: b.issued });
    const done = batch.map((b) =>
      (b.kind === 'commit' ? store.commit(commitOf('logs', 'p', null, { state: b.state })) : store.append('logs', [], { state: b.state })).then(
        () => print({ t: 'acked', op: b.op }),
        (err: unknown) => {
          print({ t: 'failed', op: b.op, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
          process.exit(1);
        },
      ),
    );
    const all: Promise<unknown> = Promise.all(done).then(() => inFlight.delete(all));
    inFlight.add(all);
    // The store's group commit was scheduled before this: once this resolves, the batch is applied.
    await new Promise((resolve) => setImmediate(resolve));
    while (inFlight.size >= inFlightLimit) await Promise.race(inFlight);
    if (rnd() < 0.1) await new Promise((resolve) => setTimeout(resolve, rnd() * 3));
  }
}

// ---------------------------------------------------------------------------------------------
// The check.

function parseLog(out: string): ChildLog {
  const log: ChildLog = { opened: undefined, ops: [], acked: new Set(), failed: undefined };
  // The last piece has no newline: a line cut by the kill (or nothing).
  for (const text of out.split('\n').slice(0, -1)) {
    if (!text.startsWith('{')) continue; // the seed the child prints
    const line = JSON.parse(text) as Line;
    if (line.t === 'opened') log.opened = line.state;
    else if (line.t === 'issued') {
      assert.equal(line.op, log.ops.length, `the child's ops are numbered in order: ${text}`);
      log.ops.push({ op: line.op, kind: line.kind, writes: line.writes });
    } else if (line.t === 'acked') log.acked.add(line.op);
    else log.failed = `op ${line.op} (${log.ops[line.op]?.kind ?? '?'}) failed: ${line.error}`;
  }
  return log;
}

const same = (a: Entry | null, b: Entry | null): boolean =>
  a === null || b === null ? a === b : a.version === b.version && JSON.stringify(a.value) === JSON.stringify(b.value);
const showShort = (e: Entry | null): string => (e === null ? 'absent' : `${JSON.stringify(e.value).replace(/x{20,}/, (m) => `x*${m.length}`)} v${e.version}`);

function applyOp(s: Snapshot, op: Op): void {
  for (const w of op.writes) {
    if (w.value === null) delete s[w.id];
    else s[w.id] = { value: w.value, version: w.version };
  }
}

/** What a key held when the child opened the store, as a candidate. */
const BEFORE = 'before the child';

interface Verdict {
  /** Each violation, in words (empty: the state read is allowed). */
  problems: string[];
  /** How many ops not acknowledged had landed (the prefix read, past the acknowledged ones); -1 when no prefix matches. */
  landedUnacked: number;
}

/**
 * Checks the state read after a kill (`read`) against what the child had been given (`base`) and
 * what it printed (`log`): per key, then as a whole (a prefix of the ops holding every acknowledged one).
 */
function checkRound(base: Snapshot, log: ChildLog, read: Snapshot): Verdict {
  const problems: string[] = [];
  for (const id of IDS) {
    // Per op touching the key, what it leaves (its last write of the key: an op is all or nothing).
    const touches: Array<{ op: string; entry: Entry | null; acked: boolean }> = [];
    for (const op of log.ops) {
      let left: Entry | null | undefined;
      for (const w of op.writes) if (w.id === id) left = w.value === null ? null : { value: w.value, version: w.version };
      if (left !== undefined) touches.push({ op: `op ${op.op} (${op.kind})`, entry: left, acked: log.acked.has(op.op) });
    }
    let last = -1;
    touches.forEach((c, i) => {
      if (c.acked) last = i;
    });
    const candidates = last < 0 ? [{ op: BEFORE, entry: base[id] ?? null, acked: true }, ...touches] : touches.slice(last);
    const got = read[id] ?? null;
    if (!candidates.some((c) => same(c.entry, got))) {
      const listed = candidates.map((c) => `${c.op}${c.op === BEFORE ? '' : c.acked ? ' acked' : ' not acked'}: ${showShort(c.entry)}`).join('; ');
      problems.push(`key ${id}: read ${showShort(got)}; expected one of [${listed}]`);
    }
  }
  // As a whole: the state after ops 0..p-1 for some p past every acknowledged op.
  const acked = log.acked.size ? Math.max(...log.acked) : -1;
  const s: Snapshot = { ...base };
  for (const op of log.ops.slice(0, acked + 1)) applyOp(s, op);
  const differing = () => IDS.filter((id) => !same(s[id] ?? null, read[id] ?? null));
  let landedUnacked = -1;
  // Else the prefix closest to what was read, for the message.
  let closest = { p: acked + 1, diff: differing().map((id) => `${id}: ${showShort(s[id] ?? null)}, read ${showShort(read[id] ?? null)}`) };
  for (let p = acked + 1; ; p++) {
    const diff = differing();
    if (diff.length === 0) {
      landedUnacked = p - (acked + 1);
      break;
    }
    if (diff.length < closest.diff.length) closest = { p, diff: diff.map((id) => `${id}: ${showShort(s[id] ?? null)}, read ${showShort(read[id] ?? null)}`) };
    if (p >= log.ops.length) break;
    applyOp(s, log.ops[p]!);
  }
  if (landedUnacked < 0) {
    problems.push(
      `the state read is not that after any prefix of the ${log.ops.length} ops (in the order applied) holding every acknowledged one (ops 0..${acked}); ` +
        `the closest, ops 0..${closest.p - 1}, differs in ${closest.diff.join('; ')}`,
    );
  }
  return { problems, landedUnacked };
}

// ---------------------------------------------------------------------------------------------
// The parent.

interface Killed {
  log: ChildLog;
  stderr: string;
  /** How the child ended: 'SIGKILL' when killed as meant. */
  ended: string;
}

/** Runs one child on `file`, kills it `delayMs` after it opened the store, and returns what it printed. */
async function runAndKill(file: string, round: number, seed: number, delayMs: number): Promise<Killed> {
  const proc = spawn(process.execPath, ['--import', 'tsx', import.meta.filename], {
    cwd: ROOT,
    env: { ...process.env, [CHILD_ENV]: JSON.stringify({ file, round }), VIGIL_TEST_SEED: String(seed) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  // 'close': its output read to the end, not only its exit.
  const exited = new Promise<string>((resolve) => proc.once('close', (code, signal) => resolve(signal ?? `exit code ${String(code)}`)));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`round ${round}: the child did not open the store within 30 s; stderr:\n${err}`)), 30_000);
      let opened = false;
      proc.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (!opened && /^\{"t":"opened".*\n/m.test(out)) {
          opened = true;
          clearTimeout(timer);
          resolve();
        }
      });
      void exited.then((how) => {
        clearTimeout(timer);
        reject(new Error(`round ${round}: the child ended (${how}) before it opened the store; stdout:\n${out.slice(-2000)}\nstderr:\n${err.slice(-4000)}`));
      });
    });
    await new Promise((resolve) => setTimeout(resolve, delayMs));
  } finally {
    proc.kill('SIGKILL');
  }
  const ended = await exited;
  return { log: parseLog(out), stderr: err, ended };
}

async function readBack(file: string, readOnly: boolean): Promise<{ state: Snapshot; listed: Snapshot }> {
  const store = new SqliteStore(config(file));
  await store.open({ readOnly });
  try {
    const state = await readSnapshot(store);
    const listed: Snapshot = {};
    for (const ns of NAMESPACES) for (const e of await store.listState(ns, 10 * MAX_ENTRIES)) listed[`${ns}/${e.key}`] = { value: e.value, version: e.version };
    return { state, listed };
  } finally {
    await store.close();
  }
}

const childSpec = process.env[CHILD_ENV];
if (childSpec) {
  await child(JSON.parse(childSpec) as { file: string; round: number });
} else {
  test('the check itself: it refuses a lost acknowledged write, a deleted key back, and half an op; it allows unacknowledged ops landed', () => {
    const base: Snapshot = { 'held-a/k00': { value: 'old', version: 1 } };
    const ops: Op[] = [
      {
        op: 0,
        kind: 'append',
        writes: [
          { id: 'held-a/k00', value: 'new', version: 2 },
          { id: 'held-a/k01', value: 'x', version: 1 },
        ],
      },
      { op: 1, kind: 'commit', writes: [{ id: 'held-a/k00', value: null, version: 0 }] },
    ];
    const log = (acked: number[]): ChildLog => ({ opened: base, ops, acked: new Set(acked), failed: undefined });
    const both = { 'held-a/k00': { value: 'new', version: 2 }, 'held-a/k01': { value: 'x', version: 1 } };
    assert.deepEqual(checkRound(base, log([0]), both), { problems: [], landedUnacked: 0 });
    assert.deepEqual(checkRound(base, log([0]), { 'held-a/k01': { value: 'x', version: 1 } }), { problems: [], landedUnacked: 1 });
    assert.deepEqual(checkRound(base, log([]), base), { problems: [], landedUnacked: 0 });
    // Lost: op 0 acknowledged, nothing of it read.
    assert.equal(checkRound(base, log([0]), base).problems.length, 3);
    // A wrong version is a wrong entry.
    assert.match(checkRound(base, log([0]), { ...both, 'held-a/k01': { value: 'x', version: 2 } }).problems[0]!, /key held-a\/k01: read "x" v2/);
    // Back from the dead: op 1 (the delete) acknowledged, k00 read.
    assert.match(checkRound(base, log([0, 1]), both).problems[0]!, /key held-a\/k00: read "new" v2; expected one of \[op 1 \(commit\) acked: absent\]/);
    // Half of op 0 (not acknowledged): each key alone is allowed, the two together are not.
    const half = checkRound(base, log([]), { 'held-a/k00': { value: 'new', version: 2 } });
    assert.equal(half.problems.length, 1);
    assert.match(half.problems[0]!, /not that after any prefix/);
  });

  test(`SIGKILL at ${KILLS} random moments: every acknowledged write of a held namespace is read back after a reopen, nothing it replaced or deleted`, async (t) => {
    const seed = testSeed();
    const rnd = seededRandom(4_242);
    const file = join(tempDir('vigil-crash-held-'), 'state.db');
    const replay = `VIGIL_TEST_SEED=${seed} node --import tsx --test test/crash-held-state.test.ts`;
    let base: Snapshot = {};
    const totals = { ops: 0, acked: 0, inFlight: 0, landed: 0, checks: 0 };
    for (let round = 0; round < KILLS; round++) {
      const delay = 50 + Math.floor(rnd() * 550);
      const readOnly = rnd() < 0.5;
      const where = `seed ${seed}, round ${round} (killed ${delay} ms after it opened)`;
      const { log, stderr, ended } = await runAndKill(file, round, seed, delay);
      assert.equal(log.failed, undefined, `${where}: the child's write was refused (its model of versions is wrong, or the store is):\n${log.failed}\n${stderr}`);
      assert.equal(ended, 'SIGKILL', `${where}: the child ended on its own:\n${stderr.slice(-4000)}`);
      assert.deepEqual(log.opened, base, `${where}: the child opened another state than the last check read`);
      const read = await readBack(file, readOnly);
      const verdict = checkRound(base, log, read.state);
      const unacked = log.ops.length - log.acked.size;
      if (verdict.problems.length) {
        assert.fail(
          `${where}: after the kill (${log.ops.length} ops issued, ${log.acked.size} acknowledged, ${readOnly ? 'read-only' : 'writer'} reopen):\n` +
            `${verdict.problems.join('\n')}\nreplay: ${replay}`,
        );
      }
      assert.deepEqual(read.listed, read.state, `${where}: listState and loadState disagree`);
      totals.ops += log.ops.length;
      totals.acked += log.acked.size;
      totals.inFlight += unacked;
      totals.landed += verdict.landedUnacked;
      totals.checks += IDS.length + 2;
      t.diagnostic(
        `round ${round}: killed after ${delay} ms; ${log.ops.length} ops issued, ${log.acked.size} acknowledged, ${unacked} in flight of which ` +
          `${verdict.landedUnacked} had landed; ${Object.keys(read.state).length} keys live (${readOnly ? 'read-only' : 'writer'} reopen)`,
      );
      base = read.state;
    }
    // A last writer open (recovering a read-only check's log too) reads what the last check read.
    assert.deepEqual((await readBack(file, false)).state, base, `seed ${seed}: a final writer open reads another state than the last check`);
    t.diagnostic(
      `${KILLS} kills, ${totals.checks} checks: ${totals.ops} ops issued, ${totals.acked} acknowledged, ${totals.inFlight} in flight at a kill, ${totals.landed} of them landed`,
    );
    assert.ok(totals.acked > 0, `seed ${seed}: no write was acknowledged in ${KILLS} rounds; the test checked nothing`);
  });
}
