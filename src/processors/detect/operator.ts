/**
 * The `detect` processor (DESIGN 3.5): derives agent-runtime error cases from traces alone and
 * ties them to the cases runtimes write to their journals, so that both end in the same
 * occurrences. It runs after `classify` and before `recurrence`, and keeps per-turn counts in its
 * processor state (namespace = its id; key `turn:<trace id or turn id>`), written in the page's
 * commit with a version, so a replay or a second pipeline sees exactly what was counted.
 *
 * Per item, in log order:
 * - a failed tool call whose error says its arguments failed validation → the item is
 *   re-diagnosed `invalid_tool_args`; whose arguments did not parse, or that named no such tool →
 *   `tool_schema_error` (detectors.ts lists the texts);
 * - the same tool failing with the same fingerprint for the N-th time in a turn → a new item, a
 *   `repeated_identical_tool_error` case (N = `repeat_threshold`, default 3; once per tool and
 *   fingerprint and turn);
 * - the N-th failed model request of a turn → a `model_request_repeated_failure` case;
 * - a failed model request whose error says the context is too long, in a turn with a compaction
 *   (or recovery) marker at or before it in event time → a `context_overflow_after_recovery` case,
 *   whichever of the two arrives first;
 * - a `model_request.ok` marker with `output_empty: true` → the marker is re-diagnosed
 *   `model_empty_reasoning_output`.
 *
 * One failure, one occurrence: a journal case and a detected case of the same kind, fingerprint
 * and turn are the same failure seen twice. Per (turn, kind, fingerprint) the processor counts
 * what was reported and what was detected; an item that does not raise the larger of the two is
 * marked `mergedInto` and not counted again by `recurrence`. The same record seen a second time
 * (a receiver feeding two pipelines) changes no count either.
 */
import { concatMap, from, map, of, type ObservableInput, type OperatorFunction } from 'rxjs';
import { isFailure, type AgentEvent, type Diagnosis } from '../../model/event.ts';
import { stableHash } from '../../model/identity.ts';
import { RUNTIME_ERROR_CASE, type RuntimeErrorCase } from '../../model/runtime-error.ts';
import type { StateEntry, StateWrite } from '../../store/state.ts';
import { errorKindDiagnosis } from '../classify/error-kind.ts';
import type { PageItem, WorkPage } from '../page.ts';
import { withState } from '../page.ts';
import { activityOf, argumentKind, detectedCase, isContextLength, modelFailureOf, toolFailureOf, type DetectorKind } from './detectors.ts';

export interface DetectOptions {
  /** N: failures in one turn that make a repeated-failure case. */
  repeatThreshold: number;
  /** The detectors that run. */
  detectors: ReadonlySet<DetectorKind>;
  /** How long a turn's counts are kept after its last write (store clock). */
  turnTtlMs: number;
  /** `detected_by` of the cases it makes: `vigil/<processor id>`. */
  detectedBy: string;
}

/** What the operator reads and writes; a StateClient fits, tests answer in virtual time. */
export interface DetectStateView {
  load(keys: readonly string[]): ObservableInput<Map<string, StateEntry>>;
  put(key: string, value: unknown, opts: { version: number; ttlMs: number }): StateWrite;
}

/** Bounds of one turn's state (a state value holds at most 64 KiB of JSON). */
export const TURN_BOUNDS = { seen: 256, keys: 64, pending: 8, evidenceChars: 1200 } as const;

/** One turn's counts, as stored. */
export interface TurnState {
  v: 1;
  /** Short hashes of the event ids already counted (the newest TURN_BOUNDS.seen). */
  seen: string[];
  /** Failures per tool and fingerprint. */
  tools: Record<string, number>;
  /** Failed model requests. */
  models: number;
  /** Event time of the earliest compaction or recovery step; null before one. */
  compactedAt: number | null;
  /** Context-length failures with no compaction before them yet. */
  pending: PendingOverflow[];
  /** Error-kind occurrences per kind and fingerprint: [reported by a journal, detected from traces]. */
  kinds: Record<string, [number, number]>;
}

interface PendingOverflow {
  eventId: string;
  time: number;
  evidence: string;
  partition: string;
  service: string;
  revision?: string;
  traceId?: string;
  spanId?: string;
  turnId?: string;
  source: AgentEvent['source'];
}

export function detect(opts: DetectOptions, state: DetectStateView): OperatorFunction<WorkPage, WorkPage> {
  return concatMap((page) => {
    // A timer page (no items) passes through as it is.
    if (page.items.length === 0) return of(page);
    const keys = [...new Set(page.items.map((i) => turnOf(i.entry.event)).filter((t): t is string => t !== undefined))].map(stateKey);
    if (keys.length === 0) return of(page);
    return from(state.load(keys)).pipe(map((stored) => detectPage(page, opts, stored, state)));
  });
}

