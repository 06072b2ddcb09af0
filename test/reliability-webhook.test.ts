/**
 * Reliability, cases 2, 5 and 6: the webhook against hostile receivers — local HTTP servers that
 * redirect, answer an enormous Retry-After, stream an endless body, cut their answer short or
 * trickle it — through the real exporter runner and a real SQLite store. Nothing is confirmed that
 * was not wholly delivered; what is given up is a counted dead letter with its reason; nothing is
 * sent anywhere the config did not name. And a vigil that cannot start delivers nothing.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { DEFAULT_DELIVERY, type DeliverySettings } from '../src/exporters/delivery.ts';
import { webhookExporterFactory, type WebhookExporterConfig } from '../src/exporters/webhook/factory.ts';
import { MAX_RETRY_AFTER_MS } from '../src/internal/retry.ts';
import { memoryLogger } from '../src/logger.ts';
import { ExporterRunner, type Clock } from '../src/service/exporter-runner.ts';
import { type SqliteStore } from '../src/store/sqlite/store.ts';
import { jsonLines, workload, sqliteOutbox } from './helpers/faults.ts';
import { postLogs } from './helpers/otlp-logs.ts';
import { accepting, freePort, spawnVigil, tempDir, untilReady, type VigilChild, waitFor, writeConfig } from './helpers/vigil-process.ts';

interface Hit {
  path: string;
  method: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A local server that records every request (whole body) and answers with `handler`. */
async function server(
  handler: (req: IncomingMessage, res: ServerResponse, hit: Hit) => void,
): Promise<{ url: string; hits: Hit[]; close(): Promise<void>; srv: Server }> {
  const hits: Hit[] = [];
  const srv = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const hit = { path: req.url ?? '', method: req.method ?? '', headers: req.headers, body };
      hits.push(hit);
      handler(req, res, hit);
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    srv,
    close: () =>
      new Promise<void>((r) => {
        srv.closeAllConnections();
        srv.close(() => r());
      }),
  };
}

const servers: Array<{ close(): Promise<void> }> = [];
const children: VigilChild[] = [];
after(async () => {
  children.forEach((c) => c.child.kill('SIGKILL'));
  await Promise.all(servers.map((s) => s.close()));
});

function fakeClock(): Clock & { t: number } {
  const c = { t: 1_000_000, now: () => c.t, sleep: async (ms: number) => void (c.t += ms) };
  return c;
}

function runnerFor(
  store: SqliteStore,
  cfg: Partial<WebhookExporterConfig> & { endpoint: string },
  delivery: Partial<DeliverySettings['retry_on_failure']> = {},
  clock?: Clock,
) {
  const logger = memoryLogger();
  const exporter = webhookExporterFactory.create({ id: 'webhook', logger }, { headers: {}, timeout: 1000, ...DEFAULT_DELIVERY, ...cfg } as WebhookExporterConfig);
  const runner = new ExporterRunner({
    pipeline: 'logs',
    exporterId: 'webhook',
    exporter,
    store,
    logger,
    delivery: { retry_on_failure: { ...DEFAULT_DELIVERY.retry_on_failure, ...delivery }, sending_queue: DEFAULT_DELIVERY.sending_queue },
    clock,
  });
  return { runner, logger };
}

describe('webhook: redirects are failures, never followed', () => {
  for (const status of [301, 302, 303, 307, 308]) {
    test(`${status}: nothing reaches the other URL (no body, no signature, no API key); the event is a dead letter saying why`, async () => {
      const elsewhere = await server((_req, res) => res.end('thanks'));
      const redirecting = await server((_req, res) => {
        res.writeHead(status, { location: `${elsewhere.url}/steal?token=xyz` });
        res.end();
      });
      servers.push(elsewhere, redirecting);
      const store = await sqliteOutbox(1, 'webhook');
      const endpoint = redirecting.url.replace('http://', 'http://user:basic-pw@') + '/hook';
      const { runner, logger } = runnerFor(store, { endpoint, secret: 'hmac-secret', headers: { 'x-api-key': 'api-key-value' } });
      assert.equal(await runner.deliverBatch(), 'dead');
      assert.equal(redirecting.hits.length, 1, 'one POST to the configured URL');
      assert.equal(elsewhere.hits.length, 0, 'nothing sent to the redirect target');
      const [letter] = await store.listDeadLetters(10);
      assert.equal(letter!.entry.id, 'evt-0');
      assert.match(letter!.reason, new RegExp(`answered ${status} redirecting to http://127\\.0\\.0\\.1:\\d+/steal\\?…; redirects are not followed`));
      assert.equal(runner.stats.failuresByReason.redirect, 1);
      assert.equal(runner.stats.deadLetteredByCause.permanent, 1);
      assert.equal(await store.outboxLag('logs', 'webhook'), 0);
      const logged = JSON.stringify(logger.entries) + letter!.reason;
      assert.doesNotMatch(logged, /basic-pw|api-key-value|hmac-secret|token=xyz/, 'no secret in logs or dead letters');
      await store.close();
    });
  }
});

