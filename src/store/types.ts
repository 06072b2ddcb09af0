import type { AgentEvent } from '../model/event.ts';
import type { DeadLetter, GroupState, OutboxEntry, OutboxItem } from '../model/work.ts';

/** One record of a partition's ingest log. `id` is the store's ordered, opaque sequence. */
export interface LogEntry {
  id: string;
  event: AgentEvent;
}

export interface AppendResult {
  /** Records written to the log. */
  appended: number;
  /** Records whose event id was already seen (redelivery) and were not written again. */
  duplicates: number;
}

export interface PartitionBacklog {
  partition: string;
  /** Entries after the cursor. */
  pending: number;
}

/** Everything one processed page changes, written atomically (DESIGN 1, "the commit"). */
export interface PageCommit {
  pipeline: string;
  partition: string;
  /**
   * Id of the last log entry of the page: the new partition cursor. A store refuses the commit
   * with VIGIL_STORE_CONFLICT when the cursor is not past the stored one, or when (for a page it
   * handed out) the stored cursor moved since the page was read: another writer counted part of it.
   */
  cursor: string;
  /**
   * New group states. Each carries `version = stored version + 1` (0 → 1 for a new group); a store
   * refuses the whole commit with VIGIL_STORE_CONFLICT when a stored version differs, so two
   * sidecars deciding on the same group never both create work.
   */
  groups: GroupState[];
  /** Work items created per turn by this page (max_per_turn spans pages of one trace). */
  turns: Array<{ turnId: string; created: number }>;
  /** Revisions learnt from `execution.started` events, for later resolution. */
  revisions: Array<{ executionId: string; revision: string }>;
  /** Work events and forwarded records to deliver, in order. */
  outbox: OutboxItem[];
  /** Occurrences counted by the page, for the recent-failures list and status. */
  failures: RecentFailure[];
}

export interface RecentFailure {
  time: number;
  partition: string;
  groupKey: string;
  occurrenceId: string;
  signature: string;
  decision: string;
}

export interface PipelineStatus {
  pipeline: string;
  partitions: Array<{ partition: string; cursor: string | null; pending: number }>;
  outbox: { size: number; exporters: Array<{ exporter: string; cursor: number; lag: number }> };
}

/** Dead letters kept per (pipeline, exporter); the oldest are forgotten beyond this. */
export const MAX_DEAD_LETTERS = 10_000;

export interface StoreStatus {
  store: string;
  /** Where the state lives (file path, Redis URL with the password masked), for operators. */
  location?: string;
  pipelines: PipelineStatus[];
  groups: number;
  openWork: number;
  recentFailures: RecentFailure[];
  /** Dead letters per (pipeline, exporter) and the newest few. */
  deadLetters: { total: number; newest: DeadLetter[] };
}

export interface OpenOptions {
  /** Open only to read (status): create nothing, write nothing. */
  readOnly?: boolean;
}

/**
 * The state store interface (DESIGN 2). Every implementation passes the same conformance suite.
 * All methods are async so that networked stores fit; the memory store resolves immediately.
 */
export interface StateStore {
  readonly kind: string;
  /**
   * Opens files or starts connecting; a store that cannot open throws a VigilError naming what
   * failed. A networked store whose server is unreachable still opens: it keeps connecting in the
   * background and its methods throw a transient VIGIL_STORE_UNAVAILABLE until `whenReady`
   * resolves. `readOnly` (for `vigil status`) writes nothing and fails at once when unreachable.
   */
  open(opts?: OpenOptions): Promise<void>;
  close(): Promise<void>;
  /** Resolves once the store serves requests; stores that are usable after `open` omit it. */
  whenReady?(): Promise<void>;
  /** False while a networked store is disconnected (readiness probes say not-ready then). */
  isAvailable?(): boolean;

  /** Durably appends to the pipeline's ingest log; resolves only once the records are committed. */
  append(pipeline: string, events: AgentEvent[]): Promise<AppendResult>;
  /** Entries waiting after their partition cursor, summed over partitions. */
  pendingCount(pipeline: string): Promise<number>;
  /** Partitions that have entries after their cursor. */
  backlog(pipeline: string): Promise<PartitionBacklog[]>;
  /** Up to `limit` entries after the partition cursor, in log order. */
  readPage(pipeline: string, partition: string, limit: number): Promise<LogEntry[]>;

  loadGroups(keys: readonly string[]): Promise<Map<string, GroupState>>;
  loadTurns(pipeline: string, turnIds: readonly string[]): Promise<Map<string, number>>;
  lookupRevisions(executionIds: readonly string[]): Promise<Map<string, string>>;
  commit(commit: PageCommit): Promise<void>;

  /** Outbox entries after the exporter's cursor. */
  readOutbox(pipeline: string, exporter: string, limit: number): Promise<OutboxEntry[]>;
  /**
   * Advances the exporter's cursor to `seq` (inclusive); entries every exporter has passed are
   * trimmed. `dead` entries (given up on) are kept as dead letters in the same atomic step, so an
   * entry is never both skipped and unrecorded.
   */
  ackOutbox(pipeline: string, exporter: string, seq: number, dead?: Array<{ entry: OutboxEntry; reason: string }>): Promise<void>;
  /** Entries waiting for one exporter (after its cursor). Cheap; used to bound each exporter's queue. */
  outboxLag(pipeline: string, exporter: string): Promise<number>;
  /**
   * Single-writer stores: forgets the cursors of a pipeline's exporters that are no longer
   * configured (so they no longer hold back trimming) and returns their ids. Shared stores (Redis)
   * cannot know every sidecar's exporters and omit it.
   */
  retireExporters?(pipeline: string, keep: readonly string[]): Promise<string[]>;
  /**
   * Whether a write of about `bytes` fits now; throws like the failed write when it does not.
   * Readiness uses it to find out when a store that refused appends (disk or memory full) can take
   * data again, without waiting for a client to try.
   */
  probeWrite?(bytes: number): Promise<void>;
  /** Dead letters, newest first; optionally of one pipeline. At most `limit`. */
  listDeadLetters(limit: number, pipeline?: string): Promise<DeadLetter[]>;
  /** Registers an exporter's cursor so the outbox keeps entries until it has read them. */
  registerExporter(pipeline: string, exporter: string): Promise<void>;

  status(): Promise<StoreStatus>;
}