export function stateKey(turn: string): string {
  return `turn:${turn}`;
}

/** The turn a record counts in: its trace, else the runtime's turn id. */
export function turnOf(event: AgentEvent): string | undefined {
  return event.traceId ?? event.turnId;
}

/** Runs the detectors over one page with the stored turn states; returns the page with its items and state writes. */
export function detectPage(page: WorkPage, opts: DetectOptions, stored: Map<string, StateEntry>, state: Pick<DetectStateView, 'put'>): WorkPage {
  const turns = new Map<string, { value: TurnState; version: number; changed: boolean }>();
  const turnState = (turn: string) => {
    let t = turns.get(turn);
    if (!t) {
      const entry = stored.get(stateKey(turn));
      t = { value: readTurn(entry?.value), version: entry?.version ?? 0, changed: false };
      turns.set(turn, t);
    }
    return t;
  };
  const on = (k: DetectorKind) => opts.detectors.has(k);
  const items: PageItem[] = [];

  for (const item of page.items) {
    const event = item.entry.event;
    const turn = turnOf(event);
    const d = item.diagnosis;
    const tool = d && isFailure(d) && !d.errorKind ? toolFailureOf(event) : undefined;
    const model = d && isFailure(d) && !d.errorKind && !tool ? modelFailureOf(event) : undefined;
    const marker = activityOf(event);
    const activity =
      marker && (marker.activity === 'compaction' || (marker.activity === 'model_request.ok' && marker.fields.output_empty === true)) ? marker : undefined;
    // Only these records take part; the rest pass without touching the turn's state.
    if (turn === undefined || !(d?.errorKind || tool || model || activity)) {
      items.push(item);
      continue;
    }
    const t = turnState(turn);
    const T = t.value;
    const first = remember(T, event.eventId);
    if (first) t.changed = true;
    const added: PageItem[] = [];
    let current = item;
    /** Counts an error-kind item for the journal/trace match; marks it merged when the other side already counted it. */
    const account = (it: PageItem): PageItem => {
      const k = it.diagnosis!.errorKind!;
      if (!first) return { ...it, mergedInto: `${turn}/${k.kind}` };
      const key = `${k.kind}\u0000${it.diagnosis!.fingerprint ?? ''}`;
      const counts = T.kinds[key] ?? (boundedKeys(T.kinds) ? [0, 0] : undefined);
      if (!counts) return it;
      const side = k.origin === 'reported' ? 0 : 1;
      counts[side]++;
      T.kinds[key] = counts;
      return counts[side] <= counts[1 - side] ? { ...it, mergedInto: `${turn}/${k.kind}` } : it;
    };
    const synthesize = (kind: DetectorKind, trigger: AgentEvent, evidence: string, extra: { retryCount?: number; toolCall?: string } = {}) => {
      const c = detectedCase({ kind, caseId: `${trigger.eventId}#${kind}`, turn, time: trigger.time, detectedBy: opts.detectedBy, evidence, ...extra });
      added.push(account({ entry: { id: item.entry.id, event: caseEventOf(c, trigger) }, diagnosis: errorKindDiagnosis(c, 'detected') }));
    };

    if (d?.errorKind) {
      current = account(item);
    } else if (tool) {
      const argKind = argumentKind(tool);
      if (argKind && on(argKind)) {
        const c = detectedCase({
          kind: argKind,
          caseId: `${event.eventId}#${argKind}`,
          turn,
          time: event.time,
          detectedBy: opts.detectedBy,
          evidence: tool.message,
          toolCall: tool.tool,
        });
        current = account({ ...item, diagnosis: withExcerpt(errorKindDiagnosis(c, 'detected'), d) });
      }
      if (first && on('repeated_identical_tool_error')) {
        const key = `${tool.tool}\u0000${d!.fingerprint ?? d!.signature ?? ''}`;
        if (T.tools[key] !== undefined || boundedKeys(T.tools)) {
          T.tools[key] = (T.tools[key] ?? 0) + 1;
          if (T.tools[key] === opts.repeatThreshold) {
            synthesize('repeated_identical_tool_error', event, tool.message, { retryCount: opts.repeatThreshold - 1, toolCall: tool.tool });
          }
        }
      }
    } else if (model) {
      if (first && on('model_request_repeated_failure')) {
        T.models++;
        if (T.models === opts.repeatThreshold) synthesize('model_request_repeated_failure', event, model.message, { retryCount: opts.repeatThreshold - 1 });
      }
      if (first && on('context_overflow_after_recovery') && isContextLength(`${model.message}\n${event.evidence?.errorType ?? ''}`)) {
        if (T.compactedAt !== null && T.compactedAt <= event.time) synthesize('context_overflow_after_recovery', event, model.message);
        else if (T.pending.length < TURN_BOUNDS.pending) T.pending.push(pendingOf(event, model.message));
      }
    } else if (activity?.activity === 'compaction') {
      if (first) {
        T.compactedAt = T.compactedAt === null ? event.time : Math.min(T.compactedAt, event.time);
        const due = T.pending.filter((p) => p.time >= event.time);
        T.pending = T.pending.filter((p) => p.time < event.time);
        for (const p of due) synthesize('context_overflow_after_recovery', triggerOf(p), p.evidence);
      }
    } else if (activity?.activity === 'model_request.ok' && on('model_empty_reasoning_output')) {
      const c = detectedCase({
        kind: 'model_empty_reasoning_output',
        caseId: `${event.eventId}#model_empty_reasoning_output`,
        turn,
        time: event.time,
        detectedBy: opts.detectedBy,
        evidence: emptyOutputEvidence(activity.fields),
      });
      current = account({ ...item, diagnosis: errorKindDiagnosis(c, 'detected') });
    }
    items.push(current, ...added);
  }

  const writes = [...turns].filter(([, t]) => t.changed).map(([turn, t]) => state.put(stateKey(turn), t.value, { version: t.version + 1, ttlMs: opts.turnTtlMs }));
  return withState({ ...page, items }, writes);
}

