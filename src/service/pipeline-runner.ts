/**
 * Drives one pipeline: reads pages from each partition's cursor, runs them through the processor
 * chain and commits each page atomically (DESIGN 1). Pages of one pipeline are processed one at a
 * time, so the chain always sees the state the previous page committed. A failing partition is
 * logged and retried with backoff; it never stops the others (DESIGN 3.3).
 */
import { SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { lastValueFrom, of, type OperatorFunction } from 'rxjs';
import { errorMessage, isVigilError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { newWorkPage, type WorkPage } from '../processors/page.ts';
import type { StateStore } from '../store/types.ts';
import { backoffDelay, sleep, Wakeup } from '../internal/backoff.ts';

import { DEFAULT_PAGE_SIZE } from '../config/service.ts';
/** How often a pipeline looks for work nobody told it about (another sidecar's appends). */
const IDLE_POLL_MS = 1000;

export interface PipelineRunnerOptions {
  pipeline: string;
  store: StateStore;
  chain: OperatorFunction<WorkPage, WorkPage>;
  logger: Logger;
  pageSize?: number;
  /** Called after each committed page (wakes the exporters). */
  onCommit?: () => void;
  /** vigil's own tracing; a no-op tracer when absent. */
  tracer?: Tracer;
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
}

export class PipelineRunner {
  private readonly wakeup = new Wakeup();
  private readonly abort = new AbortController();
  private readonly failing = new Map<string, { attempts: number; until: number }>();
  private loop: Promise<void> | undefined;
  readonly stats: PipelineStats = { pages: 0, entries: 0, occurrences: 0, workCreated: 0, workUpdated: 0, failedPages: 0, classified: {} };

  constructor(private readonly opts: PipelineRunnerOptions) {}

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
      const progressed = await this.runRound(false);
      if (!progressed) await this.wakeup.wait(IDLE_POLL_MS, signal);
    }
  }

  private busy: Promise<boolean> | undefined;
  private backlogFailures = 0;

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
    for (const { partition } of backlog) {
      const f = this.failing.get(partition);
      if (f && f.until > now && !ignoreBackoff) continue;
      try {
        if (await this.processPage(partition)) progressed = true;
        this.failing.delete(partition);
      } catch (err) {
        if (isVigilError(err, 'VIGIL_STORE_CONFLICT')) {
          // Another writer moved the group or cursor: read the page again with fresh state.
          logger.debug('commit conflict; the page is processed again', { pipeline, partition, error: errorMessage(err) });
          progressed = true;
          continue;
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
      }
    }
    return progressed;
  }

  private async processPage(partition: string): Promise<boolean> {
    const { store, pipeline, chain, pageSize = DEFAULT_PAGE_SIZE } = this.opts;
    const entries = await store.readPage(pipeline, partition, pageSize);
    if (entries.length === 0) return false;
    const span = this.opts.tracer?.startSpan('vigil.page', { attributes: { 'vigil.pipeline': pipeline, 'session.id': partition, 'vigil.entries': entries.length } });
    let page;
    try {
      page = await lastValueFrom(of(newWorkPage(pipeline, partition, entries)).pipe(chain));
      await store.commit(page.commit);
      span?.setAttribute('vigil.work_events', page.commit.outbox.length);
    } catch (err) {
      span?.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(err) });
      throw err;
    } finally {
      span?.end();
    }
    this.stats.pages++;
    this.stats.entries += entries.length;
    for (const item of page.items) {
      if (item.occurrence) this.stats.occurrences++;
      const cls = item.diagnosis?.classification;
      if (cls) this.stats.classified[cls] = (this.stats.classified[cls] ?? 0) + 1;
    }
    for (const o of page.commit.outbox) {
      if (o.kind !== 'work') continue;
      if (o.event.type === 'dev.vigil.work.created') this.stats.workCreated++;
      else if (o.event.type === 'dev.vigil.work.updated') this.stats.workUpdated++;
    }
    if (page.commit.outbox.length) this.opts.onCommit?.();
    return true;
  }
}
