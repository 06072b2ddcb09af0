/**
 * Waiting: exponential backoff, sleeps and wake-ups, shared by the exporter and pipeline runners,
 * the receivers that retry and the Redis connection.
 */

/** The longest delay Node's timers take: a longer one fires after 1 ms instead (a Node.js TimeoutOverflowWarning). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export interface BackoffPolicy {
  initial: number;
  max: number;
  multiplier?: number;
}

/**
 * Exponential backoff with *equal jitter*, in milliseconds: the delay for `attempt` (1-based) is
 * `d = min(max, initial × multiplier^(attempt-1))`, of which half is fixed and half random —
 * a delay in [d/2, d]. Never zero (full jitter can draw 0 and retry at once), and sidecars that
 * failed together do not retry in lockstep.
 */
export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  const exp = policy.initial * Math.pow(policy.multiplier ?? 2, Math.max(0, attempt - 1));
  const capped = Math.min(policy.max, exp);
  return Math.round(capped / 2 + (random() * capped) / 2);
}

/** A delay fit for one timer: not negative, not NaN, at most MAX_TIMER_MS. */
export function timerDelay(ms: number): number {
  if (!(ms > 0)) return 0;
  return Math.min(ms, MAX_TIMER_MS);
}

/**
 * Resolves after `ms`, or at once when the signal aborts. Delays beyond Node's timer limit wait in
 * steps, so an enormous delay waits (long), never fires after 1 ms. The timer keeps the process
 * alive on purpose: a shutdown that drains with backoff must not be cut short by an empty event
 * loop. Every loop that sleeps is aborted on shutdown, which clears its timer.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    let left = Number.isFinite(ms) ? Math.max(0, ms) : MAX_TIMER_MS;
    let t: NodeJS.Timeout;
    const arm = () => {
      const step = timerDelay(left);
      left -= step;
      t = setTimeout(() => (left > 0 ? arm() : done()), step);
    };
    function done() {
      signal?.removeEventListener('abort', done);
      clearTimeout(t);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
    arm();
  });
}

/**
 * A level-triggered wake-up: `notify()` before `wait()` is not lost. The waiter resumes on the
 * next turn of the event loop, not within the notifier's turn: a receiver notifies its pipeline
 * right after its append, and its answer (a few promise steps later) would otherwise wait behind
 * the pipeline's whole round (about 1.5 ms of a request's ack at 45 requests/s, README round 13).
 */
export class Wakeup {
  private pending = false;
  private waiter: (() => void) | undefined;

  notify(): void {
    this.pending = true;
    const w = this.waiter;
    this.waiter = undefined;
    if (w) setImmediate(w);
  }

  /** Resolves on the next notify (or a pending one), or after `timeoutMs` (at most MAX_TIMER_MS). */
  wait(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (this.pending || signal?.aborted) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      let t: NodeJS.Timeout | undefined = undefined;
      let done = false;
      const finish = () => {
        // Once: a wake-up scheduled just as the timeout fired must not clear a later notify.
        if (done) return;
        done = true;
        clearTimeout(t);
        signal?.removeEventListener('abort', finish);
        if (this.waiter === finish) this.waiter = undefined;
        this.pending = false;
        resolve();
      };
      t = setTimeout(finish, timerDelay(timeoutMs));
      this.waiter = finish;
      signal?.addEventListener('abort', finish, { once: true });
    });
  }
}
