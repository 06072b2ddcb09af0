/**
 * Worker threads started from source text, so they need no file of their own beside the built
 * code: `sourceWorker` runs one function's text alone (the SQLite store's checkpoint and sync
 * workers; everything the function uses must come from its two arguments, the worker's
 * `workerData` and `require`), `evalWorker` any script (the OTLP decode threads' bootstrap).
 */
import { Worker } from 'node:worker_threads';

export function sourceWorker<T>(main: (data: T, req: NodeJS.Require) => void, data: T): Worker {
  // `__name`: the helper a loader that keeps function names (tsx, in the tests) calls around named
  // functions; the worker's source is the function's text alone, without the loader's prelude.
  return evalWorker(`var __name = (f) => f; (${main.toString()})(require('node:worker_threads').workerData, require)`, data);
}

/**
 * A worker running `source`. No `execArgv`: vigil's threads load what they need themselves, and a
 * preload the process was started with (tsx in the tests; an `--import` instrumentation in
 * production) would load into every one of them. `NODE_OPTIONS` still reaches them.
 */
export function evalWorker(source: string, workerData: unknown): Worker {
  return new Worker(source, { eval: true, workerData, execArgv: [] });
}
