import type { AgentEvent, Diagnosis } from '../model/event.ts';
import type { Decision, GroupState, WorkEvent } from '../model/work.ts';
import type { FiredTimer, StateWrite, TimerRef, TimerSpec } from '../store/state.ts';
import type { LogEntry, PageCommit } from '../store/types.ts';

/**
 * The unit that flows through a pipeline's processor chain: one page of one partition's ingest
 * log. Each processor adds to it (classify sets diagnoses, recurrence decides and fills the
 * commit); the service commits it atomically at the end of the chain.
 *
 * A *timer page* carries no log entries but the partition's durable timers that fell due
 * (`timers`): each processor acts on the timers it owns (adds outbox items, writes state, sets new
 * timers) and passes the others through; its commit moves no cursor. The runner clears every
 * fired timer the page did not set again, in the same commit, so a timer fires exactly once.
 */
export interface WorkPage {
  pipeline: string;
  partition: string;
  items: PageItem[];
  /** Timers that fell due (a timer page); absent on a page of log entries. */
  timers?: FiredTimer[];
  /** What the page will commit; processors fill it in. */
  commit: PageCommit;
}

export interface PageItem {
  entry: LogEntry;
  diagnosis?: Diagnosis;
  occurrence?: Occurrence;
  /**
   * The processor (its id) that acted on this failure itself, so later stages leave it: the
   * watchdog handles provider failures, which then open no ordinary recurrence work.
   */
  handledBy?: string;
  /**
   * Set by a processor that found this record to be further evidence of an occurrence already
   * counted (a journal case and the same failure detected from a trace in the same turn): the
   * recurrence processor does not count it again. The value names what it was merged into.
   */
  mergedInto?: string;
}

export interface Occurrence {
  occurrenceId: string;
  groupKey: string;
  decision: Decision;
  /** Work item this occurrence created or updated, if any. */
  workId: string | null;
  /** Whether max_per_turn kept this occurrence from creating work. */
  suppressed?: 'max_per_turn';
  revision: string;
  /** The operation the occurrence is grouped by: the rule set's (`rules: reference`) or the record's. */
  operation?: string;
  /** The group's count after this occurrence (0 when rejected). */
  count: number;
}

export function newWorkPage(pipeline: string, partition: string, entries: LogEntry[]): WorkPage {
  return {
    pipeline,
    partition,
    items: entries.map((entry) => ({ entry })),
    commit: {
      pipeline,
      partition,
      cursor: entries.length ? entries[entries.length - 1]!.id : '',
      groups: [],
      turns: [],
      revisions: [],
      outbox: [],
      failures: [],
    },
  };
}

/**
 * The item with its diagnosis set: `{ ...item, diagnosis }`, with the same keys in the same order.
 * On V8 11 (Node.js 20) a spread followed by another property gives every object a map of its own
 * (the spread's copy has a map outside the transition tree, so adding a property to it makes a new
 * map each time), and every later read of the page's items then misses its inline cache. An item
 * made of its entry alone, as every page's items start, is built as a literal instead: one shape.
 */
export function withDiagnosis(item: PageItem, diagnosis: Diagnosis): PageItem {
  return ownKeysAre(item, 'entry') ? { entry: item.entry, diagnosis } : { ...item, diagnosis };
}

/** The item with its occurrence set: `{ ...item, occurrence }`, built as withDiagnosis says. */
export function withOccurrence(item: PageItem, occurrence: Occurrence): PageItem {
  return ownKeysAre(item, 'entry', 'diagnosis') ? { entry: item.entry, diagnosis: item.diagnosis, occurrence } : { ...item, occurrence };
}

/**
 * Whether the item's enumerable string keys (own or inherited, which for-in lists without building
 * an array) are exactly `first`, then `second` if given. Items are plain data with string keys, so
 * then a spread would copy exactly those.
 */
function ownKeysAre(item: PageItem, first: string, second?: string): boolean {
  let n = 0;
  for (const key in item) {
    if (n === 0 ? key !== first : n > 1 || key !== second || !Object.hasOwn(item, key)) return false;
    n++;
  }
  return n === (second === undefined ? 1 : 2) && Object.hasOwn(item, first);
}

/** A timer page: the due timers of one partition, no log entries, a commit that moves no cursor. */
export function newTimerPage(pipeline: string, partition: string, timers: FiredTimer[]): WorkPage {
  const page = newWorkPage(pipeline, partition, []);
  return { ...page, timers, commit: { ...page.commit, cursor: null } };
}

/** The page with `writes` added to its commit's state section (in order, after earlier ones). */
export function withState(page: WorkPage, writes: readonly StateWrite[]): WorkPage {
  if (writes.length === 0) return page;
  return { ...page, commit: { ...page.commit, state: [...(page.commit.state ?? []), ...writes] } };
}

/** The page with timers set and cleared in its commit (a clear applies before a set of the same id). */
export function withTimers(page: WorkPage, changes: { set?: readonly TimerSpec[]; clear?: readonly TimerRef[] }): WorkPage {
  if (!changes.set?.length && !changes.clear?.length) return page;
  const t = page.commit.timers ?? {};
  return {
    ...page,
    commit: {
      ...page.commit,
      timers: { set: [...(t.set ?? []), ...(changes.set ?? [])], clear: [...(t.clear ?? []), ...(changes.clear ?? [])] },
    },
  };
}

export type { AgentEvent, GroupState, WorkEvent };
