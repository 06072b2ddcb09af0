/**
 * Spans → AgentEvents, following the OpenTelemetry GenAI semantic conventions (operation from
 * `gen_ai.operation.name`, else the first word of the span name) and a few older shapes still sent
 * by instrumentations (Vercel AI SDK `ai.toolCall` / `ai.*.doGenerate`, OpenInference span kinds):
 *
 * - `execute_tool`: a `tool.result` whose status is `error` when the span's status is ERROR or it
 *   recorded an exception event; successful tool calls are not relevant.
 * - `chat`, `text_completion`, `generate_content`, `embeddings`: a failed model request when the
 *   status is ERROR or `error.type` is set, carrying the provider's error text and
 *   `payload.model_request`; successful requests are not relevant.
 * - `invoke_agent`: the turn (its trace id is the turn of every event of the trace); the span itself
 *   only matters when it failed.
 * - any other span: a failed execution when its status is ERROR; with an exception event but no
 *   error status, a recovered error (stderr of a successful execution); otherwise not relevant.
 */
import type { AgentEvent } from '../../../model/event.ts';
import type { NormalizedSpan, NormalizedTraces } from '../normalized.ts';
import {
  agentEvent,
  compact,
  contextOf,
  exceptionOf,
  exceptionTextOf,
  failedExecution,
  firstText,
  httpStatusOf,
  modelRequestPayload,
  stderrOutput,
  text,
  toolResultPayload,
} from './common.ts';
import type { EventBase } from './common.ts';
import { STATUS_CODE_ERROR, spanMayMatter, spanOperation } from './relevance.ts';
import type { SpanFacts } from './relevance.ts';

const TOOL_NAME_KEYS = ['gen_ai.tool.name', 'ai.toolCall.name', 'tool.name'];
/** `gen_ai.tool.call.id`, Gemini CLI's deprecated `gen_ai.tool.call_id`, Vercel's `ai.toolCall.id`. */
const TOOL_CALL_ID_KEYS = ['gen_ai.tool.call.id', 'gen_ai.tool.call_id', 'ai.toolCall.id', 'tool_call.id'];
/** `gen_ai.provider.name`, the deprecated `gen_ai.system`, Vercel's `ai.model.provider`, OpenInference's `llm.provider`/`llm.system`. */
const PROVIDER_KEYS = ['gen_ai.provider.name', 'gen_ai.system', 'ai.model.provider', 'llm.provider', 'llm.system'];
const MODEL_KEYS = ['gen_ai.request.model', 'gen_ai.response.model', 'ai.model.id', 'llm.model_name'];
const HTTP_STATUS_KEYS = ['http.response.status_code', 'http.status_code'];
const TOOL_RESULT_KEYS = ['gen_ai.tool.call.result', 'ai.toolCall.result', 'output.value'];

/** The event a span becomes, or undefined when the chain does not need it. */
export function mapSpan(span: NormalizedSpan, group: NormalizedTraces, now: () => number): AgentEvent | undefined {
  // The cheap relevance test: most spans end here (the decoders apply it before building spans at all).
  if (!spanMayMatter(spanFacts(span))) return undefined;
  const isError = span.status.code === STATUS_CODE_ERROR;
  const exception = lastException(span);
  const errorType = text(span.attributes['error.type']);
  const named = spanOperation(span.name, span.attributes);
  // An embeddings request that failed is a failed model request like any other.
  const operation = named === 'embeddings' ? 'model_request' : named;
  if (!isError && !exception && operation !== 'model_request') return undefined;

  const exceptionEvidence = exception ? exceptionOf(exception) : {};
  const statusMessage = span.status.message || undefined;
  const evidence = compact({ ...exceptionEvidence, errorType, statusMessage });
  const base: EventBase = {
    eventId: `${span.traceId}:${span.spanId}`,
    ...contextOf(span.attributes, group.resource, span.traceId),
    time: Math.floor(span.endTimeMs ?? span.startTimeMs ?? now()),
    clockTime: span.endTimeMs === undefined && span.startTimeMs === undefined ? true : undefined,
    operation: operationNameOf(span),
    traceId: span.traceId,
    spanId: span.spanId,
    parentSpanId: span.parentSpanId,
    turnId: span.traceId,
    source: 'otlp.traces',
  };

  switch (operation) {
    case 'execute_tool': {
      const error = exceptionTextOf(exceptionEvidence) ?? statusMessage ?? errorType ?? '';
      const payload = toolResultPayload({
        status: 'error',
        error,
        content: firstText(span.attributes, TOOL_RESULT_KEYS),
        tool_name: toolNameOf(span),
        call_id: firstText(span.attributes, TOOL_CALL_ID_KEYS),
      });
      return agentEvent(base, 'tool.result', payload, evidence);
    }
    case 'model_request': {
      if (!isError && errorType === undefined) break; // an exception the request recovered from
      const error = statusMessage ?? exceptionEvidence.exceptionMessage ?? errorType ?? exceptionEvidence.exceptionType ?? '';
      const payload = modelRequestPayload({
        provider: firstText(span.attributes, PROVIDER_KEYS) ?? firstText(group.resource, PROVIDER_KEYS),
        model: firstText(span.attributes, MODEL_KEYS),
        errorType: errorType ?? exceptionEvidence.exceptionType,
        httpStatus: httpStatusOf(firstHttpStatus(span), error),
        error,
      });
      return agentEvent(base, 'execution.completed', payload, evidence);
    }
    case 'invoke_agent':
      if (!isError) return undefined;
      break;
    case 'other':
      break;
  }

  const exceptionText = exceptionTextOf(exceptionEvidence);
  if (isError) return agentEvent(base, 'execution.completed', failedExecution(exceptionText ?? statusMessage ?? errorType ?? ''), evidence);
  // An exception recorded on a span that still succeeded: the agent recovered from it.
  if (exceptionText) return agentEvent(base, 'execution.completed', stderrOutput(exceptionText), evidence);
  return undefined;
}

/** The facts of a built span, for the relevance test. */
export function spanFacts(span: NormalizedSpan): SpanFacts {
  return { statusCode: span.status.code, name: span.name, eventNames: span.events.map((e) => e.name), attributes: span.attributes };
}

/**
 * What the span was doing, as the occurrence's operation: the span name; for the AI SDK's
 * `ai.toolCall` the tool's name (`ai.toolCall.name`), as its span name names no tool.
 */
function operationNameOf(span: NormalizedSpan): string | undefined {
  if (span.name === 'ai.toolCall') return text(span.attributes['ai.toolCall.name']) ?? span.name;
  return span.name || text(span.attributes['gen_ai.tool.name']);
}

/** The attributes of the span's last `exception` event. */
function lastException(span: NormalizedSpan) {
  for (let i = span.events.length - 1; i >= 0; i--) {
    if (span.events[i]!.name === 'exception') return span.events[i]!.attributes;
  }
  return undefined;
}

function toolNameOf(span: NormalizedSpan): string | undefined {
  const named = firstText(span.attributes, TOOL_NAME_KEYS);
  if (named) return named;
  return span.name.startsWith('execute_tool ') ? span.name.slice('execute_tool '.length).trim() || undefined : undefined;
}

function firstHttpStatus(span: NormalizedSpan) {
  for (const key of HTTP_STATUS_KEYS) if (span.attributes[key] !== undefined) return span.attributes[key];
  return undefined;
}
