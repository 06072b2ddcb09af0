import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { DEFAULT_DELIVERY } from '../src/exporters/delivery.ts';
import { fileExporterFactory } from '../src/exporters/file/factory.ts';
import { memoryLogger } from '../src/logger.ts';
import type { OutboxEntry } from '../src/model/work.ts';
import { tempDir } from './helpers/vigil-process.ts';

const entry = (seq: number): OutboxEntry => ({
  kind: 'work',
  seq,
  id: `id-${seq}`,
  event: {
    specversion: '1.0',
    id: `id-${seq}`,
    source: 'vigil/t',
    type: 'dev.vigil.work.created',
    time: new Date(0).toISOString(),
    subject: 'g',
    datacontenttype: 'application/json',
    data: { count: seq } as never,
  },
});

test('file exporter writes one CloudEvent per line and rotates by size', async () => {
  const dir = tempDir();
  const path = join(dir, 'sub', 'work.jsonl');
  const exporter = fileExporterFactory.create({ id: 'file', logger: memoryLogger() }, { path, max_size: 600, max_backups: 2, ...DEFAULT_DELIVERY });
  await exporter.start();
  for (let i = 1; i <= 6; i++) await exporter.export([entry(i)]);
  await exporter.shutdown();
  const current = readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const backup = readFileSync(`${path}.1`, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.ok(current.length >= 1 && backup.length >= 1);
  assert.ok(readFileSync(path).length <= 600);
  // Newest lines are in the current file; ids run on without gaps across the rotation.
  const ids = [
    ...(existsSync(`${path}.2`)
      ? readFileSync(`${path}.2`, 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l))
      : []),
    ...backup,
    ...current,
  ].map((e) => e.id);
  assert.deepEqual(
    ids,
    ids.slice().sort((a, b) => Number(a.slice(3)) - Number(b.slice(3))),
  );
  assert.equal(ids[ids.length - 1], 'id-6');
  assert.ok(!existsSync(`${path}.3`), 'at most max_backups rotated files');
});
