/**
 * Reliability, case 1: the file exporter never confirms a partially written batch. A real disk
 * fills up (a small tmpfs) under a running vigil: no batch is confirmed short, no cut line stays
 * in the file, the failure is logged and counted with its reason, and once space is back the file
 * holds exactly what an undisturbed exporter of the same pipeline wrote. Short writes, fsync
 * errors and a cut line left by a crash are driven through an injected file system.
 */
import assert from 'node:assert/strict';
import * as fsp from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { DEFAULT_DELIVERY } from '../src/exporters/delivery.ts';
import { createFileExporter, type FileSystem } from '../src/exporters/file/factory.ts';
import { memoryLogger } from '../src/logger.ts';
import { ExporterRunner } from '../src/service/exporter-runner.ts';
import { type SqliteStore } from '../src/store/sqlite/store.ts';
import { CAN_MOUNT, jsonLines, metricValue, mountTmpfs, NO_MOUNT_REASON, workload, type Tmpfs, sqliteOutbox } from './helpers/faults.ts';
import { postLogs } from './helpers/otlp-logs.ts';
import { accepting, freePort, spawnVigil, tempDir, untilReady, type VigilChild, waitFor, writeConfig } from './helpers/vigil-process.ts';

const children: VigilChild[] = [];
const mounts: Tmpfs[] = [];
after(() => {
  children.forEach((c) => c.child.kill('SIGKILL'));
  mounts.forEach((m) => m.unmount());
});

describe('file exporter on a disk that fills up (tmpfs)', { skip: CAN_MOUNT ? false : NO_MOUNT_REASON }, () => {
  test('no partial batch is confirmed, no cut line stays; after space returns the file equals an undisturbed one', async () => {
    const fs = mountTmpfs(512 * 1024);
    mounts.push(fs);
    const dir = tempDir();
    const [otlpPort, metricsPort] = [await freePort(), await freePort()];
    const reference = join(dir, 'reference.jsonl');
    const onTmpfs = join(fs.dir, 'work.jsonl');
    const config = writeConfig(
      dir,
      `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlpPort} } } }
processors:
  classify: {}
  recurrence: { min_recurrence: 2, max_per_turn: 100000 }
exporters:
  file/reference: { path: ${reference} }
  file/tmpfs:
    path: ${onTmpfs}
    retry_on_failure: { initial_interval: 20ms, max_interval: 100ms, max_elapsed_time: 0 }
    sending_queue: { batch_size: 500 }
state:
  sqlite: { path: ${join(dir, 'state.db')} }
service:
  telemetry: { metrics: { address: 127.0.0.1:${metricsPort} } }
  pipelines:
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: [file/reference, file/tmpfs] }
`,
    );
    const vigil = spawnVigil(['run', '-c', config]);
    children.push(vigil);
    const otlp = `http://127.0.0.1:${otlpPort}/v1/logs`;
    await untilReady(vigil, accepting(otlp), 'vigil to listen');

    // Room for a few dozen lines only; the workload writes hundreds in large batches.
    await postLogs(otlp, workload(5, { tag: 'warm' })[0]!);
    await waitFor(() => (jsonLines(onTmpfs).length === 5 ? true : undefined), 'the first events on the tmpfs');
    fs.fill(16 * 1024);
    const bodies = workload(400, { tag: 'full', batches: 4, pad: 200 });
    for (const body of bodies) assert.equal((await postLogs(otlp, body)).status, 200);
    const expected = await waitFor(() => {
      const lines = jsonLines<{ id: string }>(reference);
      return lines.length === 405 ? lines : undefined;
    }, 'the reference exporter to write every event');

    const metrics = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    await waitFor(() => ((vigil.stderr().match(/no space left on device/gi) ?? []).length >= 3 ? true : undefined), 'the exporter to fail on the full disk');
    // While the disk is full: only whole, confirmed batches in the file — every line parses, no
    // line is cut, and nothing of the failing batch is left. The exporter retries every 20–100 ms,
    // and a read that lands inside an attempt sees its partial write before the cut-back removes
    // it (an append cannot be made invisible), so a read with a cut tail is taken again: between
    // attempts the file must be whole. A cut line that stayed would time this wait out.
    const during = await waitFor(() => {
      try {
        return jsonLines<{ id: string }>(onTmpfs);
      } catch (e) {
        if (/ends in a cut line/.test((e as Error).message)) return undefined;
        throw e;
      }
    }, 'a read of the file between two attempts (no cut line left behind)');
    assert.deepEqual(
      during.map((e) => e.id),
      expected.slice(0, during.length).map((e) => e.id),
      'what is in the file is a prefix of the undisturbed output',
    );
    assert.ok(during.length < 405, 'the disk really was too full');
    assert.match(vigil.stderr(), /ENOSPC|no space left on device/i, 'the log says why');
    assert.match(vigil.stderr(), /partial batch was removed/);
    assert.ok(metricValue(await metrics(), 'vigil_exporter_failed_attempts_total', { exporter: 'file/tmpfs', reason: 'disk_full' }) >= 3, 'counted with its reason');

    fs.free();
    await waitFor(() => (jsonLines(onTmpfs).length >= 405 ? true : undefined), 'the rest of the events once space is back', 30_000);
    assert.equal(readFileSync(onTmpfs, 'utf8'), readFileSync(reference, 'utf8'), 'byte for byte what the undisturbed exporter wrote');
    assert.equal(metricValue(await metrics(), 'vigil_exporter_dead_lettered_items_total', { exporter: 'file/tmpfs' }), 0, 'nothing given up');
    vigil.child.kill('SIGTERM');
    assert.equal(await vigil.exited, 0, vigil.stderr().slice(-2000));
  });
});

