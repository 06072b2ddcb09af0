/**
 * Receiver `journal` (DESIGN 3.5): tails agent runtimes' error journals
 * (`runtime_error_cases.jsonl`, one case per line) and appends each case as a
 * `runtime.error_case` event. Offsets are durable: each file's offset is written with the cases
 * read up to it, in the same atomic append (receiver state, `append(…, {state})`), so a restart
 * neither skips nor repeats a case. Compaction by the journal's consumer (the file rewritten with
 * its unconsumed tail, in place or by a rename), rotation and deletion are followed without loss
 * or duplicates (see follow.ts); case ids are event ids, so anything read twice is dropped at
 * append. A line that is not a case (not JSON, wrong fields, an unknown `error_kind`, longer than
 * `max_line_size`) is skipped with a warning naming the file and its byte offset, and counted.
 *
 * File-system events (`fs.watch` on the directories involved) wake the reader at once where the
 * platform has them; polling every `poll_interval` is the fallback and catches everything else.
 * A batch the store refuses is retried with backoff: the journal itself is the buffer.
 */
import { watch, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';
import type { ComponentMetric, IngestConsumer, ReceiverFactory, ReceiverSettings, Signal } from '../../component.ts';
import { s, type Infer } from '../../config/schema.ts';
import { errorMessage, isVigilError } from '../../errors.ts';
import type { AgentEvent } from '../../model/event.ts';
import { backoffDelay, Wakeup } from '../../internal/backoff.ts';
import type { StateWrite } from '../../store/state.ts';
import { parseJournalLine, type CaseSource, type LineOutcome } from './case-event.ts';
import { FollowedFile, type FileOffset, type RewriteKind } from './follow.ts';
import { excluded, excludeMatchers, expandGlob, staticBase, MAX_MATCHES } from './glob.ts';

/** Default poll interval (fs events usually wake the reader sooner). */
export const DEFAULT_POLL_INTERVAL_MS = 200;
/** Longest journal line by default; longer lines are skipped. */
export const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;
/** Skipped-line warnings logged per file and read; the rest are counted and summed up in one line. */
const WARNINGS_PER_READ = 10;
/** Directories watched for file-system events at most (polling covers the rest). */
const MAX_WATCHED_DIRS = 256;
/** How often the include globs are expanded again when no file-system event says a directory changed. */
const EXPAND_EVERY_MS = 1000;
/** Files listed one by one in `stats()`. */
const STATUS_FILES = 100;

const schema = s
  .object({
    /** Journals to follow: globs (`*`, `?`, `**`, `~/`), relative to the working directory. */
    include: s.array(s.string({ minLength: 1 })),
    /** Files to leave out, even when `include` matches them: globs on the path, or on the file name when they hold no `/`. */
    exclude: s.array(s.string({ minLength: 1 })).default([]),
    /** `beginning` reads files present at start from their first line; `end` only what is written after. A file with a stored offset resumes from it either way. */
    start_at: s.enumOf(['beginning', 'end'] as const).default('beginning'),
    /** How often files are checked when no file-system event wakes the reader. */
    poll_interval: s.duration({ min: 10 }).default(DEFAULT_POLL_INTERVAL_MS),
    /** Cases appended per batch (and per offset write). */
    batch_size: s.int({ min: 1, max: 10_000 }).default(256),
    /** Lines longer than this are skipped with a warning (never held in memory whole). */
    max_line_size: s.size().default(DEFAULT_MAX_LINE_BYTES),
    /** The service cases are reported under, unless a case names its own `service`. */
    service: s.string({ minLength: 1 }).default('unknown_service'),
    /** A regular expression on the file's absolute path whose first group is the session, for cases that name none. */
    session_from_path: s.string({ minLength: 1 }).optional(),
  })
  .check((cfg, report) => {
    if (cfg.include.length === 0) report(['include'], 'must name at least one file or glob');
    if (cfg.max_line_size < 1024 || cfg.max_line_size > 64 * 1024 * 1024) report(['max_line_size'], 'must be between 1KiB and 64MiB');
    if (cfg.session_from_path !== undefined) {
      let re: RegExp | undefined;
      try {
        re = new RegExp(cfg.session_from_path);
      } catch (err) {
        report(['session_from_path'], `is not a valid regular expression: ${errorMessage(err)}`);
      }
      if (re && new RegExp(`${re.source}|`).exec('')!.length < 2) report(['session_from_path'], 'needs a capture group for the session, e.g. "/sessions/([^/]+)/"');
    }
  });
export type JournalReceiverConfig = Infer<typeof schema>;

export const journalReceiverFactory: ReceiverFactory<JournalReceiverConfig> = {
  type: 'journal',
  schema,
  signals: ['logs', 'traces'],
  create(settings, cfg) {
    return new JournalReceiver(settings, cfg);
  },
};

type SkipReason = 'not_json' | 'not_a_case' | 'unknown_error_kind' | 'overlong';

export interface JournalStats {
  /** Files followed now. */
  files: number;
  /** Non-blank lines read. */
  lines: number;
  /** Cases read and handed to the pipelines. */
  cases: number;
  appended: number;
  duplicates: number;
  /** Lines skipped, by reason. */
  skipped: Record<SkipReason, number>;
  /** Times a followed file was found rewritten (compaction), by how. */
  rewrites: Record<RewriteKind, number>;
  /** Batches the store refused (retried). */
  refused: number;
  /** Bytes not read yet, over all files. */
  lagBytes: number;
  /** The first files followed, with their offset and lag. */
  followed: Array<{ path: string; offset: number; lagBytes: number }>;
}

class JournalReceiver {
  private readonly abort = new AbortController();
  private readonly wakeup = new Wakeup();
  private loop: Promise<void> | undefined;
  private readonly files = new Map<string, Tracked>();
  private readonly watchers = new Map<string, FSWatcher>();
  private readonly consumers: Array<[Signal, IngestConsumer]>;
  private readonly bySignal = new Map<Signal, { appended: number; duplicates: number }>();
  private readonly exclude: RegExp[];
  private readonly sessionFromPath: RegExp | undefined;
  private readonly counters = {
    lines: 0,
    cases: 0,
    appended: 0,
    duplicates: 0,
    refused: 0,
    skipped: { not_json: 0, not_a_case: 0, unknown_error_kind: 0, overlong: 0 } as Record<SkipReason, number>,
    rewrites: { truncated: 0, rewritten: 0, replaced: 0 } as Record<RewriteKind, number>,
  };
  /** Files present at the first look are positioned by `start_at`; files that appear later are new and read whole. */
  private firstLook = true;
  /** The include globs' last expansion: redone on a file-system event, else at most every EXPAND_EVERY_MS. */
  private expanded: { paths: string[]; at: number } | undefined;
  private dirEvent = false;
  private tooMany = false;

  constructor(
    private readonly settings: ReceiverSettings,
    private readonly cfg: JournalReceiverConfig,
  ) {
    this.consumers = Object.entries(settings.consumers).filter((e): e is [Signal, IngestConsumer] => !!e[1]);
    for (const [signal] of this.consumers) this.bySignal.set(signal, { appended: 0, duplicates: 0 });
    this.exclude = excludeMatchers(cfg.exclude);
    this.sessionFromPath = cfg.session_from_path === undefined ? undefined : new RegExp(cfg.session_from_path);
  }

  async start(): Promise<void> {
    const found = await this.expand();
    if (found.length === 0)
      this.settings.logger.warn('no journal matches include yet; waiting for one to appear', { receiver: this.settings.id, include: this.cfg.include });
    this.loop = this.run();
  }

  async shutdown(): Promise<void> {
    this.abort.abort();
    await this.loop;
    this.loop = undefined;
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
    await Promise.allSettled([...this.files.values()].map((t) => t.file.release()));
  }

  stats(): JournalStats {
    const tracked = [...this.files.values()];
    return {
      files: tracked.length,
      lines: this.counters.lines,
      cases: this.counters.cases,
      appended: this.counters.appended,
      duplicates: this.counters.duplicates,
      skipped: { ...this.counters.skipped },
      rewrites: { ...this.counters.rewrites },
      refused: this.counters.refused,
      lagBytes: tracked.reduce((n, t) => n + t.file.lag, 0),
      followed: tracked.slice(0, STATUS_FILES).map((t) => ({ path: t.file.path, offset: t.file.offset?.offset ?? 0, lagBytes: t.file.lag })),
    };
  }

  metrics(): ComponentMetric[] {
    const st = this.stats();
    const counter = (name: string, help: string, labels: Record<string, string>, value: number): ComponentMetric => ({ name, type: 'counter', help, labels, value });
    const gauge = (name: string, help: string, value: number): ComponentMetric => ({ name, type: 'gauge', help, labels: {}, value });
    return [
      counter('vigil_receiver_lines_total', 'Lines read from files (JSONL, journals) or stdin, blank lines aside.', {}, st.lines),
      ...Object.entries(st.skipped).map(([reason, n]) =>
        counter(
          'vigil_receiver_skipped_lines_total',
          'Journal lines skipped with a warning naming file and byte offset, by reason: not_json, not_a_case, unknown_error_kind, overlong.',
          { reason },
          n,
        ),
      ),
      ...Object.entries(st.rewrites).map(([how, n]) =>
        counter(
          'vigil_receiver_file_rewrites_total',
          'Times a followed journal was found rewritten by its consumer (compaction) and reading resynchronized, by how: truncated, rewritten in place, replaced at its path.',
          { how },
          n,
        ),
      ),
      counter(
        'vigil_receiver_refused_batches_total',
        'Batches the store refused (backpressure, store down, concurrent writer); retried from the file.',
        {},
        st.refused,
      ),
      gauge('vigil_receiver_files', 'Files the receiver follows now.', st.files),
      gauge('vigil_receiver_lag_bytes', 'Bytes written to the followed files and not read yet.', st.lagBytes),
      ...[...this.bySignal].flatMap(([signal, c]) => [
        counter('vigil_receiver_appended_records_total', 'Records durably appended to the ingest log.', { signal, protocol: 'journal' }, c.appended),
        counter(
          'vigil_receiver_duplicate_records_total',
          'Records the ingest log already held (redeliveries), counted once.',
          { signal, protocol: 'journal' },
          c.duplicates,
        ),
      ]),
    ];
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      let more = false;
      try {
        more = await this.round();
      } catch (err) {
        // A round never fails as a whole on a file's trouble (those are handled per file); this is a bug guard.
        this.settings.logger.error('journal round failed; retrying', { receiver: this.settings.id, error: errorMessage(err) });
      }
      if (!more) await this.wakeup.wait(this.cfg.poll_interval, signal);
    }
  }

  /** One look at every file; true when some file has more to read right away. */
  private async round(): Promise<boolean> {
    if (!this.expanded || this.dirEvent || Date.now() - this.expanded.at >= Math.max(this.cfg.poll_interval, EXPAND_EVERY_MS)) {
      this.dirEvent = false;
      this.expanded = { paths: await this.expand(), at: Date.now() };
    }
    const paths = this.expanded.paths;
    const initial = this.firstLook ? this.cfg.start_at : 'beginning';
    this.firstLook = false;
    for (const path of paths) {
      if (!this.files.has(path))
        this.files.set(path, { file: new FollowedFile(path, undefined), loaded: false, committed: undefined, version: 0, retryAt: 0, attempts: 0, initial });
    }
    this.watchDirs(paths);
    let more = false;
    for (const [path, t] of this.files) {
      if (this.abort.signal.aborted) break;
      if (t.retryAt > Date.now()) continue;
      try {
        const r = await this.pollFile(t);
        if (r === 'more') more = true;
        if (r === 'absent' && !paths.includes(path)) this.files.delete(path);
      } catch (err) {
        this.retryLater(t, err);
      }
    }
    return more;
  }

  private async expand(): Promise<string[]> {
    const out = new Set<string>();
    for (const pattern of this.cfg.include) for (const f of await expandGlob(pattern)) if (!excluded(f, this.exclude)) out.add(f);
    const list = [...out];
    if (list.length > MAX_MATCHES) {
      if (!this.tooMany)
        this.settings.logger.warn(`include matches more than ${MAX_MATCHES} files; following the first ${MAX_MATCHES}`, { receiver: this.settings.id });
      this.tooMany = true;
      return list.slice(0, MAX_MATCHES);
    }
    return list;
  }

  /** Reads what is new in one file and appends it with the file's new offset. */
  private async pollFile(t: Tracked): Promise<'more' | 'idle' | 'absent'> {
    if (!t.loaded) {
      const stored = await this.settings.state?.get(t.file.path);
      if (stored && isFileOffset(stored.value)) {
        t.file.offset = stored.value;
        t.committed = stored.value;
        t.version = stored.version;
      }
      t.loaded = true;
    }
    const c = await t.file.check(t.initial);
    if (c.status === 'absent') return 'absent';
    if (c.rewrite) {
      this.counters.rewrites[c.rewrite]++;
      this.settings.logger.info(
        `${t.file.path}: the journal was ${c.rewrite === 'replaced' ? 'replaced' : c.rewrite} (compacted or rotated); reading resumes at byte ${t.file.offset!.offset}`,
        {
          receiver: this.settings.id,
        },
      );
    }
    const source: CaseSource = { file: t.file.path, fileSession: this.fileSession(t.file.path), service: this.cfg.service };
    // A valid case names itself by its unique case id: the offset's tail window starts at one.
    // The reader asks from the last line back, usually of one line; what it parsed is kept for the
    // loop below, so no line is parsed twice.
    const parsed = new WeakMap<Buffer, LineOutcome>();
    const parse = (bytes: Buffer): LineOutcome => {
      let r = parsed.get(bytes);
      if (!r) parsed.set(bytes, (r = parseJournalLine(bytes.toString('utf8').replace(/\r$/, ''), source)));
      return r;
    };
    const read = await t.file.read(this.cfg.batch_size, this.cfg.max_line_size, (bytes) => parse(bytes).ok);
    const events: AgentEvent[] = [];
    const skipped: Array<{ reason: SkipReason; offset: number; error: string }> = [];
    let lines = read.overlong.length;
    for (const at of read.overlong) skipped.push({ reason: 'overlong', offset: at, error: `line longer than ${this.cfg.max_line_size} bytes (max_line_size)` });
    for (const line of read.lines) {
      if (line.bytes.toString('utf8').trim() === '') continue;
      lines++;
      const r = parse(line.bytes);
      if (r.ok) events.push(r.event);
      else skipped.push({ reason: r.reason, offset: line.offset, error: r.error });
    }
    const moved = c.status === 'moved';
    if (events.length > 0 || !sameOffset(read.next, t.committed)) await this.deliver(t, events, read.next);
    // Counted once the offset past them is committed (a refused batch is read again); in file order.
    this.counters.lines += lines;
    skipped.sort((a, b) => a.offset - b.offset);
    for (const [i, k] of skipped.entries()) {
      this.counters.skipped[k.reason]++;
      if (i < WARNINGS_PER_READ)
        this.settings.logger.warn(`${t.file.path}: byte ${k.offset}: skipped: ${k.error}`, {
          receiver: this.settings.id,
          reason: k.reason,
          skipped_total: this.counters.skipped[k.reason],
        });
    }
    if (skipped.length > WARNINGS_PER_READ)
      this.settings.logger.warn(`${t.file.path}: ${skipped.length - WARNINGS_PER_READ} more lines skipped in this read`, { receiver: this.settings.id });
    t.file.offset = read.next;
    t.file.lag = read.remaining;
    t.attempts = 0;
    if (moved && read.lines.length < this.cfg.batch_size) {
      // The old file is read to its end (a torn last line in it is never finished): go on with
      // whatever is at the path now.
      await t.file.release();
      return 'more';
    }
    return read.remaining > 0 && read.lines.length >= this.cfg.batch_size ? 'more' : 'idle';
  }

  /**
   * Appends a batch to every pipeline, with the file's new offset written by the last append
   * (conditionally on the stored version, so two sidecars following one file cannot both move it).
   */
  private async deliver(t: Tracked, events: AgentEvent[], next: FileOffset): Promise<void> {
    const state: StateWrite[] = this.settings.state ? [this.settings.state.put(t.file.path, next, { version: t.version + 1 })] : [];
    for (const [i, [signal, consume]] of this.consumers.entries()) {
      const last = i === this.consumers.length - 1;
      const r = await consume(events, last && state.length ? { state } : {});
      const c = this.bySignal.get(signal)!;
      c.appended += r.appended;
      c.duplicates += r.duplicates;
      if (last) {
        this.counters.appended += r.appended;
        this.counters.duplicates += r.duplicates;
      }
    }
    this.counters.cases += events.length;
    if (state.length) t.version++;
    t.committed = next;
  }

  /** A file whose batch failed is read again from its committed offset after a backoff. */
  private retryLater(t: Tracked, err: unknown): void {
    if (this.abort.signal.aborted) return;
    this.counters.refused++;
    t.attempts++;
    t.retryAt = Date.now() + backoffDelay({ initial: 100, max: 5000 }, t.attempts);
    if (isVigilError(err, 'VIGIL_STORE_CONFLICT')) {
      // Another writer moved this file's offset: take the stored one again.
      t.loaded = false;
      t.retryAt = 0;
      t.file.offset = undefined;
      void t.file.release().catch(() => undefined);
      this.settings.logger.info(`${t.file.path}: its offset was moved by another writer; reading from the stored offset`, { receiver: this.settings.id });
      return;
    }
    // Re-read from the committed offset: nothing read after it counted.
    t.file.offset = t.committed ?? t.file.offset;
    const level = t.attempts === 1 ? 'warn' : 'debug';
    this.settings.logger[level](`${t.file.path}: batch not appended; retrying from byte ${t.file.offset?.offset ?? 0}`, {
      receiver: this.settings.id,
      attempt: t.attempts,
      error: errorMessage(err),
    });
  }

  private fileSession(path: string): string | undefined {
    if (!this.sessionFromPath) return undefined;
    const m = this.sessionFromPath.exec(path);
    return m?.[1] || undefined;
  }

  /** Watches the directories of the followed files and the patterns' fixed parts; events only wake the reader. */
  private watchDirs(paths: string[]): void {
    const dirs = new Set<string>([...this.cfg.include.map(staticBase), ...paths.map((p) => dirname(p))]);
    for (const dir of dirs) {
      if (this.watchers.has(dir) || this.watchers.size >= MAX_WATCHED_DIRS) continue;
      try {
        const w = watch(dir, { persistent: false }, () => {
          this.dirEvent = true;
          this.wakeup.notify();
        });
        w.on('error', () => {
          w.close();
          this.watchers.delete(dir);
        });
        this.watchers.set(dir, w);
      } catch {
        // No such directory yet, or no file-system events here: polling covers it.
      }
    }
  }
}

interface Tracked {
  file: FollowedFile;
  /** Whether the stored offset was read. */
  loaded: boolean;
  /** The offset last committed (stored), and the stored version. */
  committed: FileOffset | undefined;
  version: number;
  retryAt: number;
  attempts: number;
  /** Where a file never seen before starts. */
  initial: 'beginning' | 'end';
}

function sameOffset(a: FileOffset, b: FileOffset | undefined): boolean {
  return b !== undefined && a.offset === b.offset && a.ino === b.ino && a.dev === b.dev && a.tail === b.tail && !!a.skip === !!b.skip;
}

function isFileOffset(v: unknown): v is FileOffset {
  const o = v as FileOffset;
  return (
    typeof v === 'object' &&
    v !== null &&
    o.v === 1 &&
    typeof o.offset === 'number' &&
    typeof o.ino === 'number' &&
    typeof o.dev === 'number' &&
    typeof o.tail === 'string'
  );
}
