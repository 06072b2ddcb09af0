/**
 * Delivers one pipeline's outbox to one exporter from the exporter's own cursor, at least once:
 * the cursor advances only after the exporter confirmed entries, so a crash redelivers only what
 * was not confirmed. Failures are retried with exponential backoff and equal jitter; a
 * `Retry-After` from the receiver lengthens the wait (never shortens it below the backoff), up to
 * MAX_RETRY_AFTER_MS and what is left of `max_elapsed_time`. An entry that fails permanently, or
 * still fails once the exporter has been failing for `max_elapsed_time` without delivering
 * anything (an outage, not one entry's budget), goes to the dead letters in the same step that
 * moves the cursor past it. The queue never holds more than `queue_size` entries for this
 * exporter: the oldest beyond it become dead letters, checked before every attempt and on every
 * commit while the runner waits to retry. Each exporter has its own runner and cursor, so a slow
 * or dead one never holds up the others or ingest.
 */
import { SpanStatusCode, type Tracer } from '@opentelemetry/api';
import type { Exporter } from '../component.ts';
import type { IngestActivity } from '../internal/ingest-activity.ts';
import { DEFAULT_DELIVERY, ExportError, type DeliverySettings } from '../exporters/delivery.ts';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { OutboxEntry } from '../model/work.ts';
import type { StateStore } from '../store/types.ts';
import { backoffDelay, sleep, Wakeup } from '../internal/backoff.ts';
import { MAX_RETRY_AFTER_MS } from '../internal/retry.ts';

const IDLE_POLL_MS = 1000;

export interface Clock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const realClock: Clock = { now: () => Date.now(), sleep };

export interface ExporterRunnerOptions {
  pipeline: string;
  exporterId: string;
  exporter: Exporter;
  store: StateStore;
  logger: Logger;
  delivery?: DeliverySettings;
  clock?: Clock;
  random?: () => number;
  /** vigil's own tracing; a no-op tracer when absent. */
  tracer?: Tracer;
  /**
   * Requests being answered: while the exporter keeps up, each delivery waits (bounded) for a
   * moment without any, so acks do not queue behind it (src/internal/ingest-activity.ts).
   */
  activity?: Pick<IngestActivity, 'quiet'>;
}

/** Why entries went to the dead letters. */
export type DeadLetterCause = 'permanent' | 'max_elapsed_time' | 'retry_disabled' | 'queue_full';

export interface ExporterStats {
  exported: number;
  failedAttempts: number;
  deadLettered: number;
  /** Entries waiting for this exporter, as last seen. */
  lag: number;
  /** Failed attempts by the exporter's reason (`disk_full`, `http_503`, `timeout`, ...). */
  failuresByReason: Record<string, number>;
  /** Dead-lettered entries by cause. */
  deadLetteredByCause: Partial<Record<DeadLetterCause, number>>;
}

type BatchResult = 'empty' | 'delivered' | 'retry' | 'dead';

export class ExporterRunner {
  private readonly wakeup = new Wakeup();
  private readonly abort = new AbortController();
  private readonly delivery: DeliverySettings;
  private readonly clock: Clock;
  private loop: Promise<void> | undefined;
  private attempts = 0;
  /** Clock time of the first failed attempt at the entry now at the head; undefined while healthy. */
  private failingSince: number | undefined;
  private retryAt = 0;
  /** Set by notify(); cleared when the queue bound is checked. */
  private committedSinceCheck = false;
  /** The last batch read was full: the exporter is behind, and its deliveries do not wait for quiet. */
  private behind = false;
  readonly stats: ExporterStats = { exported: 0, failedAttempts: 0, deadLettered: 0, lag: 0, failuresByReason: {}, deadLetteredByCause: {} };

  constructor(private readonly opts: ExporterRunnerOptions) {
    this.delivery = opts.delivery ?? DEFAULT_DELIVERY;
    this.clock = opts.clock ?? realClock;
  }

  async start(): Promise<void> {
    await this.opts.store.registerExporter(this.opts.pipeline, this.opts.exporterId);
    this.loop ??= this.run();
  }

  /** A page was committed: there is more to deliver, and the queue bound is checked again. */
  notify(): void {
    this.committedSinceCheck = true;
    this.wakeup.notify();
  }

