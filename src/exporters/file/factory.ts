/**
 * Exporter `file`: work events as CloudEvents JSON, one per line (DESIGN 4.2). A batch is written
 * and flushed to disk before it is confirmed; a crash between write and confirmation can repeat
 * lines, which readers drop by the event `id`. Rotation by size keeps the file bounded.
 */
import { mkdir, open, rename, stat, type FileHandle } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { ExporterFactory } from '../../component.ts';
import { s, type Infer } from '../../config/schema.ts';
import { withDelivery } from '../delivery.ts';
import { VigilError } from '../../errors.ts';
import { isWorkEntry, type OutboxEntry } from '../../model/work.ts';

const schema = withDelivery({
  /** File to append to; relative paths are relative to the working directory. */
  path: s.string({ minLength: 1 }),
  /** Rotate when the file would grow past this size (`0` never rotates). */
  max_size: s.size().default(100 * 1024 * 1024),
  /** Rotated files kept beside the current one (`path.1` is the newest). */
  max_backups: s.int({ min: 0, max: 100 }).default(5),
});
export type FileExporterConfig = Infer<typeof schema>;

export const fileExporterFactory: ExporterFactory<FileExporterConfig> = {
  type: 'file',
  schema,
  create(settings, cfg) {
    const path = resolve(cfg.path);
    let handle: FileHandle | undefined;
    let size = 0;

    async function ensureOpen(): Promise<FileHandle> {
      if (handle) return handle;
      try {
        await mkdir(dirname(path), { recursive: true });
        handle = await open(path, 'a');
        size = (await handle.stat()).size;
        return handle;
      } catch (err) {
        throw new VigilError('VIGIL_EXPORT_FAILED', `${settings.id}: cannot open ${path}: ${(err as Error).message}`, { transient: true, cause: err });
      }
    }

    async function rotate(): Promise<void> {
      await handle?.close();
      handle = undefined;
      for (let i = cfg.max_backups - 1; i >= 1; i--) {
        await rename(`${path}.${i}`, `${path}.${i + 1}`).catch(() => undefined);
      }
      if (cfg.max_backups > 0) await rename(path, `${path}.1`);
      else await stat(path).then(() => rename(path, `${path}.1`)).catch(() => undefined);
    }

    return {
      async start() {
        await ensureOpen();
      },
      async export(entries: OutboxEntry[]) {
        const work = entries.filter(isWorkEntry);
        if (work.length === 0) return;
        const text = work.map((e) => JSON.stringify(e.event)).join('\n') + '\n';
        const bytes = Buffer.byteLength(text);
        if (cfg.max_size > 0 && size > 0 && size + bytes > cfg.max_size) await rotate();
        const h = await ensureOpen();
        await h.write(text);
        await h.datasync();
        size += bytes;
      },
      async shutdown() {
        const h = handle;
        handle = undefined;
        await h?.close();
      },
    };
  },
};
