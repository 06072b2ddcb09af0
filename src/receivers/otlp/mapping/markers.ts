/**
 * Activity markers at ingest (src/model/activity.ts, README "Activity markers"): the small events
 * made of successful records that stateful processors need — `model_request.ok`, `tool.ok`,
 * `turn.end`, `compaction`, `retry.checkpoint`, `prompt` — from span marks (a checked span's
 * facts, see relevance.ts), built spans and the agent CLIs' log events. Made only when a pipeline
 * of the signal asked for markers.
 *
 * Markers are a few small records per turn, not a copy of every span: within one export request
 * the routine ones (`model_request.ok` without anything notable, `tool.ok`) are coalesced per turn
 * (`coalesceMarkers`): what follows the turn's last failure is folded into its `turn.end`
 * (`last_tool`, `activity_count`, `last_activity_ms`), or kept as the newest of each kind when the
 * request has no `turn.end`; before a failure, only the newest `tool.ok` is kept (the last step).
 */
import { ACTIVITY_KIND, MAX_CHECKPOINT_DETAIL_BYTES, isRoutineActivity, type ActivityName, type ActivityPayload } from '../../../model/activity.ts';
import type { AgentEvent } from '../../../model/event.ts';
import type { AttributeValue, Attributes, NormalizedSpan, NormalizedTraces, SpanMark } from '../normalized.ts';
import { agentEvent, contextOf, fallbackPartition, firstText, flag, integer, isPlainObject, sessionOf, text } from './common.ts';
import type { EventBase } from './common.ts';
import { CHECKPOINT_EVENT_NAMES, STATUS_CODE_ERROR, isCompactionName, spanOperation } from './relevance.ts';

const PROVIDER_KEYS = ['gen_ai.provider.name', 'gen_ai.system', 'ai.model.provider', 'llm.provider', 'llm.system'];
const MODEL_KEYS = ['gen_ai.response.model', 'gen_ai.request.model', 'ai.model.id', 'llm.model_name'];
const OUTPUT_TOKEN_KEYS = ['gen_ai.usage.output_tokens', 'ai.usage.completionTokens', 'ai.usage.outputTokens', 'llm.token_count.completion'];
const TOOL_NAME_KEYS = ['gen_ai.tool.name', 'ai.toolCall.name', 'tool.name'];
const TOOL_CALL_ID_KEYS = ['gen_ai.tool.call.id', 'gen_ai.tool.call_id', 'ai.toolCall.id', 'tool_call.id'];
const TITLE_KEYS = ['gen_ai.conversation.title', 'session.title'];
/** Where a run's end reason (`model_error`, `no_model`, ...) is named: span attributes, log attributes. */
const END_REASON_KEYS = ['agent.run.end_reason', 'run.end_reason', 'end_reason', 'reason'];
const DETAIL_KEYS = ['detail', 'checkpoint', 'retry.checkpoint'];

/** The mark of a built span: what the checking walk would have read (the marker reads only watched keys). */
export function markOfSpan(span: NormalizedSpan): SpanMark {
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    name: span.name,
    startTimeMs: span.startTimeMs,
    endTimeMs: span.endTimeMs,
    statusCode: span.status.code,
    attributes: span.attributes,
  };
}

/**
 * A marker not made into an event yet: what coalescing reads (`coalesceMarkers`), with the mark it
 * is made of. Most span marks are coalesced away, so their events are only made for the few kept.
 */
export interface PendingMarker {
  pending: true;
  kind: typeof ACTIVITY_KIND;
  eventId: string;
  partition: string;
  turnId: string;
  time: number;
  payload: ActivityPayload;
  mark: SpanMark;
  resource: Attributes;
}

/**
 * The activity marker of a span mark: `model_request.ok` for a successful model request (not
 * embeddings), `tool.ok` for a successful tool call, `turn.end` for an agent turn (any status);
 * undefined for anything else. `id` overrides the event id (a span that is also a failure).
 */
