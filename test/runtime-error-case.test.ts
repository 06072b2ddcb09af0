/**
 * The journal's case format (DESIGN 3.5): what a line must hold to be a case, the defaults of the
 * fields it may leave out, the alias, unknown fields kept, and how a case becomes an event
 * (event id, time, turn, partition, trace).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ERROR_KINDS, normalizeCase, RUNTIME_ERROR_CASE } from '../src/model/runtime-error.ts';
import { parseJournalLine } from '../src/receivers/journal/case-event.ts';
import { referenceCase } from './helpers/journal.ts';

const source = { file: '/var/agent/sessions/s-42/runtime_error_cases.jsonl', fileSession: undefined, service: 'my-agent' };

describe('normalizeCase', () => {
  test('a case as the reference runtime writes it is kept as it is', () => {
    const c = referenceCase();
    const r = normalizeCase(c);
    assert.ok(r.ok);
    assert.deepEqual(r.case, c);
  });

  test('only case_id, error_kind and occurred_at_ms are required; every other field takes its default', () => {
    const r = normalizeCase({ case_id: 'c1', error_kind: 'stale_browser_ref', occurred_at_ms: 5 });
    assert.ok(r.ok);
    assert.deepEqual(r.case, {
      case_id: 'c1',
      turn_id: '',
      occurred_at_ms: 5,
      error_kind: 'stale_browser_ref',
      severity: 0,
      detected_by: '',
      task: {
        origin: null,
        event_sources: [],
        user_request_summary: null,
        claimed_event_ids: [],
        claimed_app_notices: [],
        bound_primitive_id: null,
        workflow_origin: null,
      },
      runtime: { phase: null, available_tool_names: [], plan_summary: [], compact_context_summary: null },
      action: { assistant_text_summary: null, tool_call_summaries: [], tool_result_summaries: [], previous_action_window: [] },
      observation: { expected_behavior: '', actual_behavior: '', evidence: '', recoverability: '', retry_count: 0, terminal_status: null },
      contract_refs: [],
    });
  });

  test('a section that leaves out some fields gets their defaults and keeps the rest', () => {
    const r = normalizeCase({ case_id: 'c1', error_kind: 'stale_browser_ref', occurred_at_ms: 5, observation: { evidence: 'ref e12 is stale' } });
    assert.ok(r.ok);
    assert.deepEqual(r.case.observation, {
      evidence: 'ref e12 is stale',
      expected_behavior: '',
      actual_behavior: '',
      recoverability: '',
      retry_count: 0,
      terminal_status: null,
    });
  });

  test('unknown fields are kept, at the top and inside the sections', () => {
    const r = normalizeCase(
      referenceCase({
        session_id: 's-1',
        schema: 3,
        runtime: { phase: null, focused_app: 'browser', available_tool_names: [], plan_summary: [], compact_context_summary: null },
      }),
    );
    assert.ok(r.ok);
    assert.equal(r.case.session_id, 's-1');
    assert.equal(r.case.schema, 3);
    assert.equal(r.case.runtime.focused_app, 'browser');
  });

  test('runtime.compact_snapshot_summary is read as compact_context_summary', () => {
    const r = normalizeCase(referenceCase({ runtime: { phase: 'x', compact_snapshot_summary: 'older writers call it so' } }));
    assert.ok(r.ok);
    assert.equal(r.case.runtime.compact_context_summary, 'older writers call it so');
    assert.equal('compact_snapshot_summary' in r.case.runtime, false);
    // Both present: the canonical name wins, the alias is kept as an unknown field.
    const both = normalizeCase(referenceCase({ runtime: { compact_context_summary: 'new', compact_snapshot_summary: 'old' } }));
    assert.ok(both.ok);
    assert.equal(both.case.runtime.compact_context_summary, 'new');
    assert.equal(both.case.runtime.compact_snapshot_summary, 'old');
  });

  test('every one of the 14 kinds is a case; anything else is an unknown error_kind', () => {
    assert.equal(ERROR_KINDS.length, 14);
    for (const kind of ERROR_KINDS) assert.ok(normalizeCase(referenceCase({ error_kind: kind })).ok, kind);
    const r = normalizeCase(referenceCase({ error_kind: 'invalid_tool_arguments' }));
    assert.equal(r.ok, false);
    assert.ok(
      !r.ok && r.reason === 'unknown_error_kind' && /unknown error_kind "invalid_tool_arguments"; known kinds: missing_finish_and_send/.test(r.error),
      JSON.stringify(r),
    );
  });

  test('what is not a case says which field is wrong and what it should be', () => {
    const cases: Array<[unknown, RegExp]> = [
      [[1, 2], /expected a JSON object/],
      [{ error_kind: 'stale_browser_ref', occurred_at_ms: 1 }, /'case_id' must be a non-empty string/],
      [referenceCase({ case_id: '  ' }), /'case_id' must be a non-empty string/],
      [referenceCase({ error_kind: 7 }), /'error_kind' must be a string/],
      [referenceCase({ occurred_at_ms: '2026-01-01' }), /'occurred_at_ms' must be milliseconds since the epoch/],
      [referenceCase({ occurred_at_ms: -1 }), /'occurred_at_ms'/],
      [referenceCase({ occurred_at_ms: undefined }), /'occurred_at_ms'/],
      [referenceCase({ turn_id: 7 }), /'turn_id' must be a string/],
      [referenceCase({ severity: 256 }), /'severity' must be an integer 0-255 or a level name/],
      [referenceCase({ severity: 1.5 }), /'severity'/],
      [referenceCase({ observation: { retry_count: -1 } }), /'observation.retry_count' must be a non-negative integer/],
      [referenceCase({ observation: { evidence: null } }), /'observation.evidence' must be a string, got null/],
      [referenceCase({ task: { event_sources: 'telegram' } }), /'task.event_sources' must be a list of strings/],
      [referenceCase({ runtime: [] }), /'runtime' must be an object/],
      [referenceCase({ contract_refs: [1] }), /'contract_refs' must be a list of strings/],
    ];
    for (const [value, error] of cases) {
      const r = normalizeCase(value);
      assert.ok(!r.ok && r.reason === 'not_a_case', JSON.stringify(value));
      assert.match(r.error, error);
    }
  });

  test('a level name is a severity too, and normalizing twice changes nothing', () => {
    const r = normalizeCase(referenceCase({ severity: 'high' }));
    assert.ok(r.ok);
    assert.equal(r.case.severity, 'high');
    const again = normalizeCase(r.case);
    assert.ok(again.ok);
    assert.deepEqual(again.case, r.case);
  });
});

describe('a journal line becomes an event', () => {
  test('event id = case id, time = occurred_at_ms, turn = turn_id, operation = kind, payload = the case', () => {
    const r = parseJournalLine(JSON.stringify(referenceCase()), source);
    assert.ok(r.ok);
    const e = r.event;
    assert.equal(e.eventId, '9b2f7c1e-4d7a-4f0e-9a51-2c3d4e5f6a7b');
    assert.equal(e.kind, RUNTIME_ERROR_CASE);
    assert.equal(e.time, 1767225600123);
    assert.equal(e.turnId, 'turn-0007');
    assert.equal(e.operation, 'invalid_tool_args');
    assert.equal(e.service, 'my-agent');
    assert.equal(e.source, 'journal');
    assert.deepEqual(e.payload, referenceCase());
    assert.equal(e.traceId, undefined);
  });

  test('partition: the case session, else the session its path names, else the file', () => {
    const line = (over: Record<string, unknown>) => JSON.stringify(referenceCase(over));
    const partition = (over: Record<string, unknown>, fileSession?: string) => {
      const r = parseJournalLine(line(over), { ...source, fileSession });
      assert.ok(r.ok);
      return r.event.partition;
    };
    assert.equal(partition({ session_id: 'sess-a' }, 's-42'), 'sess-a');
    assert.equal(partition({ runtime: { session_id: 'sess-b' } }, 's-42'), 'sess-b');
    assert.equal(partition({}, 's-42'), 's-42');
    assert.equal(partition({}), '/var/agent/sessions/s-42/runtime_error_cases.jsonl');
  });

  test('a case that names its trace links to it (hex ids only); its own service and revision win', () => {
    const r = parseJournalLine(
      JSON.stringify(referenceCase({ trace_id: '4BF92F3577B34DA6A3CE929D0E0E4736', span_id: '00f067aa0ba902b7', service: 'other', revision: 'abc123' })),
      source,
    );
    assert.ok(r.ok);
    assert.deepEqual(
      [r.event.traceId, r.event.spanId, r.event.service, r.event.revision],
      ['4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7', 'other', 'abc123'],
    );
    const bad = parseJournalLine(JSON.stringify(referenceCase({ trace_id: 'not-a-trace' })), source);
    assert.ok(bad.ok);
    assert.equal(bad.event.traceId, undefined);
  });

  test('a line that is not JSON, or not a case, is a reason and an error', () => {
    const notJson = parseJournalLine('{"case_id": "c1", "error_kind":', source);
    assert.ok(!notJson.ok && notJson.reason === 'not_json');
    assert.match(notJson.error, /not valid JSON/);
    const unknown = parseJournalLine(JSON.stringify(referenceCase({ error_kind: 'nope' })), source);
    assert.ok(!unknown.ok && unknown.reason === 'unknown_error_kind');
  });
});
