/**
 * Crash test (Redis): the same stream through an uninterrupted `vigil run` and through one whose
 * vigil is SIGKILLed at random moments and restarted, and whose Redis (appendonly yes, appendfsync
 * always) is SIGKILLed and restarted once; the work delivered must be the same.
 */
import { after, before, test } from 'node:test';
import { crashStream, runStream } from './helpers/crash-harness.ts';
import { assertSameWork } from './helpers/crash-assert.ts';
import { RedisServer, uniquePrefix } from './helpers/redis-server.ts';

let redis: RedisServer;
before(async () => {
  redis = await RedisServer.start({ durable: true });
});
after(async () => {
  await redis?.stop();
});

test('Redis: SIGKILLs of vigil and of Redis change no work event and no count', { timeout: 300_000 }, async (t) => {
  const stream = crashStream(11);
  const baseline = await runStream(stream, { state: { redis: { url: redis.url, prefix: uniquePrefix('baseline') } }, kills: 0 });
  const crashed = await runStream(stream, {
    state: { redis: { url: redis.url, prefix: uniquePrefix('crashed') } },
    kills: 4,
    redisToKill: redis,
    log: (m) => t.diagnostic(m),
  });
  assertSameWork(stream, baseline, crashed, (m) => t.diagnostic(m));
});
