/**
 * WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside the COMMIT that
 * crosses `wal_autocheckpoint` pages: the committing call copies the log's pages into the database
 * file and fsyncs it, on the event loop, so every few page commits one of them stalled the loop for
 * the whole copy. The writer turns the automatic checkpoint off, and this worker thread, with a
 * connection of its own, checkpoints instead: PASSIVE (it never blocks the writer) at most every
 * CHECK_MS once the writer reported writes.
 *
 * A PASSIVE checkpoint copies the frames the log held when it began. The log starts over (the
 * writer's next commit writes from its start again) only when a commit begins with every frame
 * copied, so under steady writes, when a commit lands while each checkpoint copies, it never did:
 * the log grew to its bound and then a RESTART checkpoint, which keeps the writer out until it
 * ends, took 10–35 ms about once a second on `bench:ingest` — a stall of the event loop, whose
 * commits waited on the lock. So once the log is past an eighth of its bound, the worker also
 * checkpoints right after each commit it hears of: a pass then copies only what the last one
 * missed, usually ends before the next commit, and that commit starts the log over. RESTART
 * remains for a log past the bound anyway (a reader kept the passes from finishing). A checkpoint
 * changes nothing a reader can see, so a crash at any moment of it is SQLite's own business (the
 * log stays authoritative until it is reset).
 *
 * The database file grows as it takes the log's pages, so on a disk short of space the log must
 * stay small: a log that holds the room its own copy needs can never be copied, so never start
 * over, and the store stays full when the disk has room again. So the log may hold at most half the
 * disk's free space (read at every pass): past that, a TRUNCATE checkpoint starts it over and gives
 * its space back; and past an eighth of the free space, each commit makes a pass, as past an eighth
 * of the bound. A checkpoint that fails (the disk is full, an I/O error) is told to the writer and
 * tried again at each interval: the worker stays. (It used to stop, and the writer checkpointed on
 * its own from then on, every 1,000 pages; on an 8 MB disk that 4 MB log wedged the store.) In a
 * burst the log outgrows these passes, so the writer also looks before each write (room.ts).
 *
 * The writer tells of its commits through shared memory: it counts them, and wakes the worker
 * only while the worker asks to hear of each (the log past an eighth of its bound, or not yet
 * measured). It used to post a message at every commit, about three a request: each woke the
 * worker's thread, which on the 2-core VM took the CPU from the event loop or the decode thread
 * (0.25 ms of the loop's wall time a request in a CPU profile of `bench:ack-phases`, all in
 * `postMessage`), to set a flag the interval then read.
 */
import type * as Fs from 'node:fs';
import { createRequire } from 'node:module';
import type * as Path from 'node:path';
import type { MessagePort, Worker } from 'node:worker_threads';
import { sourceWorker } from '../../internal/source-worker.ts';
import type BetterSqlite3 from 'better-sqlite3';

/** How often the worker checkpoints while the writer writes. */
export const CHECK_MS = 100;

export interface CheckpointerOptions {
  file: string;
  busyTimeout: number;
  /** The log's size (bytes) past which the worker checkpoints with RESTART (the writer then starts the log over). */
  walLimit: number;
  /** Told once when the worker fails: the writer then checkpoints on its own again. */
  onFailure: (err: Error) => void;
  /**
   * Told when a checkpoint fails (the first of a run of failures) and when one succeeds again
   * (`undefined`); the worker goes on trying at every interval.
   */
  onCheckpointError?: (err: Error | undefined) => void;
  /** How often the worker checkpoints while the writer writes (CHECK_MS; tests set it). */
  checkMs?: number;
}

/** What the worker did since it started (for tests and diagnostics). */
export interface CheckpointStats {
  /** PASSIVE checkpoints run. */
  passes: number;
  /** Of those, run right after a commit because the log was past an eighth of its bound. */
  afterCommit: number;
  /** RESTART checkpoints (the writer kept out until they end): the log was past its bound. */
  restarts: number;
  /** TRUNCATE checkpoints (a RESTART that also gives the log's space back): the log held more than half the disk's free space. */
  truncates: number;
  /** Passes that failed (and were tried again at the next interval). */
  failures: number;
}

