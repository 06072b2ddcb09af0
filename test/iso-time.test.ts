/**
 * isoTime must format every time exactly as `new Date(ms).toISOString()` does (work events carry
 * its strings): random times over the whole range a Date holds, the edges of the four-digit years,
 * leap days and fractional milliseconds; outside that range it must throw as the native call does.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { isoTime } from '../src/internal/iso-time.ts';
import { checkProperty } from './helpers/random.ts';

const MAX_TIME = 8.64e15;

function native(ms: number): string {
  try {
    return new Date(ms).toISOString();
  } catch (err) {
    return `throws ${(err as Error).name}`;
  }
}

function ours(ms: number): string {
  try {
    return isoTime(ms);
  } catch (err) {
    return `throws ${(err as Error).name}`;
  }
}

test('isoTime is toISOString on random times of the whole Date range', () => {
  checkProperty(
    fc.property(
      fc.oneof(
        fc.integer({ min: -MAX_TIME, max: MAX_TIME }),
        // The four-digit years, where the arithmetic (not the native call) formats.
        fc.integer({ min: -62_167_219_200_000, max: 253_402_300_799_999 }),
        fc.double({ min: -MAX_TIME, max: MAX_TIME, noNaN: true }),
      ),
      (ms) => assert.equal(ours(ms), native(ms), `for ${ms}`),
    ),
    { numRuns: 20_000 },
  );
});

test('isoTime is toISOString at the edges', () => {
  const day = 86_400_000;
  const edges = [
    0,
    -0,
    1,
    -1,
    0.5,
    -0.5,
    1.999,
    -1.999,
    day - 1,
    -day,
    Date.UTC(2000, 1, 29, 23, 59, 59, 999),
    Date.UTC(1900, 1, 28, 12),
    Date.UTC(2100, 2, 1),
    Date.UTC(1600, 1, 29),
    -62_167_219_200_000,
    -62_167_219_200_001,
    253_402_300_799_999,
    253_402_300_800_000,
    MAX_TIME,
    -MAX_TIME,
    MAX_TIME + 1,
    NaN,
    Infinity,
    -Infinity,
  ];
  for (const ms of edges) assert.equal(ours(ms), native(ms), `for ${ms}`);
});
