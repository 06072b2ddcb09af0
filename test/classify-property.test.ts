import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CLASSIFICATIONS, type AgentEvent } from '../src/model/event.ts';
import { classifyLine, diagnose } from '../src/processors/classify/classify.ts';
import { fingerprint, normalizeSignature } from '../src/processors/classify/fingerprint.ts';
import { classifyReference, isReferenceWarning, referenceSignature } from '../src/processors/classify/reference.ts';
import { collapseAndCut } from '../src/processors/classify/text.ts';
import { toSignature } from '../src/processors/classify/vigil.ts';
import { detect } from '../src/processors/classify/detect.ts';
import { normalizeMessage } from '../src/processors/classify/normalize.ts';

const NUM_RUNS = 500;
const SIX = new Set<string>(CLASSIFICATIONS);

/** Text built from the pieces the rules look at, mixed with arbitrary characters. */
const fragment = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    'Traceback (most recent call last):',
    '  File "/tmp/x.py", line 3, in <module>',
    'ValueError: bad',
    'error: e',
    'FATAL: f',
    'panic: p',
    'UserWarning: w',
    '[warning] w',
    'warn: w',
    'x: y',
    ' ',
    '\t',
    '',
    '0x7ffd5e8a1b20',
    '/home/u/a.py',
    "'q'",
    '127.0.0.1:80',
    '12ms',
    '3f2a9c1e-8b4d-4e6f-9a1b-2c3d4e5f6a7b',
    '😀',
  ),
);
const text = fc.array(fragment, { maxLength: 12 }).chain((parts) => fc.constantFrom('\n', '\r\n', '', ' ', ':').map((sep) => parts.join(sep)));
const anyText = fc.oneof(fc.string({ unit: 'binary' }), text);

const kind = fc.oneof(fc.constantFrom('execution.completed', 'tool.result', 'scratchpad', 'execution.started'), fc.string());
const json = fc.jsonValue({ maxDepth: 4 });
const textish = fc.oneof(anyText, json, fc.array(fc.oneof(anyText, fc.record({ type: fc.constant('text'), text: anyText })), { maxLength: 3 }));
const outputItem = fc.oneof(
  fc.record({ name: fc.constantFrom('stderr', 'stdout'), text: textish }, { requiredKeys: [] }),
  fc.record({ stream: fc.constantFrom('stderr', 'stdout'), text: textish }, { requiredKeys: [] }),
  json,
);
/** Payloads shaped like the reference's, with every field optional and of any type. */
const payload = fc.oneof(
  json,
  fc.record(
    {
      state: fc.oneof(fc.constantFrom('error', 'ok'), json),
      outcome: fc.oneof(fc.record({ error: textish, output: fc.oneof(fc.array(outputItem, { maxLength: 4 }), json) }, { requiredKeys: [] }), json),
      type: fc.oneof(fc.constant('tool_result'), json),
      status: fc.oneof(fc.constantFrom('skipped', 'error', 'ok'), json),
      reason: fc.oneof(anyText, json),
      error: textish,
      content: textish,
    },
    { requiredKeys: [] },
  ),
);

function assertSignatureShape(sig: string): void {
  assert.ok([...sig].length <= 96, `too long: ${sig.length}`);
  assert.equal(sig, sig.trim());
  assert.doesNotMatch(sig, /\s\s|[\r\n\t]/);
}

/**
 * The reference's signature form: whitespace (Unicode White_Space, as the seed's Rust) collapsed,
 * at most 96 code points; a space the cut leaves at the end stays.
 */
function assertReferenceSignatureShape(sig: string): void {
  assert.ok([...sig].length <= 96, `too long: ${sig.length}`);
  assert.doesNotMatch(sig, /^\p{White_Space}|\p{White_Space}{2}|[^\P{White_Space} ]/u);
  if (/ $/u.test(sig)) assert.equal([...sig].length, 96, 'only the cut leaves a space at the end');
}