/** The real file system, with faults injected into the handles it opens. */
function faultyFs(faults: { maxWrite?: number; failDatasync?: () => boolean; failWriteAfter?: () => number | undefined }): FileSystem {
  return {
    mkdir: fsp.mkdir,
    rename: fsp.rename,
    stat: fsp.stat,
    async open(path, flags) {
      const h = await fsp.open(path, flags);
      return new Proxy(h, {
        get(target, prop, receiver) {
          if (prop === 'write') {
            return async (buf: Buffer, off: number, len: number, pos: null) => {
              const budget = faults.failWriteAfter?.();
              if (budget !== undefined) {
                // Writes part, then the disk fails: what ENOSPC does mid-batch.
                if (budget > 0) await target.write(buf, off, Math.min(len, budget), pos);
                throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
              }
              return target.write(buf, off, Math.min(len, faults.maxWrite ?? len), pos);
            };
          }
          if (prop === 'datasync') {
            return async () => {
              if (faults.failDatasync?.()) throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
              return target.datasync();
            };
          }
          const v = Reflect.get(target, prop, receiver);
          return typeof v === 'function' ? v.bind(target) : v;
        },
      }) as FileHandle;
    },
  };
}

describe('file exporter faults through an injected file system', () => {
  const run = (store: SqliteStore, fs: FileSystem, path: string) => {
    const exporter = createFileExporter({ id: 'file', logger: memoryLogger() }, { path, max_size: 0, max_backups: 1, ...DEFAULT_DELIVERY }, fs);
    const logger = memoryLogger();
    const runner = new ExporterRunner({
      pipeline: 'logs',
      exporterId: 'file',
      exporter,
      store,
      logger,
      delivery: { ...DEFAULT_DELIVERY, sending_queue: { queue_size: 10_000, batch_size: 100 } },
      clock: { now: () => 0, sleep: async () => undefined },
    });
    return { exporter, runner, logger };
  };
  const ids = (path: string) => jsonLines<{ id: string }>(path).map((e) => e.id);
  const all = (n: number) => Array.from({ length: n }, (_, i) => `evt-${i}`);

  test('short writes are continued: the batch arrives whole, once', async () => {
    const store = await sqliteOutbox(100, 'file');
    const path = join(tempDir(), 'work.jsonl');
    const { runner } = run(store, faultyFs({ maxWrite: 37 }), path);
    assert.equal(await runner.deliverBatch(), 'delivered');
    assert.deepEqual(ids(path), all(100));
    assert.equal(await store.outboxLag('logs', 'file'), 0);
    await store.close();
  });

  test('a write that fails part-way (ENOSPC) confirms nothing and leaves nothing; the retry writes the batch once', async () => {
    const store = await sqliteOutbox(100, 'file');
    const path = join(tempDir(), 'work.jsonl');
    let failing = true;
    const { runner, logger } = run(store, faultyFs({ failWriteAfter: () => (failing ? 7000 : undefined) }), path);
    assert.equal(await runner.deliverBatch(), 'retry');
    assert.equal(readFileSync(path, 'utf8'), '', 'the 7000 bytes written before the failure were cut off');
    assert.equal(await store.outboxLag('logs', 'file'), 100, 'nothing confirmed');
    assert.equal(runner.stats.failuresByReason.disk_full, 1);
    assert.ok(
      logger.entries.some((e) => /ENOSPC/.test(String(e.error))),
      'the log says why',
    );
    failing = false;
    assert.equal(await runner.deliverBatch(), 'delivered');
    assert.deepEqual(ids(path), all(100));
    await store.close();
  });

  test('an fsync error confirms nothing: the batch is cut off and written again', async () => {
    const store = await sqliteOutbox(100, 'file');
    const path = join(tempDir(), 'work.jsonl');
    let syncs = 0;
    const { runner } = run(store, faultyFs({ failDatasync: () => ++syncs === 1 }), path);
    assert.equal(await runner.deliverBatch(), 'retry');
    assert.equal(readFileSync(path, 'utf8'), '');
    assert.equal(await store.outboxLag('logs', 'file'), 100);
    assert.equal(runner.stats.failuresByReason.io_error, 1);
    assert.equal(await runner.deliverBatch(), 'delivered');
    assert.deepEqual(ids(path), all(100));
    await store.close();
  });

  test('when the store cannot record the confirmation (a full state disk), the retry does not write the batch twice', async () => {
    const store = await sqliteOutbox(50, 'file');
    const path = join(tempDir(), 'work.jsonl');
    const ack = store.ackOutbox.bind(store);
    let fail = true;
    store.ackOutbox = async (...args: Parameters<SqliteStore['ackOutbox']>) => {
      if (fail) {
        fail = false;
        throw Object.assign(new Error('SQLITE_FULL: database or disk is full'), { code: 'SQLITE_FULL' });
      }
      return ack(...args);
    };
    const { runner } = run(store, faultyFs({}), path);
    assert.equal(await runner.deliverBatch(), 'retry');
    assert.equal(await store.outboxLag('logs', 'file'), 50, 'not confirmed');
    assert.equal(await runner.deliverBatch(), 'delivered');
    assert.deepEqual(ids(path), all(50), 'each line once');
    await store.close();
  });

  test('a cut line left by a crash mid-write is removed before the next batch', async () => {
    const store = await sqliteOutbox(3, 'file');
    const path = join(tempDir(), 'work.jsonl');
    writeFileSync(path, '{"id":"earlier"}\n');
    appendFileSync(path, '{"id":"evt-0","specver');
    const { runner } = run(store, faultyFs({}), path);
    assert.equal(await runner.deliverBatch(), 'delivered');
    assert.deepEqual(ids(path), ['earlier', ...all(3)]);
    await store.close();
  });
});
