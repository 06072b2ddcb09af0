/**
 * Real OpenTelemetry JS SDK exporters against a running vigil (an in-process Service built from a
 * pipeline config: otlp receiver on HTTP and gRPC, classify, recurrence, file exporter): the trace
 * and log exporters over OTLP/HTTP JSON, OTLP/HTTP protobuf and OTLP/gRPC, all with gzip. Every
 * record is accepted, and the failures the SDK recorded come out of the pipeline as work events
 * with the right signature.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { ExportResultCode } from '@opentelemetry/core';
import type { ExportResult } from '@opentelemetry/core';
import { OTLPLogExporter as GrpcLogExporter } from '@opentelemetry/exporter-logs-otlp-grpc';
import { OTLPLogExporter as JsonLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as ProtoLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPTraceExporter as GrpcTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { CompressionAlgorithm } from '@opentelemetry/otlp-exporter-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import type { LogRecordExporter, ReadableLogRecord } from '@opentelemetry/sdk-logs';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { components } from '../src/components.ts';
import { loadConfigText } from '../src/config/load.ts';
import { createLogger } from '../src/logger.ts';
import type { OtlpReceiverStats } from '../src/receivers/otlp/ingest.ts';
import { Service } from '../src/service/service.ts';
import { freePort, tempDir, waitFor } from './helpers/vigil-process.ts';
import { writtenJsonLines } from './helpers/work-file.ts';

type Protocol = 'http-json' | 'http-protobuf' | 'grpc';
const PROTOCOLS: Protocol[] = ['http-json', 'http-protobuf', 'grpc'];

const PYTHON_TRACEBACK = [
  'Traceback (most recent call last):',
  '  File "/srv/agent/tools/calc.py", line 12, in run',
  '    return total / count',
  '           ~~~~~~^~~~~~~',
  'ZeroDivisionError: division by zero',
].join('\n');
const LOG_TRACEBACK = [
  'Traceback (most recent call last):',
  '  File "/srv/agent/load.py", line 3, in <module>',
  "    open('data.csv')",
  "FileNotFoundError: [Errno 2] No such file or directory: 'data.csv'",
].join('\n');
const RATE_LIMIT = '429 Rate limit reached for gpt-4o in organization org-abc on requests per min (RPM): Limit 3, Used 3, Requested 1.';

function exporters(protocol: Protocol, httpUrl: string, grpcUrl: string): { traces: SpanExporter; logs: LogRecordExporter } {
  const compression = CompressionAlgorithm.GZIP;
  switch (protocol) {
    case 'http-json':
      return { traces: new JsonTraceExporter({ url: `${httpUrl}/v1/traces`, compression }), logs: new JsonLogExporter({ url: `${httpUrl}/v1/logs`, compression }) };
    case 'http-protobuf':
      return {
        traces: new ProtoTraceExporter({ url: `${httpUrl}/v1/traces`, compression }),
        logs: new ProtoLogExporter({ url: `${httpUrl}/v1/logs`, compression }),
      };
    case 'grpc':
      return { traces: new GrpcTraceExporter({ url: grpcUrl, compression }), logs: new GrpcLogExporter({ url: grpcUrl, compression }) };
  }
}

/** One agent turn recorded with the SDK: a failing tool, a rate-limited model call, a crashed Python step, and spans that succeed. */
async function recordTurn(session: string): Promise<{ spans: ReadableSpan[]; toolSpan: { traceId: string; spanId: string } }> {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'sdk-agent', 'service.version': '2.0.0' }),
    spanProcessors: [new SimpleSpanProcessor(memory)],
  });
  const tracer = provider.getTracer('sdk-agent', '2.0.0');
  const attributes = { 'session.id': session };
  const agent = tracer.startSpan('invoke_agent coder', { attributes: { ...attributes, 'gen_ai.operation.name': 'invoke_agent' } });
  const ctx = trace.setSpan(context.active(), agent);

  const tool = tracer.startSpan('execute_tool read_file', { attributes: { ...attributes, 'gen_ai.tool.name': 'read_file', 'gen_ai.tool.call.id': 'call_1' } }, ctx);
  tool.recordException(new Error("ENOENT: no such file or directory, open '/tmp/agent/notes.md'"));
  tool.setStatus({ code: SpanStatusCode.ERROR, message: "ENOENT: no such file or directory, open '/tmp/agent/notes.md'" });
  tool.end();

  const chat = tracer.startSpan(
    'chat gpt-4o',
    { kind: SpanKind.CLIENT, attributes: { ...attributes, 'gen_ai.system': 'openai', 'gen_ai.request.model': 'gpt-4o', 'error.type': 'RateLimitError' } },
    ctx,
  );
  chat.setStatus({ code: SpanStatusCode.ERROR, message: RATE_LIMIT });
  chat.end();

  const ok = tracer.startSpan('chat gpt-4o', { kind: SpanKind.CLIENT, attributes: { ...attributes, 'gen_ai.provider.name': 'openai' } }, ctx);
  ok.end();

  const python = tracer.startSpan('run python', { attributes }, ctx);
  python.recordException({ name: 'ZeroDivisionError', message: 'division by zero', stack: PYTHON_TRACEBACK });
  python.setStatus({ code: SpanStatusCode.ERROR });
  python.end();
  agent.end();

  await provider.forceFlush();
  const spans = memory.getFinishedSpans();
  await provider.shutdown();
  return { spans, toolSpan: tool.spanContext() };
}

