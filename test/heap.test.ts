/**
 * The V8 setting `vigil run` makes for its process (src/service/heap.ts): the flag must exist on the
 * Node.js running it: V8 prints "unrecognized flag" to stderr and goes on without it otherwise. CI
 * runs this on Node 20, 22 and 24. (What the flag does is shown by the benchmarks, not asserted
 * here: README, Performance, round 24.)
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

test('tuneHeap: this Node.js knows the flag it sets (nothing on stderr)', () => {
  const child = spawnSync(process.execPath, ['--import', 'tsx', '-e', "const m = await import('./src/service/heap.ts'); m.tuneHeap(); console.log('set');"], {
    encoding: 'utf8',
  });
  assert.equal(child.status, 0, child.stderr);
  assert.equal(child.stdout.trim(), 'set');
  assert.equal(child.stderr, '');
});
