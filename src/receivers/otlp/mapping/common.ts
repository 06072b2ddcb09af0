/**
 * What span, log and agent-event mapping share: reading attributes, the event context (partition,
 * service, revision), exception evidence, and the reference payload shapes the classifier reads
 * (DESIGN 3.1): failed executions, stderr of successful ones, tool results, model-request failures.
 */
import type { AgentEvent, Evidence } from '../../../model/event.ts';
import type { AttributeValue, Attributes } from '../normalized.ts';
import { setKey } from '../decoding.ts';

/** The partition of records that name no session, conversation or service instance. */
export const DEFAULT_PARTITION = 'default';
/** The service of records whose resource has no `service.name` (the OpenTelemetry default). */
export const UNKNOWN_SERVICE = 'unknown_service';

/**
 * Session keys in the order they decide the partition, each read on the record and then on its
 * resource: OpenTelemetry `session.id`, GenAI `gen_ai.conversation.id`, Codex's `conversation.id`,
 * MCP's `mcp.session.id`, the Vercel AI SDK's `ai.telemetry.metadata.sessionId` (its
 * `experimental_telemetry.metadata.sessionId`). A record that names none takes its trace's session
 * (see src/service/correlation/); a resource's `service.instance.id` (one agent process, which may
 * hold many sessions) comes after all of them.
 */
export const SESSION_KEYS: readonly string[] = ['session.id', 'gen_ai.conversation.id', 'conversation.id', 'mcp.session.id', 'ai.telemetry.metadata.sessionId'];

/** Who the agent acted for: OpenTelemetry `user.id` (and the older `enduser.id`), the AI SDK's `ai.telemetry.metadata.userId`. */
export const USER_KEYS: readonly string[] = ['user.id', 'enduser.id', 'ai.telemetry.metadata.userId'];

/** An event without its kind, payload and evidence: identity and context. */
export type EventBase = Omit<AgentEvent, 'kind' | 'payload' | 'evidence'>;

/** An attribute as non-empty text: strings as they are, numbers and booleans printed. */
export function text(v: AttributeValue | undefined): string | undefined {
  if (typeof v === 'string') return v === '' ? undefined : v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}

/** The first of `keys` that `attrs` has as text. */
export function firstText(attrs: Attributes, keys: readonly string[]): string | undefined {
  for (const key of keys) {
    const v = text(attrs[key]);
    if (v !== undefined) return v;
  }
  return undefined;
}

/** An integer attribute (a number, or a string of digits as agent CLIs send them). */
export function integer(v: AttributeValue | undefined): number | undefined {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string' && /^-?\d{1,15}$/.test(v.trim())) return Number(v.trim());
  return undefined;
}

/** A boolean attribute: true/false, or the strings "true"/"false" that agent CLIs send. */
export function flag(v: AttributeValue | undefined): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string') {
    const t = v.trim().toLowerCase();
    if (t === 'true') return true;
    if (t === 'false') return false;
  }
  return undefined;
}

/** The session a record names: the first session key on the record, then on its resource; undefined when none. */
export function sessionOf(record: Attributes, resource: Attributes): string | undefined {
  for (const key of SESSION_KEYS) {
    const session = text(record[key]) ?? text(resource[key]);
    if (session !== undefined) return session;
  }
  return undefined;
}

/** The partition of a record that names no session: its resource's `service.instance.id`, else `default`. */
export function fallbackPartition(resource: Attributes): string {
  return text(resource['service.instance.id']) ?? DEFAULT_PARTITION;
}

export interface EventContext {
  partition: string;
  service: string;
  revision: string | undefined;
  /** Set when the record names no session but belongs to a trace: the trace's session decides (see AgentEvent). */
  awaitsSession?: true;
  user?: string;
}

/**
 * Partition, service, revision and user: the record's own attributes first, then its resource's.
 * A record in a trace (`traceId`) that names no session gets the fallback partition and
 * `awaitsSession`, so its trace's session can take over before it is processed.
 */
export function contextOf(record: Attributes, resource: Attributes, traceId?: string): EventContext {
  const session = sessionOf(record, resource);
  const context: EventContext = {
    partition: session ?? fallbackPartition(resource),
    service: text(resource['service.name']) ?? UNKNOWN_SERVICE,
    revision: text(record['vigil.revision']) ?? text(record['service.version']) ?? text(resource['vigil.revision']) ?? text(resource['service.version']),
  };
  if (session === undefined && traceId !== undefined) context.awaitsSession = true;
  const user = firstText(record, USER_KEYS) ?? firstText(resource, USER_KEYS);
  if (user !== undefined) context.user = user;
  return context;
}

