/**
 * The watchdog's policy (DESIGN 3.4, as the reference runtime does it), as pure functions of one
 * conversation's state and what a page brings; the operator loads the state and commits the
 * effects. Times are event times (the records' own), so a replay decides as the first run did; a
 * retry falls due `retry_after` after the failure (a durable timer), whatever the wall clock.
 *
 * - A **temporary** failure (overloaded, server error, dropped stream, incomplete response) gets
 *   one automatic retry `retry_after` after it, as `dev.vigil.provider.retry`
 *   (`watchdog-retry:<failed run>`) — unless the conversation moved on before it is due (newer
 *   activity, another run of the conversation, the runtime's own retry checkpoint pending); the
 *   checkpoint that holds the wait is written in the same commit as its timer.
 * - A failure after the retry, or a **permanent** failure (login, credentials, quota, context too
 *   long, bad request), gives one `dev.vigil.provider.report` (`watchdog-report:<failed run>`) at
 *   once. A **rate limit** is reported once and never retried: re-prompting runs into the limit.
 * - Each failed run is judged once (two records of one run, two pipelines, a replay); a failure
 *   older than the first start of the watchdog is history: judged, never acted on.
 */
import type { ActivityName } from '../../model/activity.ts';
import { checkpointError, readCheckpoint, readRuntimeCheckpoint, withAttempt, CHECKPOINT_VERSION, type FailureRecord, type RetryCheckpoint } from './checkpoint.ts';
import type { Observation, ProviderFailure } from './detect.ts';
import { diagnoseProviderFailure, summarizeError } from './diagnose.ts';
import { providerEvent, REPORT_EVENT, RETRY_EVENT } from './events.ts';
import type { WorkOutboxItem } from '../../model/work.ts';

export interface PolicyOptions {
  /** The watchdog's component id (its timers' ids start with it). */
  id: string;
  pipeline: string;
  retryAfterMs: number;
}

/** What the watchdog remembers of a conversation (evictable facts, bounded). */
export interface ConversationFacts {
  v: 1;
  /** Newest activity that is not a turn's end (a tool ran, a model answered, a prompt, a compaction). */
  activity_ms: number | null;
  /** Newest ends of turns, per run (at most MAX_ENDS). */
  ends: Array<{ run: string; ms: number }>;
  /** Newest tool calls (at most MAX_TOOLS): the last step before a failure. */
  tools: Array<{ name: string; ms: number }>;
  title: string | null;
  /** The runtime's own newest retry checkpoint, until a finished turn clears it. */
  runtime: { ms: number; run: string; ok: boolean; problem?: string } | null;
  /**
   * The retry chain a finished turn of another run ended (its checkpoint cleared), kept until the
   * next chain: that run's own failure may still come. Its root span ends without an error when
   * the agent caught the failure, and its failure may be judged after its end (a log record in the
   * other pipeline, a span exported late): it is the chain failing again, not a new chain.
   */
  closed: { by: string; ms: number; chain: RetryCheckpoint } | null;
}

export const MAX_TOOLS = 8;
export const MAX_ENDS = 8;

export function emptyFacts(): ConversationFacts {
  return { v: 1, activity_ms: null, ends: [], tools: [], title: null, runtime: null, closed: null };
}

/** How a failed run was judged. */
export type Verdict = 'history' | 'retry' | 'report' | 'skipped' | 'runtime' | 'superseded' | 'chain';

export interface RunRecord {
  v: 1;
  verdict: Verdict;
  ms: number;
  conversation: string;
}

/** The stored checkpoint of the conversation as read: none, readable, or not readable (and why). */
export type StoredCheckpoint = { kind: 'none' } | { kind: 'ok'; value: RetryCheckpoint } | { kind: 'invalid'; problem: string };

export function storedCheckpoint(value: unknown): StoredCheckpoint {
  if (value === undefined || value === null) return { kind: 'none' };
  const read = readCheckpoint(value);
  return read.ok ? { kind: 'ok', value: read.value } : { kind: 'invalid', problem: read.problem };
}

