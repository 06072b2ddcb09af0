import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { decodeLogsJson, decodeTracesJson } from '../src/receivers/otlp/json.ts';
import { isErrorSeverity, mapLogs, mapTraces } from '../src/receivers/otlp/mapping.ts';
import type { Attributes, NormalizedLog, NormalizedLogs, NormalizedSpan, NormalizedTraces } from '../src/receivers/otlp/normalized.ts';

const EXAMPLES = path.resolve(import.meta.dirname, 'fixtures/otlp-examples');

const TRACEBACK = 'Traceback (most recent call last):\n  File "/tmp/x.py", line 1, in <module>\n    1/0\n    ~^~\nZeroDivisionError: division by zero';
const TRACE_ID = '5b8efff798038103d269b633813fc60c';
const SPAN_ID = 'eee19b7ec3c1b174';
const T0 = 1_700_000_000_000;

function log(overrides: Partial<NormalizedLog> = {}): NormalizedLog {
  return {
    timeUnixNano: `${T0}000000`,
    timeMs: T0,
    observedTimeUnixNano: '0',
    observedTimeMs: undefined,
    severityNumber: 9,
    severityText: 'INFO',
    body: undefined,
    attributes: {},
    traceId: TRACE_ID,
    spanId: SPAN_ID,
    eventName: '',
    flags: 0,
    ...overrides,
  };
}

function span(overrides: Partial<NormalizedSpan> = {}): NormalizedSpan {
  return {
    traceId: TRACE_ID,
    spanId: SPAN_ID,
    parentSpanId: undefined,
    traceState: '',
    name: 'run_job',
    kind: 1,
    startTimeUnixNano: `${T0}000000`,
    startTimeMs: T0,
    endTimeUnixNano: `${T0 + 1500}000000`,
    endTimeMs: T0 + 1500.25,
    attributes: {},
    events: [],
    links: [],
    status: { code: 0, message: '' },
    ...overrides,
  };
}

const RESOURCE: Attributes = { 'service.name': 'agent', 'service.version': '1.2.3', 'service.instance.id': 'inst-1' };
const logsOf = (records: NormalizedLog[], resource: Attributes = RESOURCE): NormalizedLogs[] => [
  { resource, scope: { name: '', version: '', attributes: {} }, logs: records },
];
const tracesOf = (spans: NormalizedSpan[], resource: Attributes = RESOURCE): NormalizedTraces[] => [
  { resource, scope: { name: '', version: '', attributes: {} }, spans },
];

