/**
 * End to end with real agents (issue #11's "done when"): the openai agent — the OpenTelemetry JS
 * NodeSDK, @opentelemetry/instrumentation-openai around the real `openai` client against the
 * fake OpenAI server (429, 401, 500, 400 context length), the SDK's log records for each caught
 * failure — and the Vercel AI SDK 5 agent, both exporting to a real `vigil run` child whose
 * traces and logs arrive at two receivers feeding two pipelines. Every failure gives exactly one
 * work item, and every work item names the session of its trace.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runAgent, type AgentPlan, type AgentRun } from './helpers/agents.ts';
import { startFakeOpenAI, type FakeOpenAI } from './helpers/fake-openai.ts';
import { freePort, healthy, spawnVigil, tempDir, untilReady, type VigilChild, waitFor, writeConfig } from './helpers/vigil-process.ts';
import { writtenJsonLines } from './helpers/work-file.ts';

type WorkEvent = { id: string; type: string; data: Record<string, any> };

interface Vigil {
  child: VigilChild;
  traces: string;
  logs: string;
  health: string;
  work: string;
}

async function startVigil(): Promise<Vigil> {
  const dir = tempDir('vigil-agents-');
  const [tracesPort, logsPort, healthPort] = [await freePort(), await freePort(), await freePort()];
  const work = join(dir, 'work.jsonl');
  const config = writeConfig(
    dir,
    `receivers:
  otlp/traces: { protocols: { http: { endpoint: 127.0.0.1:${tracesPort} } } }
  otlp/logs: { protocols: { http: { endpoint: 127.0.0.1:${logsPort} } } }
processors:
  classify: {}
  recurrence: { min_recurrence: 1 }
exporters:
  file: { path: ${work} }
extensions:
  health_check: { endpoint: 127.0.0.1:${healthPort} }
state:
  sqlite: { path: ${join(dir, 'state.db')} }
service:
  extensions: [health_check]
  correlation: { session_wait: 3s, failure_wait: 1s }
  pipelines:
    traces: { receivers: [otlp/traces], processors: [classify, recurrence], exporters: [file] }
    logs: { receivers: [otlp/logs], processors: [classify, recurrence], exporters: [file] }
`,
  );
  const child = spawnVigil(['run', '-c', config]);
  const health = `http://127.0.0.1:${healthPort}`;
  await untilReady(child, healthy(health));
  return { child, traces: `http://127.0.0.1:${tracesPort}/v1/traces`, logs: `http://127.0.0.1:${logsPort}/v1/logs`, health, work };
}

function readWork(file: string): WorkEvent[] {
  return writtenJsonLines<WorkEvent>(file);
}

/** Waits for `n` work items, then until nothing waits or is undelivered, then a little more: nothing else may come. */
async function settled(v: Vigil, n: number): Promise<WorkEvent[]> {
  await waitFor(
    () => (readWork(v.work).filter((e) => e.type === 'dev.vigil.work.created').length >= n ? true : undefined),
    `${n} work items\n${v.child.stderr().slice(-2000)}`,
    30_000,
  );
  await waitFor(async () => {
    const st = (await (await fetch(`${v.health}/status`)).json()) as {
      store: { pipelines: Array<{ partitions: Array<{ pending: number }>; outbox: { exporters: Array<{ lag: number }> } }> };
    };
    return st.store.pipelines.every((p) => p.partitions.every((x) => x.pending === 0) && p.outbox.exporters.every((e) => e.lag === 0)) ? true : undefined;
  }, 'an idle vigil');
  await new Promise((r) => setTimeout(r, 1500));
  return readWork(v.work);
}

/** Every failed step of every turn, with its trace and session. */
function failuresOf(run: AgentRun) {
  return run.turns.flatMap((t) => (t.steps ?? []).filter((s) => s.error).map((s) => ({ ...s, traceId: t.traceId, session: t.session })));
}

const CHAT_STATUS: Record<string, string> = { rate_limit: '429', auth: '401', server_error: '500', context_length: '400' };

