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
 * Both ways go through shared memory, no message per sync (a message cost about 40 µs of CPU a
 * sync more than the thread pool's completion; README, Performance, round 38): the writer stores
 * the newest generation it wants on disk and wakes the worker; the worker stores the generation
 * each sync covered, and the sync's start and end in a ring, and wakes the writer's
 * `Atomics.waitAsync`. The writer also reads what is synced at its own busy calls (`poll`), so on
 * a busy event loop a write is answered between two tasks rather than after every task queued
 * before the wake. A failed sync is told by a message with its error; from then on the worker
 * tells every sync by message and the shared generation stands still: a write whose sync failed
 * must be refused, and a later sync's success read from shared memory before the failure's
 * message arrived would have answered it as synced (after a failed fsync, Linux may drop the
 * pages it could not write and report the next fsync as a success). The store stops syncing off
 * the loop after a failure anyway (store.ts, durable).
 */
import type * as Fs from 'node:fs';
import type * as PerfHooks from 'node:perf_hooks';
import type { MessagePort, Worker } from 'node:worker_threads';
import { sourceWorker } from '../../internal/source-worker.ts';

/**
 * What the worker tells by message: a failed sync with its error; after one, every later sync too
 * (`began`/`ended`: ms since the epoch, `performance.timeOrigin + performance.now()` in the worker,
 * comparable across threads).
 */
type SyncerMessage = { gen: number; began: number; ended: number } | { gen: number; failed: string; code?: string };

export interface WalSyncerOptions {
  /** The write-ahead log's descriptor (the process's: a worker shares them); the writer closes it after `close`. */
  fd: number;
  /** Everything up to `gen` is on disk. */
  onSynced: (gen: number) => void;
  /** One sync's fdatasync call took `tookMs` (told for each sync, in order, before the onSynced that covers it). */
  onTimed: (tookMs: number) => void;
  /** The sync meant to cover `gen` failed. */
  onFailed: (gen: number, err: Error) => void;
  /** The worker stopped unasked (it could not start, or died): the writer syncs another way from now on. */
  onStopped: (err: Error) => void;
}

/**
 * Slots of the shared generations: wanted on disk (writer), the order to stop (writer), synced
 * (worker; stands still after a failure), syncs timed in the ring (worker), and the writer's wakes
 * of the worker (a count the writer adds one to after each ask and the order to stop). The worker
 * sleeps on the count of wakes, read before it looks at what is asked: a wake that comes after its
 * look changes the count, so its sleep returns at once. (It used to sleep on the wanted generation,
 * which the order to stop does not change: a close between the worker's look at the order and its
 * sleep was lost, and the worker, held by the close, kept the process alive; a CI run hung so.)
 * The worker's source uses the numbers themselves: it is this module's function text alone.
 */
const WANTED = 0;
const STOP = 1;
const SYNCED = 2;
const TIMED = 3;
const WAKES = 4;
/** Syncs whose start and end the ring holds: the writer reads them at each wake, so far more than pile up between two. */
const RING = 1024;

interface WorkerData {
  fd: number;
  state: SharedArrayBuffer;
  times: SharedArrayBuffer;
  ring: number;
}

/** The worker's whole program: its source is this function's text (see WalSyncer's constructor). */
function walSyncerMain(data: WorkerData, req: NodeJS.Require): void {
  const { parentPort } = req('node:worker_threads') as { parentPort: MessagePort };
  const { fdatasyncSync } = req('node:fs') as typeof Fs;
  const { performance } = req('node:perf_hooks') as typeof PerfHooks;
  const state = new BigInt64Array(data.state);
  const times = new Float64Array(data.times);
  let synced = 0n;
  let timed = 0;
  let failedOnce = false;
  for (;;) {
    // The count of wakes first: an ask or a stop after this read changes it, so the sleep below returns at once.
    const wakes = Atomics.load(state, 4);
    const wanted = Atomics.load(state, 0);
    if (wanted === synced) {
      // Stops only when nothing asked is left unsynced: the writer's close waits for what it asked.
      if (Atomics.load(state, 1) !== 0n) break;
      Atomics.wait(state, 4, wakes);
      continue;
    }
    const began = performance.timeOrigin + performance.now();
    try {
      fdatasyncSync(data.fd);
    } catch (err) {
      const e = err as { message?: unknown; code?: unknown };
      synced = wanted;
      failedOnce = true;
      parentPort.postMessage({ gen: Number(wanted), failed: String(e.message ?? err), code: typeof e.code === 'string' ? e.code : undefined });
      continue;
    }
    const ended = performance.timeOrigin + performance.now();
    synced = wanted;
    if (failedOnce) {
      parentPort.postMessage({ gen: Number(wanted), began, ended });
      continue;
    }
    const slot = (timed % data.ring) * 2;
    times[slot] = began;
    times[slot + 1] = ended;
    timed++;
    // The ring's entry first, then the counts (sequentially consistent stores): a reader that sees
    // a count sees what it counts.
    Atomics.store(state, 3, BigInt(timed));
    Atomics.store(state, 2, synced);
    Atomics.notify(state, 2);
  }
}

export class WalSyncer {
  private readonly worker: Worker;
  private readonly state = new BigInt64Array(new SharedArrayBuffer(5 * BigInt64Array.BYTES_PER_ELEMENT));
  private readonly times = new Float64Array(new SharedArrayBuffer(2 * RING * Float64Array.BYTES_PER_ELEMENT));
  private closing = false;
  private stopped = false;
  /** The newest generation asked for, and the newest told as synced or failed. */
  private wanted = 0;
  private told = 0;
  /** Syncs whose times were read from the ring, and the synced generation last read. */
  private timedRead = 0;
  private syncedRead = 0;
  /** Whether a waitAsync on the synced generation is pending, and whether the worker keeps the process alive meanwhile. */
  private watching = false;
  private held = false;
  private readonly exited: Promise<void>;

  constructor(private readonly opts: WalSyncerOptions) {
    const data: WorkerData = { fd: opts.fd, state: this.state.buffer as SharedArrayBuffer, times: this.times.buffer as SharedArrayBuffer, ring: RING };
    // The worker keeps the process alive only while a sync it was asked for is untold (its writes
    // wait for it: want refs it); otherwise the store's close stops it (sourceWorker unrefs it).
    this.worker = sourceWorker(walSyncerMain, data, (m: SyncerMessage) => this.handle(m));
    const stop = (err: Error) => {
      if (this.stopped || this.closing) return;
      this.stopped = true;
      opts.onStopped(err);
    };
    this.worker.once('error', stop);
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.once('exit', (code) => stop(new Error(`the WAL sync worker stopped (exit code ${code})`)));
  }

  /** Asks for everything up to `gen` on disk (generations only grow): the worker syncs once more if it has not begun a sync since. */
  want(gen: number): void {
    this.wanted = gen;
    Atomics.store(this.state, WANTED, BigInt(gen));
    this.wake();
    if (!this.held) {
      this.held = true;
      this.worker.ref();
    }
    this.watch();
  }

  /** Reads what the worker synced since the last read, and tells it (onTimed, then onSynced): cheap enough for every busy call of the writer. */
  poll(): void {
    const timed = Number(Atomics.load(this.state, TIMED));
    // Syncs the ring no longer holds (more than RING between two reads) are told as synced, untimed.
    for (let k = Math.max(this.timedRead, timed - RING); k < timed; k++) {
      const slot = (k % RING) * 2;
      this.timed(this.times[slot]!, this.times[slot + 1]!);
    }
    this.timedRead = timed;
    const synced = Number(Atomics.load(this.state, SYNCED));
    if (synced > this.syncedRead) {
      this.syncedRead = synced;
      this.tell(synced);
      this.opts.onSynced(synced);
    }
  }

  /** The generation the worker synced last, read from shared memory without telling it (tests watch the worker with it while they hold the loop). */
  syncedInWorker(): number {
    return Number(Atomics.load(this.state, SYNCED));
  }

  /** Stops the worker once the syncs asked so far have run, and tells them before this resolves. */
  async close(): Promise<void> {
    this.closing = true;
    // Held until it exits: nothing else may keep the process alive while the store closes.
    this.worker.ref();
    Atomics.store(this.state, STOP, 1n);
    this.wake();
    await this.exited;
    this.poll();
  }

  /** Wakes the worker to look at what is asked (after the ask is stored): see WAKES. */
  private wake(): void {
    Atomics.add(this.state, WAKES, 1n);
    Atomics.notify(this.state, WAKES);
  }

  /** Waits (off the loop) for the worker's next sync while a generation asked for is untold. */
  private watch(): void {
    if (this.watching || this.told >= this.wanted) return;
    this.watching = true;
    const w = Atomics.waitAsync(this.state, SYNCED, BigInt(this.syncedRead));
    const woken = () => {
      this.watching = false;
      this.poll();
      this.watch();
    };
    if (w.async) void w.value.then(woken);
    else queueMicrotask(woken);
  }

  /** One sync's times (ms since the epoch, from the worker's clock). */
  private timed(began: number, ended: number): void {
    this.opts.onTimed(ended - began);
  }

  /** `gen` was told (synced or failed): once every generation asked for is, the worker no longer keeps the process alive. */
  private tell(gen: number): void {
    this.told = Math.max(this.told, gen);
    if (this.told >= this.wanted && this.held && !this.closing) {
      this.held = false;
      this.worker.unref();
    }
  }

  /** A message: a failed sync, or (after one) any sync. */
  private handle(m: SyncerMessage): void {
    this.tell(m.gen);
    if ('failed' in m) return this.opts.onFailed(m.gen, Object.assign(new Error(m.failed), m.code === undefined ? {} : { code: m.code }));
    this.timed(m.began, m.ended);
    this.opts.onSynced(m.gen);
  }
}
