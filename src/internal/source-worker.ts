/**
 * A worker thread that runs one function's source text alone, so it needs no file of its own
 * beside the built code (the SQLite store's checkpoint and sync workers). Everything the function
 * uses must come from its two arguments: the worker's `workerData` and `require`.
 */
import { Worker } from 'node:worker_threads';

export function sourceWorker<T>(main: (data: T, req: NodeJS.Require) => void, data: T): Worker {
  // `__name`: the helper a loader that keeps function names (tsx, in the tests) calls around named
  // functions; the worker's source is the function's text alone, without the loader's prelude.
  const source = `var __name = (f) => f; (${main.toString()})(require('node:worker_threads').workerData, require)`;
  // No `execArgv`: the function needs none of the preloads the process was started with (tsx in
  // the tests; an `--import` instrumentation in production), and each would load into every worker.
  return new Worker(source, { eval: true, workerData: data, execArgv: [] });
}
