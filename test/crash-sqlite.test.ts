/**
 * Crash test (SQLite): the same stream through an uninterrupted `vigil run` and through one that is
 * SIGKILLed at random moments and restarted; the work delivered must be the same — none missing,
 * none duplicated, every id stable.
 */
import { join } from 'node:path';
import { test } from 'node:test';
import { crashStream, runStream } from './helpers/crash-harness.ts';
import { assertSameWork } from './helpers/crash-assert.ts';
import { tempDir } from './helpers/vigil-process.ts';

test('SQLite: SIGKILLs at random moments change no work event and no count', { timeout: 240_000 }, async (t) => {
  const stream = crashStream();
  const baseline = await runStream(stream, { state: { sqlite: join(tempDir(), 'state.db') }, kills: 0 });
  const crashed = await runStream(stream, { state: { sqlite: join(tempDir(), 'state.db') }, kills: 5, log: (m) => t.diagnostic(m) });
  assertSameWork(stream, baseline, crashed, (m) => t.diagnostic(m));
});
