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

  /**
   * A page's failures, in their order: the same list as adding them one by one (the sort is
   * stable, so ties keep their order of arrival), sorted once for the page instead of once each.
   */
  addPage(page: readonly RecentFailure[]): void {
    if (page.length === 0) return;
    for (const f of newestFailures(page, this.max)) this.items.push(f);
    this.items.sort((a, b) => b.time - a.time);
    if (this.items.length > this.max) this.items.length = this.max;
  }

  list(): RecentFailure[] {
    return this.items.slice();
  }
}

/**
 * The failures of `list` that can be among the newest `max` once added to any earlier ones, in
 * their original order: the page's newest `max` by time, and every other failure as new as the
 * last of them (stores break ties differently: SQLite by insertion, Redis by member). The others
 * are older than `max` of the page's own, so a store would trim them at once: it need not write
 * (or send) them.
 */
export function newestFailures(list: readonly RecentFailure[], max = RECENT_FAILURES_MAX): readonly RecentFailure[] {
  if (list.length <= max) return list;
  const bound = list.map((f) => f.time).sort((a, b) => b - a)[max - 1]!;
  return list.filter((f) => f.time >= bound);
}
