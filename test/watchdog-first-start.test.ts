/**
 * The watchdog's history mark dates from vigil's very first start, even when that first run is
 * killed before the watchdog processed anything. A real `vigil run` on a fresh store acknowledges a
 * failed model request, which waits in the correlation log (`failure_wait`), and is SIGKILLed
 * before it is released; the next start must report the failure. When the mark was written at the
 * watchdog's first page instead, the second start's later time made it history: never reported.
 * On SQLite and on a private durable Redis (`appendonly yes`).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import type { ProviderEventData } from '../src/model/work.ts';
import { RedisServer, uniquePrefix } from './helpers/redis-server.ts';
import { freePort, healthy, spawnVigil, tempDir, untilReady, waitFor, writeConfig } from './helpers/vigil-process.ts';
import { writtenJsonLines } from './helpers/work-file.ts';

const str = (key: string, stringValue: string) => ({ key, value: { stringValue } });

/** One failed chat span of `session` (OTLP/JSON), ended at `endMs`: a login failure, reported at once. */
function loginFailure(session: string, endMs: number): string {
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [str('service.name', 'agent'), str('session.id', session)] },
        scopeSpans: [
          {
            spans: [
              {
                traceId: 'a1'.repeat(16),
                spanId: 'b2'.repeat(8),
                name: 'chat gpt-4o',
                startTimeUnixNano: `${endMs - 200}000000`,
                endTimeUnixNano: `${endMs}000000`,
                attributes: [str('gen_ai.operation.name', 'chat'), str('gen_ai.system', 'openai'), str('error.type', 'AuthenticationError')],
                status: { code: 2, message: '401 Incorrect API key provided: sk-proj-****abcd.' },
              },
            ],
          },
        ],
      },
    ],
  });
}

async function firstRunKilled(store: 'sqlite' | 'redis'): Promise<void> {
  const dir = tempDir('vigil-watchdog-first-');
  const [otlp, health] = [await freePort(), await freePort()];
  const work = join(dir, 'work.jsonl');
  const redis = store === 'redis' ? await RedisServer.start({ durable: true }) : undefined;
  const state = redis ? `redis: { url: ${redis.url}, key_prefix: "${uniquePrefix('first-start')}" }` : `sqlite: { path: ${join(dir, 'state.db')} }`;
  // failure_wait: the failure stays in the correlation log, unseen by the watchdog, until the kill.
  const cfg = writeConfig(
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
  correlation: { failure_wait: 4s }
  pipelines:
    traces: { receivers: [otlp], processors: [classify, watchdog, recurrence], exporters: [file/work] }
`,
  );
  const start = async () => {
    const v = spawnVigil(['run', '-c', cfg]);
    await untilReady(v, healthy(`http://127.0.0.1:${health}`), `vigil (${store}) to be ready`, 30_000);
    return v;
  };
  try {
    const first = await start();
    const res = await fetch(`http://127.0.0.1:${otlp}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: loginFailure('sess-first', Date.now()),
    });
    assert.equal(res.status, 200, await res.text());
    first.child.kill('SIGKILL');
    await first.exited;
    if (redis) {
      await redis.kill();
      await redis.start();
    }
    assert.equal(writtenJsonLines(work).length, 0, 'nothing was processed before the kill');

    const second = await start();
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
    await redis?.stop();
  }
}

test('a first run killed before its watchdog processed anything: the next start reports the failure it acknowledged', { timeout: 90_000 }, async (t) => {
  await Promise.all([t.test('sqlite', () => firstRunKilled('sqlite')), t.test('redis (durable, SIGKILLed too)', () => firstRunKilled('redis'))]);
});
