/**
 * End to end: the real `vigil run` as a child process, OTLP/JSON over HTTP in, the work-events
 * file out — the README demo as a test.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { otlpLogs, postLogs } from './helpers/otlp-logs.ts';
import { freePort, healthy, spawnVigil, tempDir, untilReady, type VigilChild, waitFor, writeConfig } from './helpers/vigil-process.ts';
import { writtenJsonLines } from './helpers/work-file.ts';

const TRACEBACK = [
  'Traceback (most recent call last):',
  '  File "/tmp/agent/job.py", line 3, in <module>',
  '    print(1 / 0)',
  '          ~~^~~',
  'ZeroDivisionError: division by zero',
].join('\n');

const DEMO_RESOURCE = { 'service.name': 'demo-agent', 'service.version': '1.4.2' };

function logsRequest(records: Array<{ body: string; severity: number; time: number }>, session = 'sess-demo'): string {
  return otlpLogs(
    records.map((r) => ({ ...r, session })),
    DEMO_RESOURCE,
  );
}

async function startVigil(extra = ''): Promise<{ vigil: VigilChild; otlp: string; health: string; workFile: string; dir: string }> {
  const dir = tempDir();
  const [otlpPort, healthPort] = [await freePort(), await freePort()];
  const workFile = join(dir, 'work-events.jsonl');
  const config = writeConfig(
    dir,
    `receivers:
  otlp:
    protocols:
      http: { endpoint: 127.0.0.1:${otlpPort} }
    max_request_body_size: 64KiB
processors:
  classify: {}
  recurrence: { min_recurrence: 2, grouping_window: 60s }
exporters:
  file/work: { path: ${workFile} }
extensions:
  health_check: { endpoint: 127.0.0.1:${healthPort} }
state:
  memory: {}
service:
  extensions: [health_check]
  pipelines:
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: [file/work] }
    traces: { receivers: [otlp], processors: [classify, recurrence], exporters: [file/work] }
${extra}`,
  );
  const vigil = spawnVigil(['run', '-c', config]);
  const health = `http://127.0.0.1:${healthPort}`;
  await untilReady(vigil, healthy(health));
  return { vigil, otlp: `http://127.0.0.1:${otlpPort}`, health, workFile, dir };
}

function readWorkEvents(file: string): Array<Record<string, any>> {
  return writtenJsonLines(file);
}

const post = postLogs;

describe('vigil run, end to end', () => {
  const children: VigilChild[] = [];
  after(() => children.forEach((c) => c.child.kill('SIGKILL')));

  test('two OTLP logs with the same traceback in one session → exactly one work.created; a warning → none', async () => {
    const { vigil, otlp, workFile, health } = await startVigil();
    children.push(vigil);
    const t0 = Date.UTC(2026, 10, 30, 12, 0, 0);
    for (const time of [t0, t0 + 5000]) {
      const res = await post(`${otlp}/v1/logs`, logsRequest([{ body: TRACEBACK, severity: 17, time }]));
      assert.equal(res.status, 200, await res.text());
    }
    const warn = await post(`${otlp}/v1/logs`, logsRequest([{ body: 'DeprecationWarning: pkg_resources is deprecated', severity: 13, time: t0 + 6000 }]));
    assert.equal(warn.status, 200);

    const events = await waitFor(() => {
      const e = readWorkEvents(workFile);
      return e.length >= 1 ? e : undefined;
    }, 'a work event');
    // Wait until the pipeline has processed every record, then check nothing else was written.
    await waitFor(async () => {
      const st = (await (await fetch(`${health}/status`)).json()) as any;
      const pending = st.store.pipelines.flatMap((p: any) => p.partitions).reduce((n: number, p: any) => n + p.pending, 0);
      const lag = st.store.pipelines.flatMap((p: any) => p.outbox.exporters).reduce((n: number, e: any) => n + e.lag, 0);
      return pending === 0 && lag === 0 ? true : undefined;
    }, 'the backlog to drain');
    const all = readWorkEvents(workFile);
    assert.equal(all.length, 1, JSON.stringify(all, null, 2));
    const [ev] = events;
    assert.equal(ev!.type, 'dev.vigil.work.created');
    assert.equal(ev!.specversion, '1.0');
    assert.equal(ev!.source, 'vigil/demo-agent');
    assert.equal(ev!.data.signature, 'ZeroDivisionError: division by zero');
    assert.equal(ev!.data.decision, 'BurstThresholdReached');
    assert.equal(ev!.data.count, 2);
    assert.equal(ev!.data.partition, 'sess-demo');
    assert.equal(ev!.data.revision, '1.4.2');
    assert.equal(ev!.subject, ev!.data.group_key);

    // SIGTERM drains and exits 0.
    vigil.child.kill('SIGTERM');
    assert.equal(await vigil.exited, 0, vigil.stderr());
  });

  test('SIGTERM right after records were acknowledged still processes and delivers them; status shows them', async () => {
    const { vigil, otlp, workFile, dir } = await startVigil();
    children.push(vigil);
    const t0 = Date.UTC(2026, 10, 30, 13, 0, 0);
    const res = await post(
      `${otlp}/v1/logs`,
      logsRequest(
        [
          { body: TRACEBACK, severity: 17, time: t0 },
          { body: TRACEBACK, severity: 17, time: t0 + 1000 },
          { body: TRACEBACK, severity: 17, time: t0 + 2000 },
        ],
        'sess-drain',
      ),
    );
    assert.equal(res.status, 200);
    const status = spawnVigil(['status', '-c', join(dir, 'pipeline.yaml')]);
    assert.equal(await status.exited, 0, status.stderr());
    assert.match(status.stdout(), /store: memory/);
    vigil.child.kill('SIGTERM');
    assert.equal(await vigil.exited, 0, vigil.stderr());
    const events = readWorkEvents(workFile);
    assert.deepEqual(
      events.map((e) => [e.type, e.data.count]),
      [
        ['dev.vigil.work.created', 2],
        ['dev.vigil.work.updated', 3],
      ],
    );
    assert.equal(new Set(events.map((e) => e.data.work_id)).size, 1, 'one work item');
  });

  test('bad input is answered precisely and does not crash the process', async () => {
    const { vigil, otlp, health } = await startVigil();
    children.push(vigil);
    const malformed = await post(`${otlp}/v1/logs`, '{"resourceLogs": [');
    assert.equal(malformed.status, 400);
    const body = (await malformed.json()) as { message: string };
    assert.match(body.message, /JSON/i);
    const big = await post(`${otlp}/v1/logs`, logsRequest([{ body: 'x'.repeat(100 * 1024), severity: 17, time: 1 }]));
    assert.equal(big.status, 413);
    assert.equal((await fetch(`${health}/healthz`)).status, 200, 'still serving');
    vigil.child.kill('SIGTERM');
    assert.equal(await vigil.exited, 0);
  });

  test('a port already in use is a clear startup error naming it', async () => {
    const blocker = createServer();
    const port = await freePort();
    await new Promise<void>((r) => blocker.listen(port, '127.0.0.1', r));
    try {
      const dir = tempDir();
      const config = writeConfig(
        dir,
        `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${port} } } }
exporters:
  debug: {}
state:
  memory: {}
service:
  pipelines:
    logs: { receivers: [otlp], exporters: [debug] }
`,
      );
      const vigil = spawnVigil(['run', '-c', config]);
      children.push(vigil);
      assert.equal(await vigil.exited, 1);
      assert.match(vigil.stderr(), new RegExp(`127\\.0\\.0\\.1:${port}`));
      assert.match(vigil.stderr(), /already in use/);
    } finally {
      blocker.close();
    }
  });
});