describe('OTLP mapping: log records', () => {
  test('an ERROR log whose body is a Python traceback is a failed execution', () => {
    const r = mapLogs(logsOf([log({ severityNumber: 17, severityText: 'ERROR', body: TRACEBACK })]));
    assert.equal(r.relevant, 1);
    const e = r.events[0]!;
    assert.equal(e.kind, 'execution.completed');
    assert.deepEqual(e.payload, { state: 'error', outcome: { error: TRACEBACK, output: [] } });
    assert.equal(e.source, 'otlp.logs');
    assert.equal(e.time, T0);
    assert.equal(e.service, 'agent');
    assert.equal(e.revision, '1.2.3');
    assert.equal(e.traceId, TRACE_ID);
    assert.equal(e.spanId, SPAN_ID);
    assert.equal(e.turnId, TRACE_ID);
    assert.deepEqual(e.evidence, { severityNumber: 17, severityText: 'ERROR' });
    assert.match(e.eventId, /^[0-9a-f]{64}$/);
  });

  test('a WARN log is stderr of a successful execution', () => {
    const r = mapLogs(logsOf([log({ severityNumber: 13, severityText: 'WARN', body: 'DeprecationWarning: x is deprecated' })]));
    assert.deepEqual(r.events[0]!.payload, {
      state: 'ok',
      outcome: { output: [{ name: 'stderr', text: 'DeprecationWarning: x is deprecated' }] },
    });
  });

  test('severity text decides when the number is unset', () => {
    assert.equal(isErrorSeverity(0, 'error'), true);
    assert.equal(isErrorSeverity(0, 'FATAL'), true);
    assert.equal(isErrorSeverity(0, 'Critical'), true);
    assert.equal(isErrorSeverity(0, 'warning'), false);
    assert.equal(isErrorSeverity(13, 'error'), false);
    assert.equal(isErrorSeverity(21, ''), true);
    const r = mapLogs(logsOf([log({ severityNumber: 0, severityText: 'error', body: 'it broke' })]));
    assert.equal(r.events[0]!.payload.state, 'error');
  });

  test('exception attributes make a failed execution; the stacktrace is the error text', () => {
    const r = mapLogs(
      logsOf([
        log({
          severityNumber: 13,
          body: 'gen_ai.client.operation.exception',
          attributes: {
            'exception.type': 'ZeroDivisionError',
            'exception.message': 'division by zero',
            'exception.stacktrace': TRACEBACK,
            'error.type': 'ZeroDivisionError',
          },
        }),
      ]),
    );
    const e = r.events[0]!;
    assert.deepEqual(e.payload, { state: 'error', outcome: { error: TRACEBACK, output: [] } });
    assert.deepEqual(e.evidence, {
      exceptionType: 'ZeroDivisionError',
      exceptionMessage: 'division by zero',
      stacktrace: TRACEBACK,
      errorType: 'ZeroDivisionError',
      severityNumber: 13,
      severityText: 'INFO',
    });
  });

  test('exception attributes without a stacktrace give "Type: message"', () => {
    const r = mapLogs(logsOf([log({ attributes: { 'exception.type': 'ValueError', 'exception.message': 'bad input' } })]));
    assert.equal((r.events[0]!.payload.outcome as { error: string }).error, 'ValueError: bad input');
  });

  test('an empty body without exception attributes is irrelevant', () => {
    const r = mapLogs(logsOf([log(), log({ body: '   ' }), log({ severityNumber: 17, body: '' })]));
    assert.deepEqual([r.relevant, r.irrelevant, r.events.length], [0, 3, 0]);
  });

  test('a structured body is irrelevant below ERROR and its JSON is the error text at ERROR', () => {
    const r = mapLogs(logsOf([log({ body: { a: 1 } }), log({ severityNumber: 17, body: { error: 'quota' } })]));
    assert.equal(r.irrelevant, 1);
    assert.equal((r.events[0]!.payload.outcome as { error: string }).error, '{"error":"quota"}');
  });

  test('a reference event carried in the body passes through', () => {
    const payload = { state: 'error', outcome: { error: 'boom', output: [] }, execution_id: 'x1' };
    const r = mapLogs(
      logsOf([
        log({ body: { kind: 'execution.completed', payload } }),
        log({ body: JSON.stringify({ kind: 'scratchpad', payload: { type: 'tool_result', status: 'skipped' } }) }),
      ]),
    );
    assert.equal(r.events[0]!.kind, 'execution.completed');
    assert.deepEqual(r.events[0]!.payload, payload);
    assert.equal(r.events[1]!.kind, 'scratchpad');
    assert.deepEqual(r.events[1]!.payload, { type: 'tool_result', status: 'skipped' });
  });

  test('a reference kind as event name with the body as payload passes through', () => {
    const body = { type: 'tool_result', status: 'error', error: 'FileNotFoundError: x' };
    const r = mapLogs(logsOf([log({ eventName: 'tool.result', body }), log({ attributes: { 'event.name': 'execution.started' }, body: { revision: 'abc' } })]));
    assert.equal(r.events[0]!.kind, 'tool.result');
    assert.deepEqual(r.events[0]!.payload, body);
    assert.equal(r.events[1]!.kind, 'execution.started');
    assert.deepEqual(r.events[1]!.payload, { revision: 'abc' });
  });

  test('the operation is the event name, else the tool name', () => {
    const r = mapLogs(logsOf([log({ eventName: 'claude_code.api_error', body: 'x' }), log({ attributes: { 'gen_ai.tool.name': 'bash' }, body: 'warning: y' })]));
    assert.equal(r.events[0]!.operation, 'claude_code.api_error');
    assert.equal(r.events[1]!.operation, 'bash');
  });

  test('time falls back to the observed time, then to the clock', () => {
    const r = mapLogs(
      logsOf([
        log({ timeUnixNano: '0', timeMs: undefined, observedTimeMs: T0 + 5, observedTimeUnixNano: `${T0 + 5}000000`, body: 'error a' }),
        log({ timeUnixNano: '0', timeMs: undefined, body: 'error b' }),
      ]),
      { now: () => 42 },
    );
    assert.deepEqual(
      r.events.map((e) => e.time),
      [T0 + 5, 42],
    );
  });

  test('the official logs.json (INFO text without a failure marker) and events.json examples are irrelevant', () => {
    const l = mapLogs(decodeLogsJson(readFileSync(path.join(EXAMPLES, 'logs.json'))).groups);
    assert.deepEqual([l.relevant, l.irrelevant], [0, 1]);
    const e = mapLogs(decodeLogsJson(readFileSync(path.join(EXAMPLES, 'events.json'))).groups);
    assert.deepEqual([e.relevant, e.irrelevant], [0, 1]);
  });
});

describe('OTLP mapping: event identity', () => {
  test('the same log content gives the same event id, whatever the attribute order', () => {
    const a = log({ body: 'error x', attributes: { b: 2, a: { y: 1, x: [1, 2] } } });
    const b = log({ body: 'error x', attributes: { a: { x: [1, 2], y: 1 }, b: 2 } });
    const [ea, eb] = mapLogs(logsOf([a, b])).events;
    assert.equal(ea!.eventId, eb!.eventId);
  });

  test('different content, time, severity or service gives a different event id', () => {
    const base = mapLogs(logsOf([log({ body: 'error x' })])).events[0]!.eventId;
    const variants = [
      mapLogs(logsOf([log({ body: 'error y' })])),
      mapLogs(logsOf([log({ body: 'error x', timeUnixNano: '1' })])),
      mapLogs(logsOf([log({ body: 'error x', severityNumber: 10 })])),
      mapLogs(logsOf([log({ body: 'error x', attributes: { k: 1 } })])),
      mapLogs(logsOf([log({ body: 'error x' })], { 'service.name': 'other' })),
    ].map((r) => r.events[0]!.eventId);
    for (const v of variants) assert.notEqual(v, base);
    assert.equal(new Set(variants).size, variants.length);
  });

  test('log.record.uid is the event id when present', () => {
    const r = mapLogs(logsOf([log({ body: 'error x', attributes: { 'log.record.uid': '01HZX3J2V6Y7' } })]));
    assert.equal(r.events[0]!.eventId, '01HZX3J2V6Y7');
  });

  test('a span event id is trace id + span id', () => {
    const r = mapTraces(tracesOf([span({ status: { code: 2, message: 'x' } })]));
    assert.equal(r.events[0]!.eventId, `${TRACE_ID}:${SPAN_ID}`);
  });
});

