/**
 * The SQLite store's WAL syncs run in a worker thread of their own (src/store/sqlite/wal-syncer.ts):
 * the worker syncs again as soon as a sync returns and more was asked, whatever the event loop is
 * doing, and times the fdatasync call itself. Real files, real fdatasync, a real worker thread; the
 * event loop is held busy by the test to show what goes on without it.
 */
import assert from 'node:assert/strict';
import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { Worker } from 'node:worker_threads';
import { createLogger } from '../src/logger.ts';
import { SqliteStore } from '../src/store/sqlite/store.ts';
import { WalSyncer } from '../src/store/sqlite/wal-syncer.ts';
import { event } from './helpers/pages.ts';
import { tempDir } from './helpers/vigil-process.ts';

/** A file with something written, open for syncing. */
function openFile(): number {
  const fd = openSync(join(tempDir(), 'log'), 'w');
  writeSync(fd, 'frames');
  return fd;
}

/** What a syncer told, in order. */
function recorder() {
  /** Each synced generation told, and each sync's fdatasync time told. */
  const synced: Array<{ gen: number }> = [];
  const times: number[] = [];
  const failed: Array<{ gen: number; err: Error }> = [];
  const stopped: Error[] = [];
  const waiters: Array<{ gen: number; resolve: () => void }> = [];
  const wake = () => {
    const top = Math.max(0, ...synced.map((s) => s.gen), ...failed.map((f) => f.gen));
    for (const w of waiters.splice(0))
      if (w.gen <= top) w.resolve();
      else waiters.push(w);
  };
  return {
    synced,
    times,
    failed,
    stopped,
    /** Resolves once a report covers `gen`. */
    reported: (gen: number) => new Promise<void>((resolve) => (waiters.push({ gen, resolve }), wake())),
    opts: (fd: number) => ({
      fd,
      onTimed: (tookMs: number) => void times.push(tookMs),
      onSynced: (gen: number) => (synced.push({ gen }), wake()),
      onFailed: (gen: number, err: Error) => (failed.push({ gen, err }), wake()),
      onStopped: (err: Error) => void stopped.push(err),
    }),
  };
}

/** Holds the event loop (nothing else of this thread runs) until `done()` or `ms` passed; true when `done()` came first. */
function holdLoop(done: () => boolean, ms: number): boolean {
  const until = performance.now() + ms;
  while (performance.now() < until) if (done()) return true;
  return false;
}

