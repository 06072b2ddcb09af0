/**
 * Error kinds as first-class classification (DESIGN 3.5): a case's class, signature and
 * fingerprint under both rule sets; volatile parts masked as for any failure; and the kind and
 * severity carried into work events (DESIGN 4.2), occurrence records and occurrence spans (4.3).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { lastValueFrom, of } from 'rxjs';
import { spanInputOfOccurrence, spanInputOfWorkEvent } from '../src/exporters/otlphttp/occurrence-span.ts';
import { enrichmentOf } from '../src/processors/forward/operator.ts';
import { diagnose } from '../src/processors/classify/classify.ts';
import { compactEvidence } from '../src/processors/classify/error-kind.ts';
import { classify } from '../src/processors/classify/operator.ts';
import { occurrenceRecords } from '../src/processors/occurrences/operator.ts';
import { newWorkPage } from '../src/processors/page.ts';
import { recurrence } from '../src/processors/recurrence/operator.ts';
import { isOccurrenceEvent, type OccurrenceOutboxItem, type WorkOutboxItem } from '../src/model/work.ts';
import { journalCase } from './helpers/detect-events.ts';
import { mapState } from './helpers/pages.ts';

const evidence = (text: string, over: Record<string, unknown> = {}) =>
  journalCase({ observation: { evidence: text, actual_behavior: 'The tool executor rejected the tool call.' }, ...over });

describe('the diagnosis of a case', () => {
  test('ExecutionFailure named "<kind>: <telling line of the evidence>", with a v3 fingerprint and the kind', () => {
    const d = diagnose(evidence('invalid arguments for read_file: invalid type: integer `3`, expected a string at line 1 column 10', { severity: 2 }));
    assert.equal(d.classification, 'ExecutionFailure');
    // The telling line is cut to 96 characters, as every signature is; the kind comes before it.
    assert.equal(d.signature, 'invalid_tool_args: invalid arguments for read_file: invalid type: integer `3`, expected a string at line 1 column 1');
    assert.match(d.fingerprint!, /^v3:[0-9a-f]{16}$/);
    assert.deepEqual(d.errorKind, { kind: 'invalid_tool_args', severity: 2, detectedBy: 'runtime_tool_executor', origin: 'reported' });
    assert.match(d.excerpt!, /invalid type/);
  });

  test('the telling line is what the vigil rules name in the evidence (a traceback names its exception)', () => {
    const tb =
      'Traceback (most recent call last):\n  File "/srv/tools/fs.py", line 12, in read\n    return open(p).read()\nFileNotFoundError: [Errno 2] No such file or directory: \'/tmp/x.json\'';
    assert.equal(diagnose(evidence(tb)).signature, "invalid_tool_args: FileNotFoundError: [Errno 2] No such file or directory: '/tmp/x.json'");
  });

  test('without evidence the actual behaviour names it; without either, the kind alone', () => {
    assert.equal(diagnose(evidence('', { error_kind: 'missing_finish_and_send' })).signature, 'missing_finish_and_send: The tool executor rejected the tool call.');
    assert.equal(diagnose(journalCase({ error_kind: 'missing_finish_and_send', observation: {} })).signature, 'missing_finish_and_send');
  });

  test('volatile parts are masked: numbers, paths, ids, quoted values do not split a kind', () => {
    const fp = (text: string, kind = 'invalid_tool_args') => diagnose(evidence(text, { error_kind: kind })).fingerprint;
    assert.equal(fp("limit must be <= 100, got 250 for call 'c7f3a9e1'"), fp("limit must be <= 100, got 1000 for call 'b0d2e4f6'"));
    assert.equal(fp('cannot read /tmp/tmp.Xa91/session-17/out.json'), fp('cannot read /tmp/tmp.Qz02/session-3/out.json'));
    assert.equal(fp('request 8f14e45f-ceea-467f-a0e5-fc9d2f1d1a3b timed out after 30s'), fp('request 1b4e28ba-2fa1-11d2-883f-0016d3cca427 timed out after 12s'));
    // Other words, or another kind with the same words, are other failures.
    assert.notEqual(fp('limit must be <= 100'), fp('offset must be >= 0'));
    assert.notEqual(fp('limit must be <= 100'), fp('limit must be <= 100', 'tool_schema_error'));
  });

  test('multi-line evidence and the same text compacted by the runtime are one identity', () => {
    const raw = '[\n  {\n    "code": "invalid_type",\n    "expected": "string",\n    "received": "number",\n    "path": [\n      "path"\n    ]\n  }\n]';
    assert.equal(diagnose(evidence(raw)).fingerprint, diagnose(evidence(compactEvidence(raw))).fingerprint);
    assert.equal(compactEvidence('x'.repeat(1300)).length, 1203);
    assert.equal(compactEvidence(compactEvidence('y '.repeat(700))), compactEvidence('y '.repeat(700)));
  });

  test('the same under `rules: reference` (a case says what it is)', () => {
    const e = evidence('missing field `path`');
    assert.deepEqual(diagnose(e, 'reference'), diagnose(e, 'vigil'));
  });

  test('a runtime.error_case event that is not a case names nothing', () => {
    const e = { ...evidence('x'), payload: { case_id: 'c', error_kind: 'nope', occurred_at_ms: 1 } };
    const d = diagnose(e);
    assert.deepEqual([d.classification, d.signature, d.fingerprint], ['Uncertain', null, null]);
    assert.match(d.excerpt!, /unknown error_kind/);
  });
});

describe('kind and severity travel with the occurrence', () => {
  test('work events carry error_kind, severity, detected_by; the operation is the kind', async () => {
    const state = mapState();
    const page = newWorkPage('logs', 'sess-1', [{ id: '1', event: evidence('missing field `path`', { severity: 3, session_id: 'sess-1' }) }]);
    const out = await lastValueFrom(
      of(page).pipe(
        classify({ rules: 'vigil' }),
        recurrence(
          { minRecurrence: 1, groupingWindow: 60_000, maxPerTurn: 5, scope: 'service' },
          { loadGroups: () => of(new Map()), loadTurns: () => of(new Map()), lookupRevisions: () => of(new Map()) },
        ),
        occurrenceRecords(),
      ),
    );
    state.apply(out.commit);
    const work = out.commit.outbox.find((o): o is WorkOutboxItem => o.kind === 'work')!;
    assert.ok(isOccurrenceEvent(work.event));
    const d = work.event.data;
    assert.equal(work.event.type, 'dev.vigil.work.created');
    assert.deepEqual(
      [d.error_kind, d.severity, d.detected_by, d.operation, d.classification],
      ['invalid_tool_args', 3, 'runtime_tool_executor', 'invalid_tool_args', 'ExecutionFailure'],
    );
    assert.equal(d.evidence.kind, 'runtime.error_case');
    assert.equal(d.evidence.source, 'journal');
    assert.equal(d.evidence.event_id, '9b2f7c1e-4d7a-4f0e-9a51-2c3d4e5f6a7b', 'the case id');
    assert.equal(d.partition, 'sess-1');

    const span = spanInputOfWorkEvent(work.event);
    assert.equal(span.attributes['vigil.error_kind'], 'invalid_tool_args');
    assert.equal(span.attributes['vigil.severity'], 3);
    assert.equal(span.attributes['vigil.detected_by'], 'runtime_tool_executor');
    assert.equal(span.attributes['vigil.operation'], 'invalid_tool_args');
    assert.equal(span.attributes['error.type'], 'invalid_tool_args');

    const occ = out.commit.outbox.find((o): o is OccurrenceOutboxItem => o.kind === 'occurrence')!;
    assert.deepEqual([occ.occurrence.error_kind, occ.occurrence.severity], ['invalid_tool_args', 3]);
    assert.equal(spanInputOfOccurrence(occ.occurrence).attributes['vigil.error_kind'], 'invalid_tool_args');
    assert.equal(enrichmentOf(out.items[0]!)!['vigil.error_kind'], 'invalid_tool_args');
  });

  test('other failures have no error_kind, severity or detected_by at all', async () => {
    const page = newWorkPage('logs', 's', [
      {
        id: '1',
        event: {
          eventId: 'x',
          kind: 'execution.completed',
          payload: { state: 'error', outcome: { error: 'KeyError: 1' } },
          partition: 's',
          time: 1,
          service: 'a',
          source: 'jsonl',
        },
      },
    ]);
    const out = await lastValueFrom(
      of(page).pipe(
        classify({ rules: 'vigil' }),
        recurrence(
          { minRecurrence: 1, groupingWindow: 1, maxPerTurn: 5, scope: 'service' },
          { loadGroups: () => of(new Map()), loadTurns: () => of(new Map()), lookupRevisions: () => of(new Map()) },
        ),
      ),
    );
    const event = (out.commit.outbox[0] as WorkOutboxItem).event;
    assert.ok(isOccurrenceEvent(event));
    assert.equal('error_kind' in event.data || 'severity' in event.data || 'detected_by' in event.data, false);
    assert.equal(spanInputOfWorkEvent(event).attributes['vigil.error_kind'], undefined);
  });
});