describe('OTLP mapping: spans', () => {
  test('a span with status ERROR and an exception event is a failed execution', () => {
    const r = mapTraces(
      tracesOf([
        span({
          status: { code: 2, message: 'division by zero' },
          attributes: { 'error.type': 'ZeroDivisionError' },
          events: [
            { name: 'log', timeUnixNano: '0', timeMs: undefined, attributes: {} },
            {
              name: 'exception',
              timeUnixNano: '0',
              timeMs: undefined,
              attributes: { 'exception.type': 'ZeroDivisionError', 'exception.message': 'division by zero', 'exception.stacktrace': TRACEBACK },
            },
          ],
        }),
      ]),
    );
    assert.deepEqual([r.relevant, r.irrelevant], [1, 0]);
    const e = r.events[0]!;
    assert.equal(e.kind, 'execution.completed');
    assert.deepEqual(e.payload, { state: 'error', outcome: { error: TRACEBACK, output: [] } });
    assert.equal(e.source, 'otlp.traces');
    assert.equal(e.operation, 'run_job');
    assert.equal(e.turnId, TRACE_ID);
    assert.equal(e.time, T0 + 1500);
    assert.deepEqual(e.evidence, {
      exceptionType: 'ZeroDivisionError',
      exceptionMessage: 'division by zero',
      stacktrace: TRACEBACK,
      errorType: 'ZeroDivisionError',
      statusMessage: 'division by zero',
    });
  });

  test('an exception event without a stacktrace gives "type: message"', () => {
    const r = mapTraces(
      tracesOf([
        span({
          status: { code: 2, message: '' },
          events: [
            {
              name: 'exception',
              timeUnixNano: '0',
              timeMs: undefined,
              attributes: { 'exception.type': 'RateLimitError', 'exception.message': '429 Rate limit reached' },
            },
          ],
        }),
      ]),
    );
    assert.equal((r.events[0]!.payload.outcome as { error: string }).error, 'RateLimitError: 429 Rate limit reached');
  });

  test('an error span without an exception event uses its status message, else error.type', () => {
    const r = mapTraces(
      tracesOf([
        span({ spanId: '0000000000000001', status: { code: 2, message: '429 Rate limit reached for gpt-4o' }, attributes: { 'error.type': 'RateLimitError' } }),
        span({ spanId: '0000000000000002', status: { code: 2, message: '' }, attributes: { 'error.type': 'tool_error' } }),
      ]),
    );
    assert.deepEqual(
      r.events.map((e) => (e.payload.outcome as { error: string }).error),
      ['429 Rate limit reached for gpt-4o', 'tool_error'],
    );
    assert.equal(r.events[1]!.evidence?.errorType, 'tool_error');
  });

  test('an OK span is accepted but not relevant', () => {
    const r = mapTraces(tracesOf([span({ status: { code: 1, message: '' } }), span({ attributes: { 'error.type': 'x' } })]));
    assert.deepEqual([r.events.length, r.relevant, r.irrelevant, r.rejected], [0, 0, 2, 0]);
    const official = mapTraces(decodeTracesJson(readFileSync(path.join(EXAMPLES, 'trace.json'))).groups);
    assert.deepEqual([official.relevant, official.irrelevant], [0, 1]);
  });

  test('a successful span with an exception event is a recovered error: stderr of a successful execution', () => {
    const r = mapTraces(
      tracesOf([
        span({
          events: [{ name: 'exception', timeUnixNano: '0', timeMs: undefined, attributes: { 'exception.type': 'ValueError', 'exception.message': 'retrying' } }],
        }),
      ]),
    );
    assert.deepEqual(r.events[0]!.payload, { state: 'ok', outcome: { output: [{ name: 'stderr', text: 'ValueError: retrying' }] } });
  });
});