export function markMarker(mark: SpanMark, group: Pick<NormalizedTraces, 'resource'>, now: () => number, id?: string, error?: string): PendingMarker | undefined {
  const a = mark.attributes;
  const failed = mark.statusCode === STATUS_CODE_ERROR || text(a['error.type']) !== undefined;
  let payload: ActivityPayload;
  switch (spanOperation(mark.name, a)) {
    case 'model_request':
      if (failed) return undefined;
      payload = modelRequestOk(a);
      break;
    case 'execute_tool':
      if (failed) return undefined;
      payload = compactPayload({
        activity: 'tool.ok',
        tool_name: firstText(a, TOOL_NAME_KEYS) ?? toolNameOfSpan(mark.name),
        call_id: firstText(a, TOOL_CALL_ID_KEYS),
      });
      break;
    case 'invoke_agent':
      payload = turnEnd(a, mark.statusCode === STATUS_CODE_ERROR ? 'error' : 'ok', error);
      break;
    default:
      return undefined;
  }
  return {
    pending: true,
    kind: ACTIVITY_KIND,
    eventId: id ?? `${mark.traceId}:${mark.spanId}`,
    partition: sessionOf(a, group.resource) ?? fallbackPartition(group.resource),
    turnId: mark.traceId,
    time: Math.floor(mark.endTimeMs ?? mark.startTimeMs ?? now()),
    payload,
    mark,
    resource: group.resource,
  };
}

export function isPending(e: AgentEvent | PendingMarker): e is PendingMarker {
  return (e as PendingMarker).pending === true;
}

/** The event of a pending marker (built field by field: no undefined fields to delete). */
export function makeMarker(p: PendingMarker): AgentEvent {
  const { service, revision, awaitsSession } = contextOf(p.mark.attributes, p.resource, p.mark.traceId);
  const event: AgentEvent = {
    eventId: p.eventId,
    kind: ACTIVITY_KIND,
    payload: p.payload,
    partition: p.partition,
    time: p.time,
    service,
    operation: p.mark.name,
    traceId: p.mark.traceId,
    spanId: p.mark.spanId,
    turnId: p.turnId,
    source: 'otlp.traces',
  };
  if (revision !== undefined) event.revision = revision;
  if (p.mark.endTimeMs === undefined && p.mark.startTimeMs === undefined) event.clockTime = true;
  // A marker of a span that names no session takes its trace's session, as failures do (DESIGN 3.3).
  if (awaitsSession) event.awaitsSession = true;
  if (p.mark.name === '') delete event.operation;
  return event;
}

/**
 * The markers of a built span besides the one its mark gives: a compaction step (the span itself
 * or its events named `*compact*` / `context.recovery`) and runtime retry checkpoints (span events
 * `provider.retry.checkpoint`, with the JSON detail). `taken`: event ids already used by the span's
 * other events; each marker takes the span's id if free, else `<trace>:<span>/<activity>[/n]`.
 */
export function spanEventMarkers(span: NormalizedSpan, group: Pick<NormalizedTraces, 'resource'>, now: () => number, taken: Set<string>): AgentEvent[] {
  const out: AgentEvent[] = [];
  const mark = markOfSpan(span);
  const add = (payload: ActivityPayload, timeMs: number | undefined) => {
    const base = spanBase(mark, group.resource, now, idFor(mark, payload.activity, taken));
    if (timeMs !== undefined) base.time = Math.floor(timeMs);
    out.push(marker(base, payload));
  };
  if (isCompactionName(span.name)) add(compactPayload({ activity: 'compaction', trigger: trigger(span.attributes) }), undefined);
  for (const e of span.events) {
    if (CHECKPOINT_EVENT_NAMES.includes(e.name)) add(checkpointPayload(firstValue(e.attributes, DETAIL_KEYS) ?? checkpointFromAttributes(e.attributes)), e.timeMs);
    else if (isCompactionName(e.name)) add(compactPayload({ activity: 'compaction', trigger: trigger(e.attributes) }), e.timeMs);
  }
  return out;
}

