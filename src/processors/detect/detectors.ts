/**
 * What the `detect` processor reads in a record, and the cases it makes of what it finds. Pure
 * functions: the operator (operator.ts) keeps the per-turn counts and decides when a case is due.
 *
 * Records read (as the OTLP mapping and the activity markers at ingest make them):
 * - a failed tool call: `tool.result` with `status: error` — an `execute_tool` span (also `ai.toolCall`,
 *   OpenInference TOOL, MCP `tools/call`) in error or with an exception event, or an agent CLI's
 *   failed tool event (Claude Code `tool_result`, Codex `codex.tool_result`, Gemini CLI
 *   `gemini_cli.tool_call`); its text is the exception message, else the status message, else the
 *   error text, and `error.type` / the CLI's `error_type`;
 * - a failed model request: an event carrying `payload.model_request` (GenAI `chat` /
 *   `text_completion` / `generate_content` spans in error or with `error.type`, AI SDK
 *   `ai.*.doGenerate` / `doStream`, agent CLIs' `api_error` events);
 * - activity markers (`agent.activity`): `compaction` and `model_request.ok` (its `output_empty`).
 */
import { isActivity } from '../../model/activity.ts';
import type { AgentEvent, Evidence } from '../../model/event.ts';
import { normalizeCase, type ErrorKind, type RuntimeErrorCase, type Severity, CONTRACT_REFS } from '../../model/runtime-error.ts';

/** The detectors, by the kind each produces. */
export const DETECTORS = [
  'invalid_tool_args',
  'tool_schema_error',
  'repeated_identical_tool_error',
  'model_request_repeated_failure',
  'context_overflow_after_recovery',
  'model_empty_reasoning_output',
] as const satisfies readonly ErrorKind[];
export type DetectorKind = (typeof DETECTORS)[number];

/** The severity vigil gives each detected kind (the reference runtime's: 2 for tool errors, 3 for overflow). */
export const DETECTED_SEVERITY: Readonly<Record<DetectorKind, Severity>> = {
  invalid_tool_args: 2,
  tool_schema_error: 2,
  repeated_identical_tool_error: 2,
  model_request_repeated_failure: 3,
  context_overflow_after_recovery: 3,
  model_empty_reasoning_output: 2,
};

/**
 * Arguments that did not parse, or a call that names no tool: the call does not fit the tools'
 * schema at all. Checked before the validation texts (an AI SDK `Invalid input for tool x: JSON
 * parsing failed` is a parse failure).
 */
