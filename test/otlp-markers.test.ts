/**
 * Activity markers at ingest: which records become markers (the relevance test's verdicts), that a
 * successful span kept as a mark is checked and never built in both encodings, what each marker
 * carries, how markers are coalesced per turn within a request, and the agent CLIs' activity events.
 * Without a pipeline that asks for markers, nothing changes.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import root0214 from 'otlp-transformer-0214/build/src/generated/root.js';
import { ACTIVITY_KIND } from '../src/model/activity.ts';
import type { AgentEvent } from '../src/model/event.ts';
import { decodeTracesJson } from '../src/receivers/otlp/json.ts';
import { mapLogs, mapTraces } from '../src/receivers/otlp/mapping.ts';
import { markOfSpan } from '../src/receivers/otlp/mapping/markers.ts';
import { spanVerdict } from '../src/receivers/otlp/mapping/relevance.ts';
import type { Attributes, NormalizedLog, NormalizedSpan, NormalizedTraces } from '../src/receivers/otlp/normalized.ts';
import { decodeTracesProtobuf } from '../src/receivers/otlp/protobuf.ts';

const T0 = 1_780_000_000_000;
const TRACE = '5b8efff798038103d269b633813fc60c';
let spanSeq = 0;

function span(name: string, endMs: number, attrs: Attributes = {}, overrides: Partial<NormalizedSpan> = {}): NormalizedSpan {
  const spanId = (++spanSeq).toString(16).padStart(16, '0');
  return {
    traceId: TRACE,
    spanId,
    parentSpanId: undefined,
    traceState: '',
    name,
    kind: 1,
    startTimeUnixNano: `${endMs - 100}000000`,
    startTimeMs: endMs - 100,
    endTimeUnixNano: `${endMs}000000`,
    endTimeMs: endMs,
    attributes: attrs,
    events: [],
    links: [],
    status: { code: 0, message: '' },
    ...overrides,
  };
}
const tracesOf = (spans: NormalizedSpan[]): NormalizedTraces[] => [
  { resource: { 'service.name': 'agent', 'session.id': 'sess-1' }, scope: { name: '', version: '', attributes: {} }, spans },
];
const chat = (endMs: number, attrs: Attributes = {}) =>
  span('chat gpt-4o', endMs, {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'openai',
    'gen_ai.request.model': 'gpt-4o',
    'gen_ai.response.finish_reasons': ['stop'],
    'gen_ai.usage.output_tokens': 42,
    ...attrs,
  });
const tool = (endMs: number, name = 'read_file') =>
  span(`execute_tool ${name}`, endMs, { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': name, 'gen_ai.tool.call.id': `call_${endMs}` });
const agent = (endMs: number, attrs: Attributes = {}) => span('invoke_agent coder', endMs, { 'gen_ai.operation.name': 'invoke_agent', ...attrs });
const failedChat = (endMs: number) => ({ ...chat(endMs, { 'error.type': 'InternalServerError' }), status: { code: 2, message: '500 The server had an error' } });

const markers = (events: AgentEvent[]): Array<Record<string, unknown>> =>
  events.filter((e) => e.kind === ACTIVITY_KIND).map((e) => ({ ...e.payload, time: e.time - T0 }));

describe('the relevance test with activity markers', () => {
  const facts = (name: string, attributes: Attributes = {}, statusCode = 0, eventNames: string[] = []) => ({ name, attributes, statusCode, eventNames });
  test('verdicts', () => {
    assert.equal(spanVerdict(facts('chat gpt-4o'), true), 'mark');
    assert.equal(spanVerdict(facts('x', { 'gen_ai.operation.name': 'execute_tool' }), true), 'mark');
    assert.equal(spanVerdict(facts('invoke_agent a'), true), 'mark');
    assert.equal(spanVerdict(facts('ai.streamText.doStream'), true), 'mark');
    assert.equal(spanVerdict(facts('ai.generateText'), true), 'mark');
    assert.equal(spanVerdict(facts('x', { 'openinference.span.kind': 'LLM' }), true), 'mark');
    assert.equal(spanVerdict(facts('embeddings text-embedding-3-small'), true), 'skip', 'embeddings are no activity');
    assert.equal(spanVerdict(facts('retrieval docs'), true), 'skip');
    assert.equal(spanVerdict(facts('GET /v1/chat'), true), 'skip');
    assert.equal(spanVerdict(facts('compact history'), true), 'build', 'a compaction is built (rare; its attributes are read)');
    assert.equal(spanVerdict(facts('invoke_agent a', {}, 0, ['provider.retry.checkpoint']), true), 'build');
    assert.equal(spanVerdict(facts('chat gpt-4o', {}, 2), true), 'build', 'a failure is built');
    assert.equal(spanVerdict(facts('chat gpt-4o'), false), 'skip', 'without markers wanted, successful spans are let go');
    assert.equal(spanVerdict(facts('compact history'), false), 'skip');
  });
});

describe('decoding with markers: successful spans are checked, kept as marks, never built', () => {
  const otlp = (root0214 as any).opentelemetry.proto;
  const str = (key: string, stringValue: string) => ({ key, value: { stringValue } });
  const request = {
    resourceSpans: [
      {
        resource: { attributes: [str('service.name', 'agent')] },
        scopeSpans: [
          {
            spans: [
              {
                traceId: TRACE,
                spanId: '00000000000000a1',
                name: 'chat gpt-4o',
                startTimeUnixNano: `${T0 - 500}000000`,
                endTimeUnixNano: `${T0}123456`,
                attributes: [str('gen_ai.operation.name', 'chat'), str('gen_ai.system', 'openai'), str('session.id', 's1'), str('http.url', 'https://x')],
                status: {},
              },
              {
                traceId: TRACE,
                spanId: '00000000000000a2',
                name: 'retrieval docs',
                startTimeUnixNano: `${T0}000000`,
                endTimeUnixNano: `${T0 + 1}000000`,
                attributes: [str('gen_ai.operation.name', 'retrieval')],
                status: {},
              },
              {
                traceId: TRACE,
                spanId: '00000000000000a3',
                name: 'execute_tool ls',
                startTimeUnixNano: `${T0}000000`,
                endTimeUnixNano: `${T0 + 2}000000`,
                attributes: [str('gen_ai.tool.name', 'ls')],
                status: { code: 1 },
              },
            ],
          },
        ],
      },
    ],
  };
  const toProto = (v: unknown, key = ''): unknown => {
    if (typeof v === 'string' && /^(traceId|spanId)$/.test(key)) return Buffer.from(v, 'hex');
    if (Array.isArray(v)) return v.map((x) => toProto(x));
    if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, toProto(x, k)]));
    return v;
  };
  const bytes = otlp.collector.trace.v1.ExportTraceServiceRequest.encode(otlp.collector.trace.v1.ExportTraceServiceRequest.fromObject(toProto(request))).finish();

  for (const [encoding, decode] of [
    ['OTLP/JSON', () => decodeTracesJson(JSON.stringify(request), { skipIrrelevant: true, markers: true })],
    ['OTLP/protobuf', () => decodeTracesProtobuf(bytes, { skipIrrelevant: true, markers: true })],
  ] as const) {
    test(encoding, () => {
      const d = decode();
      assert.equal(d.groups[0]!.spans.length, 0, 'nothing built');
      assert.equal(d.skipped, 1, 'the retrieval span is let go');
      assert.deepEqual(
        d.groups[0]!.marks!.map((m) => [m.spanId, m.name, m.endTimeMs, m.statusCode, Object.keys(m.attributes).sort()]),
        [
          ['00000000000000a1', 'chat gpt-4o', T0 + 0.123456, 0, ['gen_ai.operation.name', 'gen_ai.system', 'session.id']],
          ['00000000000000a3', 'execute_tool ls', T0 + 2, 1, ['gen_ai.tool.name']],
        ],
        'the facts the test read: ids, name, times, status, watched attributes only',
      );
    });
  }

  test('without markers the same request keeps nothing', () => {
    const d = decodeTracesJson(JSON.stringify(request), { skipIrrelevant: true });
    assert.deepEqual([d.groups[0]!.spans.length, d.groups[0]!.marks, d.skipped], [0, undefined, 3]);
  });
});

describe('markers from spans', () => {
  test('a turn without a failure: its routine markers fold into its turn.end', () => {
    const r = mapTraces(
      tracesOf([tool(T0 + 1), chat(T0 + 2), tool(T0 + 3, 'bash'), chat(T0 + 4), agent(T0 + 5, { 'gen_ai.conversation.title': 'Fix the build' })]),
      { markers: true },
    );
    assert.deepEqual(markers(r.events), [
      {
        activity: 'turn.end',
        status: 'ok',
        title: 'Fix the build',
        last_tool: 'bash',
        last_tool_call_id: `call_${T0 + 3}`,
        last_tool_ms: T0 + 3,
        activity_count: 4,
        last_activity_ms: T0 + 4,
        time: 5,
      },
    ]);
    assert.equal(r.events[0]!.eventId, `${TRACE}:${spanSeq.toString(16).padStart(16, '0')}`, "the marker has its span's event id");
    assert.equal(r.events[0]!.partition, 'sess-1');
    assert.deepEqual([r.relevant, r.irrelevant], [1, 4]);
  });

  test('a turn with a failure: the last tool call before it; what follows folded into the turn.end', () => {
    const r = mapTraces(tracesOf([tool(T0 + 1), chat(T0 + 2), tool(T0 + 3, 'bash'), failedChat(T0 + 4), chat(T0 + 5), chat(T0 + 6), tool(T0 + 7), agent(T0 + 8)]), {
      markers: true,
    });
    assert.equal(r.events.filter((e) => e.kind !== ACTIVITY_KIND).length, 1, 'the failure');
    assert.deepEqual(markers(r.events), [
      { activity: 'tool.ok', tool_name: 'bash', call_id: `call_${T0 + 3}`, count: 2, time: 3 },
      {
        activity: 'turn.end',
        status: 'ok',
        last_tool: 'read_file',
        last_tool_call_id: `call_${T0 + 7}`,
        last_tool_ms: T0 + 7,
        activity_count: 3,
        last_activity_ms: T0 + 7,
        time: 8,
      },
    ]);
  });

  test('a turn is its partition and its trace: the same trace in two sessions coalesces apart', () => {
    const inSession = (s: NormalizedSpan, session: string) => ({ ...s, attributes: { ...s.attributes, 'session.id': session } });
    const r = mapTraces(tracesOf([inSession(tool(T0 + 1), 'sess-a'), inSession(tool(T0 + 2, 'bash'), 'sess-b'), inSession(tool(T0 + 3), 'sess-a')]), {
      markers: true,
    });
    assert.deepEqual(
      r.events.map((e) => [e.partition, e.payload.tool_name, e.payload.count, e.time - T0]),
      [
        ['sess-b', 'bash', undefined, 2],
        ['sess-a', 'read_file', 2, 3],
      ],
    );
  });

  test('a turn with a failure and no turn.end in the request: after it, the newest of each kind', () => {
    const r = mapTraces(tracesOf([chat(T0 + 1), tool(T0 + 2), failedChat(T0 + 3), chat(T0 + 4), tool(T0 + 5, 'bash'), chat(T0 + 6)]), { markers: true });
    assert.deepEqual(markers(r.events), [
      { activity: 'tool.ok', tool_name: 'read_file', call_id: `call_${T0 + 2}`, time: 2 },
      { activity: 'tool.ok', tool_name: 'bash', call_id: `call_${T0 + 5}`, time: 5 },
      { activity: 'model_request.ok', provider: 'openai', model: 'gpt-4o', finish_reasons: ['stop'], output_empty: false, count: 2, time: 6 },
    ]);
    assert.deepEqual([r.relevant, r.irrelevant], [4, 2]);
  });

  test('model requests with nothing to say, or cut or filtered, are kept one by one', () => {
    const r = mapTraces(
      tracesOf([
        chat(T0 + 1, { 'gen_ai.usage.output_tokens': 0 }),
        chat(T0 + 2, { 'gen_ai.response.finish_reasons': ['length'] }),
        span('ai.generateText.doGenerate', T0 + 3, {
          'ai.model.provider': 'openai.chat',
          'ai.model.id': 'gpt-4o-mini',
          'ai.response.text': '',
          'ai.response.finishReason': 'stop',
          'ai.usage.outputTokens': 3,
        }),
        span('ai.generateText.doGenerate', T0 + 4, { 'ai.response.text': '', 'ai.response.toolCalls': '[{"toolCallType":"function","toolName":"ls"}]' }),
        chat(T0 + 5, { 'gen_ai.usage.output_tokens': undefined as never, 'gen_ai.output.messages': '[{"role":"assistant","parts":[]}]' }),
      ]),
      { markers: true },
    );
    assert.deepEqual(
      markers(r.events).map((m) => [m.time, m.output_empty, m.finish_reasons]),
      [
        [1, true, ['stop']],
        [2, false, ['length']],
        [3, true, ['stop']],
        [4, false, []],
        [5, true, ['stop']],
      ],
      'the routine one (tool calls, not empty) stands for the routine ones of its turn (there is no turn.end to fold into)',
    );
  });

  test('a failed agent turn: its failure, and its turn.end (status error, the reason) under a suffixed id', () => {
    const root = { ...agent(T0 + 9, { 'agent.run.end_reason': 'model_error' }), status: { code: 2, message: '529 Overloaded' } };
    const r = mapTraces(tracesOf([root]), { markers: true });
    assert.deepEqual(
      r.events.map((e) => [e.eventId, e.kind]),
      [
        [`${TRACE}:${root.spanId}`, 'execution.completed'],
        [`${TRACE}:${root.spanId}/turn.end`, ACTIVITY_KIND],
      ],
    );
    assert.deepEqual(r.events[1]!.payload, { activity: 'turn.end', status: 'error', reason: 'model_error', error: '529 Overloaded' });
    assert.equal(r.relevant, 1, 'one record');
    // Forwarded, the span travels with its first event only.
    const forwarded = mapTraces(tracesOf([root]), { markers: true, forward: true });
    assert.deepEqual(
      forwarded.events.map((e) => [e.kind, e.forward?.signal === 'traces' && e.forward.span === root]),
      [
        ['execution.completed', true],
        [ACTIVITY_KIND, false],
      ],
    );
  });

  test('compaction steps and runtime retry checkpoints (span events)', () => {
    const detail = JSON.stringify({ version: 1, resume_at_ms: T0 + 30_000, attempts: { 'anthropic/claude': 2 } });
    const root = agent(T0 + 9);
    root.events = [
      { name: 'provider.retry.checkpoint', timeUnixNano: `${T0 + 4}000000`, timeMs: T0 + 4, attributes: { detail } },
      { name: 'context.compaction', timeUnixNano: `${T0 + 5}000000`, timeMs: T0 + 5, attributes: { trigger: 'auto' } },
      { name: 'provider.retry.checkpoint', timeUnixNano: `${T0 + 6}000000`, timeMs: T0 + 6, attributes: { detail: `{"version":1,"pad":"${'x'.repeat(17_000)}"}` } },
    ];
    const r = mapTraces(tracesOf([root]), { markers: true });
    assert.deepEqual(
      r.events.map((e) => [e.eventId.slice(TRACE.length + 17), e.payload.activity, e.time - T0]),
      [
        ['', 'turn.end', 9],
        ['/retry.checkpoint', 'retry.checkpoint', 4],
        ['/compaction', 'compaction', 5],
        ['/retry.checkpoint/2', 'retry.checkpoint', 6],
      ],
    );
    assert.deepEqual(r.events[1]!.payload, { activity: 'retry.checkpoint', detail: JSON.parse(detail), raw_size: detail.length });
    assert.deepEqual(r.events[2]!.payload, { activity: 'compaction', trigger: 'auto' });
    assert.deepEqual(r.events[3]!.payload.detail, null, 'over 16 KiB: not parsed, the size says why');
  });

  test('without markers, successful spans stay irrelevant', () => {
    const r = mapTraces(tracesOf([tool(T0 + 1), chat(T0 + 2), agent(T0 + 3)]));
    assert.deepEqual([r.events.length, r.relevant, r.irrelevant], [0, 0, 3]);
  });

  test('a mark that cannot be mapped is rejected under its span; the other marks are mapped and coalesced', () => {
    const broken = markOfSpan(tool(T0 + 2));
    // An attribute that throws when read: the mapping of this mark fails, and only it.
    broken.attributes = new Proxy(broken.attributes, {
      get() {
        throw new Error('unreadable attribute');
      },
    });
    const [group] = tracesOf([]);
    const r = mapTraces([{ ...group!, marks: [markOfSpan(tool(T0 + 1)), broken, markOfSpan(tool(T0 + 3)), markOfSpan(agent(T0 + 4))] }], { markers: true });
    assert.equal(r.rejected, 1);
    assert.deepEqual(r.messages, [`span ${TRACE}:${broken.spanId}: could not be mapped: unreadable attribute`]);
    // The two tool calls left fold into the turn.end; the three marks mapped count as relevant (one kept event) or irrelevant (folded).
    assert.deepEqual(markers(r.events), [
      {
        activity: 'turn.end',
        status: 'ok',
        last_tool: 'read_file',
        last_tool_call_id: `call_${T0 + 3}`,
        last_tool_ms: T0 + 3,
        activity_count: 2,
        last_activity_ms: T0 + 3,
        time: 4,
      },
    ]);
    assert.deepEqual([r.relevant, r.irrelevant], [1, 2]);
  });
});

describe("markers from the agent CLIs' log events", () => {
  const log = (eventName: string, attributes: Attributes, timeMs = T0): NormalizedLog => ({
    timeUnixNano: `${timeMs}000000`,
    timeMs,
    observedTimeUnixNano: '0',
    observedTimeMs: undefined,
    severityNumber: 9,
    severityText: 'INFO',
    body: `claude_code.${eventName}`,
    attributes: { 'event.name': eventName, 'session.id': 'cc-1', 'prompt.id': 'p-1', ...attributes },
    traceId: undefined,
    spanId: undefined,
    eventName: '',
    flags: 0,
  });
  const logsOf = (logs: NormalizedLog[]) => [{ resource: { 'service.name': 'claude-code' }, scope: { name: '', version: '', attributes: {} }, logs }];

  test('Claude Code, Codex, Gemini CLI and runtime events', () => {
    const r = mapLogs(
      logsOf([
        log('user_prompt', { prompt_length: '12' }, T0),
        log('api_request', { model: 'claude-sonnet-4', output_tokens: '0' }, T0 + 1),
        log('tool_result', { tool_name: 'Bash', success: 'true', tool_use_id: 'toolu_1' }, T0 + 2),
        log('tool_result', { tool_name: 'Read', success: 'false', error: 'ENOENT' }, T0 + 3),
        log('codex.api_request', { model: 'gpt-5', 'http.response.status_code': '200', attempt: '1', 'prompt.id': 'p-2' }, T0 + 4),
        log('gemini_cli.api_response', { model: 'gemini-2.5-pro', status_code: '200', output_token_count: '12', 'prompt.id': 'p-3' }, T0 + 5),
        log('turn.end', { status: 'error', reason: 'model_error', error: 'upstream stream closed' }, T0 + 6),
        log('compaction', { trigger: 'auto' }, T0 + 7),
      ]),
      { markers: true },
    );
    assert.deepEqual(
      r.events.map((e) => (e.kind === ACTIVITY_KIND ? e.payload : { kind: e.kind, status: e.payload.status })),
      [
        { activity: 'prompt' },
        { activity: 'model_request.ok', provider: 'anthropic', model: 'claude-sonnet-4', finish_reasons: [], output_empty: true },
        { activity: 'tool.ok', tool_name: 'Bash', call_id: 'toolu_1' },
        { kind: 'tool.result', status: 'error' },
        { activity: 'model_request.ok', provider: 'openai', model: 'gpt-5', finish_reasons: [], output_empty: false },
        { activity: 'model_request.ok', provider: 'gcp.gemini', model: 'gemini-2.5-pro', finish_reasons: [], output_empty: false },
        { activity: 'turn.end', status: 'error', reason: 'model_error', error: 'upstream stream closed' },
        { activity: 'compaction', trigger: 'auto' },
      ],
    );
    assert.deepEqual(
      r.events.map((e) => e.turnId),
      ['p-1', 'p-1', 'p-1', 'p-1', 'p-2', 'p-3', 'p-1', 'p-1'],
    );
    assert.ok(r.events.every((e) => e.partition === 'cc-1'));
  });

  test('without markers these events stay irrelevant', () => {
    const r = mapLogs(logsOf([log('user_prompt', {}), log('api_request', { model: 'm' }), log('tool_result', { tool_name: 'Bash', success: 'true' })]));
    assert.deepEqual([r.events.length, r.irrelevant], [0, 3]);
  });
});