/** The event id of a span's marker: the span's own id when no other event of the span has it. */
export function idFor(mark: Pick<SpanMark, 'traceId' | 'spanId'>, activity: string, taken: Set<string>): string {
  let id = `${mark.traceId}:${mark.spanId}`;
  if (taken.has(id)) id = `${id}/${activity}`;
  for (let n = 2; taken.has(id); n++) id = `${mark.traceId}:${mark.spanId}/${activity}/${n}`;
  taken.add(id);
  return id;
}

/**
 * The agent CLIs' log events that are activity (their failures are mapped in agents.ts): successful
 * API requests and tool results, user prompts, compactions, turn ends and runtime retry
 * checkpoints. Claude Code's `claude_code.` prefix is optional, as for its failures.
 */
const LOG_MARKERS: Record<string, (a: Attributes, body: AttributeValue | undefined) => ActivityPayload | null> = {
  // Claude Code
  api_request: (a) =>
    compactPayload({
      activity: 'model_request.ok',
      provider: 'anthropic',
      model: text(a['model']),
      finish_reasons: [],
      output_empty: integer(a['output_tokens']) === 0,
    }),
  tool_result: (a) =>
    flag(a['success']) === true ? compactPayload({ activity: 'tool.ok', tool_name: text(a['tool_name']), call_id: text(a['tool_use_id']) }) : null,
  user_prompt: () => ({ activity: 'prompt' }),
  compaction: (a) => compactPayload({ activity: 'compaction', trigger: trigger(a) }),
  // Codex CLI
  'codex.api_request': (a) =>
    text(a['error.message']) === undefined && (integer(a['http.response.status_code']) ?? 200) < 400
      ? compactPayload({ activity: 'model_request.ok', provider: 'openai', model: text(a['model']), finish_reasons: [], output_empty: false })
      : null,
  'codex.tool_result': (a) =>
    flag(a['success']) === true ? compactPayload({ activity: 'tool.ok', tool_name: text(a['tool_name']), call_id: text(a['call_id']) }) : null,
  'codex.user_prompt': () => ({ activity: 'prompt' }),
  // Gemini CLI
  'gemini_cli.api_response': (a) =>
    (integer(a['status_code']) ?? 200) < 400
      ? compactPayload({
          activity: 'model_request.ok',
          provider: 'gcp.gemini',
          model: text(a['model']),
          finish_reasons: stringList(a['finish_reasons']),
          output_empty: integer(a['output_token_count']) === 0,
        })
      : null,
  'gemini_cli.tool_call': (a) =>
    flag(a['success']) === true
      ? compactPayload({
          activity: 'tool.ok',
          tool_name: text(a['function_name']) ?? text(a['tool_name']),
          call_id: firstText(a, TOOL_CALL_ID_KEYS) ?? text(a['call_id']),
        })
      : null,
  'gemini_cli.user_prompt': () => ({ activity: 'prompt' }),
  'gemini_cli.chat_compression': (a) => compactPayload({ activity: 'compaction', trigger: trigger(a) }),
  // Runtimes: a turn's end (with its reason) and a provider retry checkpoint, as log events.
  'turn.end': (a) => turnEnd(a, statusOf(a), text(a['error'])),
  'run.end': (a) => turnEnd(a, statusOf(a), text(a['error'])),
  'agent.run.end': (a) => turnEnd(a, statusOf(a), text(a['error'])),
  'provider.retry.checkpoint': (a, body) => checkpointPayload(firstValue(a, DETAIL_KEYS) ?? body ?? null),
  'retry.checkpoint': (a, body) => checkpointPayload(firstValue(a, DETAIL_KEYS) ?? body ?? null),
};

