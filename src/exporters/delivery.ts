/**
 * What every exporter shares (the Collector's exporterhelper): retry_on_failure and
 * sending_queue settings, and the error an exporter throws to say how a delivery failed.
 */
import { formatDuration } from '../config/duration.ts';
import { defaultsOf, s, type Infer, type Shape } from '../config/schema.ts';
import { VigilError } from '../errors.ts';

export const retryOnFailureSchema = s
  .object({
    enabled: s.boolean().default(true),
    /** First wait after a failure; doubled per attempt, with jitter. */
    initial_interval: s.duration({ min: 1 }).default(5_000),
    /** Longest wait between attempts (a longer Retry-After from the receiver is still honoured, up to max_elapsed_time). */
    max_interval: s.duration({ min: 1 }).default(30_000),
    /** Time after the first failure of an entry before it goes to the dead letters; 0 retries forever. */
    max_elapsed_time: s.duration().default(300_000),
  })
  .check((r, report) => {
    if (!r.enabled) return;
    if (r.initial_interval > r.max_interval) {
      report(
        ['initial_interval'],
        `(${formatDuration(r.initial_interval)}) must not be longer than max_interval (${formatDuration(r.max_interval)}); raise max_interval or lower initial_interval`,
      );
    }
    if (r.max_elapsed_time > 0 && r.max_elapsed_time < r.initial_interval) {
      report(
        ['max_elapsed_time'],
        `(${formatDuration(r.max_elapsed_time)}) is shorter than initial_interval (${formatDuration(r.initial_interval)}), so no retry would ever be made; raise it, use 0 to retry forever, or set enabled: false`,
      );
    }
  });

export const sendingQueueSchema = s
  .object({
    /** Entries waiting for this exporter beyond which the oldest go to the dead letters (the outbox stays bounded). */
    queue_size: s.int({ min: 1 }).default(10_000),
    /** Entries handed to the exporter per attempt. */
    batch_size: s.int({ min: 1, max: 10_000 }).default(128),
  })
  .check((q, report) => {
    if (q.batch_size > q.queue_size) {
      report(['batch_size'], `(${q.batch_size}) must not be larger than queue_size (${q.queue_size}); a batch is taken from the queue`);
    }
  });

/** An exporter's own keys plus the shared `retry_on_failure` and `sending_queue`. */
export function withDelivery<S extends Shape>(shape: S) {
  return s.object({ ...shape, retry_on_failure: retryOnFailureSchema, sending_queue: sendingQueueSchema });
}

export type RetryOnFailure = Infer<typeof retryOnFailureSchema>;
export type SendingQueue = Infer<typeof sendingQueueSchema>;

export interface DeliverySettings {
  retry_on_failure: RetryOnFailure;
  sending_queue: SendingQueue;
}

/** The schema's defaults: an exporter config without `retry_on_failure` or `sending_queue` keys. */
export const DEFAULT_DELIVERY: DeliverySettings = defaultsOf(s.object({ retry_on_failure: retryOnFailureSchema, sending_queue: sendingQueueSchema }));

/** Picks the delivery settings out of an exporter's parsed config (defaults when it has none). */
export function deliveryOf(config: unknown): DeliverySettings {
  const c = (config ?? {}) as Partial<DeliverySettings>;
  return { retry_on_failure: c.retry_on_failure ?? DEFAULT_DELIVERY.retry_on_failure, sending_queue: c.sending_queue ?? DEFAULT_DELIVERY.sending_queue };
}

/**
 * Thrown by `Exporter.export` when not everything was delivered. The first `delivered` entries of
 * the batch were confirmed by the receiving side; the error applies to the next `failed` entries
 * (default: all the rest). `permanent` errors (a 400, a bad URL) go to the dead letters at once;
 * others are retried, after `retryAfterMs` when the receiving side said so.
 */
export class ExportError extends VigilError {
  readonly permanent: boolean;
  readonly retryAfterMs: number | undefined;
  readonly delivered: number;
  readonly failed: number | undefined;
  /**
   * Why, in a word, for the failure metric's `reason` label: `disk_full`, `io_error`, `timeout`,
   * `connection`, `http_503`, `redirect`, `response_too_large`, `response_cut`, ...
   */
  readonly reason: string;

  constructor(message: string, opts: { permanent?: boolean; retryAfterMs?: number; delivered?: number; failed?: number; cause?: unknown; reason?: string } = {}) {
    super('VIGIL_EXPORT_FAILED', message, { transient: !opts.permanent, cause: opts.cause });
    this.permanent = opts.permanent ?? false;
    this.retryAfterMs = opts.retryAfterMs;
    this.delivered = opts.delivered ?? 0;
    this.failed = opts.failed;
    this.reason = opts.reason ?? 'error';
  }
}