const SCHEMA_ERROR_TEXTS: readonly RegExp[] = [
  /\bAI_NoSuchToolError\b/,
  /\btried to call (?:an )?unavailable tool\b/i,
  /\btool_not_registered\b/,
  /\b(?:unknown|unavailable|unregistered) tool\b/i,
  /\btool\s+["'`]?[\w.-]+["'`]?\s+(?:was )?not found\b/i,
  /\bAI_JSONParseError\b/,
  /\bJSON parsing failed\b/i,
  /\bInvalid JSON input for tool\b/i,
  /\b(?:failed|unable|could not) to parse (?:the )?(?:tool(?: call)? )?(?:arguments|args|input)\b/i,
  /\bJSONDecodeError\b/,
  /\bExpecting (?:value|property name enclosed in double quotes|',' delimiter)\b/,
  /\bUnexpected (?:end of JSON input|token .{1,20} in JSON)\b/,
  /\bis not valid JSON\b/,
  /\bEOF while parsing (?:a|an) (?:value|object|list|string)\b/,
  /\bexpected value at line \d+ column \d+/,
];

/** Arguments that parsed but failed validation against the tool's input schema. */
const INVALID_ARGS_TEXTS: readonly RegExp[] = [
  /\bAI_InvalidToolInputError\b/,
  /\bAI_InvalidToolArgumentsError\b/,
  /\bInvalid (?:input|arguments?|parameters?|params) (?:for|to) (?:the )?(?:tool|function)\b/i,
  /\binvalid arguments\b/i,
  /\binvalid_tool_params\b/,
  /\bInvalid parameters provided\b/i,
  /\bInvalid params\b/i,
  /(?:^|[\s:(])-32602\b/,
  /\bmissing (?:required )?(?:field|argument|parameter|property)\b/i,
  /\bmissing \d+ required (?:positional |keyword-only )?arguments?\b/i,
  /\binvalid type: .{1,80}, expected\b/,
  /\bZodError\b/,
  /"code":\s*"invalid_(?:type|union|enum_value|literal|string|arguments)"/,
  /\bExpected [\w ]{1,40}, received \w+/,
  /\bInvalid input: expected \w+/,
  /\bmust have required property\b/,
  /\bshould have required property\b/,
  /\bis a required property\b/,
  /\bis not of a type\(s\)/,
  /\bvalidation errors? for \w+/,
  /\bField required\b/,
  /\bType validation failed\b/,
];

/** A model request that failed because its context is too long (the providers' texts, ../shared/AGENT-TELEMETRY.md). */
const CONTEXT_LENGTH_TEXTS: readonly RegExp[] = [
  /\bcontext_length_exceeded\b/,
  /\bmaximum context length is\b/i,
  /\bprompt is too long\b/i,
  /\binput token count \(?\d+\)? exceeds the maximum\b/i,
  /\bInput is too long for requested model\b/i,
  /\brequest_too_large\b/,
  /\bexceeds? the (?:model's )?context window\b/i,
  /\bcontext (?:window|length) (?:exceeded|overflow)\b/i,
  /\breduce the length of the messages\b/i,
];

/** The text of a failed tool call: its message, the error text, and the error types, as one text to search. */
export interface ToolFailure {
  tool: string;
  /** The failure's message: the exception message, else the status message, else the first line of the error text. */
  message: string;
  /** Everything searched for argument problems. */
  searchText: string;
}

export function toolFailureOf(event: AgentEvent): ToolFailure | undefined {
  if (event.kind !== 'tool.result' && event.kind !== 'scratchpad') return undefined;
  const p = event.payload;
  if (p.type !== 'tool_result' || p.status !== 'error') return undefined;
  const error = typeof p.error === 'string' ? p.error : typeof p.content === 'string' ? p.content : '';
  const message = messageOf(event.evidence, error);
  const errorType = typeof p.error_type === 'string' ? p.error_type : '';
  const tool = typeof p.tool_name === 'string' && p.tool_name !== '' ? p.tool_name : (event.operation ?? 'tool');
  const ev = event.evidence ?? {};
  return { tool, message, searchText: [message, error.slice(0, 8192), errorType, ev.errorType ?? '', ev.exceptionType ?? ''].join('\n') };
}

/** Which argument problem a failed tool call reports, if any. */
export function argumentKind(f: ToolFailure): 'invalid_tool_args' | 'tool_schema_error' | undefined {
  if (SCHEMA_ERROR_TEXTS.some((re) => re.test(f.searchText))) return 'tool_schema_error';
  if (INVALID_ARGS_TEXTS.some((re) => re.test(f.searchText))) return 'invalid_tool_args';
  return undefined;
}

/** The failed model request of an event (`payload.model_request`), with its message. */
export function modelFailureOf(event: AgentEvent): { message: string; provider: string; model: string } | undefined {
  const mr = event.payload.model_request;
  if (typeof mr !== 'object' || mr === null || event.payload.state !== 'error') return undefined;
  const r = mr as Record<string, unknown>;
  const error = typeof r.error === 'string' ? r.error : '';
  return { message: messageOf(event.evidence, error), provider: str(r.provider), model: str(r.model) };
}

export function isContextLength(text: string): boolean {
  return CONTEXT_LENGTH_TEXTS.some((re) => re.test(text));
}

/** An activity marker's name and fields (`agent.activity`), if the event is one. */
export function activityOf(event: AgentEvent): { activity: string; fields: Record<string, unknown> } | undefined {
  return isActivity(event) ? { activity: event.payload.activity, fields: event.payload } : undefined;
}

/** The case a detector makes: the journal's shape, so it is named and identified as a journal case of that kind. */
export function detectedCase(spec: {
  kind: DetectorKind;
  caseId: string;
  turn: string;
  time: number;
  detectedBy: string;
  evidence: string;
  retryCount?: number;
  toolCall?: string;
}): RuntimeErrorCase {
  const [expected, actual] = BEHAVIOUR[spec.kind];
  const r = normalizeCase({
    case_id: spec.caseId,
    turn_id: spec.turn,
    occurred_at_ms: Math.max(0, Math.floor(spec.time)),
    error_kind: spec.kind,
    severity: DETECTED_SEVERITY[spec.kind],
    detected_by: spec.detectedBy,
    action: spec.toolCall ? { tool_call_summaries: [spec.toolCall] } : {},
    observation: {
      expected_behavior: expected,
      actual_behavior: actual,
      evidence: spec.evidence,
      recoverability: '',
      retry_count: spec.retryCount ?? 0,
      terminal_status: null,
    },
    contract_refs: [CONTRACT_REFS[spec.kind]],
  });
  if (!r.ok) throw new Error(`detected case does not validate: ${r.error}`);
  return r.case;
}

const BEHAVIOUR: Readonly<Record<DetectorKind, readonly [string, string]>> = {
  invalid_tool_args: ['Tool calls should use arguments that satisfy the tool input schema.', 'The tool rejected the call: its arguments failed validation.'],
  tool_schema_error: [
    'Tool calls should name an available tool, with arguments that parse.',
    'The tool call did not fit the tool schema: its arguments did not parse, or no such tool exists.',
  ],
  repeated_identical_tool_error: [
    'After a tool error the agent should change its call rather than repeat it.',
    'The same tool failed with the same error repeatedly in one turn.',
  ],
  model_request_repeated_failure: ['Model requests should succeed, or the agent should stop retrying them.', 'Model requests failed repeatedly in one turn.'],
  context_overflow_after_recovery: [
    'Context compaction should recover enough budget for the model request.',
    'Model request still failed with context overflow after recovery attempts.',
  ],
  model_empty_reasoning_output: ['A successful model response should hold text or tool calls.', 'The model request succeeded with an empty output.'],
};

/** The message of a failure: the exception message, else the span's status message, else the text's first non-empty line. */
function messageOf(evidence: Evidence | undefined, text: string): string {
  const m = evidence?.exceptionMessage ?? evidence?.statusMessage;
  if (typeof m === 'string' && m.trim() !== '') return m;
  const first = text.split('\n').find((l) => l.trim() !== '');
  return first ?? text;
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}
