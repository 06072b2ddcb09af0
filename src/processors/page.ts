import type { AgentEvent, Diagnosis } from '../model/event.ts';
import type { Decision, GroupState, WorkEvent } from '../model/work.ts';
import type { LogEntry, PageCommit } from '../store/types.ts';

/**
 * The unit that flows through a pipeline's processor chain: one page of one partition's ingest
 * log. Each processor adds to it (classify sets diagnoses, recurrence decides and fills the
 * commit); the service commits it atomically at the end of the chain.
 */
export interface WorkPage {
  pipeline: string;
  partition: string;
  items: PageItem[];
  /** What the page will commit; processors fill it in. */
  commit: PageCommit;
}

export interface PageItem {
  entry: LogEntry;
  diagnosis?: Diagnosis;
  occurrence?: Occurrence;
}

export interface Occurrence {
  occurrenceId: string;
  groupKey: string;
  decision: Decision;
  /** Work item this occurrence created or updated, if any. */
  workId: string | null;
  /** Whether max_per_turn kept this occurrence from creating work. */
  suppressed?: 'max_per_turn';
  revision: string;
  /** The operation the occurrence is grouped by: the rule set's (`rules: reference`) or the record's. */
  operation?: string;
  /** The group's count after this occurrence (0 when rejected). */
  count: number;
}

export function newWorkPage(pipeline: string, partition: string, entries: LogEntry[]): WorkPage {
  return {
    pipeline,
    partition,
    items: entries.map((entry) => ({ entry })),
    commit: {
      pipeline,
      partition,
      cursor: entries.length ? entries[entries.length - 1]!.id : '',
      groups: [],
      turns: [],
      revisions: [],
      outbox: [],
      failures: [],
    },
  };
}

export type { AgentEvent, GroupState, WorkEvent };
