/**
 * The watchdog processor (DESIGN 3.4): placed between classify and recurrence, it reads what a
 * page says about model requests and conversations (detect.ts), judges failed runs and fired retry
 * timers (policy.ts), and writes the effects into the page's commit: its state (conversation
 * facts, judged runs, retry checkpoints, recent reports), its durable timers and its work events.
 * It keeps nothing between pages but the history mark once read; everything else is in the store.
 *
 * State (README "Provider watchdog"): namespace `<id>` — `c:<conversation>` facts (7 days) and
 * `r:<run>` judged runs (7 days), evictable; `<id>/checkpoints` — `<conversation>` retry
 * checkpoints and `~mark` the history mark, never evicted (pending checkpoints are bounded by the
 * pipeline's timers, retried ones expire after a day); `<id>/reports` — `recent`, the newest
 * reports and the counts.
 */
import { concatMap, forkJoin, from, map, of, type ObservableInput, type OperatorFunction } from 'rxjs';
import type { ReportedFailure } from '../../component.ts';
import { isFailure } from '../../model/event.ts';
import type { WorkOutboxItem } from '../../model/work.ts';
import type { StateEntry, StateWrite, TimerSpec } from '../../store/state.ts';
import { withState, withTimers, type PageItem, type WorkPage } from '../page.ts';
import { readCheckpoint } from './checkpoint.ts';
import { observe, type Observation } from './detect.ts';
import { summarizeError } from './diagnose.ts';
import {
  emptyFacts,
  judgePage,
  judgeTimer,
  retryTimerId,
  storedCheckpoint,
  timerChanges,
  type ConversationFacts,
  type ConversationState,
  type Effects,
  type LogLine,
  type PolicyOptions,
  type RunRecord,
} from './policy.ts';

/** The watchdog's namespaces. */
export type WatchdogNamespace = 'facts' | 'checkpoints' | 'reports';

/** Facts and judged runs are kept this long after their last write. */
export const FACTS_TTL_MS = 7 * 24 * 3600_000;
/** A retried checkpoint waits this long for the retry's outcome, then the chain ends. */
export const OUTCOME_TTL_MS = 24 * 3600_000;
export const MARK_KEY = '~mark';
export const RECENT_KEY = 'recent';

/** What the operator reads and writes: loads (observables, so tests answer in virtual time) and write builders. */
export interface WatchdogStateView {
  load(ns: WatchdogNamespace, keys: readonly string[]): ObservableInput<Map<string, StateEntry>>;
  put(ns: WatchdogNamespace, key: string, value: unknown, opts?: { version?: number; ttlMs?: number }): StateWrite;
  delete(ns: WatchdogNamespace, key: string, opts?: { version?: number }): StateWrite;
  timer(spec: Omit<TimerSpec, 'owner'>): TimerSpec;
  ownTimers(page: WorkPage): Array<{ id: string; partition: string; due: number; payload: unknown }>;
}

export interface WatchdogOptions extends PolicyOptions {
  /** Reports kept in the recent list (`failure_limit`). */
  failureLimit: number;
  /** Handled provider failures also go on to recurrence (`open_work`). */
  openWork: boolean;
  /** The clock timers fire by (wall clock); the history mark of a first start. */
  now: () => number;
  /** When the watchdog started: failures before it are history, on its very first start. */
  startedAt: number;
}

export interface WatchdogHooks {
  log?(line: LogLine): void;
}

/** The recent reports and the counts, one entry. */
export interface RecentReports {
  v: 1;
  failures: ReportedFailure[];
  counts: Record<string, number>;
}

