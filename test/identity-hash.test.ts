/**
 * Ids must stay the same across versions (a replay, or another sidecar, computes the same ids):
 * stableHash is checked against the length-prefixed hash it has always been, computed here
 * independently by updating a SHA-256 part by part, on random parts (unicode, empty, null).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import fc from 'fast-check';
import { groupKey, occurrenceId, stableHash, workEventId, workId } from '../src/model/identity.ts';
import { checkProperty } from './helpers/random.ts';

function reference(parts: ReadonlyArray<string | number | null | undefined>, length = 32): string {
  const h = createHash('sha256');
  for (const p of parts) {
    const s = p === null || p === undefined ? '\u0000' : String(p);
    h.update(`${Buffer.byteLength(s)}:`);
    h.update(s);
  }
  return h.digest('hex').slice(0, length);
}

const part = fc.oneof(fc.string({ unit: 'binary' }), fc.string(), fc.integer(), fc.constant(null), fc.constant(undefined), fc.constant(''));

test('stableHash is the length-prefixed SHA-256 of its parts, part by part', () => {
  checkProperty(
    fc.property(fc.array(part, { maxLength: 8 }), fc.integer({ min: 1, max: 64 }), (parts, length) => {
      if (stableHash(parts, length) !== reference(parts, length)) throw new Error(`differs for ${JSON.stringify(parts)}`);
    }),
    { numRuns: 500 },
  );
});

test('the ids built on it keep their inputs and prefixes', () => {
  checkProperty(
    fc.property(fc.string(), fc.string(), fc.string(), fc.string(), fc.option(fc.string(), { nil: undefined }), fc.nat(), (scope, op, rev, fp, ws, gen) => {
      const key = groupKey({ scope, operation: op, revision: rev, fingerprint: fp, ...(ws !== undefined ? { workspace: ws } : {}) });
      const parts = ['group', scope, op, rev, fp, ...(ws !== undefined ? [ws] : [])];
      if (key !== 'g_' + reference(parts)) throw new Error('groupKey');
      if (occurrenceId(key, op) !== 'o_' + reference(['occurrence', key, op])) throw new Error('occurrenceId');
      if (workId(key, gen) !== 'w_' + reference(['work', key, gen])) throw new Error('workId');
      if (workEventId(op, key, rev) !== reference(['work-event', op, key, rev])) throw new Error('workEventId');
    }),
    { numRuns: 300 },
  );
});

test('cached group keys: a repeated or near-repeated input gets the key of its own parts, never a neighbour’s', () => {
  // Few values per part, drawn many times: most calls are cache hits, inputs share fingerprints
  // across many scopes (more than the cache keeps per fingerprint), and parts that would run
  // together if concatenated (`a`+`bc`, `ab`+`c`), an empty operation and an absent one, an
  // absent and an empty workspace all occur.
  const few = fc.constantFrom('', 'a', 'ab', 'bc', 'c', 'é', '\u0000');
  const scope = fc.oneof(
    few,
    fc.nat({ max: 40 }).map((n) => `session:${n}`),
  );
  checkProperty(
    fc.property(
      fc.array(fc.tuple(scope, fc.option(few, { nil: undefined }), few, few, fc.option(few, { nil: undefined })), { minLength: 1, maxLength: 300 }),
      (inputs) => {
        for (const [s, op, rev, fp, ws] of inputs) {
          const key = groupKey({ scope: s, operation: op, revision: rev, fingerprint: fp, ...(ws !== undefined ? { workspace: ws } : {}) });
          const expected = 'g_' + reference(['group', s, op ?? '', rev, fp, ...(ws !== undefined ? [ws] : [])]);
          if (key !== expected) throw new Error(`groupKey differs for ${JSON.stringify([s, op, rev, fp, ws])}`);
        }
      },
    ),
    { numRuns: 200 },
  );
});

test('occurrence and work-event ids (hash input written out in one template) on unicode, long and empty parts', () => {
  // ASCII parts up to 64 characters are measured in JS, others by Buffer.byteLength: both sides of
  // that boundary, lone surrogates and multi-byte characters included.
  const text = fc.oneof(
    fc.string({ unit: 'binary' }),
    fc.string({ unit: 'binary', minLength: 60, maxLength: 70 }),
    fc.string({ minLength: 63, maxLength: 66 }),
    fc.constant(''),
  );
  checkProperty(
    fc.property(text, text, text, (a, b, c) => {
      if (occurrenceId(a, b) !== 'o_' + reference(['occurrence', a, b])) throw new Error(`occurrenceId differs for ${JSON.stringify([a, b])}`);
      if (workEventId(a, b, c) !== reference(['work-event', a, b, c])) throw new Error(`workEventId differs for ${JSON.stringify([a, b, c])}`);
    }),
    { numRuns: 2000 },
  );
  // Not strings (the types forbid it; a JavaScript caller could): the general way, null as \u0000.
  const loose = (v: unknown) => v as string;
  assert.equal(occurrenceId(loose(undefined), 'e'), 'o_' + reference(['occurrence', undefined, 'e']));
  assert.equal(workEventId('t', loose(null), loose(7)), reference(['work-event', 't', null, 7]));
});
