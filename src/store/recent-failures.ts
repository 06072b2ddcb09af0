import type { RecentFailure } from './types.ts';

export const RECENT_FAILURES_MAX = 20;

/** The newest reported failures, newest first by failure (event) time, bounded. */
export class RecentFailures {
  private items: RecentFailure[] = [];
  constructor(private readonly max = RECENT_FAILURES_MAX) {}

  add(f: RecentFailure): void {
    this.items.push(f);
    this.items.sort((a, b) => b.time - a.time);
    if (this.items.length > this.max) this.items.length = this.max;
  }

  list(): RecentFailure[] {
    return this.items.slice();
  }
}
