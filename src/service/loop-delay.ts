/**
 * How long the event loop kept work waiting: a timer due every `intervalMs` notes how late it ran
 * (`vigil_event_loop_delay_seconds`). An ack's time (`vigil_receiver_ack_duration_seconds`) is
 * the wait for the loop, the request's own work and the store's sync
 * (`vigil_store_sync_duration_seconds`, the disk's time alone since round 38); with this beside
 * them an operator tells a busy or stalled loop from a slow disk (README, Performance, rounds 37
 * and 38). One timer callback per interval: a few microseconds of the loop every
 * 10 ms. Not `perf_hooks.monitorEventLoopDelay`: its histogram answers percentiles, not the counts
 * under fixed bounds that a Prometheus histogram (and a sum across processes) needs.
 */
import { Histogram, type HistogramSnapshot } from '../internal/histogram.ts';

/** The clock and timer this needs (injected in tests). */
export interface LoopDelayClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const NODE_CLOCK: LoopDelayClock = {
  now: () => performance.now(),
  // Unref'd: the monitor never keeps the process alive.
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export const LOOP_DELAY_INTERVAL_MS = 10;

export class LoopDelayMonitor {
  private readonly delays = new Histogram();
  private timer: unknown;

  constructor(
    private readonly intervalMs = LOOP_DELAY_INTERVAL_MS,
    private readonly clock: LoopDelayClock = NODE_CLOCK,
  ) {}

  start(): void {
    if (this.timer === undefined) this.schedule();
  }

  stop(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  snapshot(): HistogramSnapshot {
    return this.delays.snapshot();
  }

  private schedule(): void {
    const due = this.clock.now() + this.intervalMs;
    this.timer = this.clock.setTimeout(() => {
      this.delays.observe(Math.max(0, this.clock.now() - due) / 1000);
      this.schedule();
    }, this.intervalMs);
  }
}
