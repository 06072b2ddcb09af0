/**
 * Rules added after the second held-out batch's first score (each general, none keyed to a case):
 * a DOMException's bracketed name, glibc's last words before SIGABRT, a job tag before a failed
 * attempt, and CMake's `Warning (dev) in` head.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { classifyLine, type ClassifiedLine } from '../src/processors/classify/classify.ts';

const classify = (text: string, exit_code: number) => classifyLine(JSON.stringify({ text, exit_code }), 1) as ClassifiedLine;

test("a DOMException with its name in brackets is the error line, not node's source header", () => {
  const text = (file: string, line: number) =>
    `node:internal/deps/undici/undici:${line}\n      Error.captureStackTrace(err);\n            ^\nDOMException [TimeoutError]: The operation was aborted due to timeout\n    at node:internal/deps/undici/undici:${line}:13\n    at async file:///tmp/${file}/slow.mjs:14:15\n\nNode.js v20.20.2\n`;
  const a = classify(text('task-a', 14976), 1);
  const b = classify(text('run-b', 15020), 1);
  assert.equal(a.signature, 'DOMException [TimeoutError]: The operation was aborted due to timeout');
  assert.equal(a.fingerprint, b.fingerprint);
  const abort = classify(text('task-a', 14976).replace('[TimeoutError]: The operation was aborted due to timeout', '[AbortError]: This operation was aborted'), 1);
  assert.notEqual(abort.fingerprint, a.fingerprint, 'another DOMException name is another failure');
});

test("glibc's reports before SIGABRT name the failure; two kinds are two failures, not one SIGABRT", () => {
  const smash = classify('*** stack smashing detected ***: terminated\n', 134);
  const badFree = classify('free(): invalid pointer\n', 134);
  const doubleFree = classify('free(): double free detected in tcache 2\n', 134);
  const corruption = classify('double free or corruption (out)\n', 134);
  const fortify = classify('*** buffer overflow detected ***: terminated\n', 134);
  for (const r of [smash, badFree, doubleFree, corruption, fortify]) assert.equal(r.classification, 'ExecutionFailure');
  assert.equal(smash.signature, '*** stack smashing detected ***: terminated');
  assert.equal(badFree.signature, 'free(): invalid pointer');
  assert.equal(corruption.signature, 'double free or corruption (out)');
  assert.equal(new Set([smash, badFree, doubleFree, corruption, fortify].map((r) => r.fingerprint)).size, 5);
  assert.equal(classify('', 134).signature, 'SIGABRT', 'a silent abort is still named by its signal');
  assert.equal(classify('checked free(): all pointers valid\n', 0).classification, 'Uncertain', 'only the report itself, as a whole line');
});

test('a job tag before a failed attempt makes a wrapper named by its line, identified without the attempt', () => {
  const r1 = classify('[sync] attempt 1 failed: ECONNREFUSED 127.0.0.1:50376\n[sync] attempt 2 failed: ECONNREFUSED 127.0.0.1:50376\n', 0);
  const r2 = classify('[sync] attempt 3 failed: ECONNREFUSED 127.0.0.1:28148\n', 0);
  assert.equal(r1.classification, 'RecoveredError');
  assert.equal(r1.signature, '[sync] attempt 1 failed: ECONNREFUSED 127.0.0.1:50376');
  assert.equal(r1.fingerprint, r2.fingerprint);
  assert.equal(classify('[sync] attempt 1 succeeded\n', 0).classification, 'Uncertain', 'a tag alone says nothing failed');
  assert.equal(classify('[sync] 42 files copied\n', 0).classification, 'Uncertain');
});

test("CMake's `Warning (dev) in CMakeLists.txt:` is a warning", () => {
  const r = classify(
    'CMake Warning (dev) in CMakeLists.txt:\n  No project() command is present.\nThis warning is for project developers.  Use -Wno-dev to suppress it.\n',
    0,
  );
  assert.equal(r.classification, 'StderrWarning');
  assert.equal(r.signature, null);
});
