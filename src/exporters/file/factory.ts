/**
 * Exporter `file`: work events as CloudEvents JSON, one per line (DESIGN 4.2). A batch counts as
 * delivered only once every byte of it is written and `fdatasync` succeeded. A short write is
 * continued; a failed write or sync (a full disk, an I/O error) cuts the file back to where the
 * batch began, so no partial batch and no cut line ever stays in it, and the batch is retried
 * whole. Entries handed over again because their confirmation could not be stored are not written
 * twice; a crash between sync and confirmation can repeat lines, which readers drop by the event
 * `id`. Rotation by size keeps the file bounded.
 */
import * as fsp from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { ExporterFactory, ExporterSettings, Exporter } from '../../component.ts';
import { s, type Infer } from '../../config/schema.ts';
import { errorMessage } from '../../errors.ts';
import { isWorkEntry, type OutboxEntry } from '../../model/work.ts';
import { ExportError, withDelivery } from '../delivery.ts';

const schema = withDelivery({
  /** File to append to; relative paths are relative to the working directory. */
  path: s.string({ minLength: 1 }),
  /** Rotate when the file would grow past this size (`0` never rotates). */
  max_size: s.size().default(100 * 1024 * 1024),
  /** Rotated files kept beside the current one (`path.1` is the newest). */
  max_backups: s.int({ min: 0, max: 100 }).default(5),
});
export type FileExporterConfig = Infer<typeof schema>;

/** How many recently written event ids are remembered (a few batches' worth). */
const RECENTLY_WRITTEN = 10_000;

/** The file-system calls the exporter makes; tests hand in a faulty one (fsync errors). */
export interface FileSystem {
  open(path: string, flags: string): Promise<FileHandle>;
  mkdir(path: string, opts: { recursive: true }): Promise<unknown>;
  rename(from: string, to: string): Promise<void>;
  stat(path: string): Promise<unknown>;
}

const realFs: FileSystem = { open: (p, f) => fsp.open(p, f), mkdir: fsp.mkdir, rename: fsp.rename, stat: fsp.stat };

/** The short reason of a file-system error, for the failure metric. */
function reasonOf(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return 'disk_full';
  return 'io_error';
}

