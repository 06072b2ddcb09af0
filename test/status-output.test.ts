/**
 * `vigil status` prints values that come from agents' records (session ids, signatures, report
 * lines): both outputs must keep a crafted value from reordering or forging what a person reads.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { printable, terminalJson } from '../src/cli/status.ts';

const crafted = 'sess\u202eevil\u2066x\u2028y\u0085z\x1b[2J\nforged line\u061c';

test('text output shows controls and bidi overrides as escapes', () => {
  const shown = printable(crafted);
  assert.equal(shown, 'sess\\u202eevil\\u2066x\\u2028y\\x85z\\x1b[2J\\nforged line\\u061c');
});

test('--json escapes bidi controls, line separators and C1 controls, and parses back to the same value', () => {
  const value = { partition: crafted, nested: [{ signature: `Error: ${crafted}` }], count: 3 };
  const text = terminalJson(value);
  assert.doesNotMatch(text, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
  assert.match(text, /sess\\u202eevil\\u2066x\\u2028y\\u0085z\\u001b\[2J\\nforged line\\u061c/);
  assert.deepEqual(JSON.parse(text), value);
});

test('--json leaves ordinary text, other scripts and emoji as they are', () => {
  const value = { signature: "KeyError: 'résumé' — 名前 😀" };
  assert.equal(terminalJson(value), JSON.stringify(value, null, 2));
});
