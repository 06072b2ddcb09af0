/**
 * Events as the OTLP mapping and the activity markers at ingest make them (README "How records
 * become events"; /work/handoff/MARKERS.md), for tests of the `detect` processor without a receiver.
 */
import type { AgentEvent } from '../../src/model/event.ts';
import { normalizeCase } from '../../src/model/runtime-error.ts';
import { caseEvent } from '../../src/receivers/journal/case-event.ts';
import { referenceCase } from './journal.ts';

export const TRACE_A = '4bf92f3577b34da6a3ce929d0e0e4736';
export const TRACE_B = '0af7651916cd43dd8448eb211c80319c';
let spanSeq = 0;
const nextSpan = () => (++spanSeq).toString(16).padStart(16, '0');

interface Ctx {
  trace?: string;
  span?: string;
  time?: number;
  partition?: string;
  service?: string;
}

function base(ctx: Ctx): Omit<AgentEvent, 'kind' | 'payload'> {
  const trace = ctx.trace ?? TRACE_A;
  const span = ctx.span ?? nextSpan();
  return {
    eventId: `${trace}:${span}`,
    partition: ctx.partition ?? 'sess-1',
    time: ctx.time ?? 1_767_225_600_000,
    service: ctx.service ?? 'demo-agent',
    traceId: trace,
    spanId: span,
    turnId: trace,
    source: 'otlp.traces',
  };
}

/** An `execute_tool` span in error with an exception event (the openai test agent's shape). */
export function toolSpanFailure(tool: string, message: string, ctx: Ctx & { type?: string; errorType?: string; stack?: string } = {}): AgentEvent {
  const type = ctx.type ?? 'ToolError';
  const stack = ctx.stack ?? `${type}: ${message}\n    at runTool (/srv/agent/tools.js:42:11)\n    at async Promise.all (index 0)`;
  return {
    ...base(ctx),
    kind: 'tool.result',
    operation: `execute_tool ${tool}`,
    payload: { type: 'tool_result', status: 'error', error: stack, tool_name: tool, call_id: `call_${nextSpan()}` },
    evidence: { exceptionType: type, exceptionMessage: message, stacktrace: stack, errorType: ctx.errorType ?? type, statusMessage: message },
  };
}

/** A `chat` span in error, as @opentelemetry/instrumentation-openai leaves it (no exception event). */
export function chatFailure(message: string, ctx: Ctx & { errorType?: string; status?: number } = {}): AgentEvent {
  return {
    ...base(ctx),
    kind: 'execution.completed',
    operation: 'chat gpt-4o-mini',
    payload: {
      state: 'error',
      outcome: { error: message, output: [] },
      model_request: { provider: 'openai', model: 'gpt-4o-mini', error_type: ctx.errorType ?? 'BadRequestError', http_status: ctx.status ?? 400, error: message },
    },
    evidence: { errorType: ctx.errorType ?? 'BadRequestError', statusMessage: message },
  };
}

/** An activity marker (`agent.activity`, MARKERS.md). */
export function marker(activity: string, fields: Record<string, unknown> = {}, ctx: Ctx = {}): AgentEvent {
  return { ...base(ctx), kind: 'agent.activity', operation: activity, payload: { activity, ...fields } };
}

/** A journal case of a turn, as the journal receiver appends it. */
export function journalCase(over: Record<string, unknown>, ctx: { service?: string; file?: string } = {}): AgentEvent {
  const r = normalizeCase(referenceCase(over));
  if (!r.ok) throw new Error(r.error);
  return caseEvent(r.case, { file: ctx.file ?? '/var/agent/runtime_error_cases.jsonl', fileSession: undefined, service: ctx.service ?? 'demo-agent' });
}

export const CONTEXT_LENGTH_400 =
  "400 This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.";

export const ZOD_ISSUES =
  '[\n  {\n    "code": "invalid_type",\n    "expected": "string",\n    "received": "number",\n    "path": [\n      "path"\n    ],\n    "message": "Expected string, received number"\n  }\n]';