/** What the worker tells the writer. An Error does not cross threads whole (SqliteError arrives as `{ code }`): its message is sent as text. */
type WorkerMessage = 'closed' | { stats: CheckpointStats } | { checkpointFailed: string } | { checkpointRecovered: true };

interface WorkerData {
  driver: string;
  file: string;
  busyTimeout: number;
  walLimit: number;
  checkMs: number;
  /** Shared with the writer: [COMMITS, ASKS] (see those). */
  shared: SharedArrayBuffer;
}

/**
 * Slots of the shared counts: the writer's commits so far (it adds one at each), and whether the
 * worker asks to be woken at each commit (1) or reads the count at its interval only (0). The
 * worker's source uses the numbers themselves: it is its function's text alone.
 */
const COMMITS = 0;
const ASKS = 1;

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
  const { statfsSync } = req('node:fs') as typeof Fs;
  const dir = (req('node:path') as typeof Path).dirname(data.file);
  const freeBytes = () => {
    try {
      const fs = statfsSync(dir);
      return fs.bavail * fs.bsize;
    } catch {
      return Infinity;
    }
  };
  const stats: CheckpointStats = { passes: 0, afterCommit: 0, restarts: 0, truncates: 0, failures: 0 };
  const shared = new Int32Array(data.shared);
  // The writer's commits read so far: a count that moved since means the log has pages to copy.
  let commitsRead = 0;
  let dirty = false;
  // The log's size when the last checkpoint began; unknown (so past any bound) until one ran.
  let logBytes = Infinity;
  // Past this, each commit makes a pass: an eighth of the bound, less on a disk short of space.
  let afterCommitBytes = data.walLimit / 8;
  let failing = false;
  let closed = false;
  const checkpoint = () => {
    dirty = false;
    stats.passes++;
    try {
      // A checkpoint that finds the database locked (busy) reports it and is simply tried again at the next write.
      const [r] = db.pragma('wal_checkpoint(PASSIVE)') as Array<{ busy: number; log: number; checkpointed: number }>;
      if (r) {
        logBytes = r.log * pageSize;
        const free = freeBytes();
        afterCommitBytes = Math.min(data.walLimit / 8, free / 8);
        if (logBytes > data.walLimit) {
          stats.restarts++;
          db.pragma('wal_checkpoint(RESTART)');
          logBytes = 0;
        } else if (logBytes > free / 2) {
          // The database file grows as it takes the log's pages: past half the free space, the log
          // could leave it too little room, and a log that cannot be copied can never start over.
          stats.truncates++;
          db.pragma('wal_checkpoint(TRUNCATE)');
          logBytes = 0;
        }
      }
      if (failing) {
        failing = false;
        parentPort.postMessage({ checkpointRecovered: true });
      }
    } catch (err) {
      // Tried again at the next interval, whether or not the writer writes meanwhile.
      dirty = true;
      stats.failures++;
      if (!failing) {
        failing = true;
        const e = err as { code?: unknown; message?: unknown };
        parentPort.postMessage({
          checkpointFailed: `${typeof e.message === 'string' ? e.message : String(err)}${typeof e.code === 'string' ? ` (${e.code})` : ''}`,
        });
      }
    }
  };
  // Whether the writer committed since the last read of its count: the log then has pages to copy.
  const counted = () => {
    const commits = Atomics.load(shared, 0);
    if (commits === commitsRead) return false;
    commitsRead = commits;
    dirty = true;
    return true;
  };
  // Past an eighth of the bound, the commits counted make a pass at once (all those that came
  // while the last pass ran make one pass, after all of them).
  const look = () => {
    if (counted() && logBytes > afterCommitBytes) {
      stats.afterCommit++;
      checkpoint();
    }
  };
  // While the log is past an eighth of its bound, the worker asks to be woken at each commit: one
  // wait at a time, and called again after every look at the log (so the ask follows its size).
  let waiting = false;
  const woken = () => {
    if (closed) return;
    look();
    listen();
  };
  const listen = () => {
    const asks = logBytes > afterCommitBytes;
    // Asked first, the count read after: a commit counted after that read sees the ask and wakes
    // the worker; one counted before it (while the worker did not ask) is taken at once.
    Atomics.store(shared, 1, asks ? 1 : 0);
    if (!asks) return;
    if (waiting) {
      if (Atomics.load(shared, 0) !== commitsRead) setImmediate(woken);
      return;
    }
    const w = Atomics.waitAsync(shared, 0, commitsRead);
    if (!w.async) return void setImmediate(woken);
    waiting = true;
    void w.value.then(() => {
      waiting = false;
      setImmediate(woken);
    });
  };
  const timer = setInterval(() => {
    counted();
    if (dirty) checkpoint();
    listen();
  }, data.checkMs);
  listen();
  parentPort.on('message', (m: 'stats' | 'close') => {
    // Answered after the pass the commits counted so far make (as their wake would have made it).
    if (m === 'stats') {
      woken();
      return void parentPort.postMessage({ stats });
    }
    closed = true;
    clearInterval(timer);
    db.close();
    parentPort.postMessage('closed');
  });
}