/** One conversation's state for a page, as loaded; the policy changes it in place. */
export interface ConversationState {
  conversation: string;
  facts: ConversationFacts;
  checkpoint: StoredCheckpoint;
  /** Judged runs among those the page names. */
  runs: Map<string, RunRecord>;
  /** The history mark: failures before it are history. */
  since: number;
}

export interface LogLine {
  level: 'info' | 'warn' | 'error';
  message: string;
  fields: Record<string, unknown>;
}

/** A retry timer: `<id>:retry:<run>`, payload `{partition, run, deferrals}`. */
export interface RetryTimer {
  id: string;
  partition: string;
  due: number;
  payload: { partition: string; run: string; deferrals: number };
}

/** What the policy decided for a page or a fired timer; the operator commits it. */
export interface Effects {
  factsChanged: boolean;
  /** undefined: unchanged; null: deleted. */
  checkpoint: RetryCheckpoint | null | undefined;
  runs: Map<string, RunRecord>;
  /** The page's last word on each retry timer it touched: set (replacing), or null to clear. */
  timers: Map<string, RetryTimer | null>;
  /** Work events to add (reports and retries), in order. */
  events: WorkOutboxItem[];
  /** Reports, for the recent-failures list. */
  reports: WorkOutboxItem[];
  /** Page items (indices) the watchdog handled: provider failures. */
  handled: Set<number>;
  counts: Partial<Record<Verdict | 'deferred' | 'retried', number>>;
  logs: LogLine[];
}

function noEffects(): Effects {
  return { factsChanged: false, checkpoint: undefined, runs: new Map(), timers: new Map(), events: [], reports: [], handled: new Set(), counts: {}, logs: [] };
}

export function retryTimerId(id: string, run: string): string {
  return `${id}:retry:${run}`;
}

/**
 * The policy over one page of one conversation. Observations are taken in event-time order, so
 * "the last tool call before the failure" and "activity after it" hold whatever order a request
 * listed its spans in; a title anywhere in the page names the conversation for all of it (an
 * agent's root span, which carries it, ends last). Event times are whole milliseconds: a tool
 * call that ended in the same millisecond as a failure is taken as the step before it (it cannot
 * be a step after a failure that ended the run), whatever order the records arrived in; other
 * ties keep page order.
 */
export function judgePage(state: ConversationState, observations: ReadonlyArray<{ index: number; obs: Observation }>, opts: PolicyOptions): Effects {
  const fx = noEffects();
  const ordered = [...observations].sort((a, b) => timeOf(a.obs) - timeOf(b.obs) || tieRank(a.obs) - tieRank(b.obs) || a.index - b.index);
  for (const { obs } of ordered) {
    if (obs.kind === 'activity' && obs.title) {
      state.facts.title = obs.title.slice(0, 200);
      fx.factsChanged = true;
    }
  }
  for (const { index, obs } of ordered) {
    if (obs.kind === 'activity') onActivity(state, obs, opts, fx);
    else if (obs.kind === 'checkpoint') onRuntimeCheckpoint(state, obs, fx);
    else onFailure(state, index, obs.failure, opts, fx);
  }
  return fx;
}

type ActivityObservation = Extract<Observation, { kind: 'activity' }>;

function timeOf(o: Observation): number {
  return o.kind === 'failure' ? o.failure.time : o.time;
}

/** Among observations of the same millisecond: a completed tool call first, then page order. */
function tieRank(o: Observation): number {
  return o.kind === 'activity' && o.activity === 'tool.ok' ? 0 : 1;
}

