import type { RecentFailure } from './types.ts';

export const RECENT_FAILURES_MAX = 20;

/** The newest reported failures, newest first by failure (event) time, bounded. */
export class RecentFailures {
  private items: RecentFailure[] = [];
  constructor(private readonly max = RECENT_FAILURES_MAX) {}

  add(f: RecentFailure): void {
    // Full, and no newer than the last kept: the stable sort would put it past the end.
    if (this.items.length >= this.max && f.time <= this.items[this.items.length - 1]!.time) return;
    this.items.push(f);
    this.items.sort((a, b) => b.time - a.time);
    if (this.items.length > this.max) this.items.length = this.max;
  }

  list(): RecentFailure[] {
    return this.items.slice();
  }
}

/**
 * The failures of `list` that can be among the newest `max` once added to any earlier ones: the
 * page's own newest `max` (by time, the earlier one first on a tie, as the stores order them), in
 * their original order. The others would be trimmed at once, so a store need not write them.
 */
export function newestFailures(list: readonly RecentFailure[], max = RECENT_FAILURES_MAX): readonly RecentFailure[] {
  if (list.length <= max) return list;
  const keep = new Set(
    list
      .map((f, i) => ({ t: f.time, i }))
      .sort((a, b) => b.t - a.t || a.i - b.i)
      .slice(0, max)
      .map((x) => x.i),
  );
  return list.filter((_, i) => keep.has(i));
}
