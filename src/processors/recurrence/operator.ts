/**
 * The recurrence processor: turns diagnosed failures into occurrences, decides burst versus
 * chronic on event time (DESIGN 3.2), keeps at most one open work item per group and fills the
 * page's commit with group states and work events. Everything it knows about the past comes from
 * the state view passed in; it keeps nothing between pages itself.
 */
import { concatMap, forkJoin, from, map, of, type ObservableInput, type OperatorFunction } from 'rxjs';
import { isEvidenceOnly, isFailure, type AgentEvent, type Diagnosis } from '../../model/event.ts';
import {
  groupKey as makeGroupKey,
  occurrenceId as makeOccurrenceId,
  UNKNOWN_REVISION,
  UNRESOLVED_REVISION,
  workEventId,
  workId as makeWorkId,
} from '../../model/identity.ts';
import {
  isOccurrenceEvent,
  type Decision,
  type GroupState,
  type OutboxItem,
  type OccurrenceEventType,
  type WorkEventData,
  type WorkOutboxItem,
} from '../../model/work.ts';
import { isoTime } from '../../internal/iso-time.ts';
import type { StateEntry, StateWrite } from '../../store/state.ts';
import type { RecentFailure } from '../../store/types.ts';
import { withOccurrence, type Occurrence, type PageItem, type WorkPage } from '../page.ts';
import { actionOf, decide, type RecurrencePolicy } from './decide.ts';
import { COUNTED_MAX_ENTRIES, COUNTED_NAMESPACE, COUNTED_TTL_MS, type CountedOccurrence } from './counted.ts';

export type GroupingScope = 'service' | 'session';

/** What the operator reads from the store; observables so tests can answer in virtual time. */
export interface RecurrenceStateView {
  loadGroups(keys: readonly string[]): ObservableInput<Map<string, GroupState>>;
  loadTurns(pipeline: string, turnIds: readonly string[]): ObservableInput<Map<string, number>>;
  lookupRevisions(executionIds: readonly string[]): ObservableInput<Map<string, string>>;
  /**
   * Occurrences already counted, among `occurrenceIds` (the store's `occurrences` namespace, see
   * counted.ts). Absent: nothing is looked up, every occurrence of a page is counted.
   */
  loadCounted?(occurrenceIds: readonly string[]): ObservableInput<Map<string, StateEntry>>;
}

export interface RecurrenceOptions extends RecurrencePolicy {
  scope: GroupingScope;
}

export interface RecurrenceHooks {
  /**
   * An occurrence whose execution id names no known revision (none in the page, the store or the
   * payload): it is stamped `unresolved_revision`. Called once per execution id and page.
   */
  onUnresolvedRevision?(executionId: string, event: AgentEvent, page: WorkPage): void;
}

export function recurrence(opts: RecurrenceOptions, state: RecurrenceStateView, hooks: RecurrenceHooks = {}): OperatorFunction<WorkPage, WorkPage> {
  return concatMap((page) => {
    // A timer page (no items) passes through as it is: nothing to decide, nothing to read.
    if (page.items.length === 0) return of(page);
    const ids = new Set<string>();
    for (const item of page.items) {
      const id = executionIdOf(item.entry.event);
      if (id !== undefined) ids.add(id);
    }
    const executionIds = [...ids];
    return from(executionIds.length ? state.lookupRevisions(executionIds) : [new Map<string, string>()]).pipe(
      concatMap((storedRevisions) => {
        const { planned, revisions } = planPage(page, opts, storedRevisions, hooks);
        const turnIds = unique(planned.map((p) => p.turnId));
        return forkJoin({
          groups: planned.length ? from(state.loadGroups(unique(planned.map((p) => p.groupKey)))) : from([new Map<string, GroupState>()]),
          turns: planned.length ? from(state.loadTurns(page.pipeline, turnIds)) : from([new Map<string, number>()]),
          counted: planned.length && state.loadCounted ? from(state.loadCounted(unique(planned.map((p) => p.occurrenceId)))) : from([new Map<string, StateEntry>()]),
        }).pipe(map(({ groups, turns, counted }) => applyPage(page, opts, planned, revisions, groups, turns, state.loadCounted ? counted : undefined)));
      }),
    );
  });
}

