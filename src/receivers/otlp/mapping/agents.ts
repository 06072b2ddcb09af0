/**
 * The agent CLIs' own log events (../shared/AGENT-TELEMETRY.md) and the GenAI
 * `gen_ai.client.operation.exception` event → AgentEvents. Each handler gets the record's
 * attributes and returns the kind and payload of the event it becomes, `null` when the event is
 * known but does not matter (a successful tool call, an accepted tool decision), or undefined when
 * the name is not one of them (the log mapping goes on).
 *
 * | event | becomes |
 * | --- | --- |
 * | Claude Code `api_error` | model-request failure (`error`, `status_code`, `model`, `attempt`, `request_id`) |
 * | Claude Code `tool_result`, `success` "false" | tool result, status error (`error`, else `error_type`) |
 * | Claude Code `tool_decision`, `decision` reject | tool result, status skipped, reason `source` |
 * | Codex `codex.api_request` with `error.message` or HTTP status ≥ 400 | model-request failure |
 * | Codex `codex.sse_event` `response.failed` or with `error.message` (idle timeout) | model-request failure |
 * | Codex `codex.tool_result`, `success` "false" | tool result, status error (`output`) |
 * | Codex `codex.tool_decision` denied / abort | tool result, status skipped |
 * | Gemini CLI `gemini_cli.api_error` | model-request failure (`error.message`/`error`, `error_type`, `status_code`) |
 * | Gemini CLI `gemini_cli.tool_call`, `success` false | tool result, status error (`error`, else `error_type`); decision reject → skipped |
 * | `gen_ai.client.operation.exception` | model-request failure from its `exception.*` and `gen_ai.*` attributes |
 *
 * Claude Code names its events `claude_code.<name>` in the body and `<name>` in `event.name`;
 * both spellings are accepted.
 */
import type { AttributeValue, Attributes } from '../normalized.ts';
import { firstText, flag, httpStatusOf, integer, modelRequestPayload, text, toolResultPayload } from './common.ts';

/** What an agent event maps to: kind and payload, and the tool name (the event's operation) when it names one. */
export interface AgentEventMapping {
  kind: string;
  payload: Record<string, unknown>;
  toolName?: string;
}

type Handler = (attrs: Attributes) => AgentEventMapping | null;

