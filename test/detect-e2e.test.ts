/**
 * End to end: the `detect` processor on traces produced by the real OpenTelemetry JS SDK (the test
 * agents: the `openai` client under @opentelemetry/instrumentation-openai with the agent's own
 * spans, and an AI SDK 5 agent), exported over OTLP/HTTP to a real `vigil run`; and a journal case
 * written by the runtime for the same failure in the same turn, which must give one group and one
 * occurrence, not two.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { compactEvidence } from '../src/processors/classify/error-kind.ts';
import { runAgent } from './helpers/agents.ts';
import { startFakeOpenAI, type FakeOpenAI } from './helpers/fake-openai.ts';
import { referenceCase, startJournalWriter } from './helpers/journal.ts';
import { freePort, healthy, spawnVigil, tempDir, untilReady, type VigilChild, waitFor, writeConfig } from './helpers/vigil-process.ts';
import { writtenJsonLines } from './helpers/work-file.ts';

type Any = any;

interface Vigil {
  child: VigilChild;
  otlp: string;
  health: string;
  journal: string;
  /** Work events delivered so far (deduplicated by id), from both pipelines. */
  events(): Any[];
  stop(): Promise<void>;
}

async function startVigil(): Promise<Vigil> {
  const dir = tempDir('vigil-detect-e2e-');
  const [otlpPort, healthPort] = [await freePort(), await freePort()];
  const journal = join(dir, 'runtime_error_cases.jsonl');
  const files = [join(dir, 'traces-work.jsonl'), join(dir, 'logs-work.jsonl')];
  const config = writeConfig(
    dir,
    `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlpPort} } } }
  journal: { include: [${journal}], service: demo-openai-agent, poll_interval: 50ms }
processors:
  classify: {}
  detect: {}
  recurrence: { min_recurrence: 1, max_per_turn: 100 }
exporters:
  file/traces: { path: ${files[0]} }
  file/logs: { path: ${files[1]} }
extensions:
  health_check: { endpoint: 127.0.0.1:${healthPort} }
state:
  sqlite: { path: ${join(dir, 'state.db')} }
service:
  extensions: [health_check]
  pipelines:
    traces: { receivers: [otlp], processors: [classify, detect, recurrence], exporters: [file/traces] }
    logs: { receivers: [journal], processors: [classify, detect, recurrence], exporters: [file/logs] }
`,
  );
  const child = spawnVigil(['run', '-c', config]);
  const health = `http://127.0.0.1:${healthPort}`;
  await untilReady(child, healthy(health), 'vigil to be ready', 60_000);
  return {
    child,
    otlp: `http://127.0.0.1:${otlpPort}`,
    health,
    journal,
    events: () => {
      const byId = new Map<string, Any>();
      for (const f of files) for (const e of writtenJsonLines<Any>(f)) byId.set(e.id, e);
      return [...byId.values()];
    },
    stop: async () => {
      child.child.kill('SIGTERM');
      assert.equal(await child.exited, 0, child.stderr());
    },
  };
}

/** Waits until vigil has nothing left to process or deliver. */
async function drained(v: Vigil): Promise<Any> {
  return waitFor(
    async () => {
      const body = (await (await fetch(`${v.health}/status`)).json()) as Any;
      const pending = body.store.pipelines.flatMap((p: Any) => p.partitions).reduce((n: number, p: Any) => n + p.pending, 0);
      const lag = body.store.pipelines.flatMap((p: Any) => p.outbox.exporters).reduce((n: number, e: Any) => n + e.lag, 0);
      return pending === 0 && lag === 0 ? body : undefined;
    },
    'vigil to drain',
    30_000,
  );
}

const byKind = (events: Any[], kind: string) => events.filter((e) => e.data.error_kind === kind);

