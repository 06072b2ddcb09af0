/**
 * The recent-failures bound: the memory store's list and the SQLite store's page pre-selection
 * (newestFailures) must keep exactly the failures a plain "add all, sort newest first, keep the
 * first 20" keeps, on random pages with many equal times.
 */
import { test } from 'node:test';
import fc from 'fast-check';
import { newestFailures, RECENT_FAILURES_MAX, RecentFailures } from '../src/store/recent-failures.ts';
import type { RecentFailure } from '../src/store/types.ts';
import { checkProperty } from './helpers/random.ts';

const failure = (time: number, n: number): RecentFailure => ({
  time,
  partition: 'p',
  groupKey: `g${n}`,
  occurrenceId: `o${n}`,
  signature: 's',
  decision: 'accept_burst',
});

/** Newest first by time, the earlier added first on a tie (a stable sort), the first `max`. */
function reference(all: RecentFailure[], max = RECENT_FAILURES_MAX): RecentFailure[] {
  return all
    .map((f, i) => ({ f, i }))
    .sort((a, b) => b.f.time - a.f.time || a.i - b.i)
    .slice(0, max)
    .map((x) => x.f);
}

const pages = fc.array(fc.array(fc.integer({ min: 0, max: 30 }), { maxLength: 80 }), { maxLength: 6 });

test('the memory list keeps what sorting everything keeps', () => {
  checkProperty(
    fc.property(pages, (times) => {
      const list = new RecentFailures();
      const all: RecentFailure[] = [];
      let n = 0;
      for (const page of times) for (const t of page) all.push(failure(t, n++));
      for (const f of all) list.add(f);
      const want = reference(all).map((f) => f.occurrenceId);
      const got = list.list().map((f) => f.occurrenceId);
      if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`kept ${got.join()} instead of ${want.join()}`);
    }),
    { numRuns: 300 },
  );
});

test('the memory list keeps the same when a page is added at once', () => {
  checkProperty(
    fc.property(pages, (times) => {
      const list = new RecentFailures();
      const all: RecentFailure[] = [];
      let n = 0;
      for (const page of times) {
        const failures = page.map((t) => failure(t, n++));
        all.push(...failures);
        list.addPage(failures);
      }
      const want = reference(all).map((f) => f.occurrenceId);
      const got = list.list().map((f) => f.occurrenceId);
      if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`kept ${got.join()} instead of ${want.join()}`);
    }),
    { numRuns: 300 },
  );
});

test("writing only a page's newest failures keeps the same list as writing all of them", () => {
  checkProperty(
    fc.property(pages, (times) => {
      const all: RecentFailure[] = [];
      const written: RecentFailure[] = [];
      let n = 0;
      for (const page of times) {
        const list = page.map((t) => failure(t, n++));
        all.push(...list);
        const kept = newestFailures(list);
        const ties = list.filter((f) => f.time === Math.min(...kept.map((k) => k.time))).length;
        if (kept.length > RECENT_FAILURES_MAX + ties) throw new Error('more than the bound and its ties');
        written.push(...kept);
      }
      const want = reference(all).map((f) => f.occurrenceId);
      const got = reference(written).map((f) => f.occurrenceId);
      if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`kept ${got.join()} instead of ${want.join()}`);
    }),
    { numRuns: 300 },
  );
});