/** A failure of the page with its identity worked out, before any group state is read. */
interface PlannedOccurrence {
  index: number;
  groupKey: string;
  occurrenceId: string;
  revision: string;
  operation: string | undefined;
  turnId: string;
}

function planPage(
  page: WorkPage,
  opts: RecurrenceOptions,
  storedRevisions: Map<string, string>,
  hooks: RecurrenceHooks,
): { planned: PlannedOccurrence[]; revisions: Array<{ executionId: string; revision: string }> } {
  const earlierRevisions = new Map<string, string>();
  const revisions: Array<{ executionId: string; revision: string }> = [];
  const planned: PlannedOccurrence[] = [];
  const pageTurn = `page:${page.partition}:${page.items[0]?.entry.id ?? ''}`;
  const unresolved = new Set<string>();
  // The seed (`rules: reference`) fills its cache from the whole page before it resolves anything:
  // an `execution.started` later in the same page counts.
  let wholePage: Map<string, string> | undefined;
  // The scope part of the group key, built once per service or session rather than once per failure.
  let scopeOf = '';
  let scope = '';
  for (let index = 0; index < page.items.length; index++) {
    const item = page.items[index]!;
    const event = item.entry.event;
    const execId = executionIdOf(event);
    if (event.kind === 'execution.started') {
      const rev = startedRevision(event);
      if (execId && rev) {
        earlierRevisions.set(execId, rev);
        revisions.push({ executionId: execId, revision: rev });
      }
      continue;
    }
    // A failure another processor acted on (the watchdog's provider failures), or one a processor
    // found to be more evidence of an occurrence already counted (detect), is not counted again.
    if (!item.diagnosis || !isFailure(item.diagnosis) || item.handledBy !== undefined || item.mergedInto !== undefined) continue;
    // Another record of the same failure is counted (DESIGN 3.3, one failure, one occurrence).
    if (isEvidenceOnly(event)) continue;
    const identity = item.diagnosis.identity;
    let revision: string;
    if (identity?.rules === 'reference') {
      wholePage ??= startedRevisions(page);
      revision = referenceRevision(event, execId, wholePage, storedRevisions);
    } else {
      revision = resolveRevision(event, execId, earlierRevisions, storedRevisions);
    }
    if (revision === UNRESOLVED_REVISION && execId && !unresolved.has(execId)) {
      unresolved.add(execId);
      hooks.onUnresolvedRevision?.(execId, event, page);
    }
    // An error kind is the operation (DESIGN 3.5): a journal case and a detected one group together.
    const operation = item.diagnosis.errorKind?.kind ?? identity?.operation ?? event.operation;
    const scopeValue = opts.scope === 'session' ? event.partition : event.service;
    if (scope === '' || scopeValue !== scopeOf) {
      scopeOf = scopeValue;
      scope = opts.scope === 'session' ? `session:${scopeValue}` : `service:${scopeValue}`;
    }
    const groupKey = makeGroupKey({
      scope,
      operation,
      revision,
      fingerprint: item.diagnosis.fingerprint ?? item.diagnosis.signature!,
      // Undefined is no workspace (groupKey tests for it), without a spread per failure.
      workspace: identity?.workspace,
    });
    planned.push({
      index,
      groupKey,
      occurrenceId: makeOccurrenceId(groupKey, event.eventId),
      revision,
      operation,
      turnId: event.turnId ?? pageTurn,
    });
  }
  return { planned, revisions };
}

function startedRevision(event: AgentEvent): string | undefined {
  return stringField(event.payload, 'revision') ?? event.revision;
}

/** Execution id → revision of every `execution.started` of the page (a later one overrides). */
function startedRevisions(page: WorkPage): Map<string, string> {
  const map = new Map<string, string>();
  for (const item of page.items) {
    const event = item.entry.event;
    if (event.kind !== 'execution.started') continue;
    const execId = executionIdOf(event);
    const rev = startedRevision(event);
    if (execId && rev) map.set(execId, rev);
  }
  return map;
}

/**
 * DESIGN 3.3 (`rules: vigil`): an earlier `execution.started` of the same partition, then the
 * store, then the payload, then the resource's `service.version`. With an execution id but no
 * revision found the occurrence is stamped `unresolved_revision` — never with vigil's own version.
 */
