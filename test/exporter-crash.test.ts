/**
 * SIGKILL while deliveries are in flight: after a restart on the same SQLite state, every work
 * event reaches the webhook and the only repeats are events that were in flight (sent, answered
 * or not, but not yet confirmed in the store) at the moment of the kill.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { startCaptureServer, type CaptureServer } from './helpers/capture-server.ts';
import { otlpLogs, postLogs } from './helpers/otlp-logs.ts';
import { accepting, freePort, spawnVigil, tempDir, untilReady, type VigilChild, waitFor, writeConfig } from './helpers/vigil-process.ts';

const children: VigilChild[] = [];
let downstream: CaptureServer | undefined;
after(async () => {
  children.forEach((c) => c.child.kill('SIGKILL'));
  await downstream?.close();
});

const N = 30;

function failures(from: number, to: number): string {
  const t0 = Date.UTC(2026, 0, 1);
  return otlpLogs(
    Array.from({ length: to - from }, (_, k) => {
      const i = from + k;
      // Distinct exception types: each is its own group, and min_recurrence 1 makes each one work.
      const type = `Failure${String.fromCharCode(65 + (i % 26))}${String.fromCharCode(65 + Math.floor(i / 26))}Error`;
      return { time: t0 + i * 1000, body: `Traceback (most recent call last):\n  File "/tmp/job.py", line 1, in <module>\n${type}: boom` };
    }),
  );
}

test('SIGKILL mid-delivery: after restart every event arrives; repeats are only the in-flight ones', async () => {
  const dir = tempDir();
  const [otlpPort, hookPort] = [await freePort(), await freePort()];
  // The webhook answers slowly so the kill lands while requests are in flight.
  downstream = await startCaptureServer(hookPort, (_req, res) => void setTimeout(() => res.end(), 40));
  const config = writeConfig(
    dir,
    `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlpPort} } } }
processors:
  classify: {}
  recurrence: { min_recurrence: 1, max_per_turn: 100 }
exporters:
  webhook: { endpoint: http://127.0.0.1:${hookPort}/hook, retry_on_failure: { initial_interval: 50ms, max_elapsed_time: 0 } }
state:
  sqlite: { path: ${join(dir, 'state.db')} }
service:
  pipelines:
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: [webhook] }
`,
  );
  const start = async () => {
    const v = spawnVigil(['run', '-c', config]);
    children.push(v);
    await untilReady(v, accepting(`http://127.0.0.1:${otlpPort}/v1/logs`), 'vigil to listen');
    return v;
  };
  const first = await start();
  const res = await postLogs(`http://127.0.0.1:${otlpPort}/v1/logs`, failures(0, N));
  assert.equal(res.status, 200);
  await waitFor(() => (downstream!.received.length >= N / 3 ? true : undefined), 'some deliveries');
  first.child.kill('SIGKILL');
  await first.exited;
  const beforeKill = downstream.received.map((r) => String(r.headers['idempotency-key']));

  const second = await start();
  await waitFor(() => (new Set(downstream!.received.map((r) => r.headers['idempotency-key'])).size >= N ? true : undefined), 'every event after the restart');
  second.child.kill('SIGTERM');
  await second.exited;

  const ids = downstream.received.map((r) => String(r.headers['idempotency-key']));
  assert.equal(new Set(ids).size, N, 'every work event arrived');
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  const repeated = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
  // The webhook is confirmed event by event: at most the one request in flight at the kill repeats.
  assert.ok(repeated.length <= 1, `repeated: ${repeated.join(', ')}`);
  for (const id of repeated) assert.equal(id, beforeKill[beforeKill.length - 1], 'only the last request before the kill may repeat');
  // And nothing confirmed before the kill was sent again after it.
  const afterKill = ids.slice(beforeKill.length);
  assert.deepEqual(
    afterKill.filter((id) => beforeKill.includes(id)),
    repeated,
  );
});