describe('properties: never throw, always a valid answer', () => {
  test('referenceSignature: a collapsed string of at most 96 code points', () => {
    fc.assert(
      fc.property(anyText, (t) => {
        const sig = referenceSignature(t);
        assert.equal(typeof sig, 'string');
        assertReferenceSignatureShape(sig);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  test('isReferenceWarning: a boolean', () => {
    fc.assert(
      fc.property(anyText, (t) => typeof isReferenceWarning(t) === 'boolean'),
      { numRuns: NUM_RUNS },
    );
  });

  test('fingerprint: v1 and 16 hex digits; masking is idempotent', () => {
    fc.assert(
      fc.property(anyText, fc.option(fc.string(), { nil: undefined }), (t, language) => {
        assert.match(fingerprint(t, { language }), /^v1:[0-9a-f]{16}$/);
        const once = normalizeSignature(t);
        assert.equal(normalizeSignature(once), once);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  test('classifyReference: one of the six classes; a signature exactly for failures', () => {
    fc.assert(
      fc.property(kind, payload, (k, p) => {
        const r = classifyReference(k, p as Record<string, unknown>);
        assert.ok(SIX.has(r.classification), r.classification);
        const failure = r.classification === 'ExecutionFailure' || r.classification === 'RecoveredError';
        if (failure) {
          assert.equal(typeof r.signature, 'string');
          assert.notEqual(r.signature, '');
          assertReferenceSignatureShape(r.signature!);
        } else {
          assert.equal(r.signature, null);
        }
        if (r.reason !== undefined) assert.equal(r.classification, 'SkippedPeerCall');
      }),
      { numRuns: NUM_RUNS },
    );
  });

  test('diagnose: fingerprint present exactly when a signature is', () => {
    fc.assert(
      fc.property(kind, payload, (k, p) => {
        const event = { eventId: 'e', kind: k, payload: p, partition: 's', time: 0, service: 'x', source: 'jsonl' } as AgentEvent;
        const d = diagnose(event);
        assert.ok(SIX.has(d.classification));
        assert.equal(d.fingerprint === null, d.signature === null);
        if (d.excerpt !== undefined) assert.ok(d.excerpt.length <= 2000);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  test('classifyLine: any string gives an error or one of the six classes', () => {
    const line = fc.oneof(
      fc.string({ unit: 'binary' }),
      fc.json(),
      fc.record({ kind, payload }, { requiredKeys: [] }).map((v) => JSON.stringify(v)),
      fc.record({ text: fc.oneof(anyText, json), exit_code: fc.oneof(fc.integer(), json) }, { requiredKeys: [] }).map((v) => JSON.stringify(v)),
    );
    fc.assert(
      fc.property(line, fc.nat(), (l, n) => {
        const out = classifyLine(l, n) as unknown as Record<string, unknown>;
        if ('error' in out) {
          assert.deepEqual(Object.keys(out), ['error']);
          assert.ok(String(out.error).startsWith(`line ${n}: `));
        } else {
          assert.ok(SIX.has(out.classification as string));
          assert.equal(out.fingerprint === null, out.signature === null);
        }
      }),
      { numRuns: NUM_RUNS },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// The vigil rule set: arbitrary text in every format's shape, arbitrary JSON payloads and evidence.

const formatFragment = fc.oneof(
  fragment,
  fc.constantFrom(
    '  + Exception Group Traceback (most recent call last):',
    '  | ExceptionGroup: x (2 sub-exceptions)',
    'During handling of the above exception, another exception occurred:',
    '    at f (/a/b.js:1:2)',
    '    at node:internal/main/run_main_module:28:49 {',
    '  [cause]: Error: inner',
    '}',
    'Error [ERR_X]: m',
    'UnhandledPromiseRejection: The promise rejected with the reason "x".',
    '(Use `node --trace-uncaught ...` to show where the exception was thrown)',
    'Exception in thread "main" java.lang.X: y',
    '\tat a.B.c(B.java:1)',
    'Caused by: java.io.IOException',
    '\t... 1 more',
    "thread 'main' (12) panicked at a.rs:1:2:",
    'error[E0308]: mismatched types',
    ' --> main.rs:1:1',
    'goroutine 1 [running]:',
    'main.main()',
    'main.c:1:2: error: x',
    "a.ts(1,2): error TS2304: Cannot find name 'x'.",
    "main.c:(.text+0x1): undefined reference to `f'",
    "terminate called after throwing an instance of 'std::x'",
    '  what():  y',
    '==1==ERROR: AddressSanitizer: x',
    'npm error code E1',
    'npm ERR! x',
    'make: *** [Makefile:1: a] Error 1',
    "Can't locate X.pm in @INC",
    'bash: line 1: x: command not found',
    'not ok 1 - t',
    '2026-01-31 12:00:00,123 ERROR a: b',
    '\x1b[31merror\x1b[0m: x',
    '‘q’ `r\' "s"',
  ),
);
const formatText = fc.array(formatFragment, { maxLength: 16 }).chain((parts) => fc.constantFrom('\n', '\r\n', '\r', '', ' ').map((sep) => parts.join(sep)));
const anyFormatText = fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), formatText);
const evidence = fc.oneof(
  fc.constant(undefined),
  json,
  fc.record(
    {
      exceptionType: fc.oneof(anyText, json),
      exceptionMessage: fc.oneof(anyText, json),
      stacktrace: fc.oneof(anyFormatText, json),
      errorType: fc.oneof(anyText, json),
      statusMessage: fc.oneof(anyText, json),
      severityNumber: fc.oneof(fc.integer({ min: -5, max: 30 }), json),
      severityText: fc.oneof(fc.constantFrom('WARN', 'ERROR', 'INFO'), anyText, json),
    },
    { requiredKeys: [] },
  ),
);

describe('properties of the vigil rules', () => {
  test('detect: never throws; a failure has a non-empty one-line signature', () => {
    fc.assert(
      fc.property(anyFormatText, (t) => {
        const d = detect(t);
        assert.equal(typeof d.warning, 'boolean');
        if (d.failure) assert.equal(typeof d.failure.signature, 'string');
      }),
      { numRuns: NUM_RUNS },
    );
  });

  test('diagnose (vigil): one of the six classes, v3 fingerprint exactly with a signature, bounded signature', () => {
    fc.assert(
      fc.property(kind, payload, evidence, anyFormatText, (k, p, ev, t) => {
        for (const candidate of [p, { state: 'error', outcome: { error: t } }, { state: 'ok', outcome: { output: [{ name: 'stderr', text: t }] } }]) {
          const event = { eventId: 'e', kind: k, payload: candidate, partition: 's', time: 0, service: 'x', source: 'jsonl', evidence: ev } as AgentEvent;
          const d = diagnose(event, 'vigil');
          assert.ok(SIX.has(d.classification), d.classification);
          assert.equal(d.fingerprint === null, d.signature === null);
          if (d.signature !== null) {
            assertSignatureShape(d.signature);
            assert.notEqual(d.signature, '');
            assert.match(d.fingerprint!, /^v3:[0-9a-f]{16}$/);
          }
          const failure = d.classification === 'ExecutionFailure' || d.classification === 'RecoveredError';
          assert.equal(failure, d.signature !== null);
        }
      }),
      { numRuns: NUM_RUNS },
    );
  });

  test('classifyLine (vigil): arbitrary raw text lines give one of the six classes', () => {
    fc.assert(
      fc.property(anyFormatText, fc.oneof(fc.integer({ min: -300, max: 300 }), fc.constant(null)), (t, code) => {
        const out = classifyLine(JSON.stringify({ text: t, exit_code: code }), 1) as unknown as Record<string, unknown>;
        assert.ok(SIX.has(out.classification as string));
        if (code !== null && code !== 0) assert.equal(out.classification, 'ExecutionFailure');
      }),
      { numRuns: NUM_RUNS },
    );
  });

  test('normalizeMessage: never throws, idempotent, no whitespace runs', () => {
    fc.assert(
      fc.property(anyFormatText, (t) => {
        const once = normalizeMessage(t);
        assert.equal(normalizeMessage(once), once);
        assert.equal(once, once.trim());
      }),
      { numRuns: NUM_RUNS },
    );
  });
});

describe('large inputs finish (vigil: linear-time detection and masking)', () => {
  const MB = 1_000_000;
  const big = (unit: string) => unit.repeat(Math.ceil(MB / unit.length)).slice(0, MB);
  const units = [
    'a',
    '1',
    '/',
    "'",
    '"',
    '`',
    '‘',
    '/a',
    '0x',
    '1.',
    '1:',
    'a:',
    '::',
    '<a',
    '-1',
    'a-1',
    '~/',
    'C:\\',
    '1 ',
    '12:',
    'Jan 1',
    'f1',
    '1e',
    'Error: ',
    ' at ',
    'at (',
    '((',
    '[',
    'x: error: ',
    '\x1b[',
    '\t',
    '==1==',
    'npm error ',
  ];
  for (const unit of units) {
    test(`1 MB single line of ${JSON.stringify(unit)}`, { timeout: 5000 }, () => {
      const text = big(unit);
      for (const exit_code of [1, 0]) classifyLine(JSON.stringify({ text, exit_code }), 1);
      normalizeMessage(text);
    });
  }
  test('10,000-line stacks and noise', { timeout: 10000 }, () => {
    const py = [
      'Traceback (most recent call last):',
      ...Array.from({ length: 10_000 }, (_, i) => `  File "/app/m${i % 50}.py", line ${i}, in f${i % 7}\n    f(x)`),
      'RecursionError: maximum recursion depth exceeded',
    ].join('\n');
    const v8 = ['TypeError: x is not a function', ...Array.from({ length: 10_000 }, (_, i) => `    at f${i % 9} (/app/m${i % 40}.js:${i}:7)`)].join('\n');
    const jvm = ['Exception in thread "main" java.lang.StackOverflowError', ...Array.from({ length: 10_000 }, () => '\tat Main.recurse(Main.java:5)')].join('\n');
    const noise = Array.from({ length: 10_000 }, (_, i) => `progress ${i}: 0 errors`).join('\n');
    const sig = (text: string) => (classifyLine(JSON.stringify({ text, exit_code: 1 }), 1) as { signature: string }).signature;
    assert.equal(sig(py), 'RecursionError: maximum recursion depth exceeded');
    assert.equal(sig(v8), 'TypeError: x is not a function');
    assert.equal(sig(jvm), 'java.lang.StackOverflowError');
    assert.equal(sig(noise), 'progress 0: 0 errors');
  });
});

describe('toSignature', () => {
  test('equals collapseAndCut for any non-blank text', () => {
    fc.assert(
      fc.property(fc.oneof(anyFormatText, fc.string({ unit: 'binary', minLength: 90, maxLength: 200 }), fc.string({ unit: 'grapheme', maxLength: 150 })), (t) => {
        if (t.trim() === '') return;
        assert.equal(toSignature(t), collapseAndCut(t));
      }),
      { numRuns: 2000 },
    );
  });
});
