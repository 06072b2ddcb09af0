/**
 * How far a sample's quantile can be trusted: a distribution-free confidence interval for the
 * q-quantile from the order statistics of n observations. The number of observations at or below
 * the true quantile is Binomial(n, q), so the true quantile lies between the r-th and the s-th
 * smallest observation with probability P(r <= B < s). With the ~360 latencies of a half-rate
 * slice a p99 is the fourth-largest latency, and all 360 lie below the true p99 0.99^360 = 2.7% of
 * the time, more than the 2.5% a 95% interval's upper tail allows: those data give no upper bound.
 */

export interface QuantileInterval {
  /** 0-based index into the sorted sample of the lower bound; undefined: none (too few observations). */
  lower: number | undefined;
  /** 0-based index of the upper bound; undefined: none (the true quantile may be above every observation). */
  upper: number | undefined;
  /** The interval's exact coverage, P(r <= B < s), at least `confidence` when both bounds exist. */
  coverage: number;
}

/** The narrowest equal-tailed interval of order statistics with at least `confidence` (each tail at most half the rest). */
export function quantileInterval(n: number, q: number, confidence = 0.95): QuantileInterval {
  if (!(Number.isInteger(n) && n >= 1) || !(q > 0 && q < 1) || !(confidence > 0 && confidence < 1)) {
    throw new RangeError(`quantileInterval: n must be an integer >= 1, q and confidence in (0, 1); got n=${n}, q=${q}, confidence=${confidence}`);
  }
  const tail = (1 - confidence) / 2;
  // cdf[k] = P(B <= k), the binomial pmf built in log space (q^n underflows for large n).
  const cdf: number[] = new Array(n + 1);
  let logPmf = n * Math.log1p(-q);
  const step = Math.log(q) - Math.log1p(-q);
  let sum = 0;
  for (let k = 0; k <= n; k++) {
    sum += Math.exp(logPmf);
    cdf[k] = Math.min(1, sum);
    logPmf += Math.log(n - k) - Math.log(k + 1) + step;
  }
  // Lower: the largest 1-based rank r with P(B < r) = cdf[r - 1] <= tail.
  let r = 0;
  while (r < n && cdf[r]! <= tail) r++;
  // Upper: the smallest 1-based rank s with P(B >= s) = 1 - cdf[s - 1] <= tail.
  let s = n + 1;
  while (s - 2 >= 0 && 1 - cdf[s - 2]! <= tail) s--;
  const below = r === 0 ? 0 : cdf[r - 1]!;
  const upTo = s === n + 1 ? 1 : cdf[s - 1]!;
  return { lower: r === 0 ? undefined : r - 1, upper: s === n + 1 ? undefined : s - 1, coverage: upTo - below };
}

/** Issue 15's ack goal on the SQLite default, p99 under this (ms) at half the maximum rate: bench:ingest and bench:ack-phases judge by it. */
export const ACK_GOAL_MS = 20;

/** The `q` quantile (0–1) of ascending `sorted` latencies, the nearest rank below; NaN for none. */
export function percentile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

/** A sample's p99 against a latency goal: the 95% interval's bounds (values, not ranks) and the verdict they allow. */
export interface P99Verdict {
  lower: number | undefined;
  upper: number | undefined;
  coverage: number;
  /** under: the interval lies below the goal; over: at or above it; undecided: it straddles the goal or has no upper bound. */
  verdict: 'under' | 'over' | 'undecided';
  /** "interval 12.3 to 18.9 ms (coverage 95.6%, 1200 latencies)", as the benches print it. */
  text: string;
}

/** The p99's 95% interval of `sorted` (ascending latencies in ms) and where it lies against `goalMs`. */
export function p99AgainstGoal(sorted: readonly number[], goalMs: number): P99Verdict {
  const { lower: r, upper: s, coverage } = quantileInterval(sorted.length, 0.99);
  const lower = r === undefined ? undefined : sorted[r]!;
  const upper = s === undefined ? undefined : sorted[s]!;
  const verdict = upper !== undefined && upper < goalMs ? 'under' : lower !== undefined && lower >= goalMs ? 'over' : 'undecided';
  const high = upper === undefined ? `above ${sorted[sorted.length - 1]!.toFixed(1)} (too few latencies to bound it)` : upper.toFixed(1);
  const text = `interval ${lower === undefined ? '-' : lower.toFixed(1)} to ${high} ms (coverage ${(coverage * 100).toFixed(1)}%, ${sorted.length} latencies)`;
  return { lower, upper, coverage, verdict, text };
}