describe('webhook: Retry-After beyond the timer limit', () => {
  test('Retry-After: 3000000 waits the capped time (10 min), never 1 ms', async () => {
    const srv = await server((_req, res) => {
      res.writeHead(503, { 'retry-after': '3000000' });
      res.end();
    });
    servers.push(srv);
    const store = await sqliteOutbox(1, 'webhook');
    const clock = fakeClock();
    const { runner } = runnerFor(store, { endpoint: srv.url }, { max_elapsed_time: 0 }, clock);
    assert.equal(await runner.deliverBatch(), 'retry');
    assert.equal((runner as unknown as { retryAt: number }).retryAt - clock.now(), MAX_RETRY_AFTER_MS);
    await store.close();
  });

  test('with the real clock: one request, then silence (the timer did not overflow into a busy loop)', async () => {
    const srv = await server((_req, res) => {
      res.writeHead(429, { 'retry-after': '3000000' });
      res.end();
    });
    servers.push(srv);
    const store = await sqliteOutbox(1, 'webhook');
    const { runner, logger } = runnerFor(store, { endpoint: srv.url }, { initial_interval: 10, max_interval: 20, max_elapsed_time: 0 });
    await runner.start();
    await waitFor(() => (srv.hits.length >= 1 ? true : undefined), 'the first attempt');
    // Before the fix the retry fired after 1 ms: thousands of requests in this second. Silence
    // can only be shown over a span of time, hence the one fixed wait of the suite.
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(srv.hits.length, 1);
    assert.equal(logger.entries.filter((e) => e.msg === 'export failed; retrying').length, 1);
    await runner.drain(Date.now());
    await store.close();
  });

  test('Retry-After: 0 does not shorten the backoff', async () => {
    const srv = await server((_req, res) => {
      res.writeHead(503, { 'retry-after': '0' });
      res.end();
    });
    servers.push(srv);
    const store = await sqliteOutbox(1, 'webhook');
    const clock = fakeClock();
    const { runner } = runnerFor(store, { endpoint: srv.url }, { initial_interval: 1000, max_interval: 8000 }, clock);
    await runner.deliverBatch();
    assert.ok((runner as unknown as { retryAt: number }).retryAt - clock.now() >= 500, 'at least the backoff (equal jitter: half of 1 s)');
    await store.close();
  });
});

describe('webhook: answers are read with a limit', () => {
  test('a 200 with an endless body: the read stops at the limit, memory stays flat, the event is a dead letter with the reason', async () => {
    let written = 0;
    const srv = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) written += chunk.length;
        if (!res.destroyed) res.once('drain', pump);
      };
      res.on('close', () => undefined);
      pump();
    });
    servers.push(srv);
    const store = await sqliteOutbox(3, 'webhook');
    const { runner } = runnerFor(store, { endpoint: srv.url, timeout: 5000 });
    global.gc?.();
    const before = process.memoryUsage().rss;
    const started = Date.now();
    assert.equal(await runner.deliverBatch(), 'dead');
    assert.ok(Date.now() - started < 4000, 'cut off at the limit, not at the timeout');
    const grew = process.memoryUsage().rss - before;
    assert.ok(written < 64 * 1024 * 1024, `the server could push only what socket buffers hold (${written} bytes)`);
    assert.ok(grew < 100 * 1024 * 1024, `RSS grew by ${Math.round(grew / 1048576)} MiB`);
    const [letter] = await store.listDeadLetters(1);
    assert.match(letter!.reason, /body over 65536 bytes; not read/);
    assert.equal(runner.stats.failuresByReason.response_too_large, 1);
    await store.close();
  });

  test('a 200 whose answer is cut short is not confirmed: retried, then delivered once whole', async () => {
    let n = 0;
    const srv = await server((_req, res) => {
      if (++n === 1) {
        res.writeHead(200, { 'content-length': '100' });
        res.write('only ten b');
        setTimeout(() => res.socket?.destroy(), 20);
        return;
      }
      res.end('{}');
    });
    servers.push(srv);
    const store = await sqliteOutbox(1, 'webhook');
    const { runner } = runnerFor(store, { endpoint: srv.url }, {}, fakeClock());
    assert.equal(await runner.deliverBatch(), 'retry');
    assert.equal(await store.outboxLag('logs', 'webhook'), 1, 'not confirmed');
    assert.equal(runner.stats.failuresByReason.response_cut, 1);
    assert.equal(await runner.deliverBatch(), 'delivered');
    assert.deepEqual(
      srv.hits.map((h) => h.headers['idempotency-key']),
      ['evt-0', 'evt-0'],
      'the same event, same idempotency key',
    );
    await store.close();
  });

  test('a 200 that trickles its answer past the timeout is cut off and retried', async () => {
    const srv = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const t = setInterval(() => (res.destroyed ? clearInterval(t) : res.write('.')), 50);
    });
    servers.push(srv);
    const store = await sqliteOutbox(1, 'webhook');
    const { runner } = runnerFor(store, { endpoint: srv.url, timeout: 400 }, {}, fakeClock());
    assert.equal(await runner.deliverBatch(), 'retry');
    assert.equal(await store.outboxLag('logs', 'webhook'), 1);
    await store.close();
  });
});