describe('OTLP mapping: partition, service and revision', () => {
  const errorLog = (attributes: Attributes) => log({ severityNumber: 17, body: 'x', attributes });

  test('session.id on the record wins over the resource, then gen_ai.conversation.id, then service.instance.id', () => {
    const resource = { ...RESOURCE, 'session.id': 'res-session', 'gen_ai.conversation.id': 'res-conv' };
    const partitions = (records: NormalizedLog[], res: Attributes) => mapLogs(logsOf(records, res)).events.map((e) => e.partition);
    assert.deepEqual(partitions([errorLog({ 'session.id': 'rec-session', 'gen_ai.conversation.id': 'rec-conv' })], resource), ['rec-session']);
    assert.deepEqual(partitions([errorLog({ 'gen_ai.conversation.id': 'rec-conv' })], resource), ['res-session']);
    assert.deepEqual(partitions([errorLog({ 'gen_ai.conversation.id': 'rec-conv' })], RESOURCE), ['rec-conv']);
    assert.deepEqual(partitions([errorLog({})], { ...RESOURCE, 'gen_ai.conversation.id': 'res-conv' }), ['res-conv']);
    assert.deepEqual(partitions([errorLog({})], RESOURCE), ['inst-1']);
    assert.deepEqual(partitions([errorLog({})], {}), ['default']);
  });

  test('spans use their own attributes for the partition too', () => {
    const r = mapTraces(tracesOf([span({ status: { code: 2, message: 'x' }, attributes: { 'session.id': 's-9' } })], { ...RESOURCE, 'session.id': 's-1' }));
    assert.equal(r.events[0]!.partition, 's-9');
  });

  test('service defaults to unknown_service; the record names its own revision', () => {
    const r = mapLogs(logsOf([errorLog({}), errorLog({ 'vigil.revision': 'r2' }), errorLog({ 'service.version': 'v3' })], { 'service.version': 'v1' }));
    assert.deepEqual(
      r.events.map((e) => [e.service, e.revision]),
      [
        ['unknown_service', 'v1'],
        ['unknown_service', 'r2'],
        ['unknown_service', 'v3'],
      ],
    );
    const none = mapLogs(logsOf([errorLog({})], {}));
    assert.equal('revision' in none.events[0]!, false);
  });
});

