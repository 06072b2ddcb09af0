/**
 * Activity markers (README "Activity markers"): the few successful records that stateful
 * processors need although they are not failures — the conversation went on after a failure, the
 * last tool call before it, a finished turn, a compaction, a runtime's own retry checkpoint. The
 * OTLP mapping appends them as small AgentEvents of kind `agent.activity` (same partition and
 * event-id rules as any event); classify leaves them NormalOutput and recurrence ignores them.
 *
 * A pipeline gets them only when one of its processors asks for them (the factory's
 * `capabilities(cfg).activityMarkers`), so pipelines without such a processor keep the write rate
 * of failures alone.
 */
import type { AgentEvent } from './event.ts';

/** The kind of every activity marker. */
export const ACTIVITY_KIND = 'agent.activity';

/** Activity names (README "Activity markers"; add new names there and here, never a second mechanism). */
export const ACTIVITIES = ['model_request.ok', 'tool.ok', 'turn.end', 'compaction', 'retry.checkpoint', 'prompt'] as const;
export type ActivityName = (typeof ACTIVITIES)[number];

/** The payload of a marker: its name and fields (see the README table). */
export interface ActivityPayload {
  activity: ActivityName;
  [field: string]: unknown;
}

/** Largest raw JSON text of a runtime's retry checkpoint that is parsed and kept in its marker. */
export const MAX_CHECKPOINT_DETAIL_BYTES = 16 * 1024;

export function isActivity(event: AgentEvent): event is AgentEvent & { payload: ActivityPayload } {
  return event.kind === ACTIVITY_KIND && typeof event.payload.activity === 'string';
}

/** Routine markers: coalesced per turn at ingest (the newest of each kind stands for the others). */
export function isRoutineActivity(payload: ActivityPayload): boolean {
  if (payload.activity === 'tool.ok') return true;
  return payload.activity === 'model_request.ok' && payload.output_empty !== true && !isNotableFinish(payload.finish_reasons);
}

/** Finish reasons that say the answer was cut or refused: such model requests are kept one by one. */
const NOTABLE_FINISH = new Set([
  'length',
  'max_tokens',
  'content_filter',
  'content-filter',
  'safety',
  'refusal',
  'recitation',
  'blocklist',
  'prohibited_content',
  'spii',
  'malformed_function_call',
  'error',
]);

export function isNotableFinish(reasons: unknown): boolean {
  return Array.isArray(reasons) && reasons.some((r) => typeof r === 'string' && NOTABLE_FINISH.has(r.toLowerCase()));
}
