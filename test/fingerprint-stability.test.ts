/**
 * Fingerprints are identities stored in users' state (group keys): a change of the rules must not
 * silently merge or split stored groups. test/fixtures/fingerprints.jsonl pins the fingerprint the
 * vigil rules give every failure of the corpus (written by scripts/corpus/pin-fingerprints.ts when
 * the algorithm version was last bumped, v3). Each must still get exactly that fingerprint, or one
 * of another version: a change of identity is only allowed together with a new version (and a new
 * pin), so that every stored group is visibly replaced rather than silently merged or split.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { classifyLine, type ClassifiedLine } from '../src/processors/classify/classify.ts';

interface Pinned {
  id: string;
  text: string;
  exit_code: number;
  fingerprint: string;
}

const pinned: Pinned[] = readFileSync(new URL('./fixtures/fingerprints.jsonl', import.meta.url), 'utf8')
  .split('\n')
  .filter((l) => l !== '')
  .map((l) => JSON.parse(l) as Pinned);

const versionOf = (fp: string) => fp.slice(0, fp.indexOf(':'));

test('every pinned fingerprint is kept, or replaced by one of another version', () => {
  assert.ok(pinned.length > 600, `${pinned.length} pinned fingerprints`);
  const silent: string[] = [];
  for (const p of pinned) {
    const now = (classifyLine(JSON.stringify({ text: p.text, exit_code: p.exit_code }), 1) as ClassifiedLine).fingerprint;
    if (now === p.fingerprint) continue;
    if (now !== null && versionOf(now) !== versionOf(p.fingerprint)) continue;
    silent.push(`${p.id}: ${p.fingerprint} → ${now}`);
  }
  assert.deepEqual(silent, [], 'fingerprints changed within their version: bump the version (fingerprint3.ts) and re-pin');
});
