/**
 * The writer's copy of the dedupe log (schema version 5). An append used to upsert each event's
 * id into `seen_events`, keyed by (pipeline, event id): ids are hashes, so every id landed on a
 * database page of its own and an append of 64 events rewrote about 54 pages (a fifth of a
 * megabyte of WAL) on the acknowledgement's path. Now the ids go to `seen_log` (or `seen_log_b`)
 * in sequence, a page or two per append, and the writer keeps them here; a fold upserts them into
 * `seen_events` in key order, in steps off the append's path (each page of `seen_events` written
 * once per fold, not once per id), then empties its log whole. Two logs used in turn, as the group
 * log: appends go to one while the other is folded.
 *
 * An id is a duplicate while its newest `expires` is ahead: here if the writer logged it and has
 * not upserted it into `seen_events` since, else there. The changes an append makes are noted with
 * how to undo them, so an append or commit whose transaction (or savepoint) rolls back leaves the
 * copy as the file is. Nothing here walks every id at once (a walk of the 16–32k ids took 10–20 ms
 * of the event loop): each log keeps its ids in buckets by pipeline and the first two characters of
 * the id as they come, a fold sorts only the bucket it reaches, and forgets the ids it upserted.
 */
export interface LoggedId {
  key: string;
  pipeline: string;
  eventId: string;
  expires: number;
  /** The bucket of its log it was put in (an undo takes it off the end). */
  bucket: LoggedId[];
}

export class SeenLog {
  private readonly ids = new Map<string, LoggedId>();
  /** Changes not yet committed, oldest first: the id noted, the log it went to and what its key held before (undefined: absent). */
  private undo: Array<[LoggedId, number, LoggedId | undefined]> = [];
  /** Each log's ids by bucket (pipeline and the id's first two characters), as they came. */
  private buckets: Array<Map<string, LoggedId[]>> = [new Map<string, LoggedId[]>(), new Map<string, LoggedId[]>()];
  /** Rows in each log table. */
  private readonly rows = [0, 0];

  /** The newest `expires` logged for the id and not yet upserted into `seen_events`, if any. */
  expiresOf(pipeline: string, eventId: string): number | undefined {
    return this.ids.get(`${pipeline}\u0000${eventId}`)?.expires;
  }

  /** The id was written to log `log` in the open transaction. */
  note(pipeline: string, eventId: string, expires: number, log: number): void {
    const key = `${pipeline}\u0000${eventId}`;
    const b = `${pipeline}\u0000${eventId.slice(0, 2)}`;
    const logBuckets = this.buckets[log]!;
    let bucket = logBuckets.get(b);
    if (!bucket) logBuckets.set(b, (bucket = []));
    const id: LoggedId = { key, pipeline, eventId, expires, bucket };
    bucket.push(id);
    this.undo.push([id, log, this.ids.get(key)]);
    this.ids.set(key, id);
    this.rows[log]!++;
  }

  /** Where the uncommitted changes stand now (for `rollBack`). */
  mark(): number {
    return this.undo.length;
  }

  /** The transaction (or savepoint) holding the changes since `mark` rolled back. */
  rollBack(mark = 0): void {
    while (this.undo.length > mark) {
      const [id, log, before] = this.undo.pop()!;
      // Undone newest first: each id is the last of its bucket by now.
      id.bucket.pop();
      this.rows[log]!--;
      if (before) this.ids.set(id.key, before);
      else this.ids.delete(id.key);
    }
  }

  /** The transaction committed: its changes stand. */
  committed(): void {
    this.undo = [];
  }

  /** Rows written to log `log` since it was last emptied. */
  rowsIn(log: number): number {
    return this.rows[log]!;
  }

  /** A fold of log `log` (appends go to the other from now on): its buckets in key order; ids expired by `now` are left out. */
  foldOrder(log: number, now: number): SeenFold {
    const buckets = this.buckets[log]!;
    this.buckets[log] = new Map<string, LoggedId[]>();
    return new SeenFold(
      this,
      log,
      now,
      [...buckets.keys()].sort().map((b) => buckets.get(b)!),
    );
  }

  /** Whether `id` is the newest noted for its key (not noted again since). */
  isCurrent(id: LoggedId): boolean {
    return this.ids.get(id.key) === id;
  }

  /** These ids are in `seen_events` now (or expired): the dedupe finds them there. */
  forget(ids: readonly LoggedId[]): void {
    for (const id of ids) if (this.ids.get(id.key) === id) this.ids.delete(id.key);
  }

  /** Log `log` was emptied whole (its fold upserted every id). */
  emptied(log: number): void {
    this.rows[log] = 0;
  }

  /** Both logs were folded at once (close). */
  clear(): void {
    this.ids.clear();
    this.undo = [];
    this.buckets = [new Map<string, LoggedId[]>(), new Map<string, LoggedId[]>()];
    this.rows[0] = this.rows[1] = 0;
  }

  get size(): number {
    return this.ids.size;
  }
}

/**
 * A fold of one dedupe log, taken in steps: its buckets in key order, each sorted when reached, so
 * the steps upsert the ids into `seen_events` in key order (each database page written about once
 * per fold). An id noted again since (its newer row is in the other log) or expired is skipped.
 */
export class SeenFold {
  private bucket = 0;
  private offset = 0;
  stalled = false;

  constructor(
    private readonly seen: SeenLog,
    readonly log: number,
    private readonly now: number,
    private readonly buckets: LoggedId[][],
  ) {}

  get done(): boolean {
    return this.bucket >= this.buckets.length;
  }

  /**
   * Hands the next ids (at most `n`, in key order) to `upsert`; once it returned, moves past them
   * and the writer's copy forgets them. When `upsert` throws, the same ids come again next time.
   */
  step(n: number, upsert: (ids: readonly LoggedId[]) => void): void {
    const ids: LoggedId[] = [];
    const passed: LoggedId[] = [];
    let b = this.bucket;
    let o = this.offset;
    while (ids.length < n && b < this.buckets.length) {
      const bucket = this.buckets[b]!;
      if (o === 0) bucket.sort((x, y) => (x.eventId < y.eventId ? -1 : x.eventId > y.eventId ? 1 : 0));
      const id = bucket[o++]!;
      if (o >= bucket.length) {
        b++;
        o = 0;
      }
      if (!this.seen.isCurrent(id)) continue;
      passed.push(id);
      if (id.expires > this.now) ids.push(id);
    }
    upsert(ids);
    this.bucket = b;
    this.offset = o;
    this.seen.forget(passed);
  }
}
