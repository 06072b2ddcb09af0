/**
 * Seeds for randomized tests, so that a failure found by chance can always be replayed. Every
 * randomized test takes its randomness from here: `VIGIL_TEST_SEED` when it is set (to replay a
 * failure), else a fresh seed. The seed is printed once per test file, and a failing property
 * names it in its error together with the command that replays it:
 *
 *   VIGIL_TEST_SEED=123456789 node --import tsx --test test/otlp-protobuf.test.ts
 *
 * fast-check properties: `checkProperty(fc.property(...), { numRuns })` (or `fc.assert(p,
 * propertyParams())`). Other randomness (delays, kill moments, generated data): `seededRandom()`,
 * a small deterministic generator (mulberry32) seeded the same way; give each use its own `salt`
 * so that adding a draw in one place does not shift every other.
 */
import fc from 'fast-check';

const ENV = 'VIGIL_TEST_SEED';
let seed: number | undefined;

/** The seed of this test process: VIGIL_TEST_SEED, or a fresh one (printed once). */
export function testSeed(): number {
  if (seed !== undefined) return seed;
  const given = process.env[ENV];
  if (given !== undefined && given.trim() !== '') {
    const n = Number(given);
    if (!Number.isSafeInteger(n)) throw new Error(`${ENV} must be an integer, got '${given}'`);
    seed = n | 0;
    process.stdout.write(`randomized tests replay seed ${seed} (from ${ENV})\n`);
  } else {
    seed = (Date.now() ^ (process.pid << 16) ^ Math.floor(Math.random() * 0x7fffffff)) | 0;
    process.stdout.write(`randomized tests use seed ${seed}; replay with ${ENV}=${seed}\n`);
  }
  return seed;
}

/** A deterministic generator of numbers in [0, 1) from the test seed (and a salt per use). */
export function seededRandom(salt = 0): () => number {
  let a = (testSeed() ^ Math.imul(salt + 1, 0x9e3779b9)) >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** fast-check parameters with the test seed. */
export function propertyParams<T>(params: fc.Parameters<T> = {}): fc.Parameters<T> {
  return { ...params, seed: testSeed() };
}

/** fc.assert with the test seed; a failure names the seed and how to replay it. */
export function checkProperty<Ts>(property: fc.IRawProperty<Ts>, params: fc.Parameters<Ts> = {}): void {
  const details = fc.check(property, propertyParams(params)) as fc.RunDetails<Ts>;
  if (!details.failed) return;
  const replay = `${ENV}=${details.seed} node --import tsx --test ${process.argv[1] ?? '<test file>'}`;
  throw new Error(`property failed; replay with ${replay}\n${fc.defaultReportMessage(details) ?? ''}`, { cause: details.errorInstance });
}
