/**
 * Admission control for a receiver's requests, in the shape of the OpenTelemetry Collector's (the
 * OTel-Arrow receiver's `admission` and the `admission_limiter` extension): the bytes of the
 * requests held at once — read, decoded, being appended — are bounded by `request_limit_mib`, and
 * the bytes of the requests waiting for room by `waiting_limit_mib`. A request that fits is
 * admitted at once; one that does not waits, in arrival order, without its body being read (the
 * client's TCP window fills); one that would take the waiting past its limit is refused at once
 * with a retryable answer. Without it every connection may hold a whole body (4 MiB by default),
 * so a few hundred slow or stalled uploads take the process's memory past any container's limit.
 *
 * Both limits count memory, as the Collector's do. A request is admitted for the most its body may
 * take (its `Content-Length`, or the body limit when that is not known before reading: gzip,
 * chunked, gRPC), and once read it holds what the body took (`Held.shrinkTo`), so that calls whose
 * size is unknown are not held to a few dozen at a time by a charge they never use. A waiting
 * request, its body unread, holds at most what a paused stream buffers (UNREAD_BYTES), and is
 * charged that against the waiting limit, not its whole body. Charged whole, at the default limits
 * the 41st of a burst of small gRPC calls was refused, though their messages took a few KiB in all.
 */

/**
 * About the most a request's unread body takes in this process while it waits: a paused HTTP/1.1
 * request's readable buffer (Node's highWaterMark, 16 KiB on Node.js 20 and 64 KiB from 22, beside
 * the last socket read) or a paused HTTP/2 stream's flow-control window (65,535 bytes: the window
 * the server grants, and grpc-js keeps Node's default).
 */
export const UNREAD_BYTES = 64 * 1024;

/** What an admitted request holds until it is answered. */
export interface Held {
  /** Gives the bytes back; calling it again does nothing. */
  release(): void;
  /** Lowers the charge to `bytes` once the body is read (never raises it), letting waiters in. */
  shrinkTo(bytes: number): void;
}

/** What an Admission holds, for /metrics and the refusal's message. */
export interface AdmissionStats {
  /** Bytes of the requests admitted and not yet answered. */
  admittedBytes: number;
  /** Bytes and number of the requests waiting to be admitted. */
  waitingBytes: number;
  waiting: number;
  /** Requests that had to wait, and requests refused because waiting was full, since start. */
  waited: number;
  refused: number;
}

interface Waiter {
  /** Admitted for these bytes; charged `unread` of the waiting limit meanwhile. */
  bytes: number;
  unread: number;
  admit: (held: Held | undefined) => void;
}

export class Admission {
  private admittedBytes = 0;
  private waitingBytes = 0;
  private readonly queue: Waiter[] = [];
  /** Index of the queue's head: waiters leave from the front without shifting the array each time. */
  private head = 0;
  private waited = 0;
  private refused = 0;

  /**
   * Limits in bytes; a request limit of 0 admits everything at once (no admission control).
   * `unreadLimit` is the most a waiting request is charged of the waiting limit (UNREAD_BYTES).
   */
  constructor(
    readonly requestLimit: number,
    readonly waitingLimit: number,
    readonly unreadLimit = UNREAD_BYTES,
  ) {}

  /**
   * Admits a request of `bytes`. Returns a Held when it is admitted at once, a promise of one
   * when it must wait behind others, or undefined when waiting would pass the waiting limit (the
   * caller refuses it). `abandon` is given the function that takes a waiting request out of the
   * queue (its client gone): the promise then resolves to undefined, and nothing is held.
   */
  acquire(bytes: number, abandon?: (drop: () => void) => void): Held | Promise<Held | undefined> | undefined {
    if (this.requestLimit === 0) return NOTHING_HELD;
    // A request larger than the limit (the config check keeps bodies within it) is admitted alone,
    // rather than blocking the queue for good.
    bytes = Math.min(bytes, this.requestLimit);
    // Nothing jumps the queue: a small request waits behind a large one that came first.
    if (this.pending() === 0 && this.admittedBytes + bytes <= this.requestLimit) return this.hold(bytes);
    const unread = Math.min(bytes, this.unreadLimit);
    if (this.waitingBytes + unread > this.waitingLimit) {
      this.refused++;
      return undefined;
    }
    this.waited++;
    this.waitingBytes += unread;
    return new Promise<Held | undefined>((resolve) => {
      const waiter: Waiter = { bytes, unread, admit: resolve };
      this.queue.push(waiter);
      abandon?.(() => this.drop(waiter));
    });
  }

  stats(): AdmissionStats {
    return { admittedBytes: this.admittedBytes, waitingBytes: this.waitingBytes, waiting: this.pending(), waited: this.waited, refused: this.refused };
  }

  private pending(): number {
    return this.queue.length - this.head;
  }

  private hold(bytes: number): Held {
    this.admittedBytes += bytes;
    let charged = bytes;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.admittedBytes -= charged;
        this.admitWaiters();
      },
      shrinkTo: (bytes) => {
        const smaller = Math.max(0, bytes);
        if (released || !(smaller < charged)) return; // also when NaN
        this.admittedBytes -= charged - smaller;
        charged = smaller;
        this.admitWaiters();
      },
    };
  }

  /** Admits waiters from the front while they fit. */
  private admitWaiters(): void {
    while (this.pending() > 0) {
      const next = this.queue[this.head]!;
      if (this.admittedBytes + next.bytes > this.requestLimit) break;
      this.queue[this.head++] = undefined as unknown as Waiter;
      this.waitingBytes -= next.unread;
      next.admit(this.hold(next.bytes));
    }
    if (this.head > 64 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }

  private drop(waiter: Waiter): void {
    const at = this.queue.indexOf(waiter, this.head);
    if (at < 0) return; // admitted already: its holder releases it
    this.queue.splice(at, 1);
    this.waitingBytes -= waiter.unread;
    waiter.admit(undefined);
    // The one that left may have been what held the others back.
    if (at === this.head) this.admitWaiters();
  }
}

/** What a request nothing was held for holds. */
const NOTHING_HELD: Held = { release: () => {}, shrinkTo: () => {} };

/** Bytes in a MiB, for the `_mib` settings. */
export const MIB = 1024 * 1024;

/** Why a request was refused at admission, for its answer: what is held, what waits, the settings. */
export function admissionRefusal(receiver: string, admission: Admission): string {
  const { admittedBytes, waitingBytes, waiting } = admission.stats();
  const mib = (bytes: number) => `${(bytes / MIB).toFixed(1)} MiB`;
  return (
    `receiver '${receiver}' is full: it holds ${mib(admittedBytes)} of requests (admission.request_limit_mib: ${admission.requestLimit / MIB}) ` +
    `and ${waiting} more wait with ${mib(waitingBytes)} (admission.waiting_limit_mib: ${admission.waitingLimit / MIB}); retry later`
  );
}
