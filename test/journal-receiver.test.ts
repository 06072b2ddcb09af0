/**
 * The `journal` receiver against real files written by a separate process (the journal writer
 * fixture, as an agent runtime and its consumer write them), appending to a real store (memory,
 * and SQLite for the restart cases): appends, partial lines, malformed lines, compaction by
 * rewrite-and-rename and in place while the receiver runs, rotation, deletion, restarts from the
 * stored offset, `start_at`, `exclude`, the session of the path, and the counters. "Exactly once"
 * is checked twice: by the ingest log's content, and by the store reporting no duplicate append
 * where the receiver had no reason to re-read (its resynchronization found the offset's tail).
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ParseContext } from '../src/config/schema.ts';
import { memoryLogger } from '../src/logger.ts';
import { journalReceiverFactory, type JournalStats } from '../src/receivers/journal/factory.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { SqliteStore } from '../src/store/sqlite/store.ts';
import { stateClient } from '../src/store/state-client.ts';
import type { StateStore } from '../src/store/types.ts';
import { caseLine, startJournalWriter, type JournalWriter } from './helpers/journal.ts';
import { tempDir, waitFor } from './helpers/vigil-process.ts';

const writers: JournalWriter[] = [];
after(async () => {
  for (const w of writers) await w.close();
});

function writer(path: string): JournalWriter {
  const w = startJournalWriter(path);
  writers.push(w);
  return w;
}

async function memoryStore(): Promise<StateStore> {
  const store = new MemoryStore();
  await store.open();
  return store;
}

/** A journal receiver appending to `store`'s `logs` pipeline, as the service wires it. */
async function receiver(store: StateStore, config: Record<string, unknown>, id = 'journal') {
  const ctx = new ParseContext();
  const cfg = journalReceiverFactory.schema.parse(config, ['receivers', id], ctx);
  assert.deepEqual(ctx.issues, []);
  const logger = memoryLogger();
  const r = journalReceiverFactory.create(
    { id, logger, consumers: { logs: (events, opts) => store.append('logs', events, opts ?? {}) }, state: stateClient(store, id, { owner: id }) },
    cfg!,
  ) as unknown as {
    start(): Promise<void>;
    shutdown(): Promise<void>;
    stats(): JournalStats;
    metrics(): Array<{ name: string; labels: Record<string, string>; value: number }>;
  };
  await r.start();
  return { r, logger, stats: () => r.stats() };
}

/** Every event id in the pipeline's ingest log, over all partitions, in log order per partition. */
async function logged(store: StateStore): Promise<string[]> {
  const ids: string[] = [];
  for (const { partition } of await store.backlog('logs')) for (const e of await store.readPage('logs', partition, 100_000)) ids.push(e.event.eventId);
  return ids;
}

const ids = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `case-${String(from + i).padStart(5, '0')}`);
const lines = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => caseLine(from + i));

/** Waits until the log holds exactly `expected` (as a set, with no id twice). */
async function expectLogged(store: StateStore, expected: string[], what: string): Promise<void> {
  await waitFor(async () => ((await logged(store)).length >= expected.length ? true : undefined), what, 10_000, 20);
  // A little longer: nothing more may arrive.
  await new Promise((r) => setTimeout(r, 150));
  const got = await logged(store);
  assert.deepEqual([...got].sort(), [...expected].sort(), what);
}

