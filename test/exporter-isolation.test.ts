/** A dead exporter holds up neither the other exporters nor ingest (each reads its own cursor). */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { startService } from './helpers/in-process.ts';
import { otlpLogs, postLogs } from './helpers/otlp-logs.ts';
import { freePort, tempDir, waitFor } from './helpers/vigil-process.ts';

const body = (t: number) => otlpLogs([{ time: t, body: 'Error: ENOENT: no such file or directory' }]);

const closers: Array<() => Promise<void>> = [];
after(async () => {
  for (const c of closers) await c();
});

test('a webhook that never answers does not delay the file exporter or ingest', async () => {
  const [otlpPort, deadPort] = [await freePort(), await freePort()];
  const file = join(tempDir(), 'work.jsonl');
  const { service } = await startService(`
receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlpPort} } } }
processors:
  classify: {}
  recurrence: { min_recurrence: 1 }
exporters:
  file: { path: ${file} }
  webhook: { endpoint: http://127.0.0.1:${deadPort}/hook, retry_on_failure: { initial_interval: 50ms, max_elapsed_time: 0 } }
state:
  memory: {}
service:
  drain_timeout: 1s
  pipelines:
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: [webhook, file] }
`);
  closers.push(() => service.shutdown());
  for (let i = 0; i < 20; i++) {
    const res = await postLogs(`http://127.0.0.1:${otlpPort}/v1/logs`, body(1000 + i * 1000));
    assert.equal(res.status, 200);
  }
  const lines = await waitFor(
    () => {
      if (!existsSync(file)) return undefined;
      const l = readFileSync(file, 'utf8').trim().split('\n').filter(Boolean);
      return l.length >= 2 ? l : undefined;
    },
    'the file exporter to deliver while the webhook fails',
    5000,
  );
  assert.equal(JSON.parse(lines[0]!).type, 'dev.vigil.work.created');
  const st = (await service.status()) as { pipelines: Record<string, { exporters: Record<string, { exported: number; failedAttempts: number }> }> };
  assert.equal(st.pipelines.logs!.exporters.webhook!.exported, 0);
  assert.ok(st.pipelines.logs!.exporters.webhook!.failedAttempts > 0);
});
