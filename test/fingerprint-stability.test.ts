/**
 * Fingerprints are identities stored in users' state (group keys): a change of the rules must not
 * silently merge or split stored groups. test/fixtures/fingerprints-v2.jsonl pins the v2
 * fingerprint the vigil rules gave every failure of the corpus before round two (issue #13). Today
 * each of them must get either
 * - the same v2 fingerprint (the stored group goes on), or
 * - a fingerprint of another version (`v3:`: a round-two rule identifies it differently, visibly:
 *   a new group that cannot be mistaken for the old one), or
 * - for a wrapper (issue #11: `tool x failed (attempt 3): Error: KeyError: …`), the fingerprint of
 *   the error it wraps, seen alone — the documented regroup into the inner error's group.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { classifyLine, type ClassifiedLine } from '../src/processors/classify/classify.ts';

interface Pinned {
  id: string;
  text: string;
  exit_code: number;
  signature: string;
  fingerprint: string;
}

const pinned: Pinned[] = readFileSync(new URL('./fixtures/fingerprints-v2.jsonl', import.meta.url), 'utf8')
  .split('\n')
  .filter((l) => l !== '')
  .map((l) => JSON.parse(l) as Pinned);

const classify = (text: string, exitCode: number) => classifyLine(JSON.stringify({ text, exit_code: exitCode }), 1) as ClassifiedLine;

test('every pinned v2 fingerprint is kept, or visibly replaced (another version), or a wrapper joins its inner error', () => {
  assert.ok(pinned.length > 400, `${pinned.length} pinned fingerprints`);
  const silent: string[] = [];
  let kept = 0;
  for (const p of pinned) {
    const now = classify(p.text, p.exit_code);
    if (now.fingerprint === p.fingerprint) {
      kept++;
      continue;
    }
    if (now.fingerprint !== null && !now.fingerprint.startsWith('v2:')) continue;
    // A wrapper: it was named by the whole line, it is named by the error at its end now, and it
    // has that error's own fingerprint.
    const wrapper = now.signature !== null && now.signature !== p.signature && p.signature.endsWith(now.signature);
    if (wrapper && classify(now.signature!, 1).fingerprint === now.fingerprint) continue;
    silent.push(`${p.id}: ${p.fingerprint} (${p.signature}) → ${now.fingerprint} (${now.signature})`);
  }
  assert.deepEqual(silent, [], 'v2 fingerprints changed without a new version');
  assert.ok(kept > 0.8 * pinned.length, `only ${kept} of ${pinned.length} v2 fingerprints kept`);
});
