#!/usr/bin/env node
/**
 * The `vigil` executable (package.json `bin` runs its compiled form, dist/cli/bin.js, through
 * bin/vigil.js; tests run this source through tsx). Sets the exit code from the command's result.
 */

// `vigil run` on Node.js 24 restarts itself with the young generation vigil is measured with, before
// it opens anything (src/service/heap.ts).
if (process.argv[2] === 'run') (await import('../service/heap.ts')).restartWithYoungGeneration();

// `vigil classify` (no options) needs none of the pipeline's components: loading only it keeps a
// long classify stream ~45 MB smaller than loading every receiver, exporter and store.
const onlyClassify = process.argv[2] === 'classify' && process.argv.length === 3;
const code = onlyClassify
  ? await (await import('./classify.ts')).runClassify(process.stdin, process.stdout)
  : await (await import('./main.ts')).main(process.argv.slice(2));
process.exitCode = code;
// Exit once pending output is flushed, even if a client keeps a connection open.
setImmediate(() => process.exit(code)).unref();
