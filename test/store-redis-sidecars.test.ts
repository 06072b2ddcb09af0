/**
 * Several sidecars on one Redis (issue #5, point 4): two real `vigil run` processes see the same
 * failure (same service, revision and fingerprint) from different sessions; between their two
 * outputs there is exactly one work.created, and later occurrences are work.updated of that work.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { deletePrefix, REDIS_URL, uniquePrefix } from './helpers/redis-server.ts';
import { freePort, spawnVigil, tempDir, waitFor, writeConfig, type VigilChild } from './helpers/vigil-process.ts';
import { otlpLogs, postLogs } from './helpers/otlp-logs.ts';
import { writtenJsonLines } from './helpers/work-file.ts';

const prefix = uniquePrefix('sidecars');
const children: VigilChild[] = [];
after(async () => {
  children.forEach((c) => c.child.kill('SIGKILL'));
  await deletePrefix(REDIS_URL, prefix);
});

async function sidecar(name: string) {
  const dir = tempDir(`vigil-${name}-`);
  const [otlp, health] = [await freePort(), await freePort()];
  const workFile = join(dir, 'work-events.jsonl');
  const config = writeConfig(
    dir,
    `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlp} } } }
processors:
  classify: {}
  recurrence: { min_recurrence: 2, grouping_window: 60s }
exporters:
  file/work: { path: ${workFile} }
extensions:
  health_check: { endpoint: 127.0.0.1:${health} }
state:
  redis: { url: "${REDIS_URL}", key_prefix: "${prefix}" }
service:
  extensions: [health_check]
  pipelines:
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: [file/work] }
`,
  );
  const vigil = spawnVigil(['run', '-c', config]);
  children.push(vigil);
  let exited: number | null | undefined;
  void vigil.exited.then((code) => (exited = code));
  await waitFor(
    async () => {
      if (exited !== undefined) throw new Error(`${name} exited ${exited}: ${vigil.stderr()}`);
      return (await fetch(`http://127.0.0.1:${health}/healthz`)).status === 200 ? true : undefined;
    },
    `${name} to be ready`,
    60_000,
  );
  return { vigil, otlp: `http://127.0.0.1:${otlp}/v1/logs`, health: `http://127.0.0.1:${health}`, workFile };
}

const TRACEBACK = 'Traceback (most recent call last):\n  File "/srv/app/job.py", line 3, in <module>\nConnectionResetError: peer went away';

function request(session: string, uid: string, time: number): string {
  return otlpLogs([{ time, body: TRACEBACK, session, uid }], { 'service.name': 'shared-agent', 'service.version': '3.1.0' });
}

test('two vigil processes on one Redis: one work item between them, later occurrences update it', { timeout: 120_000 }, async () => {
  const a = await sidecar('a');
  const b = await sidecar('b');
  const t0 = Date.UTC(2026, 0, 7, 9);
  const send = async (to: string, session: string, uid: string, time: number) => {
    const res = await postLogs(to, request(session, uid, time));
    assert.equal(res.status, 200, await res.text());
  };
  // The same failure from two sessions, one per sidecar, at the same moment: both race for the group.
  await Promise.all([send(a.otlp, 'session-a', 'a1', t0), send(b.otlp, 'session-b', 'b1', t0 + 1000)]);
  for (let i = 2; i <= 4; i++) {
    await Promise.all([send(a.otlp, 'session-a', `a${i}`, t0 + i * 10_000), send(b.otlp, 'session-b', `b${i}`, t0 + i * 10_000 + 500)]);
  }
  const drained = async (health: string) => {
    const st = (await (await fetch(`${health}/status`)).json()) as any;
    const pending = st.store.pipelines.flatMap((p: any) => p.partitions).reduce((n: number, p: any) => n + p.pending, 0);
    const lag = st.store.pipelines.flatMap((p: any) => p.outbox.exporters).reduce((n: number, e: any) => n + e.lag, 0);
    return pending === 0 && lag === 0 ? st.store : undefined;
  };
  const read = (file: string) => writtenJsonLines(file);
  const store = await waitFor(async () => {
    const st = await drained(a.health);
    // Both sidecars' outputs together hold the final count (8 occurrences) once everything is delivered.
    const all = [...read(a.workFile), ...read(b.workFile)];
    return st && (await drained(b.health)) && all.some((e) => e.data.count === 8) ? st : undefined;
  }, 'both sidecars to drain');
  const byId = new Map<string, any>();
  for (const e of [...read(a.workFile), ...read(b.workFile)]) byId.set(e.id, e);
  const events = [...byId.values()];
  const created = events.filter((e) => e.type === 'dev.vigil.work.created');
  assert.equal(created.length, 1, JSON.stringify(events.map((e) => [e.type, e.data.partition, e.data.count])));
  assert.equal(created[0].data.count, 2);
  assert.deepEqual(new Set(events.map((e) => e.data.work_id)), new Set([created[0].data.work_id]), 'every event is about the one work item');
  const updated = events.filter((e) => e.type === 'dev.vigil.work.updated');
  assert.ok(updated.length >= 1, 'later occurrences are work.updated');
  assert.equal(Math.max(...events.map((e) => e.data.count)), 8);
  assert.deepEqual(new Set(events.map((e) => e.data.partition)).size >= 1, true);
  assert.equal(store.groups, 1);
  assert.equal(store.openWork, 1);
  for (const s of [a, b]) {
    s.vigil.child.kill('SIGTERM');
    assert.equal(await s.vigil.exited, 0, s.vigil.stderr());
  }
});
