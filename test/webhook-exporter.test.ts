import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { DEFAULT_DELIVERY, ExportError } from '../src/exporters/delivery.ts';
import { webhookExporterFactory } from '../src/exporters/webhook/factory.ts';
import { memoryLogger } from '../src/logger.ts';
import type { OutboxEntry } from '../src/model/work.ts';
import { startCaptureServer, type CaptureServer } from './helpers/capture-server.ts';

const SECRET = 's3cret-for-tests';

function entry(seq: number): OutboxEntry {
  const id = `evt-${seq}`;
  return {
    kind: 'work',
    seq,
    id,
    event: {
      specversion: '1.0',
      id,
      source: 'vigil/agent',
      type: 'dev.vigil.work.created',
      time: '2026-01-01T00:00:00.000Z',
      subject: 'g_1',
      datacontenttype: 'application/json',
      data: { count: seq } as never,
    },
  };
}

/** What a webhook receiver does: recompute the HMAC over the raw body and compare in constant time. */
function verify(secret: string, rawBody: Buffer, header: string | undefined): boolean {
  if (!header?.startsWith('sha256=')) return false;
  const expected = Buffer.from(createHmac('sha256', secret).update(rawBody).digest('hex'));
  const given = Buffer.from(header.slice('sha256='.length));
  return given.length === expected.length && timingSafeEqual(given, expected);
}

describe('webhook exporter', () => {
  const servers: CaptureServer[] = [];
  after(() => Promise.all(servers.map((s) => s.close())));
  const make = (endpoint: string, extra: Record<string, unknown> = {}) =>
    webhookExporterFactory.create(
      { id: 'webhook', logger: memoryLogger() },
      { endpoint, secret: SECRET, headers: { 'x-api-key': 'k' }, timeout: 500, ...DEFAULT_DELIVERY, ...extra },
    );

  test('POSTs one CloudEvent per request with the idempotency key and a signature a receiver can verify', async () => {
    const server = await startCaptureServer();
    servers.push(server);
    const ex = make(`${server.url}/hooks/vigil`);
    await ex.export([entry(1), entry(2), { kind: 'forward', seq: 3, id: 'f', signal: 'logs', record: {} }]);
    assert.equal(server.received.length, 2, 'forwarded telemetry is not a work event');
    for (const [i, req] of server.received.entries()) {
      assert.equal(req.method, 'POST');
      assert.equal(req.path, '/hooks/vigil');
      assert.match(String(req.headers['content-type']), /^application\/cloudevents\+json/);
      assert.equal(req.headers['idempotency-key'], `evt-${i + 1}`);
      assert.equal(req.headers['x-api-key'], 'k');
      assert.ok(verify(SECRET, req.raw, req.headers['x-vigil-signature'] as string), 'signature verifies');
      assert.ok(!verify('another-secret', req.raw, req.headers['x-vigil-signature'] as string), 'a wrong secret does not verify');
      assert.equal(JSON.parse(req.body.toString()).id, `evt-${i + 1}`);
    }
    // A body changed in transit no longer verifies.
    const tampered = Buffer.from(server.received[0]!.raw.toString().replace('"count":1', '"count":9'));
    assert.ok(!verify(SECRET, tampered, server.received[0]!.headers['x-vigil-signature'] as string));
  });

  test('503 with Retry-After is a transient failure after the events already accepted', async () => {
    const server = await startCaptureServer(0, (req, res) => {
      if (req.headers['idempotency-key'] === 'evt-2') {
        res.writeHead(503, { 'retry-after': '3' });
        return void res.end();
      }
      res.end();
    });
    servers.push(server);
    await assert.rejects(make(server.url).export([entry(1), entry(2), entry(3)]), (err: unknown) => {
      assert.ok(err instanceof ExportError);
      assert.equal(err.permanent, false);
      assert.equal(err.retryAfterMs, 3000);
      assert.equal(err.delivered, 1);
      assert.equal(err.failed, 1);
      return true;
    });
  });

  test('a 400 is permanent; a hanging receiver times out; a closed port is transient', async () => {
    const server = await startCaptureServer(0, (req, res) => {
      if (req.headers['idempotency-key'] === 'evt-1') {
        res.writeHead(400);
        return void res.end();
      }
      return 'hang';
    });
    servers.push(server);
    await assert.rejects(make(server.url).export([entry(1)]), (err: unknown) => err instanceof ExportError && err.permanent);
    await assert.rejects(make(server.url).export([entry(2)]), (err: unknown) => err instanceof ExportError && !err.permanent && /timed out/.test(err.message));
    const closed = await startCaptureServer();
    await closed.close();
    await assert.rejects(make(closed.url).export([entry(1)]), (err: unknown) => err instanceof ExportError && !err.permanent);
  });

  test('errors and logs never carry the secret or header values', async () => {
    const server = await startCaptureServer(0, (_req, res) => {
      res.writeHead(500);
      res.end();
    });
    servers.push(server);
    const err = await make(`${server.url.replace('http://', 'http://user:pw@')}/x?token=abc`)
      .export([entry(1)])
      .catch((e: Error) => e);
    assert.ok(err instanceof Error);
    assert.doesNotMatch(err.message, /s3cret|pw|token=abc|user/);
  });
});
