/**
 * WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside the COMMIT that
 * crosses `wal_autocheckpoint` pages: the committing call copies the log's pages into the database
 * file and fsyncs it, on the event loop, so every few page commits one of them stalled the loop for
 * the whole copy. The writer turns the automatic checkpoint off, and this worker thread, with a
 * connection of its own, checkpoints instead: PASSIVE (it never blocks the writer) at most every
 * CHECK_MS once the writer reported writes, and RESTART — which does wait for the writer, briefly —
 * only when the log has grown past its bound anyway (a reader kept a PASSIVE checkpoint from
 * finishing). A checkpoint changes nothing a reader can see, so a crash at any moment of it is
 * SQLite's own business (the log stays authoritative until it is reset).
 */
import { createRequire } from 'node:module';
import { Worker, type MessagePort } from 'node:worker_threads';
import type BetterSqlite3 from 'better-sqlite3';

/** How often the worker checkpoints while the writer writes. */
const CHECK_MS = 100;

export interface CheckpointerOptions {
  file: string;
  busyTimeout: number;
  /** The log's size (bytes) past which the worker checkpoints with RESTART (the writer then starts the log over). */
  walLimit: number;
  /** Told once when the worker fails: the writer then checkpoints on its own again. */
  onFailure: (err: Error) => void;
}

interface WorkerData {
  driver: string;
  file: string;
  busyTimeout: number;
  walLimit: number;
  checkMs: number;
}

/**
 * The worker's body, run from its source text (so it needs no file of its own next to the built
 * code): everything it uses comes from `require` and `data`.
 */
function checkpointerMain(data: WorkerData, req: NodeJS.Require): void {
  const { parentPort } = req('node:worker_threads') as { parentPort: MessagePort };
  const Database = req(data.driver) as typeof BetterSqlite3;
  const db = new Database(data.file, { timeout: data.busyTimeout, fileMustExist: true });
  db.pragma('synchronous = FULL');
  db.pragma(`journal_size_limit = ${data.walLimit}`);
  // This connection never checkpoints on its own either (it writes nothing, but be explicit).
  db.pragma('wal_autocheckpoint = 0');
  const pageSize = Number(db.pragma('page_size', { simple: true }));
  let dirty = false;
  const timer = setInterval(() => {
    if (!dirty) return;
    dirty = false;
    // A checkpoint that finds the database locked (busy) reports it and is simply tried again at the next write.
    const [r] = db.pragma('wal_checkpoint(PASSIVE)') as Array<{ busy: number; log: number; checkpointed: number }>;
    if (r && r.log * pageSize > data.walLimit) db.pragma('wal_checkpoint(RESTART)');
  }, data.checkMs);
  parentPort.on('message', (m: 'dirty' | 'close') => {
    if (m === 'dirty') {
      dirty = true;
      return;
    }
    clearInterval(timer);
    db.close();
    parentPort.postMessage('closed');
  });
}

/**
 * When the writer tells the worker it wrote: at once for the first write after a quiet interval,
 * and once per interval after that, at the interval's end, for the writes made while a notice was
 * already out (they are not dropped: a burst of commits inside one interval would otherwise leave
 * its last frames unchecked until the next write, however long that waits).
 */
export class WriteNotices {
  private notified = false;
  private missed = false;

  /** A write: whether to tell the worker now. */
  wrote(): boolean {
    if (this.notified) {
      this.missed = true;
      return false;
    }
    this.notified = true;
    return true;
  }

  /** An interval ended: whether to tell the worker of the writes made since the last notice. */
  tick(): boolean {
    if (this.missed) {
      this.missed = false;
      return true;
    }
    this.notified = false;
    return false;
  }
}

export class Checkpointer {
  private readonly worker: Worker;
  private readonly notices = new WriteNotices();
  private failed = false;
  private closing = false;
  private readonly closed: Promise<void>;
  private readonly tick: NodeJS.Timeout;

  constructor(opts: CheckpointerOptions) {
    const data: WorkerData = {
      driver: createRequire(import.meta.url).resolve('better-sqlite3'),
      file: opts.file,
      busyTimeout: opts.busyTimeout,
      walLimit: opts.walLimit,
      checkMs: CHECK_MS,
    };
    this.worker = new Worker(`(${checkpointerMain.toString()})(require('node:worker_threads').workerData, require)`, { eval: true, workerData: data });
    // The worker must not keep the process alive: the store's close stops it.
    this.worker.unref();
    this.closed = new Promise<void>((resolve) => {
      this.worker.once('exit', () => resolve());
      this.worker.on('message', (m) => m === 'closed' && void this.worker.terminate());
    });
    const fail = (err: Error) => {
      if (this.failed) return;
      this.failed = true;
      opts.onFailure(err);
    };
    this.worker.once('error', fail);
    this.worker.once('exit', (code) => !this.closing && fail(new Error(`the checkpoint worker stopped (exit code ${code})`)));
    // One message per interval at most: the worker checkpoints once per interval anyway.
    this.tick = setInterval(() => this.notices.tick() && !this.failed && this.worker.postMessage('dirty'), CHECK_MS).unref();
  }

  /** The writer committed: the log has pages to checkpoint. Cheap enough for every commit. */
  wrote(): void {
    if (this.failed || !this.notices.wrote()) return;
    this.worker.postMessage('dirty');
  }

  /** Closes the worker's connection (the writer's close, the last connection, then checkpoints and removes the log). */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.tick);
    if (!this.failed) this.worker.postMessage('close');
    else void this.worker.terminate();
    await this.closed;
  }
}