/** The activity payload of an agent CLI's or runtime's log event; undefined when it is none. */
export function logActivity(eventName: string, attrs: Attributes, body: AttributeValue | undefined): ActivityPayload | undefined {
  const name = eventName.startsWith('claude_code.') ? eventName.slice('claude_code.'.length) : eventName;
  const make = Object.prototype.hasOwnProperty.call(LOG_MARKERS, name) ? LOG_MARKERS[name] : undefined;
  return make?.(attrs, body) ?? undefined;
}

/** A marker event. */
export function marker(base: EventBase, payload: ActivityPayload): AgentEvent {
  return agentEvent(base, ACTIVITY_KIND, payload);
}

/**
 * Coalesces the routine markers of one export request (README "Activity markers"), in place of
 * keeping one per successful span; returns the ones to drop. Per turn (its trace, else its prompt,
 * else the partition), the turn's failures in the request cut it into segments:
 *
 * - the last segment (after the last failure; the whole turn without one) is folded into the
 *   turn's newest `turn.end` when the request has it (`last_tool`, `activity_count`,
 *   `last_activity_ms`); without one it keeps its newest `tool.ok` and newest `model_request.ok`;
 * - an earlier segment keeps its newest `tool.ok` only: the last step before the failure after it.
 *
 * A kept routine marker's `count` says how many of its kind and segment it stands for. Other
 * markers (`turn.end`, `compaction`, `retry.checkpoint`, `prompt`, a model request with an empty
 * or cut answer) are always kept.
 */
export function coalesceMarkers<T extends Coalescible>(events: readonly T[]): Set<T> {
  interface Turn {
    failures: number[];
    routine: T[];
    end: T | undefined;
  }
  // By partition, then turn id: two lookups by strings already made (a key joining them was made, and hashed, per event).
  const turns = new Map<string, Map<string, Turn>>();
  const inOrder: Turn[] = [];
  const turnOf = (e: T): Turn => {
    let ofPartition = turns.get(e.partition);
    if (!ofPartition) turns.set(e.partition, (ofPartition = new Map<string, Turn>()));
    const id = e.turnId ?? '';
    let t = ofPartition.get(id);
    if (!t) {
      ofPartition.set(id, (t = { failures: [], routine: [], end: undefined }));
      inOrder.push(t);
    }
    return t;
  };
  for (const e of events) {
    if (e.kind !== ACTIVITY_KIND) {
      turnOf(e).failures.push(e.time);
      continue;
    }
    const payload = e.payload as ActivityPayload;
    if (isRoutineActivity(payload)) turnOf(e).routine.push(e);
    else if (payload.activity === 'turn.end') {
      const t = turnOf(e);
      if (!t.end || newer(e, t.end)) t.end = e;
    }
  }
  const drop = new Set<T>();
  for (const t of inOrder) {
    if (t.routine.length === 0) continue;
    t.failures.sort((a, b) => a - b);
    const last = t.failures.length;
    const folded: T[] = [];
    // The kept routine marker of each (segment, activity): two maps by segment, not a joined string key per marker.
    const newestTool = new Map<number, { event: T; count: number }>();
    const newestModel = new Map<number, { event: T; count: number }>();
    for (const e of t.routine) {
      const segment = segmentOf(t.failures, e.time);
      const activity = String((e.payload as ActivityPayload).activity);
      if (segment === last && t.end) {
        folded.push(e);
        drop.add(e);
        continue;
      }
      if (segment !== last && activity !== 'tool.ok') {
        drop.add(e);
        continue;
      }
      // Routine markers are `tool.ok` or `model_request.ok` (isRoutineActivity).
      const bySegment = activity === 'tool.ok' ? newestTool : newestModel;
      const kept = bySegment.get(segment);
      if (!kept) bySegment.set(segment, { event: e, count: 1 });
      else if (newer(e, kept.event)) {
        drop.add(kept.event);
        bySegment.set(segment, { event: e, count: kept.count + 1 });
      } else {
        drop.add(e);
        kept.count++;
      }
    }
    for (const bySegment of [newestTool, newestModel]) for (const { event, count } of bySegment.values()) if (count > 1) event.payload.count = count;
    if (folded.length && t.end) fold(t.end, folded);
  }
  return drop;
}

