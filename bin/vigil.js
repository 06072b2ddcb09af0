#!/usr/bin/env node
// Runs vigil's TypeScript sources through tsx's loader (Node 20 cannot run TypeScript itself).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
const code = await main(process.argv.slice(2));
process.exitCode = code;
// Exit once pending output is flushed, even if a client keeps a connection open.
setImmediate(() => process.exit(code)).unref?.();
