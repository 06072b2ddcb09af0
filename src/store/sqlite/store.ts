/**
 * The `sqlite` store: the embedded default (DESIGN 2). One file in WAL mode; every page commit is
 * one transaction, and the appends of one turn of the event loop are one transaction (group
 * commit), each fsynced before it resolves (`synchronous: full`), so what a receiver acknowledged
 * survives a crash and a commit is all or nothing. better-sqlite3 is
 * synchronous: each call runs to completion on the event loop, which also makes this process the
 * only writer between two awaits.
 */
import { close as closeFd, fdatasync, mkdirSync, open as openFd, rmSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { VigilError, errorMessage } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import { dedupeTime, type AgentEvent } from '../../model/event.ts';
import type { DeadLetter, GroupState, OutboxEntry, OutboxItem } from '../../model/work.ts';
import { KeyedState, type HeldEntry } from '../keyed-state.ts';
import { PageBases } from '../page-bases.ts';
import { newestFailures, RECENT_FAILURES_MAX } from '../recent-failures.ts';
import {
  decodeTimer,
  encodeStateWrites,
  encodeTimers,
  MAX_TIMERS_PER_PIPELINE,
  parseStored,
  STATE_PURGE_CHUNK,
  stateConflict,
  timerGone,
  timersFull,
  type DueTimers,
  type EncodedNamespace,
  type EncodedTimers,
  type NamespaceStatus,
  type StateEntry,
  type StateListEntry,
} from '../state.ts';
import {
  MAX_DEAD_LETTERS,
  type AppendOptions,
  type AppendResult,
  type LogEntry,
  type OpenOptions,
  type PageCommit,
  type PartitionBacklog,
  type PipelineStatus,
  type RecentFailure,
  type StateStore,
  type StoreStatus,
} from '../types.ts';
import { AppendedEntries, HELD_BYTES, HOLD_FROM_BACKLOG } from './appended-entries.ts';
import { sqliteError } from './errors.ts';
import { Histogram, type HistogramSnapshot } from '../../internal/histogram.ts';
import { CHECK_MS, Checkpointer } from './checkpointer.ts';
import { WalSyncer } from './wal-syncer.ts';
import { acquireWriterLock, type WriterInfo, type WriterLock } from './lock.ts';
import { LogRoom, type RoomStats } from './room.ts';
import { RowInserter, ROW_CHUNKS } from './rows.ts';
import { WriterBacklog } from './backlog.ts';
import { LOG_SLOTS, logSlot, MIGRATIONS, SCHEMA, SCHEMA_VERSION } from './schema.ts';

export interface SqliteStoreConfig {
  path: string;
  synchronous: 'full' | 'normal';
  busy_timeout: number;
  dedupe_window: number;
}

/**
 * Expired dedupe ids, turns and revisions are deleted about once a second, in chunks, for at most
 * PURGE_BUDGET_MS per round: often enough to keep up with the append rate (so the tables stay
 * bounded by `dedupe_window`), briefly enough that an append never waits long for it.
 */
const PURGE_EVERY_MS = 1_000;
const PURGE_CHUNK = 2_000;
const PURGE_BUDGET_MS = 20;
/** Freed pages go back to the file system at most this often. */
const VACUUM_EVERY_MS = 60_000;
/**
 * The WAL is cut back to this size after a checkpoint, so a burst does not leave a large file
 * behind; the checkpoint worker also forces a full checkpoint (RESTART) when the log holds more.
 */
const WAL_SIZE_LIMIT = 64 * 1024 * 1024;
/** SQLite's own default, restored if the checkpoint worker fails. */
const AUTOCHECKPOINT_PAGES = 1000;
/**
 * The page size of a new file (SQLite fixes it when the file's first table is made; a file keeps
 * the size it was made with). 8 KiB, not SQLite's 4 KiB: a request's commits on `bench:ack-phases`
 * write 49 WAL frames instead of 87 (400 KB instead of 356), each frame two system calls on the
 * event loop, and a failed record's row (about 2 KB) no longer takes a 4 KiB page of its own
 * beside a few markers. In six alternating pairs at 80 JSON requests/s the main thread's CPU a
 * request fell in every one, 7.10 → 6.79 ms on average (README, Performance, round 45).
 */
const PAGE_SIZE = 8192;
/** Bytes of free pages returned to the file system per vacuum (incremental auto-vacuum, new databases only). */
const VACUUM_BYTES = 16 * 1024 * 1024;
/**
 * Bytes of free pages returned per step of a vacuum, a transaction of its own in a turn of the
 * event loop (as the trims' steps). All of a vacuum at once held the loop 86–134 ms, the longest
 * stall of a run at half the full rate, once a minute (README, Performance, round 32). In bytes,
 * as 64 pages of 4 KiB were then, so a step of a file with larger pages moves as much.
 */
const VACUUM_STEP_BYTES = 256 * 1024;
/**
 * Processed log entries are deleted every this many page commits, for all partitions committed
 * since, not at each commit. The partitions' entries are interleaved in the log (one sequence), so
 * deleting one page of one partition rewrote nearly a database page per entry; deleting many
 * partitions' entries at once rewrites each page once. Until then the cursor hides them (every
 * read of the log counts and reads only entries after it). The deletes run in transactions of
 * their own, one per turn of the event loop (a trim of 32 commits' entries in one go was among the
 * longest stalls of the loop, about 1,300 database pages), each over a window of TRIM_WINDOW
 * sequence numbers of the log for every partition at once: contiguous database pages, each still
 * rewritten once (deleting one partition at a time rewrote nearly a page per entry, 10 ms of CPU
 * per 1,024 entries where a window of all partitions takes about 1 ms).
 */
const LOG_TRIM_EVERY = 32;
const TRIM_WINDOW = 2048;
/**
 * Schema version 4 keeps the ingest log in LOG_SLOTS segment tables. Appends go to the newest
 * segment until it holds this many entries, then to a new one in an empty table (if none is empty,
 * the newest grows). Every LOG_TRIM_EVERY commits, each older segment whose entries every
 * partition's cursor has passed is emptied whole (`DELETE` without `WHERE`: a handful of page
 * writes, where deleting its entries by ranges wrote about a page per 14 entries). Only when no
 * table is empty (a partition far behind holds the old segments) are processed entries deleted by
 * ranges as before, so the log stays bounded as it was.
 */
const SEGMENT_ROWS = 8192;
/**
 * The group log (schema version 3) is folded into `groups` once it holds this many rows, or once
 * this many page commits have appended to it: often enough that the states kept in memory for it
 * stay small (about FOLD_ROWS, plus the commits made while a fold's steps run), rarely enough that
 * a fold upserts each group once for many of its logged states. The rows bound is the one that
 * counts: a page touches a few hundred groups, and a fold every 16 commits (as this was) upserted
 * nearly every row the log got (16 pages of 20 partitions share few groups), a second write per
 * group per page; at FOLD_ROWS the benchmark's fold upserts a quarter of them, and the main
 * thread's CPU per event fell by a quarter. The commit count only bounds how long a trickle of
 * commits leaves its states in the log.
 */
const FOLD_EVERY = 256;
const FOLD_ROWS = 16_384;
/**
 * A fold runs in steps, one per turn of the event loop, each its own transaction: upserts of at
 * most this many groups (in key order, so each database page of `groups` is still written about
 * once per fold), then deletes of at most four times as many log rows. In one transaction a fold
 * of 16 commits took 10–25 ms of CPU on the loaded 2-core VM, the longest stall after the trims.
 */
const FOLD_KEYS_PER_STEP = 512;

/** Test hooks: fold thresholds (the defaults above otherwise), and the WAL sync (fdatasync in a worker thread of its own otherwise: wal-syncer.ts). */
export interface SqliteStoreTuning {
  foldEvery?: number;
  foldRows?: number;
  /** Groups upserted per fold step (log rows deleted per step: four times as many). */
  foldChunk?: number;
  /** Makes the write-ahead log (open as `fd`) durable; a test delays it to see what waits for it. */
  sync?: (fd: number) => Promise<void>;
  /** Rows per multi-row INSERT (rows.ts; ROW_CHUNKS otherwise): [1] writes a statement per row (the equivalence tests' reference). */
  rowChunks?: readonly number[];
  /** Entries per ingest-log segment before appends move to the next (SEGMENT_ROWS otherwise). */
  segmentRows?: number;
  /** Page commits between two trims of the ingest log (LOG_TRIM_EVERY otherwise). */
  trimEvery?: number;
  /** Length of the JSON of the appended entries kept for pages (appended-entries.ts; HELD_BYTES otherwise): 0 reads every page from the file. */
  heldBytes?: number;
  /** Appended entries kept for pages, at most (HELD_ENTRIES otherwise). */
  heldEntries?: number;
  /** Entries a pipeline has pending from which its appended entries are held (HOLD_FROM_BACKLOG otherwise; 0: always). */
  holdFrom?: number;
}

/** The tables a file's log statements read: the segments and both group logs (version 4), or an older file's single tables (a read-only open). */
interface Layout {
  logs: readonly string[];
  groupLogs: readonly string[];
}
const CURRENT_LAYOUT: Layout = { logs: Array.from({ length: LOG_SLOTS }, (_, n) => logSlot(n)), groupLogs: ['group_log', 'group_log_b'] };
const OLD_LAYOUT: Layout = { logs: ['ingest_log'], groupLogs: ['group_log'] };

const fdatasyncOffLoop = (fd: number) => new Promise<void>((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));

/** An entry an append wrote to the ingest log. */
interface Appended {
  pipeline: string;
  partition: string;
  seq: number;
  event: AgentEvent;
  /** Its JSON's length in the file. */
  bytes: number;
}

/** A group state appended to the group log and not yet folded into `groups`. */
interface LoggedGroup {
  version: number;
  /** Its row in the group log, and whether it has open work. */
  seq: number;
  open: number;
  /** The state as stored (JSON). */
  state: string;
  /**
   * The writer's copy of the state it committed (what parsing `state` gives, for the states the
   * recurrence writes: flat JSON values), handed out as a copy by loadGroups instead of parsing
   * the JSON again: every page loads the groups the previous pages logged.
   */
  group?: GroupState;
}

/**
 * A fold under way: the group log it empties (`log`; commits append to the other meanwhile), the
 * groups to upsert (sorted; their newest state is taken at each step), how many are done, the
 * log's last row, and whether a step failed (taken again from the start at the next fold due).
 */
interface Fold {
  log: number;
  keys: string[];
  done: number;
  upTo: number;
  stalled: boolean;
}

type Db = Database.Database;
type Stmt = Database.Statement;

export class SqliteStore implements StateStore {
  readonly kind = 'sqlite';
  /** better-sqlite3 runs the commit's transaction within the call; the promise waits for the WAL sync (see `commit`). */
  readonly commitVisibleOnSend = true;
  readonly file: string;
  private db: Db | undefined;
  private lock: WriterLock | undefined;
  private q!: ReturnType<typeof prepare>;
  /** Statements over the version-2 tables; absent when a read-only open found an older file. */
  private qs: ReturnType<typeof prepareState> | undefined;
  /**
   * The namespaces kept in memory (StateWrite `cached`; schema version 5), each entry mirrored as a
   * `state_log` row by the writer. A namespace's entries are either all here or all in `state_entries`.
   */
  private held = new KeyedState();
  private qh: ReturnType<typeof prepareHeld> | undefined;
  /**
   * Whether `seen_events` still holds ids an earlier vigil claimed by id alone (before schema
   * version 5): until they expire, an append checks them too.
   */
  private legacySeen = false;
  /** The writer's backlog per pipeline (readers count in the file). */
  private readonly backlogs = new WriterBacklog();
  /** The entries appended and not yet passed, as appended: pages are served from them (appended-entries.ts). */
  private readonly appendedEntries: AppendedEntries | undefined;
  /** Pending entries of a pipeline from which its appended entries are held. */
  private readonly holdFrom: number;
  private lastPurge = 0;
  private lastVacuum = 0;
  /** Free pages the vacuum under way still returns (VACUUM_STEP_BYTES of them a step, in maintain). */
  private vacuumLeft = 0;
  /** The open file's page size (pagesOf), read once. */
  private pageBytes: number | undefined;
  /** Partitions committed since the last log trim (pipeline, partition), and how many commits ago it was. */
  private untrimmed = new Map<string, [string, string]>();
  private commitsSinceTrim = 0;
  /** Partitions whose processed entries the trim under way deletes, step by step. */
  private trimming: Array<[string, string]> = [];
  private trimTurn = false;
  /** Where the trim under way goes on: entries before it are done. */
  private trimFrom = 0;
  /**
   * The fold under way: the groups to upsert (sorted; their newest state is taken at each step),
   * how many are done, and the last log row when it started: once every group is upserted, the
   * log rows up to it go, step by step.
   */
  private folding: Fold | undefined;
  /** The group log commits append to (0 or 1; the other is empty or being folded). */
  private groupLog = 0;
  /**
   * The ingest log's segments (writer only): the tables in use, oldest first (the last takes
   * appends), the entries appended to the last, and the last sequence number given out.
   */
  private segments: number[] = [0];
  private segmentFill = 0;
  private logSeq = 0;
  /** Whether the next maintenance step empties the processed segments (every LOG_TRIM_EVERY commits). */
  private freeing = false;
  private readonly segmentRows: number;
  private readonly trimEvery: number;
  /** The next trim or fold step, scheduled for the next turn of the event loop. */
  private maintenance: NodeJS.Immediate | undefined;
  private readonly bases = new PageBases();
  /** Appends waiting for this turn's group commit, and the scheduled commit. */
  private appends: PendingAppend[] = [];
  private appendTurn: NodeJS.Immediate | undefined;
  /** Group commits whose WAL sync is still running; set once a sync failed (then SQLite syncs on the loop). */
  private readonly syncing = new Set<Promise<void>>();
  private syncOnLoop = false;
  /** Whether a WAL sync is running in the thread pool (see runSync). */
  private syncRunning = false;
  /**
   * How long each sync of the WAL took: the fdatasync call alone, timed in the worker that makes
   * it; in the thread pool (a test's sync, or after the worker stopped), from its start until its
   * completion is handled on the event loop (vigil_store_sync_duration_seconds; README,
   * Performance, rounds 37 and 38).
   */
  private readonly syncs = new Histogram();
  /** Writes waiting for a sync of the WAL, oldest first, each with the generation it needs on disk. */
  private syncWaiters: SyncWaiter[] = [];
  /** The write-ahead log, opened at the first sync. */
  private walFd: Promise<number> | undefined;
  /** A test's sync of the WAL; without one, a worker syncs it (wal-syncer.ts). */
  private readonly syncFile: ((fd: number) => Promise<void>) | undefined;
  /** The worker that syncs the WAL, once started; `starting` while the log opens, `stopped` when it failed (the thread pool syncs then). */
  private syncer: WalSyncer | 'starting' | 'stopped' | undefined;
  /**
   * The durable watermark, in generations: every write transaction committed without its own fsync
   * (appends, page commits, exporter acks) takes the next one (`written`). A sync of the WAL covers
   * every frame written before it started, so once a sync begun at generation g resolves,
   * everything up to g is on disk (`synced`) — also when an earlier sync has not answered yet
   * (fdatasync waits for the pages another sync is already writing out).
   */
  private written = 0;
  private synced = 0;
  /** Per pipeline, the first outbox seq of each commit not yet synced, with its generation, oldest first: readOutbox stops before the first. */
  private readonly unsyncedOutbox = new Map<string, Array<{ gen: number; from: number }>>();
  /**
   * The writer's copy of the group log: the newest logged state per group not yet folded into
   * `groups`. The writer holds the file's writer lock, so nothing else changes the log: this map
   * answers loads and version checks for these groups without reading the log.
   */
  private readonly unfolded = new Map<string, LoggedGroup>();
  private loggedRows = 0;
  private commitsSinceFold = 0;
  /** The group log's last sequence number (writer only): a commit numbers its rows after it, in the order of its groups. */
  private groupLogSeq = 0;
  private readonly rowChunks: readonly number[];
  /** Statements over the group log; absent when a read-only open found an older file. */
  private qg: ReturnType<typeof prepareGroupLog> | undefined;
  /** Statements over the segments (writer only). */
  private ql: ReturnType<typeof prepareSegments> | undefined;
  private readonly foldEvery: number;
  private readonly foldRows: number;
  private readonly foldChunk: number;
  /** Checkpoints the WAL in a worker thread (writer only); see checkpointer.ts. */
  private checkpointer: Checkpointer | undefined;
  /** Keeps the log copyable on a disk short of space (writer only); see room.ts. */
  private room: LogRoom | undefined;

  constructor(
    private readonly cfg: SqliteStoreConfig,
    private readonly logger?: Logger,
    private readonly now: () => number = Date.now,
    tuning: SqliteStoreTuning = {},
  ) {
    this.file = resolve(cfg.path);
    this.foldEvery = tuning.foldEvery ?? FOLD_EVERY;
    this.foldRows = tuning.foldRows ?? FOLD_ROWS;
    this.foldChunk = tuning.foldChunk ?? FOLD_KEYS_PER_STEP;
    this.syncFile = tuning.sync;
    this.rowChunks = tuning.rowChunks ?? ROW_CHUNKS;
    this.segmentRows = tuning.segmentRows ?? SEGMENT_ROWS;
    this.trimEvery = tuning.trimEvery ?? LOG_TRIM_EVERY;
    const heldBytes = tuning.heldBytes ?? HELD_BYTES;
    this.appendedEntries = heldBytes > 0 ? new AppendedEntries(heldBytes, tuning.heldEntries) : undefined;
    this.holdFrom = tuning.holdFrom ?? HOLD_FROM_BACKLOG;
  }

  async open(opts: OpenOptions = {}): Promise<void> {
    if (this.db) return;
    let db: Db | undefined;
    let lock: WriterLock | undefined;
    try {
      if (!opts.readOnly) {
        mkdirSync(dirname(this.file), { recursive: true });
        lock = acquireWriterLock(this.file, () => this.writerOf());
        // A readiness probe's file that a crash left behind (see probeWrite).
        rmSync(this.probeFile, { force: true });
      }
      db = new Database(this.file, { timeout: this.cfg.busy_timeout, readonly: !!opts.readOnly, fileMustExist: !!opts.readOnly });
      // Statements with an IN subquery (the state purge at every append and page commit, the
      // page's group reads, the trims and purges) build a temporary table: in a file-backed
      // temporary database its setup alone costs ~0.5–1 ms a statement, in memory ~10–30 µs. Each
      // such table here is small (a LIMIT, a page's keys; the fold at open, a few MB at most).
      db.pragma('temp_store = MEMORY');
      let version = SCHEMA_VERSION;
      if (!opts.readOnly) {
        // Only a new, empty file takes these (they are fixed once tables exist): the page size
        // first, which a file already set to incremental auto-vacuum no longer takes.
        db.pragma(`page_size = ${PAGE_SIZE}`);
        db.pragma('auto_vacuum = INCREMENTAL');
        db.pragma('journal_mode = WAL');
        db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`);
        db.pragma(`synchronous = ${this.cfg.synchronous.toUpperCase()}`);
        // Checkpoints run in the worker (below), not inside whichever commit crosses the threshold.
        db.pragma('wal_autocheckpoint = 0');
        this.migrate(db);
        const d = db;
        d.transaction(() => {
          // The highest sequence number given out is kept before any entry goes: none is reused.
          d.prepare(
            `UPDATE meta SET value = CAST(MAX(CAST(value AS INTEGER), ${CURRENT_LAYOUT.logs.map((t) => `COALESCE((SELECT MAX(seq) FROM ${t}), 0)`).join(', ')}) AS TEXT) WHERE key = 'ingest_seq'`,
          ).run();
          // Entries a previous run processed but had not trimmed yet (it stopped between trims).
          for (const t of CURRENT_LAYOUT.logs) {
            d.prepare(
              `DELETE FROM ${t} WHERE seq <= (SELECT cursor FROM partition_cursors c WHERE c.pipeline = ${t}.pipeline AND c.partition = ${t}.partition)`,
            ).run();
          }
        }).immediate();
        this.loadSegments(d);
        // Group states a previous run logged but had not folded yet (it stopped between folds).
        db.transaction(() => foldGroupLog(d, CURRENT_LAYOUT.groupLogs)).immediate();
        db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run('writer', JSON.stringify(lock!.info));
      } else {
        version = this.checkVersion(db);
      }
      const layout = version >= 4 ? CURRENT_LAYOUT : OLD_LAYOUT;
      this.q = prepare(db, this.rowChunks, layout);
      this.qs = version >= 2 ? prepareState(db) : undefined;
      this.qh = version >= 5 ? prepareHeld(db) : undefined;
      this.held = this.loadHeld(opts.readOnly === true);
      this.legacySeen = !opts.readOnly && !!this.qh?.legacyAny.get();
      this.qg = version >= 3 ? prepareGroupLog(db, this.rowChunks, layout) : undefined;
      // Empty after the fold at open; read anyway (the numbers only ever grow).
      if (!opts.readOnly) this.groupLogSeq = (db.prepare('SELECT COALESCE(MAX(seq), 0) AS n FROM group_log').get() as { n: number }).n;
      this.groupLog = 0;
      this.ql = opts.readOnly ? undefined : prepareSegments(db);
    } catch (err) {
      db?.close();
      lock?.release();
      if ((err as { code?: string }).code === 'SQLITE_CANTOPEN' && opts.readOnly) {
        throw new VigilError('VIGIL_STORE_UNAVAILABLE', `no vigil state at '${this.file}' (SQLite database missing); has vigil run with this configuration?`, {
          cause: err,
        });
      }
      throw sqliteError(err, this.file, 'open the state store', this.cfg.busy_timeout);
    }
    this.db = db;
    this.lock = lock;
    if (!opts.readOnly) {
      this.room = new LogRoom(this.file, this.cfg.busy_timeout);
      this.startCheckpointer(db);
    }
    this.logger?.debug('sqlite store open', { path: this.file, synchronous: this.cfg.synchronous });
  }

  /** The writer's view of the segments, from the file: the tables holding entries in sequence order, the last one taking appends. */
  private loadSegments(db: Db): void {
    const used: Array<{ slot: number; first: number; n: number }> = [];
    CURRENT_LAYOUT.logs.forEach((t, slot) => {
      const r = db.prepare(`SELECT MIN(seq) AS first, COUNT(*) AS n FROM ${t}`).get() as { first: number | null; n: number };
      if (r.first !== null) used.push({ slot, first: r.first, n: r.n });
    });
    used.sort((a, b) => a.first - b.first);
    this.segments = used.length ? used.map((u) => u.slot) : [0];
    this.segmentFill = used.length ? used[used.length - 1]!.n : 0;
    const floor = db.prepare("SELECT value FROM meta WHERE key = 'ingest_seq'").get() as { value: string } | undefined;
    this.logSeq = Number(floor?.value ?? 0);
    this.appendedEntries?.reset(this.logSeq);
  }

  /** The segment an entry goes to: the newest, or a new one in an empty table once the newest is full. */
  private appendSlot(): number {
    if (this.segmentFill >= this.segmentRows && this.segments.length < LOG_SLOTS) {
      for (let slot = 0; slot < LOG_SLOTS; slot++) {
        if (this.segments.includes(slot)) continue;
        this.segments.push(slot);
        this.segmentFill = 0;
        break;
      }
    }
    return this.segments[this.segments.length - 1]!;
  }

  /**
   * Empties, in one transaction, every segment but the newest whose entries each partition's cursor
   * has passed (one `DELETE` without `WHERE` each), after keeping its last sequence number in
   * `meta`. When every table is in use after that, the processed entries of the partitions
   * committed since are deleted by ranges (the trim steps), as before segments.
   */
  private freeSegments(db: Db): void {
    const ql = this.ql!;
    const freed = db
      .transaction(() => {
        const out: number[] = [];
        for (const slot of this.segments.slice(0, -1)) {
          if (ql.unprocessed[slot]!.get()) continue;
          ql.keepSeq.run(this.logSeq);
          ql.clear[slot]!.run();
          out.push(slot);
        }
        return out;
      })
      .immediate();
    if (freed.length) this.segments = this.segments.filter((s) => !freed.includes(s));
    if (this.segments.length >= LOG_SLOTS && this.untrimmed.size && !this.trimming.length) {
      this.trimming = [...this.untrimmed.values()];
      this.trimFrom = 0;
      this.untrimmed.clear();
    }
  }

  /** Checkpoints move to a worker thread; without one (it failed, or could not start) the writer checkpoints on its own again. */
  private startCheckpointer(db: Db): void {
    const fallBack = (err: unknown) => {
      // The log must not grow without bound.
      this.logger?.error('the WAL checkpoint worker failed; checkpoints now run on the event loop', { path: this.file, error: errorMessage(err) });
      this.checkpointer = undefined;
      if (this.db === db) db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
    };
    try {
      this.checkpointer = new Checkpointer({
        file: this.file,
        busyTimeout: this.cfg.busy_timeout,
        walLimit: WAL_SIZE_LIMIT,
        onFailure: fallBack,
        // Once per run of failures: a full disk fails every pass until space is back.
        onCheckpointError: (err) =>
          err
            ? this.logger?.warn(`a WAL checkpoint failed; the worker tries again every ${CHECK_MS} ms, and the log grows until one succeeds`, {
                path: this.file,
                error: err.message,
              })
            : this.logger?.info('WAL checkpoints succeed again', { path: this.file }),
      });
    } catch (err) {
      fallBack(err);
    }
  }

  /** The process recorded as the writer of the file, read beside it (for the lock refusal). */
  private writerOf(): WriterInfo | undefined {
    let db: Db | undefined;
    try {
      db = new Database(this.file, { readonly: true, fileMustExist: true, timeout: 1000 });
      const row = db.prepare('SELECT value FROM meta WHERE key = ?').get('writer') as { value: string } | undefined;
      return row ? (JSON.parse(row.value) as WriterInfo) : undefined;
    } catch {
      return undefined;
    } finally {
      db?.close();
    }
  }

  /**
   * Creates the tables of a new file, or brings an older file up to SCHEMA_VERSION one migration
   * at a time, each in one transaction with its version bump: a crash mid-way leaves the file at
   * a version it can be migrated from again, with all its state.
   */
  private migrate(db: Db): void {
    const from = this.storedVersion(db);
    if (from === undefined) {
      db.transaction(() => {
        db.exec(SCHEMA);
        db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
          'schema_version',
          String(SCHEMA_VERSION),
        );
      }).immediate();
      return;
    }
    this.checkKnown(from);
    for (let v = from; v < SCHEMA_VERSION; v++) {
      db.transaction(() => {
        db.exec(MIGRATIONS[v]!);
        db.prepare('UPDATE meta SET value = ? WHERE key = ?').run(String(v + 1), 'schema_version');
      }).immediate();
      this.logger?.info('sqlite state migrated', { path: this.file, from: v, to: v + 1 });
    }
  }

  /** The namespaces kept in memory, from their rows (in write order) and their evictions. */
  private loadHeld(readOnly: boolean): KeyedState {
    const qh = this.qh;
    if (!qh) return new KeyedState();
    const held = new KeyedState(
      readOnly
        ? undefined
        : {
            put: (namespace, key, e) => {
              qh.put.run(e.seq, namespace, key, e.json, e.version, e.expiresAt ?? null);
              inlineOrRow(e);
            },
            drop: (e) => qh.drop.run(e.seq),
          },
    );
    for (const r of qh.all.iterate() as Iterable<StateRow & { seq: number; namespace: string; key: string }>) {
      const entry = heldOf(r, r.seq);
      // A reader keeps every value: its rows may go after it read them.
      if (!readOnly) inlineOrRow(entry);
      held.load(r.namespace, r.key, entry);
    }
    for (const r of qh.evicted.all() as Array<{ namespace: string; evicted: number }>) if (held.has(r.namespace)) held.loadEvicted(r.namespace, r.evicted);
    held.seqAbove((qh.maxSeq.get() as { n: number }).n);
    return held;
  }

  /**
   * Takes a namespace into memory (its first write asking for it, StateWrite `cached`): its
   * entries move from `state_entries` to `state_log`, in the order they were written, inside the
   * running transaction.
   */
  private holdNamespace(name: string): void {
    const qs = this.state();
    const qh = this.qh!;
    for (const r of qh.tableRows.all(name) as Array<StateRow & { key: string }>) this.held.load(name, r.key, heldOf(r, 0), true);
    qh.tableDrop.run(name);
    const evicted = (qs.nsGet.get(name) as { evicted: number } | undefined)?.evicted ?? 0;
    this.held.loadEvicted(name, evicted);
    // The namespace's row counts no table entries now; it keeps its evictions (status).
    qs.nsPut.run(name, 0, evicted, 0);
  }

  /** Read-only: the file's version (older ones are read as far as their tables go). */
  private checkVersion(db: Db): number {
    const v = this.storedVersion(db) ?? SCHEMA_VERSION;
    this.checkKnown(v);
    return v;
  }

  private storedVersion(db: Db): number | undefined {
    const hasMeta = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get();
    if (!hasMeta) return undefined;
    const row = db.prepare('SELECT value FROM meta WHERE key = ?').get('schema_version') as { value: string } | undefined;
    return row ? Number(row.value) : undefined;
  }

  private checkKnown(v: number): void {
    if (!Number.isSafeInteger(v) || v < 1 || v > SCHEMA_VERSION) {
      throw new VigilError(
        'VIGIL_STORE_CORRUPT',
        `SQLite database '${this.file}' has state schema version ${v}; this vigil reads versions 1 to ${SCHEMA_VERSION} (a newer vigil wrote it?)`,
      );
    }
  }

  async close(): Promise<void> {
    // Appends already accepted are committed first, not dropped.
    if (this.appendTurn) {
      clearImmediate(this.appendTurn);
      this.commitAppends();
    }
    const db = this.db;
    if (this.maintenance) clearImmediate(this.maintenance);
    this.maintenance = undefined;
    try {
      // A clean stop leaves no processed entries behind.
      for (const p of this.trimming) this.untrimmed.set(`${p[0]}\u0000${p[1]}`, p);
      this.trimming = [];
      if (db && this.untrimmed.size) db.transaction(() => this.trimLog())();
      if (db && this.ql) this.freeSegments(db);
    } catch (err) {
      this.logger?.warn('could not trim the ingest log on close; the next start does', { path: this.file, error: errorMessage(err) });
    }
    // And no group log: a reader of the file finds every group in `groups`.
    this.foldLog();
    this.db = undefined;
    this.pageBytes = undefined;
    this.room = undefined;
    this.backlogs.clear();
    // Its connection first: the writer's is then the last, whose close checkpoints and removes the log.
    const checkpointer = this.checkpointer;
    this.checkpointer = undefined;
    await checkpointer?.close();
    db?.close();
    // Their WAL syncs run on a descriptor of their own: the appends answer once the disk has them.
    await Promise.all(this.syncing);
    const syncer = this.syncer;
    this.syncer = undefined;
    if (syncer instanceof WalSyncer) await syncer.close();
    const wal = this.walFd;
    this.walFd = undefined;
    if (wal)
      await wal.then(
        (fd) => new Promise((resolve) => closeFd(fd, resolve)),
        () => undefined,
      );
    // Last: the next writer may open the file once nothing of this one is in flight.
    this.lock?.release();
    this.lock = undefined;
  }

  private closedError(): VigilError {
    return new VigilError('VIGIL_STORE_UNAVAILABLE', `SQLite store '${this.file}' is closed`, { transient: true });
  }

  /** Runs `fn` on the open database, turning SQLite errors into VigilErrors that name the file. */
  private run<T>(what: string, fn: (db: Db) => T): T {
    const db = this.db;
    if (!db) throw this.closedError();
    try {
      return fn(db);
    } catch (err) {
      throw sqliteError(err, this.file, what, this.cfg.busy_timeout);
    }
  }

  /**
   * Group commit: appends that arrive in the same turn of the event loop (concurrent requests) are
   * written in one transaction and made durable by one fsync, and each resolves only after it.
   * Each keeps its own savepoint, so one append that fails does not fail the others. With
   * `synchronous: full` the fsync runs off the event loop (see syncWal), so requests keep being
   * read and decoded while the disk syncs.
   */
  append(pipeline: string, events: AgentEvent[], opts: AppendOptions = {}): Promise<AppendResult> {
    this.pollSynced();
    if (!this.db) return Promise.reject(this.closedError());
    let state: EncodedNamespace[];
    try {
      state = encodeStateWrites(opts.state);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return new Promise<AppendResult>((resolve, reject) => {
      this.appends.push({ pipeline, events, state, resolve, reject });
      this.appendTurn ??= setImmediate(() => this.commitAppends());
    });
  }

  /** Commits every append waiting for this turn: one transaction, one fsync. */
  private commitAppends(): void {
    this.pollSynced();
    this.appendTurn = undefined;
    const batch = this.appends;
    this.appends = [];
    if (batch.length === 0) return;
    const now = this.now();
    const outcomes: Array<AppendResult | Error> = [];
    const added: Appended[] = [];
    // The commit itself does not wait for the disk; syncWal() makes it durable before anyone is answered.
    const syncOffLoop = this.syncsOffLoop;
    try {
      this.run('append to the ingest log', (db) => {
        this.relaxed(db, syncOffLoop, () => {
          try {
            this.appendGroup(db, batch, now, false, outcomes, added);
          } catch (err) {
            // A write failed part-way with no savepoint to undo only it: the group was rolled back
            // whole, and runs again with one per append (SQLite's own refusals, a full disk, fail it again).
            if (batch.length === 1) throw err;
            this.appendGroup(db, batch, now, true, outcomes, added);
          }
        });
      });
    } catch (err) {
      for (const a of batch) a.reject(err);
      return;
    }
    this.wrote(syncOffLoop);
    this.noteAppended(added);
    const answer = () =>
      batch.forEach((a, i) => {
        const outcome = outcomes[i]!;
        if (outcome instanceof Error) return a.reject(outcome);
        a.resolve(outcome);
      });
    try {
      this.purge(now);
    } catch (err) {
      this.logger?.warn('could not purge expired entries', { path: this.file, error: errorMessage(err) });
    }
    if (!syncOffLoop) return answer();
    // Not known to be durable when the sync fails: refused (retryably; the retry is deduplicated
    // and commits with SQLite's own sync, which covers these frames too).
    this.durable().then(answer, (refusal: unknown) => {
      for (const a of batch) a.reject(refusal);
    });
  }

  /**
   * One transaction for a group of appends. Each append's state checks come first and only read,
   * so a refused one (a version conflict) has written nothing and the others go on. Its writes
   * run in a savepoint of their own only when `isolate`: a savepoint copies every page it changes
   * to a sub-journal, a good part of an append's cost, and a write that fails part-way is rare
   * (the caller then runs the group again, isolated).
   */
  private appendGroup(db: Db, batch: PendingAppend[], now: number, isolate: boolean, outcomes: Array<AppendResult | Error>, added: Appended[]): void {
    outcomes.length = 0;
    added.length = 0;
    this.heldTransaction(() =>
      db
        .transaction(() => {
          for (const a of batch) {
            let found: StateFound[][];
            try {
              found = this.checkState(a.state, now);
            } catch (err) {
              if (!db.inTransaction) throw err;
              outcomes.push(sqliteError(err, this.file, 'append to the ingest log', this.cfg.busy_timeout));
              continue;
            }
            if (!isolate) {
              outcomes.push(this.appendOne(a.pipeline, a.events, a.state, found, now, added));
              continue;
            }
            const mark = added.length;
            const held = this.held.mark();
            try {
              outcomes.push(db.transaction(() => this.appendOne(a.pipeline, a.events, a.state, found, now, added))());
            } catch (err) {
              added.length = mark;
              this.held.rollbackTo(held);
              // An error SQLite answers by rolling back the whole transaction (disk full, I/O) fails the group.
              if (!db.inTransaction) throw err;
              outcomes.push(sqliteError(err, this.file, 'append to the ingest log', this.cfg.busy_timeout));
            }
          }
        })
        .immediate(),
    );
  }

  /** Runs a transaction (`fn`) with the namespaces kept in memory following it: their changes stand if it commits, and are undone if it throws. */
  private heldTransaction<T>(fn: () => T): T {
    this.held.begin();
    try {
      const out = fn();
      this.held.end();
      return out;
    } catch (err) {
      this.held.rollback();
      throw err;
    }
  }

  /** Whether a write now commits without its fsync, made durable by a sync of the WAL off the event loop (`synchronous: full` until a sync failed). */
  private get syncsOffLoop(): boolean {
    return this.cfg.synchronous === 'full' && !this.syncOnLoop;
  }

  /**
   * Runs a write transaction under `synchronous = NORMAL` when its sync follows off the loop
   * (`offLoop`). The writes of every busy path come through here, so it first makes sure the write
   * cannot leave a log too big to copy on a disk short of space (room.ts).
   */
  private relaxed<T>(db: Db, offLoop: boolean, fn: () => T): T {
    this.room?.ensure(db);
    if (!offLoop) return fn();
    db.pragma('synchronous = NORMAL');
    try {
      return fn();
    } finally {
      db.pragma('synchronous = FULL');
    }
  }

  /**
   * A write transaction committed: it takes the next generation. One committed with SQLite's own
   * sync (or under `synchronous: normal`, durable as the configuration asks) is as durable as it
   * gets at once, and so is everything written before it (one log, synced whole).
   */
  private wrote(offLoop: boolean): void {
    this.written++;
    if (!offLoop) this.markSynced(this.written);
    this.checkpointer?.wrote();
  }

  /** Everything up to generation `gen` is on disk: the outbox entries of those commits may leave the process. */
  private markSynced(gen: number): void {
    if (gen <= this.synced) return;
    this.synced = gen;
    for (const [pipeline, commits] of this.unsyncedOutbox) {
      while (commits.length && commits[0]!.gen <= gen) commits.shift();
      if (!commits.length) this.unsyncedOutbox.delete(pipeline);
    }
  }

  /**
   * Resolves once everything written so far is on disk (a sync of the WAL off the event loop);
   * `close` waits for it. When the sync fails, the store syncs on the loop from now on (SQLite's
   * own fsync at each commit) and this rejects with a retryable refusal.
   */
  private durable(): Promise<void> {
    const synced = this.syncWal().catch((err: unknown) => {
      if (!this.syncOnLoop) {
        this.syncOnLoop = true;
        this.logger?.error('could not sync the write-ahead log; writes now sync on the event loop', { path: this.file, error: errorMessage(err) });
      }
      throw new VigilError('VIGIL_STORE_UNAVAILABLE', `could not sync '${this.file}-wal' to disk: ${errorMessage(err)}`, { transient: true, cause: err });
    });
    const settled = synced.catch(() => undefined);
    this.syncing.add(settled);
    void settled.finally(() => this.syncing.delete(settled));
    return synced;
  }

  /**
   * A commit or ack whose off-loop sync failed: sync on the loop instead, by a write SQLite commits
   * with its own fsync (which syncs the whole log). Nobody retries these writes (they stand, the
   * page is not read again), so without it their outbox entries would wait for the next write.
   */
  private async durableOrSyncOnLoop(): Promise<void> {
    try {
      await this.durable();
    } catch (refusal) {
      try {
        this.run('sync the write-ahead log', (db) => {
          db.prepare("INSERT INTO meta (key, value) VALUES ('synced', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(String(this.now()));
        });
      } catch {
        throw refusal;
      }
      this.markSynced(this.written);
    }
  }

  /**
   * Resolves once a sync of the WAL begun after this call (so after every write committed so far)
   * has answered. Group commit of the syncs: one runs at a time; the writes committed while it runs
   * (appends, page commits, acks) share the next one, which starts as soon as the running one
   * returns. So a write waits for at most the running sync and the next one, never more, and the
   * disk gets one flush per sync instead of one per write (several fdatasyncs of one file at once
   * each wait for the others' pages, then flush again). The syncs run in a worker thread of their
   * own (wal-syncer.ts), which starts the next without waiting for the event loop to hear of the
   * last: in the thread pool, a busy loop delayed each sync of a run by its own delay (README,
   * Performance, round 38). A test's sync, the syncs before the worker runs and every sync after
   * it stopped run in the thread pool, chained on the loop (runSync).
   */
  private syncWal(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const gen = this.written;
      this.syncWaiters.push({ gen, resolve, reject });
      if (this.syncer instanceof WalSyncer) return this.syncer.want(gen);
      if (this.syncer === undefined && !this.syncFile) this.startSyncer();
      // Until the worker runs (a thread takes tens of ms to start, more on a loaded machine), the
      // thread pool syncs: the first writes after open are not held for it.
      if (!this.syncRunning) this.runSync();
    });
  }

  /** Opens the log and starts the worker that syncs it; the thread pool syncs the writes that come meanwhile (syncWal). */
  private startSyncer(): void {
    this.syncer = 'starting';
    this.openWalFd().then(
      (fd) => {
        if (fd === undefined) return this.syncStopped(new Error('the store closed'), false);
        let syncer: WalSyncer;
        try {
          syncer = new WalSyncer({
            fd,
            onSynced: (gen) => {
              this.markSynced(gen);
              this.settleWaiters(gen);
            },
            onTimed: (tookMs) => this.syncs.observe(tookMs / 1000),
            onFailed: (gen, err) => this.settleWaiters(gen, err),
            onStopped: (err) => this.syncStopped(err, true),
          });
        } catch (err) {
          // No thread to be had (a resource limit): the thread pool syncs, as after a stop.
          return this.syncStopped(err instanceof Error ? err : new Error(String(err)), true);
        }
        this.syncer = syncer;
        if (this.syncWaiters.length) syncer.want(this.syncWaiters[this.syncWaiters.length - 1]!.gen);
      },
      (err: unknown) => {
        this.syncer = undefined;
        this.settleWaiters(Infinity, err);
      },
    );
  }

  /** The worker could not start or stopped: the thread pool syncs from now on, first for the writes still waiting. */
  private syncStopped(err: Error, log: boolean): void {
    this.syncer = 'stopped';
    if (log) this.logger?.warn('the WAL sync worker stopped; the WAL is synced in the thread pool from now on', { path: this.file, error: errorMessage(err) });
    if (this.syncWaiters.length && !this.syncRunning) this.runSync();
  }

  /**
   * Answers the writes the worker has synced since it last woke the loop: called at the store's
   * busy calls (an append, a group commit, a page's read and commit), so that on a busy event loop
   * they are answered between its tasks, not after every task queued before the worker's wake.
   */
  private pollSynced(): void {
    if (this.syncWaiters.length && this.syncer instanceof WalSyncer) this.syncer.poll();
  }

  /** Answers the waiting writes up to generation `gen`: synced, or failed with `err`. */
  private settleWaiters(gen: number, err?: unknown): void {
    let n = 0;
    while (n < this.syncWaiters.length && this.syncWaiters[n]!.gen <= gen) n++;
    for (const w of this.syncWaiters.splice(0, n)) {
      if (err === undefined) w.resolve();
      else w.reject(err);
    }
  }

  /** Starts a sync in the thread pool for every waiter so far; once it answers, the next starts for those who came meanwhile, then these are answered. */
  private runSync(): void {
    const waiters = this.syncWaiters;
    this.syncWaiters = [];
    this.syncRunning = true;
    const settle = (err?: unknown) => {
      this.syncRunning = false;
      // Writes that came meanwhile: the worker has them once it runs (startSyncer, syncWal).
      if (this.syncWaiters.length && !(this.syncer instanceof WalSyncer)) this.runSync();
      for (const w of waiters) {
        if (err === undefined) w.resolve();
        else w.reject(err);
      }
    };
    this.syncOnce().then(
      () => settle(),
      (err: unknown) => settle(err ?? new Error('WAL sync failed')),
    );
  }

  /**
   * fdatasync of the write-ahead log in the thread pool: what SQLite does at each commit with
   * `synchronous = FULL` (the WAL holds every committed frame; SQLite syncs the log itself before it
   * checkpoints it into the database, and its header when it starts reusing it).
   */
  private async syncOnce(): Promise<void> {
    const gen = this.written;
    const fd = await this.openWalFd();
    // Closing the store checkpoints the log into the database (synced) and removes it.
    if (fd === undefined) return this.markSynced(gen);
    const began = performance.now();
    await (this.syncFile ?? fdatasyncOffLoop)(fd);
    this.syncs.observe((performance.now() - began) / 1000);
    this.markSynced(gen);
  }

  /**
   * The log's descriptor, opened once: it stays the same file while the store is open (SQLite
   * removes it only when its last connection closes), so one descriptor serves every sync; the
   * log's directory entry is synced once, since SQLite creates the log on the first write after
   * opening. Undefined when the store closed before the log could be opened.
   */
  private async openWalFd(): Promise<number | undefined> {
    this.walFd ??= openWal(`${this.file}-wal`, dirname(this.file));
    try {
      return await this.walFd;
    } catch (err) {
      this.walFd = undefined;
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && !this.db) return undefined;
      throw err;
    }
  }

  syncDurations(): HistogramSnapshot {
    return this.syncs.snapshot();
  }

  /**
   * One append's writes with its receiver state, inside the group's transaction (in a savepoint of
   * its own when the group runs isolated: appendGroup); `found` is what checkState read for that
   * state. The entries it wrote go to `added`, for the writer's backlog once the transaction committed.
   */
  private appendOne(pipeline: string, events: AgentEvent[], state: EncodedNamespace[], found: StateFound[][], now: number, added: Appended[]): AppendResult {
    let appended = 0;
    let duplicates = 0;
    for (const event of events) {
      // One B-tree visit: claims the record's (time, id), or finds it claimed and live (then nothing
      // changes). Ids an earlier vigil claimed by id alone count until they expire (legacySeen).
      if (
        (this.legacySeen && this.qh!.legacySeen.get(pipeline, event.eventId, now)) ||
        this.qh!.seenClaim.run(pipeline, dedupeTime(event), event.eventId, now + this.cfg.dedupe_window, now).changes === 0
      ) {
        duplicates++;
        continue;
      }
      const json = JSON.stringify(event);
      this.ql!.insert[this.appendSlot()]!.run(++this.logSeq, pipeline, event.partition, json);
      added.push({ pipeline, partition: event.partition, seq: this.logSeq, event, bytes: json.length });
      this.segmentFill++;
      appended++;
    }
    this.applyState(state, found, now);
    return { appended, duplicates };
  }

  /**
   * Deletes expired bookkeeping now and then, in chunks, so a write never waits long for it; and
   * now and then starts a vacuum, which maintain() runs in steps. The deletes need no sync of their
   * own (one lost in a crash is expired still, and deleted again), so they do not wait for the disk.
   */
  private purge(now: number): void {
    if (now - this.lastPurge < PURGE_EVERY_MS) return;
    this.lastPurge = now;
    this.run('purge expired entries', (db) =>
      this.relaxed(db, this.cfg.synchronous === 'full', () => {
        const until = performance.now() + PURGE_BUDGET_MS;
        const seen = this.legacySeen ? [this.qh!.purgeSeen, this.q.purgeSeen] : [this.qh!.purgeSeen];
        for (const stmt of [...seen, this.q.purgeTurns, this.q.purgeRevisions]) {
          while (stmt.run(now, PURGE_CHUNK).changes === PURGE_CHUNK && performance.now() < until);
        }
        if (this.legacySeen && !this.qh!.legacyAny.get()) this.legacySeen = false;
      }),
    );
    this.checkpointer?.wrote();
    if (now - this.lastVacuum >= VACUUM_EVERY_MS) {
      this.lastVacuum = now;
      // The pages free now, counted once; a file made before incremental auto-vacuum (auto_vacuum 2) gives none back.
      this.vacuumLeft = this.run('count free pages', (db) =>
        db.pragma('auto_vacuum', { simple: true }) === 2 ? Math.min(this.pagesOf(VACUUM_BYTES), db.pragma('freelist_count', { simple: true }) as number) : 0,
      );
      if (this.vacuumLeft > 0) this.scheduleMaintenance();
    }
  }

  /** One step of the vacuum under way: up to VACUUM_STEP_BYTES of the free pages it counted back to the file system. */
  private vacuumStep(db: Db): void {
    const pages = Math.min(this.pagesOf(VACUUM_STEP_BYTES), this.vacuumLeft);
    db.pragma(`incremental_vacuum(${pages})`);
    this.vacuumLeft -= pages;
  }

  /** Whole pages of the open file in `bytes` (at least one): the file keeps the page size it was made with. */
  private pagesOf(bytes: number): number {
    this.pageBytes ??= this.run('read the page size', (db) => db.pragma('page_size', { simple: true }) as number);
    return Math.max(1, Math.floor(bytes / this.pageBytes));
  }

  async pendingCount(pipeline: string): Promise<number> {
    if (this.ql) return this.writerBacklog(pipeline).total(pipeline);
    return this.run('count the backlog', () => (this.q.pendingCount.get({ pipeline }) as { n: number }).n);
  }

  async backlog(pipeline: string): Promise<PartitionBacklog[]> {
    if (this.ql) return this.writerBacklog(pipeline).backlog(pipeline);
    return this.run('read the backlog', () =>
      (this.q.backlog.all({ pipeline }) as Array<{ partition: string; pending: number }>).map((r) => ({ partition: r.partition, pending: r.pending })),
    );
  }

  /** The writer's backlog, with `pipeline`'s counts read from the file the first time it is asked about. */
  private writerBacklog(pipeline: string): WriterBacklog {
    if (!this.backlogs.has(pipeline)) {
      const rows = this.run('read the backlog', () => this.q.backlog.all({ pipeline }) as Array<{ partition: string; pending: number; first: number }>);
      this.backlogs.load(pipeline, rows);
    }
    return this.backlogs;
  }

  /**
   * For the writer's backlog, in a commit moving a partition's cursor from `at` to `cursor`: how
   * many entries it passed, and the first entry after it (probes of the segments' partition index,
   * oldest segment first: they hold ascending ranges of sequence numbers).
   */
  private passed(pipeline: string, partition: string, at: number, cursor: number): { count: number; next: number | undefined } {
    const ql = this.ql!;
    let count = 0;
    let next: number | undefined;
    for (const slot of this.segments) {
      count += (ql.countRange[slot]!.get(pipeline, partition, at, cursor) as { n: number }).n;
      next ??= (ql.firstAfter[slot]!.get(pipeline, partition, cursor) as { m: number | null }).m ?? undefined;
    }
    return { count, next };
  }

  /** Entries of a committed transaction, counted in the writer's backlog and held for pages while their pipeline is behind. */
  private noteAppended(added: readonly Appended[]): void {
    for (const a of added) {
      this.backlogs.appended(a.pipeline, a.partition, a.seq);
      if (!this.appendedEntries) continue;
      // Behind: a backlog of several pages, or one nobody has asked about yet (no pipeline reads
      // it now). A pipeline that keeps up reads its page right after the append, from rows still
      // in SQLite's cache; holding the receiver's events until then made the ack's tail a few ms
      // longer (README, Performance, round 29).
      if (!this.backlogs.has(a.pipeline) || this.backlogs.total(a.pipeline) >= this.holdFrom) {
        this.appendedEntries.add(a.pipeline, a.partition, a.seq, a.event, a.bytes);
      } else this.appendedEntries.skip(a.pipeline, a.seq);
    }
  }

  readerKeeps(pipeline: string): void {
    this.appendedEntries?.keepNone(pipeline);
  }

  async readPage(pipeline: string, partition: string, limit: number): Promise<LogEntry[]> {
    this.pollSynced();
    return this.readEntries(pipeline, partition, limit, 0, true);
  }

  async readAfter(pipeline: string, partition: string, after: string, limit: number): Promise<LogEntry[]> {
    const seq = Number(after);
    if (!Number.isSafeInteger(seq)) throw new RangeError(`not an entry id of this store: ${JSON.stringify(after)}`);
    // No base remembered: the reader commits releases that end anywhere in what it kept, not this page.
    return this.readEntries(pipeline, partition, limit, seq, false);
  }

  /** Up to `limit` entries after the partition cursor and after sequence `after`; `remember`: the page's base, for its commit (PageBases). */
  private readEntries(pipeline: string, partition: string, limit: number, after: number, remember: boolean): LogEntry[] {
    // The writer knows which partitions hold entries after their cursor: a look at one that holds
    // none (the correlation log, woken by every append, mostly) costs no statement.
    if (this.ql && this.backlogs.holds(pipeline, partition) === false) {
      if (!this.db) throw this.closedError();
      return [];
    }
    return this.run('read a page of the ingest log', () => {
      const base = (this.q.cursorGet.get(pipeline, partition) as { cursor: number } | undefined)?.cursor ?? 0;
      const from = Math.max(base, after);
      const page =
        (this.ql && this.appendedEntries?.read(pipeline, partition, from, limit)) ??
        this.logRows(pipeline, partition, from, limit).map((r) => ({
          id: String(r.seq),
          event: parseJson<AgentEvent>(r.event, this.file, 'ingest log entry'),
        }));
      if (remember) this.bases.remember(pipeline, partition, page[page.length - 1]?.id, String(base));
      return page;
    });
  }

  /**
   * Up to `limit` entries of a partition after `after`. The writer knows its segments in sequence
   * order and reads them one after the other until the page is full (mostly one or two tables); a
   * reader beside it merges every table's index (all tables, in one statement).
   */
  private logRows(pipeline: string, partition: string, after: number, limit: number): Array<{ seq: number; event: string }> {
    if (!this.ql) return this.q.readPage.all({ pipeline, partition, after, limit }) as Array<{ seq: number; event: string }>;
    let rows: Array<{ seq: number; event: string }> = [];
    for (const slot of this.segments) {
      const more = this.ql.read[slot]!.all(pipeline, partition, after, limit - rows.length) as Array<{ seq: number; event: string }>;
      rows = rows.length ? rows.concat(more) : more;
      if (rows.length >= limit) break;
    }
    return rows;
  }

  async loadGroups(keys: readonly string[]): Promise<Map<string, GroupState>> {
    return this.run('load groups', () => {
      const out = new Map<string, GroupState>();
      const logged = this.loggedGroups();
      const stored: string[] = [];
      for (const k of keys) {
        const l = logged.get(k);
        if (l) out.set(k, l.group ? { ...l.group } : parseJson<GroupState>(l.state, this.file, 'group'));
        else stored.push(k);
      }
      if (!stored.length) return out;
      // One statement for the page's groups (the keys as a JSON array), not one per group.
      for (const row of this.q.groupsGet.all(JSON.stringify(stored)) as Array<{ group_key: string; state: string }>) {
        out.set(row.group_key, parseJson<GroupState>(row.state, this.file, 'group'));
      }
      return out;
    });
  }

  /**
   * The group log's newest state per group: the writer's own copy, or (a reader beside a writer)
   * read from the file, where the log is short (FOLD_ROWS) and read in sequence, newest last.
   */
  private loggedGroups(): ReadonlyMap<string, LoggedGroup> {
    if (this.lock || !this.qg) return this.unfolded;
    const out = new Map<string, LoggedGroup>();
    for (const r of this.qg.all.all() as Array<{ seq: number; group_key: string; version: number; open_work: number; state: string }>) {
      out.set(r.group_key, { version: r.version, seq: r.seq, open: r.open_work, state: r.state });
    }
    return out;
  }

  /**
   * Folds the group log into `groups` (newest row per group wins) and empties it, in one
   * transaction. It need not be durable at once: until a later commit's sync carries it, a crash
   * loses the fold and the log it emptied together, and the next open folds again. A failure
   * leaves log and copy as they were; the fold is tried again after another FOLD_EVERY commits.
   */
  private foldLog(): void {
    const db = this.db;
    if (!db || !this.lock || this.unfolded.size === 0) return;
    try {
      this.relaxed(db, this.cfg.synchronous === 'full', () => db.transaction(() => foldGroupLog(db, CURRENT_LAYOUT.groupLogs)).immediate());
      this.unfolded.clear();
      this.loggedRows = 0;
      this.groupLog = 0;
      this.commitsSinceFold = 0;
      this.folding = undefined;
    } catch (err) {
      this.commitsSinceFold = 0;
      this.logger?.warn('could not fold the group log into the groups table; tried again later', { path: this.file, error: errorMessage(err) });
    }
  }

  async loadTurns(pipeline: string, turnIds: readonly string[]): Promise<Map<string, number>> {
    return this.run('load turns', () => {
      const out = new Map<string, number>();
      for (const t of turnIds) {
        const row = this.q.turnGet.get(pipeline, t) as { created: number } | undefined;
        if (row) out.set(t, row.created);
      }
      return out;
    });
  }

  async lookupRevisions(executionIds: readonly string[]): Promise<Map<string, string>> {
    return this.run('look up revisions', () => {
      const out = new Map<string, string>();
      for (const id of executionIds) {
        const row = this.q.revisionGet.get(id) as { revision: string } | undefined;
        if (row) out.set(id, row.revision);
      }
      return out;
    });
  }

  /**
   * One page's commit: one transaction, committed with `synchronous: full` under NORMAL (no fsync
   * on the event loop) and resolved once a sync of the WAL off the event loop has it on disk, as
   * appends are. In between, the commit is visible to this connection and not yet durable. Who may
   * act on it then:
   * - The next page, of any partition or pipeline, reads its groups, cursor, turns, revisions,
   *   state, timers and the records it appended. That page's commit comes later in the same log,
   *   and a sync covers every frame written before it, so the later commit is never durable
   *   without this one: a crash loses it only with this one, and both pages are then processed
   *   again from the log as if neither had run. That is safe as long as nothing left the process
   *   on the strength of the unsynced state.
   * - What leaves the process: work events go through the exporters, which read the outbox only
   *   up to the durable watermark (readOutbox; `unsyncedOutbox`); appends are acknowledged after a
   *   sync begun after their own commit, which covers every earlier one; this promise (the runner's
   *   counts and spans, the exporters' wake-up) resolves after the sync. Only `/status` and `vigil
   *   status` show unsynced state: an operator's view, not an effect.
   * A failed sync is not retried off the loop: the store syncs on the loop from then on (SQLite's
   * own fsync at commit), this commit's entries wait for such a sync.
   */
  async commit(c: PageCommit): Promise<void> {
    this.pollSynced();
    const cursor = Number(c.cursor);
    if (c.cursor !== null && (!Number.isSafeInteger(cursor) || cursor <= 0)) {
      throw new VigilError('VIGIL_STORE_CORRUPT', `commit for partition '${c.partition}' carries an invalid cursor '${c.cursor}'`);
    }
    const now = this.now();
    const state = encodeStateWrites(c.state);
    const timers = encodeTimers(c.timers);
    const base = c.cursor === null ? undefined : this.bases.take(c.pipeline, c.partition, c.cursor);
    const groupStates = c.groups.map((g) => JSON.stringify(g));
    const groupSeqs: number[] = [];
    const syncOffLoop = this.syncsOffLoop;
    let outboxFrom = 0;
    const added: Appended[] = [];
    let moved: { count: number; next: number | undefined } | undefined;
    this.run('commit a page', (db) =>
      this.relaxed(db, syncOffLoop, () =>
        this.heldTransaction(() =>
          db
            .transaction(() => {
              const q = this.q;
              // Validate everything before writing anything: the transaction is all or nothing anyway,
              // but a conflict should not even start writing.
              let at = 0;
              if (c.cursor !== null) {
                const stored = q.cursorGet.get(c.pipeline, c.partition) as { cursor: number } | undefined;
                if (!stored && !q.logAny.get({ pipeline: c.pipeline, partition: c.partition })) {
                  throw new VigilError('VIGIL_STORE_CORRUPT', `commit for unknown partition '${c.partition}' of pipeline '${c.pipeline}'`);
                }
                at = stored?.cursor ?? 0;
                if (cursor <= at || (base !== undefined && base !== String(at))) {
                  throw new VigilError('VIGIL_STORE_CONFLICT', `partition '${c.partition}' was committed by another writer since the page was read (cursor ${at})`, {
                    transient: true,
                  });
                }
              }
              const found = this.checkState(state, now);
              this.checkTimers(c.pipeline, timers);
              // A group in the group log has its newest state there (this writer's copy), else in `groups`.
              const versions = new Map<string, number>();
              const stored = c.groups.filter((g) => !this.unfolded.has(g.groupKey)).map((g) => g.groupKey);
              if (stored.length) {
                for (const r of q.groupVersions.all(JSON.stringify(stored)) as Array<{ group_key: string; version: number }>) {
                  versions.set(r.group_key, r.version);
                }
              }
              for (const g of c.groups) {
                const v = this.unfolded.get(g.groupKey)?.version ?? versions.get(g.groupKey) ?? 0;
                if (v !== g.version - 1) {
                  throw new VigilError('VIGIL_STORE_CONFLICT', `group ${g.groupKey} changed concurrently (version ${v}, expected ${g.version - 1})`, {
                    transient: true,
                  });
                }
              }
              for (const a of c.appends ?? []) this.appendOne(a.pipeline, a.events, [], [], now, added);
              // Appended in sequence (a few database pages), not updated in place (a page per group);
              // numbered here (a rolled-back commit leaves a gap, never a number used twice).
              if (c.groups.length) {
                const rows: unknown[] = [];
                c.groups.forEach((g, i) => rows.push((groupSeqs[i] = ++this.groupLogSeq), g.groupKey, g.version, g.openWorkId ? 1 : 0, groupStates[i]));
                this.qg!.append[this.groupLog]!.run(rows);
              }
              this.applyState(state, found, now);
              this.applyTimers(c.pipeline, timers);
              const keep = now + this.cfg.dedupe_window;
              for (const t of c.turns) q.turnAdd.run(c.pipeline, t.turnId, t.created, keep);
              for (const r of c.revisions) q.revisionPut.run(r.executionId, r.revision, keep);
              if (c.outbox.length) {
                let seq = (q.outboxHead.get(c.pipeline) as { last_seq: number } | undefined)?.last_seq ?? 0;
                outboxFrom = seq + 1;
                const rows: unknown[] = [];
                for (const o of c.outbox) rows.push(c.pipeline, ++seq, JSON.stringify(o));
                q.outboxInsert.run(rows);
                q.outboxHeadPut.run(c.pipeline, seq);
              }
              if (c.failures.length) {
                // Only those that can stay: a page of hundreds of failures keeps at most the newest few.
                const rows: unknown[] = [];
                for (const f of newestFailures(c.failures)) rows.push(f.time, JSON.stringify(f));
                q.failureInsert.run(rows);
                q.failureTrim.run(RECENT_FAILURES_MAX);
              }
              if (c.cursor === null) return;
              q.cursorPut.run(c.pipeline, c.partition, cursor);
              if (this.ql && this.backlogs.has(c.pipeline)) moved = this.passed(c.pipeline, c.partition, at, cursor);
            })
            .immediate(),
        ),
      ),
    );
    // Only once the commit stands: a refused one leaves the set as it was. The processed entries go in batches (LOG_TRIM_EVERY).
    if (c.cursor !== null) {
      this.untrimmed.set(`${c.pipeline}\u0000${c.partition}`, [c.pipeline, c.partition]);
      if (++this.commitsSinceTrim >= this.trimEvery && !this.trimming.length) {
        this.freeing = true;
        this.commitsSinceTrim = 0;
        this.scheduleMaintenance();
      }
    }
    if (moved) this.backlogs.processed(c.pipeline, c.partition, moved.count, moved.next);
    this.noteAppended(added);
    if (c.cursor !== null) this.appendedEntries?.passed(c.pipeline, c.partition, cursor);
    if (outboxFrom && syncOffLoop) {
      const commits = this.unsyncedOutbox.get(c.pipeline);
      const entry = { gen: this.written + 1, from: outboxFrom };
      if (commits) commits.push(entry);
      else this.unsyncedOutbox.set(c.pipeline, [entry]);
    }
    this.wrote(syncOffLoop);
    if (c.groups.length) {
      c.groups.forEach((g, i) =>
        this.unfolded.set(g.groupKey, { version: g.version, seq: groupSeqs[i]!, open: g.openWorkId ? 1 : 0, state: groupStates[i]!, group: { ...g } }),
      );
      this.loggedRows += c.groups.length;
      const due = ++this.commitsSinceFold >= this.foldEvery || this.loggedRows >= this.foldRows;
      if (due && !this.folding) {
        // The log this commit appended to is folded; the next commits append to the other (empty: the last fold emptied it).
        this.folding = { log: this.groupLog, keys: [...this.unfolded.keys()].sort(), done: 0, upTo: Math.max(...groupSeqs), stalled: false };
        this.groupLog = 1 - this.groupLog;
        this.loggedRows = 0;
        this.commitsSinceFold = 0;
        this.scheduleMaintenance();
      } else if (due && this.folding?.stalled) {
        // A failed fold is taken again from the start: its log cannot be emptied before every group in it is upserted.
        const fold = this.folding;
        fold.stalled = false;
        fold.done = 0;
        this.commitsSinceFold = 0;
        this.scheduleMaintenance();
      }
    }
    if (syncOffLoop) await this.durableOrSyncOnLoop();
  }

  private scheduleMaintenance(): void {
    this.maintenance ??= setImmediate(() => this.maintain());
  }

  /**
   * One bounded step of a trim, a fold or a vacuum, in a transaction of its own, then the next in
   * the next turn of the event loop while any is left: commits, appends and requests run in
   * between. These transactions need no sync of their own: a crash that loses one leaves the log
   * (and its group rows) as it was, and the next open trims and folds whatever is left (a vacuum
   * lost only moved pages; the next returns them).
   */
  private maintain(): void {
    this.maintenance = undefined;
    const db = this.db;
    if (!db) return;
    try {
      this.relaxed(db, this.cfg.synchronous === 'full', () => {
        // Taking turns: a trim does not hold a fold back, nor the other way round.
        this.trimTurn = !this.trimTurn;
        const folding = this.folding && !this.folding.stalled ? this.folding : undefined;
        if (this.freeing && (this.trimTurn || !folding)) {
          this.freeing = false;
          this.freeSegments(db);
        } else if (this.trimming.length && (this.trimTurn || !folding)) this.trimStep(db);
        else if (folding) this.foldStep(db, folding);
        // Last: the trims and folds free the pages it returns.
        else if (this.vacuumLeft > 0) this.vacuumStep(db);
      });
      this.checkpointer?.wrote();
    } catch (err) {
      // Tried again from the start later (the next batch of commits).
      this.logger?.warn('could not trim the ingest log, fold the group log or return free pages; tried again later', { path: this.file, error: errorMessage(err) });
      this.vacuumLeft = 0;
      for (const p of this.trimming) this.untrimmed.set(`${p[0]}\u0000${p[1]}`, p);
      this.trimming = [];
      this.freeing = false;
      if (this.folding) this.folding.stalled = true;
      return;
    }
    if (this.freeing || this.trimming.length || (this.folding && !this.folding.stalled) || this.vacuumLeft > 0) this.scheduleMaintenance();
  }

  /**
   * Deletes the processed entries of the partitions being trimmed in the next window of the log:
   * from the lowest one left (a probe of each partition's index, so a stretch of entries that are
   * not processed yet is skipped, not scanned) over TRIM_WINDOW sequence numbers. A partition with
   * none left is done.
   */
  private trimStep(db: Db): void {
    let lo = Infinity;
    this.trimming = this.trimming.filter(([pipeline, partition]) => {
      const next = (this.q.logNextProcessed.get({ pipeline, partition, from: this.trimFrom }) as { m: number | null }).m;
      if (next !== null) lo = Math.min(lo, next);
      return next !== null;
    });
    if (!this.trimming.length) return;
    const hi = lo + TRIM_WINDOW;
    db.transaction(() => {
      this.ql?.keepSeq.run(this.logSeq);
      for (const [pipeline, partition] of this.trimming) for (const s of this.q.logTrimWindow) s.run({ pipeline, partition, lo, hi });
    }).immediate();
    this.trimFrom = hi;
  }

  /**
   * Upserts the next groups of the fold into `groups`, each with its newest state (a state logged
   * after the fold started is newer still, and its row stays in the log, so log and table agree);
   * once all are, deletes the log rows up to the fold's last one, in chunks. Readers beside the
   * writer take a group's newest log row over its `groups` row, so every step leaves them reading
   * the newest state; the writer's copy forgets a group once its rows are gone from the log.
   */
  private foldStep(db: Db, fold: Fold): void {
    if (fold.done < fold.keys.length) {
      const keys = fold.keys.slice(fold.done, fold.done + this.foldChunk);
      const rows: unknown[] = [];
      for (const k of keys) {
        const l = this.unfolded.get(k);
        if (l) rows.push(k, l.version, l.open, l.state);
      }
      db.transaction(() => this.qg!.upsert.run(rows)).immediate();
      fold.done += keys.length;
      return;
    }
    // Every group of the folded log now has its newest state in `groups` (or a newer one in the
    // other log): the folded log is emptied whole (a handful of page writes; deleting its rows
    // wrote about as many bytes as appending them had).
    db.transaction(() => this.qg!.clear[fold.log]!.run()).immediate();
    for (const [k, l] of this.unfolded) if (l.seq <= fold.upTo) this.unfolded.delete(k);
    this.folding = undefined;
  }

  /** Resolves once no trim, fold or vacuum step is left to run (tests). */
  async settled(): Promise<void> {
    while (this.maintenance) await new Promise((resolve) => setImmediate(resolve));
  }

  /** Deletes the processed entries of every partition committed since the last trim, at once (a clean close); inside the caller's transaction. */
  private trimLog(): void {
    this.ql?.keepSeq.run(this.logSeq);
    for (const [pipeline, partition] of this.untrimmed.values()) for (const s of this.q.logTrimToCursor) s.run({ pipeline, partition });
    this.untrimmed.clear();
  }

  /** The version-2 statements; a write needs them (a read-only open of a version-1 file has none). */
  private state(): ReturnType<typeof prepareState> {
    if (!this.qs)
      throw new VigilError('VIGIL_STORE_UNAVAILABLE', `SQLite database '${this.file}' is at schema version 1 and opened read-only; run vigil once to migrate it`);
    return this.qs;
  }

  /**
   * Version checks of state writes, in order (a later write sees an earlier one); inside the
   * transaction. Returns what each write found (whether a row was there, expired or not, and its
   * live version), for applyState: each key is read once per commit.
   */
  private checkState(state: EncodedNamespace[], now: number): StateFound[][] {
    if (!state.length) return [];
    const qs = this.state();
    return state.map((ns) => {
      if (ns.cached && this.qh && !this.held.has(ns.namespace)) this.holdNamespace(ns.namespace);
      if (this.held.has(ns.namespace)) {
        this.held.check(ns, now);
        return [];
      }
      const pending = new Map<string, StateFound>();
      return ns.writes.map((w) => {
        let found = pending.get(w.key);
        if (!found) {
          const row = qs.get.get(ns.namespace, w.key) as { version: number; expires: number | null } | undefined;
          found = { row: row !== undefined, version: row && (row.expires === null || row.expires > now) ? row.version : 0 };
        }
        if (w.version !== undefined && w.version !== found.version + 1) throw stateConflict(ns.namespace, w.key, found.version, w.version);
        pending.set(w.key, w.json === null ? { row: false, version: 0 } : { row: true, version: found.version + 1 });
        return found;
      });
    });
  }

  /** Writes checked state (`found`: checkState's answer for the same writes). */
  private applyState(state: EncodedNamespace[], found: StateFound[][], now: number): void {
    if (!state.length) return;
    const qs = this.state();
    state.forEach((ns, j) => {
      const name = ns.namespace;
      if (this.held.has(name) || (ns.cached && this.qh)) {
        if (this.held.apply(ns, now)) qs.nsPut.run(name, 0, this.held.evicted(name), 0);
        return;
      }
      const meta = (qs.nsGet.get(name) as { entries: number; evicted: number; last_written: number } | undefined) ?? { entries: 0, evicted: 0, last_written: 0 };
      let { entries, evicted, last_written: written } = meta;
      ns.writes.forEach((w, i) => {
        const { row, version } = found[j]![i]!;
        if (w.json === null) {
          if (row) {
            qs.delete.run(name, w.key);
            entries--;
          }
          return;
        }
        if (!row) entries++;
        qs.put.run(name, w.key, w.json, version + 1, ++written, w.ttlMs !== undefined ? now + w.ttlMs : null);
      });
      // The DELETE builds a temporary table even when nothing is due (~60 µs); the index seek is a few.
      if (qs.purgeDue.get(name, now)) entries -= qs.purge.run(name, name, now, 2 * ns.writes.length + STATE_PURGE_CHUNK).changes;
      if (entries > ns.maxEntries) {
        entries -= qs.purge.run(name, name, now, entries - ns.maxEntries).changes;
        if (entries > ns.maxEntries) {
          const gone = qs.evict.run(name, name, entries - ns.maxEntries).changes;
          entries -= gone;
          evicted += gone;
        }
      }
      qs.nsPut.run(name, entries, evicted, written);
    });
  }

  private checkTimers(pipeline: string, t: EncodedTimers): void {
    if (!t.set.length && !t.clear.length) return;
    const qs = this.state();
    for (const c of t.clear) {
      const stored = (qs.timerGet.get(pipeline, c.id) as { version: number } | undefined)?.version;
      if (stored === undefined || (c.version !== undefined && stored !== c.version)) throw timerGone(c.id, c.version, stored);
    }
    if (!t.set.length) return;
    const cleared = new Set(t.clear.map((c) => c.id));
    const added = t.set.filter((s) => cleared.has(s.id) || !qs.timerGet.get(pipeline, s.id)).length;
    const pending = (qs.timerCount.get(pipeline) as { n: number }).n - cleared.size + added;
    if (pending > MAX_TIMERS_PER_PIPELINE) throw timersFull(pipeline, pending);
  }

  private applyTimers(pipeline: string, t: EncodedTimers): void {
    if (!t.set.length && !t.clear.length) return;
    const qs = this.state();
    for (const c of t.clear) qs.timerDelete.run(pipeline, c.id);
    for (const s of t.set) {
      qs.timerDelete.run(pipeline, s.id);
      qs.timerInsert.run(pipeline, s.id, s.due, s.json);
    }
  }

  async loadState(namespace: string, keys: readonly string[]): Promise<Map<string, StateEntry>> {
    const now = this.now();
    return this.run('load state', () => {
      const out = new Map<string, StateEntry>();
      if (!this.qs) return out;
      if (this.held.has(namespace)) {
        for (const k of keys) {
          const e = this.held.get(namespace, k, now);
          if (e) out.set(k, this.heldEntryOf(e));
        }
        return out;
      }
      for (const k of keys) {
        const row = this.qs.load.get(namespace, k) as StateRow | undefined;
        if (row && (row.expires === null || row.expires > now)) out.set(k, this.entryOf(row));
      }
      return out;
    });
  }

  async listState(namespace: string, limit: number): Promise<StateListEntry[]> {
    const now = this.now();
    return this.run('list state', () =>
      this.held.has(namespace)
        ? this.held.list(namespace, limit, now).map(([key, e]) => ({ key, ...this.heldEntryOf(e) }))
        : ((this.qs?.list.all(namespace, now, limit) ?? []) as Array<StateRow & { key: string }>).map((r) => ({ key: r.key, ...this.entryOf(r) })),
    );
  }

  /** A held entry as loadState returns it, its value read from its row when not kept in memory. */
  private heldEntryOf(e: HeldEntry): StateEntry {
    const json = e.json ?? (this.qh!.value.get(e.seq) as string | undefined);
    if (json === undefined) throw new VigilError('VIGIL_STORE_CORRUPT', `SQLite database '${this.file}' lost the state_log row ${e.seq} of a live entry`);
    return this.entryOf({ value: json, version: e.version, expires: e.expiresAt ?? null });
  }

  private entryOf(row: StateRow): StateEntry {
    return {
      value: parseStored(row.value, `SQLite database '${this.file}' state entry`),
      version: row.version,
      ...(row.expires !== null ? { expiresAt: row.expires } : {}),
    };
  }

  async dueTimers(pipeline: string, now: number, limit: number): Promise<DueTimers> {
    return this.run('read due timers', () => {
      if (!this.qs) return { timers: [], next: null };
      const rows = this.qs.timersDue.all(pipeline, now, limit) as Array<{ version: number; id: string; due: number; body: string }>;
      const next = this.qs.timerNext.get(pipeline, rows.length) as { due: number } | undefined;
      return { timers: rows.map((r) => decodeTimer(r.id, r.version, r.due, r.body, `SQLite database '${this.file}' timer`)), next: next?.due ?? null };
    });
  }

  private namespaceStatus(now: number): NamespaceStatus[] {
    if (!this.qs) return [];
    const table = (this.qs.nsStatus.all(now) as Array<{ namespace: string; entries: number; evicted: number }>)
      .filter((r) => !this.held.has(r.namespace))
      .map((r) => ({ namespace: r.namespace, entries: r.entries, evicted: r.evicted }));
    return [...table, ...this.held.status(now)].sort((a, b) => (a.namespace < b.namespace ? -1 : a.namespace > b.namespace ? 1 : 0));
  }

  async registerExporter(pipeline: string, exporter: string): Promise<void> {
    this.run('register an exporter', () => this.q.exporterRegister.run(pipeline, exporter));
  }

  async retireExporters(pipeline: string, keep: readonly string[]): Promise<string[]> {
    return this.run('retire exporter cursors', (db) =>
      db
        .transaction(() => {
          const gone = (this.q.exporters.all(pipeline) as Array<{ exporter: string }>).map((e) => e.exporter).filter((e) => !keep.includes(e));
          for (const e of gone) this.q.exporterDelete.run(pipeline, e);
          const min = (this.q.exporterMin.get(pipeline) as { m: number | null }).m;
          if (gone.length && min !== null) this.q.outboxTrim.run(pipeline, min);
          return gone;
        })
        .immediate(),
    );
  }

  async outboxLag(pipeline: string, exporter: string): Promise<number> {
    return this.run('measure an exporter queue', () => {
      const last = (this.q.outboxHead.get(pipeline) as { last_seq: number } | undefined)?.last_seq ?? 0;
      const cursor = (this.q.exporterCursor.get(pipeline, exporter) as { cursor: number } | undefined)?.cursor ?? 0;
      return Math.max(0, last - cursor);
    });
  }

  /** What the writer did to keep its log copyable on a disk short of space (room.ts); undefined when not open for writing. */
  roomStats(): RoomStats | undefined {
    return this.room && { ...this.room.stats };
  }

  /** The readiness probe's file, beside the database (as its log and lock are). */
  private get probeFile(): string {
    return `${this.file}.probe`;
  }

  /**
   * Whether a write of `bytes` fits now (readiness after a failed append); throws while it does not.
   * A write takes its bytes twice on the disk: in the log, then in the database file when a
   * checkpoint copies them. So the room is tried with twice the bytes in a file beside the
   * database, written, synced and removed; then a small transaction shows SQLite itself commits.
   * The probe used to write its bytes into the database: they stayed in the log for a checkpoint to
   * copy, so the probe took the room it measured, and on an 8 MB disk a 4 MB probe left a log that
   * could never be copied for want of room (the store stayed full after the disk had room again).
   */
  async probeWrite(bytes: number): Promise<void> {
    if (!this.db) throw this.closedError();
    try {
      const file = await open(this.probeFile, 'w');
      try {
        const chunk = Buffer.alloc(Math.min(1 << 20, 2 * bytes));
        for (let left = 2 * bytes; left > 0;) {
          const { bytesWritten } = await file.write(chunk, 0, Math.min(left, chunk.length));
          if (!bytesWritten) throw new Error('a write took no bytes');
          left -= bytesWritten;
        }
        await file.datasync();
      } finally {
        await file.close();
      }
    } catch (err) {
      throw new VigilError('VIGIL_STORE_UNAVAILABLE', `cannot write ${2 * bytes} bytes beside SQLite database '${this.file}': ${errorMessage(err)}`, {
        transient: true,
        cause: err,
      });
    } finally {
      await rm(this.probeFile, { force: true });
    }
    this.run('write a probe', (db) =>
      this.relaxed(db, false, () =>
        db
          .transaction(() => {
            db.prepare("INSERT INTO meta (key, value) VALUES ('probe', 'probe') ON CONFLICT (key) DO UPDATE SET value = excluded.value").run();
            db.prepare("DELETE FROM meta WHERE key = 'probe'").run();
          })
          .immediate(),
      ),
    );
  }

  /**
   * Only entries on disk: a page commit is visible to this connection before its sync resolves,
   * and an entry delivered before then could be lost with its commit in a crash, and the page
   * processed again would file its work a second time (see `commit`).
   */
  async readOutbox(pipeline: string, exporter: string, limit: number): Promise<OutboxEntry[]> {
    const upTo = (this.unsyncedOutbox.get(pipeline)?.[0]?.from ?? Number.MAX_SAFE_INTEGER + 1) - 1;
    return this.run('read the outbox', () =>
      (this.q.outboxRead.all(pipeline, upTo, pipeline, exporter, limit) as Array<{ seq: number; item: string }>).map((r) => ({
        ...parseJson<OutboxItem>(r.item, this.file, 'outbox entry'),
        seq: r.seq,
      })),
    );
  }

  async ackOutbox(pipeline: string, exporter: string, seq: number, dead: Array<{ entry: OutboxEntry; reason: string }> = []): Promise<void> {
    const now = this.now();
    // As a page commit: committed at once, answered once on disk (off the loop).
    const syncOffLoop = this.syncsOffLoop;
    this.run('advance an exporter cursor', (db) =>
      this.relaxed(db, syncOffLoop, () =>
        db
          .transaction(() => {
            const q = this.q;
            for (const d of dead) {
              const letter: DeadLetter = { pipeline, exporter, entry: d.entry, reason: d.reason, time: now };
              q.deadInsert.run(pipeline, exporter, now, JSON.stringify(letter));
            }
            if (dead.length) q.deadTrim.run(pipeline, exporter, pipeline, exporter, MAX_DEAD_LETTERS);
            q.exporterAdvance.run(pipeline, exporter, seq);
            const min = (q.exporterMin.get(pipeline) as { m: number | null }).m;
            if (min !== null) q.outboxTrim.run(pipeline, min);
          })
          .immediate(),
      ),
    );
    this.wrote(syncOffLoop);
    if (syncOffLoop) await this.durableOrSyncOnLoop();
  }

  async listDeadLetters(limit: number, pipeline?: string): Promise<DeadLetter[]> {
    return this.run('list dead letters', () => {
      const rows = (pipeline === undefined ? this.q.deadList.all(limit) : this.q.deadListPipeline.all(pipeline, limit)) as Array<{ letter: string }>;
      return rows.map((r) => parseJson<DeadLetter>(r.letter, this.file, 'dead letter'));
    });
  }

  async status(): Promise<StoreStatus> {
    return this.run('read the status', (db) => {
      const q = this.q;
      const pipelines = [
        ...new Set([
          ...(q.pipelines.all() as Array<{ pipeline: string }>).map((r) => r.pipeline),
          ...((this.qs?.timerPipelines.all() ?? []) as Array<{ pipeline: string }>).map((r) => r.pipeline),
        ]),
      ].sort();
      const out: PipelineStatus[] = pipelines.map((pipeline) => {
        const last = (q.outboxHead.get(pipeline) as { last_seq: number } | undefined)?.last_seq ?? 0;
        return {
          pipeline,
          partitions: (q.partitions.all({ pipeline }) as Array<{ partition: string; cursor: number | null; pending: number }>).map((p) => ({
            partition: p.partition,
            cursor: p.cursor ? String(p.cursor) : null,
            pending: p.pending,
          })),
          timers: (this.qs?.timerStatus.get(pipeline) as { pending: number; nextDue: number | null } | undefined) ?? { pending: 0, nextDue: null },
          outbox: {
            size: (q.outboxSize.get(pipeline) as { n: number }).n,
            exporters: (q.exporters.all(pipeline) as Array<{ exporter: string; cursor: number }>).map((e) => ({
              exporter: e.exporter,
              cursor: e.cursor,
              lag: last - e.cursor,
            })),
          },
        };
      });
      const groups = (this.qg ? this.qg.counts : db.prepare('SELECT COUNT(*) AS n, COALESCE(SUM(open_work), 0) AS open FROM groups')).get() as {
        n: number;
        open: number;
      };
      const recent = (
        db.prepare('SELECT failure FROM recent_failures ORDER BY time DESC, id ASC LIMIT ?').all(RECENT_FAILURES_MAX) as Array<{ failure: string }>
      ).map((r) => parseJson<RecentFailure>(r.failure, this.file, 'recent failure'));
      const deadTotal = (db.prepare('SELECT COUNT(*) AS n FROM dead_letters').get() as { n: number }).n;
      const newest = (q.deadList.all(5) as Array<{ letter: string }>).map((r) => parseJson<DeadLetter>(r.letter, this.file, 'dead letter'));
      return {
        store: this.kind,
        location: this.file,
        pipelines: out,
        groups: groups.n,
        openWork: groups.open,
        recentFailures: recent,
        deadLetters: { total: deadTotal, newest },
        state: this.namespaceStatus(this.now()),
      };
    });
  }
}

/** Opens the write-ahead log for syncing (a plain descriptor), after syncing the directory that holds its entry. */
async function openWal(wal: string, dir: string): Promise<number> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
  return new Promise<number>((resolve, reject) => openFd(wal, 'r', (err, fd) => (err ? reject(err) : resolve(fd))));
}

function parseJson<T>(text: string, file: string, what: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    throw new VigilError('VIGIL_STORE_CORRUPT', `SQLite database '${file}' holds an unreadable ${what}`, { cause: err });
  }
}

/** A write waiting for a sync of the WAL: answered once everything up to `gen` is on disk. */
interface SyncWaiter {
  gen: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** An append waiting for its turn's group commit. */
interface PendingAppend {
  pipeline: string;
  events: AgentEvent[];
  state: EncodedNamespace[];
  resolve: (r: AppendResult) => void;
  reject: (err: unknown) => void;
}

/** What a state write found in its namespace: a row (live or expired) and the live version (0: none). */
interface StateFound {
  row: boolean;
  version: number;
}

interface StateRow {
  value: string;
  version: number;
  expires: number | null;
}

/**
 * Values longer than this stay only in their `state_log` row, read when asked for: 100,000 failure
 * lists of 171 B took 36 MB of heap with their values in memory. A short value (a session id) is
 * kept, so reading it costs no row read.
 */
const INLINE_JSON_CHARS = 64;

/** Keeps a held entry's value in memory only when short (INLINE_JSON_CHARS); its row holds it anyway. */
function inlineOrRow(e: HeldEntry): void {
  if (e.json !== undefined && e.json.length > INLINE_JSON_CHARS) e.json = undefined;
}

/** A stored row as a held entry (its `seq`: the row's, or 0 for one that gets its own). */
function heldOf(r: StateRow, seq: number): HeldEntry {
  const entry: HeldEntry = { json: r.value, version: r.version, seq };
  if (r.expires !== null) entry.expiresAt = r.expires;
  return entry;
}

/** The statements over the version-5 tables: `state_log` (the rows of the namespaces kept in memory) and `seen_ids`. */
function prepareHeld(db: Db) {
  const p = (sql: string): Stmt => db.prepare(sql);
  return {
    seenClaim: p(
      `INSERT INTO seen_ids (pipeline, time, event_id, expires) VALUES (?, ?, ?, ?)
       ON CONFLICT (pipeline, time, event_id) DO UPDATE SET expires = excluded.expires WHERE seen_ids.expires <= ?`,
    ),
    purgeSeen: p('DELETE FROM seen_ids WHERE (pipeline, time, event_id) IN (SELECT pipeline, time, event_id FROM seen_ids WHERE expires <= ? LIMIT ?)'),
    legacySeen: p('SELECT 1 FROM seen_events WHERE pipeline = ? AND event_id = ? AND expires > ?'),
    legacyAny: p('SELECT 1 FROM seen_events LIMIT 1'),
    all: p('SELECT seq, namespace, key, value, version, expires FROM state_log ORDER BY seq'),
    maxSeq: p('SELECT COALESCE(MAX(seq), 0) AS n FROM state_log'),
    evicted: p('SELECT namespace, evicted FROM state_namespaces WHERE evicted > 0'),
    put: p('INSERT INTO state_log (seq, namespace, key, value, version, expires) VALUES (?, ?, ?, ?, ?, ?)'),
    drop: p('DELETE FROM state_log WHERE seq = ?'),
    value: p('SELECT value FROM state_log WHERE seq = ?').pluck(),
    tableRows: p('SELECT key, value, version, expires FROM state_entries WHERE namespace = ? ORDER BY written'),
    tableDrop: p('DELETE FROM state_entries WHERE namespace = ?'),
  };
}

/** The statements over the version-2 tables (processor state and timers). */
function prepareState(db: Db) {
  const p = (sql: string): Stmt => db.prepare(sql);
  return {
    get: p('SELECT version, expires FROM state_entries WHERE namespace = ? AND key = ?'),
    load: p('SELECT value, version, expires FROM state_entries WHERE namespace = ? AND key = ?'),
    list: p(
      `SELECT key, value, version, expires FROM state_entries WHERE namespace = ? AND (expires IS NULL OR expires > ?)
       ORDER BY written DESC LIMIT ?`,
    ),
    put: p(
      `INSERT INTO state_entries (namespace, key, value, version, written, expires) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, version = excluded.version, written = excluded.written, expires = excluded.expires`,
    ),
    delete: p('DELETE FROM state_entries WHERE namespace = ? AND key = ?'),
    purge: p(
      `DELETE FROM state_entries WHERE namespace = ? AND key IN (
         SELECT key FROM state_entries WHERE namespace = ? AND expires IS NOT NULL AND expires <= ? LIMIT ?)`,
    ),
    purgeDue: p('SELECT 1 FROM state_entries WHERE namespace = ? AND expires IS NOT NULL AND expires <= ? LIMIT 1'),
    evict: p('DELETE FROM state_entries WHERE namespace = ? AND key IN (SELECT key FROM state_entries WHERE namespace = ? ORDER BY written LIMIT ?)'),
    nsGet: p('SELECT entries, evicted, last_written FROM state_namespaces WHERE namespace = ?'),
    nsPut: p(
      `INSERT INTO state_namespaces (namespace, entries, evicted, last_written) VALUES (?, ?, ?, ?)
       ON CONFLICT (namespace) DO UPDATE SET entries = excluded.entries, evicted = excluded.evicted, last_written = excluded.last_written`,
    ),
    nsStatus: p(
      `SELECT namespace, entries - (SELECT COUNT(*) FROM state_entries e WHERE e.namespace = n.namespace AND e.expires IS NOT NULL AND e.expires <= ?) AS entries, evicted
       FROM state_namespaces n ORDER BY namespace`,
    ),
    timerGet: p('SELECT version FROM timers WHERE pipeline = ? AND id = ?'),
    timerCount: p('SELECT COUNT(*) AS n FROM timers WHERE pipeline = ?'),
    timerDelete: p('DELETE FROM timers WHERE pipeline = ? AND id = ?'),
    timerInsert: p('INSERT INTO timers (pipeline, id, due, body) VALUES (?, ?, ?, ?)'),
    timersDue: p('SELECT version, id, due, body FROM timers WHERE pipeline = ? AND due <= ? ORDER BY due, version LIMIT ?'),
    timerNext: p('SELECT due FROM timers WHERE pipeline = ? ORDER BY due, version LIMIT 1 OFFSET ?'),
    timerStatus: p('SELECT COUNT(*) AS pending, MIN(due) AS nextDue FROM timers WHERE pipeline = ?'),
    timerPipelines: p('SELECT DISTINCT pipeline FROM timers'),
  };
}

/** `sql` for each table, as one UNION ALL. */
const arms = (tables: readonly string[], sql: (t: string) => string): string => tables.map(sql).join(' UNION ALL ');

/** Every row of the group logs (both, version 4), as one subquery. */
const groupLogRows = (logs: readonly string[]): string => `(${arms(logs, (t) => `SELECT seq, group_key, version, open_work, state FROM ${t}`)})`;

/** Group counts with the group logs folded in: a group's newest log row replaces its `groups` row. */
const groupCounts = (logs: readonly string[]): string => `SELECT COUNT(*) AS n, COALESCE(SUM(open_work), 0) AS open FROM (
  SELECT open_work FROM groups WHERE group_key NOT IN (SELECT group_key FROM ${groupLogRows(logs)})
  UNION ALL SELECT open_work FROM ${groupLogRows(logs)} WHERE seq IN (SELECT MAX(seq) FROM ${groupLogRows(logs)} GROUP BY group_key)
)`;

/**
 * Folds the group logs into `groups` (newest row per group, over both) and empties them; inside
 * the caller's transaction. Upserted in key order, so each database page of `groups` is written once.
 */
function foldGroupLog(db: Db, logs: readonly string[]): void {
  db.prepare(
    `INSERT INTO groups (group_key, version, open_work, state)
     SELECT group_key, version, open_work, state FROM ${groupLogRows(logs)} WHERE seq IN (SELECT MAX(seq) FROM ${groupLogRows(logs)} GROUP BY group_key) ORDER BY group_key
     ON CONFLICT (group_key) DO UPDATE SET version = excluded.version, open_work = excluded.open_work, state = excluded.state`,
  ).run();
  for (const t of logs) db.prepare(`DELETE FROM ${t}`).run();
}

/** The statements over the group logs (version 3 and later); absent when a read-only open found an older file. */
function prepareGroupLog(db: Db, chunks: readonly number[], layout: Layout) {
  return {
    append: layout.groupLogs.map((t) => new RowInserter(db, `INSERT INTO ${t} (seq, group_key, version, open_work, state) VALUES`, 5, '', chunks)),
    // The rows of one statement have distinct keys (a fold upserts each group once).
    upsert: new RowInserter(
      db,
      'INSERT INTO groups (group_key, version, open_work, state) VALUES',
      4,
      'ON CONFLICT (group_key) DO UPDATE SET version = excluded.version, open_work = excluded.open_work, state = excluded.state',
      chunks,
    ),
    // No WHERE: SQLite's truncate optimization frees the table's pages without rewriting them.
    clear: layout.groupLogs.map((t) => db.prepare(`DELETE FROM ${t}`)),
    all: db.prepare(`SELECT seq, group_key, version, open_work, state FROM ${groupLogRows(layout.groupLogs)} ORDER BY seq`),
    counts: db.prepare(groupCounts(layout.groupLogs)),
  };
}

/** The writer's statements over the ingest-log segments (version 4), one set per table. */
function prepareSegments(db: Db) {
  const logs = CURRENT_LAYOUT.logs;
  return {
    insert: logs.map((t) => db.prepare(`INSERT INTO ${t} (seq, pipeline, partition, event) VALUES (?, ?, ?, ?)`)),
    read: logs.map((t) => db.prepare(`SELECT seq, event FROM ${t} WHERE pipeline = ? AND partition = ? AND seq > ? ORDER BY seq LIMIT ?`)),
    countRange: logs.map((t) => db.prepare(`SELECT COUNT(*) AS n FROM ${t} WHERE pipeline = ? AND partition = ? AND seq > ? AND seq <= ?`)),
    firstAfter: logs.map((t) => db.prepare(`SELECT MIN(seq) AS m FROM ${t} WHERE pipeline = ? AND partition = ? AND seq > ?`)),
    // A row when some partition has an entry here after its cursor (the segment is still needed);
    // its index in order, one group per partition.
    unprocessed: logs.map((t) =>
      db.prepare(
        `SELECT 1 FROM (SELECT pipeline, partition, MAX(seq) AS last FROM ${t} GROUP BY pipeline, partition) s
         WHERE s.last > COALESCE((SELECT cursor FROM partition_cursors c WHERE c.pipeline = s.pipeline AND c.partition = s.partition), 0) LIMIT 1`,
      ),
    ),
    // Before any entry goes, in the same transaction: the highest sequence number given out.
    keepSeq: db.prepare(`UPDATE meta SET value = CAST(MAX(CAST(value AS INTEGER), ?) AS TEXT) WHERE key = 'ingest_seq'`),
    // No WHERE: SQLite's truncate optimization frees the table's pages without rewriting them.
    clear: logs.map((t) => db.prepare(`DELETE FROM ${t}`)),
  };
}

/**
 * Entries after each partition's cursor, per partition of a pipeline (`@pipeline`) with any, over the
 * log's tables: counted per partition in each table's index, then the processed ones taken off (a
 * probe of each table's index per partition, not a join per entry).
 */
function backlogSql(logs: readonly string[]): string {
  const processed = logs.map((t) => `(SELECT COUNT(*) FROM ${t} l WHERE l.pipeline = t.pipeline AND l.partition = t.partition AND l.seq <= c.cursor)`).join(' + ');
  return `SELECT partition, pending, pipeline, cursor FROM (
  SELECT t.pipeline, t.partition, c.cursor, t.n - COALESCE(${processed}, 0) AS pending
  FROM (SELECT @pipeline AS pipeline, partition, SUM(n) AS n FROM (${arms(logs, (t) => `SELECT partition, COUNT(*) AS n FROM ${t} WHERE pipeline = @pipeline GROUP BY partition`)}) GROUP BY partition) t
  LEFT JOIN partition_cursors c ON c.pipeline = t.pipeline AND c.partition = t.partition
) t WHERE pending > 0`;
}

/** Every statement the store runs, prepared once per connection. */
function prepare(db: Db, chunks: readonly number[], layout: Layout) {
  const p = (sql: string): Stmt => db.prepare(sql);
  const logs = layout.logs;
  const BACKLOG = backlogSql(logs);
  // The first entry after a partition's cursor, over the tables (each a probe of its index).
  const firstAfter = logs
    .map(
      (t) =>
        `COALESCE((SELECT MIN(seq) FROM ${t} l WHERE l.pipeline = b.pipeline AND l.partition = b.partition AND l.seq > COALESCE(b.cursor, 0)), 9007199254740991)`,
    )
    .join(', ');
  return {
    logNextProcessed: p(
      `SELECT MIN(m) AS m FROM (${arms(
        logs,
        (t) => `SELECT MIN(seq) AS m FROM ${t} WHERE pipeline = @pipeline AND partition = @partition AND seq >= @from
         AND seq <= (SELECT cursor FROM partition_cursors WHERE pipeline = @pipeline AND partition = @partition)`,
      )})`,
    ),
    logTrimWindow: logs.map((t) =>
      p(
        `DELETE FROM ${t} WHERE pipeline = @pipeline AND partition = @partition AND seq >= @lo AND seq < @hi
         AND seq <= (SELECT cursor FROM partition_cursors WHERE pipeline = @pipeline AND partition = @partition)`,
      ),
    ),
    logAny: p(`${arms(logs, (t) => `SELECT 1 FROM ${t} WHERE pipeline = @pipeline AND partition = @partition`)} LIMIT 1`),
    logTrimToCursor: logs.map((t) =>
      p(
        `DELETE FROM ${t} WHERE pipeline = @pipeline AND partition = @partition AND seq <= (SELECT cursor FROM partition_cursors WHERE pipeline = @pipeline AND partition = @partition)`,
      ),
    ),
    // Entries up to a partition's cursor may wait for the next trim: counted per partition, then
    // the processed ones taken off (a probe of the partition index per partition, not a join per entry).
    pendingCount: p(`SELECT COALESCE(SUM(pending), 0) AS n FROM (${BACKLOG})`),
    backlog: p(`SELECT partition, pending, ${logs.length > 1 ? `MIN(${firstAfter})` : firstAfter} AS first FROM (${BACKLOG}) b ORDER BY first`),
    // Each table's entries in its index order, merged (the tables hold disjoint ranges).
    readPage: p(
      `${arms(logs, (t) => `SELECT seq, event FROM ${t} WHERE pipeline = @pipeline AND partition = @partition AND seq > @after`)} ORDER BY seq LIMIT @limit`,
    ),
    cursorGet: p('SELECT cursor FROM partition_cursors WHERE pipeline = ? AND partition = ?'),
    cursorPut: p(
      'INSERT INTO partition_cursors (pipeline, partition, cursor) VALUES (?, ?, ?) ON CONFLICT (pipeline, partition) DO UPDATE SET cursor = excluded.cursor',
    ),
    groupsGet: p('SELECT group_key, state FROM groups WHERE group_key IN (SELECT value FROM json_each(?))'),
    groupVersions: p('SELECT group_key, version FROM groups WHERE group_key IN (SELECT value FROM json_each(?))'),
    turnGet: p('SELECT created FROM turns WHERE pipeline = ? AND turn_id = ?'),
    turnAdd: p(
      `INSERT INTO turns (pipeline, turn_id, created, expires) VALUES (?, ?, ?, ?)
       ON CONFLICT (pipeline, turn_id) DO UPDATE SET created = created + excluded.created, expires = excluded.expires`,
    ),
    revisionGet: p('SELECT revision FROM revisions WHERE execution_id = ?'),
    revisionPut: p(
      `INSERT INTO revisions (execution_id, revision, expires) VALUES (?, ?, ?)
       ON CONFLICT (execution_id) DO UPDATE SET revision = excluded.revision, expires = excluded.expires`,
    ),
    outboxHead: p('SELECT last_seq FROM outbox_heads WHERE pipeline = ?'),
    outboxHeadPut: p('INSERT INTO outbox_heads (pipeline, last_seq) VALUES (?, ?) ON CONFLICT (pipeline) DO UPDATE SET last_seq = excluded.last_seq'),
    outboxInsert: new RowInserter(db, 'INSERT INTO outbox (pipeline, seq, item) VALUES', 3, '', chunks),
    outboxRead: p(
      `SELECT seq, item FROM outbox WHERE pipeline = ? AND seq <= ?
         AND seq > COALESCE((SELECT cursor FROM exporter_cursors WHERE pipeline = ? AND exporter = ?), 0)
       ORDER BY seq LIMIT ?`,
    ),
    outboxTrim: p('DELETE FROM outbox WHERE pipeline = ? AND seq <= ?'),
    outboxSize: p('SELECT COUNT(*) AS n FROM outbox WHERE pipeline = ?'),
    exporterRegister: p('INSERT INTO exporter_cursors (pipeline, exporter, cursor) VALUES (?, ?, 0) ON CONFLICT DO NOTHING'),
    exporterAdvance: p(
      `INSERT INTO exporter_cursors (pipeline, exporter, cursor) VALUES (?, ?, ?)
       ON CONFLICT (pipeline, exporter) DO UPDATE SET cursor = MAX(cursor, excluded.cursor)`,
    ),
    exporterMin: p('SELECT MIN(cursor) AS m FROM exporter_cursors WHERE pipeline = ?'),
    exporterCursor: p('SELECT cursor FROM exporter_cursors WHERE pipeline = ? AND exporter = ?'),
    exporterDelete: p('DELETE FROM exporter_cursors WHERE pipeline = ? AND exporter = ?'),
    exporters: p('SELECT exporter, cursor FROM exporter_cursors WHERE pipeline = ? ORDER BY exporter'),
    deadInsert: p('INSERT INTO dead_letters (pipeline, exporter, time, letter) VALUES (?, ?, ?, ?)'),
    deadTrim: p(
      `DELETE FROM dead_letters WHERE pipeline = ? AND exporter = ? AND id <= COALESCE(
         (SELECT id FROM dead_letters WHERE pipeline = ? AND exporter = ? ORDER BY id DESC LIMIT 1 OFFSET ?), -1)`,
    ),
    deadList: p('SELECT letter FROM dead_letters ORDER BY time DESC, id DESC LIMIT ?'),
    deadListPipeline: p('SELECT letter FROM dead_letters WHERE pipeline = ? ORDER BY time DESC, id DESC LIMIT ?'),
    failureInsert: new RowInserter(db, 'INSERT INTO recent_failures (time, failure) VALUES', 2, '', chunks),
    failureTrim: p('DELETE FROM recent_failures WHERE id NOT IN (SELECT id FROM recent_failures ORDER BY time DESC, id ASC LIMIT ?)'),
    purgeSeen: p('DELETE FROM seen_events WHERE (pipeline, event_id) IN (SELECT pipeline, event_id FROM seen_events WHERE expires <= ? LIMIT ?)'),
    purgeTurns: p('DELETE FROM turns WHERE (pipeline, turn_id) IN (SELECT pipeline, turn_id FROM turns WHERE expires <= ? LIMIT ?)'),
    purgeRevisions: p('DELETE FROM revisions WHERE execution_id IN (SELECT execution_id FROM revisions WHERE expires <= ? LIMIT ?)'),
    pipelines: p(
      `SELECT pipeline FROM partition_cursors UNION ${logs.map((t) => `SELECT pipeline FROM ${t}`).join(' UNION ')} UNION SELECT pipeline FROM outbox_heads
       UNION SELECT pipeline FROM exporter_cursors ORDER BY pipeline`,
    ),
    partitions: p(
      `SELECT partition, MAX(cursor) AS cursor, SUM(pending) AS pending FROM (
         SELECT partition, cursor, 0 AS pending FROM partition_cursors WHERE pipeline = @pipeline
         UNION ALL SELECT partition, NULL, pending FROM (${BACKLOG})
       ) GROUP BY partition ORDER BY partition`,
    ),
  };
}
