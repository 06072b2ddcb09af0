/**
 * The receiver's cheap relevance test (DESIGN 1), in one place: whether a span or log record may
 * matter to the processor chain. It reads only cheap fields — a span's status code and event names,
 * a log record's severity, event name and scalar body, and a small known set of attribute keys —
 * so the decoders can apply it while they only check a record, and build (materialize) only the
 * records it lets through. The span and log mappings apply the same test first, then decide exactly.
 *
 * The test may let through records the mapping then finds irrelevant (it is a superset), never the
 * other way round. To make it read another field later (a session id to remember for the trace),
 * add the attribute key to the lists below: the checking decoders fill exactly those into the facts.
 *
 * Activity markers (src/model/activity.ts): when a pipeline asks for them, a successful model
 * request, tool call or agent turn is neither let go nor built: the test keeps it as a *mark*, the
 * facts the checking walk collected (name, ids, times, the watched attributes), from which the
 * mapping makes a small marker event. So a batch of successful spans still costs a scan.
 */
import type { AttributeValue, Attributes } from '../normalized.ts';
import { exceptionOf, exceptionTextOf, isPlainObject, text } from './common.ts';

/** OTLP status code ERROR. */
export const STATUS_CODE_ERROR = 2;

/**
 * What the span test reads. A checking decoder fills the status and the attributes whose keys are
 * in SPAN_ATTRIBUTE_KEYS, and the event names in SPAN_EVENT_NAMES; when activity marks are wanted,
 * also the name, every event name, the attributes in SPAN_MARKER_KEYS, and the ids and times (so a
 * span the test keeps only as an activity mark is never built: the decoders' `mark` reads them).
 */
export interface SpanFacts {
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  /** The span name (a checking decoder without marks: ''). */
  name: string;
  /** Names of the span's events (a checking decoder without marks: those in SPAN_EVENT_NAMES). */
  eventNames: string[];
  /** The span's attributes (a checking decoder: those in SPAN_ATTRIBUTE_KEYS, or SPAN_MARKER_KEYS with marks). */
  attributes: Attributes;
}

/** What the test says of a span: let it go, build it, or keep only its facts as an activity mark. */
export type SpanVerdict = 'skip' | 'build' | 'mark';

/** Span event names the test reads when no activity marks are wanted (with marks, it reads every name). */
export const SPAN_EVENT_NAMES: readonly string[] = ['exception'];
/** Span attribute keys the test reads when no activity marks are wanted. */
export const SPAN_ATTRIBUTE_KEYS: readonly string[] = ['error.type'];

/**
 * Span attribute keys the test reads when activity marks are wanted, with the ones a marker reads
 * (so a marker can be made from a checked span's facts alone): operation, provider, model, finish
 * reasons, output, tool, session, revision, title and run-end reason.
 */
export const SPAN_MARKER_KEYS: readonly string[] = [
  'error.type',
  'gen_ai.operation.name',
  'openinference.span.kind',
  // activity fields (mapping/markers.ts)
  'gen_ai.provider.name',
  'gen_ai.system',
  'ai.model.provider',
  'llm.provider',
  'llm.system',
  'gen_ai.request.model',
  'gen_ai.response.model',
  'ai.model.id',
  'llm.model_name',
  'gen_ai.response.finish_reasons',
  'ai.response.finishReason',
  'gen_ai.usage.output_tokens',
  'ai.usage.completionTokens',
  'ai.usage.outputTokens',
  'llm.token_count.completion',
  'gen_ai.output.messages',
  'ai.response.text',
  'ai.response.toolCalls',
  'gen_ai.tool.name',
  'ai.toolCall.name',
  'tool.name',
  'gen_ai.tool.call.id',
  'gen_ai.tool.call_id',
  'ai.toolCall.id',
  'tool_call.id',
  'session.id',
  'gen_ai.conversation.id',
  'conversation.id',
  'mcp.session.id',
  'vigil.revision',
  'service.version',
  'gen_ai.conversation.title',
  'session.title',
  'agent.run.end_reason',
  'run.end_reason',
];

/** Span events that are a runtime's provider retry checkpoint (a JSON `detail` attribute). */
export const CHECKPOINT_EVENT_NAMES: readonly string[] = ['provider.retry.checkpoint', 'retry.checkpoint', 'gen_ai.retry.checkpoint'];

/** A span or span-event name that says the context was compacted or recovered. */
export function isCompactionName(name: string): boolean {
  if (name.length < 7) return false;
  return name.includes('ompact') || name.includes('OMPACT') || name === 'context.recovery' ? /compact/i.test(name) || name === 'context.recovery' : false;
}

/** Whether a span carries failure evidence: status ERROR, an `exception` event, or an `error.type`. */
export function spanMayMatter(f: SpanFacts): boolean {
  return f.statusCode === STATUS_CODE_ERROR || f.eventNames.includes('exception') || text(f.attributes['error.type']) !== undefined;
}

/**
 * The relevance test for spans: failure evidence is built; with activity markers wanted, a
 * compaction step or a span carrying a retry checkpoint is built too (rare, and its event
 * attributes are read), and a successful model request, tool call or agent turn is kept as a mark
 * (its facts, never built). Everything else is let go.
 */
