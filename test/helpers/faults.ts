/**
 * Fault tooling for the reliability suite: small tmpfs mounts to fill (disk full for real), a
 * workload that produces a known number of work events, and readers for JSONL outputs.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, fstatSync, ftruncateSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { WorkOutboxItem } from '../../src/model/work.ts';
import { SqliteStore } from '../../src/store/sqlite/store.ts';
import type { StateStore } from '../../src/store/types.ts';
import { otlpLogs } from './otlp-logs.ts';
import { event } from './pages.ts';
import { tempDir } from './vigil-process.ts';
import { parseJsonLines } from './work-file.ts';

/** Whether this process may mount file systems (the tmpfs tests need root). */
export const CAN_MOUNT = typeof process.getuid === 'function' && process.getuid() === 0 && spawnSync('mount', ['--version']).status === 0;
export const NO_MOUNT_REASON = 'needs root to mount a small tmpfs (run the suite as root to fill a disk for real)';

export interface Tmpfs {
  dir: string;
  /** Fills the file system until at most `leaveBytes` are free. */
  fill(leaveBytes: number): void;
  /** Removes the filler: the space is free again. */
  free(): void;
  freeBytes(): number;
  unmount(): void;
}

/** Mounts a tmpfs of `sizeBytes` on a fresh directory. */
export function mountTmpfs(sizeBytes: number): Tmpfs {
  const dir = tempDir('vigil-tmpfs-');
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes}`, 'tmpfs', dir]);
  if (r.status !== 0) throw new Error(`mount tmpfs on ${dir} failed: ${r.stderr.toString()}`);
  const filler = join(dir, '.filler');
  const freeBytes = () => {
    const out = spawnSync('df', ['-B1', '--output=avail', dir]).stdout.toString().trim().split('\n');
    return Number(out[out.length - 1]);
  };
  return {
    dir,
    freeBytes,
    fill(leaveBytes) {
      // Write until the file system refuses, then give back `leaveBytes`.
      const fd = openSync(filler, 'a');
      try {
        for (const size of [1 << 20, 1 << 16, 1 << 12]) {
          const chunk = Buffer.alloc(size, 0x2e);
          for (;;) {
            try {
              if (writeSync(fd, chunk) < size) break;
            } catch {
              break;
            }
          }
        }
        ftruncateSync(fd, Math.max(0, fstatSync(fd).size - leaveBytes));
      } finally {
        closeSync(fd);
      }
    },
    free() {
      rmSync(filler, { force: true });
    },
    unmount() {
      spawnSync('umount', ['-l', dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A subdirectory, created. */
export function subdir(parent: string, name: string): string {
  const d = join(parent, name);
  mkdirSync(d, { recursive: true });
  return d;
}

const T0 = Date.UTC(2026, 0, 1);

/**
 * OTLP/JSON log bodies that make exactly `groups` work events (`dev.vigil.work.created`) with
 * `recurrence: { min_recurrence: 2 }`: each group is one distinct failure sent twice within the
 * window, in `batches` requests. `tag` keeps runs apart; `pad` lengthens each signature.
 */
export function workload(groups: number, opts: { tag?: string; batches?: number; pad?: number; session?: (g: number) => string } = {}): string[] {
  const tag = opts.tag ?? 'w';
  const batches = opts.batches ?? 1;
  const records = Array.from({ length: groups }, (_, g) => {
    const body = `Traceback (most recent call last):\n  File "/srv/job.py", line 1, in <module>\nKeyError: missing key ${letters(g)} of run ${tag} ${'p'.repeat(opts.pad ?? 0)}`;
    const session = opts.session?.(g) ?? `s-${tag}-${g % 7}`;
    return [
      { time: T0 + g * 10, body, session, uid: `${tag}-${g}-a` },
      { time: T0 + g * 10 + 1, body, session, uid: `${tag}-${g}-b` },
    ];
  }).flat();
  const per = Math.ceil(records.length / batches);
  const out: string[] = [];
  for (let i = 0; i < records.length; i += per) out.push(otlpLogs(records.slice(i, i + per)));
  return out;
}

/** A number as letters (`a`, `b`, …, `ba`): survives the fingerprint's masking of numbers. */
export function letters(n: number): string {
  let s = '';
  do {
    s = String.fromCharCode(97 + (n % 26)) + s;
    n = Math.floor(n / 26);
  } while (n > 0);
  return s;
}

/** The JSON lines of a file ([] when it does not exist); throws on a line that does not parse (a cut line). */
export function jsonLines<T = Record<string, unknown>>(file: string): T[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  if (text !== '' && !text.endsWith('\n')) throw new Error(`${file} ends in a cut line: ${JSON.stringify(text.slice(-80))}`);
  return parseJsonLines<T>(file, text.split('\n'));
}

/** One Prometheus sample value (summed over series that match every label given); 0 when absent. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{') && !line.startsWith(name + ' ')) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** A work-event outbox item with id `id` (a minimal CloudEvent). */
export function workItem(id: string, data: Record<string, unknown> = {}): WorkOutboxItem {
  return {
    kind: 'work',
    id,
    event: {
      specversion: '1.0',
      id,
      source: 'vigil/t',
      type: 'dev.vigil.work.created',
      time: new Date(0).toISOString(),
      subject: 'g',
      datacontenttype: 'application/json',
      data: data as never,
    },
  };
}

/** Commits one page of partition `p` carrying `ids` as outbox entries (one ingest record moves the cursor). */
export async function commitOutbox(store: StateStore, n: number, ids: string[]): Promise<void> {
  await store.append('logs', [event({ id: `rec-${n}`, time: n, partition: 'p' })]);
  const [e] = await store.readPage('logs', 'p', 1);
  await store.commit({
    pipeline: 'logs',
    partition: 'p',
    cursor: e!.id,
    groups: [],
    turns: [],
    revisions: [],
    failures: [],
    outbox: ids.map((id, i) => workItem(id, { count: i })),
  });
}

/** A real SQLite store (in a temp dir) whose `logs` outbox holds `evt-0` … `evt-<n-1>` for `exporter`. */
export async function sqliteOutbox(n: number, exporter: string): Promise<SqliteStore> {
  const store = new SqliteStore({ path: join(tempDir(), 'state.db'), synchronous: 'full', busy_timeout: 1000, dedupe_window: 3_600_000 });
  await store.open();
  await store.registerExporter('logs', exporter);
  await commitOutbox(
    store,
    0,
    Array.from({ length: n }, (_, i) => `evt-${i}`),
  );
  return store;
}
