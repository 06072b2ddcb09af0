/**
 * bench:ack-phases's decode thread (bench/decode-worker-timed.ts): vigil's worker as it is, its
 * answers stamped with the thread's times. Every body must still be decoded on the thread, with
 * what the event loop would give (a wrapper that missed vigil's handler left bodies unanswered,
 * and the bench waiting for them), and each stamp must hold the thread's own span of work.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildPayloads } from '../bench/otlp-payloads.ts';
import type { DecodeThreadTimes } from '../bench/decode-worker-timed.ts';
import { memoryLogger } from '../src/logger.ts';
import { DecodePool, decodeAndMap, type BodyEncoding, type BodyOptions, type MappedBody } from '../src/receivers/otlp/decode-pool.ts';

const TIMED_WORKER = new URL('../bench/decode-worker-timed.ts', import.meta.url).href;
const payloads = buildPayloads(512);
const OPTIONS: BodyOptions = { forward: false, markers: true, now: () => 1_700_000_000_123 };
const epochNow = () => performance.timeOrigin + performance.now();

test('the timed decode thread answers every body as vigil does, each stamped with its own start and end', { timeout: 60_000 }, async () => {
  const pool = new DecodePool(1, memoryLogger(), { workerUrl: TIMED_WORKER });
  try {
    const bodies: Array<[BodyEncoding, Buffer]> = [];
    for (let i = 0; i < 3; i++) bodies.push(['json', Buffer.from(payloads.json.template)], ['protobuf', Buffer.from(payloads.protobuf.template)]);
    const sent = epochNow();
    // All at once: the thread decodes them one after the other, so each stamp must be its own body's.
    const answers = await Promise.all(
      bodies.map(([encoding, body]) => pool.decodeAndMap(encoding, 'traces', body, OPTIONS) as Promise<MappedBody & DecodeThreadTimes>),
    );
    const received = epochNow();
    assert.deepEqual(pool.stats(), { onThreads: bodies.length, onLoop: 0, failures: 0 });
    const spans: Array<[number, number]> = [];
    answers.forEach((answer, i) => {
      const { threadTimes, ...body } = answer;
      assert.deepEqual(body, decodeAndMap(bodies[i]![0], 'traces', bodies[i]![1], OPTIONS), `body ${i}`);
      assert.ok(threadTimes, `body ${i} is stamped`);
      assert.ok(sent <= threadTimes.began && threadTimes.began <= threadTimes.ended && threadTimes.ended <= received, `body ${i}: ${JSON.stringify(threadTimes)}`);
      // Linux keeps scheduler statistics; elsewhere the wait is unknown.
      if (process.platform === 'linux') assert.ok(threadTimes.runQueueMs >= 0, `body ${i}: ${threadTimes.runQueueMs}`);
      spans.push([threadTimes.began, threadTimes.ended]);
    });
    // One thread: its spans of work do not overlap, and they come in the order the bodies were sent.
    for (let i = 1; i < spans.length; i++) assert.ok(spans[i - 1]![1] <= spans[i]![0], `body ${i} began before body ${i - 1} ended`);
  } finally {
    await pool.close();
  }
});