describe('a vigil that cannot start delivers nothing', () => {
  test('port in use: exit 1, the webhook receives nothing; the next start delivers what was waiting', async () => {
    const dir = tempDir();
    const [otlpPort, hookPort] = [await freePort(), await freePort()];
    let accept = false;
    const hooks: string[] = [];
    const hook = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        hooks.push(String(req.headers['idempotency-key']));
        res.writeHead(accept ? 200 : 503, { 'retry-after': '1' });
        res.end();
      });
    });
    await new Promise<void>((r) => hook.listen(hookPort, '127.0.0.1', r));
    servers.push({ close: () => new Promise<void>((r) => (hook.closeAllConnections(), hook.close(() => r()))) });
    const reference = join(dir, 'reference.jsonl');
    const config = writeConfig(
      dir,
      `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlpPort} } } }
processors:
  classify: {}
  recurrence: { min_recurrence: 2, max_per_turn: 1000 }
exporters:
  file/reference: { path: ${reference} }
  webhook:
    endpoint: http://127.0.0.1:${hookPort}/hook
    retry_on_failure: { initial_interval: 50ms, max_interval: 100ms, max_elapsed_time: 0 }
state:
  sqlite: { path: ${join(dir, 'state.db')} }
service:
  drain_timeout: 500ms
  pipelines:
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: [file/reference, webhook] }
`,
    );
    // First run: events are committed, the webhook refuses them (503), vigil stops with them waiting.
    const first = spawnVigil(['run', '-c', config]);
    children.push(first);
    const otlp = `http://127.0.0.1:${otlpPort}/v1/logs`;
    await untilReady(first, accepting(otlp), 'vigil to listen');
    assert.equal((await postLogs(otlp, workload(3, { tag: 'start' })[0]!)).status, 200);
    await waitFor(() => (hooks.length >= 3 && jsonLines(reference).length === 3 ? true : undefined), 'attempts at the webhook');
    first.child.kill('SIGTERM');
    assert.equal(await first.exited, 0);

    // Second run: the OTLP port is taken. It must fail before delivering anything.
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(otlpPort, '127.0.0.1', r));
    accept = true;
    const seen = hooks.length;
    const second = spawnVigil(['run', '-c', config]);
    children.push(second);
    assert.equal(await second.exited, 1);
    assert.match(second.stderr(), /already in use/);
    assert.equal(hooks.length, seen, 'the failed start (now exited) sent nothing to the webhook');
    await new Promise<void>((r) => blocker.close(() => r()));

    // Third run: the port is free; what waited is delivered.
    const third = spawnVigil(['run', '-c', config]);
    children.push(third);
    const expected = jsonLines<{ id: string }>(reference)
      .map((e) => e.id)
      .sort();
    await waitFor(() => (expected.every((id) => hooks.slice(seen).includes(id)) ? true : undefined), 'the waiting events at the webhook');
    third.child.kill('SIGTERM');
    assert.equal(await third.exited, 0);
  });
});
