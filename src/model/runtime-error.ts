/**
 * Agent-runtime error cases (DESIGN 3.5, issue #10): the 14 error kinds and the case shape agent
 * runtimes write to their `runtime_error_cases.jsonl` journals, one JSON object per line. The same
 * shape carries the cases vigil's own detectors derive from traces, so every source ends in the
 * same occurrences and work events.
 *
 * A case, as the reference runtime writes it:
 *
 *   {case_id, turn_id, occurred_at_ms, error_kind, severity, detected_by,
 *    task{origin, event_sources[], user_request_summary, claimed_event_ids[], claimed_app_notices[],
 *         bound_primitive_id, workflow_origin},
 *    runtime{phase, available_tool_names[], plan_summary[], compact_context_summary},
 *    action{assistant_text_summary, tool_call_summaries[], tool_result_summaries[], previous_action_window[]},
 *    observation{expected_behavior, actual_behavior, evidence, recoverability, retry_count, terminal_status},
 *    contract_refs[]}
 *
 * `normalizeCase` checks one: `case_id`, `error_kind` and `occurred_at_ms` are required; every
 * other known field takes its default when missing (the reference runtime's serde defaults: empty
 * strings and lists, null, 0); a known field of the wrong type makes the line "not a case";
 * unknown fields, at the top and inside the sections, are kept as they are; `runtime.
 * compact_snapshot_summary` is accepted as an alias of `runtime.compact_context_summary`.
 */

/** The error kinds of the reference runtime, in its order. Anything else is an unknown kind. */
export const ERROR_KINDS = [
  'missing_finish_and_send',
  'missing_notice_resolved',
  'invalid_tool_args',
  'tool_schema_error',
  'stale_browser_ref',
  'wrong_terminal_session_continuation',
  'plan_contract_violation',
  'event_id_missing_or_stale',
  'repeated_identical_tool_error',
  'context_overflow_after_recovery',
  'claimed_input_left_unresolved',
  'transport_completion_violation',
  'model_request_repeated_failure',
  'model_empty_reasoning_output',
] as const;
export type ErrorKind = (typeof ERROR_KINDS)[number];

const KIND_SET: ReadonlySet<string> = new Set(ERROR_KINDS);

export function isErrorKind(v: unknown): v is ErrorKind {
  return typeof v === 'string' && KIND_SET.has(v);
}

/** The reference event kind of a case in the ingest log (`payload` is the normalized case). */
export const RUNTIME_ERROR_CASE = 'runtime.error_case';

/** Severity as runtimes write it: the reference runtime's u8 (2 for tool errors, 3 for overflow), or a level name. */
export type Severity = number | string;

/** The contracts each kind breaks, as the reference runtime names them (`contract_refs`). */
export const CONTRACT_REFS: Readonly<Record<ErrorKind, string>> = {
  missing_finish_and_send: 'event completion contract',
  event_id_missing_or_stale: 'event completion contract',
  transport_completion_violation: 'event completion contract',
  missing_notice_resolved: 'app notice completion contract',
  claimed_input_left_unresolved: 'app notice completion contract',
  invalid_tool_args: 'tool argument contract',
  tool_schema_error: 'tool argument contract',
  stale_browser_ref: 'browser reference freshness',
  wrong_terminal_session_continuation: 'terminal session continuation',
  plan_contract_violation: 'plan contract',
  repeated_identical_tool_error: 'tool retry contract',
  context_overflow_after_recovery: 'context overflow recovery',
  model_request_repeated_failure: 'model request contract',
  model_empty_reasoning_output: 'model response contract',
};

export interface RuntimeErrorObservation {
  expected_behavior: string;
  actual_behavior: string;
  evidence: string;
  recoverability: string;
  retry_count: number;
  terminal_status: string | null;
  [extra: string]: unknown;
}

/** A normalized case: every known field present with its type; unknown fields kept. */
export interface RuntimeErrorCase {
  case_id: string;
  turn_id: string;
  occurred_at_ms: number;
  error_kind: ErrorKind;
  severity: Severity;
  detected_by: string;
  task: Record<string, unknown>;
  runtime: Record<string, unknown>;
  action: Record<string, unknown>;
  observation: RuntimeErrorObservation;
  contract_refs: string[];
  [extra: string]: unknown;
}

export type CaseResult = { ok: true; case: RuntimeErrorCase } | { ok: false; reason: 'not_a_case' | 'unknown_error_kind'; error: string };

/** Longest case id (it is the event id, stored and hashed into identities). */
export const MAX_CASE_ID_LENGTH = 512;

type FieldType = 'string' | 'string?' | 'strings' | 'count';
type Section = Record<string, FieldType>;

/** The known fields of each section and their types; a missing one takes the type's default. */
const SECTIONS: Record<'task' | 'runtime' | 'action' | 'observation', Section> = {
  task: {
    origin: 'string?',
    event_sources: 'strings',
    user_request_summary: 'string?',
    claimed_event_ids: 'strings',
    claimed_app_notices: 'strings',
    bound_primitive_id: 'string?',
    workflow_origin: 'string?',
  },
  runtime: { phase: 'string?', available_tool_names: 'strings', plan_summary: 'strings', compact_context_summary: 'string?' },
  action: { assistant_text_summary: 'string?', tool_call_summaries: 'strings', tool_result_summaries: 'strings', previous_action_window: 'strings' },
  observation: {
    expected_behavior: 'string',
    actual_behavior: 'string',
    evidence: 'string',
    recoverability: 'string',
    retry_count: 'count',
    terminal_status: 'string?',
  },
};

