/**
 * Reliability, case 8: the operator surfaces of a running vigil. /status and /metrics take the
 * receivers' bearer token (or their own); binding beyond loopback without auth is warned about;
 * `vigil status` escapes what records put into it; a second vigil on the same SQLite file is
 * refused with the holder named; /healthz says not ready while the state disk is full and ready
 * again once it is not — and what clients resend then ends as exactly the work events of an
 * undisturbed run.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { CAN_MOUNT, jsonLines, mountTmpfs, NO_MOUNT_REASON, workload, type Tmpfs } from './helpers/faults.ts';
import { RedisServer } from './helpers/redis-server.ts';
import { otlpLogs, postLogs } from './helpers/otlp-logs.ts';
import { freePort, spawnVigil, tempDir, waitFor, writeConfig, type VigilChild } from './helpers/vigil-process.ts';

const children: VigilChild[] = [];
const mounts: Tmpfs[] = [];
after(() => {
  children.forEach((c) => c.child.kill('SIGKILL'));
  mounts.forEach((m) => m.unmount());
});

function start(config: string, env: NodeJS.ProcessEnv = {}): VigilChild {
  const v = spawnVigil(['run', '-c', config], { env });
  children.push(v);
  return v;
}

async function stop(v: VigilChild): Promise<void> {
  v.child.kill('SIGTERM');
  assert.equal(await v.exited, 0, v.stderr().slice(-2000));
}

const listening = (url: string) => waitFor(async () => ((await fetch(url).catch(() => undefined)) ? true : undefined), url);

describe('operator endpoints take auth', () => {
  test("/status and /metrics take the receivers' token; /healthz and /livez stay open; vigil status sends the token", async () => {
    const dir = tempDir();
    const [otlp, health, metrics] = [await freePort(), await freePort(), await freePort()];
    const config = writeConfig(
      dir,
      `receivers:
  otlp:
    protocols: { http: { endpoint: 127.0.0.1:${otlp} } }
    auth:
      bearer_token: \${env:RX_TOKEN}
exporters:
  debug: {}
extensions:
  health_check: { endpoint: 127.0.0.1:${health} }
state:
  memory: {}
service:
  extensions: [health_check]
  telemetry: { metrics: { address: 127.0.0.1:${metrics} } }
  pipelines:
    logs: { receivers: [otlp], exporters: [debug] }
`,
    );
    const v = start(config, { RX_TOKEN: 'rx-token' });
    await listening(`http://127.0.0.1:${health}/livez`);
    const get = (port: number, path: string, token?: string) =>
      fetch(`http://127.0.0.1:${port}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    await waitFor(async () => ((await get(health, '/healthz')).status === 200 ? true : undefined), 'ready');
    assert.equal((await get(health, '/livez')).status, 200);
    for (const [port, path] of [
      [health, '/status'],
      [metrics, '/metrics'],
    ] as const) {
      const refused = await get(port, path);
      assert.equal(refused.status, 401, path);
      assert.equal(refused.headers.get('www-authenticate'), 'Bearer');
      assert.doesNotMatch(await refused.text(), /session|pipeline/);
      assert.equal((await get(port, path, 'wrong')).status, 401, path);
      assert.equal((await get(port, path, 'rx-token')).status, 200, path);
    }
    const status = spawnVigil(['status', '-c', config], { env: { RX_TOKEN: 'rx-token' } });
    assert.equal(await status.exited, 0, status.stderr());
    assert.match(status.stdout(), /store: memory/);
    await stop(v);
  });

  test("an endpoint's own token replaces the receivers'", async () => {
    const dir = tempDir();
    const [otlp, health, metrics] = [await freePort(), await freePort(), await freePort()];
    const config = writeConfig(
      dir,
      `receivers:
  otlp:
    protocols: { http: { endpoint: 127.0.0.1:${otlp} } }
    auth: { bearer_token: rx-token }
exporters:
  debug: {}
extensions:
  health_check:
    endpoint: 127.0.0.1:${health}
    auth: { bearer_token: ops-token }
state:
  memory: {}
service:
  extensions: [health_check]
  telemetry:
    metrics:
      address: 127.0.0.1:${metrics}
      auth: { bearer_token: scrape-token }
  pipelines:
    logs: { receivers: [otlp], exporters: [debug] }
`,
    );
    const v = start(config);
    await listening(`http://127.0.0.1:${health}/livez`);
    const status = (token: string) => fetch(`http://127.0.0.1:${health}/status`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);
    const scrape = (token: string) => fetch(`http://127.0.0.1:${metrics}/metrics`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);
    assert.deepEqual([await status('rx-token'), await status('ops-token')], [401, 200]);
    assert.deepEqual([await scrape('rx-token'), await scrape('ops-token'), await scrape('scrape-token')], [401, 401, 200]);
    await stop(v);
  });

  test('binding beyond loopback without auth warns for every listener; with a receiver token it does not', async () => {
    const dir = tempDir();
    const ports = async () => [await freePort(), await freePort(), await freePort()];
    const yaml = (p: number[], auth: string) => `receivers:
  otlp:
    protocols: { http: { endpoint: 0.0.0.0:${p[0]} } }
${auth}
exporters:
  debug: {}
extensions:
  health_check: { endpoint: 0.0.0.0:${p[1]} }
state:
  memory: {}
service:
  extensions: [health_check]
  telemetry: { metrics: { address: 0.0.0.0:${p[2]} } }
  pipelines:
    logs: { receivers: [otlp], exporters: [debug] }
`;
    const open = await ports();
    const v = start(writeConfig(dir, yaml(open, '')));
    await listening(`http://127.0.0.1:${open[1]}/livez`);
    const warnings = () =>
      v
        .stderr()
        .split('\n')
        .filter((l) => /reachable from other machines, without authentication/.test(l));
    await waitFor(() => (warnings().length === 3 ? true : undefined), 'three warnings');
    assert.ok(
      warnings().some((l) => /receiver 'otlp'.*receivers\.otlp\.auth\.bearer_token/.test(l)),
      warnings().join('\n'),
    );
    assert.ok(
      warnings().some((l) => /health_check.*GET \/status and \/v1\/failures show session ids/.test(l)),
      warnings().join('\n'),
    );
    assert.ok(
      warnings().some((l) => /service\.telemetry\.metrics/.test(l)),
      warnings().join('\n'),
    );
    await stop(v);

    const authed = await ports();
    const w = start(writeConfig(tempDir(), yaml(authed, '    auth: { bearer_token: t0ken }')));
    await listening(`http://127.0.0.1:${authed[1]}/livez`);
    await waitFor(() => (/vigil is running/.test(w.stderr()) ? true : undefined), 'running');
    assert.doesNotMatch(w.stderr(), /without authentication/);
    await stop(w);
  });
});

describe('vigil status escapes what records put into it', () => {
  test('a session id with an escape sequence and a newline is shown escaped, forging no line', async () => {
    const dir = tempDir();
    const otlp = await freePort();
    const config = writeConfig(
      dir,
      `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlp} } } }
processors:
  classify: {}
  recurrence: { min_recurrence: 2 }
exporters:
  file: { path: ${join(dir, 'work.jsonl')} }
state:
  sqlite: { path: ${join(dir, 'state.db')} }
service:
  pipelines:
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: [file] }
`,
    );
    const v = start(config);
    const url = `http://127.0.0.1:${otlp}/v1/logs`;
    await waitFor(async () => ((await postLogs(url, '{}').catch(() => undefined))?.status === 200 ? true : undefined), 'vigil to listen');
    const evil = 'x\u001b[2J\u001b[H\ndead letters: 0 FORGED\u202e';
    const body = 'Traceback (most recent call last):\n  File "/srv/a.py", line 1, in <module>\nValueError: boom';
    const t0 = Date.UTC(2026, 0, 1);
    assert.equal(
      (
        await postLogs(
          url,
          otlpLogs([
            { time: t0, body, session: evil },
            { time: t0 + 1, body, session: evil },
          ]),
        )
      ).status,
      200,
    );
    await waitFor(() => (jsonLines(join(dir, 'work.jsonl')).length === 1 ? true : undefined), 'the work event');
    const status = spawnVigil(['status', '-c', config]);
    assert.equal(await status.exited, 0, status.stderr());
    const out = status.stdout();
    assert.doesNotMatch(out, /[\u0000-\u0008\u000b-\u001f\u007f\u202e]/, 'no control character reaches the terminal');
    assert.equal(out.split('\n').filter((l) => l.startsWith('dead letters:')).length, 1, 'no forged line');
    assert.ok(out.includes('session=x\\x1b[2J\\x1b[H\\ndead letters: 0 FORGED\\u202e'), out);
    await stop(v);
  });
});

describe('one writer per SQLite state file', () => {
  test('a second vigil on the same file is refused, naming the first; the first keeps working; status still reads', async () => {
    const dir = tempDir();
    const state = join(dir, 'state.db');
    const mk = async () => {
      const otlp = await freePort();
      return {
        otlp,
        file: writeConfig(
          tempDir(),
          `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlp} } } }
exporters:
  file: { path: ${join(dir, `work-${otlp}.jsonl`)} }
state:
  sqlite: { path: ${state} }
service:
  pipelines:
    logs: { receivers: [otlp], exporters: [file] }
`,
        ),
      };
    };
    const a = await mk();
    const b = await mk();
    const first = start(a.file);
    const url = `http://127.0.0.1:${a.otlp}/v1/logs`;
    await waitFor(async () => ((await postLogs(url, '{}').catch(() => undefined))?.status === 200 ? true : undefined), 'the first vigil');
    const second = start(b.file);
    assert.equal(await second.exited, 1);
    assert.match(
      second.stderr(),
      new RegExp(
        `state file '${state.replace(/[.]/g, '\\.')}' is in use by vigil pid ${first.child.pid} on host '[^']+' \\(running since [0-9T:.Z-]+\\): one vigil per state file`,
      ),
    );
    assert.match(second.stderr(), /VIGIL_STORE_LOCKED/);
    assert.equal((await postLogs(url, otlpLogs([{ time: Date.UTC(2026, 0, 1), body: 'ValueError: x', session: 's' }]))).status, 200, 'the first is unaffected');
    const status = spawnVigil(['status', '-c', b.file]);
    assert.equal(await status.exited, 0, status.stderr());
    await stop(first);
    // Once the first is gone (a SIGKILL would release the lock just the same), the file is free.
    const third = start(b.file);
    await waitFor(
      async () => ((await postLogs(`http://127.0.0.1:${b.otlp}/v1/logs`, '{}').catch(() => undefined))?.status === 200 ? true : undefined),
      'a new writer',
    );
    await stop(third);
  });
});

describe('readiness while the state disk is full (tmpfs)', { skip: CAN_MOUNT ? false : NO_MOUNT_REASON }, () => {
  test('/healthz 503 with the reason while appends fail; 200 once space is back; resent records end as an undisturbed run', async () => {
    const disk = mountTmpfs(8 * 1024 * 1024);
    mounts.push(disk);
    const dir = tempDir();
    const [otlp, health, refOtlp] = [await freePort(), await freePort(), await freePort()];
    const yaml = (port: number, work: string, state: string, extra = '') => `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${port} } } }
processors:
  classify: {}
  recurrence: { min_recurrence: 2, max_per_turn: 100000 }
exporters:
  file: { path: ${work} }
${extra}
state:
${state}
service:
  ${extra ? 'extensions: [health_check]' : ''}
  pipelines:
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: [file] }
`;
    const config = writeConfig(
      dir,
      yaml(otlp, join(dir, 'work.jsonl'), `  sqlite: { path: ${join(disk.dir, 'state.db')} }`, `extensions:\n  health_check: { endpoint: 127.0.0.1:${health} }`),
    );
    const v = start(config);
    const url = `http://127.0.0.1:${otlp}/v1/logs`;
    const healthz = async () => {
      const r = await fetch(`http://127.0.0.1:${health}/healthz`);
      return { status: r.status, body: (await r.json()) as { status: string; reasons?: string[] } };
    };
    await waitFor(async () => ((await healthz().catch(() => undefined))?.status === 200 ? true : undefined), 'ready');

    const bodies = workload(300, { tag: 'disk', batches: 6, pad: 2000 });
    assert.equal((await postLogs(url, bodies[0]!)).status, 200);
    disk.fill(4096);
    // A client resends what was refused, as OTLP clients do.
    const refused: string[] = [];
    for (const body of bodies.slice(1)) {
      const r = await postLogs(url, body);
      if (r.status !== 200) {
        assert.equal(r.status, 503, 'refused retryably');
        assert.equal(r.headers.get('retry-after'), '1');
        refused.push(body);
      }
    }
    assert.ok(refused.length > 0, 'the full disk refused appends');
    const notReady = await healthz();
    assert.equal(notReady.status, 503);
    assert.ok(
      notReady.body.reasons!.some((r) => /refuses writes since .*(full|space)/i.test(r)),
      JSON.stringify(notReady.body),
    );
    assert.match(v.stderr(), /the state store refuses appends/);

    disk.free();
    await waitFor(async () => ((await healthz()).status === 200 ? true : undefined), 'ready again without any client write', 10_000);
    for (const body of refused) assert.equal((await postLogs(url, body)).status, 200);

    // The undisturbed run: the same requests to a vigil on a normal disk.
    const refDir = tempDir();
    const ref = start(writeConfig(refDir, yaml(refOtlp, join(refDir, 'work.jsonl'), `  sqlite: { path: ${join(refDir, 'state.db')} }`)));
    const refUrl = `http://127.0.0.1:${refOtlp}/v1/logs`;
    await waitFor(async () => ((await postLogs(refUrl, '{}').catch(() => undefined))?.status === 200 ? true : undefined), 'the reference vigil');
    for (const body of bodies) assert.equal((await postLogs(refUrl, body)).status, 200);
    const sorted = (file: string) => readFileSync(file, 'utf8').trim().split('\n').sort();
    const counts = () => [jsonLines(join(refDir, 'work.jsonl')).length, jsonLines(join(dir, 'work.jsonl')).length];
    await waitFor(() => (counts().every((n) => n >= 300) ? true : undefined), 'both runs to finish', 60_000).catch((err: Error) => {
      const files = readdirSync(disk.dir)
        .map((f) => `${f} ${statSync(join(disk.dir, f)).size}`)
        .join(', ');
      throw new Error(
        `${err.message}: work events (reference, disk-full run) ${counts().join(', ')}; on the 8 MiB disk: ${files}, ${disk.freeBytes()} bytes free\n${v.stderr().slice(-3000)}`,
      );
    });
    assert.deepEqual(sorted(join(dir, 'work.jsonl')), sorted(join(refDir, 'work.jsonl')), 'the same work events, byte for byte');
    // A checkpoint the full disk failed is tried again by the worker; it never falls back to the
    // writer's own checkpoints, whose 4 MB log once held the space the database needed to grow.
    assert.doesNotMatch(v.stderr(), /checkpoint worker failed/);
    await stop(ref);
    await stop(v);
  });
});

describe('readiness while Redis is out of memory', () => {
  test('maxmemory reached: appends refused retryably, /healthz 503 with the reason; memory back: ready, and every work event once', async (t) => {
    const redis = await RedisServer.start();
    t.after(() => redis.stop());
    const admin = new Redis(redis.url);
    t.after(() => admin.disconnect());
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    const dir = tempDir();
    const [otlp, health] = [await freePort(), await freePort()];
    const work = join(dir, 'work.jsonl');
    const config = writeConfig(
      dir,
      `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlp} } } }
processors:
  classify: {}
  recurrence: { min_recurrence: 2, max_per_turn: 100000 }
exporters:
  file: { path: ${work} }
extensions:
  health_check: { endpoint: 127.0.0.1:${health} }
state:
  redis: { url: "${redis.url}/0", key_prefix: "oom:" }
service:
  extensions: [health_check]
  pipelines:
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: [file] }
`,
    );
    const v = start(config);
    const url = `http://127.0.0.1:${otlp}/v1/logs`;
    const healthz = async () => {
      const r = await fetch(`http://127.0.0.1:${health}/healthz`);
      return { status: r.status, body: (await r.json()) as { reasons?: string[] } };
    };
    await waitFor(async () => ((await healthz().catch(() => undefined))?.status === 200 ? true : undefined), 'ready');
    const bodies = workload(200, { tag: 'oom', batches: 10, pad: 4000 });
    assert.equal((await postLogs(url, bodies[0]!)).status, 200);
    const used = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
    await admin.config('SET', 'maxmemory', String(used + 64 * 1024));
    const refused: string[] = [];
    for (const body of bodies.slice(1)) {
      const r = await postLogs(url, body);
      if (r.status !== 200) {
        assert.equal(r.status, 503);
        refused.push(body);
      }
    }
    assert.ok(refused.length > 0, 'maxmemory refused appends');
    const notReady = await healthz();
    assert.equal(notReady.status, 503);
    assert.ok(
      notReady.body.reasons!.some((r) => /refuses writes since .*OOM/i.test(r)),
      JSON.stringify(notReady.body),
    );

    await admin.config('SET', 'maxmemory', '0');
    await waitFor(async () => ((await healthz()).status === 200 ? true : undefined), 'ready again', 10_000);
    for (const body of refused) assert.equal((await postLogs(url, body)).status, 200);
    await waitFor(() => (jsonLines(work).length >= 200 ? true : undefined), 'every work event', 30_000);
    const ids = jsonLines<{ id: string; type: string }>(work);
    assert.equal(ids.length, 200);
    assert.equal(new Set(ids.map((e) => e.id)).size, 200, 'each once');
    assert.ok(
      ids.every((e) => e.type === 'dev.vigil.work.created'),
      'only work.created events',
    );
    await stop(v);
  });
});
