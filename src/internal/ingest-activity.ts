/**
 * The requests receivers are working on, from a request's start until its answer is sent, so that
 * background work sharing the event loop (pipeline pages, deliveries) can wait for a moment
 * without any. An ack then does not queue behind a page of processing it does not need: on the
 * SQLite default the ack's p99 at half the full rate follows how long requests wait for the loop,
 * and pages and deliveries were about half of what the loop ran (README, Performance, round 21).
 *
 * The wait is bounded (`maxWaitMs`), and a caller that is behind (a pipeline whose last pages were
 * full) does not wait at all, so background work is delayed while it keeps up and never starved:
 * under a steady full load, when some request is always in flight, pipelines run as before.
 */

/** The clock's part of the event loop this needs (injected in tests). */
export interface ActivityTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Runs `fn` after the I/O that is ready now has been handled (setImmediate). */
  afterIo(fn: () => void): void;
}

const NODE_TIMERS: ActivityTimers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
  afterIo: (fn) => setImmediate(fn),
};

/** How long background work waits at most for a moment without requests. */
export const DEFAULT_MAX_WAIT_MS = 25;

export class IngestActivity {
  private active = 0;
  private readonly waiters = new Set<() => void>();
  private releasing = false;

  constructor(
    readonly maxWaitMs = DEFAULT_MAX_WAIT_MS,
    private readonly timers: ActivityTimers = NODE_TIMERS,
  ) {}

  /** Requests in flight now. */
  get inFlight(): number {
    return this.active;
  }

  /** A request started; the function returned ends it (the first call; later ones do nothing). */
  begin(): () => void {
    this.active++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.active--;
      if (this.active === 0) this.releaseSoon();
    };
  }

  /**
   * Resolves once no request is in flight, or after `maxWaitMs`; undefined (nothing to wait for)
   * when none is in flight now.
   */
  quiet(): Promise<void> | undefined {
    if (this.active === 0) return undefined;
    return new Promise<void>((resolve) => {
      const done = () => {
        this.waiters.delete(done);
        this.timers.clearTimeout(timer);
        resolve();
      };
      const timer = this.timers.setTimeout(done, this.maxWaitMs);
      this.waiters.add(done);
    });
  }

  /**
   * The last request ended: the waiters go on after two turns of the loop's I/O, so a request whose
   * bytes arrived meanwhile (a client's next one, often) starts first and keeps them waiting.
   */
  private releaseSoon(): void {
    if (this.releasing || this.waiters.size === 0) return;
    this.releasing = true;
    this.timers.afterIo(() =>
      this.timers.afterIo(() => {
        this.releasing = false;
        if (this.active > 0) return;
        for (const done of [...this.waiters]) done();
      }),
    );
  }
}
