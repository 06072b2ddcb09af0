/**
 * SQLite failures as VigilErrors that name the database file, so an operator knows which file to
 * look at: a lock held by another process is retryable, a damaged file is not.
 */
import { errorMessage, isVigilError, VigilError } from '../../errors.ts';

export function sqliteError(err: unknown, file: string, what: string, busyTimeoutMs: number): VigilError {
  if (isVigilError(err)) return err;
  const raw = (err as { code?: unknown }).code;
  const code = typeof raw === 'string' ? raw : '';
  const msg = errorMessage(err);
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
    return new VigilError(
      'VIGIL_STORE_UNAVAILABLE',
      `SQLite database '${file}' is locked by another process (still locked after ${busyTimeoutMs}ms) while trying to ${what}; is another vigil using the same state.sqlite.path?`,
      { transient: true, cause: err },
    );
  }
  if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_FORMAT') {
    return new VigilError(
      'VIGIL_STORE_CORRUPT',
      `SQLite database '${file}' is corrupt or not a vigil state file (${msg}); move it aside to start with empty state`,
      { cause: err },
    );
  }
  if (code.startsWith('SQLITE_CANTOPEN') || code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_PERM') || code === 'SQLITE_AUTH') {
    return new VigilError('VIGIL_STORE_UNAVAILABLE', `cannot ${what}: SQLite database '${file}' cannot be opened for writing (${msg})`, { cause: err });
  }
  // Disk full, I/O errors: the same operation may succeed later.
  return new VigilError('VIGIL_STORE_UNAVAILABLE', `cannot ${what} in SQLite database '${file}': ${msg}`, { transient: true, cause: err });
}