function resolveRevision(event: AgentEvent, execId: string | undefined, pageRevisions: Map<string, string>, storedRevisions: Map<string, string>): string {
  if (execId) {
    const known = pageRevisions.get(execId) ?? storedRevisions.get(execId);
    if (known) return known;
  }
  const own = stringField(event.payload, 'revision') ?? event.revision;
  if (own) return own;
  return execId ? UNRESOLVED_REVISION : UNKNOWN_REVISION;
}

/**
 * The seed's order (`rules: reference`): the page's `execution.started` records (the whole page),
 * then the store, then `payload.revision`; then `unresolved_revision` when there is an execution
 * id; else the configured fallback — the record's or its resource's revision (`vigil.revision`,
 * `service.version`), else `unknown`.
 */
function referenceRevision(event: AgentEvent, execId: string | undefined, pageRevisions: Map<string, string>, storedRevisions: Map<string, string>): string {
  if (execId) {
    const known = pageRevisions.get(execId) ?? storedRevisions.get(execId);
    if (known) return known;
  }
  const own = stringField(event.payload, 'revision');
  if (own) return own;
  if (execId) return UNRESOLVED_REVISION;
  return event.revision || UNKNOWN_REVISION;
}

function applyPage(
  page: WorkPage,
  opts: RecurrenceOptions,
  planned: PlannedOccurrence[],
  revisions: Array<{ executionId: string; revision: string }>,
  stored: Map<string, GroupState>,
  storedTurns: Map<string, number>,
  /** Occurrences counted before, among the page's; undefined: counted occurrences are not kept (no `loadCounted`). */
  counted: Map<string, StateEntry> | undefined,
): WorkPage {
  const items: PageItem[] = page.items.slice();
  /** Occurrences counted before (by another pipeline, or a repeated record), and those counted by this page. */
  const countedBefore = new Map<string, { entry: CountedOccurrence; version: number }>();
  for (const [id, e] of counted ?? []) countedBefore.set(id, { entry: e.value as CountedOccurrence, version: e.version });
  const countedNow = new Set<string>();
  const ledger: StateWrite[] = [];
  const replayed: OutboxItem[] = [];
  const groups = new Map<string, GroupState>();
  const turnsCreated = new Map<string, number>();
  /** Groups updated while their work item was open, with the occurrence that updated them last. */
  const updated = new Map<string, PlannedOccurrence>();
  const outbox: OutboxItem[] = [];
  const failures: RecentFailure[] = [];

  for (const p of planned) {
    const item = items[p.index]!;
    const event = item.entry.event;
    const before = countedBefore.get(p.occurrenceId);
    if (before || countedNow.has(p.occurrenceId)) {
      // Counted already: the same record reached this page twice, or another pipeline counted it
      // (two pipelines take the same receiver). It is not counted again; a pipeline that has not
      // delivered its work events yet delivers the same events (same ids, same content).
      if (before) {
        const c = before.entry;
        items[p.index] = withOccurrence(item, occurrenceOf(p, c.d, c.w, c.c, c.s));
        if (!c.p.includes(page.pipeline)) {
          for (const e of c.e)
            replayed.push(
              workEvent(e.type === 'c' ? 'dev.vigil.work.created' : 'dev.vigil.work.updated', items[p.index]!, p, snapshotGroup(p.groupKey, c.w!, e), e.d),
            );
          ledger.push(countedWrite(p.occurrenceId, { ...c, p: [...c.p, page.pipeline] }, before.version + 1));
        }
      }
      continue;
    }
    countedNow.add(p.occurrenceId);
    const previous = groups.get(p.groupKey) ?? stored.get(p.groupKey);
    const total = (previous?.count ?? 0) + 1;
    const decision = decide(opts, total, previous?.lastSeen, event.time);
    const action = actionOf(decision);
    if (action === 'reject') {
      items[p.index] = withOccurrence(item, { occurrenceId: p.occurrenceId, groupKey: p.groupKey, decision, workId: null, revision: p.revision, count: 0 });
      continue;
    }
    const next: GroupState = {
      groupKey: p.groupKey,
      count: total,
      firstSeen: previous ? Math.min(previous.firstSeen, event.time) : event.time,
      lastSeen: previous ? Math.max(previous.lastSeen, event.time) : event.time,
      lastDecision: decision,
      openWorkId: previous?.openWorkId ?? null,
      workGeneration: previous?.workGeneration ?? 0,
      version: (stored.get(p.groupKey)?.version ?? 0) + 1,
    };
    let workId: string | null = next.openWorkId;
    let suppressed: 'max_per_turn' | undefined;
    if (next.openWorkId) {
      updated.set(p.groupKey, p);
    } else if (action === 'create_work') {
      const createdInTurn = (storedTurns.get(p.turnId) ?? 0) + (turnsCreated.get(p.turnId) ?? 0);
      if (createdInTurn >= opts.maxPerTurn) {
        suppressed = 'max_per_turn';
      } else {
        next.workGeneration += 1;
        next.openWorkId = workId = makeWorkId(p.groupKey, next.workGeneration);
        turnsCreated.set(p.turnId, (turnsCreated.get(p.turnId) ?? 0) + 1);
        outbox.push(workEvent('dev.vigil.work.created', item, p, next, decision));
        updated.delete(p.groupKey);
      }
    }
    groups.set(p.groupKey, next);
    items[p.index] = withOccurrence(item, occurrenceOf(p, decision, workId, total, suppressed));
    failures.push({
      time: event.time,
      partition: event.partition,
      groupKey: p.groupKey,
      occurrenceId: p.occurrenceId,
      signature: item.diagnosis!.signature!,
      decision,
    });
  }

  // One work.updated per group per page, carrying the state after the page.
  for (const [key, p] of updated) {
    const item = items[p.index]!;
    outbox.push(workEvent('dev.vigil.work.updated', item, p, groups.get(key)!, item.occurrence!.decision));
  }

  // What each occurrence counted here produced, so that a pipeline seeing it later counts it not
  // again and delivers the same events (only where counted occurrences are kept).
  const emitted = new Map<string, CountedOccurrence['e']>();
  for (const o of counted ? outbox : []) {
    if (o.kind !== 'work' || !isOccurrenceEvent(o.event)) continue;
    const d = o.event.data;
    const list = emitted.get(d.occurrence_id) ?? [];
    list.push({ type: o.event.type === 'dev.vigil.work.created' ? 'c' : 'u', d: d.decision, c: d.count, f: Date.parse(d.first_seen), l: Date.parse(d.last_seen) });
    emitted.set(d.occurrence_id, list);
  }
  // Looked up by id, not searched for: a page holds hundreds of occurrences.
  const byOccurrence = new Map<string, Occurrence>();
  if (counted) for (const i of items) if (i.occurrence && !byOccurrence.has(i.occurrence.occurrenceId)) byOccurrence.set(i.occurrence.occurrenceId, i.occurrence);
  for (const id of counted ? countedNow : []) {
    const o = byOccurrence.get(id)!;
    ledger.push(
      countedWrite(id, { p: [page.pipeline], d: o.decision, w: o.workId, c: o.count, ...(o.suppressed ? { s: o.suppressed } : {}), e: emitted.get(id) ?? [] }, 1),
    );
  }
  outbox.push(...replayed);

  return {
    ...page,
    items,
    commit: {
      ...page.commit,
      groups: [...groups.values()],
      turns: [...turnsCreated].map(([turnId, created]) => ({ turnId, created })),
      revisions: [...page.commit.revisions, ...revisions],
      failures: [...page.commit.failures, ...failures],
      outbox: [...page.commit.outbox, ...outbox],
      ...(ledger.length ? { state: [...(page.commit.state ?? []), ...ledger] } : {}),
    },
  };
}

