/**
 * `rules: reference` against a second, independent transcription of DESIGN 3.1
 * (test/helpers/seed-transcription.ts) on random events. The seed is printed; replay a failure with
 * `VIGIL_TEST_SEED=<seed> node --import tsx --test test/classify-reference-parity.test.ts`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { AgentEvent } from '../src/model/event.ts';
import { diagnose } from '../src/processors/classify/classify.ts';
import { seedClassify } from './helpers/seed-transcription.ts';

const SEED = process.env.VIGIL_TEST_SEED ? Number(process.env.VIGIL_TEST_SEED) : Date.now() ^ (Math.random() * 0x7fffffff);
const NUM_RUNS = Number(process.env.VIGIL_TEST_RUNS ?? 3000);

/** The pieces the rules look at, and the characters on which transcriptions tend to differ. */
const piece = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
  {
    weight: 8,
    arbitrary: fc.constantFrom(
      'Traceback (most recent call last):',
      'log: Traceback (most recent call last):',
      '  + Exception Group Traceback (most recent call last):',
      'Traceback (most recent call last)',
      '  File "/tmp/x.py", line 3, in <module>',
      'ValueError: bad',
      'ValueError',
      'KeyError:',
      'ERROR: x',
      'Error: e',
      'error: e',
      'error',
      'Error',
      'fatal: f',
      'FATAL: f',
      'Fatal:',
      'panic: p',
      'PANIC:',
      'Exception: boom',
      'RuntimeException: r',
      'SomeErrorWarning: w',
      'ErrorWarning: x',
      'Warning: w',
      'warning: w',
      'WARNING',
      'warn: w',
      'Warn: w',
      '[warning] w',
      '[WARNING] w',
      'UserWarning: w',
      'DeprecationWarning: d',
      'syntaxwarning: s',
      'RuntimeWarning: r',
      'FutureWarning: f',
      'MyWarning: m',
      'a warning: b',
      'xwarning',
      ': lead',
      'a:b:c',
      'x: y',
      'no colon here',
      ' error: spaced',
      '\terror: tabbed',
    ),
  },
  {
    weight: 6,
    arbitrary: fc.constantFrom('\n', '\r\n', '\r', '\n\n', ' ', '  ', '\t', '\u00a0', '\u0085', '\u2028', '\ufeff', '\u3000', '\v', '\f'),
  },
  { weight: 1, arbitrary: fc.constantFrom('😀', 'é', 'Σ', 'İ', 'ﬁ', '\u0000') },
  { weight: 1, arbitrary: fc.integer({ min: 80, max: 130 }).map((n) => 'Error: ' + 'x'.repeat(n)) },
  { weight: 1, arbitrary: fc.integer({ min: 40, max: 60 }).map((n) => 'Error: ' + 'ab '.repeat(n)) },
  { weight: 1, arbitrary: fc.integer({ min: 85, max: 100 }).map((n) => 'ValueError: ' + '😀'.repeat(n)) },
);
const text = fc.array(piece, { maxLength: 10 }).map((ps) => ps.join(''));
/** A text field: mostly text, sometimes empty, blank or of another JSON type. */
const textField = fc.oneof(
  { weight: 12, arbitrary: text },
  { weight: 1, arbitrary: fc.constantFrom<unknown>('', '   ', ' \n\t', '\u0085', '\ufeff') },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(undefined, null, 7, ['ValueError: in a list'], { text: 'ValueError: in an object' }) },
);
/** Optional: present most of the time. */
const mostly = <T>(arb: fc.Arbitrary<T>) => fc.oneof({ weight: 5, arbitrary: arb }, { weight: 1, arbitrary: fc.constant(undefined) });

const outputItem = fc.record({
  output_type: mostly(fc.constantFrom('stream', 'error', 'display_data')),
  name: fc.oneof({ weight: 4, arbitrary: fc.constant('stderr') }, { weight: 1, arbitrary: fc.constantFrom(undefined, 'stdout', 'STDERR') }),
  stream: fc.constantFrom(undefined, undefined, undefined, 'stderr'),
  text: textField,
});

const executionPayload = fc.record({
  state: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('error', 'ok') }, { weight: 1, arbitrary: fc.constantFrom<unknown>('ERROR', '', undefined, 1) }),
  outcome: fc.oneof(
    {
      weight: 8,
      arbitrary: fc.record({
        error: textField,
        output: fc.oneof({ weight: 5, arbitrary: fc.array(outputItem, { maxLength: 4 }) }, { weight: 1, arbitrary: fc.constantFrom<unknown>(undefined, 'x', {}) }),
      }),
    },
    { weight: 1, arbitrary: fc.constantFrom<unknown>(undefined, 'oops', []) },
  ),
  workspace: mostly(fc.constantFrom('/w', '')),
});

const toolPayload = fc.record({
  type: fc.oneof({ weight: 5, arbitrary: fc.constant('tool_result') }, { weight: 1, arbitrary: fc.constantFrom(undefined, 'tool_call') }),
  status: fc.oneof({ weight: 3, arbitrary: fc.constant('error') }, { weight: 1, arbitrary: fc.constantFrom('skipped', 'ok', 'success', undefined) }),
  error: fc.oneof({ weight: 1, arbitrary: textField }, { weight: 1, arbitrary: fc.constant(undefined) }),
  content: textField,
  reason: fc.oneof(fc.string({ maxLength: 10 }), fc.constant(undefined), fc.integer()),
});

const event = fc.oneof(
  fc.record({ kind: fc.constant('execution.completed'), payload: executionPayload }),
  fc.record({
    kind: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom('tool.result', 'scratchpad') },
      { weight: 1, arbitrary: fc.constantFrom('tool.call', 'execution.started') },
    ),
    payload: toolPayload,
  }),
);

function agentEvent(kind: string, payload: Record<string, unknown>): AgentEvent {
  return { eventId: 'e', kind, payload, partition: 'p', time: 0, service: 's', source: 'jsonl' };
}

test(`rules: reference agrees with an independent transcription of DESIGN 3.1 (seed ${SEED})`, (t) => {
  t.diagnostic(`seed ${SEED}; replay with VIGIL_TEST_SEED=${SEED}`);
  fc.assert(
    fc.property(event, ({ kind, payload }) => {
      const p = payload as Record<string, unknown>;
      const want = seedClassify(kind, p);
      const got = diagnose(agentEvent(kind, p), 'reference');
      assert.equal(got.classification, want.classification, 'classification');
      assert.equal(got.signature, want.signature, 'signature');
      assert.equal(got.reason, want.reason, 'reason');
    }),
    { seed: SEED, numRuns: NUM_RUNS },
  );
});
