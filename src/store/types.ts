import type { HistogramSnapshot } from '../internal/histogram.ts';
import type { AgentEvent } from '../model/event.ts';
import type { DeadLetter, GroupState, OutboxEntry, OutboxItem } from '../model/work.ts';
import type { DueTimers, NamespaceStatus, StateEntry, StateListEntry, StateWrite, TimerChanges, TimerStatus } from './state.ts';

/** readAfter's `after` for the entries right after the partition cursor (entry ids are sequence numbers from 1). */
export const FROM_CURSOR = '0';

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
   * `null` for a commit that reads no log entries (a timer page): the partition's log and cursor
   * are left as they are.
   */
  cursor: string | null;
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
  /** Processor state written with the page (see state.ts): versioned, namespaced, all or nothing with the rest. */
  state?: StateWrite[];
  /** Durable timers set and cleared with the page (see state.ts). */
  timers?: TimerChanges;
  /**
   * Records appended to ingest logs (any pipeline, any partition) with the commit, with the
   * event-id dedupe of `append`: how a page of one log hands records on to others (the correlation
   * log releasing records to their pipelines). In the same atomic step on memory and SQLite; on
   * Redis just before the commit (other slots), so a refused or lost commit leaves them appended —
   * committing again appends nothing new (the dedupe drops them).
   */
  appends?: Array<{ pipeline: string; events: AgentEvent[] }>;
}

export interface AppendOptions {
  /**
   * A receiver's state (file offsets, ...) written with the records: in the same atomic step on
   * memory, SQLite and a single Redis node; on Redis Cluster right after the records (another
   * slot), so a crash in between leaves the records appended and the state behind — a consumer
   * that re-reads from the older state appends the same records again, which the event-id dedupe
   * drops. Versioned writes are checked as in a commit (VIGIL_STORE_CONFLICT refuses the append).
   */
  state?: StateWrite[];
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
  /** Pending durable timers of the pipeline. */
  timers: TimerStatus;
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
  /** Processor-state namespaces with their entry counts, by name. */
  state: NamespaceStatus[];
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

  /**
   * Durably appends to the pipeline's ingest log; resolves only once the records are committed.
   * `opts.state`: a receiver's state written with them (see AppendOptions), also when every record
   * was a duplicate or there are none.
   */
  append(pipeline: string, events: AgentEvent[], opts?: AppendOptions): Promise<AppendResult>;
  /** Entries waiting after their partition cursor, summed over partitions. */
  pendingCount(pipeline: string): Promise<number>;
  /** Partitions that have entries after their cursor. */
  backlog(pipeline: string): Promise<PartitionBacklog[]>;
  /** Up to `limit` entries after the partition cursor, in log order. */
  readPage(pipeline: string, partition: string, limit: number): Promise<LogEntry[]>;
  /**
   * Up to `limit` entries after entry `after` (one this store handed out, or FROM_CURSOR), never
   * at or before the cursor, in log order, for a reader that keeps what it read (the correlation
   * runner); unlike readPage it leaves no page base (PageBases), as that reader commits releases
   * that end anywhere in what it kept. Offered only by a store that is its log's one writer
   * (memory; SQLite, under its writer lock), where nothing but appends at the end changes what
   * follows a cursor until that reader commits.
   */
  readAfter?(pipeline: string, partition: string, after: string, limit: number): Promise<LogEntry[]>;
  /**
   * `pipeline`'s log has a reader that keeps what it reads until it commits past it (the
   * correlation runner, through readAfter). A store that keeps appended entries for the pages read
   * after them (the SQLite writer, while a pipeline is behind) keeps none of this log's: the
   * reader keeps its own, and keeping the appended objects too cost the collector more than the
   * parse it saved (README, Performance, round 30).
   */
  readerKeeps?(pipeline: string): void;

  loadGroups(keys: readonly string[]): Promise<Map<string, GroupState>>;
  loadTurns(pipeline: string, turnIds: readonly string[]): Promise<Map<string, number>>;
  lookupRevisions(executionIds: readonly string[]): Promise<Map<string, string>>;
  commit(commit: PageCommit): Promise<void>;
  /**
   * True when every load made after `commit` returns sees the commit applied or refused, its
   * promise then waiting only for the answer: SQLite applies the transaction within the call and
   * waits for the disk; a single Redis node has the commit script written to its one connection
   * within the call, and Redis runs a connection's commands in order. The pipeline runner then runs
   * the next partition's page while the commit is in flight. A store whose commit can land after a
   * later load (Redis Cluster: other nodes, other connections) leaves it unset. Correctness does not
   * rest on it: a page planned on a state a commit then changed is refused by the version checks and
   * processed again; the flag spares that.
   */
  readonly commitVisibleOnSend?: boolean;

  /** Live entries of a state namespace among `keys` (expired ones are absent). */
  loadState(namespace: string, keys: readonly string[]): Promise<Map<string, StateEntry>>;
  /** Up to `limit` live entries of a namespace, newest written first. */
  listState(namespace: string, limit: number): Promise<StateListEntry[]>;
  /** Timers of the pipeline due at `now` (earliest first, at most `limit`) and the next due time after them. */
  dueTimers(pipeline: string, now: number, limit: number): Promise<DueTimers>;

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
   * Shared stores (Redis), which cannot retire cursors themselves: the exporter cursors registered
   * for a pipeline that are not among `keep` (this sidecar's exporters), each with the entries it
   * holds back and how an operator retires it once no sidecar runs that exporter any more.
   */
  foreignExporters?(pipeline: string, keep: readonly string[]): Promise<Array<{ exporter: string; lag: number; retire: string }>>;
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
  /**
   * How long the store's syncs to disk took (seconds), where it makes its writes durable itself
   * (SQLite: each fdatasync of the WAL, which an ack waits for, until the event loop handles its
   * completion); absent where it does not.
   */
  syncDurations?(): HistogramSnapshot;
}