function countedWrite(occurrenceId: string, value: CountedOccurrence, version: number): StateWrite {
  return { namespace: COUNTED_NAMESPACE, key: occurrenceId, value, version, ttlMs: COUNTED_TTL_MS, maxEntries: COUNTED_MAX_ENTRIES };
}

/** The group as a recorded work event saw it. */
function snapshotGroup(groupKey: string, workId: string, e: CountedOccurrence['e'][number]): GroupState {
  return { groupKey, count: e.c, firstSeen: e.f, lastSeen: e.l, lastDecision: e.d, openWorkId: workId, workGeneration: 0, version: 0 };
}

const EXCERPT_MAX = 2000;

function workEvent(type: OccurrenceEventType, item: PageItem, p: PlannedOccurrence, group: GroupState, decision: Decision): WorkOutboxItem {
  const event = item.entry.event;
  const d = item.diagnosis!;
  const id = workEventId(type, group.openWorkId!, p.occurrenceId);
  // The group's last sighting is mostly this very event: its time is formatted once.
  const time = isoTime(event.time);
  // Built as literals with the optional keys added in their place, not spread in (`...(x ? {..} :
  // {})`): a spread in a literal copies through the runtime and gives the object a map of its own,
  // for every work event (most failures of a page make one). The keys keep their order.
  const evidence: WorkEventData['evidence'] = {
    kind: event.kind,
    source: event.source,
    event_id: event.eventId,
    excerpt: d.excerpt ? d.excerpt.slice(0, EXCERPT_MAX) : null,
  };
  const related = relatedOf(event);
  if (related) evidence.related = related;
  const first_seen = group.firstSeen === event.time ? time : isoTime(group.firstSeen);
  const last_seen = group.lastSeen === event.time ? time : isoTime(group.lastSeen);
  // `user` and `evidence` are added after the literal, in that order (the keys' order is the work
  // event's): added properties take V8's shared transitions, where a spread gives a map of its own.
  const data = {
    work_id: group.openWorkId!,
    group_key: p.groupKey,
    occurrence_id: p.occurrenceId,
    classification: d.classification,
    decision,
    signature: d.signature,
    fingerprint: d.fingerprint,
    count: group.count,
    first_seen,
    last_seen,
    partition: event.partition,
    revision: p.revision,
    operation: p.operation ?? null,
    trace_id: event.traceId ?? null,
    span_id: event.spanId ?? null,
  } as WorkEventData;
  if (event.user !== undefined) data.user = event.user;
  data.evidence = evidence;
  const k = d.errorKind;
  if (k) {
    data.error_kind = k.kind;
    data.severity = k.severity;
    data.detected_by = k.detectedBy;
  }
  return {
    kind: 'work',
    id,
    event: {
      specversion: '1.0',
      id,
      source: sourceOf(event.service),
      type,
      time,
      subject: p.groupKey,
      datacontenttype: 'application/json',
      data,
    },
  };
}

