/**
 * End to end: the real `openai` npm client, instrumented by @opentelemetry/instrumentation-openai
 * and exported by the OpenTelemetry JS NodeSDK (test/fixtures/agents/openai-agent.cjs), against the
 * local fake OpenAI server answering 429, 401, 500 and context-length errors, into a real `vigil
 * run` whose watchdog delivers to the file and webhook exporters. Each agent process serves one
 * session (`session.id` as a resource attribute, so the instrumentation's chat spans carry it too).
 *
 * The test plays the agent host: when `dev.vigil.provider.retry` arrives on its webhook for the
 * session that failed twice, it runs that session's next turn, which fails again, and the report
 * follows. Every expected retry and report comes out exactly once on each exporter.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { ProviderEventData } from '../src/model/work.ts';
import { runAgent, type AgentPlan, type AgentRun } from './helpers/agents.ts';
import { startCaptureServer, type CaptureServer } from './helpers/capture-server.ts';
import { startFakeOpenAI, type FakeOpenAI } from './helpers/fake-openai.ts';
import { accepting, freePort, spawnVigil, tempDir, untilReady, type VigilChild, waitFor, writeConfig } from './helpers/vigil-process.ts';
import { writtenJsonLines } from './helpers/work-file.ts';

interface Delivered {
  id: string;
  type: string;
  data: ProviderEventData & { evidence?: { source: string } };
}

let openai: FakeOpenAI;
let hook: CaptureServer;
let vigil: VigilChild;
let otlp: number;
let work: string;

before(async () => {
  openai = await startFakeOpenAI();
  hook = await startCaptureServer();
  const dir = tempDir('vigil-watchdog-e2e-');
  otlp = await freePort();
  work = join(dir, 'work.jsonl');
  const cfg = writeConfig(
    dir,
    `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlp} } } }
processors:
  classify: {}
  watchdog: { retry_after: 2s }
  recurrence: {}
exporters:
  file/work: { path: ${work} }
  webhook: { endpoint: ${hook.url}/hook, retry_on_failure: { initial_interval: 200ms, max_interval: 1s } }
state:
  sqlite: { path: ${join(dir, 'state.db')} }
service:
  pipelines:
    traces: { receivers: [otlp], processors: [classify, watchdog, recurrence], exporters: [file/work, webhook] }
    logs: { receivers: [otlp], processors: [classify, watchdog, recurrence], exporters: [file/work, webhook] }
`,
  );
  vigil = spawnVigil(['run', '-c', cfg]);
  await untilReady(vigil, accepting(`http://127.0.0.1:${otlp}/v1/traces`), 'vigil to listen', 30_000);
});

after(async () => {
  vigil?.child.kill('SIGTERM');
  await vigil?.exited;
  await hook?.close();
  await openai?.close();
});

const fromFile = (): Delivered[] => writtenJsonLines<Delivered>(work);
const fromHook = (): Delivered[] => hook.received.filter((r) => r.path === '/hook').map((r) => JSON.parse(r.body.toString('utf8')) as Delivered);
const provider = (events: Delivered[]) => events.filter((e) => e.type.startsWith('dev.vigil.provider.'));

async function agent(session: string, title: string, turns: AgentPlan['sessions'][number]['turns']): Promise<AgentRun> {
  const run = await runAgent(
    'openai',
    { openai: openai.baseURL, sessionOn: 'all', sessions: [{ id: session, title, turns }] },
    { endpoint: `http://127.0.0.1:${otlp}`, protocol: 'http/protobuf', resourceAttributes: { 'session.id': session } },
  );
  assert.equal(run.code, 0, run.stderr);
  return run;
}

test(
  'the openai client against 429, 401, 500 and context-length errors: retries and reports, once each, on the file and webhook exporters',
  { timeout: 120_000 },
  async () => {
    const [limited, auth, flaky, long, twice] = await Promise.all([
      agent('sess-429', 'Summarize the logs', [[{ chat: 'rate_limit' }]]),
      agent('sess-401', 'Write the release notes', [[{ chat: 'auth' }]]),
      agent('sess-500', 'Fix the failing test', [[{ tool: 'read_file' }, { chat: 'server_error' }]]),
      agent('sess-ctx', 'Review the monorepo', [[{ chat: 'context_length' }]]),
      agent('sess-twice', 'Migrate the database', [[{ tool: 'run_migrations' }, { chat: 'server_error' }]]),
    ]);
    const trace = (r: AgentRun) => r.turns[0]!.traceId;

    // The agent host: the retry for sess-twice arrives on the webhook; its next turn fails again.
    const retryTwice = await waitFor(
      () => provider(fromHook()).find((e) => e.data.request_id === `watchdog-retry:${trace(twice)}`),
      `the retry of sess-twice\n${vigil.stderr()}`,
      30_000,
    );
    assert.equal(retryTwice.data.partition, 'sess-twice');
    assert.match(retryTwice.data.prompt!, /Continue from where you left off/);
    await agent('sess-twice', 'Migrate the database', [[{ chat: 'server_error' }]]);

    const expected = new Map<string, { type: string; category: string; retried: boolean; step: string; title: string }>([
      [
        `watchdog-report:${trace(limited)}`,
        { type: 'dev.vigil.provider.report', category: 'rate_limited', retried: false, step: 'model request', title: 'Summarize the logs' },
      ],
      [
        `watchdog-report:${trace(auth)}`,
        { type: 'dev.vigil.provider.report', category: 'invalid_credentials', retried: false, step: 'model request', title: 'Write the release notes' },
      ],
      [
        `watchdog-retry:${trace(flaky)}`,
        { type: 'dev.vigil.provider.retry', category: 'provider_error', retried: false, step: 'read_file', title: 'Fix the failing test' },
      ],
      [
        `watchdog-report:${trace(long)}`,
        { type: 'dev.vigil.provider.report', category: 'context_too_long', retried: false, step: 'model request', title: 'Review the monorepo' },
      ],
      [
        `watchdog-retry:${trace(twice)}`,
        { type: 'dev.vigil.provider.retry', category: 'provider_error', retried: false, step: 'run_migrations', title: 'Migrate the database' },
      ],
      [
        `watchdog-report:${trace(twice)}`,
        { type: 'dev.vigil.provider.report', category: 'provider_error', retried: true, step: 'run_migrations', title: 'Migrate the database' },
      ],
    ]);
    for (const [name, delivered] of [
      ['file', fromFile],
      ['webhook', fromHook],
    ] as const) {
      await waitFor(
        () => (provider(delivered()).length >= expected.size ? true : undefined),
        `${expected.size} provider events on the ${name} exporter\n${vigil.stderr()}`,
        30_000,
      );
    }
    // A little longer: nothing more comes (no second retry, no second report).
    await new Promise((r) => setTimeout(r, 3000));
    for (const [name, delivered] of [
      ['file', fromFile],
      ['webhook', fromHook],
    ] as const) {
      const events = provider(delivered());
      assert.deepEqual(events.map((e) => e.data.request_id).sort(), [...expected.keys()].sort(), `${name}: each expected event exactly once\n${vigil.stderr()}`);
      for (const e of events) {
        const want = expected.get(e.data.request_id)!;
        assert.deepEqual(
          { type: e.type, category: e.data.category, retried: e.data.retried, step: e.data.step, title: e.data.title },
          want,
          `${name}: ${e.data.request_id}`,
        );
      }
      // The webhook and the file carry the same CloudEvents (the same ids).
      assert.deepEqual(
        events.map((e) => e.id).sort(),
        provider(fromFile())
          .map((e) => e.id)
          .sort(),
      );
      // Handled provider failures open no ordinary work from the spans.
      assert.deepEqual(
        delivered().filter((e) => e.type === 'dev.vigil.work.created' && e.data.evidence?.source === 'otlp.traces'),
        [],
        `${name}: no work from the handled chat spans`,
      );
    }
    const report = provider(fromFile()).find((e) => e.data.request_id === `watchdog-report:${trace(twice)}`)!;
    assert.equal(
      report.data.line,
      '[run failed] #sess-twice "Migrate the database": 500 The server had an error while processing your request. Sorry about that! Last step: run_migrations. After one automatic retry. OpenAI failed on its side (server error): this passes, retrying usually works.',
    );
    const rateLimit = provider(fromFile()).find((e) => e.data.category === 'rate_limited')!;
    assert.match(rateLimit.data.hint, /Rate limited by OpenAI: wait about 2\.4s/);
    assert.equal(rateLimit.data.status_code, 429);
    assert.equal(rateLimit.data.provider, 'openai');
    assert.equal(rateLimit.data.trace_id, trace(limited));
    // The webhook got each event with its id as the idempotency key.
    for (const r of hook.received.filter((x) => x.path === '/hook'))
      assert.equal(r.headers['idempotency-key'], (JSON.parse(r.body.toString('utf8')) as Delivered).id);
  },
);

test('the AI SDK agent: a 429 fails ai.generateText.doGenerate and its ai.generateText parent: one report, no ordinary work', { timeout: 60_000 }, async () => {
  const before = new Set(fromFile().map((e) => e.id));
  const run = await runAgent(
    'ai-sdk',
    { rootErrors: true, sessions: [{ id: 'sess-ai', turns: [[{ tool: 'read_json' }, { chat: 'rate_limit' }]] }] },
    { endpoint: `http://127.0.0.1:${otlp}`, protocol: 'http/json', resourceAttributes: { 'session.id': 'sess-ai' } },
  );
  assert.equal(run.code, 0, run.stderr);
  const traceId = run.turns[0]!.traceId;
  const report = await waitFor(
    () => provider(fromFile()).find((e) => e.data.request_id === `watchdog-report:${traceId}`),
    `the AI SDK report\n${vigil.stderr()}`,
    30_000,
  );
  assert.equal(report.data.category, 'rate_limited');
  assert.equal(report.data.step, 'read_json');
  // The AI SDK records the APICallError's message, not its status code.
  assert.match(report.data.error, /Rate limit reached for gpt-4o-mini/);
  await new Promise((r) => setTimeout(r, 1500));
  const fresh = fromFile().filter((e) => !before.has(e.id));
  assert.deepEqual(
    fresh.map((e) => e.type),
    ['dev.vigil.provider.report'],
    'the failed parent span carries the same provider message: handled too, no ordinary work',
  );
});
