import type { Classification } from './event.ts';

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

export type WorkEventType =
  | 'dev.vigil.work.created'
  | 'dev.vigil.work.updated'
  | 'dev.vigil.provider.retry'
  | 'dev.vigil.provider.report';

/** CloudEvents 1.0 structured-mode work event (DESIGN 4.2). */
export interface WorkEvent {
  specversion: '1.0';
  id: string;
  source: string;
  type: WorkEventType;
  time: string;
  subject: string;
  datacontenttype: 'application/json';
  data: WorkEventData;
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
  };
}

/** One entry of a pipeline's outbox; exporters read them in `seq` order from their own cursor. */
export interface OutboxEntry {
  seq: number;
  /** Stable id: the work event's id, so redelivery can be deduplicated downstream. */
  id: string;
  event: WorkEvent;
}
