/** `vigil classify` as a process: JSONL in, one JSONL result per line out, same order. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { spawnVigil } from './helpers/vigil-process.ts';

test('vigil classify answers every line in order, with per-line errors for malformed lines', async () => {
  const input = [
    JSON.stringify({ text: 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nZeroDivisionError: division by zero', exit_code: 1 }),
    '{not json',
    JSON.stringify({ kind: 'tool.result', payload: { type: 'tool_result', status: 'skipped', reason: 'peer busy' } }),
    JSON.stringify({ text: 'warning: unused variable `x`' }),
    '',
    JSON.stringify({ kind: 'execution.completed', payload: { state: 'ok', outcome: { output: [] } } }),
  ].join('\n');
  const v = spawnVigil(['classify'], { input: input + '\n' });
  assert.equal(await v.exited, 0, v.stderr());
  const out = v.stdout().trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(out.length, 6);
  assert.equal(out[0].classification, 'ExecutionFailure');
  assert.equal(out[0].signature, 'ZeroDivisionError: division by zero');
  assert.match(out[0].fingerprint, /^v\d+:/);
  assert.match(out[1].error, /^line 2: /);
  assert.equal(out[2].classification, 'SkippedPeerCall');
  assert.equal(out[3].classification, 'StderrWarning');
  assert.match(out[4].error, /^line 5: /);
  assert.deepEqual(out[5], { classification: 'NormalOutput', signature: null, fingerprint: null });
});
