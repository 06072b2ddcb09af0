/**
 * The failure path's shortcuts give exactly what the general way gives (randomized tests are
 * seeded: see helpers/random.ts):
 * - a page item gets its diagnosis and its occurrence as a literal when it holds only what a page
 *   starts with (one object shape for V8): the same keys, in the same order, with the same values,
 *   as the spread it replaces, whatever keys the item holds (absent, undefined, in another order).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { Diagnosis } from '../src/model/event.ts';
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