export function watchdog(opts: WatchdogOptions, state: WatchdogStateView, hooks: WatchdogHooks = {}): OperatorFunction<WorkPage, WorkPage> {
  let since: number | undefined;
  const log = (fx: Effects) => {
    for (const l of fx.logs) hooks.log?.(l);
  };

  /**
   * The history mark: read once. The factory's `prepare` writes it at the very first start; only
   * where none ran (the operator alone) is it written here, with `startedAt`, at the first page.
   */
  const mark = (): ObservableInput<{ since: number; write: StateWrite[] }> => {
    if (since !== undefined) return of({ since, write: [] });
    return from(state.load('checkpoints', [MARK_KEY])).pipe(
      map((entries) => {
        const stored = entries.get(MARK_KEY)?.value as { since?: unknown } | undefined;
        if (typeof stored?.since === 'number') {
          since = stored.since;
          return { since, write: [] };
        }
        return { since: opts.startedAt, write: [state.put('checkpoints', MARK_KEY, { v: 1, since: opts.startedAt }, { version: 1 })] };
      }),
    );
  };

  const onLogPage = (page: WorkPage): ObservableInput<WorkPage> => {
    const observations = page.items.flatMap((item, index) => {
      const obs = observe(item.entry.event);
      return obs ? [{ index, obs }] : [];
    });
    if (observations.length === 0) return of(page);
    return forkJoin({ m: from(mark()), loaded: from(loadConversation(state, page.partition)) }).pipe(
      concatMap(({ m, loaded }) => {
        // Judged runs: the page's failed runs, and the run of the conversation's retry chain (or of the chain a finished turn ended).
        const runs = observations.flatMap((o) => (o.obs.kind === 'failure' ? [o.obs.failure.run] : []));
        if (loaded.state.checkpoint.kind === 'ok') runs.push(loaded.state.checkpoint.value.run);
        if (loaded.state.facts.closed) runs.push(loaded.state.facts.closed.chain.run);
        const keys = unique(runs).map((r) => `r:${r}`);
        return from(keys.length ? state.load('facts', keys) : [new Map<string, StateEntry>()]).pipe(map((runEntries) => ({ m, loaded, runEntries })));
      }),
      concatMap(({ m, loaded, runEntries }) => {
        for (const [key, entry] of runEntries) loaded.state.runs.set(key.slice(2), entry.value as RunRecord);
        const pending = pendingTimer(opts, loaded.state.checkpoint);
        const cs: ConversationState = { ...loaded.state, since: m.since };
        const fx = judgePage(cs, observations, opts);
        return from(withRecent(state, fx, opts)).pipe(
          map((recentWrites) => {
            log(fx);
            const writes = [
              ...m.write,
              ...conversationWrites(state, cs, fx, { facts: loaded.factsEntry, checkpoint: loaded.checkpointEntry, runs: runEntries }),
              ...recentWrites,
            ];
            let next = withTimers(withState(page, writes), timerWrites(state, fx, pending));
            next = { ...next, commit: { ...next.commit, outbox: [...next.commit.outbox, ...fx.events] } };
            return opts.openWork ? next : markHandled(next, fx, observations, opts.id);
          }),
        );
      }),
    );
  };

  const onTimerPage = (page: WorkPage): ObservableInput<WorkPage> => {
    const mine = state.ownTimers(page);
    if (mine.length === 0) return of(page);
    return forkJoin({ m: from(mark()), loaded: from(loadConversation(state, page.partition)) }).pipe(
      concatMap(({ m, loaded }) => {
        const cs: ConversationState = { ...loaded.state, since: m.since };
        const fx = mergeEffects(mine.map((t) => judgeTimer(cs, t, opts, opts.now())));
        return from(withRecent(state, fx, opts)).pipe(
          map((recentWrites) => {
            log(fx);
            const writes = [...m.write, ...conversationWrites(state, cs, fx, { facts: loaded.factsEntry, checkpoint: loaded.checkpointEntry }), ...recentWrites];
            // The runner clears every fired timer in this commit; one the page sets again is re-armed.
            const next = withTimers(withState(page, writes), timerWrites(state, fx, new Set()));
            return { ...next, commit: { ...next.commit, outbox: [...next.commit.outbox, ...fx.events] } };
          }),
        );
      }),
    );
  };

  return concatMap((page) => (page.timers ? onTimerPage(page) : onLogPage(page)));
}