/** `vigil/<service>`, the work events' source: the last one built is reused (a page's failures mostly share a service). */
let lastService: string | undefined;
let lastSource = '';
function sourceOf(service: string): string {
  if (service !== lastService) {
    lastService = service;
    lastSource = `vigil/${service}`;
  }
  return lastSource;
}

/** The other records of the failure (DESIGN 3.3), as the work event lists them; undefined when there are none. */
function relatedOf(event: AgentEvent): WorkEventData['evidence']['related'] {
  const related = event.correlation?.related;
  if (!related?.length) return undefined;
  return related.map((r) => ({ event_id: r.eventId, source: r.source, kind: r.kind ?? null, span_id: r.spanId ?? null, excerpt: r.excerpt ?? null }));
}

/** `error_kind`, `severity` and `detected_by` of an error-kind occurrence (DESIGN 4.2); nothing for other failures. */
export function errorKindFields(d: Diagnosis): Pick<WorkEventData, 'error_kind' | 'severity' | 'detected_by'> {
  const k = d.errorKind;
  return k ? { error_kind: k.kind, severity: k.severity, detected_by: k.detectedBy } : {};
}

/**
 * An item's occurrence, built without spreads (one per failure); the keys keep their order
 * (`operation` and `suppressed` only when set).
 */
function occurrenceOf(p: PlannedOccurrence, decision: Decision, workId: string | null, count: number, suppressed: 'max_per_turn' | undefined): Occurrence {
  const o: Occurrence =
    p.operation !== undefined
      ? { occurrenceId: p.occurrenceId, groupKey: p.groupKey, decision, workId, revision: p.revision, operation: p.operation, count }
      : { occurrenceId: p.occurrenceId, groupKey: p.groupKey, decision, workId, revision: p.revision, count };
  if (suppressed) o.suppressed = suppressed;
  return o;
}

export function executionIdOf(event: AgentEvent): string | undefined {
  return event.executionId ?? stringField(event.payload, 'execution_id');
}

function stringField(obj: Record<string, unknown>, key: string): string | undefined {
  const v = obj[key];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function unique<T>(xs: T[]): T[] {
  return [...new Set(xs)];
}
