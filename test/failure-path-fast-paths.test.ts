/**
 * The failure path's shortcuts give exactly what the general way gives (randomized tests are
 * seeded: see helpers/random.ts):
 * - a page item gets its diagnosis and its occurrence as a literal when it holds only what a page
 *   starts with (one object shape for V8): the same keys, in the same order, with the same values,
 *   as the spread it replaces, whatever keys the item holds (absent, undefined, in another order);
 * - the 64-bit hash (fingerprints, error-kind fingerprints, failure keys) writes its hex digits into
 *   one flat string: the same string as the concatenation of digit pairs it replaces;
 * - a Python traceback's frame lines are read by hand: the same frame as the regular expression
 *   finds, and none where it finds none, for well-formed, broken and random lines.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { Diagnosis } from '../src/model/event.ts';
import { kindFingerprint } from '../src/processors/classify/error-kind.ts';
import { fingerprintFields, fingerprintV3, hash64, versionedHash64 } from '../src/processors/classify/fingerprint3.ts';
import { FRAME, frameKey, frameKeyAt } from '../src/processors/classify/formats/python.ts';
import { withDiagnosis, withOccurrence, type Occurrence, type PageItem } from '../src/processors/page.ts';
import { checkProperty } from './helpers/random.ts';

const entry = { id: '1', event: { eventId: 'e', kind: 'execution.completed', payload: {}, partition: 'p', time: 0, service: 's', source: 'jsonl' as const } };
const diagnosis: Diagnosis = { classification: 'ExecutionFailure', signature: 'E: x', fingerprint: 'v3:0123456789abcdef' };
const occurrence: Occurrence = { occurrenceId: 'o_1', groupKey: 'g_1', decision: 'BurstCoalesced', workId: null, revision: 'unknown', count: 1 };

/** An item's keys, each absent or present (maybe undefined), in a random order. */
const item = fc
  .tuple(
    fc.shuffledSubarray(['entry', 'diagnosis', 'occurrence', 'handledBy', 'mergedInto', 'other'] as const),
    fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
  )
  .map(([keys, undefinedValue]) => {
    const values: Record<string, unknown> = {
      entry,
      diagnosis: { ...diagnosis, signature: 'earlier' },
      occurrence,
      handledBy: 'watchdog',
      mergedInto: 't/x',
      other: 1,
    };
    const out: Record<string, unknown> = {};
    keys.forEach((k, i) => (out[k] = undefinedValue[i] ? undefined : values[k]));
    return out as unknown as PageItem;
  });

function sameObject(actual: object, expected: object): void {
  assert.deepEqual(Object.keys(actual), Object.keys(expected));
  assert.deepStrictEqual(actual, expected);
}

test('withDiagnosis and withOccurrence are the spreads they replace, for any keys an item holds', () => {
  checkProperty(
    fc.property(item, (i) => {
      sameObject(withDiagnosis(i, diagnosis), { ...i, diagnosis });
      sameObject(withOccurrence(i, occurrence), { ...i, occurrence });
    }),
    { numRuns: 2000 },
  );
  // The shapes the literals are for, explicitly.
  sameObject(withDiagnosis({ entry }, diagnosis), { entry, diagnosis });
  sameObject(withOccurrence({ entry, diagnosis }, occurrence), { entry, diagnosis, occurrence });
  sameObject(withOccurrence({ diagnosis, entry } as PageItem, occurrence), { diagnosis, entry, occurrence });
});

/** The 64-bit hash as it was written before its digits went into one flat string: pairs of digits concatenated. */
function referenceHash64(parts: readonly string[]): string {
  let h1 = 0x2f3c1a5b;
  let h2 = 0x6d1e8c47;
  for (const s of parts) {
    const n = s.length;
    for (let i = -2; i < n; i += 2) {
      const w = i < 0 ? n : i + 1 < n ? s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16) : s.charCodeAt(i);
      let a = Math.imul(h1 ^ w, 0xcc9e2d51);
      h1 = (Math.imul((a << 13) | (a >>> 19), 5) + 0xe6546b64) | 0;
      a = Math.imul(h2 ^ w, 0x1b873593);
      h2 = (Math.imul((a << 17) | (a >>> 15), 5) + 0x561ccd1b) | 0;
    }
  }
  const fmix = (h: number) => {
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
    return h ^ (h >>> 16);
  };
  let a = fmix((h1 + h2) | 0);
  let b = fmix((h2 + h1 + h2) | 0);
  a = (a + b) | 0;
  b = (b + a) | 0;
  const pair = (x: number) => x.toString(16).padStart(2, '0');
  const hex32 = (x: number) => pair((x >>> 24) & 255) + pair((x >>> 16) & 255) + pair((x >>> 8) & 255) + pair(x & 255);
  return hex32(a) + hex32(b);
}

