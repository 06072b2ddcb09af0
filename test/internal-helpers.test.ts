/**
 * The shared helpers of src/internal: backoff (equal jitter), sleeps beyond Node's timer limit,
 * `Retry-After` parsing, the OTLP retryable-status rule, host:port, loopback, bearer checks and
 * URL redaction.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { backoffDelay, MAX_TIMER_MS, sleep, timerDelay, Wakeup } from '../src/internal/backoff.ts';
import { BearerAuth, operatorAuth } from '../src/internal/bearer.ts';
import { formatHostPort, isLoopback, parseEndpoint } from '../src/internal/endpoint.ts';
import { redactText, redactUrl } from '../src/internal/redact.ts';
import { isRetryableStatus, MAX_RETRY_AFTER_MS, parseRetryAfter } from '../src/internal/retry.ts';

describe('backoff', () => {
  const policy = { initial: 1000, max: 8000 };

  test('doubles per attempt up to max; equal jitter keeps each delay in [d/2, d]', () => {
    const at = (attempt: number, r: number) => backoffDelay(policy, attempt, () => r);
    assert.deepEqual(
      [1, 2, 3, 4, 5, 9].map((n) => at(n, 1)),
      [1000, 2000, 4000, 8000, 8000, 8000],
    );
    assert.deepEqual(
      [1, 2, 3, 4, 5].map((n) => at(n, 0)),
      [500, 1000, 2000, 4000, 4000],
    );
    assert.equal(at(3, 0.5), 3000);
  });

  test('never zero and never above max, whatever the random source (seeded sweep)', () => {
    const seed = Number(process.env.VIGIL_TEST_SEED ?? Date.now() % 1_000_000);
    console.log(`backoff sweep seed ${seed} (replay with VIGIL_TEST_SEED=${seed})`);
    let x = seed;
    const rnd = () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 1000; i++) {
      const attempt = 1 + (i % 40);
      const d = backoffDelay(policy, attempt, rnd);
      const cap = Math.min(policy.max, policy.initial * 2 ** (attempt - 1));
      assert.ok(d >= cap / 2 && d <= cap, `attempt ${attempt}: ${d} outside [${cap / 2}, ${cap}]`);
    }
  });

  test('timerDelay keeps a delay within what one Node timer can take', () => {
    assert.equal(timerDelay(-5), 0);
    assert.equal(timerDelay(Number.NaN), 0);
    assert.equal(timerDelay(10), 10);
    assert.equal(timerDelay(3_000_000_000), MAX_TIMER_MS);
  });

  test('a sleep longer than 2^31 ms waits, in steps, instead of firing after 1 ms', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let done = false;
    const p = sleep(3_000_000_000).then(() => (done = true));
    t.mock.timers.tick(1000);
    await Promise.resolve();
    assert.equal(done, false, 'not after 1 s');
    t.mock.timers.tick(MAX_TIMER_MS);
    await Promise.resolve();
    assert.equal(done, false, 'not after the first step');
    // The second step is armed when the first fires; it ends 3e9 ms after the sleep began at the latest.
    t.mock.timers.tick(3_000_000_000);
    await p;
    assert.equal(done, true);
  });

  test('an aborted sleep resolves at once and leaves no timer', async () => {
    const ac = new AbortController();
    const p = sleep(60_000, ac.signal);
    ac.abort();
    await p;
  });

  test('a wake-up notified before the wait is not lost; a long timeout is clamped', async () => {
    const w = new Wakeup();
    w.notify();
    await w.wait(MAX_TIMER_MS * 4);
    const p = w.wait(MAX_TIMER_MS * 4);
    w.notify();
    await p;
  });

  test('the waiter resumes on the next turn, after the notifier has gone on (a request is answered before its pipeline runs)', async () => {
    const w = new Wakeup();
    const order: string[] = [];
    const woken = w.wait(60_000).then(() => order.push('waiter'));
    w.notify();
    // The notifier's own continuation: a few promise steps, as from an append to its answer.
    for (let i = 0; i < 5; i++) await Promise.resolve();
    order.push('notifier');
    await woken;
    assert.deepEqual(order, ['notifier', 'waiter']);
  });

  test('a wake-up scheduled as the wait timed out does not swallow a later notify', async () => {
    const w = new Wakeup();
    // The waiter's next wait starts after the stale wake-up ran (an immediate queued behind it).
    const later = new Promise<{ wait: Promise<void> }>((resolve) => {
      void w.wait(1).then(() => {
        // Between the timeout and the scheduled wake-up: this notify finds no waiter and must stay pending.
        w.notify();
        setImmediate(() => resolve({ wait: w.wait(60_000) }));
      });
    });
    const until = performance.now() + 5;
    while (performance.now() < until); // the 1 ms timer is due before the loop turns again
    w.notify(); // its wake-up runs in the check phase, after the timers phase has ended the wait
    const outcome = await Promise.race([(await later).wait.then(() => 'woken'), new Promise((r) => setTimeout(() => r('lost'), 1000))]);
    assert.equal(outcome, 'woken');
  });
});

describe('Retry-After and the retryable statuses (OTLP rules)', () => {
  const now = Date.parse('2026-03-01T12:00:00Z');

  test('delay-seconds and HTTP dates become milliseconds; garbage is undefined', () => {
    assert.equal(parseRetryAfter('3', now), 3000);
    assert.equal(parseRetryAfter(' 1.5 ', now), 1500);
    assert.equal(parseRetryAfter('0', now), 0);
    assert.equal(parseRetryAfter('Sun, 01 Mar 2026 12:00:30 GMT', now), 30_000);
    assert.equal(parseRetryAfter('Sun, 01 Mar 2026 11:00:00 GMT', now), 0, 'a date in the past is now');
    for (const bad of [undefined, null, '', '-5', 'soon', '1e3', '12abc', '0x10']) assert.equal(parseRetryAfter(bad, now), undefined, String(bad));
  });

  test('a huge Retry-After is capped, never overflowing a timer into 1 ms', () => {
    assert.equal(parseRetryAfter('3000000', now), MAX_RETRY_AFTER_MS);
    assert.equal(parseRetryAfter('9'.repeat(400), now), MAX_RETRY_AFTER_MS);
    assert.equal(parseRetryAfter('Fri, 31 Dec 9999 23:59:59 GMT', now), MAX_RETRY_AFTER_MS);
    assert.ok(MAX_RETRY_AFTER_MS < MAX_TIMER_MS, 'the cap fits one timer');
  });

  test('retry 408, 429, 502, 503, 504; every other status is permanent', () => {
    const retryable = [];
    for (let status = 100; status < 600; status++) if (isRetryableStatus(status)) retryable.push(status);
    assert.deepEqual(retryable, [408, 429, 502, 503, 504]);
    for (const permanent of [301, 302, 307, 400, 401, 403, 404, 409, 413, 500, 501, 505]) assert.equal(isRetryableStatus(permanent), false, String(permanent));
  });
});

describe('endpoints', () => {
  test('parse host:port, [v6]:port and :port (loopback by default); format brackets v6', () => {
    assert.deepEqual(parseEndpoint('0.0.0.0:4318'), { host: '0.0.0.0', port: 4318 });
    assert.deepEqual(parseEndpoint(':4318'), { host: '127.0.0.1', port: 4318 });
    assert.deepEqual(parseEndpoint('[::1]:13133'), { host: '::1', port: 13133 });
    assert.equal(parseEndpoint('host:99999'), undefined);
    assert.equal(parseEndpoint('no-port'), undefined);
    assert.equal(formatHostPort('::1', 80), '[::1]:80');
    assert.equal(formatHostPort('localhost', 80), 'localhost:80');
  });

  test('loopback: 127/8, ::1, localhost; not 0.0.0.0, ::, or a LAN address', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', '::1', 'localhost', '::ffff:127.0.0.1']) assert.equal(isLoopback(h), true, h);
    for (const h of ['0.0.0.0', '::', '10.0.0.5', '192.168.1.2', 'example.com', '::ffff:10.0.0.1']) assert.equal(isLoopback(h), false, h);
  });
});

describe('bearer tokens', () => {
  test('accepts exactly the configured tokens, case-insensitive scheme, nothing else', () => {
    const auth = new BearerAuth(['t0ken', 'other']);
    assert.equal(auth.enabled, true);
    for (const ok of ['Bearer t0ken', 'bearer other', 'Bearer t0ken  ']) assert.equal(auth.check(ok), true, ok);
    for (const bad of [undefined, '', 'Bearer', 'Bearer t0ke', 'Bearer t0kenX', 'Basic t0ken', 't0ken', 'Bearer t0ken extra'])
      assert.equal(auth.check(bad), false, String(bad));
  });

  test("no token (or only empty ones) means open; an operator endpoint falls back to the receivers' tokens", () => {
    assert.equal(new BearerAuth([]).check(undefined), true);
    assert.equal(new BearerAuth(['', undefined]).enabled, false);
    assert.equal(operatorAuth(undefined, ['rx']).check('Bearer rx'), true);
    assert.equal(operatorAuth('own', ['rx']).check('Bearer rx'), false, "its own token replaces the receivers'");
    assert.equal(operatorAuth('own', ['rx']).check('Bearer own'), true);
  });
});

describe('redaction', () => {
  test('URLs lose their credentials and query, keep scheme, host, port and path', () => {
    assert.equal(redactUrl('redis://user:pw@redis.internal:6380/0'), 'redis://***@redis.internal:6380/0');
    assert.equal(redactUrl('redis://vigil:pw@redis.internal:6380/0', { keepUser: true }), 'redis://vigil:***@redis.internal:6380/0');
    assert.equal(redactUrl('https://tok3n@hooks.example/x', { keepUser: true }), 'https://***@hooks.example/x', 'a user name alone may be a token');
    assert.equal(redactUrl('https://hooks.example/x?token=abc'), 'https://hooks.example/x?…');
    assert.equal(redactUrl('http://127.0.0.1:9/hook'), 'http://127.0.0.1:9/hook');
    assert.doesNotMatch(redactUrl('not a url //u:p@h?q=1'), /u:p|q=1/);
  });

  test('redactText replaces every occurrence of each secret', () => {
    assert.equal(redactText('a SECRET b SECRET', ['SECRET']), 'a *** b ***');
    assert.equal(redactText('to http://h/x?k=1 failed', [{ secret: 'http://h/x?k=1', shownAs: 'http://h/x?…' }]), 'to http://h/x?… failed');
  });
});
