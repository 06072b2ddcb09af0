/**
 * Worker threads started from source text, so they need no file of their own beside the built
 * code: `sourceWorker` runs one function's text alone (the SQLite store's checkpoint and sync
 * workers; everything the function uses must come from its two arguments, the worker's
 * `workerData` and `require`), `evalWorker` any script (the OTLP decode threads' bootstrap).
 */
import { Worker } from 'node:worker_threads';

export function sourceWorker<T, M>(main: (data: T, req: NodeJS.Require) => void, data: T, onMessage?: (message: M) => void): Worker {
  // `__name`: the helper a loader that keeps function names (tsx, in the tests) calls around named
  // functions; the worker's source is the function's text alone, without the loader's prelude.
  return evalWorker(`var __name = (f) => f; (${main.toString()})(require('node:worker_threads').workerData, require)`, data, onMessage);
}

/**
 * A worker running `source`. No `execArgv`: vigil's threads load what they need themselves, and a
 * preload the process was started with (tsx in the tests; an `--import` instrumentation in
 * production) would load into every one of them. `NODE_OPTIONS` still reaches them. With
 * `onMessage`, the worker comes back unref'd, that its listener (unrefListening).
 */
export function evalWorker<M>(source: string, workerData: unknown, onMessage?: (message: M) => void): Worker {
  const worker = new Worker(source, { eval: true, workerData, execArgv: [] });
  if (onMessage) unrefListening(worker, onMessage);
  return worker;
}

/**
 * A worker that does not keep the process alive, with `onMessage` as its message listener: the
 * listener first, the unref after. Adding a 'message' listener refs the worker's message port
 * again, so a worker unref'd first held the process for good (an open SQLite store's checkpoint
 * worker kept a test's process alive until the runner's timeout: README, Performance, round 46).
 * The caller refs the worker while it awaits an answer.
 */
function unrefListening<M>(worker: Worker, onMessage: (message: M) => void): void {
  worker.on('message', onMessage);
  worker.unref();
}
