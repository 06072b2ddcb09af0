/** Exponential backoff with full jitter (the AWS architecture blog's variant), in milliseconds. */
export interface BackoffPolicy {
  initial: number;
  max: number;
  multiplier?: number;
}

export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  const exp = policy.initial * Math.pow(policy.multiplier ?? 2, Math.max(0, attempt - 1));
  const capped = Math.min(policy.max, exp);
  // Half fixed, half random: never zero, never in lockstep with other sidecars.
  return Math.round(capped / 2 + (random() * capped) / 2);
}

/**
 * Resolves after `ms`, or at once when the signal aborts. The timer keeps the process alive on
 * purpose: a shutdown that drains with backoff must not be cut short by an empty event loop.
 * Every loop that sleeps is aborted on shutdown, which clears its timer.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', done);
      clearTimeout(t);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** A level-triggered wake-up: `notify()` before `wait()` is not lost. */
export class Wakeup {
  private pending = false;
  private waiter: (() => void) | undefined;

  notify(): void {
    this.pending = true;
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  /** Resolves on the next notify (or a pending one), or after `timeoutMs`. */
  wait(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (this.pending || signal?.aborted) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      let t: NodeJS.Timeout | undefined = undefined;
      const finish = () => {
        clearTimeout(t);
        signal?.removeEventListener('abort', finish);
        if (this.waiter === finish) this.waiter = undefined;
        this.pending = false;
        resolve();
      };
      t = setTimeout(finish, timeoutMs);
      this.waiter = finish;
      signal?.addEventListener('abort', finish, { once: true });
    });
  }
}