const HANDLERS: Record<string, Handler> = {
  // Claude Code
  api_error: (a) => {
    const status = integer(a['status_code']);
    const error = text(a['error']) ?? (status !== undefined ? `API error (status ${status})` : 'API error (no response)');
    return modelFailure({
      provider: 'anthropic',
      model: text(a['model']),
      errorType: text(a['error_type']) ?? text(a['error.type']),
      httpStatus: httpStatusOf(a['status_code'], error),
      error,
      attempt: integer(a['attempt']),
      requestId: text(a['request_id']),
    });
  },
  tool_result: (a) => {
    if (flag(a['success']) !== false) return null;
    return toolFailure(a, text(a['error']) ?? text(a['error_type']) ?? 'tool call failed', text(a['tool_name']), text(a['tool_use_id']));
  },
  tool_decision: (a) => {
    if (text(a['decision'])?.toLowerCase() !== 'reject') return null;
    return toolSkipped(text(a['tool_name']), text(a['tool_use_id']), text(a['source']) ?? 'rejected');
  },

  // Codex CLI
  'codex.api_request': (a) => {
    const status = integer(a['http.response.status_code']);
    const message = text(a['error.message']);
    if (message === undefined && (status === undefined || status < 400)) return null;
    return modelFailure({
      provider: 'openai',
      model: text(a['model']),
      errorType: text(a['error.type']),
      httpStatus: httpStatusOf(a['http.response.status_code'], message),
      error: message ?? `HTTP ${status}`,
      attempt: integer(a['attempt']),
    });
  },
  'codex.sse_event': (a) => {
    const kind = text(a['event.kind']);
    const message = text(a['error.message']);
    if (message === undefined && kind !== 'response.failed') return null;
    return modelFailure({ provider: 'openai', model: text(a['model']), errorType: kind, httpStatus: undefined, error: message ?? kind! });
  },
  'codex.tool_result': (a) => {
    if (flag(a['success']) !== false) return null;
    return toolFailure(a, text(a['output']) ?? text(a['error']) ?? 'tool call failed', text(a['tool_name']), text(a['call_id']));
  },
  'codex.tool_decision': (a) => {
    const decision = text(a['decision'])?.toLowerCase();
    if (decision !== 'denied' && decision !== 'abort') return null;
    const source = text(a['source']);
    return toolSkipped(text(a['tool_name']), text(a['call_id']), source ? `${decision} (${source})` : decision);
  },

  // Gemini CLI
  'gemini_cli.api_error': (a) => {
    const error = text(a['error.message']) ?? text(a['error']) ?? 'API error';
    return modelFailure({
      provider: 'gcp.gemini',
      model: text(a['model']) ?? text(a['model_name']),
      errorType: text(a['error_type']) ?? text(a['error.type']),
      httpStatus: httpStatusOf(a['status_code'], error),
      error,
    });
  },
  'gemini_cli.tool_call': (a) => {
    const callId = firstText(a, ['gen_ai.tool.call.id', 'gen_ai.tool.call_id', 'call_id']);
    const toolName = text(a['function_name']) ?? text(a['tool_name']);
    if (text(a['decision'])?.toLowerCase() === 'reject') return toolSkipped(toolName, callId, 'reject');
    if (flag(a['success']) !== false) return null;
    return toolFailure(a, text(a['error']) ?? text(a['error_type']) ?? 'tool call failed', toolName, callId);
  },

  // OpenTelemetry GenAI
  'gen_ai.client.operation.exception': (a) => {
    const error = text(a['exception.message']) ?? text(a['error.type']) ?? text(a['exception.type']) ?? 'model request failed';
    return modelFailure({
      provider: firstText(a, ['gen_ai.provider.name', 'gen_ai.system']),
      model: firstText(a, ['gen_ai.request.model', 'gen_ai.response.model']),
      errorType: text(a['error.type']) ?? text(a['exception.type']),
      httpStatus: httpStatusOf(a['http.response.status_code'], error),
      error,
    });
  },
};

/**
 * The mapping of a known agent event: `null` when it is known and does not matter, undefined when
 * the name is not a known agent event.
 */
export function mapAgentEvent(eventName: string, attrs: Attributes): AgentEventMapping | null | undefined {
  const name = eventName.startsWith('claude_code.') ? eventName.slice('claude_code.'.length) : eventName;
  const handler = Object.prototype.hasOwnProperty.call(HANDLERS, name) ? HANDLERS[name] : undefined;
  return handler ? handler(attrs) : undefined;
}

function modelFailure(f: Parameters<typeof modelRequestPayload>[0]): AgentEventMapping {
  return { kind: 'execution.completed', payload: modelRequestPayload(f) };
}

function toolFailure(attrs: Attributes, error: string, toolName: string | undefined, callId: string | undefined): AgentEventMapping {
  return {
    kind: 'tool.result',
    payload: toolResultPayload({ status: 'error', error, tool_name: toolName, call_id: callId ?? callIdOf(attrs) }),
    toolName,
  };
}

function toolSkipped(toolName: string | undefined, callId: string | undefined, reason: string): AgentEventMapping {
  return { kind: 'tool.result', payload: toolResultPayload({ status: 'skipped', reason, tool_name: toolName, call_id: callId }), toolName };
}

function callIdOf(attrs: Attributes): string | undefined {
  const v: AttributeValue | undefined = attrs['gen_ai.tool.call.id'] ?? attrs['gen_ai.tool.call_id'];
  return text(v);
}