describe('OTLP mapping: GenAI spans', () => {
  const exceptionEvent = (type: string, message: string, stacktrace?: string) => ({
    name: 'exception',
    timeUnixNano: '0',
    timeMs: undefined,
    attributes: { 'exception.type': type, 'exception.message': message, ...(stacktrace ? { 'exception.stacktrace': stacktrace } : {}) },
  });

  test('a failed execute_tool span is a tool result with status error, tool name, call id and the exception text', () => {
    const r = mapTraces(
      tracesOf([
        span({
          name: 'execute_tool python',
          status: { code: 2, message: 'division by zero' },
          attributes: { 'gen_ai.tool.name': 'python', 'gen_ai.tool.call.id': 'call_1', 'error.type': 'ZeroDivisionError' },
          events: [exceptionEvent('ZeroDivisionError', 'division by zero', TRACEBACK)],
        }),
      ]),
    );
    const e = r.events[0]!;
    assert.equal(e.kind, 'tool.result');
    assert.deepEqual(e.payload, { type: 'tool_result', status: 'error', error: TRACEBACK, tool_name: 'python', call_id: 'call_1' });
    assert.equal(e.operation, 'execute_tool python');
    assert.equal(e.turnId, TRACE_ID);
    assert.equal(e.evidence?.exceptionType, 'ZeroDivisionError');
  });

  test('tool name from the span name, the deprecated gen_ai.tool.call_id, the result as content; status message or error.type as the error', () => {
    const r = mapTraces(
      tracesOf([
        span({
          spanId: '0000000000000001',
          name: 'execute_tool grep',
          status: { code: 2, message: 'exit status 2' },
          attributes: { 'gen_ai.tool.call_id': 'c-9', 'gen_ai.tool.call.result': 'grep: x: No such file' },
        }),
        span({
          spanId: '0000000000000002',
          name: 'tool',
          status: { code: 2, message: '' },
          attributes: { 'gen_ai.operation.name': 'execute_tool', 'error.type': 'tool_error' },
        }),
      ]),
    );
    assert.deepEqual(r.events[0]!.payload, {
      type: 'tool_result',
      status: 'error',
      error: 'exit status 2',
      content: 'grep: x: No such file',
      tool_name: 'grep',
      call_id: 'c-9',
    });
    assert.deepEqual(r.events[1]!.payload, { type: 'tool_result', status: 'error', error: 'tool_error' });
  });

  test('a tool span that succeeded is irrelevant, unless it recorded an exception; older tool span shapes are tool spans too', () => {
    const r = mapTraces(
      tracesOf([
        span({ spanId: '0000000000000001', name: 'execute_tool bash', status: { code: 1, message: '' } }),
        span({ spanId: '0000000000000002', name: 'execute_tool bash', events: [exceptionEvent('CalledProcessError', 'exit 1')] }),
        span({
          spanId: '0000000000000003',
          name: 'ai.toolCall',
          status: { code: 2, message: 'boom' },
          attributes: { 'ai.toolCall.name': 'search', 'ai.toolCall.id': 't-1' },
        }),
        span({
          spanId: '0000000000000004',
          name: 'lookup',
          status: { code: 2, message: 'boom' },
          attributes: { 'openinference.span.kind': 'TOOL', 'tool.name': 'lookup' },
        }),
      ]),
    );
    assert.deepEqual([r.relevant, r.irrelevant], [3, 1]);
    assert.deepEqual(r.events[0]!.payload, { type: 'tool_result', status: 'error', error: 'CalledProcessError: exit 1', tool_name: 'bash' });
    assert.deepEqual(r.events[1]!.payload, { type: 'tool_result', status: 'error', error: 'boom', tool_name: 'search', call_id: 't-1' });
    assert.equal((r.events[2]!.payload as { tool_name: string }).tool_name, 'lookup');
  });

  test('a failed chat span is a model-request failure with the provider text and payload.model_request (deprecated gen_ai.system accepted)', () => {
    const message = '429 Rate limit reached for gpt-4o in organization org-1 on requests per min (RPM): Limit 3, Used 3, Requested 1.';
    const r = mapTraces(
      tracesOf([
        span({
          name: 'chat gpt-4o',
          kind: 3,
          status: { code: 2, message },
          attributes: { 'gen_ai.system': 'openai', 'gen_ai.request.model': 'gpt-4o', 'error.type': 'RateLimitError' },
        }),
      ]),
    );
    const e = r.events[0]!;
    assert.equal(e.kind, 'execution.completed');
    assert.deepEqual(e.payload, {
      state: 'error',
      outcome: { error: message, output: [] },
      model_request: { provider: 'openai', model: 'gpt-4o', error_type: 'RateLimitError', http_status: 429, error: message },
    });
    assert.deepEqual(e.evidence, { errorType: 'RateLimitError', statusMessage: message });
  });

  test('model operations: error.type alone marks a failure; gen_ai.provider.name wins; HTTP status from the attribute or the Python SDK text', () => {
    const r = mapTraces(
      tracesOf([
        span({
          spanId: '0000000000000001',
          name: 'embeddings text-embedding-3',
          attributes: { 'error.type': 'timeout', 'gen_ai.provider.name': 'azure.ai.openai', 'gen_ai.system': 'openai' },
        }),
        span({
          spanId: '0000000000000002',
          name: 'generate_content gemini-2.0',
          status: { code: 2, message: 'model overloaded' },
          attributes: { 'gen_ai.provider.name': 'gcp.gemini', 'http.response.status_code': 503, 'gen_ai.response.model': 'gemini-2.0-flash' },
        }),
        span({
          spanId: '0000000000000003',
          name: 'text_completion claude',
          status: { code: 2, message: "Error code: 529 - {'type': 'error', 'error': {'type': 'overloaded_error'}}" },
        }),
        span({
          spanId: '0000000000000004',
          name: 'ai.generateText.doGenerate',
          status: { code: 2, message: 'Connection error.' },
          events: [exceptionEvent('AI_APICallError', 'Connection error.')],
          attributes: { 'ai.model.provider': 'openai.chat', 'ai.model.id': 'gpt-4o-mini' },
        }),
      ]),
    );
    const requests = r.events.map((e) => e.payload.model_request);
    assert.deepEqual(requests, [
      { provider: 'azure.ai.openai', model: null, error_type: 'timeout', http_status: null, error: 'timeout' },
      { provider: 'gcp.gemini', model: 'gemini-2.0-flash', error_type: null, http_status: 503, error: 'model overloaded' },
      { provider: null, model: null, error_type: null, http_status: 529, error: "Error code: 529 - {'type': 'error', 'error': {'type': 'overloaded_error'}}" },
      { provider: 'openai.chat', model: 'gpt-4o-mini', error_type: 'AI_APICallError', http_status: null, error: 'Connection error.' },
    ]);
  });

  test('a chat span that succeeded is irrelevant; one that recovered from an exception is a recovered error', () => {
    const r = mapTraces(
      tracesOf([
        span({ spanId: '0000000000000001', name: 'chat gpt-4o', status: { code: 1, message: '' } }),
        span({ spanId: '0000000000000002', name: 'chat gpt-4o', events: [exceptionEvent('APIConnectionError', 'Connection error.')] }),
      ]),
    );
    assert.deepEqual([r.relevant, r.irrelevant], [1, 1]);
    assert.deepEqual(r.events[0]!.payload, { state: 'ok', outcome: { output: [{ name: 'stderr', text: 'APIConnectionError: Connection error.' }] } });
  });

  test('an invoke_agent span only matters when it failed', () => {
    const r = mapTraces(
      tracesOf([
        span({ spanId: '0000000000000001', name: 'invoke_agent coder', events: [exceptionEvent('ToolError', 'recovered')] }),
        span({ spanId: '0000000000000002', name: 'invoke_agent coder', status: { code: 2, message: 'max turns exceeded' } }),
      ]),
    );
    assert.deepEqual([r.relevant, r.irrelevant], [1, 1]);
    assert.deepEqual(r.events[0]!.payload, { state: 'error', outcome: { error: 'max turns exceeded', output: [] } });
    assert.equal(r.events[0]!.turnId, TRACE_ID);
  });
});

