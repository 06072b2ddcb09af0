import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { decodeLogsJson, decodeTracesJson } from '../src/receivers/otlp/json.ts';
import { isErrorSeverity, mapLogs, mapTraces } from '../src/receivers/otlp/mapping.ts';
import type { Attributes, NormalizedLog, NormalizedLogs, NormalizedSpan, NormalizedTraces } from '../src/receivers/otlp/normalized.ts';

const EXAMPLES = path.resolve(import.meta.dirname, 'fixtures/otlp-examples');

const TRACEBACK =
  'Traceback (most recent call last):\n  File "/tmp/x.py", line 1, in <module>\n    1/0\n    ~^~\nZeroDivisionError: division by zero';
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
    name: 'execute_tool python',
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
          attributes: { 'exception.type': 'ZeroDivisionError', 'exception.message': 'division by zero', 'exception.stacktrace': TRACEBACK, 'error.type': 'ZeroDivisionError' },
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
    const r = mapLogs(logsOf([log({ body: { kind: 'execution.completed', payload } }), log({ body: JSON.stringify({ kind: 'scratchpad', payload: { type: 'tool_result', status: 'skipped' } }) })]));
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
    const r = mapLogs(logsOf([log({ eventName: 'claude_code.api_error', body: 'x' }), log({ attributes: { 'gen_ai.tool.name': 'bash' }, body: 'y' })]));
    assert.equal(r.events[0]!.operation, 'claude_code.api_error');
    assert.equal(r.events[1]!.operation, 'bash');
  });

  test('time falls back to the observed time, then to the clock', () => {
    const r = mapLogs(
      logsOf([
        log({ timeUnixNano: '0', timeMs: undefined, observedTimeMs: T0 + 5, observedTimeUnixNano: `${T0 + 5}000000`, body: 'a' }),
        log({ timeUnixNano: '0', timeMs: undefined, body: 'b' }),
      ]),
      { now: () => 42 },
    );
    assert.deepEqual(r.events.map((e) => e.time), [T0 + 5, 42]);
  });

  test('the official logs.json example maps to a stderr event; events.json is irrelevant', () => {
    const l = mapLogs(decodeLogsJson(readFileSync(path.join(EXAMPLES, 'logs.json'))).groups);
    assert.equal(l.relevant, 1);
    assert.equal(l.events[0]!.service, 'my.service');
    const e = mapLogs(decodeLogsJson(readFileSync(path.join(EXAMPLES, 'events.json'))).groups);
    assert.deepEqual([e.relevant, e.irrelevant], [0, 1]);
  });
});

describe('OTLP mapping: event identity', () => {
  test('the same log content gives the same event id, whatever the attribute order', () => {
    const a = log({ body: 'x', attributes: { b: 2, a: { y: 1, x: [1, 2] } } });
    const b = log({ body: 'x', attributes: { a: { x: [1, 2], y: 1 }, b: 2 } });
    const [ea, eb] = mapLogs(logsOf([a, b])).events;
    assert.equal(ea!.eventId, eb!.eventId);
  });

  test('different content, time, severity or service gives a different event id', () => {
    const base = mapLogs(logsOf([log({ body: 'x' })])).events[0]!.eventId;
    const variants = [
      mapLogs(logsOf([log({ body: 'y' })])),
      mapLogs(logsOf([log({ body: 'x', timeUnixNano: '1' })])),
      mapLogs(logsOf([log({ body: 'x', severityNumber: 10 })])),
      mapLogs(logsOf([log({ body: 'x', attributes: { k: 1 } })])),
      mapLogs(logsOf([log({ body: 'x' })], { 'service.name': 'other' })),
    ].map((r) => r.events[0]!.eventId);
    for (const v of variants) assert.notEqual(v, base);
    assert.equal(new Set(variants).size, variants.length);
  });

  test('log.record.uid is the event id when present', () => {
    const r = mapLogs(logsOf([log({ body: 'x', attributes: { 'log.record.uid': '01HZX3J2V6Y7' } })]));
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
    assert.equal(e.operation, 'execute_tool python');
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
          events: [{ name: 'exception', timeUnixNano: '0', timeMs: undefined, attributes: { 'exception.type': 'RateLimitError', 'exception.message': '429 Rate limit reached' } }],
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
      tracesOf([span({ events: [{ name: 'exception', timeUnixNano: '0', timeMs: undefined, attributes: { 'exception.type': 'ValueError', 'exception.message': 'retrying' } }] })]),
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