describe('journal receiver: reading a journal as a runtime writes it', () => {
  test('appends, a partial last line that waits for its newline, malformed lines skipped with file and byte offset', async () => {
    const dir = tempDir();
    const path = join(dir, 'runtime_error_cases.jsonl');
    const w = writer(path);
    const store = await memoryStore();
    const { r, logger, stats } = await receiver(store, { include: [join(dir, '*.jsonl')], max_line_size: '2KiB' });
    try {
      await w.append(lines(0, 4));
      await expectLogged(store, ids(0, 4), 'the first five cases');

      // A partial line: half of case 5 now, the rest later.
      const five = caseLine(5);
      await w.write(five.slice(0, 40));
      await new Promise((res) => setTimeout(res, 400));
      assert.deepEqual((await logged(store)).length, 5, 'a partial line is not read');
      await w.write(five.slice(40) + '\n');
      await expectLogged(store, ids(0, 5), 'the finished line');

      // What is not a case: skipped, counted, named by file and byte offset; the cases around it arrive.
      const before = (await import('node:fs')).statSync(path).size;
      const garbage = 'this is not json\n';
      const unknownKind = caseLine(6, { error_kind: 'invalid_tool_arguments' }) + '\n';
      const notACase = JSON.stringify({ kind: 'execution.completed', payload: {} }) + '\n';
      const overlong = JSON.stringify({ case_id: 'big', error_kind: 'stale_browser_ref', occurred_at_ms: 1, pad: 'x'.repeat(5000) }) + '\n';
      await w.write(garbage + unknownKind + '\n' + notACase + overlong);
      await w.append(lines(7, 8));
      await expectLogged(store, [...ids(0, 5), ...ids(7, 8)], 'the cases around the skipped lines');
      const st = stats();
      assert.deepEqual(st.skipped, { not_json: 1, not_a_case: 1, unknown_error_kind: 1, overlong: 1 });
      assert.equal(st.lines, 12, 'blank lines are not counted');
      assert.equal(st.duplicates, 0);
      const warnings = logger.entries.filter((e) => e.level === 'warn').map((e) => String(e.msg));
      assert.ok(
        warnings.includes(
          `${path}: byte ${before}: skipped: not valid JSON (Unexpected token 'h', "this is not json" is not valid JSON); each line must be one JSON object, a runtime error case`,
        ),
        warnings.join('\n'),
      );
      assert.ok(
        warnings.some((m) => m.startsWith(`${path}: byte ${before + garbage.length}: skipped: unknown error_kind "invalid_tool_arguments"`)),
        warnings.join('\n'),
      );
      assert.ok(
        warnings.some((m) => m.startsWith(`${path}: byte ${before + garbage.length + unknownKind.length + 1}: skipped: 'case_id' must be a non-empty string`)),
        warnings.join('\n'),
      );
      assert.ok(
        warnings.includes(
          `${path}: byte ${before + garbage.length + unknownKind.length + 1 + notACase.length}: skipped: line longer than 2048 bytes (max_line_size)`,
        ),
        warnings.join('\n'),
      );
    } finally {
      await r.shutdown();
    }
  });

  test('compaction by rewrite-and-rename while running: the kept tail is not read again, nothing after it is missed', async () => {
    const dir = tempDir();
    const path = join(dir, 'runtime_error_cases.jsonl');
    const w = writer(path);
    const store = await memoryStore();
    const { r, stats } = await receiver(store, { include: [path] });
    try {
      await w.append(lines(0, 9));
      await expectLogged(store, ids(0, 9), 'before the compaction');
      // The consumer consumed 0..5 and rewrites the file with 6..9 (already read here), then the runtime appends.
      await w.compact('case-00006');
      await w.append(lines(10, 12));
      await expectLogged(store, ids(0, 12), 'after the compaction');
      // Compacted again, keeping nothing; new cases follow.
      await w.compact(null);
      await w.append(lines(13, 14));
      await expectLogged(store, ids(0, 14), 'after a compaction that kept nothing');
      const st = stats();
      assert.equal(st.rewrites.replaced, 2);
      assert.equal(st.duplicates, 0, 'the tail was found: nothing was read twice');
      assert.equal(st.appended, 15);
    } finally {
      await r.shutdown();
    }
  });

  test('compaction in place (truncated and rewritten, the same file) while running', async () => {
    const dir = tempDir();
    const path = join(dir, 'runtime_error_cases.jsonl');
    const w = writer(path);
    const store = await memoryStore();
    const { r, stats } = await receiver(store, { include: [path] });
    try {
      await w.append(lines(0, 5));
      await expectLogged(store, ids(0, 5), 'before');
      await w.compact('case-00003', 'inplace');
      await w.append(lines(6, 30));
      await expectLogged(store, ids(0, 30), 'after an in-place compaction and more appends');
      const st = stats();
      assert.equal(st.rewrites.truncated + st.rewrites.rewritten, 1, JSON.stringify(st.rewrites));
      assert.equal(st.duplicates, 0);
    } finally {
      await r.shutdown();
    }
  });

  test('restart: resumes from the stored offset, also when the journal was compacted while the receiver was down (SQLite)', async () => {
    const dir = tempDir();
    const path = join(dir, 'runtime_error_cases.jsonl');
    const w = writer(path);
    const dbPath = join(dir, 'state.db');
    const open = async () => {
      const s = new SqliteStore({ path: dbPath, synchronous: 'full', busy_timeout: 5000, dedupe_window: 86_400_000 }, memoryLogger());
      await s.open();
      return s;
    };
    let store = await open();
    let rx = await receiver(store, { include: [path] });
    await w.append(lines(0, 4));
    await expectLogged(store, ids(0, 4), 'first run');
    await rx.r.shutdown();
    await store.close();

    // While vigil is down: more cases, then the consumer keeps 3.. (3, 4 read, 5..7 not), then more.
    await w.append(lines(5, 7));
    await w.compact('case-00003');
    await w.append(lines(8, 9));
    store = await open();
    rx = await receiver(store, { include: [path] });
    try {
      await expectLogged(store, ids(0, 9), 'second run');
      assert.equal(rx.stats().duplicates, 0, 'resumed right after case 4');
      assert.equal(rx.stats().appended, 5);
    } finally {
      await rx.r.shutdown();
      await store.close();
    }
  });

  test('rotation: the old file is read to its end through the open handle, the new one from its top', async () => {
    const dir = tempDir();
    const path = join(dir, 'runtime_error_cases.jsonl');
    const w = writer(path);
    const store = await memoryStore();
    const { r, stats } = await receiver(store, { include: [path], poll_interval: '50ms' });
    try {
      await w.append(lines(0, 2));
      await expectLogged(store, ids(0, 2), 'before');
      // Written and rotated away at once, then a new journal starts.
      await w.append(lines(3, 5));
      await w.rotate(join(dir, 'runtime_error_cases.jsonl.1'));
      await w.append(lines(6, 7));
      await expectLogged(store, ids(0, 7), 'across the rotation');
      assert.equal(stats().duplicates, 0);
      // Deleted, then written again.
      await w.remove();
      await new Promise((res) => setTimeout(res, 150));
      await w.append(lines(8, 8));
      await expectLogged(store, ids(0, 8), 'after a deletion');
    } finally {
      await r.shutdown();
    }
  });

  test('start_at end: only what is written after start; a partial line present at start is read once finished', async () => {
    const dir = tempDir();
    const path = join(dir, 'runtime_error_cases.jsonl');
    const eleven = caseLine(11);
    writeFileSync(path, lines(0, 2).join('\n') + '\n' + eleven.slice(0, 30));
    const w = writer(path);
    const store = await memoryStore();
    const { r } = await receiver(store, { include: [path], start_at: 'end' });
    try {
      await new Promise((res) => setTimeout(res, 300));
      assert.deepEqual(await logged(store), []);
      await w.write(eleven.slice(30) + '\n');
      await w.append(lines(12, 12));
      await expectLogged(store, ['case-00011', 'case-00012'], 'after start');
    } finally {
      await r.shutdown();
    }
  });

  test('globs with **, exclude, the session a path names; files that appear later are read whole', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'sessions/s-1'), { recursive: true });
    mkdirSync(join(dir, 'sessions/archive/s-0'), { recursive: true });
    writeFileSync(join(dir, 'sessions/archive/s-0/runtime_error_cases.jsonl'), lines(90, 91).join('\n') + '\n');
    const a = writer(join(dir, 'sessions/s-1/runtime_error_cases.jsonl'));
    const store = await memoryStore();
    const { r, stats } = await receiver(store, {
      include: [join(dir, 'sessions/**/runtime_error_cases.jsonl')],
      exclude: ['**/archive/**'],
      session_from_path: '/sessions/([^/]+)/runtime_error_cases',
      start_at: 'end',
    });
    try {
      await a.append(lines(0, 1));
      // A session that starts while vigil runs: read from its first line despite start_at end.
      mkdirSync(join(dir, 'sessions/s-2'));
      const b = writer(join(dir, 'sessions/s-2/runtime_error_cases.jsonl'));
      await b.append(lines(2, 3));
      await expectLogged(store, ids(0, 3), 'both sessions, not the archive');
      const partitions = (await store.backlog('logs')).map((p) => p.partition).sort();
      assert.deepEqual(partitions, ['s-1', 's-2']);
      assert.equal(stats().files, 2);
    } finally {
      await r.shutdown();
    }
  });

  test('two sidecars following one journal through one store: each case appended once, the offset moved by one at a time', async () => {
    const dir = tempDir();
    const path = join(dir, 'runtime_error_cases.jsonl');
    const w = writer(path);
    const store = await memoryStore();
    const one = await receiver(store, { include: [path] });
    const two = await receiver(store, { include: [path] });
    try {
      for (let i = 0; i < 40; i += 5) await w.append(lines(i, i + 4));
      await expectLogged(store, ids(0, 39), 'all cases');
      const appended = one.stats().appended + two.stats().appended;
      assert.equal(appended, 40);
    } finally {
      await one.r.shutdown();
      await two.r.shutdown();
    }
  });

  test('status and metrics: files, lag, cases, skipped lines by reason, rewrites', async () => {
    const dir = tempDir();
    const path = join(dir, 'runtime_error_cases.jsonl');
    const w = writer(path);
    const store = await memoryStore();
    const { r, stats } = await receiver(store, { include: [path] });
    try {
      await w.append([...lines(0, 1), 'nope']);
      await expectLogged(store, ids(0, 1), 'two cases');
      await waitFor(() => (stats().skipped.not_json === 1 ? true : undefined), 'the skipped line counted');
      const st = stats();
      assert.deepEqual([st.files, st.cases, st.appended, st.lagBytes], [1, 2, 2, 0]);
      assert.deepEqual(st.followed, [{ path, offset: (await import('node:fs')).statSync(path).size, lagBytes: 0 }]);
      const metrics = r.metrics();
      const value = (name: string, labels: Record<string, string> = {}) =>
        metrics.find((m) => m.name === name && Object.entries(labels).every(([k, v]) => m.labels[k] === v))?.value;
      assert.equal(value('vigil_receiver_lines_total'), 3);
      assert.equal(value('vigil_receiver_skipped_lines_total', { reason: 'not_json' }), 1);
      assert.equal(value('vigil_receiver_appended_records_total', { signal: 'logs', protocol: 'journal' }), 2);
      assert.equal(value('vigil_receiver_files'), 1);
      assert.equal(value('vigil_receiver_lag_bytes'), 0);
      assert.equal(value('vigil_receiver_file_rewrites_total', { how: 'replaced' }), 0);
    } finally {
      await r.shutdown();
    }
  });
});
