import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ERROR_CODES, errorMessage } from '../src/errors.ts';
import { ROOT } from './helpers/vigil-process.ts';

test('every error code is documented in the README, and every documented code exists', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  for (const code of Object.keys(ERROR_CODES)) assert.match(readme, new RegExp(`\\| \`${code}\` \\|`), `${code} is not in the README's error table`);
  const documented = [...readme.matchAll(/\| `(VIGIL_[A-Z_]+)` \|/g)].map((m) => m[1]);
  for (const code of documented) assert.ok(code! in ERROR_CODES, `README documents ${code}, which does not exist`);
});

test('errorMessage: an Error, a plain object that kept its message, one that kept only its code (an error from a worker thread), anything else', () => {
  assert.equal(errorMessage(new Error('disk full')), 'disk full');
  assert.equal(errorMessage({ message: 'database or disk is full', code: 'SQLITE_FULL' }), 'database or disk is full');
  assert.equal(errorMessage({ code: 'SQLITE_FULL' }), 'an error with code SQLITE_FULL (its message was lost crossing threads)');
  assert.equal(errorMessage({ code: 1 }), '[object Object]');
  assert.equal(errorMessage('plain'), 'plain');
});