export function spanVerdict(f: SpanFacts, markers: boolean): SpanVerdict {
  if (spanMayMatter(f)) return 'build';
  if (!markers) return 'skip';
  if (isCompactionName(f.name)) return 'build';
  for (const e of f.eventNames) if (CHECKPOINT_EVENT_NAMES.includes(e) || isCompactionName(e)) return 'build';
  const op = spanOperation(f.name, f.attributes);
  return op === 'model_request' || op === 'execute_tool' || op === 'invoke_agent' ? 'mark' : 'skip';
}

/** The GenAI operations vigil distinguishes. */
export type SpanOperation = 'execute_tool' | 'model_request' | 'embeddings' | 'invoke_agent' | 'other';

const MODEL_OPERATIONS = new Set(['chat', 'text_completion', 'generate_content']);
/** Vercel AI SDK (before v7) provider-call spans: `ai.generateText.doGenerate`, `ai.streamText.doStream`, ... */
const VERCEL_PROVIDER_CALL = /^ai\.[A-Za-z]+\.do(Generate|Stream)$/;
const VERCEL_EMBED_CALL = /^ai\.[A-Za-z]+\.doEmbed$/;
/** Spans that are an agent's turn: the AI SDK's top-level calls, Claude Code's interaction span. */
const TURN_SPANS = new Set(['ai.generateText', 'ai.streamText', 'ai.generateObject', 'ai.streamObject', 'claude_code.interaction']);
const OPENINFERENCE_KINDS: Record<string, SpanOperation> = { TOOL: 'execute_tool', LLM: 'model_request', EMBEDDING: 'embeddings', AGENT: 'invoke_agent' };

/**
 * The GenAI operation of a span: `gen_ai.operation.name`, else the span name's first word, else an
 * older convention (the AI SDK's span names, OpenInference span kinds).
 */
export function spanOperation(name: string, attributes: Attributes): SpanOperation {
  const space = name.indexOf(' ');
  const named = text(attributes['gen_ai.operation.name']) ?? (space < 0 ? name : name.slice(0, space));
  if (named === 'execute_tool') return 'execute_tool';
  if (named === 'invoke_agent') return 'invoke_agent';
  if (MODEL_OPERATIONS.has(named)) return 'model_request';
  if (named === 'embeddings') return 'embeddings';
  if (name === 'ai.toolCall') return 'execute_tool';
  if (VERCEL_PROVIDER_CALL.test(name)) return 'model_request';
  if (VERCEL_EMBED_CALL.test(name)) return 'embeddings';
  if (TURN_SPANS.has(name)) return 'invoke_agent';
  const kind = text(attributes['openinference.span.kind']);
  return (kind && OPENINFERENCE_KINDS[kind.toUpperCase()]) || 'other';
}

/** What the log test reads. A checking decoder fills only the attribute keys listed below. */
export interface LogFacts {
  severityNumber: number;
  severityText: string;
  /** The LogRecord `eventName` field. */
  eventName: string;
  /** The body as decoded (decoders build it even when they only check the record). */
  body: AttributeValue | undefined;
  /** The record's attributes (a checking decoder: those in LOG_ATTRIBUTE_KEYS). */
  attributes: Attributes;
}

/** Log attribute keys the test reads. */
export const LOG_ATTRIBUTE_KEYS: readonly string[] = ['event.name', 'exception.type', 'exception.message', 'exception.stacktrace', 'error.type'];

/** OTLP SeverityNumber 17 is ERROR; 17..24 are ERROR and FATAL. */
const SEVERITY_ERROR = 17;
const ERROR_SEVERITY_TEXT = /^(error|err|fatal|critical|crit|alert|emerg|emergency|panic)\d*$/i;

/**
 * Words that make text below ERROR worth classifying (case-insensitive): everything the error and
 * warning rules of the classifier look for, and the other ways tools say something went wrong.
 */
export const FAILURE_MARKERS =
  /error|exception|traceback|fatal|panic|warn|fail|denied|not found|err!|abort|critical|crash|killed|segmentation fault|core dumped|timed out|timeout|refused|unable to|cannot|can't|invalid|unhandled/i;

/**
 * Whether a log record may matter: it has an event name (a reference kind or an agent CLI's event:
 * the mapping decides), a kvlist body or a string body holding a JSON object (a reference event),
 * `exception.*` evidence, ERROR severity, or scalar body text with a failure or warning marker.
 */
export function logMayMatter(f: LogFacts): boolean {
  if (f.eventName !== '' || text(f.attributes['event.name']) !== undefined) return true;
  if (isPlainObject(f.body)) return true;
  if (exceptionTextOf(exceptionOf(f.attributes)) !== undefined) return true;
  if (isErrorSeverity(f.severityNumber, f.severityText)) return true;
  const body = scalarText(f.body);
  return body !== undefined && (body.trimStart().startsWith('{') || FAILURE_MARKERS.test(body));
}

/** ERROR and above: SeverityNumber >= 17, or, when the number is unset, a severity text that says so. */
export function isErrorSeverity(severityNumber: number, severityText: string): boolean {
  if (severityNumber > 0) return severityNumber >= SEVERITY_ERROR;
  return ERROR_SEVERITY_TEXT.test(severityText.trim());
}

/** A scalar body as text: strings as they are, numbers and booleans printed. */
export function scalarText(body: AttributeValue | undefined): string | undefined {
  if (typeof body === 'string') return body;
  if (typeof body === 'number' || typeof body === 'boolean') return String(body);
  return undefined;
}