export type ExceptionEvidence = Pick<Evidence, 'exceptionType' | 'exceptionMessage' | 'stacktrace'>;

/** `exception.type`, `exception.message` and `exception.stacktrace` of a span event or log record. */
export function exceptionOf(attrs: Attributes): ExceptionEvidence {
  return compact({
    exceptionType: text(attrs['exception.type']),
    exceptionMessage: text(attrs['exception.message']),
    stacktrace: text(attrs['exception.stacktrace']),
  });
}

/** The stacktrace (a Python one ends with its `Type: message` line), else `Type: message`. */
export function exceptionTextOf(e: ExceptionEvidence): string | undefined {
  if (e.stacktrace && e.stacktrace.trim() !== '') return e.stacktrace;
  if (e.exceptionType && e.exceptionMessage) return `${e.exceptionType}: ${e.exceptionMessage}`;
  return e.exceptionType ?? e.exceptionMessage;
}

/** A failed execution (ExecutionFailure by the reference rules, signature from `error`). */
export function failedExecution(error: string): Record<string, unknown> {
  return { state: 'error', outcome: { error, output: [] } };
}

/** A successful execution that wrote `text` to stderr (RecoveredError, StderrWarning or Uncertain). */
export function stderrOutput(text: string): Record<string, unknown> {
  return { state: 'ok', outcome: { output: [{ name: 'stderr', text }] } };
}

/** A tool result in the reference shape (`tool.result` with `type: tool_result`). */
export interface ToolResult {
  status: 'error' | 'skipped' | 'ok';
  error?: string;
  content?: string;
  reason?: string;
  tool_name?: string;
  call_id?: string;
}

export function toolResultPayload(result: ToolResult): Record<string, unknown> {
  return compact({ type: 'tool_result', ...result });
}

/**
 * A failed model request, for the classifier (a failed execution whose error is the provider's
 * text) and for the provider watchdog (`model_request`, DESIGN 3.4). Unknown fields are null so
 * the shape is stable.
 */
export interface ModelRequestFailure {
  provider: string | undefined;
  model: string | undefined;
  errorType: string | undefined;
  httpStatus: number | undefined;
  error: string;
  attempt?: number | undefined;
  requestId?: string | undefined;
}

export function modelRequestPayload(f: ModelRequestFailure): Record<string, unknown> {
  const modelRequest: Record<string, unknown> = {
    provider: f.provider ?? null,
    model: f.model ?? null,
    error_type: f.errorType ?? null,
    http_status: f.httpStatus ?? null,
    error: f.error,
  };
  if (f.attempt !== undefined) modelRequest.attempt = f.attempt;
  if (f.requestId !== undefined) modelRequest.request_id = f.requestId;
  return { ...failedExecution(f.error), model_request: modelRequest };
}

/**
 * The HTTP status of a provider error: the attribute when present, else the status the SDKs put
 * at the start of their messages (TypeScript `429 {...}`, Python `Error code: 429 - {...}`).
 */
export function httpStatusOf(attribute: AttributeValue | undefined, message: string | undefined): number | undefined {
  const fromAttribute = integer(attribute);
  if (fromAttribute !== undefined) return fromAttribute;
  if (message === undefined) return undefined;
  const m = /^\s*(?:Error code:\s*)?([1-5]\d\d)\b/.exec(message);
  return m ? Number(m[1]) : undefined;
}

/** An event with its fields in reading order (id, kind, payload, context, evidence), undefined fields dropped. */
export function agentEvent(base: EventBase, kind: string, payload: Record<string, unknown>, evidence?: Evidence): AgentEvent {
  const { eventId, ...context } = base;
  const kept = evidence && compact(evidence);
  return compact<AgentEvent>({ eventId, kind, payload, ...context, evidence: kept && Object.keys(kept).length > 0 ? kept : undefined });
}

export function isPlainObject(v: unknown): v is Record<string, AttributeValue> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A copy without the keys whose value is undefined, in the same order. A copy, not `delete`s: an
 * object that lost a property turns into a slow dictionary for V8, and events are copied, frozen,
 * read and serialised many times after they are made.
 */
export function compact<T extends object>(o: T): T {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(o)) {
    const v = (o as Record<string, unknown>)[k];
    if (v !== undefined) setKey(out, k, v);
  }
  return out as T;
}