function onActivity(state: ConversationState, a: ActivityObservation, opts: PolicyOptions, fx: Effects): void {
  const f = state.facts;
  fx.factsChanged = true;
  const isEnd = a.activity === 'turn.end';
  if (isEnd) {
    f.ends = withNewest(
      f.ends.filter((e) => e.run !== a.run || e.ms > a.time),
      { run: a.run, ms: a.time },
      MAX_ENDS,
    );
    if (a.title) f.title = a.title.slice(0, 200);
    if (a.lastActivityMs !== undefined) f.activity_ms = Math.max(f.activity_ms ?? -Infinity, a.lastActivityMs);
    if (a.lastTool) addTool(f, a.lastTool.name, a.lastTool.ms);
    // A finished turn (of another run than the one the runtime is retrying) clears the runtime's checkpoint.
    if (f.runtime && a.run !== f.runtime.run && a.time >= f.runtime.ms) f.runtime = null;
  } else {
    f.activity_ms = Math.max(f.activity_ms ?? -Infinity, a.time);
    if (a.tool) addTool(f, a.tool, a.time);
  }

  const cp = state.checkpoint;
  if (cp.kind === 'invalid') {
    if (isEnd) {
      fx.logs.push({
        level: 'warn',
        message: 'watchdog: a finished turn cleared a retry checkpoint that could not be read',
        fields: { conversation: state.conversation, problem: cp.problem },
      });
      state.checkpoint = { kind: 'none' };
      fx.checkpoint = null;
    }
    return;
  }
  if (cp.kind !== 'ok') return;
  const c = cp.value;
  if (c.state === 'pending') {
    if (movedOn(c, a)) skip(state, c, 'skipped', `the conversation moved on (${a.activity} at ${iso(a.time)})`, opts, fx);
    return;
  }
  // Retried: the retry's outcome. A finished turn of another run, a model answering or a new prompt after it ends the chain.
  const after = a.time >= (c.retried_at_ms ?? c.resume_at_ms);
  const outcome = (isEnd && a.run !== c.run) || a.activity === 'model_request.ok' || a.activity === 'prompt';
  if (after && outcome) {
    state.checkpoint = { kind: 'none' };
    fx.checkpoint = null;
    // A model answering or a new prompt is the retry's good outcome; a finished turn may still turn out to have failed.
    f.closed = isEnd ? { by: a.run, ms: a.time, chain: c } : null;
    fx.logs.push({
      level: 'info',
      message: 'watchdog: the conversation went on after the automatic retry',
      fields: { conversation: state.conversation, run: c.run, activity: a.activity },
    });
  }
}

/** Activity after the failure that means the conversation went on: anything but the failed run's own end (unless activity was folded into it). */
function movedOn(c: RetryCheckpoint, a: ActivityObservation): boolean {
  if (a.activity === 'turn.end') return (a.run !== c.run && a.time > c.failed_at_ms) || (a.lastActivityMs ?? -Infinity) > c.failed_at_ms;
  return a.time > c.failed_at_ms;
}

function onRuntimeCheckpoint(state: ConversationState, c: Extract<Observation, { kind: 'checkpoint' }>, fx: Effects): void {
  const read = readRuntimeCheckpoint(c.detail, c.rawSize);
  fx.factsChanged = true;
  if (state.facts.runtime && state.facts.runtime.ms > c.time) return;
  state.facts.runtime = read.ok ? { ms: c.time, run: c.run, ok: true } : { ms: c.time, run: c.run, ok: false, problem: read.problem };
  if (!read.ok) {
    fx.logs.push({
      level: 'error',
      message: checkpointError(`conversation ${JSON.stringify(state.conversation)} (runtime checkpoint of run ${JSON.stringify(c.run)})`, read.problem).message,
      fields: { code: 'VIGIL_CHECKPOINT_INVALID', conversation: state.conversation, run: c.run },
    });
  }
}

