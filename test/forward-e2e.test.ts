/**
 * Forwarding end to end: the SDK sends spans and logs to vigil, vigil's otlphttp exporter with
 * `forward: true` sends them on; a capture server decodes them with the OpenTelemetry JS packages'
 * own protobuf classes. Every record arrives (not only failures), with its ids and times as sent,
 * the failing ones enriched with vigil's diagnosis, next to the occurrence span.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { SpanStatusCode } from '@opentelemetry/api';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { startCaptureServer, type CaptureServer } from './helpers/capture-server.ts';
import { startService } from './helpers/in-process.ts';
import { attrs, decodeLogsRequest, decodeTraceRequest } from './helpers/otlp-decode.ts';
import { freePort, waitFor } from './helpers/vigil-process.ts';

const closers: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of closers.reverse()) await c();
});

test('forward: true sends every received span and log on, enriched where vigil found a failure', async () => {
  const downstream: CaptureServer = await startCaptureServer();
  closers.push(() => downstream.close());
  const otlpPort = await freePort();
  const { service } = await startService(`
receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlpPort} } } }
processors:
  classify: {}
  recurrence: { min_recurrence: 1 }
exporters:
  otlphttp: { endpoint: ${downstream.url}, forward: true, retry_on_failure: { initial_interval: 50ms } }
state:
  memory: {}
service:
  pipelines:
    traces: { receivers: [otlp], processors: [classify, recurrence], exporters: [otlphttp] }
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: [otlphttp] }
`);
  closers.push(() => service.shutdown());

  const resource = resourceFromAttributes({ 'service.name': 'sdk-agent', 'session.id': 'sess-fwd' });
  const tracerProvider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `http://127.0.0.1:${otlpPort}/v1/traces` }))],
  });
  const loggerProvider = new LoggerProvider({
    resource,
    processors: [new BatchLogRecordProcessor({ exporter: new OTLPLogExporter({ url: `http://127.0.0.1:${otlpPort}/v1/logs` }) })],
  });
  const tracer = tracerProvider.getTracer('agent');
  const ok = tracer.startSpan('execute_tool list_files', { attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'list_files' } });
  ok.end();
  const failing = tracer.startSpan('run_job');
  failing.recordException(new TypeError("Cannot read properties of undefined (reading 'length')"));
  failing.setStatus({ code: SpanStatusCode.ERROR, message: 'job failed' });
  failing.end();
  const logger = loggerProvider.getLogger('agent');
  logger.emit({ severityNumber: SeverityNumber.INFO, body: 'starting turn 3' });
  logger.emit({ severityNumber: SeverityNumber.ERROR, body: 'Error: ENOENT: no such file or directory, open /tmp/x/config.json' });
  await tracerProvider.forceFlush();
  await loggerProvider.forceFlush();
  await tracerProvider.shutdown();
  await loggerProvider.shutdown();

  const spans = () =>
    downstream.received
      .filter((r) => r.path === '/v1/traces')
      .flatMap((r) =>
        decodeTraceRequest(r.body).resourceSpans.flatMap((rs: any) =>
          rs.scopeSpans.flatMap((ss: any) => ss.spans.map((s: any) => ({ ...s, resource: attrs(rs.resource.attributes) }))),
        ),
      );
  const logs = () =>
    downstream.received
      .filter((r) => r.path === '/v1/logs')
      .flatMap((r) => decodeLogsRequest(r.body).resourceLogs.flatMap((rl: any) => rl.scopeLogs.flatMap((sl: any) => sl.logRecords)));
  await waitFor(() => (spans().length >= 4 && logs().length >= 2 ? true : undefined), 'forwarded spans, logs and occurrence spans');

  const byName = new Map(spans().map((s: any) => [s.name, s]));
  const fwdOk = byName.get('execute_tool list_files');
  const fwdFailing = byName.get('run_job');
  assert.ok(fwdOk && fwdFailing, [...byName.keys()].join(', '));
  assert.equal(fwdOk.traceId, ok.spanContext().traceId);
  assert.equal(fwdOk.spanId, ok.spanContext().spanId);
  assert.equal(fwdOk.resource['service.name'], 'sdk-agent');
  assert.equal(attrs(fwdOk.attributes)['vigil.classification'], undefined, 'a successful span is forwarded unchanged');
  const fa = attrs(fwdFailing.attributes);
  assert.equal(fa['vigil.classification'], 'ExecutionFailure');
  assert.match(String(fa['vigil.signature']), /^TypeError: Cannot read properties of undefined/);
  assert.match(String(fa['vigil.fingerprint']), /^v\d+:/);
  assert.ok(fa['vigil.occurrence.id']);
  assert.equal(fwdFailing.events[0].name, 'exception');
  // The occurrence span links to the failing span it came from.
  const occurrences = spans().filter((s: any) => s.name === 'vigil.occurrence');
  assert.ok(occurrences.some((s: any) => s.links?.[0]?.spanId === failing.spanContext().spanId));

  const bodies = logs().map((l: any) => [l.body.stringValue, attrs(l.attributes)['vigil.classification'] ?? null]);
  assert.deepEqual(bodies.sort(), [
    ['Error: ENOENT: no such file or directory, open /tmp/x/config.json', 'ExecutionFailure'],
    ['starting turn 3', null],
  ]);
});
