/**
 * Parses one JSONL line holding a reference event `{kind, payload, partition?, time?, ...}` into an
 * AgentEvent. Errors say what is wrong and how to fix it; they never throw past the caller.
 */
import { stableHash } from '../../model/identity.ts';
import type { AgentEvent } from '../../model/event.ts';

export const MAX_LINE_BYTES = 1024 * 1024;

export type LineResult = { ok: true; event: AgentEvent } | { ok: false; error: string };

export function parseReferenceLine(line: string, where: { source: string; lineNo: number }, now: () => number): LineResult {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (err) {
    return { ok: false, error: `not valid JSON (${(err as Error).message}); each line must be one JSON object` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, error: 'expected a JSON object {"kind": ..., "payload": {...}}' };
  }
  const o = value as Record<string, unknown>;
  if (typeof o.kind !== 'string' || o.kind === '') return { ok: false, error: 'missing string field \'kind\' (e.g. "execution.completed")' };
  if (typeof o.payload !== 'object' || o.payload === null || Array.isArray(o.payload)) {
    return { ok: false, error: "missing object field 'payload'" };
  }
  const time = parseTime(o.time ?? o.timestamp ?? o.occurred_at_ms);
  if (time === null) return { ok: false, error: "field 'time' must be milliseconds since the epoch or an ISO 8601 date" };
  const str = (k: string) => (typeof o[k] === 'string' && o[k] !== '' ? (o[k] as string) : undefined);
  const payload = o.payload as Record<string, unknown>;
  const partition = str('partition') ?? str('session_id') ?? (typeof payload.session_id === 'string' ? payload.session_id : undefined) ?? 'default';
  const event: AgentEvent = {
    // A line's own id wins; otherwise its content and position identify it, so re-reading the same
    // file after a restart produces the same ids and the store drops the repeats.
    eventId: str('event_id') ?? str('id') ?? str('case_id') ?? stableHash(['jsonl', where.source, where.lineNo, line]),
    kind: o.kind,
    payload,
    partition,
    time: time ?? now(),
    service: str('service') ?? 'unknown_service',
    source: 'jsonl',
  };
  if (time === undefined) event.clockTime = true;
  const optional: Array<[keyof AgentEvent, string | undefined]> = [
    ['revision', str('revision')],
    ['executionId', str('execution_id') ?? (typeof payload.execution_id === 'string' ? payload.execution_id : undefined)],
    ['operation', str('operation')],
    ['traceId', str('trace_id')],
    ['spanId', str('span_id')],
    ['turnId', str('turn_id')],
  ];
  for (const [k, v] of optional) if (v !== undefined) (event as unknown as Record<string, unknown>)[k] = v;
  return { ok: true, event };
}

/** undefined → absent (use now), null → invalid. */
function parseTime(v: unknown): number | undefined | null {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number' && Number.isFinite(v) && v >= 0) return v;
  if (typeof v === 'string') {
    const n = Date.parse(v);
    return Number.isNaN(n) ? null : n;
  }
  return null;
}