describe('the WAL sync worker', () => {
  test('reports each generation it was asked for once an fdatasync begun after the ask returned, with the call’s own time', { timeout: 20_000 }, async () => {
    const fd = openFile();
    const r = recorder();
    const syncer = new WalSyncer(r.opts(fd));
    try {
      syncer.want(1);
      await r.reported(1);
      syncer.want(2);
      syncer.want(3);
      await r.reported(3);
      assert.deepEqual(r.failed, []);
      assert.deepEqual(r.stopped, []);
      const gens = r.synced.map((s) => s.gen);
      assert.equal(gens[0], 1);
      assert.equal(gens[gens.length - 1], 3);
      // Generations only grow; asks made together may share one sync.
      assert.ok(
        gens.every((g, i) => i === 0 || g > gens[i - 1]!),
        `generations ${gens.join(', ')}`,
      );
      // One time per sync, each the fdatasync call's own.
      assert.ok(r.times.length >= gens.length && r.times.length <= 3, `${r.times.length} syncs timed`);
      for (const t of r.times) assert.ok(t >= 0 && t < 10_000, `a sync took ${t} ms`);
    } finally {
      await syncer.close();
      closeSync(fd);
    }
  });

  test('syncs again while the event loop is busy: the next sync does not wait for the loop to hear of the last', { timeout: 30_000 }, async () => {
    const fd = openFile();
    const r = recorder();
    const syncer = new WalSyncer(r.opts(fd));
    try {
      syncer.want(1);
      // The loop is held from here on: the worker's report of 1 cannot be handled meanwhile.
      assert.ok(
        holdLoop(() => syncer.syncedInWorker() >= 1, 10_000),
        'the first sync ran',
      );
      writeSync(fd, 'more frames');
      syncer.want(2);
      assert.ok(
        holdLoop(() => syncer.syncedInWorker() >= 2, 10_000),
        'the second sync ran while the loop was still held',
      );
      assert.equal(r.synced.length, 0, 'nothing was told while the loop was held');
      await r.reported(2);
      // Told once the loop is free: both syncs timed, and generation 2 synced.
      assert.equal(r.times.length, 2);
      assert.equal(r.synced[r.synced.length - 1]!.gen, 2);
    } finally {
      await syncer.close();
      closeSync(fd);
    }
  });

  test('poll tells what the worker synced without waiting for the loop to be woken', { timeout: 30_000 }, () => {
    const fd = openFile();
    const r = recorder();
    const syncer = new WalSyncer(r.opts(fd));
    syncer.want(1);
    // Synchronous from here to the end: the loop never runs, so only poll can tell.
    assert.ok(
      holdLoop(() => syncer.syncedInWorker() >= 1, 10_000),
      'the sync ran',
    );
    assert.equal(r.synced.length, 0);
    syncer.poll();
    assert.deepEqual(r.synced, [{ gen: 1 }]);
    assert.equal(r.times.length, 1);
    syncer.poll();
    assert.deepEqual(r.synced, [{ gen: 1 }], 'a generation is told once');
    return syncer.close().then(() => closeSync(fd));
  });

  test('its close runs the syncs asked before it, and their reports come first', { timeout: 20_000 }, async () => {
    const fd = openFile();
    const r = recorder();
    const syncer = new WalSyncer(r.opts(fd));
    syncer.want(1);
    syncer.want(2);
    await syncer.close();
    closeSync(fd);
    assert.equal(r.synced[r.synced.length - 1]?.gen, 2);
    assert.deepEqual(r.stopped, [], 'a close is not a stop unasked');
  });

  test('a sync that fails is reported with its error, and the worker goes on', { timeout: 20_000 }, async () => {
    // A descriptor nothing holds (far past any the process opens).
    const fd = 2 ** 31 - 2;
    const r = recorder();
    const syncer = new WalSyncer(r.opts(fd));
    try {
      syncer.want(1);
      await r.reported(1);
      assert.equal(r.failed.length, 1);
      assert.equal(r.failed[0]!.gen, 1);
      assert.equal((r.failed[0]!.err as NodeJS.ErrnoException).code, 'EBADF');
      assert.match(r.failed[0]!.err.message, /EBADF/);
      syncer.want(2);
      await r.reported(2);
      assert.deepEqual(
        r.failed.map((f) => f.gen),
        [1, 2],
      );
      assert.deepEqual(r.stopped, []);
    } finally {
      await syncer.close();
    }
  });

  test('after a failed sync, a later success is told by message alone: the shared generation stands still', { timeout: 20_000 }, async () => {
    // A descriptor that works, then fails (closed: EBADF), then works again: POSIX gives an open
    // the lowest free number, so the file opened after the failure takes the number the worker syncs.
    const path = join(tempDir(), 'log');
    const fd = openSync(path, 'w');
    writeSync(fd, 'frames');
    const r = recorder();
    const syncer = new WalSyncer(r.opts(fd));
    let open: number | undefined = fd;
    try {
      syncer.want(1);
      await r.reported(1);
      assert.deepEqual(r.synced, [{ gen: 1 }]);
      assert.equal(syncer.syncedInWorker(), 1);
      closeSync(fd);
      open = undefined;
      syncer.want(2);
      await r.reported(2);
      assert.deepEqual(
        r.failed.map((f) => f.gen),
        [2],
      );
      assert.equal((r.failed[0]!.err as NodeJS.ErrnoException).code, 'EBADF');
      open = openSync(path, 'r+');
      assert.equal(open, fd, 'the file reopened under the number the worker syncs');
      writeSync(open, 'more frames');
      syncer.want(3);
      await r.reported(3);
      // The success came by message, with its time, but the shared generation (what poll and
      // waitAsync read) stayed where it was before the failure: nothing reads 2 as synced there.
      assert.deepEqual(r.synced, [{ gen: 1 }, { gen: 3 }]);
      assert.equal(r.times.length, 2);
      for (const t of r.times) assert.ok(t >= 0 && t < 10_000, `a sync took ${t} ms`);
      assert.equal(syncer.syncedInWorker(), 1);
      syncer.poll();
      assert.deepEqual(r.synced, [{ gen: 1 }, { gen: 3 }], 'poll tells nothing more');
      syncer.want(4);
      await r.reported(4);
      assert.deepEqual(r.synced, [{ gen: 1 }, { gen: 3 }, { gen: 4 }]);
      assert.deepEqual(
        r.failed.map((f) => f.gen),
        [2],
      );
      assert.deepEqual(r.stopped, []);
    } finally {
      await syncer.close();
      if (open !== undefined) closeSync(open);
    }
  });

  test('a worker that stops unasked is told once', { timeout: 20_000 }, async () => {
    const fd = openFile();
    const r = recorder();
    const syncer = new WalSyncer(r.opts(fd));
    await (syncer as unknown as { worker: Worker }).worker.terminate();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(r.stopped.length, 1);
    assert.match(r.stopped[0]!.message, /WAL sync worker stopped/);
    await syncer.close();
    closeSync(fd);
  });
});