function onFailure(state: ConversationState, index: number, failure: ProviderFailure, opts: PolicyOptions, fx: Effects): void {
  fx.handled.add(index);
  const run = failure.run;
  if (failure.time < state.since) {
    if (!state.runs.has(run)) record(state, run, 'history', failure.time, fx);
    return;
  }
  const cp = state.checkpoint;
  const judged = state.runs.get(run);
  if (judged) {
    // Another record of a run already judged: a pending retry waits for the run's latest failure
    // (a runtime retrying on its own fails several times; the retry comes after the last).
    if (cp.kind === 'ok' && cp.value.run === run && cp.value.state === 'pending' && failure.time > cp.value.failed_at_ms) {
      const c = { ...cp.value, failed_at_ms: failure.time, resume_at_ms: failure.time + opts.retryAfterMs, failure: failureRecord(state, failure) };
      putCheckpoint(state, c, fx);
      setTimer(fx, retryTimer(opts, state.conversation, run, c.resume_at_ms, 0));
    }
    return;
  }
  const rec = failureRecord(state, failure);

  const closed = state.facts.closed;
  if (cp.kind === 'none' && closed?.by === run) {
    // The run that ended the chain failed: its failure judged after its end. Report the chain once.
    state.facts.closed = null;
    fx.factsChanged = true;
    report(state, closed.chain.run, closed.chain.failed_at_ms, failure.time, rec, true, fx);
    record(state, closed.chain.run, 'report', closed.chain.failed_at_ms, fx);
    record(state, run, 'chain', failure.time, fx);
    return;
  }

  if (cp.kind === 'ok') {
    const c = cp.value;
    if (c.state === 'retried' && run !== c.run && failure.time >= (c.retried_at_ms ?? c.resume_at_ms)) {
      // The failure after the automatic retry: report the chain once.
      report(state, c.run, c.failed_at_ms, failure.time, rec, true, fx);
      record(state, c.run, 'report', c.failed_at_ms, fx);
      record(state, run, 'chain', failure.time, fx);
      state.checkpoint = { kind: 'none' };
      fx.checkpoint = null;
      return;
    }
    if (c.state === 'pending' && run !== c.run) {
      if (failure.time < c.failed_at_ms) {
        // An older failure of the conversation, judged late: the conversation is already past it.
        record(state, run, 'superseded', failure.time, fx);
        return;
      }
      skip(state, c, 'skipped', `a newer run of the conversation failed (${run})`, opts, fx);
    }
  }

  const { category, temporary } = rec;
  if (!temporary || category === 'rate_limited') {
    report(state, run, failure.time, failure.time, rec, false, fx);
    record(state, run, 'report', failure.time, fx);
    return;
  }
  if (state.checkpoint.kind === 'invalid') {
    // The conversation's checkpoint cannot be read and must not be overwritten: no automatic retry, report instead.
    const why = `no automatic retry: the conversation's retry checkpoint cannot be read (${state.checkpoint.problem})`;
    fx.logs.push({
      level: 'error',
      message: `watchdog: ${why}; the failure is reported instead`,
      fields: { code: 'VIGIL_CHECKPOINT_INVALID', conversation: state.conversation, run },
    });
    report(state, run, failure.time, failure.time, { ...rec, hint: `${rec.hint}; ${why}` }, false, fx);
    record(state, run, 'report', failure.time, fx);
    return;
  }
  const moved = movedSince(state.facts, run, failure.time);
  if (moved) {
    record(state, run, 'skipped', failure.time, fx);
    fx.logs.push({ level: 'info', message: `watchdog: no retry, the conversation moved on (${moved})`, fields: { conversation: state.conversation, run } });
    return;
  }
  if (state.facts.runtime?.ok) {
    record(state, run, 'runtime', failure.time, fx);
    fx.logs.push({ level: 'info', message: "watchdog: no retry, the runtime's own retry checkpoint is pending", fields: { conversation: state.conversation, run } });
    return;
  }
  const c: RetryCheckpoint = {
    version: CHECKPOINT_VERSION,
    conversation: state.conversation,
    pipeline: opts.pipeline,
    run,
    state: 'pending',
    failed_at_ms: failure.time,
    resume_at_ms: failure.time + opts.retryAfterMs,
    attempts: {},
    failure: rec,
  };
  putCheckpoint(state, c, fx);
  setTimer(fx, retryTimer(opts, state.conversation, run, c.resume_at_ms, 0));
  record(state, run, 'retry', failure.time, fx);
}