describe('detectors on traces from the real OpenTelemetry JS SDK, over OTLP', () => {
  let openai: FakeOpenAI;
  let vigil: Vigil;
  before(async () => {
    openai = await startFakeOpenAI();
    vigil = await startVigil();
  });
  after(async () => {
    await vigil?.stop();
    await openai?.close();
  });

  test('openai agent: invalid tool arguments (zod), a tool failing three times alike, three failed model requests', async () => {
    const run = await runAgent(
      'openai',
      {
        openai: openai.baseURL,
        sessionOn: 'all',
        logFailures: false,
        sessions: [
          {
            id: 'sess-detect',
            turns: [
              [{ tool: 'read_file', args: { path: 3 } }, { chat: 'ok' }],
              [
                { tool: 'run_python', error: "KeyError: 'results'" },
                { tool: 'run_python', error: "KeyError: 'results'" },
                { tool: 'run_python', error: "KeyError: 'results'" },
              ],
              [{ chat: 'server_error' }, { chat: 'overloaded' }, { chat: 'server_error' }],
            ],
          },
        ],
      },
      { tracesEndpoint: `${vigil.otlp}/v1/traces`, logsEndpoint: `${vigil.otlp}/v1/logs`, protocol: 'http/protobuf', serviceName: 'demo-openai-agent' },
    );
    assert.equal(run.code, 0, run.stderr);
    const [t1, t2, t3] = run.turns;
    await waitFor(() => (byKind(vigil.events(), 'model_request_repeated_failure').length ? true : undefined), 'the detected cases', 20_000);
    await drained(vigil);
    const events = vigil.events();

    const invalid = byKind(events, 'invalid_tool_args');
    assert.equal(invalid.length, 1, JSON.stringify(events.map((e) => e.data.signature)));
    const i = invalid[0].data;
    assert.equal(invalid[0].type, 'dev.vigil.work.created');
    assert.match(i.signature, /^invalid_tool_args: /);
    assert.deepEqual(
      [i.severity, i.detected_by, i.operation, i.partition, i.trace_id, i.span_id],
      [2, 'vigil/detect', 'invalid_tool_args', 'sess-detect', t1!.traceId, t1!.steps![0]!.spanId],
    );
    assert.match(i.evidence.excerpt, /ZodError/);
    // The zod failure is the kind, not also a plain tool failure.
    assert.equal(events.filter((e) => e.data.trace_id === t1!.traceId).length, 1);

    const repeated = byKind(events, 'repeated_identical_tool_error');
    assert.equal(repeated.length, 1);
    assert.equal(repeated[0].data.trace_id, t2!.traceId);
    assert.equal(repeated[0].data.span_id, t2!.steps![2]!.spanId, 'revealed by the third failure');
    assert.equal(repeated[0].data.signature, "repeated_identical_tool_error: KeyError: 'results'");
    assert.equal(repeated[0].data.evidence.kind, 'runtime.error_case');
    // The three failures themselves are one ordinary group (they are the same failure).
    const plain = events.filter((e) => e.data.trace_id === t2!.traceId && !e.data.error_kind);
    assert.equal(new Set(plain.map((e) => e.data.group_key)).size, 1);

    const models = byKind(events, 'model_request_repeated_failure');
    assert.equal(models.length, 1);
    assert.deepEqual([models[0].data.trace_id, models[0].data.severity], [t3!.traceId, 3]);
    assert.match(models[0].data.signature, /^model_request_repeated_failure: /);
  });

  test('AI SDK 5 agent: a tool failing three times alike in one generateText turn', async () => {
    const fail = { tool: 'read_file', error: 'ENOENT: no such file or directory, open data.json' };
    const run = await runAgent(
      'ai-sdk',
      { sessions: [{ id: 'sess-ai', turns: [[fail, fail, fail]] }] },
      { tracesEndpoint: `${vigil.otlp}/v1/traces`, protocol: 'http/json', serviceName: 'demo-ai-agent' },
    );
    assert.equal(run.code, 0, run.stderr);
    const trace = run.turns[0]!.traceId;
    const found = await waitFor(
      () => byKind(vigil.events(), 'repeated_identical_tool_error').find((e) => e.data.trace_id === trace),
      'the repeated tool error of the AI SDK turn',
      20_000,
    );
    assert.match(found.data.signature, /^repeated_identical_tool_error: .*ENOENT/);
    assert.equal(found.source, 'vigil/demo-ai-agent');
  });
});