export class Checkpointer {
  private readonly worker: Worker;
  private failed = false;
  private closing = false;
  private readonly closed: Promise<void>;
  private readonly statsWaiters: Array<(s: CheckpointStats) => void> = [];
  private readonly shared = new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));
  private woke = 0;

  constructor(opts: CheckpointerOptions) {
    const data: WorkerData = {
      driver: createRequire(import.meta.url).resolve('better-sqlite3'),
      file: opts.file,
      busyTimeout: opts.busyTimeout,
      walLimit: opts.walLimit,
      checkMs: opts.checkMs ?? CHECK_MS,
      shared: this.shared.buffer as SharedArrayBuffer,
    };
    // The worker must not keep the process alive (sourceWorker unrefs it): the store's close stops it.
    this.worker = sourceWorker(checkpointerMain, data, (m: WorkerMessage) => {
      if (m === 'closed') return void this.worker.terminate();
      if ('stats' in m) {
        this.statsWaiters.shift()?.(m.stats);
        if (this.statsWaiters.length === 0 && !this.closing) this.worker.unref();
        return;
      }
      opts.onCheckpointError?.('checkpointFailed' in m ? new Error(m.checkpointFailed) : undefined);
    });
    this.closed = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    const fail = (err: Error) => {
      if (this.failed) return;
      this.failed = true;
      opts.onFailure(err);
    };
    this.worker.once('error', fail);
    this.worker.once('exit', (code) => !this.closing && fail(new Error(`the checkpoint worker stopped (exit code ${code})`)));
  }

  /**
   * The writer committed: the log has pages to checkpoint. Counted in shared memory at every
   * commit; the worker is woken only while it asks to hear of each (see COMMITS and ASKS).
   */
  wrote(): void {
    if (this.failed) return;
    Atomics.add(this.shared, COMMITS, 1);
    if (Atomics.load(this.shared, ASKS) === 0) return;
    this.woke++;
    Atomics.notify(this.shared, COMMITS);
  }

  /** Commits that woke the worker (it asked to hear of each): for tests and diagnostics. */
  get wakes(): number {
    return this.woke;
  }

  /** The worker's counts, once it has handled every commit counted before this call. */
  stats(): Promise<CheckpointStats> {
    return new Promise((resolve) => {
      this.statsWaiters.push(resolve);
      // Held while an answer is awaited: the worker is unref'd otherwise, and a process with
      // nothing else to do would end with the caller's promise pending.
      this.worker.ref();
      this.worker.postMessage('stats');
    });
  }

  /** Closes the worker's connection (the writer's close, the last connection, then checkpoints and removes the log). */
  async close(): Promise<void> {
    this.closing = true;
    // Held until it exits, as for stats().
    this.worker.ref();
    if (!this.failed) this.worker.postMessage('close');
    else void this.worker.terminate();
    await this.closed;
  }
}
