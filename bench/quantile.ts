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
