#!/usr/bin/env node
// The `vigil` command: runs the compiled JavaScript in dist/ (no TypeScript loader). dist/ ships in
// the package; in a checkout `npm ci` builds it (the `prepare` script), `npm run build` rebuilds it.
import { existsSync } from 'node:fs';

const entry = new URL('../dist/cli/bin.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('vigil: dist/ is missing (a checkout without a build); run `npm run build` (or `npm ci`) first\n');
  process.exit(1);
}
await import(entry.href);