/** What coalescing reads of an event or a pending marker. */
export interface Coalescible {
  kind: string;
  eventId: string;
  partition: string;
  turnId?: string | undefined;
  time: number;
  payload: Record<string, unknown>;
}

/** Later in time, ties broken by event id: the choice never depends on the order of the request. */
function newer(a: Coalescible, b: Coalescible): boolean {
  return a.time !== b.time ? a.time > b.time : a.eventId > b.eventId;
}

/** How many of the (sorted) failure times come before `time`: the segment of the turn it is in. */
function segmentOf(failures: number[], time: number): number {
  let n = 0;
  while (n < failures.length && failures[n]! < time) n++;
  return n;
}

/** Folds a turn's routine markers into its `turn.end`: the last tool call and how much activity there was. */
function fold(end: Coalescible, routine: Coalescible[]): void {
  let lastTool: Coalescible | undefined;
  let last = -Infinity;
  for (const e of routine) {
    last = Math.max(last, e.time);
    if ((e.payload as ActivityPayload).activity === 'tool.ok' && (!lastTool || newer(e, lastTool))) lastTool = e;
  }
  const p = end.payload;
  if (lastTool) {
    if (lastTool.payload.tool_name !== undefined) p.last_tool = lastTool.payload.tool_name;
    if (lastTool.payload.call_id !== undefined) p.last_tool_call_id = lastTool.payload.call_id;
    p.last_tool_ms = lastTool.time;
  }
  p.activity_count = routine.length;
  p.last_activity_ms = last;
}

function spanBase(mark: SpanMark, resource: Attributes, now: () => number, id?: string): EventBase {
  return {
    eventId: id ?? `${mark.traceId}:${mark.spanId}`,
    ...contextOf(mark.attributes, resource, mark.traceId),
    time: Math.floor(mark.endTimeMs ?? mark.startTimeMs ?? now()),
    clockTime: mark.endTimeMs === undefined && mark.startTimeMs === undefined ? true : undefined,
    operation: mark.name,
    traceId: mark.traceId,
    spanId: mark.spanId,
    turnId: mark.traceId,
    source: 'otlp.traces',
  };
}

function modelRequestOk(a: Attributes): ActivityPayload {
  const finish = stringList(a['gen_ai.response.finish_reasons']);
  if (finish.length === 0) finish.push(...stringList(a['ai.response.finishReason']));
  return compactPayload({
    activity: 'model_request.ok',
    provider: firstText(a, PROVIDER_KEYS),
    model: firstText(a, MODEL_KEYS),
    finish_reasons: finish,
    output_empty: outputEmpty(a),
  });
}

/**
 * No output: output tokens 0, or the response text and messages present and empty with no tool
 * calls (`gen_ai.output.messages` without a text or tool-call part, `ai.response.text` empty and
 * no `ai.response.toolCalls`). Unknown (none of them sent) is not empty.
 */
function outputEmpty(a: Attributes): boolean {
  for (const key of OUTPUT_TOKEN_KEYS) {
    const n = integer(a[key]);
    if (n !== undefined) {
      if (n === 0) return true;
      break;
    }
  }
  const toolCalls = a['ai.response.toolCalls'];
  if (toolCalls !== undefined && !isEmptyJson(toolCalls)) return false;
  const responseText = a['ai.response.text'];
  if (typeof responseText === 'string') return responseText.trim() === '';
  const messages = a['gen_ai.output.messages'];
  if (messages !== undefined) return !messagesHaveOutput(messages);
  return toolCalls !== undefined;
}

function isEmptyJson(v: AttributeValue): boolean {
  if (v === null || v === '') return true;
  const parsed = typeof v === 'string' ? parseJson(v) : v;
  return parsed === null || (Array.isArray(parsed) && parsed.length === 0);
}