const SECTION_NAMES = ['task', 'runtime', 'action', 'observation'] as const;
const SECTION_FIELDS = Object.fromEntries(Object.entries(SECTIONS).map(([name, fields]) => [name, Object.entries(fields)])) as Record<
  (typeof SECTION_NAMES)[number],
  Array<[string, FieldType]>
>;

/**
 * Checks and normalizes one case (see the header). Never throws; the error says which field is
 * wrong and what it should be. Idempotent: a normalized case normalizes to itself.
 */
export function normalizeCase(value: unknown): CaseResult {
  const notCase = (error: string): CaseResult => ({ ok: false, reason: 'not_a_case', error });
  if (!isObject(value)) return notCase(`expected a JSON object (a runtime error case), got ${describe(value)}`);
  const o = value;
  if (typeof o.case_id !== 'string' || o.case_id.trim() === '') return notCase(`'case_id' must be a non-empty string, got ${describe(o.case_id)}`);
  if (o.case_id.length > MAX_CASE_ID_LENGTH) return notCase(`'case_id' is longer than ${MAX_CASE_ID_LENGTH} characters`);
  if (typeof o.error_kind !== 'string') return notCase(`'error_kind' must be a string such as "invalid_tool_args", got ${describe(o.error_kind)}`);
  if (!isErrorKind(o.error_kind)) {
    return {
      ok: false,
      reason: 'unknown_error_kind',
      error: `unknown error_kind ${JSON.stringify(clip(o.error_kind, 80))}; known kinds: ${ERROR_KINDS.join(', ')}`,
    };
  }
  const time = o.occurred_at_ms;
  if (typeof time !== 'number' || !Number.isSafeInteger(time) || time < 0) {
    return notCase(`'occurred_at_ms' must be milliseconds since the epoch (a non-negative integer), got ${describe(time)}`);
  }
  const turn = o.turn_id ?? '';
  if (typeof turn !== 'string') return notCase(`'turn_id' must be a string, got ${describe(turn)}`);
  const severity = o.severity ?? 0;
  if (!isSeverity(severity)) return notCase(`'severity' must be an integer 0-255 or a level name, got ${describe(severity)}`);
  const detectedBy = o.detected_by ?? '';
  if (typeof detectedBy !== 'string') return notCase(`'detected_by' must be a string, got ${describe(detectedBy)}`);
  const refs = o.contract_refs ?? [];
  if (!isStrings(refs)) return notCase(`'contract_refs' must be a list of strings, got ${describe(refs)}`);

  // Copy on write: a case that already has every field (as the reference runtime writes them) is
  // returned as it is; only what takes a default is copied.
  let sections: Record<string, Record<string, unknown>> | undefined;
  for (const name of SECTION_NAMES) {
    const raw = o[name] ?? {};
    if (!isObject(raw)) return notCase(`'${name}' must be an object, got ${describe(raw)}`);
    let section = raw;
    if (name === 'runtime' && raw.compact_context_summary === undefined && raw.compact_snapshot_summary !== undefined) {
      section = { ...raw, compact_context_summary: raw.compact_snapshot_summary };
      delete section.compact_snapshot_summary;
    }
    const fields = SECTION_FIELDS[name];
    for (let i = 0; i < fields.length; i++) {
      const [field, type] = fields[i]!;
      const v = section[field];
      if (v === undefined || (v === null && type !== 'string' && type !== 'count')) {
        const fallback = defaultOf(type);
        if (v === fallback) continue;
        if (section === raw) section = { ...raw };
        section[field] = fallback;
        continue;
      }
      if (!fits(v, type)) return notCase(`'${name}.${field}' must be ${expectedOf(type)}, got ${describe(v)}`);
    }
    if (section !== o[name]) (sections ??= {})[name] = section;
  }
  const complete = sections === undefined && o.turn_id === turn && o.severity === severity && o.detected_by === detectedBy && o.contract_refs === refs;
  const normalized = (
    complete
      ? o
      : {
          ...o,
          turn_id: turn,
          severity,
          detected_by: detectedBy,
          ...sections,
          contract_refs: refs,
        }
  ) as RuntimeErrorCase;
  return { ok: true, case: normalized };
}

/** A string field of a case's section, or of the case itself, when it is non-empty text. */
export function caseText(c: Record<string, unknown>, ...path: string[]): string | undefined {
  let v: unknown = c;
  for (const key of path) v = isObject(v) ? v[key] : undefined;
  return typeof v === 'string' && v.trim() !== '' ? v : undefined;
}

function isSeverity(v: unknown): v is Severity {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 && v <= 255;
  return typeof v === 'string' && v.trim() !== '' && v.length <= 64;
}

function fits(v: unknown, type: FieldType): boolean {
  switch (type) {
    case 'string':
      return typeof v === 'string';
    case 'string?':
      return typeof v === 'string';
    case 'strings':
      return isStrings(v);
    case 'count':
      return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
  }
}

function defaultOf(type: FieldType): unknown {
  switch (type) {
    case 'string':
      return '';
    case 'string?':
      return null;
    case 'strings':
      return [];
    case 'count':
      return 0;
  }
}

function expectedOf(type: FieldType): string {
  switch (type) {
    case 'string':
      return 'a string';
    case 'string?':
      return 'a string or null';
    case 'strings':
      return 'a list of strings';
    case 'count':
      return 'a non-negative integer';
  }
}

function isStrings(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === 'string');
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return `the string ${JSON.stringify(clip(v, 40))}`;
  return `${typeof v} ${String(v as number | boolean)}`;
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
