/** redis_stream against a real Redis (REDIS_URL, default the machine's 127.0.0.1:6379). */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { DEFAULT_DELIVERY, ExportError } from '../src/exporters/delivery.ts';
import { redisStreamExporterFactory, slotTag } from '../src/exporters/redis_stream/factory.ts';
import { memoryLogger } from '../src/logger.ts';
import type { OutboxEntry } from '../src/model/work.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0';

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
      subject: 'g',
      datacontenttype: 'application/json',
      data: { count: seq } as never,
    },
  };
}

describe('redis_stream exporter', () => {
  const redis = new Redis(REDIS_URL);
  const streams: string[] = [];
  after(async () => {
    for (const s of streams) await redis.del(s);
    redis.disconnect();
  });
  const make = (stream: string, maxlen = 0, url = REDIS_URL) => {
    streams.push(stream);
    return redisStreamExporterFactory.create(
      { id: 'redis_stream', logger: memoryLogger() },
      { url, stream, maxlen, dedupe_window: 60_000, timeout: 1000, ...DEFAULT_DELIVERY },
    );
  };

  test('XADDs one entry per work event with the CloudEvent in field `event`; a redelivery is not added twice', async () => {
    const stream = `vigil-test:${randomUUID()}`;
    const ex = make(stream);
    await ex.start();
    try {
      await ex.export([entry(1), entry(2)]);
      await ex.export([entry(2), entry(3)]); // redelivery of 2 after a crash
      const rows = await redis.xrange(stream, '-', '+');
      const events = rows.map(([, fields]) => JSON.parse(fields[fields.indexOf('event') + 1]!));
      assert.deepEqual(
        events.map((e) => e.id),
        ['evt-1', 'evt-2', 'evt-3'],
      );
      // Consumers can use a consumer group.
      await redis.xgroup('CREATE', stream, 'agents', '0');
      const read = (await redis.xreadgroup('GROUP', 'agents', 'c1', 'COUNT', 10, 'STREAMS', stream, '>')) as Array<[string, Array<[string, string[]]>]>;
      assert.equal(read[0]![1].length, 3);
    } finally {
      await ex.shutdown();
    }
  });

  test('MAXLEN keeps the stream approximately bounded', async () => {
    const stream = `vigil-test:${randomUUID()}`;
    const ex = make(stream, 10);
    try {
      for (let i = 0; i < 30; i++) await ex.export(Array.from({ length: 20 }, (_, j) => entry(i * 20 + j)));
      const len = await redis.xlen(stream);
      assert.ok(len < 600 && len >= 10, `length ${len}`);
    } finally {
      await ex.shutdown();
    }
  });

  test('an unreachable Redis is a transient export error naming the stream, not a crash', async () => {
    const ex = make(`vigil-test:${randomUUID()}`, 0, 'redis://:hunter2@127.0.0.1:1/0');
    try {
      await assert.rejects(ex.export([entry(1)]), (err: unknown) => err instanceof ExportError && !err.permanent && !/hunter2/.test(err.message));
    } finally {
      await ex.shutdown();
    }
  });

  test('the seen-id key shares the stream hash slot', () => {
    assert.equal(slotTag('vigil:work'), '{vigil:work}');
    assert.equal(slotTag('{tenant-a}:work'), '{tenant-a}');
  });
});
