/**
 * The WAL's syncs in a worker thread of their own (README, Performance, round 38). The store's
 * writes commit without SQLite's fsync and are answered once an fdatasync of the log begun after
 * them has returned (group commit: store.ts, syncWal). Run in the thread pool, each sync's
 * completion was handled on the event loop, and the next sync, for the writes committed
 * meanwhile, started only then: a busy loop (a page being processed) delayed every sync in a row
 * and every write waiting for them. Here the worker syncs again as soon as a sync returns and
 * writes were committed meanwhile; the event loop only hears of what is on disk. The worker also
 * times the fdatasync itself, so the store's sync histogram is the disk's time alone.
 *
 * The writer tells the worker the newest generation it wants on disk through shared memory (a
 * store and a wake, no message); the worker answers with a message per sync: the generation it
 * covered and how long the call took, or the error it failed with.
 */
import type * as Fs from 'node:fs';
import type * as PerfHooks from 'node:perf_hooks';
import { Worker, type MessagePort } from 'node:worker_threads';

/**
 * What the worker tells the writer after each sync: the generation it covered, and when the
 * fdatasync began and returned (ms since the epoch, `performance.timeOrigin + performance.now()`
 * in the worker: comparable across threads), or the error it failed with.
 */
export type SyncerMessage = { gen: number; began: number; ended: number } | { gen: number; failed: string; code?: string };

export interface WalSyncerOptions {
  /** The write-ahead log's descriptor (the process's: a worker shares them); the writer closes it after `close`. */
  fd: number;
  /** Everything up to `gen` is on disk; `tookMs`: the fdatasync's own time. */
  onSynced: (gen: number, tookMs: number) => void;
  /** The sync meant to cover `gen` failed. */
  onFailed: (gen: number, err: Error) => void;
  /** The worker stopped unasked (it could not start, or died): the writer syncs another way from now on. */
  onStopped: (err: Error) => void;
}

/** Slots of the shared memory: the generation wanted on disk, the order to stop, the generation last synced. */
const WANTED = 0;
const STOP = 1;
const SYNCED = 2;

interface WorkerData {
  fd: number;
  shared: SharedArrayBuffer;
}

/** The worker's whole program: its source is this function's text (see WalSyncer's constructor). */
function walSyncerMain(data: WorkerData, req: NodeJS.Require): void {
  const { parentPort } = req('node:worker_threads') as { parentPort: MessagePort };
  const { fdatasyncSync } = req('node:fs') as typeof Fs;
  const { performance } = req('node:perf_hooks') as typeof PerfHooks;
  const shared = new BigInt64Array(data.shared);
  let synced = 0n;
  for (;;) {
    const wanted = Atomics.load(shared, 0);
    if (wanted === synced) {
      // Stops only when nothing asked is left unsynced: the writer's close waits for what it asked.
      if (Atomics.load(shared, 1) !== 0n) break;
      Atomics.wait(shared, 0, wanted);
      continue;
    }
    const began = performance.timeOrigin + performance.now();
    try {
      fdatasyncSync(data.fd);
    } catch (err) {
      const e = err as { message?: unknown; code?: unknown };
      synced = wanted;
      Atomics.store(shared, 2, synced);
      parentPort.postMessage({ gen: Number(wanted), failed: String(e.message ?? err), code: typeof e.code === 'string' ? e.code : undefined });
      continue;
    }
    synced = wanted;
    Atomics.store(shared, 2, synced);
    parentPort.postMessage({ gen: Number(wanted), began, ended: performance.timeOrigin + performance.now() });
  }
}

export class WalSyncer {
  private readonly worker: Worker;
  private readonly shared = new BigInt64Array(new SharedArrayBuffer(3 * BigInt64Array.BYTES_PER_ELEMENT));
  private closing = false;
  private stopped = false;
  /** The newest generation asked for, and whether the worker keeps the process alive until it is reported. */
  private wanted = 0;
  private held = false;
  private readonly exited: Promise<void>;

  constructor(private readonly opts: WalSyncerOptions) {
    const data: WorkerData = { fd: opts.fd, shared: this.shared.buffer as SharedArrayBuffer };
    // `__name`: the helper a loader that keeps function names (tsx, in the tests) calls around named
    // functions; the worker's source is this function's text alone, without the loader's prelude.
    const source = `var __name = (f) => f; (${walSyncerMain.toString()})(require('node:worker_threads').workerData, require)`;
    this.worker = new Worker(source, { eval: true, workerData: data });
    // The worker keeps the process alive only while a sync it was asked for is unanswered (its
    // writes wait for it); otherwise the store's close stops it.
    this.worker.unref();
    this.worker.on('message', (m: SyncerMessage) => this.handle(m));
    const stop = (err: Error) => {
      if (this.stopped || this.closing) return;
      this.stopped = true;
      opts.onStopped(err);
    };
    this.worker.once('error', stop);
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.once('exit', (code) => stop(new Error(`the WAL sync worker stopped (exit code ${code})`)));
  }

  /** A sync's report, on the event loop. */
  private handle(m: SyncerMessage): void {
    if (m.gen >= this.wanted && this.held && !this.closing) {
      this.held = false;
      this.worker.unref();
    }
    if ('failed' in m) this.opts.onFailed(m.gen, Object.assign(new Error(m.failed), m.code === undefined ? {} : { code: m.code }));
    else this.opts.onSynced(m.gen, m.ended - m.began);
  }

  /** Asks for everything up to `gen` on disk (generations only grow): the worker syncs once more if it has not begun a sync since. */
  want(gen: number): void {
    this.wanted = gen;
    if (!this.held) {
      this.held = true;
      this.worker.ref();
    }
    Atomics.store(this.shared, WANTED, BigInt(gen));
    Atomics.notify(this.shared, WANTED);
  }

  /** The generation the worker synced last (or failed to), read from shared memory: known before its report is handled. */
  syncedInWorker(): number {
    return Number(Atomics.load(this.shared, SYNCED));
  }

  /** Stops the worker once the syncs asked so far have run (their messages are handled before this resolves). */
  async close(): Promise<void> {
    this.closing = true;
    // Held until it exits: nothing else may keep the process alive while the store closes.
    this.worker.ref();
    Atomics.store(this.shared, STOP, 1n);
    Atomics.notify(this.shared, WANTED);
    await this.exited;
  }
}