describe('OTLP mapping: agent CLI events', () => {
  const claude = (eventName: string, attributes: Attributes) =>
    log({
      traceId: undefined,
      spanId: undefined,
      body: `claude_code.${eventName}`,
      attributes: { 'event.name': eventName, 'session.id': 'cc-session', 'prompt.id': 'prompt-7', ...attributes },
    });

  test('Claude Code api_error → model-request failure; the prompt is the turn', () => {
    const r = mapLogs(
      logsOf([
        claude('api_error', { error: 'Overloaded', status_code: '529', model: 'claude-sonnet-4', attempt: '10', request_id: 'req_1' }),
        claude('api_error', { error: 'Connection error.', model: 'claude-sonnet-4' }),
      ]),
    );
    const [a, b] = r.events;
    assert.equal(a!.kind, 'execution.completed');
    assert.deepEqual(a!.payload, {
      state: 'error',
      outcome: { error: 'Overloaded', output: [] },
      model_request: { provider: 'anthropic', model: 'claude-sonnet-4', error_type: null, http_status: 529, error: 'Overloaded', attempt: 10, request_id: 'req_1' },
    });
    assert.deepEqual([a!.partition, a!.turnId, a!.operation], ['cc-session', 'prompt-7', 'api_error']);
    assert.equal((b!.payload.model_request as { http_status: unknown }).http_status, null);
  });

  test('Claude Code tool_result: success "false" → tool error (error, else error_type); "true" → irrelevant', () => {
    const r = mapLogs(
      logsOf([
        claude('tool_result', {
          tool_name: 'Bash',
          tool_use_id: 'toolu_1',
          success: 'false',
          error: 'Exit code 127\nbash: foo: command not found',
          error_type: 'ShellError',
        }),
        claude('tool_result', { tool_name: 'Read', success: 'false', error_type: 'Error:ENOENT' }),
        claude('tool_result', { tool_name: 'Read', success: 'true' }),
      ]),
    );
    assert.deepEqual([r.relevant, r.irrelevant], [2, 1]);
    assert.deepEqual(r.events[0]!.payload, {
      type: 'tool_result',
      status: 'error',
      error: 'Exit code 127\nbash: foo: command not found',
      tool_name: 'Bash',
      call_id: 'toolu_1',
    });
    assert.equal(r.events[0]!.kind, 'tool.result');
    assert.equal(r.events[0]!.operation, 'Bash');
    assert.deepEqual(r.events[1]!.payload, { type: 'tool_result', status: 'error', error: 'Error:ENOENT', tool_name: 'Read' });
  });

  test('Claude Code tool_decision reject → skipped with the source as reason; accept → irrelevant', () => {
    const r = mapLogs(
      logsOf([
        claude('tool_decision', { tool_name: 'Edit', decision: 'reject', source: 'user_reject' }),
        claude('tool_decision', { tool_name: 'Edit', decision: 'accept', source: 'config' }),
      ]),
    );
    assert.deepEqual([r.relevant, r.irrelevant], [1, 1]);
    assert.deepEqual(r.events[0]!.payload, { type: 'tool_result', status: 'skipped', reason: 'user_reject', tool_name: 'Edit' });
  });

  test('Codex events: failed API requests and SSE streams, failed tool results, denied tool calls; conversation.id is the session', () => {
    const codex = (name: string, attributes: Attributes) =>
      log({ eventName: '', attributes: { 'event.name': name, 'conversation.id': 'codex-conv', model: 'gpt-5-codex', ...attributes } });
    const r = mapLogs(
      logsOf(
        [
          codex('codex.api_request', { 'http.response.status_code': 500, 'error.message': 'Internal server error', attempt: 2 }),
          codex('codex.api_request', { 'http.response.status_code': 200, attempt: 1 }),
          codex('codex.sse_event', { 'event.kind': 'response.failed', 'error.message': 'Rate limit reached for gpt-5' }),
          codex('codex.sse_event', { 'error.message': 'idle timeout waiting for SSE' }),
          codex('codex.sse_event', { 'event.kind': 'response.completed' }),
          codex('codex.tool_result', { tool_name: 'shell', call_id: 'call_9', success: 'false', output: 'error: could not compile `app`' }),
          codex('codex.tool_result', { tool_name: 'shell', call_id: 'call_8', success: 'true', output: 'ok' }),
          codex('codex.tool_decision', { tool_name: 'shell', call_id: 'call_7', decision: 'denied', source: 'user' }),
          codex('codex.tool_decision', { tool_name: 'shell', call_id: 'call_6', decision: 'approved', source: 'config' }),
        ],
        { 'service.name': 'codex_cli_rs' },
      ),
    );
    assert.deepEqual([r.relevant, r.irrelevant], [5, 4]);
    assert.deepEqual(
      r.events.map((e) => e.partition),
      Array(5).fill('codex-conv'),
    );
    assert.deepEqual(r.events[0]!.payload.model_request, {
      provider: 'openai',
      model: 'gpt-5-codex',
      error_type: null,
      http_status: 500,
      error: 'Internal server error',
      attempt: 2,
    });
    assert.deepEqual(r.events[1]!.payload.model_request, {
      provider: 'openai',
      model: 'gpt-5-codex',
      error_type: 'response.failed',
      http_status: null,
      error: 'Rate limit reached for gpt-5',
    });
    assert.equal((r.events[2]!.payload.outcome as { error: string }).error, 'idle timeout waiting for SSE');
    assert.deepEqual(r.events[3]!.payload, { type: 'tool_result', status: 'error', error: 'error: could not compile `app`', tool_name: 'shell', call_id: 'call_9' });
    assert.deepEqual(r.events[4]!.payload, { type: 'tool_result', status: 'skipped', reason: 'denied (user)', tool_name: 'shell', call_id: 'call_7' });
  });

  test('Gemini CLI events: api_error → model-request failure; tool_call failures by error_type; rejected calls are skipped', () => {
    const gemini = (name: string, attributes: Attributes) => log({ eventName: name, attributes: { 'session.id': 'gem-1', ...attributes } });
    const r = mapLogs(
      logsOf([
        gemini('gemini_cli.api_error', {
          'error.message': 'Resource has been exhausted (e.g. check quota).',
          error_type: 'RESOURCE_EXHAUSTED',
          status_code: 429,
          model: 'gemini-2.5-pro',
        }),
        gemini('gemini_cli.tool_call', { function_name: 'read_file', success: false, error_type: 'file_not_found', 'gen_ai.tool.call_id': 'g-1' }),
        gemini('gemini_cli.tool_call', { function_name: 'run_shell_command', success: false, decision: 'reject' }),
        gemini('gemini_cli.tool_call', { function_name: 'read_file', success: true, decision: 'auto_accept' }),
      ]),
    );
    assert.deepEqual([r.relevant, r.irrelevant], [3, 1]);
    assert.deepEqual(r.events[0]!.payload.model_request, {
      provider: 'gcp.gemini',
      model: 'gemini-2.5-pro',
      error_type: 'RESOURCE_EXHAUSTED',
      http_status: 429,
      error: 'Resource has been exhausted (e.g. check quota).',
    });
    assert.deepEqual(r.events[1]!.payload, { type: 'tool_result', status: 'error', error: 'file_not_found', tool_name: 'read_file', call_id: 'g-1' });
    assert.deepEqual(r.events[2]!.payload, { type: 'tool_result', status: 'skipped', reason: 'reject', tool_name: 'run_shell_command' });
  });

  test('gen_ai.client.operation.exception → model-request failure from its exception and gen_ai attributes', () => {
    const r = mapLogs(
      logsOf([
        log({
          severityNumber: 13,
          eventName: 'gen_ai.client.operation.exception',
          attributes: {
            'exception.type': 'RateLimitError',
            'exception.message': 'Error code: 429 - rate_limit_exceeded',
            'gen_ai.provider.name': 'openai',
            'gen_ai.request.model': 'gpt-4o',
          },
        }),
      ]),
    );
    assert.deepEqual(r.events[0]!.payload.model_request, {
      provider: 'openai',
      model: 'gpt-4o',
      error_type: 'RateLimitError',
      http_status: 429,
      error: 'Error code: 429 - rate_limit_exceeded',
    });
    assert.equal(r.events[0]!.evidence?.exceptionType, 'RateLimitError');
  });
});

