/**
 * The reference event: what receivers append to the ingest log and what the processor chain reads.
 * It keeps the reference runtimes' shape (`kind` + `payload`, DESIGN 3.1) and adds the identity and
 * context vigil needs (event id, partition, event time, causal span).
 */
export interface AgentEvent {
  /** Stable identity of the source record (DESIGN 3.3): a redelivered record has the same id. */
  eventId: string;
  /** Reference kind: `execution.completed`, `execution.started`, `tool.result`, `scratchpad`, ... */
  kind: string;
  /** Reference payload, as the agent runtimes write it. */
  payload: Record<string, unknown>;
  /** The session the record belongs to; the ingest log is ordered per partition. */
  partition: string;
  /**
   * Event time in milliseconds since the epoch: the record's own timestamp. Only a record that has
   * none gets the receiver's clock, and `clockTime`.
   */
  time: number;
  /** `time` is the receiver's clock (the record had no timestamp): the dedupe knows the record by its id alone (dedupeTime). */
  clockTime?: true;
  /** The observed service (`service.name`), the default grouping scope. */
  service: string;
  /** Revision of the observed code, when the record or its resource names one. */
  revision?: string;
  /** Id of the originating execution, used to resolve the revision (DESIGN 3.3). */
  executionId?: string;
  /** What was being done: span name, tool name, event name. Part of the group key. */
  operation?: string;
  /** Causal reference: the span (or the span a log record was emitted in). */
  traceId?: string;
  spanId?: string;
  /** The parent of the span (spans only): how the records of one failure are related (DESIGN 3.3). */
  parentSpanId?: string;
  /**
   * The record names no session and belongs to a trace: `partition` is only its fallback
   * (`service.instance.id`, else `default`) until its trace's session is known. Cleared when the
   * correlation step has decided the partition (src/service/correlation/).
   */
  awaitsSession?: true;
  /** Who the agent acted for (`user.id`, `enduser.id`, the AI SDK's `ai.telemetry.metadata.userId`). */
  user?: string;
  /** Set while the record waits in the correlation log: where it goes and when it arrived. */
  route?: EventRoute;
  /** How the record relates to the other records of the same failure; set by the correlation step. */
  correlation?: Correlation;
  /** The agent turn this record belongs to (max_per_turn); absent → the page is the turn. */
  turnId?: string;
  /** Where it came from, for operators reading status and evidence. */
  source: EventSource;
  /**
   * Pre-diagnosed failure evidence from structured telemetry (OpenTelemetry `exception.*`,
   * `error.type`), kept beside the reference payload so classifiers can use it.
   */
  evidence?: Evidence;
  /**
   * The received record itself, kept when a pipeline forwards telemetry downstream (an
   * `otlphttp` exporter with `forward: true`).
   */
  forward?: ForwardRecord;
  /**
   * True for records kept only to be forwarded (successful spans, empty logs): pipelines that do
   * not forward never store them, so their write rate follows the failure rate.
   */
  forwardOnly?: boolean;
}

import type { ForwardRecord } from './forward.ts';
import type { ErrorKind, Severity } from './runtime-error.ts';

/** Where a record waiting in the correlation log goes once its session and failure are decided. */
export interface EventRoute {
  /** The pipelines that take it. */
  pipelines: string[];
  /** When vigil received it (ms since the epoch, vigil's clock): its waits count from here. */
  receivedAt: number;
  /** Its partition: its own session, or its fallback while it `awaitsSession`. */
  partition: string;
}

/**
 * One failure seen through several records (a failed span, its failed ancestors, log records
 * written inside or about it) is one occurrence (DESIGN 3.3). Each record of a trace's failure
 * carries the event id of the most telling record (`anchor`, the failure's name) and of the
 * record that is counted (`counted`: the anchor, unless the anchor goes to no pipeline that
 * counts occurrences — then each such record counts for itself). A record whose `counted` is
 * another record's id is evidence only: it is never counted, and stateful processors (the
 * watchdog) take the `anchor` as the one failed run.
 */
export interface Correlation {
  anchor: string;
  counted: string;
  /** On the counted record: the other records of the failure known when it was released. */
  related?: RelatedRecord[];
}

export interface RelatedRecord {
  eventId: string;
  source: EventSource;
  /** Its reference kind, when it was released with the record that lists it. */
  kind?: string;
  spanId?: string;
  /** A bounded excerpt of the record's failure text. */
  excerpt?: string;
}

/** Whether the record only adds evidence to a failure another record counts. */
export function isEvidenceOnly(event: AgentEvent): boolean {
  return event.correlation !== undefined && event.correlation.counted !== event.eventId;
}

export type EventSource = 'otlp.logs' | 'otlp.traces' | 'jsonl' | 'journal';

export interface Evidence {
  exceptionType?: string;
  exceptionMessage?: string;
  stacktrace?: string;
  errorType?: string;
  statusMessage?: string;
  severityNumber?: number;
  severityText?: string;
}

/** The six diagnostic classes of DESIGN 3.1. */
export const CLASSIFICATIONS = ['ExecutionFailure', 'RecoveredError', 'StderrWarning', 'SkippedPeerCall', 'Uncertain', 'NormalOutput'] as const;
export type Classification = (typeof CLASSIFICATIONS)[number];

export interface Diagnosis {
  classification: Classification;
  /** Human-readable name of the failure; null when there is none. */
  signature: string | null;
  /** Identity of the failure: the signature with volatile parts masked; null when no signature. */
  fingerprint: string | null;
  /** Reason kept for SkippedPeerCall. */
  reason?: string;
  /** A bounded excerpt of the text the diagnosis was made from. */
  excerpt?: string;
  /**
   * Set by `rules: reference` on failures: the seed's own identity rules apply to the occurrence —
   * its operation (`cell.execution` / `tool.execution`) and workspace are part of the group key,
   * and its revision is resolved as the seed resolves it (see the recurrence processor).
   */
  identity?: ReferenceIdentity;
  /**
   * Set when the failure is one of the agent-runtime error kinds (DESIGN 3.5): a journal case, or
   * a case vigil's detectors derived from traces. The kind is the occurrence's operation; kind and
   * severity travel into work events and occurrence spans.
   */
  errorKind?: ErrorKindDiagnosis;
}

/** The error-kind part of a diagnosis. */
export interface ErrorKindDiagnosis {
  kind: ErrorKind;
  severity: Severity;
  /** The case's `detected_by`: the runtime's detector, or `vigil/<processor id>` for vigil's own. */
  detectedBy: string;
  /** `reported` by the runtime (a journal case), or `detected` by vigil from traces. */
  origin: 'reported' | 'detected';
}

/** How the seed names a failure's operation and workspace (DESIGN 3.1 / 3.3, `rules: reference`). */
export interface ReferenceIdentity {
  rules: 'reference';
  operation: string;
  workspace?: string;
}

/** Classes whose events become occurrences (they name a failure that happened). */
export function isFailure(d: Diagnosis): boolean {
  return (d.classification === 'ExecutionFailure' || d.classification === 'RecoveredError') && !!d.signature;
}

/**
 * The time a store's dedupe knows a record by, with its event id: its own time (a redelivered
 * record has it again), or 0 for a record that had none (its `time` is a receiver's clock, which a
 * redelivery would not repeat).
 */
export function dedupeTime(e: AgentEvent): number {
  return e.clockTime === true ? 0 : e.time;
}
