/**
 * One writer per SQLite state file. Two vigils on one file would each process the same ingest log
 * and split the work events between them, so the writer holds an exclusive lock for as long as
 * the store is open: SQLite's own file lock on a small companion database (`<file>.lock`), kept in
 * `locking_mode = EXCLUSIVE`. It is an OS lock, so it goes away with the process — a SIGKILLed
 * vigil never leaves a stale lock behind — and it holds within one process too. Readers
 * (`vigil status`) do not take it. Who holds the lock is written to the state file itself (its
 * `meta` table, readable beside the writer thanks to WAL), so the refusal can name the process.
 */
import { hostname } from 'node:os';
import Database from 'better-sqlite3';
import { VigilError } from '../../errors.ts';

export interface WriterInfo {
  pid: number;
  host: string;
  /** ISO time the writer opened the store. */
  since: string;
}

export interface WriterLock {
  readonly info: WriterInfo;
  release(): void;
}

/** The companion lock file of a state file. */
export function lockPathOf(file: string): string {
  return `${file}.lock`;
}

/**
 * Takes the writer lock of `file`, or throws VIGIL_STORE_LOCKED naming the holder (as read by
 * `whoHolds`, when it can tell).
 */
export function acquireWriterLock(file: string, whoHolds: () => WriterInfo | undefined): WriterLock {
  const db = new Database(lockPathOf(file), { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    // The first write in exclusive mode takes the EXCLUSIVE lock and keeps it until close.
    db.exec('BEGIN EXCLUSIVE; CREATE TABLE IF NOT EXISTS writer (id INTEGER PRIMARY KEY, pid INTEGER); INSERT OR REPLACE INTO writer VALUES (1, 0); COMMIT;');
  } catch (err) {
    db.close();
    const code = (err as { code?: unknown }).code;
    const busy = typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
    if (busy) {
      const holder = whoHolds();
      const who = holder ? `vigil pid ${holder.pid} on host '${holder.host}' (running since ${holder.since})` : 'another process';
      throw new VigilError(
        'VIGIL_STORE_LOCKED',
        `SQLite state file '${file}' is in use by ${who}: one vigil per state file; stop the other one, or give this one its own state.sqlite.path`,
        { cause: err },
      );
    }
    throw err;
  }
  const info: WriterInfo = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
  return {
    info,
    release: () => db.close(),
  };
}
