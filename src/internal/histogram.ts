/**
 * A latency histogram with fixed buckets, as Prometheus exposes one: how many observations fell at
 * or under each bound, their sum and their count. Fixed bounds keep an observation to a few
 * comparisons and the memory constant, and let a scraper aggregate across processes.
 */

/**
 * Bucket bounds in seconds, for the durations operators ask about here: an ack (the goal is 20 ms
 * at p99), a disk's sync (well under a millisecond to seconds when the disk stalls).
 */
export const LATENCY_BOUNDS_SECONDS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export interface HistogramSnapshot {
  /** Upper bounds, ascending; +Inf is implied. */
  bounds: readonly number[];
  /** Observations at or under each bound (cumulative, as Prometheus's `le`), one per bound. */
  cumulative: number[];
  count: number;
  sum: number;
}

export class Histogram {
  private readonly counts: number[];
  private count = 0;
  private sum = 0;

  constructor(private readonly bounds: readonly number[] = LATENCY_BOUNDS_SECONDS) {
    this.counts = new Array<number>(bounds.length).fill(0);
  }

  observe(seconds: number): void {
    if (!(seconds >= 0)) return; // NaN or a clock that went back: not a duration
    this.count++;
    this.sum += seconds;
    for (let i = 0; i < this.bounds.length; i++) {
      if (seconds <= this.bounds[i]!) {
        this.counts[i]!++;
        return;
      }
    }
  }

  snapshot(): HistogramSnapshot {
    let running = 0;
    const cumulative = this.counts.map((n) => (running += n));
    return { bounds: this.bounds, cumulative, count: this.count, sum: this.sum };
  }
}