interface Loaded {
  state: Omit<ConversationState, 'since'>;
  factsEntry: StateEntry | undefined;
  checkpointEntry: StateEntry | undefined;
}

function loadConversation(state: WatchdogStateView, conversation: string): ObservableInput<Loaded> {
  return forkJoin({ facts: from(state.load('facts', [`c:${conversation}`])), checkpoints: from(state.load('checkpoints', [conversation])) }).pipe(
    map(({ facts, checkpoints }) => {
      const factsEntry = facts.get(`c:${conversation}`);
      const checkpointEntry = checkpoints.get(conversation);
      return {
        state: { conversation, facts: readFacts(factsEntry?.value), checkpoint: storedCheckpoint(checkpointEntry?.value), runs: new Map<string, RunRecord>() },
        factsEntry,
        checkpointEntry,
      };
    }),
  );
}

/** Stored facts, or empty ones when absent or of another shape (facts are a cache: starting over is safe). */
function readFacts(value: unknown): ConversationFacts {
  const f = value as Partial<ConversationFacts> | undefined;
  if (!f || f.v !== 1 || !Array.isArray(f.tools) || !Array.isArray(f.ends)) return emptyFacts();
  const facts = { ...emptyFacts(), ...f } as ConversationFacts;
  const c = facts.closed;
  if (c && (typeof c.by !== 'string' || !Number.isFinite(c.ms) || !readCheckpoint(c.chain).ok)) facts.closed = null;
  return facts;
}

interface LoadedEntries {
  facts: StateEntry | undefined;
  checkpoint: StateEntry | undefined;
  /** The judged runs read for the page (absent on a timer page: run records are then overwritten). */
  runs?: Map<string, StateEntry>;
}

/** The state writes of a page: conversation facts, judged runs, the checkpoint — conditional on what was read. */
function conversationWrites(state: WatchdogStateView, cs: ConversationState, fx: Effects, loaded: LoadedEntries): StateWrite[] {
  const writes: StateWrite[] = [];
  const next = (e: StateEntry | undefined) => (e?.version ?? 0) + 1;
  if (fx.factsChanged) writes.push(state.put('facts', `c:${cs.conversation}`, cs.facts, { version: next(loaded.facts), ttlMs: FACTS_TTL_MS }));
  for (const [run, rec] of fx.runs) {
    // A run judged here for the first time is created conditionally: two pipelines or sidecars never both judge it.
    const version = loaded.runs ? { version: next(loaded.runs.get(`r:${run}`)) } : {};
    writes.push(state.put('facts', `r:${run}`, rec, { ...version, ttlMs: FACTS_TTL_MS }));
  }
  if (fx.checkpoint !== undefined) {
    const entry = loaded.checkpoint;
    if (fx.checkpoint === null) {
      if (entry) writes.push(state.delete('checkpoints', cs.conversation, { version: entry.version + 1 }));
    } else {
      const ttl = fx.checkpoint.state === 'retried' ? { ttlMs: OUTCOME_TTL_MS } : {};
      writes.push(state.put('checkpoints', cs.conversation, fx.checkpoint, { version: next(entry), ...ttl }));
    }
  }
  return writes;
}

/** The retry timer known to be pending before the page: the loaded checkpoint's, when this pipeline set it. */
function pendingTimer(opts: PolicyOptions, cp: ConversationState['checkpoint']): Set<string> {
  return cp.kind === 'ok' && cp.value.state === 'pending' && cp.value.pipeline === opts.pipeline ? new Set([retryTimerId(opts.id, cp.value.run)]) : new Set();
}

function timerWrites(state: WatchdogStateView, fx: Effects, pending: ReadonlySet<string>) {
  const { set, clear } = timerChanges(fx, pending);
  return { set: set.map((t) => state.timer({ id: t.id, partition: t.partition, due: t.due, payload: t.payload })), clear: clear.map((id) => ({ id })) };
}

