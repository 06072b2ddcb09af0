/**
 * The crash harness's randomness is replayable: the kill schedule is a function of its seed, and
 * the seed comes from VIGIL_CRASH_SEED when set (the crash tests log the one they used).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { crashSeed, killSchedule } from './helpers/crash-harness.ts';

describe('crash harness: seeded kill timings', () => {
  test('the same seed gives the same schedule; another seed another one', () => {
    const a = killSchedule(1234, 5, true);
    assert.deepEqual(killSchedule(1234, 5, true), a);
    assert.notDeepEqual(killSchedule(1235, 5, true), a);
    assert.equal(a.filter((s) => s.kill === 'vigil').length, 5);
    assert.equal(a.filter((s) => s.kill === 'redis').length, 1);
    for (const s of a) assert.ok(s.afterMs >= 200 && s.afterMs <= 1800, JSON.stringify(s));
    assert.deepEqual(killSchedule(1234, 0, false), []);
  });

  test('VIGIL_CRASH_SEED replays a seed; a bad one is refused; without it each run draws one', () => {
    assert.equal(crashSeed({ VIGIL_CRASH_SEED: '3735928559' }), 3735928559);
    assert.throws(() => crashSeed({ VIGIL_CRASH_SEED: 'x1' }), /VIGIL_CRASH_SEED must be an integer from 0 to 4294967295, got "x1"/);
    assert.throws(() => crashSeed({ VIGIL_CRASH_SEED: '-1' }), /VIGIL_CRASH_SEED/);
    const drawn = new Set(Array.from({ length: 20 }, () => crashSeed({})));
    assert.ok(drawn.size > 1, 'fresh seeds differ');
    for (const s of drawn) assert.ok(Number.isInteger(s) && s >= 0 && s <= 0xffffffff);
  });
});