describe('the SQLite store with its WAL sync worker', () => {
  const config = (path: string) => ({ path, synchronous: 'full' as const, busy_timeout: 1000, dedupe_window: 24 * 3_600_000 });

  test('answers appends once the worker synced them, and times each sync', { timeout: 20_000 }, async () => {
    const store = new SqliteStore(config(join(tempDir(), 'state.db')));
    await store.open();
    try {
      for (let i = 0; i < 5; i++) assert.equal((await store.append('p', [event({ id: `e${i}`, partition: 'a', time: 1_000 })])).appended, 1);
      const syncs = store.syncDurations();
      assert.ok(syncs.count >= 1 && syncs.count <= 5, `${syncs.count} syncs for 5 appends answered one after another`);
      assert.ok(syncs.sum >= 0);
    } finally {
      await store.close();
    }
  });

  test('when the worker stops, the thread pool syncs instead: appends are answered, and it is said once', { timeout: 20_000 }, async () => {
    const lines: string[] = [];
    const store = new SqliteStore(config(join(tempDir(), 'state.db')), createLogger({ level: 'warn', write: (l) => lines.push(l) }));
    await store.open();
    try {
      await store.append('p', [event({ id: 'before', partition: 'a', time: 1_000 })]);
      const syncer = (store as unknown as { syncer: unknown }).syncer;
      assert.ok(syncer instanceof WalSyncer, 'the first append started the worker');
      await (syncer as unknown as { worker: Worker }).worker.terminate();
      await new Promise((resolve) => setImmediate(resolve));
      const before = store.syncDurations().count;
      for (let i = 0; i < 3; i++) assert.equal((await store.append('p', [event({ id: `after${i}`, partition: 'a', time: 1_000 })])).appended, 1);
      assert.ok(store.syncDurations().count > before, 'the thread pool synced the later appends');
      const warnings = lines.map((l) => JSON.parse(l) as { msg: string; level: string }).filter((l) => /WAL sync worker stopped/.test(l.msg));
      assert.equal(warnings.length, 1);
      assert.equal(warnings[0]!.level, 'warn');
      const page = await store.readPage('p', 'a', 10);
      assert.deepEqual(
        page.map((e) => e.event.eventId),
        ['before', 'after0', 'after1', 'after2'],
      );
    } finally {
      await store.close();
    }
  });
});