/** A detected case as an event of the ingest log's shape, in the context of the record that revealed it. */
function caseEventOf(c: RuntimeErrorCase, trigger: AgentEvent): AgentEvent {
  const e: AgentEvent = {
    eventId: c.case_id,
    kind: RUNTIME_ERROR_CASE,
    payload: c,
    partition: trigger.partition,
    time: c.occurred_at_ms,
    service: trigger.service,
    operation: c.error_kind,
    source: trigger.source,
  };
  for (const k of ['revision', 'traceId', 'spanId', 'turnId'] as const) if (trigger[k] !== undefined) e[k] = trigger[k];
  return e;
}

/** A re-diagnosed failure keeps the excerpt of its own record (the stack, the full error) when it has one. */
function withExcerpt(d: Diagnosis, original: Diagnosis | undefined): Diagnosis {
  return original?.excerpt ? { ...d, excerpt: original.excerpt } : d;
}

function emptyOutputEvidence(fields: Record<string, unknown>): string {
  const who = [fields.provider, fields.model].filter((v): v is string => typeof v === 'string' && v !== '').join(' ');
  const reasons = Array.isArray(fields.finish_reasons) ? fields.finish_reasons.filter((r): r is string => typeof r === 'string') : [];
  return `empty model output${who ? ` from ${who}` : ''}${reasons.length ? ` (finish reasons: ${reasons.join(', ')})` : ''}`;
}

function pendingOf(event: AgentEvent, message: string): PendingOverflow {
  const p: PendingOverflow = {
    eventId: event.eventId,
    time: event.time,
    evidence: message.slice(0, TURN_BOUNDS.evidenceChars),
    partition: event.partition,
    service: event.service,
    source: event.source,
  };
  for (const k of ['revision', 'traceId', 'spanId', 'turnId'] as const) if (event[k] !== undefined) p[k] = event[k];
  return p;
}

function triggerOf(p: PendingOverflow): AgentEvent {
  const e: AgentEvent = { eventId: p.eventId, kind: 'execution.completed', payload: {}, partition: p.partition, time: p.time, service: p.service, source: p.source };
  for (const k of ['revision', 'traceId', 'spanId', 'turnId'] as const) if (p[k] !== undefined) e[k] = p[k];
  return e;
}

/** Records an event id as counted in the turn; false when it already was. */
function remember(T: TurnState, eventId: string): boolean {
  const h = stableHash(['detect-seen', eventId], 12);
  if (T.seen.includes(h)) return false;
  T.seen.push(h);
  if (T.seen.length > TURN_BOUNDS.seen) T.seen.splice(0, T.seen.length - TURN_BOUNDS.seen);
  return true;
}

/** Whether a map of the turn state may take one more key. */
function boundedKeys(m: Record<string, unknown>): boolean {
  return Object.keys(m).length < TURN_BOUNDS.keys;
}

function readTurn(v: unknown): TurnState {
  const o = (typeof v === 'object' && v !== null ? v : {}) as Partial<TurnState>;
  return {
    v: 1,
    seen: Array.isArray(o.seen) ? o.seen.filter((x): x is string => typeof x === 'string') : [],
    tools: isRecord(o.tools) ? { ...o.tools } : {},
    models: typeof o.models === 'number' ? o.models : 0,
    compactedAt: typeof o.compactedAt === 'number' ? o.compactedAt : null,
    pending: Array.isArray(o.pending) ? o.pending.slice(0, TURN_BOUNDS.pending) : [],
    kinds: isRecord(o.kinds) ? Object.fromEntries(Object.entries(o.kinds).map(([k, c]) => [k, [...(c as [number, number])] as [number, number]])) : {},
  };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
