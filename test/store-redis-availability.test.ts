/**
 * `vigil run` with Redis unreachable at start: it starts (receivers listening), says clearly which
 * Redis it waits for (password masked), answers OTLP with 503 + Retry-After and /healthz with 503
 * until Redis comes, then processes normally. `vigil status` reads the same Redis.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { RedisServer, uniquePrefix } from './helpers/redis-server.ts';
import { freePort, spawnVigil, tempDir, waitFor, writeConfig, type VigilChild } from './helpers/vigil-process.ts';
import { otlpLogs, postLogs } from './helpers/otlp-logs.ts';
import { writtenJsonLines } from './helpers/work-file.ts';

const children: VigilChild[] = [];
const servers: RedisServer[] = [];
after(async () => {
  children.forEach((c) => c.child.kill('SIGKILL'));
  for (const s of servers) await s.stop();
});

const TRACEBACK = 'Traceback (most recent call last):\n  File "/srv/job.py", line 1, in <module>\nTimeoutError: upstream took too long';
const request = (uid: string, time: number) => otlpLogs([{ time, body: TRACEBACK, session: 'late-session', uid }], { 'service.name': 'late-agent' });

test('Redis unreachable at start: vigil runs, refuses retryably, then processes once Redis is there', { timeout: 90_000 }, async () => {
  const dir = tempDir();
  const [redisPort, otlpPort, healthPort] = [await freePort(), await freePort(), await freePort()];
  const workFile = join(dir, 'work-events.jsonl');
  const config = writeConfig(
    dir,
    `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlpPort} } } }
processors:
  classify: {}
  recurrence: {}
exporters:
  file/work: { path: ${workFile} }
extensions:
  health_check: { endpoint: 127.0.0.1:${healthPort} }
state:
  redis: { url: "redis://vigil:hunter2-secret@127.0.0.1:${redisPort}/0", key_prefix: "${uniquePrefix('late')}", connect_timeout: 500ms }
service:
  extensions: [health_check]
  pipelines:
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: [file/work] }
`,
  );
  const vigil = spawnVigil(['run', '-c', config]);
  children.push(vigil);
  const health = `http://127.0.0.1:${healthPort}`;
  const otlp = `http://127.0.0.1:${otlpPort}/v1/logs`;
  const post = (uid: string, time: number) => postLogs(otlp, request(uid, time));

  await waitFor(async () => ((await fetch(`${health}/livez`)).status === 200 ? true : undefined), `vigil to serve\n${vigil.stderr()}`);
  assert.equal((await fetch(`${health}/healthz`)).status, 503, 'not ready while the store is unreachable');
  const refused = await post('u1', Date.UTC(2026, 0, 2));
  assert.equal(refused.status, 503, await refused.text());
  assert.ok(Number(refused.headers.get('retry-after')) > 0);
  const stderr = vigil.stderr();
  assert.match(stderr, new RegExp(`redis at redis://vigil:\\*\\*\\*@127\\.0\\.0\\.1:${redisPort}/0 is unreachable`));
  assert.doesNotMatch(stderr, /hunter2/);

  const server = await RedisServer.start({ port: redisPort, user: 'vigil', password: 'hunter2-secret' });
  servers.push(server);
  await waitFor(async () => ((await fetch(`${health}/healthz`)).status === 200 ? true : undefined), `vigil to become ready\n${vigil.stderr()}`, 30_000);
  for (const [uid, dt] of [
    ['u1', 0],
    ['u2', 5000],
  ] as const) {
    const res = await post(uid, Date.UTC(2026, 0, 2) + dt);
    assert.equal(res.status, 200, await res.text());
  }
  const events = await waitFor(() => {
    const events = writtenJsonLines(workFile);
    return events.length ? events : undefined;
  }, 'the work event');
  assert.deepEqual(
    events.map((e) => [e.type, e.data.count]),
    [['dev.vigil.work.created', 2]],
  );

  const status = spawnVigil(['status', '-c', config]);
  assert.equal(await status.exited, 0, status.stderr());
  assert.match(status.stdout(), /store: redis/);
  assert.match(status.stdout(), /groups: 1 {2}open work: 1/);
  assert.doesNotMatch(status.stdout() + status.stderr(), /hunter2/);

  vigil.child.kill('SIGTERM');
  assert.equal(await vigil.exited, 0, vigil.stderr());
});
