/**
 * The watchdog's history mark dates from vigil's very first start, even when that first run is
 * killed before the watchdog processed anything. A real `vigil run` on a fresh store acknowledges
 * the failed model request of a real agent (the `openai` client answered 401 by the fake OpenAI
 * server, instrumented and exported by the OpenTelemetry NodeSDK), which waits in the correlation
 * log (`failure_wait`), and is SIGKILLed before it is released; the next start must report the
 * failure. When the mark was written at the watchdog's first page instead, the second start's later
 * time made it history: never reported. On SQLite and on a private durable Redis (`appendonly yes`).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import type { ProviderEventData } from '../src/model/work.ts';
import { runAgent } from './helpers/agents.ts';
import { startFakeOpenAI } from './helpers/fake-openai.ts';
import { RedisServer, uniquePrefix } from './helpers/redis-server.ts';
import { freePort, healthy, spawnVigil, tempDir, untilReady, waitFor, writeConfig } from './helpers/vigil-process.ts';
import { writtenJsonLines } from './helpers/work-file.ts';

async function firstRunKilled(store: 'sqlite' | 'redis'): Promise<void> {
  const dir = tempDir('vigil-watchdog-first-');
  const [otlp, health] = [await freePort(), await freePort()];
  const work = join(dir, 'work.jsonl');
  const redis = store === 'redis' ? await RedisServer.start({ durable: true }) : undefined;
  const openai = await startFakeOpenAI();
  const state = redis ? `redis: { url: ${redis.url}, key_prefix: "${uniquePrefix('first-start')}" }` : `sqlite: { path: ${join(dir, 'state.db')} }`;
  // failure_wait: in the first run the failure stays in the correlation log, unseen by the
  // watchdog, until the kill; the second releases it at once.
  const config = (failureWait: string) =>
    writeConfig(
      dir,
      `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlp} } } }
processors:
  classify: {}
  watchdog: {}
  recurrence: {}
exporters:
  file/work: { path: ${work} }
extensions:
  health_check: { endpoint: 127.0.0.1:${health} }
state:
  ${state}
service:
  extensions: [health_check]
  correlation: { failure_wait: ${failureWait} }
  pipelines:
    traces: { receivers: [otlp], processors: [classify, watchdog, recurrence], exporters: [file/work] }
    logs: { receivers: [otlp], processors: [classify, watchdog, recurrence], exporters: [file/work] }
`,
    );
  const start = async (failureWait: string) => {
    const v = spawnVigil(['run', '-c', config(failureWait)]);
    await untilReady(v, healthy(`http://127.0.0.1:${health}`), `vigil (${store}) to be ready`, 30_000);
    return v;
  };
  try {
    const first = await start('60s');
    const run = await runAgent(
      'openai',
      { openai: openai.baseURL, sessionOn: 'all', sessions: [{ id: 'sess-first', title: 'Write the release notes', turns: [[{ chat: 'auth' }]] }] },
      { endpoint: `http://127.0.0.1:${otlp}`, protocol: 'http/protobuf', resourceAttributes: { 'session.id': 'sess-first' } },
    );
    assert.equal(run.code, 0, run.stderr);
    first.child.kill('SIGKILL');
    await first.exited;
    if (redis) {
      await redis.kill();
      await redis.start();
    }
    assert.equal(writtenJsonLines(work).length, 0, 'nothing was processed before the kill');

    const second = await start('1s');
    try {
      const reports = await waitFor(
        () => {
          const found = writtenJsonLines<{ type: string; data: ProviderEventData }>(work).filter((e) => e.type === 'dev.vigil.provider.report');
          return found.length ? found : undefined;
        },
        `the first run's failure reported after the restart\n${second.stderr()}`,
        20_000,
      );
      assert.equal(reports.length, 1);
      assert.equal(reports[0]!.data.partition, 'sess-first');
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  } finally {
    await openai.close();
    await redis?.stop();
  }
}

test('a first run killed before its watchdog processed anything: the next start reports the failure it acknowledged', { timeout: 90_000 }, async (t) => {
  await Promise.all([t.test('sqlite', () => firstRunKilled('sqlite')), t.test('redis (durable, SIGKILLed too)', () => firstRunKilled('redis'))]);
});
