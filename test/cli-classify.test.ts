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
  const out = v
    .stdout()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
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

test('vigil classify --rules reference answers as DESIGN 3.1 exactly; a wrong value exits 2', async () => {
  const input = [
    // The seed reads a blank error string as the text (ToolError); the vigil rules read the content.
    JSON.stringify({ kind: 'tool.result', payload: { type: 'tool_result', status: 'error', error: ' ', content: "KeyError: 'results'" } }),
    // A line without a colon has no head in the seed: the first-line fallback names it, as it is.
    JSON.stringify({ text: 'Error\n  at x', exit_code: 1 }),
  ].join('\n');
  const reference = spawnVigil(['classify', '--rules', 'reference'], { input: input + '\n' });
  assert.equal(await reference.exited, 0, reference.stderr());
  const ref = reference
    .stdout()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(ref[0].signature, 'ToolError');
  assert.match(ref[0].fingerprint, /^v1:/);
  assert.equal(ref[1].signature, 'Error');
  const vigil = spawnVigil(['classify'], { input: input + '\n' });
  assert.equal(await vigil.exited, 0, vigil.stderr());
  const vig = vigil
    .stdout()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(vig[0].signature, "KeyError: 'results'");
  assert.match(vig[0].fingerprint, /^v3:/);

  const wrong = spawnVigil(['classify', '--rules', 'strict'], { input: '' });
  assert.equal(await wrong.exited, 2);
  assert.match(wrong.stderr(), /--rules must be one of vigil, reference, got 'strict'/);
  const elsewhere = spawnVigil(['validate', '--rules', 'reference'], { input: '' });
  assert.equal(await elsewhere.exited, 2);
  assert.match(elsewhere.stderr(), /applies to 'vigil classify' only/);
});
