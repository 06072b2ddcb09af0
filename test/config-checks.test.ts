/**
 * Cross-field rules of the real components' schemas (`initial_interval ≤ max_interval`,
 * `batch_size ≤ queue_size`, …), reported as FILE:LINE:COL at the key to change like every other
 * problem; and the service and delivery defaults, which come from the schemas alone.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { components } from '../src/components.ts';
import { ConfigError, formatDiagnostic, loadConfigText } from '../src/config/load.ts';
import { DEFAULT_DELIVERY } from '../src/exporters/delivery.ts';

const y = (text: string): string => text.replace(/^\n/, '');
const load = (text: string) => loadConfigText(text, 'pipeline.yaml', components(), {});

function problems(text: string): string[] {
  try {
    load(text);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    return err.diagnostics.filter((d) => d.severity === 'error').map(formatDiagnostic);
  }
  assert.fail('expected the config to be rejected');
}

const PIPELINE = `service:
  pipelines:
    logs: { receivers: [otlp], exporters: [file] }
`;

describe('config: cross-field rules', () => {
  test('retry_on_failure: initial_interval longer than max_interval; max_elapsed_time shorter than initial_interval', () => {
    assert.deepEqual(
      problems(
        y(`
receivers:
  otlp:
exporters:
  file:
    path: out.jsonl
    retry_on_failure:
      initial_interval: 1m
      max_interval: 30s
      max_elapsed_time: 10s
${PIPELINE}`),
      ),
      [
        "pipeline.yaml:7:25: 'exporters.file.retry_on_failure.initial_interval' (1m) must not be longer than max_interval (30s); raise max_interval or lower initial_interval",
        "pipeline.yaml:9:25: 'exporters.file.retry_on_failure.max_elapsed_time' (10s) is shorter than initial_interval (1m), so no retry would ever be made; raise it, use 0 to retry forever, or set enabled: false",
      ],
    );
  });

  test('a rule holds between a written key and a default: initial_interval 45s against the default max_interval 30s', () => {
    assert.deepEqual(
      problems(
        y(`
receivers:
  otlp:
exporters:
  file:
    path: out.jsonl
    retry_on_failure: { initial_interval: 45s }
${PIPELINE}`),
      ),
      [
        "pipeline.yaml:6:43: 'exporters.file.retry_on_failure.initial_interval' (45s) must not be longer than max_interval (30s); raise max_interval or lower initial_interval",
      ],
    );
  });

  test('retries switched off are not checked; max_elapsed_time 0 means forever', () => {
    const cfg = load(
      y(`
receivers:
  otlp:
exporters:
  file:
    path: out.jsonl
    retry_on_failure: { enabled: false, initial_interval: 1m, max_interval: 1s }
  file/b:
    path: b.jsonl
    retry_on_failure: { initial_interval: 10s, max_elapsed_time: 0 }
service:
  pipelines:
    logs: { receivers: [otlp], exporters: [file, file/b] }
`),
    );
    assert.equal(cfg.exporters.size, 2);
  });

  test('sending_queue: batch_size larger than queue_size', () => {
    assert.deepEqual(
      problems(
        y(`
receivers:
  otlp:
exporters:
  file:
    path: out.jsonl
    sending_queue: { queue_size: 100, batch_size: 500 }
${PIPELINE}`),
      ),
      ["pipeline.yaml:6:51: 'exporters.file.sending_queue.batch_size' (500) must not be larger than queue_size (100); a batch is taken from the queue"],
    );
  });

  test('a rule is not checked when one of its keys is already wrong (one problem, reported once)', () => {
    assert.deepEqual(
      problems(
        y(`
receivers:
  otlp:
exporters:
  file:
    path: out.jsonl
    sending_queue: { queue_size: -1, batch_size: 500 }
${PIPELINE}`),
      ),
      ["pipeline.yaml:6:34: 'exporters.file.sending_queue.queue_size' must be an integer >= 1, got -1"],
    );
  });

  test('otlp receiver: gRPC and HTTP on the same endpoint', () => {
    assert.deepEqual(
      problems(
        y(`
receivers:
  otlp:
    protocols:
      http: { endpoint: 127.0.0.1:4318 }
      grpc: { endpoint: 127.0.0.1:4318 }
exporters:
  file: { path: out.jsonl }
${PIPELINE}`),
      ),
      [
        "pipeline.yaml:5:25: 'receivers.otlp.protocols.grpc.endpoint' (127.0.0.1:4318) is the same as protocols.http.endpoint: each protocol needs its own port (the defaults are 4317 for gRPC, 4318 for HTTP)",
      ],
    );
  });

  test('redis state: cluster seed nodes without cluster.enabled; a database number with a cluster', () => {
    assert.deepEqual(
      problems(
        y(`
receivers:
  otlp:
exporters:
  file: { path: out.jsonl }
state:
  redis:
    url: redis://127.0.0.1:7000/3
    cluster: { nodes: [redis://127.0.0.1:7001] }
${PIPELINE}`),
      ),
      ["pipeline.yaml:8:23: 'state.redis.cluster.nodes' lists seed nodes but cluster.enabled is false; set cluster.enabled: true, or remove cluster.nodes"],
    );
    assert.deepEqual(
      problems(
        y(`
receivers:
  otlp:
exporters:
  file: { path: out.jsonl }
state:
  redis:
    url: redis://127.0.0.1:7000/3
    cluster: { enabled: true }
${PIPELINE}`),
      ),
      [
        "pipeline.yaml:7:10: 'state.redis.url' selects database 3, but a Redis Cluster has only database 0; remove '/3' from url (use key_prefix to separate deployments)",
      ],
    );
  });
});

describe('config: defaults are the schemas’ own', () => {
  test('service settings and an exporter’s delivery settings, when nothing is written', () => {
    const cfg = load(
      y(`
receivers:
  otlp:
exporters:
  file: { path: out.jsonl }
${PIPELINE}`),
    );
    assert.deepEqual(
      { ...cfg.service, pipelines: undefined },
      {
        extensions: [],
        pipelines: undefined,
        telemetry: { logs: { level: 'info' }, metrics: {}, traces: { encoding: 'proto', headers: {} } },
        drain_timeout: 15_000,
        processing: { page_size: 256 },
        ingest: { max_backlog: 100_000 },
      },
    );
    const file = cfg.exporters.get('file')!.config as typeof DEFAULT_DELIVERY;
    assert.deepEqual({ retry_on_failure: file.retry_on_failure, sending_queue: file.sending_queue }, DEFAULT_DELIVERY);
    assert.deepEqual(DEFAULT_DELIVERY, {
      retry_on_failure: { enabled: true, initial_interval: 5_000, max_interval: 30_000, max_elapsed_time: 300_000 },
      sending_queue: { queue_size: 10_000, batch_size: 128 },
    });
  });
});
