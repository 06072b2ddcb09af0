import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { TestScheduler } from 'rxjs/testing';
import { lastValueFrom, of } from 'rxjs';
import { memoryLogger } from '../src/logger.ts';
import { ParseContext, defaultsOf } from '../src/config/schema.ts';
import type { AgentEvent, Diagnosis } from '../src/model/event.ts';
import { newWorkPage, type WorkPage } from '../src/processors/page.ts';
import type { LogEntry, StateStore } from '../src/store/types.ts';
import { diagnose, excerptOf, EXCERPT_MAX_CHARS } from '../src/processors/classify/classify.ts';
import { classifyFactory } from '../src/processors/classify/factory.ts';
import { fingerprint } from '../src/processors/classify/fingerprint.ts';
import { fingerprintV3 } from '../src/processors/classify/fingerprint3.ts';
import { classify, UNDIAGNOSABLE } from '../src/processors/classify/operator.ts';
import { stateClient } from '../src/store/state-client.ts';

let seq = 0;
function entry(kind: string, payload: Record<string, unknown>, extra: Partial<AgentEvent> = {}): LogEntry {
  seq++;
  return {
    id: String(seq),
    event: { eventId: `e${seq}`, kind, payload, partition: 's1', time: 1_000 * seq, service: 'agent', source: 'jsonl', ...extra },
  };
}
const failedRun = (error: string) => entry('execution.completed', { state: 'error', outcome: { error } });
const stderrRun = (text: string) => entry('execution.completed', { state: 'ok', outcome: { output: [{ name: 'stderr', text }] } });
const skipped = (reason: string) => entry('tool.result', { type: 'tool_result', status: 'skipped', reason });

/** A payload whose `state` getter throws: diagnosing it throws inside the operator. */
function throwingEntry(): LogEntry {
  const payload = {};
  Object.defineProperty(payload, 'state', {
    enumerable: false,
    get: () => {
      throw new Error('hostile payload');
    },
  });
  return entry('execution.completed', payload);
}

/** A failure as the vigil rules name a one-line text: fingerprint v3 of the line. */
const failure = (signature: string, excerpt: string): Diagnosis => ({
  classification: 'ExecutionFailure',
  signature,
  fingerprint: fingerprintV3({ kind: 'text', text: signature }),
  excerpt,
});

/** The page as classify should emit it: same page, each item with its diagnosis. */
function diagnosed(page: WorkPage, diagnoses: Diagnosis[]): WorkPage {
  return { ...page, items: page.items.map((item, i) => ({ ...item, diagnosis: diagnoses[i] })) };
}

const newScheduler = () => new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected));

describe('classify operator (marble tests, virtual time)', () => {
  test('classifies each item of each page, keeping order, timing and completion', () => {
    const p1 = newWorkPage('traces', 's1', [failedRun('KeyError: k'), stderrRun('warning: slow')]);
    const p2 = newWorkPage('traces', 's1', [skipped('busy'), entry('execution.started', {})]);
    const p3 = newWorkPage('traces', 's1', []);
    const d1 = diagnosed(p1, [
      failure('KeyError: k', 'KeyError: k'),
      { classification: 'StderrWarning', signature: null, fingerprint: null, excerpt: 'warning: slow' },
    ]);
    const d2 = diagnosed(p2, [
      { classification: 'SkippedPeerCall', signature: null, fingerprint: null, reason: 'busy' },
      { classification: 'NormalOutput', signature: null, fingerprint: null },
    ]);
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('-a--b 10ms c|', { a: p1, b: p2, c: p3 });
      expectObservable(source.pipe(classify({ rules: 'vigil' }))).toBe('-x--y 10ms z|', { x: d1, y: d2, z: p3 });
      expectSubscriptions(source.subscriptions).toBe('^ 15ms !');
    });
  });

  test('an item whose diagnosis throws becomes Uncertain; the rest of the page and stream go on', () => {
    const bad = throwingEntry();
    const p1 = newWorkPage('logs', 's2', [failedRun('OSError: a'), bad, { id: 'x', event: null as unknown as AgentEvent }, failedRun('OSError: b')]);
    const p2 = newWorkPage('logs', 's2', [failedRun('OSError: c')]);
    const errors: unknown[] = [];
    const op = classify({ rules: 'vigil' }, { onItemError: (err) => errors.push(err) });
    newScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('a-b|', { a: p1, b: p2 }).pipe(op)).toBe('x-y|', {
        x: diagnosed(p1, [failure('OSError: a', 'OSError: a'), { ...UNDIAGNOSABLE }, { ...UNDIAGNOSABLE }, failure('OSError: b', 'OSError: b')]),
        y: diagnosed(p2, [failure('OSError: c', 'OSError: c')]),
      });
    });
    assert.equal(errors.length, 2);
    assert.match(String(errors[0]), /hostile payload/);
  });

  test('a throwing onItemError hook does not fail the page', () => {
    const p = newWorkPage('logs', 's', [throwingEntry()]);
    const op = classify(
      { rules: 'reference' },
      {
        onItemError: () => {
          throw new Error('hook');
        },
      },
    );
    newScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('a|', { a: p }).pipe(op)).toBe('x|', { x: diagnosed(p, [{ ...UNDIAGNOSABLE }]) });
    });
  });

  test('an upstream error passes through as an error notification', () => {
    const p = newWorkPage('logs', 's', [failedRun('E: x')]);
    newScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('a-#', { a: p }, new Error('ingest')).pipe(classify({ rules: 'vigil' }))).toBe(
        'x-#',
        { x: diagnosed(p, [failure('E: x', 'E: x')]) },
        new Error('ingest'),
      );
    });
  });

  test('the input page and its items are not mutated', async () => {
    const p = newWorkPage('logs', 's', [failedRun('E: x')]);
    const snapshot = structuredClone(p);
    const out = await lastValueFrom(of(p).pipe(classify({ rules: 'vigil' })));
    assert.deepStrictEqual(p, snapshot);
    assert.notEqual(out, p);
    assert.notEqual(out.items[0], p.items[0]);
    assert.equal(out.items[0]!.entry, p.items[0]!.entry);
    assert.equal(out.commit, p.commit);
  });
});

