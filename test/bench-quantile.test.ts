/**
 * The interval bench:ingest and bench:ack-phases print around a p99 (bench/quantile.ts): its ranks checked against an
 * exact binomial computed independently with BigInt arithmetic, the textbook case, the case of the
 * bench's own slices (too few latencies for an upper bound), its coverage on seeded samples, and
 * the verdict against the goal drawn from it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { p99AgainstGoal, quantileInterval } from '../bench/quantile.ts';
import { seededRandom, testSeed } from './helpers/random.ts';

/** P(B <= k) for B ~ Binomial(n, num/den), exactly (as a fraction), then as a number. */
function exactCdf(n: number, num: number, den: number): number[] {
  const N = BigInt(n);
  const p = BigInt(num);
  const qd = BigInt(den - num);
  const D = BigInt(den) ** N;
  const out: number[] = [];
  let choose = 1n;
  let acc = 0n;
  for (let k = 0n; k <= N; k++) {
    if (k > 0n) choose = (choose * (N - k + 1n)) / k;
    acc += choose * p ** k * qd ** (N - k);
    // Scaled to 1e15 before the division keeps 15 digits.
    out.push(Number((acc * 10n ** 15n) / D) / 1e15);
  }
  return out;
}

test('the textbook interval of a median of 20: the 6th to the 15th observation, 95.9%', () => {
  const i = quantileInterval(20, 0.5);
  assert.equal(i.lower, 5);
  assert.equal(i.upper, 14);
  assert.ok(Math.abs(i.coverage - 0.958610534667969) < 1e-9, String(i.coverage));
});

test('each bound is the tightest whose tail stays within (1 - confidence) / 2, against an exact binomial', () => {
  for (const [n, num, den] of [
    [20, 1, 2],
    [100, 9, 10],
    [200, 99, 100],
    [400, 99, 100],
    [1000, 99, 100],
    [57, 3, 4],
  ] as const) {
    const cdf = exactCdf(n, num, den);
    const i = quantileInterval(n, num / den);
    const where = `n=${n}, q=${num}/${den}`;
    // Lower rank r = lower + 1: P(B < r) = cdf[r - 1] <= 2.5%, and one rank higher would exceed it.
    if (i.lower === undefined) assert.ok(cdf[0]! > 0.025 - 1e-12, where);
    else {
      assert.ok(cdf[i.lower]! <= 0.025 + 1e-12, where);
      assert.ok(cdf[i.lower + 1]! > 0.025 - 1e-12, where);
    }
    // Upper rank s = upper + 1: P(B >= s) = 1 - cdf[s - 1] <= 2.5%, and one rank lower would exceed it.
    if (i.upper === undefined) assert.ok(1 - cdf[n - 1]! > 0.025 - 1e-12, where);
    else {
      assert.ok(1 - cdf[i.upper]! <= 0.025 + 1e-12, where);
      assert.ok(1 - cdf[i.upper - 1]! > 0.025 - 1e-12, where);
    }
    const below = i.lower === undefined ? 0 : cdf[i.lower]!;
    const upTo = i.upper === undefined ? 1 : cdf[i.upper]!;
    assert.ok(Math.abs(i.coverage - (upTo - below)) < 1e-9, `${where}: coverage ${i.coverage} against ${upTo - below}`);
    if (i.lower !== undefined && i.upper !== undefined) assert.ok(i.coverage >= 0.95, where);
  }
});

test("a p99 of a half-rate slice's ~360 latencies has no upper bound at 95%; of 1,000 it has", () => {
  // 0.99^360 = 2.7% > 2.5%: all 360 below the true p99 is too likely to rule out.
  assert.equal(quantileInterval(360, 0.99).upper, undefined);
  assert.notEqual(quantileInterval(360, 0.99).lower, undefined);
  const i = quantileInterval(1000, 0.99);
  assert.ok(i.lower !== undefined && i.upper !== undefined && i.lower < 990 && 990 < i.upper, JSON.stringify(i));
});

test('bad arguments are refused with what was given', () => {
  assert.throws(() => quantileInterval(0, 0.5), /n must be an integer >= 1.*n=0/);
  assert.throws(() => quantileInterval(10, 1), /q=1/);
  assert.throws(() => quantileInterval(10, 0.5, 1.5), /confidence=1.5/);
});

test('on seeded uniform samples the interval holds the true p99 about as often as its coverage says', () => {
  const random = seededRandom(7);
  const n = 1000;
  const trials = 2000;
  const { lower, upper, coverage } = quantileInterval(n, 0.99);
  let held = 0;
  for (let t = 0; t < trials; t++) {
    const xs = Array.from({ length: n }, random).sort((a, b) => a - b);
    // The true p99 of U(0, 1) is 0.99.
    if (xs[lower!]! <= 0.99 && 0.99 < xs[upper!]!) held++;
  }
  // Binomial(2000, ~0.976): its standard deviation is 0.0034, so 0.95 is about 7 of them away.
  assert.ok(held / trials > coverage - 0.025, `seed ${testSeed()}: held ${held} of ${trials}, coverage ${coverage}`);
});

test('a p99 against the goal: under or over only when the whole interval is, undecided when it straddles the goal or has no upper bound', () => {
  const n = 1000;
  const { lower, upper } = quantileInterval(n, 0.99);
  assert.ok(lower !== undefined && upper !== undefined && lower < upper);
  // Latency i/10 ms: the interval's bounds are lower/10 and upper/10 ms.
  const ramp = Array.from({ length: n }, (_, i) => i / 10);
  const under = p99AgainstGoal(ramp, upper! / 10 + 0.05);
  assert.equal(under.verdict, 'under');
  assert.equal(under.lower, lower! / 10);
  assert.equal(under.upper, upper! / 10);
  assert.match(under.text, new RegExp(`^interval ${(lower! / 10).toFixed(1)} to ${(upper! / 10).toFixed(1)} ms \\(coverage 9[5-9]\\.\\d%, 1000 latencies\\)$`));
  // A goal at the upper bound itself is not met by it (the p99 may be that value); one at the lower bound is over.
  assert.equal(p99AgainstGoal(ramp, upper! / 10).verdict, 'undecided');
  assert.equal(p99AgainstGoal(ramp, (lower! + upper!) / 20).verdict, 'undecided');
  assert.equal(p99AgainstGoal(ramp, lower! / 10).verdict, 'over');
  // 300 latencies: a lower bound, but no upper one, so only "over" can be decided.
  const few = quantileInterval(300, 0.99);
  assert.ok(few.lower !== undefined && few.upper === undefined);
  const fast = p99AgainstGoal(new Array<number>(300).fill(5), 20);
  assert.equal(fast.verdict, 'undecided');
  assert.match(fast.text, /to above 5\.0 \(too few latencies to bound it\) ms/);
  assert.equal(p99AgainstGoal(new Array<number>(300).fill(30), 20).verdict, 'over');
});