/** What a timer page's own fired timer leads to. */
export function judgeTimer(state: ConversationState, timer: { due: number; payload: unknown }, opts: PolicyOptions, now: number): Effects {
  const fx = noEffects();
  const payload = timer.payload as Partial<RetryTimer['payload']> | null;
  const run = typeof payload?.run === 'string' ? payload.run : undefined;
  const deferrals = typeof payload?.deferrals === 'number' ? payload.deferrals : 0;
  if (run === undefined) return fx;
  const cp = state.checkpoint;
  const defer = (problem: string, where: string) => {
    const until = now + opts.retryAfterMs;
    setTimer(fx, retryTimer(opts, state.conversation, run, until, deferrals + 1));
    fx.counts.deferred = 1;
    fx.logs.push({
      level: 'error',
      message: checkpointError(where, problem, until).message,
      fields: { code: 'VIGIL_CHECKPOINT_INVALID', conversation: state.conversation, run, deferrals: deferrals + 1 },
    });
  };
  if (cp.kind === 'invalid') {
    defer(cp.problem, `conversation ${JSON.stringify(state.conversation)} (watchdog checkpoint of run ${JSON.stringify(run)})`);
    return fx;
  }
  if (cp.kind !== 'ok' || cp.value.run !== run || cp.value.state !== 'pending') return fx; // stale: the chain moved on
  const c = cp.value;
  const moved = movedSince(state.facts, run, c.failed_at_ms);
  if (moved) {
    skip(state, c, 'skipped', `the conversation moved on (${moved})`, opts, fx, false);
    return fx;
  }
  const runtime = state.facts.runtime;
  if (runtime && !runtime.ok) {
    defer(runtime.problem ?? 'it cannot be read', `conversation ${JSON.stringify(state.conversation)} (runtime checkpoint of run ${JSON.stringify(runtime.run)})`);
    return fx;
  }
  if (runtime?.ok) {
    skip(state, c, 'runtime', "the runtime's own retry checkpoint is pending", opts, fx, false);
    return fx;
  }
  const retriedAt = timer.due;
  const next: RetryCheckpoint = { ...c, state: 'retried', retried_at_ms: retriedAt, attempts: withAttempt(c.attempts, run) };
  putCheckpoint(state, next, fx);
  fx.events.push(
    providerEvent({ type: RETRY_EVENT, run, conversation: state.conversation, failedAtMs: c.failed_at_ms, timeMs: retriedAt, failure: c.failure, retried: false }),
  );
  fx.counts.retried = 1;
  fx.logs.push({ level: 'info', message: 'watchdog: automatic retry sent', fields: { conversation: state.conversation, run, request_id: `watchdog-retry:${run}` } });
  return fx;
}

/** Why the conversation counts as moved on since `time` for `run`, or undefined. */
function movedSince(f: ConversationFacts, run: string, time: number): string | undefined {
  if (f.activity_ms !== null && f.activity_ms > time) return `activity at ${iso(f.activity_ms)}`;
  const end = f.ends.find((e) => e.run !== run && e.ms > time);
  return end ? `turn ${end.run} ended at ${iso(end.ms)}` : undefined;
}

function skip(state: ConversationState, c: RetryCheckpoint, verdict: Verdict, why: string, opts: PolicyOptions, fx: Effects, clearTimer = true): void {
  state.checkpoint = { kind: 'none' };
  fx.checkpoint = null;
  // Timers are per pipeline: one set by another pipeline fires there and finds its chain gone.
  if (clearTimer && c.pipeline === opts.pipeline) fx.timers.set(retryTimerId(opts.id, c.run), null);
  record(state, c.run, verdict, c.failed_at_ms, fx);
  fx.logs.push({ level: 'info', message: `watchdog: retry skipped, ${why}`, fields: { conversation: state.conversation, run: c.run } });
}

function report(state: ConversationState, run: string, failedAtMs: number, timeMs: number, rec: FailureRecord, retried: boolean, fx: Effects): void {
  const item = providerEvent({ type: REPORT_EVENT, run, conversation: state.conversation, failedAtMs, timeMs, failure: rec, retried });
  fx.events.push(item);
  fx.reports.push(item);
  fx.logs.push({
    level: 'warn',
    message: `watchdog: ${(item.event.data as { line: string }).line}`,
    fields: { conversation: state.conversation, run, category: rec.category },
  });
}

