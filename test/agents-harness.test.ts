/**
 * The test agents themselves, against a plain capture server: what the real SDKs and
 * instrumentations send is what later end-to-end tests rely on (and what vigil must map). Each
 * assertion here is a fact about the real libraries, not about vigil.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { runAgent } from './helpers/agents.ts';
import { startCaptureServer, type CaptureServer } from './helpers/capture-server.ts';
import { startFakeOpenAI, type FakeOpenAI } from './helpers/fake-openai.ts';
import { attrs, decodeLogsRequest, decodeTraceRequest } from './helpers/otlp-decode.ts';

type Any = any;

/** The request decoded by an independent decoder: JSON as sent (hex ids), protobuf through otlp-transformer 0.214. */
function decoded(r: CaptureServer['received'][number], decode: (b: Buffer) => Any): Any {
  return String(r.headers['content-type']).includes('json') ? JSON.parse(r.body.toString('utf8')) : decode(r.body);
}

function spansOf(capture: CaptureServer): Any[] {
  return capture.received
    .filter((r) => r.path === '/v1/traces')
    .flatMap((r) =>
      decoded(r, decodeTraceRequest).resourceSpans.flatMap((rs: Any) =>
        rs.scopeSpans.flatMap((ss: Any) => ss.spans.map((s: Any) => ({ ...s, attrs: attrs(s.attributes) }))),
      ),
    );
}

function logsOf(capture: CaptureServer): Any[] {
  return capture.received
    .filter((r) => r.path === '/v1/logs')
    .flatMap((r) =>
      decoded(r, decodeLogsRequest).resourceLogs.flatMap((rl: Any) =>
        rl.scopeLogs.flatMap((sl: Any) => sl.logRecords.map((l: Any) => ({ ...l, attrs: attrs(l.attributes) }))),
      ),
    );
}

describe('test agents (real SDKs against a capture server)', () => {
  let openai: FakeOpenAI;
  let capture: CaptureServer;
  before(async () => {
    openai = await startFakeOpenAI();
    capture = await startCaptureServer();
  });
  after(async () => {
    await openai.close();
    await capture.close();
  });

  test('openai agent: instrumented chat spans without a session, the root span with it, and a log per caught failure', async () => {
    capture.received.length = 0;
    const run = await runAgent(
      'openai',
      {
        openai: openai.baseURL,
        sessions: [
          { id: 'sess-1', conversation: 'conv-1', turns: [[{ tool: 'run_python', error: "KeyError: 'results'" }, { chat: 'rate_limit' }, { chat: 'ok' }]] },
        ],
      },
      { endpoint: capture.url, protocol: 'http/protobuf' },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.turns.length, 1);
    const spans = spansOf(capture);
    const root = spans.find((s) => s.name === 'invoke_agent demo-agent');
    assert.equal(root.attrs['session.id'], 'sess-1');
    const chats = spans.filter((s) => s.name === 'chat gpt-4o-mini');
    assert.equal(chats.length, 2);
    const failed = chats.find((s) => s.status?.code === 2);
    assert.match(failed.status.message, /^429 Rate limit reached for gpt-4o-mini/);
    assert.equal(failed.attrs['error.type'], 'RateLimitError');
    assert.equal(failed.attrs['session.id'], undefined, 'the instrumentation sets no session');
    assert.equal(failed.traceId, root.traceId);
    const tool = spans.find((s) => s.name === 'execute_tool run_python');
    assert.equal(tool.status.code, 2);
    assert.equal(tool.events[0].name, 'exception');
    const logs = logsOf(capture);
    assert.equal(logs.length, 2);
    const chatLog = logs.find((l) => l.body.stringValue.startsWith('Error: 429 Rate limit reached'));
    assert.ok(chatLog, JSON.stringify(logs.map((l) => l.body)));
    assert.match(chatLog.body.stringValue, /\n\s+at /, 'the log carries the stack');
    assert.equal(chatLog.traceId, root.traceId);
    assert.equal(chatLog.spanId, root.spanId, 'logged in the root span, after the chat span ended');
    const toolLog = logs.find((l) => l.body.stringValue.includes("KeyError: 'results'"));
    assert.equal(toolLog.spanId, tool.spanId, 'logged inside the tool span');
    assert.deepEqual(
      openai.requests.map((r) => r.scenario),
      ['rate_limit', 'ok'],
    );
  });

  test('AI SDK agent: session only in telemetry metadata, a 429 fails doGenerate and generateText, a tool failure is ai.toolCall', async () => {
    capture.received.length = 0;
    const run = await runAgent(
      'ai-sdk',
      {
        sessions: [{ id: 'sess-ai', turns: [[{ tool: 'read_json', error: "SyntaxError: Unexpected token '}' in JSON at position 17" }], [{ chat: 'rate_limit' }]] }],
      },
      { endpoint: capture.url, protocol: 'http/json' },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.turns.length, 2);
    assert.match(run.turns[1]!.error!, /Rate limit reached/);
    const spans = spansOf(capture);
    const toolSpan = spans.find((s) => s.name === 'ai.toolCall');
    assert.equal(toolSpan.attrs['ai.toolCall.name'], 'read_json');
    assert.equal(toolSpan.attrs['ai.telemetry.metadata.sessionId'], 'sess-ai');
    assert.equal(toolSpan.status.code, 2);
    const failedCalls = spans
      .filter((s) => s.status?.code === 2 && s.traceId === run.turns[1]!.traceId)
      .map((s) => s.name)
      .sort();
    assert.deepEqual(failedCalls, ['ai.generateText', 'ai.generateText.doGenerate']);
    const doGenerate = spans.find((s) => s.name === 'ai.generateText.doGenerate' && s.status?.code === 2);
    assert.equal(attrs(doGenerate.events[0].attributes)['exception.type'], 'AI_APICallError');
  });
});
