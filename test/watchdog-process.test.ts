/**
 * The watchdog with real processes, on SQLite and on a private durable Redis (`appendonly yes`,
 * SIGKILLed with vigil): real `vigil run` children fed over OTLP/HTTP and from a JSONL history file,
 * killed with SIGKILL while retries are pending and restarted.
 *
 * - a pending retry fires exactly once after the restart, at its due time (the remaining delay);
 * - a checkpoint vigil cannot read defers the retry with a clear error: a runtime's of version 2
 *   (sent as a span event) and vigil's own rewritten in the store with 65 attempt counters while
 *   vigil was down;
 * - 140 unrelated later records (other sessions, and records of the same session that are no
 *   activity) do not evict a checkpoint: its retry still fires;
 * - a finished turn clears a checkpoint: no retry;
 * - history: failures older than the first start are never reported; one written while vigil was
 *   down is reported once after the restart; nothing is reported twice across restarts.
 */
import assert from 'node:assert/strict';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { components } from '../src/components.ts';
import { loadConfigText } from '../src/config/load.ts';
import { memoryLogger } from '../src/logger.ts';
import type { ProviderEventData } from '../src/model/work.ts';
import { RedisServer, uniquePrefix } from './helpers/redis-server.ts';
import { freePort, healthy, spawnVigil, tempDir, untilReady, type VigilChild, waitFor, writeConfig } from './helpers/vigil-process.ts';
import { writtenJsonLines } from './helpers/work-file.ts';

const RETRY_AFTER_MS = 6_000;

type Provided = ProviderEventData & { type: string; time: string };

const str = (key: string, stringValue: string) => ({ key, value: { stringValue } });
const hex = (n: number, len: number) => n.toString(16).padStart(len, '0');

interface SpanSpec {
  trace: number;
  span: number;
  name: string;
  endMs: number;
  attrs?: Array<{ key: string; value: { stringValue: string } }>;
  error?: string;
  events?: Array<{ name: string; timeMs: number; attrs: Array<{ key: string; value: { stringValue: string } }> }>;
}

/** An OTLP/JSON traces request of one session (`session.id` on the resource, as a one-session agent process sets it). */
function traces(session: string, spans: SpanSpec[]): string {
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [str('service.name', 'agent'), str('session.id', session)] },
        scopeSpans: [
          {
            spans: spans.map((s) => ({
              traceId: hex(s.trace, 32),
              spanId: hex(s.span, 16),
              name: s.name,
              startTimeUnixNano: `${s.endMs - 200}000000`,
              endTimeUnixNano: `${s.endMs}000000`,
              attributes: s.attrs ?? [],
              events: (s.events ?? []).map((e) => ({ name: e.name, timeUnixNano: `${e.timeMs}000000`, attributes: e.attrs })),
              status: s.error ? { code: 2, message: s.error } : {},
            })),
          },
        ],
      },
    ],
  });
}

const SERVER_ERROR = '500 The server had an error while processing your request. Sorry about that!';
const chatFailure = (trace: number, endMs: number): SpanSpec => ({
  trace,
  span: trace * 10 + 1,
  name: 'chat gpt-4o',
  endMs,
  attrs: [str('gen_ai.operation.name', 'chat'), str('gen_ai.system', 'openai'), str('error.type', 'InternalServerError')],
  error: SERVER_ERROR,
});

/** A model-request failure as a reference event, the way a runtime writes its history (JSONL). */
function historyLine(id: string, session: string, time: number, error: string): string {
  const model_request = { provider: 'anthropic', model: 'claude-sonnet-4', error_type: 'authentication_error', http_status: 401, error };
  return (
    JSON.stringify({
      kind: 'execution.completed',
      payload: { state: 'error', outcome: { error, output: [] }, model_request },
      partition: session,
      time,
      event_id: id,
      turn_id: `run-${id}`,
      service: 'runtime',
    }) + '\n'
  );
}

