/**
 * A shared Redis keeps the outbox cursor of every exporter any sidecar registered. One removed from
 * every config would hold the outbox back for ever, and no sidecar can know that it is gone; so a
 * sidecar says at start which registered cursors are not in its config, how many entries each
 * holds back, and the command that retires one. Real Redis (REDIS_URL), real `vigil run`.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { commitOutbox } from './helpers/faults.ts';
import { localRedisStore } from './helpers/stores.ts';
import { deletePrefix, REDIS_URL, uniquePrefix } from './helpers/redis-server.ts';
import { freePort, spawnVigil, tempDir, waitFor, writeConfig, type VigilChild } from './helpers/vigil-process.ts';

const prefix = uniquePrefix('foreign');
const children: VigilChild[] = [];
after(async () => {
  children.forEach((c) => c.child.kill('SIGKILL'));
  await deletePrefix(REDIS_URL, prefix);
});

test('vigil run on Redis warns of an exporter cursor that is not in its config, with what it holds back and the command that retires it', async () => {
  const store = localRedisStore(prefix);
  await store.open();
  // An exporter another sidecar (or an older config) registered; it read nothing of 3 entries.
  await store.registerExporter('logs', 'file/removed');
  await commitOutbox(store, 1, ['a', 'b', 'c']);
  const keep = await store.foreignExporters('logs', ['file/removed']);
  assert.deepEqual(keep, [], 'an exporter in the config is not foreign');
  await store.close();

  const dir = tempDir();
  const port = await freePort();
  const config = writeConfig(
    dir,
    `receivers:
  otlp:
    protocols:
      http: { endpoint: 127.0.0.1:${port} }
exporters:
  file:
    path: ${dir}/events.jsonl
state:
  redis: { url: "${REDIS_URL}", key_prefix: "${prefix}" }
service:
  pipelines:
    logs: { receivers: [otlp], processors: [], exporters: [file] }
`,
  );
  const vigil = spawnVigil(['run', '-c', config]);
  children.push(vigil);
  const line = await waitFor(() => (vigil.stdout() + vigil.stderr()).split('\n').find((l) => l.includes("exporter 'file/removed'")), 'the warning');
  const entry = JSON.parse(line) as { level: string; msg: string; pipeline: string; exporter: string; heldBack: number };
  assert.equal(entry.level, 'warn');
  assert.equal(entry.pipeline, 'logs');
  assert.equal(entry.heldBack, 3);
  assert.match(entry.msg, new RegExp(`redis-cli HDEL '${prefix}\\{state\\}:exporter-cursors:logs' 'file/removed'`));
  assert.ok(!(vigil.stdout() + vigil.stderr()).includes("exporter 'file' has"), 'its own exporter is not foreign');
  vigil.child.kill('SIGTERM');
  assert.equal(await vigil.exited, 0);
});