/** Log records from the SDK: a Python traceback on stderr, a Claude Code tool_result event, and chatter. */
async function recordLogs(session: string): Promise<ReadableLogRecord[]> {
  const memory = new InMemoryLogRecordExporter();
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': 'sdk-agent', 'service.version': '2.0.0' }),
    processors: [new SimpleLogRecordProcessor({ exporter: memory })],
  });
  const logger = provider.getLogger('sdk-agent');
  logger.emit({ severityNumber: SeverityNumber.ERROR, severityText: 'ERROR', body: LOG_TRACEBACK, attributes: { 'session.id': session } });
  logger.emit({
    eventName: 'claude_code.tool_result',
    body: 'claude_code.tool_result',
    attributes: {
      'session.id': session,
      'event.name': 'tool_result',
      tool_name: 'Read',
      tool_use_id: 'toolu_1',
      success: 'false',
      error: "Error: EACCES: permission denied, open '/etc/shadow'",
    },
  });
  logger.emit({ severityNumber: SeverityNumber.INFO, body: 'listening on port 3000', attributes: { 'session.id': session } });
  await provider.forceFlush();
  const records = memory.getFinishedLogRecords();
  await provider.shutdown();
  return records;
}

function exportWith<T>(exporter: { export(items: T[], done: (r: ExportResult) => void): void }, items: T[]): Promise<ExportResult> {
  return new Promise((resolve) => exporter.export(items, resolve));
}

function readWorkEvents(file: string): Array<Record<string, any>> {
  return writtenJsonLines(file);
}

describe('the OpenTelemetry JS SDK exporters against a running vigil', () => {
  let service: Service;
  let workFile: string;
  let httpUrl: string;
  let grpcUrl: string;
  const toolSpans = new Map<Protocol, { traceId: string; spanId: string }>();

  before(async () => {
    const dir = tempDir('vigil-sdk-');
    workFile = join(dir, 'work-events.jsonl');
    const [httpPort, grpcPort] = [await freePort(), await freePort()];
    httpUrl = `http://127.0.0.1:${httpPort}`;
    grpcUrl = `http://127.0.0.1:${grpcPort}`;
    const config = loadConfigText(
      `receivers:
  otlp:
    protocols:
      http: { endpoint: 127.0.0.1:${httpPort} }
      grpc: { endpoint: 127.0.0.1:${grpcPort} }
processors:
  classify: {}
  recurrence: { min_recurrence: 1, grouping_window: 60s, scope: session }
exporters:
  file/work: { path: ${workFile} }
state:
  memory: {}
service:
  pipelines:
    traces: { receivers: [otlp], processors: [classify, recurrence], exporters: [file/work] }
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: [file/work] }
`,
      'pipeline.yaml',
      components(),
    );
    service = new Service(config, components(), { logger: createLogger({ level: 'error' }) });
    await service.start();
  });
  after(() => service.shutdown());

  for (const protocol of PROTOCOLS) {
    test(`${protocol} with gzip: every span and log record is accepted`, async () => {
      const { traces, logs } = exporters(protocol, httpUrl, grpcUrl);
      try {
        const turn = await recordTurn(`sess-${protocol}`);
        toolSpans.set(protocol, turn.toolSpan);
        const tracesResult = await exportWith(traces, turn.spans);
        assert.equal(tracesResult.code, ExportResultCode.SUCCESS, String(tracesResult.error));
        const logsResult = await exportWith(logs, await recordLogs(`sess-${protocol}`));
        assert.equal(logsResult.code, ExportResultCode.SUCCESS, String(logsResult.error));
      } finally {
        await traces.shutdown();
        await logs.shutdown();
      }
      const stats = ((await service.status()).receivers as Record<string, OtlpReceiverStats>).otlp!;
      const t = stats.traces.protocols[protocol];
      const l = stats.logs.protocols[protocol];
      // 5 spans: 3 failures (tool, model request, Python step) and 2 that succeeded; 3 log records: 2 failures and chatter.
      assert.deepEqual([t.requests, t.refused, t.accepted, t.rejected, t.irrelevant, t.appended], [1, 0, 5, 0, 2, 3], JSON.stringify(t));
      assert.deepEqual([l.requests, l.refused, l.accepted, l.rejected, l.irrelevant, l.appended], [1, 0, 3, 0, 1, 2], JSON.stringify(l));
    });
  }

  test('the recorded failures come out classified, with their signature, per session', async () => {
    const events = await waitFor(() => {
      const e = readWorkEvents(workFile);
      return e.length >= 5 * PROTOCOLS.length ? e : undefined;
    }, 'a work event for every failure');
    for (const protocol of PROTOCOLS) {
      const mine = events.filter((e) => e.data.partition === `sess-${protocol}`);
      assert.ok(
        mine.every((e) => e.type === 'dev.vigil.work.created' && e.data.classification === 'ExecutionFailure'),
        JSON.stringify(mine, null, 1),
      );
      const signatures = mine.map((e) => e.data.signature as string).sort();
      assert.equal(signatures.length, 5, `${protocol}: ${signatures.join(' | ')}`);
      const expected = [
        "Error: ENOENT: no such file or directory, open '/tmp/agent/notes.md'",
        "Error: EACCES: permission denied, open '/etc/shadow'",
        "FileNotFoundError: [Errno 2] No such file or directory: 'data.csv'",
        'ZeroDivisionError: division by zero',
      ];
      for (const s of expected) assert.ok(signatures.includes(s), `${protocol}: missing '${s}' in ${signatures.join(' | ')}`);
      assert.ok(
        signatures.some((s) => s.includes('429 Rate limit reached for gpt-4o')),
        `${protocol}: ${signatures.join(' | ')}`,
      );
      // The causal span is kept: the tool failure points at the SDK's tool span.
      const tool = mine.find((e) => e.data.signature.startsWith('Error: ENOENT'))!;
      assert.deepEqual([tool.data.trace_id, tool.data.span_id], [toolSpans.get(protocol)!.traceId, toolSpans.get(protocol)!.spanId]);
      assert.equal(tool.data.revision, '2.0.0');
    }
  });
});
