/**
 * Delivers one pipeline's outbox to one exporter from the exporter's own cursor, at least once:
 * the cursor advances only after the exporter confirmed a batch, so a crash redelivers only what
 * was not confirmed. A failing exporter retries with backoff and never blocks ingest or the
 * other exporters (each has its own runner and cursor).
 */
import type { Exporter } from '../component.ts';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { StateStore } from '../store/types.ts';
import { backoffDelay, sleep, Wakeup } from './backoff.ts';

const BATCH = 128;
const IDLE_POLL_MS = 1000;

export interface ExporterRunnerOptions {
  pipeline: string;
  exporterId: string;
  exporter: Exporter;
  store: StateStore;
  logger: Logger;
}

export class ExporterRunner {
  private readonly wakeup = new Wakeup();
  private readonly abort = new AbortController();
  private loop: Promise<void> | undefined;
  private attempts = 0;
  readonly stats = { exported: 0, failedAttempts: 0 };

  constructor(private readonly opts: ExporterRunnerOptions) {}

  async start(): Promise<void> {
    await this.opts.store.registerExporter(this.opts.pipeline, this.opts.exporterId);
    this.loop ??= this.run();
  }

  notify(): void {
    this.wakeup.notify();
  }

  /** Delivers until the outbox is empty for this exporter or the deadline passes. */
  async drain(deadline: number): Promise<void> {
    this.abort.abort();
    await this.loop;
    while (Date.now() < deadline) {
      const result = await this.deliverBatch();
      if (result === 'empty') return;
      if (result === 'failed') await sleep(Math.min(1000, Math.max(0, deadline - Date.now())));
    }
    this.opts.logger.warn('exporter did not deliver everything before shutdown; the rest is delivered after the next start', {
      pipeline: this.opts.pipeline,
      exporter: this.opts.exporterId,
    });
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      const result = await this.deliverBatch();
      if (result === 'empty') await this.wakeup.wait(IDLE_POLL_MS, signal);
      else if (result === 'failed') await sleep(backoffDelay({ initial: 100, max: 30_000 }, this.attempts), signal);
    }
  }

  private async deliverBatch(): Promise<'empty' | 'delivered' | 'failed'> {
    const { store, pipeline, exporterId, exporter, logger } = this.opts;
    try {
      const entries = await store.readOutbox(pipeline, exporterId, BATCH);
      if (entries.length === 0) return 'empty';
      await exporter.export(entries);
      await store.ackOutbox(pipeline, exporterId, entries[entries.length - 1]!.seq);
      this.stats.exported += entries.length;
      this.attempts = 0;
      return 'delivered';
    } catch (err) {
      this.attempts++;
      this.stats.failedAttempts++;
      logger.warn('export failed; retrying with backoff', { pipeline, exporter: exporterId, attempts: this.attempts, error: errorMessage(err) });
      return 'failed';
    }
  }
}