describe('OTLP mapping: the relevance of text below ERROR', () => {
  test('text without a failure or warning marker is irrelevant; with one it is stderr of a successful execution', () => {
    const bodies = [
      'server listening on :3000',
      'Compiled 12 modules',
      'npm ERR! code ELIFECYCLE',
      'bash: jq: command not found',
      'Request FAILED, retrying',
      'WARN deprecated option',
      'Permission denied (publickey)',
    ];
    const r = mapLogs(logsOf(bodies.map((body) => log({ body }))));
    assert.deepEqual([r.relevant, r.irrelevant], [5, 2]);
    assert.deepEqual(
      r.events.map((e) => (e.payload.outcome as { output: Array<{ text: string }> }).output[0]!.text),
      bodies.slice(2),
    );
  });

  test('at ERROR severity any text matters', () => {
    const r = mapLogs(logsOf([log({ severityNumber: 17, body: 'something odd happened' })]));
    assert.equal(r.relevant, 1);
  });
});

describe('OTLP mapping: the partition order', () => {
  test('session.id, gen_ai.conversation.id, conversation.id, mcp.session.id, ai.telemetry.metadata.sessionId, then the resource service.instance.id', () => {
    const keys = ['session.id', 'gen_ai.conversation.id', 'conversation.id', 'mcp.session.id', 'ai.telemetry.metadata.sessionId'];
    for (let i = 0; i < keys.length; i++) {
      const attributes = Object.fromEntries(keys.slice(i).map((k) => [k, `by-${k}`]));
      const r = mapLogs(logsOf([log({ severityNumber: 17, body: 'x', attributes })]));
      assert.equal(r.events[0]!.partition, `by-${keys[i]}`);
    }
    const r = mapLogs(logsOf([log({ severityNumber: 17, body: 'x' })], { 'service.instance.id': 'inst-9', 'mcp.session.id': 'mcp-1' }));
    assert.equal(r.events[0]!.partition, 'mcp-1');
  });
});