  /** Stops the loop, then delivers until the outbox is empty for this exporter or the deadline passes. */
  async drain(deadline: number): Promise<void> {
    this.abort.abort();
    await this.loop;
    while (this.clock.now() < deadline) {
      const result = await this.deliverBatch();
      if (result === 'empty') return;
      if (result === 'retry' || result === 'dead') await this.clock.sleep(Math.max(0, Math.min(this.retryAt, deadline) - this.clock.now()));
    }
    this.opts.logger.warn('exporter did not deliver everything before shutdown; the rest is delivered after the next start', {
      pipeline: this.opts.pipeline,
      exporter: this.opts.exporterId,
    });
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      const quiet = this.behind ? undefined : this.opts.activity?.quiet();
      if (quiet) await quiet;
      const result = await this.deliverBatch();
      if (result === 'empty') await this.wakeup.wait(IDLE_POLL_MS, signal);
      else if (result === 'retry' || result === 'dead') await this.waitForRetry(signal);
    }
  }

  /**
   * Waits until `retryAt`. Pages keep being committed meanwhile; each commit wakes the runner to
   * hold the queue within `queue_size`, so a dead receiver cannot make the outbox grow.
   */
  private async waitForRetry(signal: AbortSignal): Promise<void> {
    for (;;) {
      const left = this.retryAt - this.clock.now();
      if (left <= 0 || signal.aborted) return;
      await this.wakeup.wait(left, signal);
      if (signal.aborted) return;
      try {
        await this.enforceQueueBound();
      } catch (err) {
        this.opts.logger.warn('cannot check the sending queue; retrying', {
          pipeline: this.opts.pipeline,
          exporter: this.opts.exporterId,
          error: errorMessage(err),
        });
      }
    }
  }

  /** One attempt at the head of the outbox. Exposed for tests that drive the runner step by step. */
  async deliverBatch(): Promise<BatchResult> {
    const { store, pipeline, exporterId, exporter, logger } = this.opts;
    let entries: OutboxEntry[];
    try {
      // Nothing after the cursor (the lag counts what is committed, synced or not): no read.
      if ((await this.enforceQueueBound()) === 0) return 'empty';
      entries = await store.readOutbox(pipeline, exporterId, this.delivery.sending_queue.batch_size);
      this.behind = entries.length >= this.delivery.sending_queue.batch_size;
    } catch (err) {
      logger.warn('cannot read the outbox; retrying', { pipeline, exporter: exporterId, error: errorMessage(err) });
      this.retryAt = this.clock.now() + 1000;
      return 'retry';
    }
    if (entries.length === 0) return 'empty';
    const span = this.opts.tracer?.startSpan('vigil.export', {
      attributes: { 'vigil.pipeline': pipeline, 'vigil.exporter': exporterId, 'vigil.entries': entries.length },
    });
    let confirmed = 0;
    let cut = false;
    const progress = async (delivered: number) => {
      if (delivered > confirmed) {
        await this.confirm(entries.slice(confirmed), delivered - confirmed);
        confirmed = delivered;
      }
      // An exporter that confirms one entry at a time can take long over a batch while pages keep
      // being committed: once the queue is over its bound, the batch stops here so the bound is
      // enforced (on what is confirmed so far) before the rest is delivered.
      if (this.committedSinceCheck && confirmed < entries.length && (await this.overBound())) {
        cut = true;
        throw new Error('sending queue over its bound: the batch stops for the oldest entries to become dead letters');
      }
    };
    try {
      await exporter.export(entries, progress);
      if (confirmed < entries.length) await this.confirm(entries.slice(confirmed), entries.length - confirmed);
      return 'delivered';
    } catch (err) {
      if (cut) return 'delivered';
      span?.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(err) });
      return await this.handleFailure(entries.slice(confirmed), err, confirmed);
    } finally {
      span?.end();
    }
  }

  /** `entries` starts after the `alreadyConfirmed` entries the exporter reported through progress. */
  private async handleFailure(entries: OutboxEntry[], err: unknown, alreadyConfirmed = 0): Promise<BatchResult> {
    const { pipeline, exporterId, logger } = this.opts;
    const retry = this.delivery.retry_on_failure;
    const e = err instanceof ExportError ? err : new ExportError(errorMessage(err), { cause: err });
    const delivered = Math.min(Math.max(0, e.delivered - alreadyConfirmed), entries.length);
    const rest = entries.slice(delivered);
    const failed = rest.slice(0, Math.max(1, e.failed ?? rest.length));
    this.stats.failedAttempts++;
    this.stats.failuresByReason[e.reason] = (this.stats.failuresByReason[e.reason] ?? 0) + 1;
    try {
      if (delivered > 0) {
        // Progress was made: the receiver is up, and what failed now is a new head with a fresh budget.
        await this.confirm(entries, delivered);
      }
      const now = this.clock.now();
      // The outage started at the first failure since the last delivery; dead-lettering the head
      // does not end it, so the next entry does not get a fresh max_elapsed_time of its own.
      this.failingSince ??= now;
      const elapsed = now - this.failingSince;
      this.attempts++;
      const backoff = backoffDelay({ initial: retry.initial_interval, max: retry.max_interval }, this.attempts, this.opts.random);
      const cause: DeadLetterCause | undefined = e.permanent
        ? 'permanent'
        : !retry.enabled
          ? 'retry_disabled'
          : retry.max_elapsed_time > 0 && elapsed >= retry.max_elapsed_time
            ? 'max_elapsed_time'
            : undefined;
      if (cause) {
        const reason =
          cause === 'permanent'
            ? `permanent failure: ${e.message}`
            : cause === 'retry_disabled'
              ? `failed with retry_on_failure disabled: ${e.message}`
              : `still failing after ${Math.round(elapsed / 1000)}s (max_elapsed_time): ${e.message}`;
        logger.error('export failed; entries moved to the dead letters', { pipeline, exporter: exporterId, entries: failed.length, reason });
        await this.deadLetter(failed, reason, cause);
        if (cause === 'permanent') {
          // The receiver answered: it is up, and the next entry may well pass.
          this.attempts = 0;
          this.failingSince = undefined;
          this.retryAt = now;
        } else {
          // Still an outage: the next attempt waits as a retry would.
          this.retryAt = now + backoff;
        }
        return 'dead';
      }
      let delay = Math.max(backoff, Math.min(e.retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
      if (retry.max_elapsed_time > 0) delay = Math.min(delay, Math.max(0, retry.max_elapsed_time - elapsed));
      this.retryAt = now + delay;
      logger.warn('export failed; retrying', {
        pipeline,
        exporter: exporterId,
        attempt: this.attempts,
        retry_in_ms: delay,
        ...(e.retryAfterMs !== undefined ? { retry_after_ms: e.retryAfterMs } : {}),
        error: e.message,
      });
      return 'retry';
    } catch (storeErr) {
      logger.warn('cannot record export progress; retrying', { pipeline, exporter: exporterId, error: errorMessage(storeErr) });
      this.retryAt = this.clock.now() + 1000;
      return 'retry';
    }
  }

  /** Advances the cursor past the first `count` entries, delivered, and resets the retry state. */
  private async confirm(entries: OutboxEntry[], count: number): Promise<void> {
    await this.opts.store.ackOutbox(this.opts.pipeline, this.opts.exporterId, entries[count - 1]!.seq, []);
    this.stats.exported += count;
    this.attempts = 0;
    this.failingSince = undefined;
  }

  /** Moves the cursor past `entries` and records them as dead letters, in one atomic step; counted by cause. */
  private async deadLetter(entries: OutboxEntry[], reason: string, cause: DeadLetterCause): Promise<void> {
    await this.opts.store.ackOutbox(
      this.opts.pipeline,
      this.opts.exporterId,
      entries[entries.length - 1]!.seq,
      entries.map((entry) => ({ entry, reason })),
    );
    this.stats.deadLettered += entries.length;
    this.stats.deadLetteredByCause[cause] = (this.stats.deadLetteredByCause[cause] ?? 0) + entries.length;
  }

  /** Keeps this exporter's backlog within queue_size: the oldest beyond it become dead letters, recorded. */
  private async overBound(): Promise<boolean> {
    this.committedSinceCheck = false;
    this.stats.lag = await this.opts.store.outboxLag(this.opts.pipeline, this.opts.exporterId);
    return this.stats.lag > this.delivery.sending_queue.queue_size;
  }

  /** Returns the lag left: the entries after this exporter's cursor. */
  private async enforceQueueBound(): Promise<number> {
    const { store, pipeline, exporterId, logger } = this.opts;
    const queueSize = this.delivery.sending_queue.queue_size;
    this.committedSinceCheck = false;
    const lag = await store.outboxLag(pipeline, exporterId);
    this.stats.lag = lag;
    let excess = lag - queueSize;
    if (excess <= 0) return lag;
    let removed = 0;
    logger.error('sending queue full; the oldest entries move to the dead letters', { pipeline, exporter: exporterId, excess, queue_size: queueSize });
    const reason = `sending_queue full (queue_size ${queueSize}); not delivered`;
    while (excess > 0) {
      const oldest = await store.readOutbox(pipeline, exporterId, Math.min(excess, 1000));
      if (oldest.length === 0) break;
      await this.deadLetter(oldest, reason, 'queue_full');
      removed += oldest.length;
      excess -= oldest.length;
    }
    this.stats.lag = lag - removed;
    return this.stats.lag;
  }
}
