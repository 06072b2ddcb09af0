/**
 * Drives one pipeline: reads pages from each partition's cursor, runs them through the processor
 * chain and commits each page atomically (DESIGN 1). Pages of one pipeline are processed one at a
 * time, so the chain always sees the state the previous page committed. A failing partition is
 * logged and retried with backoff; it never stops the others (DESIGN 3.3).
 *
 * Durable timers: each round, after the log pages, the timers that fell due (by the injected
 * clock) run through the chain as *timer pages*, one per partition (see WorkPage). The runner
 * clears every fired timer at the version it fired in the page's own commit (a processor re-arms
 * one by setting it again: clears apply before sets), so a timer fires exactly once across
 * crashes and sidecars: a second sidecar firing the same timer has its commit refused. The idle
 * wait ends at the next known due time (the idle poll stays the upper bound, which also picks up
 * timers other sidecars set), so a timer due in 60 s fires at 60 s — and, since due times are
 * absolute, after a restart with the remaining delay.
 */
import { SpanStatusCode, type Attributes, type Tracer } from '@opentelemetry/api';
import { lastValueFrom, of, type OperatorFunction } from 'rxjs';
import { errorMessage, isVigilError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { newTimerPage, newWorkPage, type WorkPage } from '../processors/page.ts';
import type { FiredTimer, TimerRef } from '../store/state.ts';
import type { LogEntry, PageCommit, StateStore } from '../store/types.ts';
import { backoffDelay, sleep, Wakeup } from '../internal/backoff.ts';
import type { IngestActivity } from '../internal/ingest-activity.ts';

/** How often a pipeline looks for work nobody told it about (another sidecar's appends and timers). */
export const IDLE_POLL_MS = 1000;
/** Full pages in a row after which a pipeline is behind and stops letting requests go first. */
export const BEHIND_AFTER_FULL_PAGES = 4;

export interface PipelineRunnerOptions {
  pipeline: string;
  store: StateStore;
  chain: OperatorFunction<WorkPage, WorkPage>;
  logger: Logger;
  /** Records per page (`service.processing.page_size`). */
  pageSize: number;
  /** Called after each committed page (wakes the exporters). */
  onCommit?: () => void;
  /** vigil's own tracing; a no-op tracer when absent. */
  tracer?: Tracer;
  /** Ids of the pipeline's processors: a timer owned by none of them is cleared with a warning. */
  processors?: readonly string[];
  /** The clock durable timers fall due by (ms since the epoch); `Date.now` by default. */
  now?: () => number;
  /**
   * Requests being answered: while the pipeline keeps up, each page waits (bounded) for a moment
   * without any, so acks do not queue behind pages (src/internal/ingest-activity.ts).
   */
  activity?: Pick<IngestActivity, 'quiet'>;
}

export interface PipelineStats {
  pages: number;
  entries: number;
  occurrences: number;
  workCreated: number;
  workUpdated: number;
  failedPages: number;
  /** Records per diagnostic class. */
  classified: Record<string, number>;
  /** Timer pages committed and the timers they fired. */
  timerPages: number;
  timersFired: number;
  /** Fired timers whose owner is not a processor of this pipeline (cleared unhandled). */
  timersOrphaned: number;
}

export class PipelineRunner {
  private readonly wakeup = new Wakeup();
  private readonly abort = new AbortController();
  private readonly failing = new Map<string, { attempts: number; until: number }>();
  private loop: Promise<void> | undefined;
  private readonly now: () => number;
  /** Due time of the earliest timer known to be pending; null: none known; checked again each idle poll. */
  private nextTimerAt: number | null = null;
  private lastTimerCheck = -Infinity;
  readonly stats: PipelineStats = {
    pages: 0,
    entries: 0,
    occurrences: 0,
    workCreated: 0,
    workUpdated: 0,
    failedPages: 0,
    classified: {},
    timerPages: 0,
    timersFired: 0,
    timersOrphaned: 0,
  };

  constructor(private readonly opts: PipelineRunnerOptions) {
    this.now = opts.now ?? Date.now;
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** New records were appended. */
  notify(): void {
    this.wakeup.notify();
  }

  /** Processes until no partition has a backlog (failing partitions are given up on after their retries). */
  async drain(deadline = Date.now() + 10_000): Promise<void> {
    while (Date.now() < deadline) {
      const progressed = await this.runRound(true);
      if (!progressed) {
        const backlog = await this.opts.store.backlog(this.opts.pipeline).catch(() => []);
        if (backlog.length === 0) return;
        await sleep(50);
      }
    }
    this.opts.logger.warn('pipeline drain timed out; the backlog stays in the ingest log for the next start', { pipeline: this.opts.pipeline });
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      const progressed = await this.runOnce();
      if (!progressed) await this.wakeup.wait(this.idleWaitMs(), signal);
    }
  }

  /** One round, as the loop runs it: a page per partition with a backlog, then the due timers. True when anything committed. */
  runOnce(): Promise<boolean> {
    return this.runRound(false);
  }

  /** How long the loop sleeps when idle: until the next known timer, at most the idle poll. */
  idleWaitMs(): number {
    if (this.nextTimerAt === null) return IDLE_POLL_MS;
    return Math.max(0, Math.min(IDLE_POLL_MS, this.nextTimerAt - this.now()));
  }

  private busy: Promise<boolean> | undefined;
  private backlogFailures = 0;
  /**
   * Full pages read in a row: from BEHIND_AFTER_FULL_PAGES on the pipeline is behind, and its pages
   * no longer wait for requests to be answered. One full page is not enough: a page that waited
   * (up to 25 ms) at a high rate fills up by itself.
   */
  private fullPages = 0;

  /** One page from each partition with a backlog; true when any page committed. Rounds never overlap. */
  private async runRound(ignoreBackoff: boolean): Promise<boolean> {
    while (this.busy) await this.busy;
    this.busy = this.round(ignoreBackoff);
    try {
      return await this.busy;
    } finally {
      this.busy = undefined;
    }
  }

  private async round(ignoreBackoff: boolean): Promise<boolean> {
    const { store, pipeline, logger } = this.opts;
    let backlog;
    try {
      backlog = await store.backlog(pipeline);
    } catch (err) {
      // The store is down (e.g. Redis restarting): back off, and say so once per outage.
      this.backlogFailures++;
      if (this.backlogFailures === 1) logger.warn('cannot read the ingest backlog; retrying with backoff', { pipeline, error: errorMessage(err) });
      await sleep(backoffDelay({ initial: 200, max: 5000 }, this.backlogFailures), this.abort.signal);
      return false;
    }
    if (this.backlogFailures > 0) logger.info('the ingest backlog is readable again', { pipeline });
    this.backlogFailures = 0;
    let progressed = false;
    const now = Date.now();
    const due = backlog.filter(({ partition }) => {
      const f = this.failing.get(partition);
      return !(f && f.until > now && !ignoreBackoff);
    });
    // Read-ahead: the next partition's page is read while this one is processed and committed, so
    // a network store's page read overlaps the commit instead of adding a round trip. Only the log
    // entries are read ahead (another partition's commit does not change them); group state is
    // loaded by the chain after the previous commit. A page read ahead is as safe as one read just
    // before: the commit of that page is refused if its partition's cursor moved meanwhile (the
    // store checks the base the page was read after), and the runner then reads it again.
    let ahead: Promise<LogEntry[]> | undefined;
    // A store whose commit is visible to the next page's loads as soon as it is sent (SQLite: it
    // applies the transaction at once and then waits for the disk; a single Redis node: it runs a
    // connection's commands in order) lets the next partition's page run while the commit is in
    // flight; the round ends once every commit settled, as before. A commit refused meanwhile
    // changed nothing, so the pages after it were planned on what the store holds; its partition is
    // read again in the next round. The next page's read then starts with this page's chain: sent
    // after the commit it would, on one connection, come back behind it, when the next page needs it.
    const overlap = store.commitVisibleOnSend === true;
    const inFlight: Array<{ partition: string; f: { attempts: number } | undefined; done: Promise<boolean> }> = [];
    const settle = async (partition: string, f: { attempts: number } | undefined, done: Promise<boolean>) => {
      try {
        if (await done) progressed = true;
        this.failing.delete(partition);
      } catch (err) {
        if (this.pageFailed(partition, f, err)) progressed = true;
      }
    };
    for (let i = 0; i < due.length; i++) {
      // The loop's pages let requests in flight be answered first; a drain's (shutdown) do not.
      const quiet = !ignoreBackoff && this.fullPages < BEHIND_AFTER_FULL_PAGES ? this.opts.activity?.quiet() : undefined;
      if (quiet) await quiet;
      const partition = due[i]!.partition;
      const f = this.failing.get(partition);
      const read = ahead ?? this.readPage(partition);
      const next = due[i + 1]?.partition;
      ahead = undefined;
      const readNext = () => {
        if (next !== undefined) ahead ??= this.readPage(next);
      };
      let done: Promise<boolean>;
      try {
        done = (await this.processPage(partition, read, readNext, overlap)).done;
      } catch (err) {
        if (this.pageFailed(partition, f, err)) progressed = true;
        continue;
      }
      if (!overlap) await settle(partition, f, done);
      else {
        done.catch(() => undefined);
        inFlight.push({ partition, f, done });
        // Nothing else would yield between pages on a store that answers within the call: let requests and the store's upkeep in.
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    for (const p of inFlight) await settle(p.partition, p.f, p.done);
    if (await this.fireTimers(ignoreBackoff)) progressed = true;
    return progressed;
  }

  /** A page that failed: a conflict is processed again at once (true), anything else backs its partition off. */
  private pageFailed(partition: string, f: { attempts: number } | undefined, err: unknown): boolean {
    const { pipeline, logger } = this.opts;
    if (isVigilError(err, 'VIGIL_STORE_CONFLICT')) {
      // Another writer moved the group or cursor: read the page again with fresh state.
      logger.debug('commit conflict; the page is processed again', { pipeline, partition, error: errorMessage(err) });
      return true;
    }
    const attempts = (f?.attempts ?? 0) + 1;
    const delay = backoffDelay({ initial: 200, max: 30_000 }, attempts);
    this.failing.set(partition, { attempts, until: Date.now() + delay });
    this.stats.failedPages++;
    logger.error('processing a page failed; the partition is retried, the others go on', {
      pipeline,
      partition,
      attempts,
      retry_in_ms: delay,
      error: errorMessage(err),
    });
    return false;
  }

  /** Runs the timers due now through the chain, a timer page per partition; true when any committed. */
  private async fireTimers(ignoreBackoff: boolean): Promise<boolean> {
    const { store, pipeline, logger, pageSize } = this.opts;
    const now = this.now();
    const due = this.nextTimerAt !== null && this.nextTimerAt <= now;
    if (!due && now - this.lastTimerCheck < IDLE_POLL_MS) return false;
    this.lastTimerCheck = now;
    let res;
    try {
      res = await store.dueTimers(pipeline, now, pageSize);
    } catch (err) {
      logger.warn('cannot read due timers; retrying', { pipeline, error: errorMessage(err) });
      this.nextTimerAt = now + IDLE_POLL_MS;
      return false;
    }
    const byPartition = new Map<string, FiredTimer[]>();
    for (const t of res.timers) {
      const list = byPartition.get(t.partition);
      if (list) list.push(t);
      else byPartition.set(t.partition, [t]);
    }
    let next = res.timers.length >= pageSize ? now : (res.next ?? Infinity);
    let progressed = false;
    for (const [partition, timers] of byPartition) {
      const key = `\u0000timers\u0000${partition}`;
      const f = this.failing.get(key);
      if (f && f.until > Date.now() && !ignoreBackoff) {
        next = Math.min(next, now + (f.until - Date.now()));
        continue;
      }
      try {
        await this.processTimerPage(partition, timers);
        this.failing.delete(key);
        progressed = true;
      } catch (err) {
        if (isVigilError(err, 'VIGIL_STORE_CONFLICT')) {
          // Fired by another sidecar, or cleared by a page meanwhile: look again.
          logger.debug('timer page conflict; due timers are read again', { pipeline, partition, error: errorMessage(err) });
          next = now;
          progressed = true;
          continue;
        }
        const attempts = (f?.attempts ?? 0) + 1;
        const delay = backoffDelay({ initial: 200, max: 30_000 }, attempts);
        this.failing.set(key, { attempts, until: Date.now() + delay });
        next = Math.min(next, now + delay);
        this.stats.failedPages++;
        logger.error('firing timers failed; they stay pending and are retried, the others go on', {
          pipeline,
          partition,
          timers: timers.map((t) => t.id),
          attempts,
          retry_in_ms: delay,
          error: errorMessage(err),
        });
      }
    }
    this.nextTimerAt = Number.isFinite(next) ? next : null;
    return progressed;
  }

  private async processTimerPage(partition: string, timers: FiredTimer[]): Promise<void> {
    const { pipeline, logger, processors } = this.opts;
    const page = await this.runPage('vigil.timers', { 'vigil.timers': timers.length }, newTimerPage(pipeline, partition, timers), (p) => timerPageCommit(p, timers));
    this.stats.timerPages++;
    this.stats.timersFired += timers.length;
    if (processors) {
      for (const t of timers) {
        if (processors.includes(t.owner)) continue;
        this.stats.timersOrphaned++;
        logger.warn('a timer fired whose owner is not a processor of this pipeline; it was cleared unhandled', { pipeline, partition, timer: t.id, owner: t.owner });
      }
    }
    this.noteTimersSet(page);
    if (page.commit.outbox.length) this.opts.onCommit?.();
  }

  /** Runs a page through the chain and commits what `finish` makes of its commit, inside a span of vigil's own tracing. */
  private async runPage(
    name: string,
    attributes: Attributes,
    input: WorkPage,
    finish: (page: WorkPage) => PageCommit = (p) => p.commit,
    committing?: () => void,
  ): Promise<WorkPage> {
    const { page, committed } = await this.sendPage(name, attributes, input, finish, committing);
    await committed;
    return page;
  }

  /** Runs a page through the chain and sends its commit; `committed` settles with the commit (the span ends then). */
  private async sendPage(
    name: string,
    attributes: Attributes,
    input: WorkPage,
    finish: (page: WorkPage) => PageCommit,
    committing?: () => void,
  ): Promise<{ page: WorkPage; committed: Promise<void> }> {
    const span = this.opts.tracer?.startSpan(name, { attributes: { 'vigil.pipeline': input.pipeline, 'session.id': input.partition, ...attributes } });
    const failed = (err: unknown) => {
      span?.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(err) });
      span?.end();
      throw err;
    };
    let page: WorkPage;
    let commit: Promise<void>;
    try {
      page = await lastValueFrom(of(input).pipe(this.opts.chain));
      commit = this.opts.store.commit(finish(page));
      // Sent after the commit, so a read-ahead queues behind it instead of delaying the chain's loads.
      committing?.();
    } catch (err) {
      return failed(err);
    }
    const committed = commit.then(() => {
      span?.setAttribute('vigil.work_events', page.commit.outbox.length);
      span?.end();
    }, failed);
    return { page, committed };
  }

  /** A committed page that set timers may have moved the next due time earlier. */
  private noteTimersSet(page: WorkPage): void {
    for (const t of page.commit.timers?.set ?? []) {
      if (this.nextTimerAt === null || t.due < this.nextTimerAt) this.nextTimerAt = t.due;
    }
  }

  /** A page read, its rejection observed at once (it is awaited later, maybe after another page's commit). */
  private readPage(partition: string): Promise<LogEntry[]> {
    const read = this.opts.store.readPage(this.opts.pipeline, partition, this.opts.pageSize);
    read.catch(() => undefined);
    return read;
  }

  /**
   * `read`: the page's entries (maybe read ahead); `readNext` starts the next partition's read — as
   * the commit is sent, or at once when there is nothing to commit or `early` (it starts one read
   * at most).
   */
  private async processPage(partition: string, read: Promise<LogEntry[]>, readNext: () => void, early: boolean): Promise<{ done: Promise<boolean> }> {
    const { pipeline } = this.opts;
    let entries: LogEntry[];
    try {
      entries = await read;
    } catch (err) {
      readNext();
      throw err;
    }
    this.fullPages = entries.length >= this.opts.pageSize ? this.fullPages + 1 : 0;
    if (early || entries.length === 0) readNext();
    if (entries.length === 0) return { done: Promise.resolve(false) };
    let sent: { page: WorkPage; committed: Promise<void> };
    try {
      sent = await this.sendPage('vigil.page', { 'vigil.entries': entries.length }, newWorkPage(pipeline, partition, entries), (p) => p.commit, readNext);
    } finally {
      readNext();
    }
    return { done: sent.committed.then(() => this.committed(sent.page, entries.length)) };
  }

  /** A page's commit settled: its counts, and the exporters woken for its work. */
  private committed(page: WorkPage, entries: number): boolean {
    this.stats.pages++;
    this.stats.entries += entries;
    for (const item of page.items) {
      if (item.occurrence) this.stats.occurrences++;
      const cls = item.diagnosis?.classification;
      if (cls) this.stats.classified[cls] = (this.stats.classified[cls] ?? 0) + 1;
    }
    this.noteTimersSet(page);
    for (const o of page.commit.outbox) {
      if (o.kind !== 'work') continue;
      if (o.event.type === 'dev.vigil.work.created') this.stats.workCreated++;
      else if (o.event.type === 'dev.vigil.work.updated') this.stats.workUpdated++;
    }
    if (page.commit.outbox.length) this.opts.onCommit?.();
    return true;
  }
}

/**
 * A timer page's commit: it moves no cursor, and every fired timer is cleared at the version it
 * fired, whatever the processors did with it (their clear of a fired timer without a version is
 * made exact); one they set again is re-armed, as clears apply before sets.
 */
function timerPageCommit(page: WorkPage, timers: FiredTimer[]): PageCommit {
  const fired = new Set(timers.map((t) => t.id));
  const clear: TimerRef[] = [...(page.commit.timers?.clear ?? []).filter((c) => !fired.has(c.id)), ...timers.map((t) => ({ id: t.id, version: t.version }))];
  return { ...page.commit, cursor: null, timers: { set: page.commit.timers?.set ?? [], clear } };
}