describe('OTLP mapping: the session of a trace', () => {
  test('a record in a trace that names no session awaits its trace session; its partition is only the fallback', () => {
    const r = mapTraces(tracesOf([span({ status: { code: 2, message: 'boom' }, parentSpanId: 'aaaaaaaaaaaaaaaa' })]));
    assert.equal(r.events[0]!.partition, 'inst-1');
    assert.equal(r.events[0]!.awaitsSession, true);
    assert.equal(r.events[0]!.parentSpanId, 'aaaaaaaaaaaaaaaa');
    const logged = mapLogs(logsOf([log({ severityNumber: 17, body: 'x' })]));
    assert.equal(logged.events[0]!.awaitsSession, true);
  });

  test('a record that names its session (or whose resource does), or outside any trace, awaits nothing', () => {
    const own = mapTraces(tracesOf([span({ status: { code: 2, message: 'boom' }, attributes: { 'session.id': 's-1' } })]));
    assert.equal(own.events[0]!.awaitsSession, undefined);
    const byResource = mapLogs(logsOf([log({ severityNumber: 17, body: 'x' })], { ...RESOURCE, 'session.id': 's-2' }));
    assert.equal(byResource.events[0]!.awaitsSession, undefined);
    const untraced = mapLogs(logsOf([log({ severityNumber: 17, body: 'x', traceId: undefined, spanId: undefined })]));
    assert.equal(untraced.events[0]!.awaitsSession, undefined);
  });

  test('every record that names a session tells its trace session, kept or not', () => {
    const root = span({ spanId: 'bbbbbbbbbbbbbbbb', name: 'invoke_agent demo', attributes: { 'gen_ai.operation.name': 'invoke_agent', 'session.id': 'sess-root' } });
    const child = span({ spanId: 'cccccccccccccccc', status: { code: 2, message: 'boom' } });
    const r = mapTraces(tracesOf([child, root]));
    assert.equal(r.relevant, 1, 'the successful root is not kept');
    assert.deepEqual([...r.traceSessions], [[TRACE_ID, 'sess-root']]);
  });
});

describe('OTLP mapping: the Vercel AI SDK', () => {
  const metadata = { 'ai.telemetry.metadata.sessionId': 'sess-ai', 'ai.telemetry.metadata.userId': 'user-7' };

  test('ai.telemetry.metadata.sessionId is the session and userId the user', () => {
    const r = mapTraces(tracesOf([span({ name: 'ai.generateText', status: { code: 2, message: 'x' }, attributes: metadata })]));
    assert.equal(r.events[0]!.partition, 'sess-ai');
    assert.equal(r.events[0]!.user, 'user-7');
    assert.equal(r.events[0]!.awaitsSession, undefined);
  });

  test('a failed ai.toolCall is a tool error whose operation is the tool name', () => {
    const r = mapTraces(
      tracesOf([
        span({
          name: 'ai.toolCall',
          status: { code: 2, message: "SyntaxError: Unexpected token '}'" },
          attributes: { ...metadata, 'ai.toolCall.name': 'read_json', 'ai.toolCall.id': 'call_1' },
          events: [
            {
              name: 'exception',
              timeUnixNano: '0',
              timeMs: undefined,
              attributes: { 'exception.type': 'Error', 'exception.message': "SyntaxError: Unexpected token '}'" },
            },
          ],
        }),
      ]),
    );
    const e = r.events[0]!;
    assert.equal(e.kind, 'tool.result');
    assert.equal(e.operation, 'read_json');
    assert.equal(e.payload.tool_name, 'read_json');
    assert.equal(e.payload.call_id, 'call_1');
  });

  test('ai.generateText.doGenerate and ai.streamText.doStream are model requests: provider and model from ai.model.*', () => {
    for (const name of ['ai.generateText.doGenerate', 'ai.streamText.doStream']) {
      const r = mapTraces(
        tracesOf([
          span({
            name,
            status: { code: 2, message: 'Rate limit reached' },
            attributes: { ...metadata, 'ai.model.provider': 'openai.chat', 'ai.model.id': 'gpt-4o-mini' },
          }),
        ]),
      );
      const mr = r.events[0]!.payload.model_request as Record<string, unknown>;
      assert.equal(mr.provider, 'openai.chat', name);
      assert.equal(mr.model, 'gpt-4o-mini', name);
      assert.equal(r.events[0]!.operation, name);
    }
  });
});

describe('OTLP mapping: records without a time of their own', () => {
  test('take the receiver clock, marked clockTime (the dedupe knows them by their id alone); records with a time are not marked', () => {
    const now = () => 42_000;
    const untimed = { startTimeUnixNano: '0', startTimeMs: undefined, endTimeUnixNano: '0', endTimeMs: undefined };
    const spans = mapTraces(
      tracesOf([span({ status: { code: 2, message: 'x' }, ...untimed }), span({ spanId: 'aaaaaaaaaaaaaaaa', status: { code: 2, message: 'x' } })]),
      {
        now,
      },
    ).events;
    assert.deepEqual(
      spans.map((e) => [e.time, e.clockTime]),
      [
        [42_000, true],
        [T0 + 1500, undefined],
      ],
    );
    const logs = mapLogs(
      logsOf([log({ severityNumber: 17, body: TRACEBACK, timeUnixNano: '0', timeMs: undefined }), log({ severityNumber: 17, body: TRACEBACK })]),
      { now },
    ).events;
    assert.deepEqual(
      logs.map((e) => [e.time, e.clockTime]),
      [
        [42_000, true],
        [T0, undefined],
      ],
    );
    // Forwarded only (irrelevant to vigil, kept for a pipeline that forwards): the same.
    const forwarded = mapTraces(tracesOf([span(untimed)]), { now, forward: true }).events;
    assert.deepEqual(
      forwarded.map((e) => [e.time, e.clockTime, e.forwardOnly]),
      [[42_000, true, true]],
    );
  });
});