/** Adds the page's reports and counts to the recent list (read, merged, written back conditionally). */
function withRecent(state: WatchdogStateView, fx: Effects, opts: WatchdogOptions): ObservableInput<StateWrite[]> {
  if (fx.reports.length === 0 && Object.keys(fx.counts).length === 0) return of([]);
  return from(state.load('reports', [RECENT_KEY])).pipe(
    map((entries) => {
      const entry = entries.get(RECENT_KEY);
      const stored = entry?.value as Partial<RecentReports> | undefined;
      const failures = [...(Array.isArray(stored?.failures) ? stored.failures : []), ...fx.reports.map(reportedFailure)];
      const byId = new Map(failures.map((f) => [f.request_id as string, f]));
      const newest = [...byId.values()].sort((a, b) => b.failed_at_ms - a.failed_at_ms).slice(0, opts.failureLimit);
      const counts: Record<string, number> = { ...(stored?.counts ?? {}) };
      for (const [k, v] of Object.entries(fx.counts)) counts[k] = (counts[k] ?? 0) + (v ?? 0);
      const value: RecentReports = { v: 1, failures: newest, counts };
      return [state.put('reports', RECENT_KEY, value, { version: (entry?.version ?? 0) + 1 })];
    }),
  );
}

/** A report as status lists it: its data, with the failure time in ms. */
function reportedFailure(item: WorkOutboxItem): ReportedFailure {
  const data = item.event.data as unknown as Record<string, unknown>;
  return { ...data, failed_at_ms: Date.parse(data.failed_at as string), failed_at: data.failed_at as string, line: data.line as string };
}

/**
 * Marks the items the watchdog handled so recurrence leaves them (unless `open_work`): the
 * provider failures, and the page's other failure records of the same run that carry the same
 * provider message (the failed parent span, the log line the agent wrote about it).
 */
function markHandled(page: WorkPage, fx: Effects, observations: ReadonlyArray<{ index: number; obs: Observation }>, id: string): WorkPage {
  if (fx.handled.size === 0) return page;
  const handled = new Set(fx.handled);
  const messages = new Map<string, string[]>();
  for (const { index, obs } of observations) {
    if (obs.kind !== 'failure' || !fx.handled.has(index)) continue;
    const key = summarizeError(obs.failure.error)
      .replace(/^\d{3} /, '')
      .slice(0, 80)
      .toLowerCase();
    if (key.length >= 12) messages.set(obs.failure.run, [...(messages.get(obs.failure.run) ?? []), key]);
  }
  page.items.forEach((item, index) => {
    if (handled.has(index) || !item.diagnosis || !isFailure(item.diagnosis)) return;
    const keys = messages.get(item.entry.event.turnId ?? item.entry.event.eventId);
    const text = `${item.diagnosis.signature ?? ''}\n${item.diagnosis.excerpt ?? ''}`.toLowerCase();
    if (keys?.some((k) => text.includes(k))) handled.add(index);
  });
  const items: PageItem[] = page.items.map((item, index) => (handled.has(index) ? { ...item, handledBy: id } : item));
  return { ...page, items };
}

function mergeEffects(all: Effects[]): Effects {
  const fx = all[0]!;
  for (const other of all.slice(1)) {
    fx.factsChanged ||= other.factsChanged;
    if (other.checkpoint !== undefined) fx.checkpoint = other.checkpoint;
    for (const [k, v] of other.runs) fx.runs.set(k, v);
    for (const [k, v] of other.timers) fx.timers.set(k, v);
    fx.events.push(...other.events);
    fx.reports.push(...other.reports);
    for (const [k, v] of Object.entries(other.counts)) fx.counts[k as keyof Effects['counts']] = (fx.counts[k as keyof Effects['counts']] ?? 0) + (v ?? 0);
    fx.logs.push(...other.logs);
  }
  return fx;
}

function unique<T>(xs: T[]): T[] {
  return [...new Set(xs)];
}

export { retryTimerId };
