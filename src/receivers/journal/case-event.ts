/**
 * One journal line → one AgentEvent (DESIGN 3.3, 3.5): the event id is the case id (a line read
 * twice — after a restart, a compaction, a rotation — is the same record and counted once), the
 * event time is `occurred_at_ms`, the turn is `turn_id`, and the partition is the case's session
 * where the case or its file names one, else the file. The payload is the normalized case.
 */
import type { AgentEvent } from '../../model/event.ts';
import { caseText, normalizeCase, RUNTIME_ERROR_CASE, type CaseResult, type RuntimeErrorCase } from '../../model/runtime-error.ts';

/** Where a case names its session, in this order: top level, then its runtime and task sections. */
const SESSION_FIELDS: ReadonlyArray<readonly string[]> = [['session_id'], ['session.id'], ['conversation_id'], ['runtime', 'session_id'], ['task', 'session_id']];
const TRACE_ID = /^(?!0{32})[0-9a-f]{32}$/;
const SPAN_ID = /^(?!0{16})[0-9a-f]{16}$/;

export interface CaseSource {
  /** Absolute path of the journal. */
  file: string;
  /** The session the file's path names (`session_from_path`), if any. */
  fileSession: string | undefined;
  /** The service to report cases under unless the case names one (`service`). */
  service: string;
}

export type LineOutcome = { ok: true; event: AgentEvent } | { ok: false; reason: 'not_json' | 'not_a_case' | 'unknown_error_kind'; error: string };

/** Parses one line (without its newline) of a journal. Never throws. */
export function parseJournalLine(line: string, source: CaseSource): LineOutcome {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (err) {
    return { ok: false, reason: 'not_json', error: `not valid JSON (${(err as Error).message}); each line must be one JSON object, a runtime error case` };
  }
  const r: CaseResult = normalizeCase(value);
  if (!r.ok) return r;
  return { ok: true, event: caseEvent(r.case, source) };
}

export function caseEvent(c: RuntimeErrorCase, source: CaseSource): AgentEvent {
  const session = SESSION_FIELDS.map((path) => caseText(c, ...path)).find((v) => v !== undefined);
  const event: AgentEvent = {
    eventId: c.case_id,
    kind: RUNTIME_ERROR_CASE,
    payload: c,
    partition: session ?? source.fileSession ?? source.file,
    time: c.occurred_at_ms,
    service: caseText(c, 'service') ?? source.service,
    operation: c.error_kind,
    source: 'journal',
  };
  const revision = caseText(c, 'revision');
  if (revision !== undefined) event.revision = revision;
  if (c.turn_id.trim() !== '') event.turnId = c.turn_id;
  const traceId = (caseText(c, 'trace_id') ?? caseText(c, 'runtime', 'trace_id'))?.toLowerCase();
  const spanId = (caseText(c, 'span_id') ?? caseText(c, 'runtime', 'span_id'))?.toLowerCase();
  if (traceId !== undefined && TRACE_ID.test(traceId)) {
    event.traceId = traceId;
    if (spanId !== undefined && SPAN_ID.test(spanId)) event.spanId = spanId;
  }
  return event;
}
