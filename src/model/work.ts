import type { Classification } from './event.ts';
import type { ErrorKind, Severity } from './runtime-error.ts';

/** Recurrence decisions of DESIGN 3.2. */
export type Decision = 'Reject' | 'BurstCoalesced' | 'BurstThresholdReached' | 'ChronicRecurrence';

/** State of one occurrence group, as the store keeps it. */
export interface GroupState {
  groupKey: string;
  /** Distinct occurrences counted so far. */
  count: number;
  /** Event times (ms) of the first and the latest occurrence. */
  firstSeen: number;
  lastSeen: number;
  lastDecision: Decision;
  /** Work item currently open for the group, if any. */
  openWorkId: string | null;
  /** Incremented each time a work item is created; part of the work id. */
  workGeneration: number;
  /** Optimistic-concurrency version: bumped by every commit that writes the group. */
  version: number;
}

/** Work events about an occurrence group (recurrence). */
export type OccurrenceEventType = 'dev.vigil.work.created' | 'dev.vigil.work.updated';
/** Work events about a failed model request (the watchdog). */
export type ProviderEventType = 'dev.vigil.provider.retry' | 'dev.vigil.provider.report';
export type WorkEventType = OccurrenceEventType | ProviderEventType;

/** CloudEvents 1.0 structured-mode work event (DESIGN 4.2). */
export type WorkEvent = CloudEvent<OccurrenceEventType, WorkEventData> | CloudEvent<ProviderEventType, ProviderEventData>;

export interface CloudEvent<T extends string, D> {
  specversion: '1.0';
  id: string;
  source: string;
  type: T;
  time: string;
  subject: string;
  datacontenttype: 'application/json';
  data: D;
}

/** A work event about an occurrence group (created or updated work). */
export function isOccurrenceEvent(e: WorkEvent): e is CloudEvent<OccurrenceEventType, WorkEventData> {
  return e.type === 'dev.vigil.work.created' || e.type === 'dev.vigil.work.updated';
}

/**
 * The data of a provider event (DESIGN 4.2): `{request_id, partition, category, temporary, hint,
 * error, step, title, retried, trace_id, span_id}` and more (README "Provider watchdog").
 */
export interface ProviderEventData {
  /** `watchdog-retry:<failed run>` or `watchdog-report:<failed run>`: acknowledge by it, idempotently. */
  request_id: string;
  /** The conversation (session). */
  partition: string;
  category: string;
  temporary: boolean;
  hint: string;
  /** The provider's message, one line. */
  error: string;
  /** The last tool call before the failure, else `model request`. */
  step: string;
  /** The conversation's title, `Untitled` when unknown. */
  title: string;
  /** Whether an automatic retry happened before this report. */
  retried: boolean;
  trace_id: string | null;
  span_id: string | null;
  /** The failed run (its trace, prompt or turn id). */
  run: string;
  /** When the request failed (ISO 8601). */
  failed_at: string;
  provider: string | null;
  model: string | null;
  status_code: number | null;
  /** The provider's text as received (bounded). */
  detail: string;
  /** A retry: what to send the agent. */
  prompt?: string;
  /** A report: the line for people. */
  line?: string;
}

export interface WorkEventData {
  work_id: string;
  group_key: string;
  occurrence_id: string;
  classification: Classification;
  decision: Decision;
  signature: string | null;
  fingerprint: string | null;
  count: number;
  first_seen: string;
  last_seen: string;
  partition: string;
  revision: string;
  operation: string | null;
  trace_id: string | null;
  span_id: string | null;
  evidence: {
    kind: string;
    source: string;
    event_id: string;
    excerpt: string | null;
    /**
     * The other records through which the same failure was seen (DESIGN 3.3, one failure, one
     * occurrence): log records written about it, ancestor spans it failed, known when it was
     * counted. Absent when there were none.
     */
    related?: Array<{ event_id: string; source: string; kind: string | null; span_id: string | null; excerpt: string | null }>;
  };
  /** Who the agent acted for (`user.id`, the AI SDK's `ai.telemetry.metadata.userId`), when the record names one. */
  user?: string;
  /** Agent-runtime error kind (DESIGN 3.5), present on error-kind occurrences only. */
  error_kind?: ErrorKind;
  /** The case's severity (the runtime's 0-255, or a level name), with `error_kind`. */
  severity?: Severity;
  /** Who found the case: the runtime's detector, or `vigil/<processor id>`; with `error_kind`. */
  detected_by?: string;
}

/**
 * What a committed page hands to exporters. Work events go to every exporter; forwarded
 * telemetry (received records, enriched with their diagnosis) only to exporters that forward.
 * `id` is stable across redelivery and replay so the receiving side can deduplicate.
 */
export type OutboxItem = WorkOutboxItem | ForwardOutboxItem | OccurrenceOutboxItem;

export interface WorkOutboxItem {
  kind: 'work';
  id: string;
  event: WorkEvent;
}

export interface ForwardOutboxItem {
  kind: 'forward';
  id: string;
  signal: 'traces' | 'logs';
  /** The received record in OTLP/JSON form with its resource and scope, enriched with vigil.* attributes. */
  record: unknown;
}

/**
 * One counted occurrence, for exporters that report every occurrence (otlphttp with
 * `occurrence_spans: all`), not only those that created or updated work.
 */
export interface OccurrenceOutboxItem {
  kind: 'occurrence';
  id: string;
  occurrence: OccurrenceRecord;
}

export interface OccurrenceRecord {
  occurrence_id: string;
  group_key: string;
  work_id: string | null;
  decision: Decision;
  classification: Classification;
  signature: string | null;
  fingerprint: string | null;
  count: number;
  time: string;
  service: string;
  partition: string;
  revision: string;
  operation: string | null;
  trace_id: string | null;
  span_id: string | null;
  suppressed: string | null;
  /** As in work events: present on error-kind occurrences only. */
  error_kind?: ErrorKind;
  severity?: Severity;
  detected_by?: string;
}

/** One entry of a pipeline's outbox; exporters read them in `seq` order from their own cursor. */
export type OutboxEntry = OutboxItem & { seq: number };

/** An outbox entry an exporter gave up on after its retry budget, kept for operators. */
export interface DeadLetter {
  pipeline: string;
  exporter: string;
  entry: OutboxEntry;
  reason: string;
  /** Wall-clock time (ms) it was given up on. */
  time: number;
}

export function isWorkEntry(e: OutboxEntry): e is WorkOutboxItem & { seq: number } {
  return e.kind === 'work';
}
