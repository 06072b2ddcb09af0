/**
 * What the watchdog reads of each event of a page (DESIGN 3.4):
 *
 * - a **failed model request**: an event the OTLP mapping marked `payload.model_request` — GenAI
 *   `chat` / `text_completion` / `generate_content` spans with error status or `error.type`, the AI
 *   SDK's `ai.generateText.doGenerate` / `ai.streamText.doStream` (`AI_APICallError` with its status),
 *   Claude Code `api_error`, Codex `codex.api_request` / `codex.sse_event` with an error, Gemini CLI
 *   `gemini_cli.api_error`, `gen_ai.client.operation.exception` — but not embeddings; and a run that
 *   ended with reason `model_error` / `no_model` (a `turn.end` marker);
 * - **activity**: any activity marker, and any tool result (a tool ran, whatever its outcome);
 * - a runtime's own **retry checkpoint** (`retry.checkpoint` marker).
 *
 * The *failed run* is the record's turn: its trace (one agent turn), else the agent CLI's prompt id,
 * else the JSONL `turn_id`, else the record itself. The *conversation* is its partition (session).
 */
import { isActivity, type ActivityName } from '../../model/activity.ts';
import type { AgentEvent } from '../../model/event.ts';

export interface ProviderFailure {
  run: string;
  conversation: string;
  time: number;
  eventId: string;
  service: string;
  traceId: string | undefined;
  spanId: string | undefined;
  /** The error text as sent. */
  error: string;
  status: number | undefined;
  errorType: string | undefined;
  provider: string | undefined;
  model: string | undefined;
  /** The run's end reason when the failure is a run that ended with `model_error` / `no_model`. */
  reason: string | undefined;
}

export type Observation =
  | { kind: 'failure'; failure: ProviderFailure }
  | {
      kind: 'activity';
      activity: ActivityName | 'tool.result';
      time: number;
      run: string;
      /** The tool a tool call named. */
      tool?: string | undefined;
      /** turn.end: the conversation's title, and activity folded into it at ingest. */
      title?: string | undefined;
      lastActivityMs?: number | undefined;
      lastTool?: { name: string; ms: number } | undefined;
    }
  | { kind: 'checkpoint'; time: number; run: string; detail: unknown; rawSize: unknown };

/** Run-end reasons that are a provider failure of the run. */
const FAILED_RUN_REASONS = new Set(['model_error', 'no_model']);

/** The run of an event: its turn (trace, prompt, JSONL turn_id), else the record itself. */
export function runOf(event: AgentEvent): string {
  return event.turnId ?? event.eventId;
}

/** What the watchdog reads of one event; undefined for events it does not read. */
export function observe(event: AgentEvent): Observation | undefined {
  const run = runOf(event);
  if (isActivity(event)) {
    const p = event.payload;
    if (p.activity === 'retry.checkpoint') return { kind: 'checkpoint', time: event.time, run, detail: p.detail, rawSize: p.raw_size };
    if (p.activity === 'turn.end' && typeof p.reason === 'string' && FAILED_RUN_REASONS.has(p.reason)) {
      const error = str(p.error) ?? `run ended: ${p.reason}`;
      return { kind: 'failure', failure: failureOf(event, run, { error, reason: p.reason }) };
    }
    return {
      kind: 'activity',
      activity: p.activity,
      time: event.time,
      run,
      tool: p.activity === 'tool.ok' ? str(p.tool_name) : undefined,
      title: str(p.title),
      lastActivityMs: typeof p.last_activity_ms === 'number' ? p.last_activity_ms : undefined,
      lastTool: typeof p.last_tool === 'string' && typeof p.last_tool_ms === 'number' ? { name: p.last_tool, ms: p.last_tool_ms } : undefined,
    };
  }
  const mr = event.payload.model_request;
  if (event.kind === 'execution.completed' && typeof mr === 'object' && mr !== null && !isEmbeddings(event)) {
    const m = mr as Record<string, unknown>;
    const outcome = event.payload.outcome as Record<string, unknown> | undefined;
    return {
      kind: 'failure',
      failure: failureOf(event, run, {
        error: str(m.error) ?? str(outcome?.error) ?? 'model request failed',
        status: typeof m.http_status === 'number' ? m.http_status : undefined,
        errorType: str(m.error_type),
        provider: str(m.provider),
        model: str(m.model),
      }),
    };
  }
  if ((event.kind === 'tool.result' || event.kind === 'scratchpad') && event.payload.type === 'tool_result') {
    return { kind: 'activity', activity: 'tool.result', time: event.time, run, tool: str(event.payload.tool_name) ?? event.operation };
  }
  return undefined;
}

function failureOf(event: AgentEvent, run: string, f: Partial<ProviderFailure> & { error: string }): ProviderFailure {
  return {
    run,
    conversation: event.partition,
    time: event.time,
    eventId: event.eventId,
    service: event.service,
    traceId: event.traceId,
    spanId: event.spanId,
    status: undefined,
    errorType: undefined,
    provider: undefined,
    model: undefined,
    reason: undefined,
    ...f,
  };
}

/** An embeddings request is not a turn of the conversation: its failure is left to recurrence. */
function isEmbeddings(event: AgentEvent): boolean {
  const op = event.operation ?? '';
  return op.startsWith('embeddings') || /\.doEmbed$/.test(op);
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}