describe('diagnose', () => {
  test('fingerprint of the signature (v3 for vigil, v1 for reference); null without one', () => {
    const d = diagnose(failedRun('ValueError: id 42').event);
    assert.equal(d.signature, 'ValueError: id 42');
    assert.equal(d.fingerprint, fingerprintV3({ kind: 'text', text: 'ValueError: id 99' }));
    assert.match(d.fingerprint!, /^v3:[0-9a-f]{16}$/);
    const r = diagnose(failedRun('ValueError: id 42').event, 'reference');
    assert.equal(r.fingerprint, fingerprint('ValueError: id 99'));
    assert.equal(diagnose(stderrRun('hello').event).fingerprint, null);
  });

  test('excerpt is the source text, bounded to 2,000 characters with head and tail', () => {
    const long = 'Traceback (most recent call last):\n' + '  File "x.py", line 1\n'.repeat(500) + 'ValueError: end';
    const d = diagnose(failedRun(long).event);
    assert.equal(d.signature, 'ValueError: end');
    assert.ok(d.excerpt!.length <= EXCERPT_MAX_CHARS);
    assert.ok(d.excerpt!.startsWith('Traceback (most recent call last):'));
    assert.ok(d.excerpt!.endsWith('ValueError: end'));
    assert.equal(excerptOf('short'), 'short');
    const emoji = excerptOf('😀'.repeat(3000));
    assert.ok(emoji.length <= EXCERPT_MAX_CHARS);
    assert.doesNotMatch(emoji, /^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$|[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  test('vigil rules use OpenTelemetry exception evidence when the text has no signature; reference rules do not', () => {
    const e = failedRun('division by zero').event;
    e.evidence = { exceptionType: 'ZeroDivisionError', exceptionMessage: 'division by zero' };
    assert.equal(diagnose(e, 'vigil').signature, 'ZeroDivisionError: division by zero');
    assert.equal(diagnose(e, 'reference').signature, 'division by zero');
    const withSig = failedRun('RuntimeError: from text').event;
    withSig.evidence = { exceptionType: 'Other', exceptionMessage: 'ignored' };
    assert.equal(diagnose(withSig, 'vigil').signature, 'RuntimeError: from text');
    const empty = failedRun('').event;
    empty.evidence = { exceptionType: 'TimeoutError' };
    assert.equal(diagnose(empty, 'vigil').signature, 'TimeoutError');
    assert.equal(diagnose(empty, 'reference').signature, 'ExecutionError');
  });
});

describe('classifyFactory', () => {
  test('type, default config and validation', () => {
    assert.equal(classifyFactory.type, 'classify');
    assert.deepEqual(defaultsOf(classifyFactory.schema), { rules: 'vigil' });
    const ctx = new ParseContext();
    assert.deepEqual(classifyFactory.schema.parse({ rules: 'reference' }, ['processors', 'classify'], ctx), { rules: 'reference' });
    classifyFactory.schema.parse({ rules: 'strict', extra: 1 }, ['processors', 'classify'], ctx);
    assert.equal(ctx.issues.filter((i) => i.severity === 'error').length, 2);
  });

  test('create returns the operator; undiagnosable items are logged', async () => {
    const logger = memoryLogger();
    const op = classifyFactory.create(
      { id: 'classify', logger, pipeline: 'traces', store: {} as StateStore, state: stateClient({} as StateStore, 'classify', { owner: 'classify' }) },
      { rules: 'vigil' },
    );
    const page = newWorkPage('traces', 's1', [failedRun('E: x'), throwingEntry()]);
    const out = await lastValueFrom(of(page).pipe(op));
    assert.equal(out.items[0]!.diagnosis!.classification, 'ExecutionFailure');
    assert.deepEqual(out.items[1]!.diagnosis, UNDIAGNOSABLE);
    assert.equal(logger.entries.length, 1);
    assert.equal(logger.entries[0]!.level, 'warn');
    assert.match(String(logger.entries[0]!.error), /hostile payload/);
  });
});
