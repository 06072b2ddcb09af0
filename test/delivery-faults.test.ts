/**
 * Delivery through a faulty downstream, end to end with the real `vigil run`: the downstream
 * answers 503 with Retry-After, then hangs (timeouts), then is down, then comes back. Every work
 * event (webhook) and occurrence span (otlphttp) arrives; repeats carry the same id and content,
 * so the receiving side counts each once; ingest accepts throughout.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { occurrenceSpanIds } from '../src/exporters/otlphttp/occurrence-span.ts';
import { startCaptureServer, type CaptureServer, type Responder } from './helpers/capture-server.ts';
import { decodeTraceRequest } from './helpers/otlp-decode.ts';
import { otlpLogs, postLogs } from './helpers/otlp-logs.ts';
import { accepting, freePort, spawnVigil, tempDir, untilReady, type VigilChild, waitFor, writeConfig } from './helpers/vigil-process.ts';

const TRACE = (n: number) => `Traceback (most recent call last):\n  File "/tmp/job.py", line 1, in <module>\nValueError: bad input ${'x'.repeat(n)}`;

function logs(session: string, signatureVariant: number, times: number[]): string {
  const body =
    signatureVariant === 0
      ? TRACE(0)
      : `Traceback (most recent call last):\n  File "/tmp/job.py", line 1, in <module>\nKeyError${'E'.repeat(signatureVariant)}: missing`;
  return otlpLogs(times.map((time) => ({ time, body, session })));
}

const children: VigilChild[] = [];
let downstream: CaptureServer | undefined;
after(async () => {
  children.forEach((c) => c.child.kill('SIGKILL'));
  await downstream?.close();
});

test('503 + Retry-After, then timeouts, then down, then back: everything arrives once by id; ingest never refused', async () => {
  const dir = tempDir();
  const [otlpPort, downPort, healthPort] = [await freePort(), await freePort(), await freePort()];
  const workFile = join(dir, 'work.jsonl');
  const config = writeConfig(
    dir,
    `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlpPort} } } }
processors:
  classify: {}
  recurrence: { min_recurrence: 2 }
exporters:
  file/reference: { path: ${workFile} }
  webhook:
    endpoint: http://127.0.0.1:${downPort}/hook
    secret: test-secret
    timeout: 300ms
    retry_on_failure: { initial_interval: 50ms, max_interval: 400ms, max_elapsed_time: 0 }
  otlphttp:
    endpoint: http://127.0.0.1:${downPort}
    timeout: 300ms
    retry_on_failure: { initial_interval: 50ms, max_interval: 400ms, max_elapsed_time: 0 }
extensions:
  health_check: { endpoint: 127.0.0.1:${healthPort} }
state:
  memory: {}
service:
  extensions: [health_check]
  pipelines:
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: [file/reference, webhook, otlphttp] }
`,
  );
  const answer503: Responder = (_req, res) => {
    res.writeHead(503, { 'retry-after': '1' });
    res.end();
  };
  downstream = await startCaptureServer(downPort, answer503);
  const vigil = spawnVigil(['run', '-c', config]);
  children.push(vigil);
  const otlp = `http://127.0.0.1:${otlpPort}/v1/logs`;
  await untilReady(vigil, accepting(otlp), 'vigil to listen');

  const statuses: number[] = [];
  const send = async (session: string, variant: number, times: number[]) => {
    const res = await postLogs(otlp, logs(session, variant, times));
    statuses.push(res.status);
  };
  const t0 = Date.UTC(2026, 0, 1);
  /** Failed delivery attempts of the two exporters under test, from vigil's status endpoint. */
  const failedAttempts = async (): Promise<{ webhook: number; otlphttp: number }> => {
    const exporters = ((await (await fetch(`http://127.0.0.1:${healthPort}/status`)).json()) as any).pipelines.logs.exporters;
    return { webhook: exporters.webhook.failedAttempts, otlphttp: exporters.otlphttp.failedAttempts };
  };
  /** Waits until each exporter has failed at least `n` more attempts than in `from`. */
  const moreFailures = (from: { webhook: number; otlphttp: number }, n: number, what: string) =>
    waitFor(async () => {
      const now = await failedAttempts();
      return now.webhook >= from.webhook + n && now.otlphttp >= from.otlphttp + n ? now : undefined;
    }, what);

  // Phase 1: 503 with Retry-After.
  await send('a', 0, [t0, t0 + 1000]);
  await waitFor(() => (downstream!.received.length >= 2 ? true : undefined), 'attempts against the 503');
  // Phase 2: the downstream accepts the connection and never answers: two timeouts per exporter.
  downstream.respond = () => 'hang';
  const beforeHang = await failedAttempts();
  await send('b', 1, [t0 + 2000, t0 + 3000]);
  await moreFailures(beforeHang, 2, 'two timed-out attempts per exporter');
  // Phase 3: down: two refused connections per exporter.
  const seenBeforeDown = downstream.received.slice();
  await downstream.close();
  const beforeDown = await failedAttempts();
  await send('c', 2, [t0 + 4000, t0 + 5000, t0 + 6000]);
  await send('a', 0, [t0 + 7000]);
  await moreFailures(beforeDown, 2, 'two failed attempts per exporter while the downstream is down');
  // Phase 4: back.
  downstream = await startCaptureServer(downPort);

  const expected = await waitFor(() => {
    const lines = readFileSync(workFile, 'utf8').trim().split('\n').filter(Boolean);
    return lines.length >= 5 ? lines.map((l) => JSON.parse(l)) : undefined;
  }, 'the reference file to hold every work event');
  const expectedIds = new Set(expected.map((e: { id: string }) => e.id));
  assert.equal(expectedIds.size, expected.length, 'the file exporter wrote each event once');
  assert.deepEqual(
    expected.map((e: { type: string }) => e.type).sort(),
    ['dev.vigil.work.created', 'dev.vigil.work.created', 'dev.vigil.work.created', 'dev.vigil.work.updated', 'dev.vigil.work.updated'].sort(),
  );

  const hooks = () => downstream!.received.filter((r) => r.path === '/hook');
  await waitFor(() => (new Set(hooks().map((r) => r.headers['idempotency-key'])).size === expectedIds.size ? true : undefined), 'every work event at the webhook');
  // Requests seen while answering 503 or hanging count too: a receiver may have acted on them.
  const byId = new Map<string, string>();
  for (const r of [...seenBeforeDown.filter((x) => x.path === '/hook'), ...hooks()]) {
    const id = String(r.headers['idempotency-key']);
    assert.ok(expectedIds.has(id), `unexpected event ${id}`);
    if (byId.has(id)) assert.equal(byId.get(id), r.body.toString(), 'a repeat carries the same content');
    byId.set(id, r.body.toString());
  }

  const spanIds = () =>
    new Set(
      downstream!.received
        .filter((r) => r.path === '/v1/traces')
        .flatMap((r) => decodeTraceRequest(r.body).resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans.map((s: any) => s.spanId)))),
    );
  const expectedSpans = new Set([...expectedIds].map((id) => occurrenceSpanIds(id).spanId));
  await waitFor(() => ([...expectedSpans].every((s) => spanIds().has(s)) ? true : undefined), 'every occurrence span');
  assert.deepEqual([...spanIds()].sort(), [...expectedSpans].sort(), 'no span that is not an occurrence of a work event');

  assert.deepEqual([...new Set(statuses)], [200], 'ingest accepted throughout');
  vigil.child.kill('SIGTERM');
  assert.equal(await vigil.exited, 0, vigil.stderr().slice(-2000));
});