describe('a journal case and the same failure detected from a trace in the same turn', () => {
  let openai: FakeOpenAI;
  let vigil: Vigil;
  before(async () => {
    openai = await startFakeOpenAI();
    vigil = await startVigil();
  });
  after(async () => {
    await vigil?.stop();
    await openai?.close();
  });

  test('give one group and one occurrence, whichever pipeline counts it first', async () => {
    const run = await runAgent(
      'openai',
      { openai: openai.baseURL, sessionOn: 'all', logFailures: false, sessions: [{ id: 'sess-one', turns: [[{ tool: 'read_file', args: { path: 3 } }]] }] },
      { tracesEndpoint: `${vigil.otlp}/v1/traces`, protocol: 'http/protobuf', serviceName: 'demo-openai-agent' },
    );
    assert.equal(run.code, 0, run.stderr);
    const turn = run.turns[0]!;
    // The runtime's own journal case of the same failure: its turn is the trace, its evidence the
    // tool's error as the runtime writes it (whitespace compacted).
    let zodMessage = '';
    try {
      const { z } = await import('zod');
      z.object({ path: z.string() }).parse({ path: 3 });
    } catch (err) {
      zodMessage = (err as Error).message;
    }
    const writer = startJournalWriter(vigil.journal);
    await writer.append([
      JSON.stringify(
        referenceCase({
          case_id: 'case-zod-1',
          turn_id: turn.traceId,
          session_id: 'sess-one',
          occurred_at_ms: Date.now(),
          observation: {
            expected_behavior: 'valid arguments',
            actual_behavior: 'The tool executor rejected the tool call.',
            evidence: compactEvidence(zodMessage),
            recoverability: 'tool_error_returned_to_model',
            retry_count: 0,
            terminal_status: null,
          },
        }),
      ),
    ]);
    await writer.close();
    await waitFor(() => (vigil.events().some((e) => e.data.error_kind === 'invalid_tool_args') ? true : undefined), 'the invalid_tool_args work event', 20_000);
    const status = await waitFor(async () => {
      const body = await drained(vigil);
      return body.receivers.journal.appended === 1 && body.receivers.otlp.traces.appended >= 1 ? body : undefined;
    }, 'both the case and the span to be taken');
    assert.equal(status.receivers.journal.cases, 1);
    const events = vigil.events();
    const kinds = events.filter((e) => e.data.error_kind === 'invalid_tool_args');
    assert.deepEqual(
      kinds.map((e) => e.type),
      ['dev.vigil.work.created'],
      'one work item, never updated: one occurrence',
    );
    assert.equal(kinds[0].data.count, 1);
    assert.equal(new Set(kinds.map((e) => e.data.group_key)).size, 1);
    assert.equal(status.store.groups, 1, 'one group in the store');
  });
});

describe('detectors that read the activity markers kept at ingest (real SDK traces over OTLP)', () => {
  let openai: FakeOpenAI;
  let vigil: Vigil;
  before(async () => {
    openai = await startFakeOpenAI();
    vigil = await startVigil();
  });
  after(async () => {
    await vigil?.stop();
    await openai?.close();
  });

  test('openai agent: a context-length failure after a compaction step; a successful chat with an empty answer', async () => {
    const run = await runAgent(
      'openai',
      {
        openai: openai.baseURL,
        sessionOn: 'all',
        logFailures: false,
        sessions: [
          {
            id: 'sess-markers',
            turns: [[{ chat: 'ok' }, { span: 'context.compaction' }, { chat: 'context_length' }], [{ chat: 'empty' }], [{ chat: 'context_length' }]],
          },
        ],
      },
      { tracesEndpoint: `${vigil.otlp}/v1/traces`, protocol: 'http/protobuf', serviceName: 'demo-openai-agent' },
    );
    assert.equal(run.code, 0, run.stderr);
    const [t1, t2, t3] = run.turns;
    await waitFor(
      () => (byKind(vigil.events(), 'model_empty_reasoning_output').length && byKind(vigil.events(), 'context_overflow_after_recovery').length ? true : undefined),
      'the marker cases',
      20_000,
    );
    await drained(vigil);
    const events = vigil.events();
    const overflow = byKind(events, 'context_overflow_after_recovery');
    assert.deepEqual(
      overflow.map((e) => e.data.trace_id),
      [t1!.traceId],
      'only the turn that compacted first',
    );
    assert.equal(overflow[0].data.severity, 3);
    assert.match(overflow[0].data.signature, /^context_overflow_after_recovery: .*maximum context length/);
    // The failure itself is still an ordinary provider failure, in both turns.
    assert.ok(events.some((e) => e.data.trace_id === t3!.traceId && !e.data.error_kind));
    const empty = byKind(events, 'model_empty_reasoning_output');
    assert.deepEqual(
      empty.map((e) => e.data.trace_id),
      [t2!.traceId],
    );
    assert.match(empty[0].data.signature, /^model_empty_reasoning_output: empty model output from openai/);
  });

  test('AI SDK 5 agent: a successful generation with an empty text', async () => {
    const run = await runAgent(
      'ai-sdk',
      { sessions: [{ id: 'sess-ai-empty', turns: [[{ chat: 'empty' }]] }] },
      { tracesEndpoint: `${vigil.otlp}/v1/traces`, protocol: 'http/json', serviceName: 'demo-ai-agent' },
    );
    assert.equal(run.code, 0, run.stderr);
    const trace = run.turns[0]!.traceId;
    const found = await waitFor(
      () => byKind(vigil.events(), 'model_empty_reasoning_output').find((e) => e.data.trace_id === trace),
      'the empty output of the AI SDK turn',
      20_000,
    );
    assert.equal(found.source, 'vigil/demo-ai-agent');
  });
});