function record(state: ConversationState, run: string, verdict: Verdict, ms: number, fx: Effects): void {
  const r: RunRecord = { v: 1, verdict, ms, conversation: state.conversation };
  state.runs.set(run, r);
  fx.runs.set(run, r);
  fx.counts[verdict] = (fx.counts[verdict] ?? 0) + 1;
}

function putCheckpoint(state: ConversationState, c: RetryCheckpoint, fx: Effects): void {
  state.checkpoint = { kind: 'ok', value: c };
  fx.checkpoint = c;
  if (state.facts.closed) {
    // A new chain: the one a finished turn ended is over.
    state.facts.closed = null;
    fx.factsChanged = true;
  }
}

function setTimer(fx: Effects, t: RetryTimer): void {
  fx.timers.set(t.id, t);
}

/**
 * The timer changes to commit: sets, and clears of the timers that were pending before the page
 * (`pending`: ids known to be set; a timer set and dropped within one page never reached the store).
 */
export function timerChanges(fx: Effects, pending: ReadonlySet<string>): { set: RetryTimer[]; clear: string[] } {
  const set: RetryTimer[] = [];
  const clear: string[] = [];
  for (const [id, t] of fx.timers) {
    if (t) set.push(t);
    else if (pending.has(id)) clear.push(id);
  }
  return { set, clear };
}

function retryTimer(opts: PolicyOptions, partition: string, run: string, due: number, deferrals: number): RetryTimer {
  return { id: retryTimerId(opts.id, run), partition, due: Math.round(due), payload: { partition, run, deferrals } };
}

/** What a report or retry says of a failure: the table's verdict, the summarized error, the last step and title. */
export function failureRecord(state: ConversationState, failure: ProviderFailure): FailureRecord {
  const d = diagnoseProviderFailure({
    error: failure.error,
    status: failure.status,
    errorType: failure.errorType,
    provider: failure.provider,
    model: failure.model,
    reason: failure.reason,
  });
  return {
    category: d.category,
    temporary: d.temporary,
    hint: d.hint,
    error: summarizeError(failure.error, failure.status),
    detail: failure.error.length > 2000 ? `${failure.error.slice(0, 1999)}…` : failure.error,
    step: lastStep(state.facts, failure.time),
    title: state.facts.title ?? 'Untitled',
    provider: failure.provider ?? null,
    model: failure.model ?? null,
    status_code: failure.status ?? null,
    trace_id: failure.traceId ?? null,
    span_id: failure.spanId ?? null,
    service: failure.service,
  };
}

/** The last tool call at or before `time`, else `model request`. */
function lastStep(f: ConversationFacts, time: number): string {
  let best: { name: string; ms: number } | undefined;
  for (const t of f.tools) if (t.ms <= time && (!best || t.ms >= best.ms)) best = t;
  return best?.name ?? 'model request';
}

function addTool(f: ConversationFacts, name: string, ms: number): void {
  f.tools = withNewest(f.tools, { name: name.slice(0, 200), ms }, MAX_TOOLS);
}

/**
 * `xs` (oldest first by `ms`) with `x` in its place, after those of the same `ms`, keeping the `max`
 * newest. One copy, no sort: it runs for every marker of a page, and stored lists out of order
 * (an older vigil's) are sorted once first.
 */
export function withNewest<T extends { ms: number }>(xs: readonly T[], x: T, max: number): T[] {
  const out = isSorted(xs) ? xs.slice() : [...xs].sort((a, b) => a.ms - b.ms);
  let at = out.length;
  while (at > 0 && out[at - 1]!.ms > x.ms) at--;
  out.splice(at, 0, x);
  return out.length > max ? out.slice(out.length - max) : out;
}

function isSorted(xs: readonly { ms: number }[]): boolean {
  for (let i = 1; i < xs.length; i++) if (xs[i - 1]!.ms > xs[i]!.ms) return false;
  return true;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export type { ActivityName };