test('the 64-bit hash in one flat string is the concatenation of digit pairs it replaces', () => {
  const parts = fc.array(fc.oneof(fc.string({ unit: 'binary' }), fc.string(), fc.constant('')), { maxLength: 6 });
  checkProperty(
    fc.property(parts, parts, (x, y) => {
      // Interleaved: the scratch arrays are shared by both forms and every call.
      const hx = hash64(x);
      const vy = versionedHash64(y);
      const vx = versionedHash64(x);
      assert.equal(hx, referenceHash64(x));
      assert.equal(vy, 'v3:' + referenceHash64(y));
      assert.equal(vx, 'v3:' + hx);
    }),
    { numRuns: 2000 },
  );
  // Where the flat form is used: a v3 fingerprint and an error kind's.
  const key = { kind: 'stack' as const, types: ['KeyError'], frames: ['job:run'], message: "'sku'", weak: false };
  assert.equal(fingerprintV3(key), 'v3:' + referenceHash64(fingerprintFields(key)));
  assert.equal(kindFingerprint('tool.timeout', 'v3:0123456789abcdef'), 'v3:' + referenceHash64(['kind', 'tool.timeout', 'v3:0123456789abcdef']));
});

test('a frame line read by hand is the frame the regular expression finds', () => {
  // Pieces that make, break or nearly make a frame: quotes, the separators, digits, line
  // terminators (`.` does not match them), stdlib paths (dropped frames), non-ASCII.
  const piece = fc.constantFrom(
    '"',
    '", line ',
    ', line ',
    ', in ',
    ',',
    ' in ',
    '1',
    '23',
    'x',
    'job.py',
    '/usr/lib/python3.11/',
    'site-packages/',
    '<frozen runpy>',
    '<module>',
    ' ',
    '\t',
    '\r',
    '\n',
    '\u2028',
    '\u2029',
    'é',
    '',
  );
  const text = fc.oneof(
    fc.string(),
    fc.string({ unit: 'binary' }),
    fc.array(piece, { maxLength: 6 }).map((p) => p.join('')),
  );
  const wellFormed = fc
    .tuple(text, fc.oneof(fc.nat(), fc.constant(0)), fc.option(text, { nil: undefined }))
    .map(([path, line, func]) => `File "${path}", line ${line}${func === undefined ? '' : `, in ${func}`}`);
  const pieces = fc.array(fc.oneof(piece, text), { maxLength: 10 }).map((p) => 'File "' + p.join(''));
  const frameLine = fc
    .tuple(fc.constantFrom('', '  ', '    ', '\t'), fc.oneof(wellFormed, pieces), fc.constantFrom('', ' ', '\r', '\n', 'x'))
    .map(([indent, body, end]) => ({
      line: indent + body + end,
      at: indent.length,
    }));
  checkProperty(
    fc.property(frameLine, ({ line, at }) => {
      const m = FRAME.exec(line.slice(at));
      assert.equal(frameKeyAt(line, at), m ? frameKey(m[1]!, m[2] ?? '<module>') : undefined, JSON.stringify(line));
    }),
    { numRuns: 5000 },
  );
  // The usual frames, explicitly.
  assert.equal(frameKeyAt('  File "job.py", line 1', 2), 'job:<module>');
  assert.equal(frameKeyAt('  File "/app/src/svc/api.py", line 42, in handle', 2), 'api:handle');
  assert.equal(frameKeyAt('  File "/usr/lib/python3.11/json/decoder.py", line 3, in decode', 2), '!');
  assert.equal(frameKeyAt('  File "job.py", line x', 2), undefined);
  assert.equal(frameKeyAt('  File "job.py", line 1, in ', 2), undefined);
});
