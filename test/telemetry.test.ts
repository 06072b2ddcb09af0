/** vigil's own metrics (Prometheus text) and optional own traces (OTLP), in process. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { componentFamilies, family, renderMetrics } from '../src/service/metrics.ts';
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

/**
 * Prometheus and Collector conventions over a whole scrape: every family has HELP and TYPE once,
 * counters and only counters end in `_total`, names are `vigil_` + snake case, and each family has
 * one set of label names (one meaning; labels only split it).
 */
function assertConventions(text: string): void {
  const helps = new Map<string, string>();
  const types = new Map<string, string>();
  const labelSets = new Map<string, Set<string>>();
  for (const line of text.trimEnd().split('\n')) {
    let m: RegExpExecArray | null;
    if ((m = /^# HELP (\S+) (.+)$/.exec(line))) {
      assert.ok(!helps.has(m[1]!), `${m[1]} has two HELP lines`);
      helps.set(m[1]!, m[2]!);
    } else if ((m = /^# TYPE (\S+) (counter|gauge)$/.exec(line))) {
      types.set(m[1]!, m[2]!);
    } else {
      m = /^([a-z_]+)(?:\{(.*)\})? \S+$/.exec(line);
      assert.ok(m, `not a sample line: ${line}`);
      const names = [...(m[2] ?? '').matchAll(/(\w+)="/g)].map((x) => x[1]).join(',');
      if (!labelSets.has(m[1]!)) labelSets.set(m[1]!, new Set());
      labelSets.get(m[1]!)!.add(names);
    }
  }
  assert.ok(types.size >= 20, `only ${types.size} families`);
  for (const [name, type] of types) {
    assert.match(name, /^vigil_[a-z]+(_[a-z]+)*$/);
    assert.ok((helps.get(name) ?? '').length > 10, `${name} has no HELP text`);
    assert.equal(name.endsWith('_total'), type === 'counter', `${name} is a ${type}`);
    assert.ok((labelSets.get(name)?.size ?? 0) <= 1, `${name} mixes label sets: ${[...(labelSets.get(name) ?? [])].join(' | ')}`);
  }
}

describe('self-telemetry', () => {
  const closers: Array<() => Promise<void>> = [];
  after(async () => {
    for (const c of closers.reverse()) await c();
  });

  test('the text format escapes label values; the samples of components become families labelled with their id', () => {
    const text = renderMetrics([family('x_total', 'counter', 'help\nline', [{ labels: { a: 'q"u\\o\n' }, value: 2 }])]);
    assert.equal(text, '# HELP x_total help\\nline\n# TYPE x_total counter\nx_total{a="q\\"u\\\\o\\n"} 2\n');
    const sample = (name: string, value: number) => ({ name, type: 'counter' as const, help: `${name} help`, labels: { signal: 'logs' }, value });
    const families = componentFamilies(
      'receiver',
      new Map([
        ['otlp', { metrics: () => [sample('a_total', 1), sample('b_total', 2)] }],
        ['otlp/2', { metrics: () => [sample('a_total', 3)] }],
        ['quiet', {}],
      ]),
    );
    assert.deepEqual(families, [
      {
        name: 'a_total',
        type: 'counter',
        help: 'a_total help',
        samples: [
          { labels: { receiver: 'otlp', signal: 'logs' }, value: 1 },
          { labels: { receiver: 'otlp/2', signal: 'logs' }, value: 3 },
        ],
      },
      { name: 'b_total', type: 'counter', help: 'b_total help', samples: [{ labels: { receiver: 'otlp', signal: 'logs' }, value: 2 }] },
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
      return metricValue(t, 'vigil_exporter_sent_items_total', { pipeline: 'logs', exporter: 'file' }) === 1 ? t : undefined;
    }, 'the work event to be exported');
    assert.equal(metricValue(text, 'vigil_up'), 1);
    assert.equal(metricValue(text, 'vigil_ingest_records_total', { outcome: 'appended' }), 2);
    assert.equal(metricValue(text, 'vigil_classified_records_total', { pipeline: 'logs', classification: 'ExecutionFailure' }), 2);
    assert.equal(metricValue(text, 'vigil_occurrences_total', { pipeline: 'logs' }), 2);
    assert.equal(metricValue(text, 'vigil_work_events_total', { pipeline: 'logs', type: 'created' }), 1);
    assert.equal(metricValue(text, 'vigil_groups'), 1);
    assert.equal(metricValue(text, 'vigil_open_work_items'), 1);
    assert.equal(metricValue(text, 'vigil_outbox_lag_items', { pipeline: 'logs', exporter: 'file' }), 0);
    assert.equal(metricValue(text, 'vigil_receiver_accepted_records_total', { receiver: 'otlp', signal: 'logs', protocol: 'http-json' }), 2);
    assert.equal(metricValue(text, 'vigil_receiver_accepted_records_total', { receiver: 'otlp', signal: 'logs', protocol: 'grpc' }), 0);
    assert.equal(metricValue(text, 'vigil_receiver_requests_total', { receiver: 'otlp', signal: 'logs', protocol: 'http-json' }), 1);
    assert.equal(metricValue(text, 'vigil_receiver_appended_records_total', { receiver: 'otlp', signal: 'logs', protocol: 'http-json' }), 2);
    assert.equal(metricValue(text, 'vigil_receiver_refused_requests_total', { receiver: 'otlp', signal: 'traces', protocol: 'http' }), 0);
    assert.equal(metricValue(text, 'vigil_build_info', { version: '0.1.0', node_version: process.version }), 1);
    assertConventions(text);
    // Own traces are batched; shutting down flushes them.
    await service.shutdown();
    const names = collector.received
      .filter((r) => r.path === '/v1/traces')
      .flatMap((r) => decodeTraceRequest(r.body).resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans)))
      .map((s: any): [string, unknown] => [s.name, attrs(s.attributes)['vigil.pipeline']]);
    assert.ok(
      names.some(([n, p]) => n === 'vigil.page' && p === 'logs'),
      JSON.stringify(names),
    );
    assert.ok(
      names.some(([n]) => n === 'vigil.export'),
      JSON.stringify(names),
    );
  });
});