describe('real agents against vigil: one work item per failure, in the session of its trace', () => {
  let openai: FakeOpenAI;
  const children: VigilChild[] = [];
  before(async () => {
    openai = await startFakeOpenAI();
  });
  after(async () => {
    for (const c of children) c.child.kill('SIGKILL');
    await openai.close();
  });

  for (const [protocol, logStyle] of [
    ['http/json', 'stack'],
    ['http/protobuf', 'exception'],
  ] as const) {
    test(`the openai agent over ${protocol} (logs with ${logStyle === 'stack' ? 'the error stack as body' : 'exception.* attributes'}), traces and logs to separate receivers and pipelines`, async () => {
      const v = await startVigil();
      children.push(v.child);
      const plan: AgentPlan = {
        openai: openai.baseURL,
        logStyle,
        sessions: [
          { id: 'sess-tools', conversation: 'conv-1', turns: [[{ tool: 'run_python', error: "KeyError: 'results'" }, { chat: 'rate_limit' }, { chat: 'ok' }]] },
          { id: 'sess-auth', turns: [[{ chat: 'auth' }], [{ chat: 'server_error' }]] },
          {
            id: 'sess-long',
            turns: [[{ chat: 'context_length' }, { tool: 'read_file', error: "FileNotFoundError: [Errno 2] No such file or directory: 'data.csv'" }]],
          },
        ],
      };
      const run = await runAgent('openai', plan, { tracesEndpoint: v.traces, logsEndpoint: v.logs, protocol });
      assert.equal(
        run.code,
        0,
        `${run.stderr}\nvigil (exit ${v.child.child.exitCode ?? v.child.child.signalCode ?? 'still running'}):\n${v.child.stderr().slice(-4000)}`,
      );
      const failures = failuresOf(run);
      assert.equal(failures.length, 6);
      const events = await settled(v, failures.length);
      const items = events.filter((e) => e.type === 'dev.vigil.work.created');
      assert.equal(items.length, failures.length, `one work item per failure: ${JSON.stringify(items.map((e) => [e.data.operation, e.data.signature]))}`);
      assert.equal(events.length, items.length, 'no failure counted twice');
      for (const f of failures) {
        const mine = items.filter(
          (e) =>
            e.data.trace_id === f.traceId &&
            (f.kind === 'tool' ? e.data.operation === `execute_tool ${f.name}` : e.data.signature.includes(`${CHAT_STATUS[f.name]} `)),
        );
        assert.equal(
          mine.length,
          1,
          `${f.kind} ${f.name} in ${f.session}: ${JSON.stringify(items.map((e) => [e.data.trace_id, e.data.operation, e.data.signature]))}`,
        );
        const e = mine[0]!;
        assert.equal(e.data.partition, f.session, `${f.name}: the session of its trace`);
        assert.equal(e.data.evidence.source, 'otlp.traces', 'named by its span');
        assert.deepEqual(
          e.data.evidence.related?.map((r: { source: string }) => r.source),
          ['otlp.logs'],
          `${f.name}: the agent's log record is attached as evidence`,
        );
      }
    });
  }

  test('the AI SDK 5 agent: one work item per failure, each in its session, tool failures named by the tool', async () => {
    const v = await startVigil();
    children.push(v.child);
    const plan: AgentPlan = {
      rootErrors: true,
      sessions: [
        { id: 'sess-ai-1', turns: [[{ tool: 'read_json', error: "SyntaxError: Unexpected token '}' in JSON at position 17" }], [{ chat: 'rate_limit' }]] },
        { id: 'sess-ai-2', turns: [[{ chat: 'auth' }]] },
      ],
    } as AgentPlan;
    const run = await runAgent('ai-sdk', plan, { tracesEndpoint: v.traces, logsEndpoint: v.logs, protocol: 'http/protobuf' });
    assert.equal(
      run.code,
      0,
      `${run.stderr}\nvigil (exit ${v.child.child.exitCode ?? v.child.child.signalCode ?? 'still running'}):\n${v.child.stderr().slice(-4000)}`,
    );
    assert.equal(run.turns.length, 3);
    const events = await settled(v, 3);
    const items = events.filter((e) => e.type === 'dev.vigil.work.created');
    assert.equal(items.length, 3, JSON.stringify(items.map((e) => [e.data.operation, e.data.signature])));
    assert.equal(events.length, 3);
    const byTrace = new Map(run.turns.map((t) => [t.traceId, t]));
    for (const e of items) {
      const turn = byTrace.get(e.data.trace_id);
      assert.ok(turn, `a work item of a turn: ${e.data.trace_id}`);
      assert.equal(e.data.partition, turn.session);
      assert.equal(e.data.user, 'user-1');
    }
    const ops = items.map((e) => e.data.operation).sort();
    assert.deepEqual(ops, ['ai.generateText.doGenerate', 'ai.generateText.doGenerate', 'read_json']);
    for (const e of items.filter((x) => x.data.operation === 'ai.generateText.doGenerate')) {
      assert.equal(e.data.evidence.related?.length, 2, 'generateText and the agent root failed with it: evidence, not work');
    }
  });
});
