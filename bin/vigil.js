#!/usr/bin/env node
// Runs vigil's TypeScript sources through tsx's loader (Node 20 cannot run TypeScript itself).
import { register } from 'tsx/esm/api';

register();
// `vigil classify` (no options) needs none of the pipeline's components: loading only it keeps a
// long classify stream ~45 MB smaller than loading every receiver, exporter and store.
const { main } =
  process.argv[2] === 'classify' && process.argv.length === 3
    ? { main: async () => (await import('../src/cli/classify.ts')).runClassify(process.stdin, process.stdout) }
    : await import('../src/cli/main.ts');
const code = await main(process.argv.slice(2));
process.exitCode = code;
// Exit once pending output is flushed, even if a client keeps a connection open.
setImmediate(() => process.exit(code)).unref?.();
