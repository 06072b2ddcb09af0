import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CLASSIFICATIONS, type AgentEvent } from '../src/model/event.ts';
import { classifyLine, diagnose } from '../src/processors/classify/classify.ts';
import { fingerprint, normalizeSignature } from '../src/processors/classify/fingerprint.ts';
import { classifyReference, isReferenceWarning, referenceSignature } from '../src/processors/classify/reference.ts';

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
const text = fc.array(fragment, { maxLength: 12 }).chain((parts) =>
  fc.constantFrom('\n', '\r\n', '', ' ', ':').map((sep) => parts.join(sep)),
);
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
      outcome: fc.oneof(
        fc.record({ error: textish, output: fc.oneof(fc.array(outputItem, { maxLength: 4 }), json) }, { requiredKeys: [] }),
        json,
      ),
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

describe('properties: never throw, always a valid answer', () => {
  test('referenceSignature: a collapsed, trimmed string of at most 96 code points', () => {
    fc.assert(
      fc.property(anyText, (t) => {
        const sig = referenceSignature(t);
        assert.equal(typeof sig, 'string');
        assertSignatureShape(sig);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  test('isReferenceWarning: a boolean', () => {
    fc.assert(fc.property(anyText, (t) => typeof isReferenceWarning(t) === 'boolean'), { numRuns: NUM_RUNS });
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
          assertSignatureShape(r.signature!);
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
