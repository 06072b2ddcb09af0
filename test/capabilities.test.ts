/**
 * Components declare what they consume: the service builds a pipeline's forward and occurrence
 * stages from its exporters' declared capabilities (a function of each exporter's config), not by
 * reading their config keys. A test exporter type that otlphttp's keys mean nothing to shows it.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { Exporter, ExporterFactory, Registry } from '../src/component.ts';
import { components } from '../src/components.ts';
import { loadConfigText } from '../src/config/load.ts';
import { s } from '../src/config/schema.ts';
import { memoryLogger } from '../src/logger.ts';
import type { OutboxEntry } from '../src/model/work.ts';
import { Service } from '../src/service/service.ts';
import { otlpLogs, postLogs } from './helpers/otlp-logs.ts';
import { freePort, waitFor } from './helpers/vigil-process.ts';

/** Everything each `capture` exporter instance was handed, by exporter id. */
const delivered = new Map<string, OutboxEntry[]>();

const captureFactory: ExporterFactory<{ wants: Array<'records' | 'occurrences'> }> = {
  type: 'capture',
  schema: s.object({ wants: s.array(s.enumOf(['records', 'occurrences'] as const)).default([]) }),
  capabilities: (cfg) => ({ forwardedRecords: cfg.wants.includes('records'), everyOccurrence: cfg.wants.includes('occurrences') }),
  create(settings): Exporter {
    const got: OutboxEntry[] = [];
    delivered.set(settings.id, got);
    return {
      async start() {},
      async shutdown() {},
      async export(entries) {
        got.push(...entries);
      },
    };
  },
};

function registryWithCapture(): Registry {
  const base = components();
  return { ...base, exporters: new Map([...base.exporters, ['capture', captureFactory as ExporterFactory]]) };
}

const TB = 'Traceback (most recent call last):\n  File "/srv/a.py", line 1, in <module>\nKeyError: \'port\'';

describe('exporter capabilities', () => {
  const services: Service[] = [];
  after(() => Promise.all(services.map((x) => x.shutdown())));

  async function run(pipelines: string) {
    const port = await freePort();
    const registry = registryWithCapture();
    const yaml = `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${port} } } }
processors:
  classify: {}
  recurrence: { min_recurrence: 10 }
exporters:
  capture/plain: {}
  capture/records: { wants: [records] }
  capture/occurrences: { wants: [occurrences] }
state:
  memory: {}
service:
  pipelines:
${pipelines}`;
    const service = new Service(loadConfigText(yaml, 'test.yaml', registry, {}), registry, { logger: memoryLogger() });
    services.push(service);
    await service.start();
    // Two occurrences of one failure (below min_recurrence: grouped, no work), one warning.
    const t0 = Date.UTC(2026, 1, 1);
    const body = otlpLogs([
      { time: t0, body: TB, session: 's' },
      { time: t0 + 1000, body: TB, session: 's' },
      { time: t0 + 2000, body: 'DeprecationWarning: old', severity: 13, session: 's' },
    ]);
    const res = await postLogs(`http://127.0.0.1:${port}/v1/logs`, body);
    assert.equal(res.status, 200, await res.text());
    return service;
  }

  const kinds = (id: string) => (delivered.get(id) ?? []).map((e) => e.kind);

  test('an exporter declaring forwardedRecords gets every received record; one declaring nothing gets none', async () => {
    await run(`    logs/a: { receivers: [otlp], processors: [classify, recurrence], exporters: [capture/records] }
    logs/b: { receivers: [otlp], processors: [classify, recurrence], exporters: [capture/plain] }
`);
    await waitFor(() => (kinds('capture/records').length >= 3 ? true : undefined), 'the forwarded records');
    assert.deepEqual(kinds('capture/records'), ['forward', 'forward', 'forward']);
    // The other pipeline read the same input: nothing to forward, no work (below min_recurrence).
    assert.deepEqual(kinds('capture/plain'), []);
  });

  test('an exporter declaring everyOccurrence gets an occurrence item for each counted occurrence, work or not', async () => {
    delivered.clear();
    await run(`    logs/a: { receivers: [otlp], processors: [classify, recurrence], exporters: [capture/occurrences, capture/plain] }
`);
    await waitFor(() => (kinds('capture/occurrences').length >= 2 ? true : undefined), 'the occurrence items');
    assert.deepEqual(kinds('capture/occurrences'), ['occurrence', 'occurrence']);
    // Exporters of one pipeline share its outbox: what one asks for reaches the other too, and an
    // exporter that does not want an item kind skips it (as otlphttp skips occurrences with `work`).
    assert.deepEqual(kinds('capture/plain'), ['occurrence', 'occurrence']);
  });
});