export function createFileExporter(settings: ExporterSettings, cfg: FileExporterConfig, fs: FileSystem = realFs): Exporter {
  const path = resolve(cfg.path);
  let handle: FileHandle | undefined;
  /** Bytes of whole, synced batches in the file: where the next batch begins. */
  let size = 0;
  /** Set when a failed batch could not be cut off yet: the file must go back to `size` before anything else is written. */
  let dirty = false;
  /**
   * Ids of the events this process wrote and synced most recently. When the store could not
   * record the confirmation (a full state disk), the runner hands the same entries over again;
   * they are already in the file, so they are not written twice.
   */
  const written = new Set<string>();
  const remember = (ids: string[]) => {
    for (const id of ids) {
      written.delete(id);
      written.add(id);
    }
    for (const id of written) {
      if (written.size <= RECENTLY_WRITTEN) break;
      written.delete(id);
    }
  };

  const failure = (what: string, err: unknown, extra = '') =>
    new ExportError(`${settings.id}: ${what} ${path} failed: ${errorMessage(err)}${extra}`, { cause: err, reason: reasonOf(err) });

  async function ensureOpen(): Promise<FileHandle> {
    if (handle) return handle;
    try {
      await fs.mkdir(dirname(path), { recursive: true });
      const h = await fs.open(path, 'a+');
      try {
        const st = await h.stat();
        // A partial line left by a crash mid-write is cut off, so the next line starts clean.
        size = st.size > 0 ? await lastCompleteLineEnd(h, st.size) : 0;
        if (size < st.size) await h.truncate(size);
      } catch (err) {
        await h.close().catch(() => undefined);
        throw err;
      }
      handle = h;
      dirty = false;
      await syncDir(dirname(path));
      return h;
    } catch (err) {
      throw failure('cannot open', err);
    }
  }

  async function closeHandle(): Promise<void> {
    const h = handle;
    handle = undefined;
    await h?.close().catch(() => undefined);
  }

  async function rotate(): Promise<void> {
    await closeHandle();
    try {
      for (let i = cfg.max_backups - 1; i >= 1; i--) {
        await fs.rename(`${path}.${i}`, `${path}.${i + 1}`).catch(() => undefined);
      }
      if (cfg.max_backups > 0) await fs.rename(path, `${path}.1`);
      else
        await fs
          .stat(path)
          .then(() => fs.rename(path, `${path}.1`))
          .catch(() => undefined);
    } catch (err) {
      throw failure('rotating', err);
    }
  }

  /** Writes all of `data`, continuing after short writes. */
  async function writeAll(h: FileHandle, data: Buffer): Promise<void> {
    let off = 0;
    while (off < data.length) {
      const { bytesWritten } = await h.write(data, off, data.length - off, null);
      if (bytesWritten <= 0) throw Object.assign(new Error('write made no progress'), { code: 'EIO' });
      off += bytesWritten;
    }
  }

  /** Cuts the file back to the last whole batch; on failure the next attempt does it first. */
  async function cutBack(h: FileHandle): Promise<void> {
    try {
      await h.truncate(size);
      dirty = false;
    } catch {
      dirty = true;
    }
  }

  return {
    async start() {
      await ensureOpen();
    },
    async export(entries: OutboxEntry[]) {
      const work = entries.filter((e) => isWorkEntry(e) && !written.has(e.id)) as Array<OutboxEntry & { kind: 'work' }>;
      if (work.length === 0) return;
      const data = Buffer.from(work.map((e) => JSON.stringify(e.event)).join('\n') + '\n', 'utf8');
      if (cfg.max_size > 0 && size > 0 && size + data.length > cfg.max_size) await rotate();
      const h = await ensureOpen();
      if (dirty) {
        await cutBack(h);
        if (dirty) {
          await closeHandle();
          throw new ExportError(`${settings.id}: cannot cut ${path} back to its last whole batch; retrying`, { reason: 'io_error' });
        }
      }
      try {
        await writeAll(h, data);
      } catch (err) {
        await cutBack(h);
        throw failure(`writing ${work.length} events to`, err, '; the partial batch was removed, the batch is retried');
      }
      try {
        await h.datasync();
      } catch (err) {
        // After a failed fsync the kernel may have dropped the dirty pages: nothing of this batch
        // can be trusted. Cut it off, reopen, and write it again.
        await cutBack(h);
        await closeHandle();
        throw failure(`syncing ${work.length} events to`, err, '; the batch is written again');
      }
      size += data.length;
      remember(work.map((e) => e.id));
    },
    async shutdown() {
      await closeHandle();
    },
  };
}

/** Offset just after the last `\n` of the file (0 when it has none): where whole lines end. */
async function lastCompleteLineEnd(h: FileHandle, fileSize: number): Promise<number> {
  const chunk = Buffer.alloc(64 * 1024);
  let end = fileSize;
  while (end > 0) {
    const start = Math.max(0, end - chunk.length);
    const { bytesRead } = await h.read(chunk, 0, end - start, start);
    const nl = chunk.subarray(0, bytesRead).lastIndexOf(0x0a);
    if (nl >= 0) return start + nl + 1;
    end = start;
  }
  return 0;
}

/** Makes a created or renamed file's directory entry durable (best effort: not every file system allows it). */
async function syncDir(dir: string): Promise<void> {
  let d: FileHandle | undefined;
  try {
    d = await fsp.open(dir, 'r');
    await d.sync();
  } catch {
    // Directories cannot be opened for sync on some platforms; the file's own fsync still holds.
  } finally {
    await d?.close().catch(() => undefined);
  }
}

export const fileExporterFactory: ExporterFactory<FileExporterConfig> = {
  type: 'file',
  schema,
  create: (settings, cfg) => createFileExporter(settings, cfg),
};
