/**
 * bench:ack-phases's decode thread: vigil's own (src/receivers/otlp/decode-worker.ts), loaded as it
 * is, with each body's start and end on the thread added to its answer (ms since the epoch,
 * comparable across threads), and the thread's time waiting for a CPU meanwhile (its scheduler
 * statistics, machine-speed.ts; the kernel adds a wait as the thread gets a CPU, so it is exact; its
 * CPU time is not, being brought up to date only at the scheduler's ticks and switches). vigil's
 * handler is wrapped as it registers, so the start is taken as it receives a body, and the end as
 * it posts the answer.
 */
import { parentPort, type Transferable } from 'node:worker_threads';
import { threadTimes, type ThreadTimes } from './machine-speed.ts';

/** What the stamped answer's body carries (bench/ack-phases.ts reads it). */
export interface DecodeThreadTimes {
  threadTimes?: { began: number; ended: number; runQueueMs: number };
}

const port = parentPort!;
const now = () => performance.timeOrigin + performance.now();
let began = 0;
let from: ThreadTimes | undefined;
const post = port.postMessage.bind(port);
port.postMessage = (answer: { body?: DecodeThreadTimes }, transfer?: readonly Transferable[]) => {
  const ended = now();
  const to = threadTimes();
  if (answer.body) {
    answer.body.threadTimes = {
      began,
      ended,
      runQueueMs: to?.runQueueMs !== undefined && from?.runQueueMs !== undefined ? to.runQueueMs - from.runQueueMs : NaN,
    };
  }
  post(answer, transfer);
};
const on = port.on.bind(port);
port.on = ((event: string, listener: (m: unknown) => void) =>
  on(
    event,
    event !== 'message'
      ? listener
      : (m: unknown) => {
          // The statistics' read (a file in /proc) before the start, and after the end: outside the span timed.
          from = threadTimes();
          began = now();
          listener(m);
        },
  )) as typeof port.on;
await import('../src/receivers/otlp/decode-worker.ts');
