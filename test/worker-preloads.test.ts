/**
 * vigil's worker threads (the SQLite store's WAL sync and checkpoint workers, the OTLP decode
 * threads) load what they need themselves and none of the preloads on the process's command line:
 * an `--import` or `--require` instrumentation would otherwise load into every thread (an
 * OpenTelemetry SDK preload took a thread's start from about 20 ms to 300 ms), and in the tests tsx
 * did. A child process running the compiled code (dist/: no loader, whose own hooks thread would
 * take the preload too), started with a preload that records each thread it loads in, starts a
 * source worker, opens a real SQLite store and appends (its checkpoint and sync workers start), and
 * decodes a body on a decode thread. `npm test` builds dist/ first; run alone, this test needs
 * `npm run build` after a change to src/.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'node:test';
import { ROOT, tempDir } from './helpers/vigil-process.ts';

test('a preload on the command line loads in the main thread only, not in the store workers or the decode threads', () => {
  const dir = tempDir();
  const marks = join(dir, 'threads.log');
  const preload = join(dir, 'preload.cjs');
  writeFileSync(preload, `require('node:fs').appendFileSync(${JSON.stringify(marks)}, require('node:worker_threads').isMainThread ? 'main\\n' : 'worker\\n');\n`);
  assert.ok(existsSync(join(ROOT, 'dist/cli/bin.js')), 'dist/ is missing: run `npm run build`');
  const src = (p: string) => JSON.stringify(pathToFileURL(join(ROOT, 'dist', p)).href);
  const script = join(dir, 'run.mjs');
  writeFileSync(
    script,
    `
const { SqliteStore } = await import(${src('store/sqlite/store.js')});
const { DecodePool } = await import(${src('receivers/otlp/decode-pool.js')});
const { memoryLogger } = await import(${src('logger.js')});
const { sourceWorker } = await import(${src('internal/source-worker.js')});
// A worker of the store's kind, whose start this waits for.
const answered = await new Promise((resolve) => sourceWorker((data, req) => req('node:worker_threads').parentPort.postMessage(data), 'started').once('message', resolve));
const store = new SqliteStore({ path: ${JSON.stringify(join(dir, 'state.db'))}, synchronous: 'full', busy_timeout: 1000, dedupe_window: 60_000 });
await store.open();
// The first write starts the sync worker (the thread pool syncs this one while it starts).
await store.append('logs', [{ eventId: 'e', kind: 'execution.completed', payload: { state: 'error' }, partition: 's', time: 1, service: 'agent', source: 'jsonl' }]);
const pool = new DecodePool(1, memoryLogger(), { minPooledBytes: 0, encodings: ['json'] });
const body = Buffer.from(JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: '1000000', body: { stringValue: 'x' } }] }] }] }));
await pool.decodeAndMap('json', 'logs', body, { forward: false, markers: false });
const threads = pool.stats().onThreads;
await pool.close();
await store.close();
console.log(JSON.stringify({ answered, threads }));
`,
  );
  const run = spawnSync(process.execPath, ['--require', preload, script], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  assert.equal(run.status, 0, run.stderr);
  // A source worker started and answered, and the body was decoded on a thread.
  assert.deepEqual(JSON.parse(run.stdout.trim().split('\n').pop()!), { answered: 'started', threads: 1 });
  // Without `execArgv: []` the marks held four workers: that one, the checkpoint and sync workers, the decode thread.
  assert.deepEqual(readFileSync(marks, 'utf8').trim().split('\n'), ['main']);
});
