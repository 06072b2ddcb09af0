/**
 * Keeps the write-ahead log copyable on a disk short of space. A checkpoint copies the log's pages
 * into the database file, which grows by the pages that are new: up to the log's whole size. A log
 * that holds the room its own copy needs can never be copied, so never start over, and every
 * later write fails "database or disk is full" even once the disk has room again, because the
 * store's own log and database are what fill it. The checkpoint worker keeps the log under half
 * the free space, but it runs beside the writer: in a burst (a backlog processed after the disk was
 * full) the log grew 3 MB in 130 ms, past the worker, and an 8 MB disk stayed full with a 3.5 MB
 * database and a 4.8 MB log that could not be copied.
 *
 * So before each write transaction the writer itself looks: when the log holds more than a third
 * of the free space (less a reserve), it checkpoints and truncates the log on the spot (TRUNCATE,
 * on the event loop: on a disk that short, a stall is the lesser harm); when the log still holds
 * more than half (a reader or a checkpoint in progress kept it), or less than the reserve is free,
 * the write is refused, retryably, before it could make the log uncopyable. On a disk with plenty
 * of room this costs a clock reading per write, and a statfs every RECHECK_MS.
 */
import { statfsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import type BetterSqlite3 from 'better-sqlite3';
import { VigilError } from '../../errors.ts';

/** Bytes kept free beyond what the log's copy needs: room for the next write and its own copy. */
const ROOM_RESERVE = 1024 * 1024;
/** Free space past which the writer looks again only every RECHECK_MS. */
const ROOMY = 1024 * 1024 * 1024;
const RECHECK_MS = 250;
/** A checkpoint that finds another in progress (the worker's) is tried this many times, SLEEP_MS apart. */
const TRIES = 5;
const SLEEP_MS = 2;

interface RoomReading {
  /** Bytes free for this process on the database's file system. */
  free: number;
  /** The write-ahead log's size in bytes (0 when there is none). */
  log: number;
}

/** What the guard did since the store opened (for tests and diagnostics). */
export interface RoomStats {
  /** Checkpoints the writer tried (each up to TRIES times) because the log held too much of the free space. */
  checkpoints: number;
  /** Writes refused for want of room. */
  refusals: number;
}

/** Reads the free space beside `file` and the size of its log; a file system that cannot tell counts as roomy. */
function readRoom(file: string): RoomReading {
  let free = Infinity;
  try {
    const fs = statfsSync(dirname(file));
    free = fs.bavail * fs.bsize;
  } catch {
    // Unknown: no guard (SQLite's own errors still report a full disk).
  }
  return { free, log: statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0 };
}

const pause = new Int32Array(new SharedArrayBuffer(4));

export class LogRoom {
  readonly stats: RoomStats = { checkpoints: 0, refusals: 0 };
  private roomyUntil = 0;

  constructor(
    private readonly file: string,
    private readonly busyTimeoutMs: number,
  ) {}

  /** Before a write transaction (outside any): throws VIGIL_STORE_UNAVAILABLE, transient, when the write could leave a log that cannot be copied. */
  ensure(db: BetterSqlite3.Database): void {
    const t = performance.now();
    if (t < this.roomyUntil || db.inTransaction) return;
    let { free, log } = readRoom(this.file);
    if (free >= ROOMY) {
      this.roomyUntil = t + RECHECK_MS;
      return;
    }
    if (log > 0 && 3 * log > free - ROOM_RESERVE && this.truncate(db)) ({ free, log } = readRoom(this.file));
    if (free - ROOM_RESERVE >= 2 * log) return;
    this.stats.refusals++;
    throw new VigilError(
      'VIGIL_STORE_UNAVAILABLE',
      `the disk of SQLite database '${this.file}' is short of space: ${free} bytes free, ${log} in its write-ahead log, which needs up to as much free to be copied into the database, and ${ROOM_RESERVE} kept spare; writes are refused until there is room (free some space on that disk)`,
      { transient: true },
    );
  }

  /** A TRUNCATE checkpoint on the writer's connection; whether it copied the whole log and gave its space back. */
  private truncate(db: BetterSqlite3.Database): boolean {
    this.stats.checkpoints++;
    // Not waiting for readers: a write refused now is tried again, an event loop held is not.
    db.pragma('busy_timeout = 0');
    try {
      for (let i = 0; i < TRIES; i++) {
        try {
          const [r] = db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
          if (r && !r.busy) return true;
        } catch {
          // SQLITE_BUSY (the worker checkpoints) or SQLITE_FULL (the database cannot grow): try again, then refuse.
        }
        Atomics.wait(pause, 0, 0, SLEEP_MS);
      }
      return false;
    } finally {
      db.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
    }
  }
}
