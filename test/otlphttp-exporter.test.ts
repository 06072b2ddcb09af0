/**
 * The otlphttp exporter, checked at a local capture server with an independent decoder (the
 * OpenTelemetry JS packages' generated OTLP protobuf classes), not vigil's receiver.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { DEFAULT_DELIVERY, ExportError } from '../src/exporters/delivery.ts';
import { otlpHttpExporterFactory } from '../src/exporters/otlphttp/factory.ts';
import { occurrenceSpanIds } from '../src/exporters/otlphttp/occurrence-span.ts';
import { memoryLogger } from '../src/logger.ts';
import type { ForwardRecord } from '../src/model/forward.ts';
import type { OutboxEntry, WorkEvent } from '../src/model/work.ts';
import { startCaptureServer, type CaptureServer } from './helpers/capture-server.ts';
import { attrs, decodeLogsRequest, decodeTraceRequest } from './helpers/otlp-decode.ts';

const CAUSE = { trace: '4bf92f3577b34da6a3ce929d0e0e4736', span: '00f067aa0ba902b7' };

function work(seq: number, over: Partial<WorkEvent['data']> = {}): OutboxEntry {
  const id = `evt-${seq}`;
  return {
    kind: 'work',
    seq,
    id,
    event: {
      specversion: '1.0',
      id,
      source: 'vigil/agent',
      type: seq === 1 ? 'dev.vigil.work.created' : 'dev.vigil.work.updated',
      time: '2026-01-01T00:00:05.000Z',
      subject: 'g_1',
      datacontenttype: 'application/json',
      data: {
        work_id: 'w_1',
        group_key: 'g_1',
        occurrence_id: `o_${seq}`,
        classification: 'ExecutionFailure',
        decision: 'BurstThresholdReached',
        signature: 'ZeroDivisionError: division by zero',
        fingerprint: 'v2:abc',
        count: seq + 1,
        first_seen: '2026-01-01T00:00:00.000Z',
        last_seen: '2026-01-01T00:00:05.000Z',
        partition: 'sess-1',
        revision: '1.2.3',
        operation: 'execute_tool run_python',
        trace_id: CAUSE.trace,
        span_id: CAUSE.span,
        evidence: { kind: 'execution.completed', source: 'otlp.traces', event_id: 'e', excerpt: null },
        ...over,
      },
    },
  };
}

const forwardedSpan: ForwardRecord = {
  signal: 'traces',
  resource: { 'service.name': 'agent', 'service.version': '1.2.3' },
  scope: { name: 'agent-tracer', version: '0.1.0', attributes: {} },
  span: {
    traceId: CAUSE.trace,
    spanId: CAUSE.span,
    parentSpanId: undefined,
    traceState: '',
    name: 'execute_tool run_python',
    kind: 1,
    startTimeUnixNano: '1767225600123456789',
    startTimeMs: undefined,
    endTimeUnixNano: '1767225605987654321',
    endTimeMs: undefined,
    attributes: { 'gen_ai.tool.name': 'run_python', 'gen_ai.operation.name': 'execute_tool' },
    events: [{ name: 'exception', timeUnixNano: '1767225605000000001', timeMs: undefined, attributes: { 'exception.type': 'ZeroDivisionError' } }],
    links: [],
    status: { code: 2, message: 'division by zero' },
  },
  enrichment: {
    'vigil.classification': 'ExecutionFailure',
    'vigil.signature': 'ZeroDivisionError: division by zero',
    'vigil.fingerprint': 'v2:abc',
    'vigil.occurrence.id': 'o_1',
  },
};

const forwardedLog: ForwardRecord = {
  signal: 'logs',
  resource: { 'service.name': 'agent' },
  scope: { name: 'agent-logger', version: '', attributes: {} },
  log: {
    timeUnixNano: '1767225601000000042',
    timeMs: undefined,
    observedTimeUnixNano: '1767225601000000099',
    observedTimeMs: undefined,
    severityNumber: 9,
    severityText: 'INFO',
    body: 'all good',
    attributes: { 'session.id': 'sess-1' },
    traceId: undefined,
    spanId: undefined,
    eventName: '',
    flags: 0,
  },
};

describe('otlphttp exporter', () => {
  const servers: CaptureServer[] = [];
  after(() => Promise.all(servers.map((s) => s.close())));
  const make = (endpoint: string, over: Record<string, unknown> = {}) =>
    otlpHttpExporterFactory.create(
      { id: 'otlphttp', logger: memoryLogger() },
      {
        endpoint,
        headers: { 'x-api-key': 'vendor-key' },
        compression: 'gzip',
        encoding: 'proto',
        timeout: 2000,
        forward: false,
        occurrence_spans: 'work',
        ...DEFAULT_DELIVERY,
        ...over,
      },
    );

  test('occurrence spans (protobuf, gzip): linked to the causal span, with the DESIGN 4.3 attributes and stable ids', async () => {
    const server = await startCaptureServer();
    servers.push(server);
    const ex = make(server.url);
    await ex.export([work(1), work(2, { trace_id: null, span_id: null })]);
    await ex.export([work(1)]); // a redelivery
    assert.equal(server.received.length, 2);
    const req = server.received[0]!;
    assert.equal(req.path, '/v1/traces');
    assert.equal(req.headers['content-type'], 'application/x-protobuf');
    assert.equal(req.headers['content-encoding'], 'gzip');
    assert.equal(req.headers['x-api-key'], 'vendor-key');
    const decoded = decodeTraceRequest(req.body);
    const rs = decoded.resourceSpans[0];
    assert.equal(attrs(rs.resource.attributes)['service.name'], 'vigil');
    const [first, second] = rs.scopeSpans[0].spans;
    assert.equal(first.name, 'vigil.occurrence');
    assert.deepEqual({ traceId: first.traceId, spanId: first.spanId }, occurrenceSpanIds('evt-1'));
    assert.equal(first.links.length, 1);
    assert.equal(first.links[0].traceId, CAUSE.trace);
    assert.equal(first.links[0].spanId, CAUSE.span);
    assert.equal(first.status.code, 2);
    assert.equal(first.startTimeUnixNano, String(Date.parse('2026-01-01T00:00:05.000Z') * 1e6));
    const a = attrs(first.attributes);
    assert.deepEqual(
      {
        occ: a['vigil.occurrence.id'],
        group: a['vigil.group.key'],
        work: a['vigil.work.id'],
        decision: a['vigil.decision'],
        cls: a['vigil.classification'],
        type: a['error.type'],
        sig: a['vigil.signature'],
        fp: a['vigil.fingerprint'],
        session: a['session.id'],
      },
      {
        occ: 'o_1',
        group: 'g_1',
        work: 'w_1',
        decision: 'BurstThresholdReached',
        cls: 'ExecutionFailure',
        type: 'ZeroDivisionError',
        sig: 'ZeroDivisionError: division by zero',
        fp: 'v2:abc',
        session: 'sess-1',
      },
    );
    assert.equal(second.links?.length ?? 0, 0, 'no causal span, no link');
    const again = decodeTraceRequest(server.received[1]!.body).resourceSpans[0].scopeSpans[0].spans[0];
    assert.deepEqual([again.traceId, again.spanId], [first.traceId, first.spanId], 'a redelivered event is the same span');
  });

  test('JSON encoding uses hex ids and the same content', async () => {
    const server = await startCaptureServer();
    servers.push(server);
    await make(server.url, { encoding: 'json', compression: 'none' }).export([work(1)]);
    const req = server.received[0]!;
    assert.equal(req.headers['content-type'], 'application/json');
    const span = JSON.parse(req.body.toString()).resourceSpans[0].scopeSpans[0].spans[0];
    assert.equal(span.traceId, occurrenceSpanIds('evt-1').traceId);
    assert.equal(span.links[0].traceId, CAUSE.trace);
  });

  test('forward: received spans and logs go on complete, enriched, with exact times and ids', async () => {
    const server = await startCaptureServer();
    servers.push(server);
    await make(server.url, { forward: true }).export([
      { kind: 'forward', seq: 1, id: 'f1', signal: 'traces', record: forwardedSpan },
      { kind: 'forward', seq: 2, id: 'f2', signal: 'logs', record: forwardedLog },
    ]);
    const traces = server.received.find((r) => r.path === '/v1/traces')!;
    const logs = server.received.find((r) => r.path === '/v1/logs')!;
    const rs = decodeTraceRequest(traces.body).resourceSpans[0];
    assert.equal(attrs(rs.resource.attributes)['service.name'], 'agent');
    assert.equal(rs.scopeSpans[0].scope.name, 'agent-tracer');
    const span = rs.scopeSpans[0].spans[0];
    assert.equal(span.traceId, CAUSE.trace);
    assert.equal(span.spanId, CAUSE.span);
    assert.equal(span.kind, 1);
    assert.equal(span.startTimeUnixNano, '1767225600123456789');
    assert.equal(span.endTimeUnixNano, '1767225605987654321');
    assert.equal(span.events[0].timeUnixNano, '1767225605000000001');
    assert.equal(span.status.code, 2);
    const a = attrs(span.attributes);
    assert.equal(a['gen_ai.tool.name'], 'run_python');
    assert.equal(a['vigil.signature'], 'ZeroDivisionError: division by zero');
    assert.equal(a['vigil.occurrence.id'], 'o_1');
    const log = decodeLogsRequest(logs.body).resourceLogs[0].scopeLogs[0].logRecords[0];
    assert.equal(log.timeUnixNano, '1767225601000000042');
    assert.equal(log.observedTimeUnixNano, '1767225601000000099');
    assert.equal(log.body.stringValue, 'all good');
    assert.equal(attrs(log.attributes)['session.id'], 'sess-1');
    assert.equal(attrs(log.attributes)['vigil.classification'], undefined, 'records without failure evidence are not enriched');
  });

  test('without forward: true, forwarded records are not sent', async () => {
    const server = await startCaptureServer();
    servers.push(server);
    await make(server.url).export([{ kind: 'forward', seq: 1, id: 'f1', signal: 'traces', record: forwardedSpan }]);
    assert.equal(server.received.length, 0);
  });

  test('occurrence_spans: all makes one span per counted occurrence (ids from the occurrence id), none from work events', async () => {
    const server = await startCaptureServer();
    servers.push(server);
    const occ = (id: string, workId: string | null): OutboxEntry => ({
      kind: 'occurrence',
      seq: 1,
      id,
      occurrence: {
        occurrence_id: id,
        group_key: 'g_1',
        work_id: workId,
        decision: workId ? 'BurstThresholdReached' : 'BurstCoalesced',
        classification: 'ExecutionFailure',
        signature: 'KeyError: missing',
        fingerprint: 'v2:k',
        count: 1,
        time: '2026-01-01T00:00:00.000Z',
        service: 'agent',
        partition: 'sess-1',
        revision: 'r',
        operation: null,
        trace_id: CAUSE.trace,
        span_id: CAUSE.span,
        suppressed: null,
      },
    });
    await make(server.url, { occurrence_spans: 'all' }).export([occ('o_a', null), work(1), occ('o_b', 'w_1')]);
    const spans = decodeTraceRequest(server.received[0]!.body).resourceSpans[0].scopeSpans[0].spans;
    assert.deepEqual(
      spans.map((s: any) => s.spanId),
      [occurrenceSpanIds('o_a').spanId, occurrenceSpanIds('o_b').spanId],
    );
    const first = attrs(spans[0].attributes);
    assert.equal(first['vigil.decision'], 'BurstCoalesced');
    assert.equal(first['vigil.work.id'], undefined, 'an occurrence that made no work has no work id');
    assert.equal(first['error.type'], 'KeyError');
    assert.equal(spans[0].links[0].spanId, CAUSE.span);
    assert.equal(attrs(spans[1].attributes)['vigil.work.id'], 'w_1');
  });

  test('a 400 is a permanent failure; a 503 is transient', async () => {
    const server = await startCaptureServer(0, (_req, res) => {
      res.writeHead(400);
      res.end();
    });
    servers.push(server);
    await assert.rejects(make(server.url).export([work(1)]), (err: unknown) => err instanceof ExportError && err.permanent && /HTTP 400/.test(err.message));
    server.respond = (_req, res) => {
      res.writeHead(503);
      res.end();
    };
    await assert.rejects(make(server.url, { timeout: 300 }).export([work(1)]), (err: unknown) => err instanceof ExportError && !err.permanent);
  });
});
