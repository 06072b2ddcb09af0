/** vigil's own metrics (Prometheus text) and optional own traces (OTLP), in process. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import type { ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter as GrpcTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Histogram } from '../src/internal/histogram.ts';
import { LoopDelayMonitor } from '../src/service/loop-delay.ts';
import { componentFamilies, family, histogramSamples, renderMetrics } from '../src/service/metrics.ts';
import { startCaptureServer, type CaptureServer } from './helpers/capture-server.ts';
import { startService } from './helpers/in-process.ts';
import { failedToolSpans } from './helpers/sdk-spans.ts';
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
    } else if ((m = /^# TYPE (\S+) (counter|gauge|histogram)$/.exec(line))) {
      types.set(m[1]!, m[2]!);
    } else {
      m = /^([a-z_]+)(?:\{(.*)\})? \S+$/.exec(line);
      assert.ok(m, `not a sample line: ${line}`);
      // A histogram's series count under its family's name; a bucket's `le` is not one of its labels.
      const series = m[1]!.replace(/_(bucket|sum|count)$/, '');
      const name = types.get(series) === 'histogram' ? series : m[1]!;
      const names = [...(m[2] ?? '').matchAll(/(\w+)="/g)]
        .map((x) => x[1])
        .filter((l) => l !== 'le')
        .join(',');
      if (!labelSets.has(name)) labelSets.set(name, new Set());
      labelSets.get(name)!.add(names);
    }
  }
  assert.ok(types.size >= 20, `only ${types.size} families`);
  for (const [name, type] of types) {
    assert.match(name, /^vigil_[a-z]+(_[a-z]+)*$/);
    assert.ok((helps.get(name) ?? '').length > 10, `${name} has no HELP text`);
    assert.equal(name.endsWith('_total'), type === 'counter', `${name} is a ${type}`);
    if (type === 'histogram') assert.match(name, /_seconds$/, `${name}: a histogram here is of durations, in seconds`);
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

  test('a histogram counts each observation in the first bucket that holds it; Prometheus sees cumulative buckets, +Inf, sum and count', () => {
    const h = new Histogram([0.01, 0.02, 0.1]);
    for (const seconds of [0.004, 0.01, 0.015, 0.5, Number.NaN, -1]) h.observe(seconds);
    // A bound holds what equals it (le); NaN and negative durations are not observations.
    assert.deepEqual(h.snapshot(), { bounds: [0.01, 0.02, 0.1], cumulative: [2, 3, 3], count: 4, sum: 0.004 + 0.01 + 0.015 + 0.5 });
    const text = renderMetrics([family('x_seconds', 'histogram', 'durations', histogramSamples({ a: 'b' }, new Histogram([0.5, 1]).snapshot()))]);
    assert.equal(
      text,
      '# HELP x_seconds durations\n# TYPE x_seconds histogram\n' +
        'x_seconds_bucket{a="b",le="0.5"} 0\nx_seconds_bucket{a="b",le="1"} 0\nx_seconds_bucket{a="b",le="+Inf"} 0\n' +
        'x_seconds_sum{a="b"} 0\nx_seconds_count{a="b"} 0\n',
    );
    const families = componentFamilies(
      'receiver',
      new Map([['otlp', { metrics: () => [{ name: 'y_seconds', type: 'histogram' as const, help: 'y', labels: { signal: 'logs' }, histogram: h.snapshot() }] }]]),
    );
    assert.deepEqual(
      families[0]!.samples.map((x) => [x.suffix, x.labels.le, x.value]),
      [
        ['_bucket', '0.01', 2],
        ['_bucket', '0.02', 3],
        ['_bucket', '0.1', 3],
        ['_bucket', '+Inf', 4],
        ['_sum', undefined, 0.529],
        ['_count', undefined, 4],
      ],
    );
    assert.deepEqual(families[0]!.samples[0]!.labels, { receiver: 'otlp', signal: 'logs', le: '0.01' });
  });

  test('the loop-delay monitor notes how late its timer ran, on the clock it is given', () => {
    let now = 0;
    const pending: Array<{ fn: () => void; at: number } | undefined> = [];
    const clock = {
      now: () => now,
      setTimeout: (fn: () => void, ms: number) => pending.push({ fn, at: now + ms }) - 1,
      clearTimeout: (handle: unknown) => void (pending[handle as number] = undefined),
    };
    const fire = (at: number) => {
      now = at;
      const due = pending.findIndex((p) => p !== undefined && p.at <= now);
      const p = pending[due]!;
      pending[due] = undefined;
      p.fn();
    };
    const monitor = new LoopDelayMonitor(10, clock);
    monitor.start();
    monitor.start(); // once only
    assert.equal(pending.filter(Boolean).length, 1);
    fire(10); // on time
    fire(20.3); // 0.3 ms late
    fire(55.3); // 25 ms late
    assert.deepEqual(monitor.snapshot().cumulative.slice(0, 7), [2, 2, 2, 2, 2, 2, 3]); // le 0.0005 … 0.05
    assert.equal(monitor.snapshot().count, 3);
    assert.ok(Math.abs(monitor.snapshot().sum - 0.0253) < 1e-9);
    monitor.stop();
    assert.equal(pending.filter(Boolean).length, 0);
  });

  test('acks and the store syncs they wait for are timed: SDK exports over OTLP/HTTP and gRPC on the SQLite store', { timeout: 60_000 }, async () => {
    const [httpPort, grpcPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
    const dir = tempDir();
    const { service } = await startService(`
receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${httpPort} }, grpc: { endpoint: 127.0.0.1:${grpcPort} } } }
processors:
  classify: {}
exporters:
  file: { path: ${join(dir, 'work.jsonl')} }
state:
  sqlite: { path: ${join(dir, 'state.db')} }
service:
  telemetry:
    metrics: { address: 127.0.0.1:${metricsPort} }
  pipelines:
    traces: { receivers: [otlp], processors: [classify], exporters: [file] }
`);
    closers.push(() => service.shutdown());
    const send = async (exporter: { export(spans: ReadableSpan[], done: (r: ExportResult) => void): void; shutdown(): Promise<void> }, times: number) => {
      try {
        for (let i = 0; i < times; i++) {
          const spans = await failedToolSpans(`s${i}`);
          const result = await new Promise<ExportResult>((resolve) => exporter.export(spans, resolve));
          assert.equal(result.code, 0, String(result.error));
        }
      } finally {
        await exporter.shutdown();
      }
    };
    await send(new ProtoTraceExporter({ url: `http://127.0.0.1:${httpPort}/v1/traces` }), 3);
    await send(new GrpcTraceExporter({ url: `http://127.0.0.1:${grpcPort}` }), 2);
    // The event loop held 80 ms (this test runs in vigil's process): the loop-delay timer ran that late once.
    const held = performance.now();
    while (performance.now() - held < 80);
    await new Promise((resolve) => setTimeout(resolve, 30));
    // A refusal is no ack: not timed.
    const refused = await fetch(`http://127.0.0.1:${httpPort}/v1/traces`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' });
    assert.equal(refused.status, 415);
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    assertConventions(text);
    const ack = (suffix: string, protocol: string, le?: string) =>
      metricValue(text, `vigil_receiver_ack_duration_seconds${suffix}`, { receiver: 'otlp', signal: 'traces', protocol, ...(le ? { le } : {}) });
    assert.equal(ack('_count', 'http-protobuf'), 3);
    assert.equal(ack('_count', 'grpc'), 2);
    assert.equal(ack('_count', 'http-json'), 0);
    assert.equal(ack('_bucket', 'http-protobuf', '+Inf'), 3);
    assert.ok(ack('_sum', 'http-protobuf')! > 0 && ack('_sum', 'http-protobuf')! < 30, `sum ${ack('_sum', 'http-protobuf')}`);
    assertCumulative(text, 'vigil_receiver_ack_duration_seconds_bucket', { signal: 'traces', protocol: 'grpc' }, 2);
    // Each ack waited for a sync of the WAL: at least one sync per request sent one after another.
    const syncs = metricValue(text, 'vigil_store_sync_duration_seconds_count', { store: 'sqlite' })!;
    assert.ok(syncs >= 5, `${syncs} syncs`);
    assertCumulative(text, 'vigil_store_sync_duration_seconds_bucket', { store: 'sqlite' }, syncs);
    assert.ok(metricValue(text, 'vigil_store_sync_duration_seconds_sum', { store: 'sqlite' })! > 0);
    const delays = metricValue(text, 'vigil_event_loop_delay_seconds_count')!;
    assert.ok(delays >= 5, `${delays} loop-delay samples`);
    assert.ok(delays - metricValue(text, 'vigil_event_loop_delay_seconds_bucket', { le: '0.05' })! >= 1, 'the 80 ms hold shows as a delay over 50 ms');
    assertCumulative(text, 'vigil_event_loop_delay_seconds_bucket', {}, delays);
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

/** A bucket series is cumulative: non-decreasing over its bounds in order, ending at `count` in +Inf. */
function assertCumulative(text: string, name: string, labels: Record<string, string>, count: number): void {
  const values: Array<[string, number]> = [];
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)\{(.*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name || !Object.entries(labels).every(([k, v]) => m[2]!.includes(`${k}="${v}"`))) continue;
    values.push([/le="([^"]+)"/.exec(m[2]!)![1]!, Number(m[3])]);
  }
  assert.ok(values.length >= 2, `${name}: ${values.length} buckets`);
  for (let i = 1; i < values.length; i++) assert.ok(values[i]![1] >= values[i - 1]![1], `${name} not cumulative: ${JSON.stringify(values)}`);
  assert.deepEqual(values[values.length - 1], ['+Inf', count]);
}