/** GenAI output messages (`[{role, parts: [{type: 'text', content} | {type: 'tool_call', ...}]}]`, as JSON text or a value). */
function messagesHaveOutput(v: AttributeValue): boolean {
  const parsed = typeof v === 'string' ? parseJson(v) : v;
  if (!Array.isArray(parsed)) return typeof v === 'string' && v.trim() !== '' && parsed === undefined;
  return parsed.some((m) => {
    if (!isPlainObject(m)) return false;
    const parts = Array.isArray(m.parts) ? m.parts : [];
    return parts.some((p) => isPlainObject(p) && (p.type === 'tool_call' || (typeof p.content === 'string' && p.content.trim() !== '')));
  });
}

function turnEnd(a: Attributes, status: 'ok' | 'error', error: string | undefined): ActivityPayload {
  return compactPayload({ activity: 'turn.end', status, reason: firstText(a, END_REASON_KEYS), error, title: firstText(a, TITLE_KEYS) });
}

function statusOf(a: Attributes): 'ok' | 'error' {
  const s = text(a['status'])?.toLowerCase();
  return s === 'error' || s === 'failed' || flag(a['success']) === false ? 'error' : 'ok';
}

/**
 * A runtime's retry checkpoint: the JSON detail parsed when it is at most
 * MAX_CHECKPOINT_DETAIL_BYTES (else `detail: null` with its size, which the watchdog reports as
 * oversized). `raw_size` is the size of its JSON text.
 */
function checkpointPayload(v: AttributeValue | null): ActivityPayload {
  const raw = typeof v === 'string' ? v : JSON.stringify(v ?? null);
  const size = Buffer.byteLength(raw);
  if (size > MAX_CHECKPOINT_DETAIL_BYTES) return { activity: 'retry.checkpoint', detail: null, raw_size: size };
  const detail = typeof v === 'string' ? parseJson(v) : v;
  return { activity: 'retry.checkpoint', detail: detail === undefined ? raw : detail, raw_size: size };
}

/** A checkpoint given as the event's own attributes (`version`, `resume_at_ms`, `attempts`, ...). */
function checkpointFromAttributes(a: Attributes): AttributeValue {
  const out: Record<string, AttributeValue> = {};
  for (const [k, v] of Object.entries(a)) out[k] = typeof v === 'string' && /^[[{]/.test(v.trim()) ? ((parseJson(v) ?? v) as AttributeValue) : v;
  return out;
}

function trigger(a: Attributes): string | undefined {
  return firstText(a, ['trigger', 'compaction.trigger', 'gen_ai.compaction.trigger']);
}

function toolNameOfSpan(name: string): string | undefined {
  return name.startsWith('execute_tool ') ? name.slice('execute_tool '.length).trim() || undefined : undefined;
}

function firstValue(a: Attributes, keys: readonly string[]): AttributeValue | undefined {
  for (const k of keys) if (a[k] !== undefined && a[k] !== null) return a[k];
  return undefined;
}

function stringList(v: AttributeValue | undefined): string[] {
  if (typeof v === 'string') {
    const parsed = v.trim().startsWith('[') ? parseJson(v) : undefined;
    if (Array.isArray(parsed)) return parsed.filter((x): x is string => typeof x === 'string');
    return v === '' ? [] : [v];
  }
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === 'string');
  return [];
}

function parseJson(s: string): unknown {
  try {
    return JSON.parse(s) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * A payload without its undefined fields (a copy). Its keys are this module's own literals, never
 * `__proto__`, so they are set directly (compact in common.ts guards keys that come from records);
 * it runs for every mark of a request, most of which coalescing then drops.
 */
function compactPayload(p: { activity: ActivityName } & Record<string, unknown>): ActivityPayload {
  const out: Record<string, unknown> = {};
  for (const k in p) {
    const v = p[k];
    if (v !== undefined) out[k] = v;
  }
  return out as ActivityPayload;
}