async function scenario(store: 'sqlite' | 'redis', log: (m: string) => void): Promise<void> {
  const dir = tempDir('vigil-watchdog-');
  const [otlp, health] = [await freePort(), await freePort()];
  const work = join(dir, 'work.jsonl');
  const history = join(dir, 'history.jsonl');
  const redis = store === 'redis' ? await RedisServer.start({ durable: true }) : undefined;
  const state = redis ? `redis: { url: ${redis.url}, key_prefix: "${uniquePrefix('watchdog')}" }` : `sqlite: { path: ${join(dir, 'state.db')} }`;
  const yaml = `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlp} } } }
  jsonl: { include: [${history}], poll_interval: 200ms }
processors:
  classify: {}
  watchdog: { retry_after: ${RETRY_AFTER_MS}ms }
  recurrence: {}
exporters:
  file/work: { path: ${work} }
extensions:
  health_check: { endpoint: 127.0.0.1:${health} }
state:
  ${state}
service:
  extensions: [health_check]
  processing: { page_size: 16 }
  pipelines:
    traces: { receivers: [otlp], processors: [classify, watchdog, recurrence], exporters: [file/work] }
    logs: { receivers: [otlp, jsonl], processors: [classify, watchdog, recurrence], exporters: [file/work] }
`;
  const cfg = writeConfig(dir, yaml);
  // History from before vigil ever ran: an old login failure.
  const startedAt = Date.now();
  writeFileSync(history, historyLine('h-old', 'sess-hist', startedAt - 3600_000, 'Invalid API key · Please run /login'));

  const start = async (): Promise<VigilChild> => {
    const v = spawnVigil(['run', '-c', cfg]);
    await untilReady(v, healthy(`http://127.0.0.1:${health}`), `vigil (${store}) to be ready`, 30_000);
    return v;
  };
  const post = async (body: string) => {
    const res = await fetch(`http://127.0.0.1:${otlp}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    assert.equal(res.status, 200, await res.text());
  };
  const pending = async () => {
    const body = (await (await fetch(`http://127.0.0.1:${health}/status`)).json()) as { store: { pipelines: Array<{ timers: { pending: number } }> } };
    return body.store.pipelines.reduce((n, p) => n + p.timers.pending, 0);
  };
  // Delivery is at least once with stable ids: a SIGKILL between writing an event and moving the
  // exporter's cursor delivers it again after the restart, with the same id. Counted by id.
  const provided = (): Provided[] => [
    ...new Map(
      writtenJsonLines<{ id: string; type: string; time: string; data: ProviderEventData }>(work)
        .filter((e) => e.type.startsWith('dev.vigil.provider.'))
        .map((e) => [e.id, { ...e.data, type: e.type, time: e.time }] as const),
    ).values(),
  ];
  const ids = () =>
    provided()
      .map((e) => e.request_id)
      .sort();
  const kill = async (v: VigilChild) => {
    v.child.kill('SIGKILL');
    await v.exited;
    if (redis) {
      await redis.kill();
      await redis.start();
    }
  };

  let vigil = await start();
  const stderr: string[] = [];
  try {
    const t = Date.now();
    // A: a temporary failure; its retry must survive the crash and fire once at t + 6 s.
    await post(traces('sess-A', [chatFailure(1, t)]));
    // B: a temporary failure, and the runtime's own retry checkpoint of version 2 (a span event of its turn).
    const v2 = JSON.stringify({ version: 2, resume_at_ms: t + 1000, attempts: {} });
    await post(
      traces('sess-B', [
        chatFailure(2, t),
        {
          trace: 2,
          span: 22,
          name: 'invoke_agent coder',
          endMs: t + 50,
          attrs: [str('gen_ai.operation.name', 'invoke_agent')],
          events: [{ name: 'provider.retry.checkpoint', timeMs: t + 10, attrs: [str('detail', v2)] }],
        },
      ]),
    );
    // C: a temporary failure, then another turn of the conversation finished: the checkpoint is cleared.
    await post(traces('sess-C', [chatFailure(3, t)]));
    await post(traces('sess-C', [{ trace: 33, span: 331, name: 'invoke_agent coder', endMs: t + 500, attrs: [str('gen_ai.operation.name', 'invoke_agent')] }]));
    // D: a login failure: reported at once.
    await post(
      traces('sess-D', [
        {
          ...chatFailure(4, t),
          error: '401 Incorrect API key provided: sk-proj-****abcd.',
          attrs: [str('gen_ai.operation.name', 'chat'), str('gen_ai.system', 'openai'), str('error.type', 'AuthenticationError')],
        },
      ]),
    );
    // F: a temporary failure whose checkpoint is rewritten with 65 attempt counters while vigil is down.
    await post(traces('sess-F', [chatFailure(6, t)]));
    // 140 unrelated later records: other sessions' turns and failures, and sess-A's own records that are no activity.
    for (let i = 0; i < 10; i++) {
      const spans: SpanSpec[] = [];
      for (let k = 0; k < 14; k++) {
        const n = 1000 + i * 14 + k;
        spans.push(
          k % 2
            ? { trace: n, span: n * 10, name: 'invoke_agent other', endMs: t + 100 + n, attrs: [str('gen_ai.operation.name', 'invoke_agent')] }
            : { trace: n, span: n * 10, name: 'run_job', endMs: t + 100 + n, error: 'KeyError: x' },
        );
      }
      await post(traces(`sess-other-${i}`, spans));
    }
    const logs = Array.from({ length: 14 }, (_, i) => ({
      timeUnixNano: `${t + 200 + i}000000`,
      severityNumber: 13,
      body: { stringValue: `DeprecationWarning: pkg ${i} is deprecated` },
      attributes: [str('session.id', 'sess-A')],
    }));
    const res = await fetch(`http://127.0.0.1:${otlp}/v1/logs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ resourceLogs: [{ resource: { attributes: [str('service.name', 'agent')] }, scopeLogs: [{ logRecords: logs }] }] }),
    });
    assert.equal(res.status, 200);

    // Pending: A, B, F (C cleared). D reported; the old history not.
    await waitFor(async () => ((await pending()) === 3 && ids().length === 1 ? true : undefined), `three retries pending and one report\n${vigil.stderr()}`, 20_000);
    assert.deepEqual(ids(), ['watchdog-report:00000000000000000000000000000004']);
    stderr.push(vigil.stderr());
    await kill(vigil);
    log(`${store}: killed at +${Date.now() - t} ms with 3 retries pending`);

    // While vigil is down: F's checkpoint gets 65 attempt counters (as a newer vigil might write), and a
    // runtime writes a new login failure to its history.
    const config = loadConfigText(yaml, cfg, components());
    const direct = components().stores.get(config.state.type)!.create({ id: 'state', logger: memoryLogger() }, config.state.config);
    await direct.open();
    const f = (await direct.loadState('watchdog/checkpoints', ['sess-F'])).get('sess-F');
    assert.ok(f, 'F has a checkpoint');
    const attempts = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`run-${i}`, 1]));
    await direct.commit({
      pipeline: 'traces',
      partition: 'sess-F',
      cursor: null,
      groups: [],
      turns: [],
      revisions: [],
      outbox: [],
      failures: [],
      state: [{ namespace: 'watchdog/checkpoints', key: 'sess-F', value: { ...(f.value as object), attempts } }],
    });
    await direct.close();
    const downAt = Date.now();
    appendFileSync(
      history,
      historyLine(
        'h-down',
        'sess-hist2',
        downAt,
        'OAuth token refresh failed for anthropic: Failed to refresh OAuth token for anthropic. Please try again or re-authenticate.',
      ),
    );

    await new Promise((r) => setTimeout(r, Math.max(0, t + 3000 - Date.now())));
    const spawnedAt = Date.now();
    vigil = await start();
    const restartedAt = Date.now();
    const [retryA] = await waitFor(
      () => {
        const r = provided().filter((e) => e.request_id === 'watchdog-retry:00000000000000000000000000000001');
        return r.length ? r : undefined;
      },
      `A's retry after the restart\n${vigil.stderr()}`,
      20_000,
    );
    const firedAt = Date.now();
    log(`${store}: restarted at +${restartedAt - t} ms; A due at +${RETRY_AFTER_MS} ms, seen at +${firedAt - t} ms`);
    assert.equal(retryA!.time, new Date(t + RETRY_AFTER_MS).toISOString(), 'due 6 s after the failure');
    // A restart that armed a fresh delay fires no earlier than RETRY_AFTER_MS after the spawn (it
    // cannot arm before it exists); one that kept the remaining delay fires at the due time (3 s
    // after the spawn) or as soon as it is up. Measured from the spawn, not from the due time, so a
    // slow start on a loaded machine does not count as lateness.
    assert.ok(
      firedAt - spawnedAt < RETRY_AFTER_MS,
      `seen ${firedAt - spawnedAt} ms after the restart's spawn (${firedAt - (t + RETRY_AFTER_MS)} ms after its due time): a fresh delay was armed instead of the remaining one`,
    );
    await waitFor(() => (ids().includes('watchdog-report:run-h-down') ? true : undefined), 'the failure written while vigil was down to be reported', 15_000);
    // B and F stay deferred, with their clear errors; nothing else comes.
    await waitFor(
      () =>
        /version is 2; this vigil reads version 1 only/.test(vigil.stderr()) && /65 attempt counters, over the bound of 64/.test(vigil.stderr()) ? true : undefined,
      'the clear errors',
      15_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${vigil.stderr()}`);
    });
    assert.match(vigil.stderr(), /VIGIL_CHECKPOINT_INVALID/);
    assert.match(vigil.stderr(), /sess-F.*retry is deferred to/);
    assert.equal(await pending(), 2, 'B and F deferred: still pending, not dropped');
    assert.deepEqual(ids(), ['watchdog-report:00000000000000000000000000000004', 'watchdog-report:run-h-down', 'watchdog-retry:00000000000000000000000000000001']);

    // Killed and restarted again: nothing fires or is reported twice.
    stderr.push(vigil.stderr());
    await kill(vigil);
    vigil = await start();
    await new Promise((r) => setTimeout(r, 2000));
    assert.deepEqual(ids(), ['watchdog-report:00000000000000000000000000000004', 'watchdog-report:run-h-down', 'watchdog-retry:00000000000000000000000000000001']);
    const status = (await (await fetch(`http://127.0.0.1:${health}/v1/failures?since=${startedAt}`)).json()) as {
      failures: Array<{ request_id: string; line: string }>;
    };
    assert.deepEqual(
      status.failures.map((x) => x.request_id),
      ['watchdog-report:run-h-down', 'watchdog-report:00000000000000000000000000000004'],
      'newest first by failure time; the history is not there',
    );
    assert.match(
      status.failures[0]!.line,
      /^\[run failed\] #sess-hist2 "Untitled": 401 OAuth token refresh failed for anthropic: .* Last step: model request\. The Anthropic login expired/,
    );
    // `vigil status` reads the same from the store (read-only, beside the running vigil).
    const cli = spawnVigil(['status', '-c', cfg]);
    assert.equal(await cli.exited, 0, cli.stderr());
    const out = cli.stdout();
    assert.match(out, /watchdog: reported failures \(2, newest first by failure time\); runs judged: .*history 1/);
    assert.ok(out.indexOf('#sess-hist2') < out.indexOf('#sess-D'), out);
    assert.match(out, /invalid_credentials \[run failed\] #sess-D "Untitled": 401 Incorrect API key provided/);
  } finally {
    vigil.child.kill('SIGTERM');
    await vigil.exited;
    await redis?.stop();
  }
}

test('the watchdog across SIGKILL: retries, deferrals, evictions, history', { timeout: 180_000 }, async (t) => {
  await Promise.all([
    t.test('sqlite', () => scenario('sqlite', (m) => t.diagnostic(m))),
    t.test('redis (durable, SIGKILLed too)', () => scenario('redis', (m) => t.diagnostic(m))),
  ]);
});
