/** vigil's own metrics (Prometheus text) and optional own traces (OTLP), in process. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { renderMetrics, family, flattenStats } from '../src/service/metrics.ts';
import { startCaptureServer, type CaptureServer } from './helpers/capture-server.ts';
import { startService } from './helpers/in-process.ts';
import { otlpLogs, postLogs } from './helpers/otlp-logs.ts';
import { attrs, decodeTraceRequest } from './helpers/otlp-decode.ts';
import { freePort, tempDir, waitFor } from './helpers/vigil-process.ts';

const TRACEBACK = 'Traceback (most recent call last):\n  File "/tmp/x.py", line 1, in <module>\nZeroDivisionError: division by zero';

function metricValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-z_]+)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[4]);
  }
  return undefined;
}

describe('self-telemetry', () => {
  const closers: Array<() => Promise<void>> = [];
  after(async () => {
    for (const c of closers.reverse()) await c();
  });

  test('the text format escapes label values and flattens component counters', () => {
    const text = renderMetrics([family('x_total', 'counter', 'help\nline', [{ labels: { a: 'q"u\\o\n' }, value: 2 }])]);
    assert.equal(text, '# HELP x_total help\\nline\n# TYPE x_total counter\nx_total{a="q\\"u\\\\o\\n"} 2\n');
    assert.deepEqual(flattenStats({ logs: { accepted: 3, protocols: { grpc: { accepted: 2 }, 'http-json': { accepted: 1 } } }, lines: 7 }, ['signal'], { receiver: 'r' }, { protocols: 'protocol' }), [
      { labels: { receiver: 'r', signal: 'logs', protocol: 'total', key: 'accepted' }, value: 3 },
      { labels: { receiver: 'r', signal: 'logs', protocol: 'grpc', key: 'accepted' }, value: 2 },
      { labels: { receiver: 'r', signal: 'logs', protocol: 'http-json', key: 'accepted' }, value: 1 },
      { labels: { receiver: 'r', key: 'lines' }, value: 7 },
    ]);
  });

  test('metrics count received, classified, work created and exported; own traces reach the endpoint', async () => {
    const collector: CaptureServer = await startCaptureServer();
    closers.push(() => collector.close());
    const [otlpPort, metricsPort] = [await freePort(), await freePort()];
    const { service } = await startService(`
receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlpPort} } } }
processors:
  classify: {}
  recurrence: {}
exporters:
  file: { path: ${join(tempDir(), 'work.jsonl')} }
state:
  memory: {}
service:
  telemetry:
    metrics: { address: 127.0.0.1:${metricsPort} }
    traces: { endpoint: ${collector.url} }
  pipelines:
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: [file] }
`);
    closers.push(() => service.shutdown());
    const res = await postLogs(`http://127.0.0.1:${otlpPort}/v1/logs`, otlpLogs([1_000, 2_000].map((time) => ({ time, body: TRACEBACK, session: 's' }))));
    assert.equal(res.status, 200);
    const text = await waitFor(async () => {
      const t = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      return metricValue(t, 'vigil_exporter_sent_total', { pipeline: 'logs', exporter: 'file' }) === 1 ? t : undefined;
    }, 'the work event to be exported');
    assert.equal(metricValue(text, 'vigil_up'), 1);
    assert.equal(metricValue(text, 'vigil_ingest_records_total', { outcome: 'appended' }), 2);
    assert.equal(metricValue(text, 'vigil_classified_total', { pipeline: 'logs', classification: 'ExecutionFailure' }), 2);
    assert.equal(metricValue(text, 'vigil_occurrences_total', { pipeline: 'logs' }), 2);
    assert.equal(metricValue(text, 'vigil_work_events_total', { pipeline: 'logs', type: 'created' }), 1);
    assert.equal(metricValue(text, 'vigil_groups'), 1);
    assert.equal(metricValue(text, 'vigil_open_work'), 1);
    assert.equal(metricValue(text, 'vigil_outbox_lag', { pipeline: 'logs', exporter: 'file' }), 0);
    assert.equal(metricValue(text, 'vigil_receiver_counter', { receiver: 'otlp', signal: 'logs', protocol: 'http-json', key: 'accepted' }), 2);
    assert.equal(metricValue(text, 'vigil_receiver_counter', { receiver: 'otlp', signal: 'logs', protocol: 'total', key: 'accepted' }), 2);
    assert.equal(metricValue(text, 'vigil_receiver_counter', { receiver: 'otlp', signal: 'logs', protocol: 'grpc', key: 'accepted' }), 0);
    // Own traces are batched; shutting down flushes them.
    await service.shutdown();
    const names = collector.received
      .filter((r) => r.path === '/v1/traces')
      .flatMap((r) => decodeTraceRequest(r.body).resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans)))
      .map((s: any): [string, unknown] => [s.name, attrs(s.attributes)['vigil.pipeline']]);
    assert.ok(names.some(([n, p]) => n === 'vigil.page' && p === 'logs'), JSON.stringify(names));
    assert.ok(names.some(([n]) => n === 'vigil.export'), JSON.stringify(names));
  });
});
