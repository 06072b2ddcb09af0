/**
 * The SQLite store's tables (DESIGN 2). One file holds everything; every commit is one
 * transaction over these tables. `ingest_log.seq` is AUTOINCREMENT so a sequence number is never
 * reused after trimming: a partition cursor compares sequence numbers, and a reused one could hide
 * a new entry behind an old cursor.
 */
export const SCHEMA_VERSION = 5;

const V1 = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS ingest_log (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  pipeline TEXT NOT NULL,
  partition TEXT NOT NULL,
  event TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ingest_log_by_partition ON ingest_log (pipeline, partition, seq);

CREATE TABLE IF NOT EXISTS partition_cursors (
  pipeline TEXT NOT NULL,
  partition TEXT NOT NULL,
  cursor INTEGER NOT NULL,
  PRIMARY KEY (pipeline, partition)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS seen_events (
  pipeline TEXT NOT NULL,
  event_id TEXT NOT NULL,
  expires INTEGER NOT NULL,
  PRIMARY KEY (pipeline, event_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS seen_events_by_expiry ON seen_events (expires);

CREATE TABLE IF NOT EXISTS groups (
  group_key TEXT PRIMARY KEY,
  version INTEGER NOT NULL,
  open_work INTEGER NOT NULL,
  state TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS turns (
  pipeline TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  created INTEGER NOT NULL,
  expires INTEGER NOT NULL,
  PRIMARY KEY (pipeline, turn_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS turns_by_expiry ON turns (expires);

CREATE TABLE IF NOT EXISTS revisions (
  execution_id TEXT PRIMARY KEY,
  revision TEXT NOT NULL,
  expires INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS revisions_by_expiry ON revisions (expires);

CREATE TABLE IF NOT EXISTS outbox (
  pipeline TEXT NOT NULL,
  seq INTEGER NOT NULL,
  item TEXT NOT NULL,
  PRIMARY KEY (pipeline, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS outbox_heads (pipeline TEXT PRIMARY KEY, last_seq INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS exporter_cursors (
  pipeline TEXT NOT NULL,
  exporter TEXT NOT NULL,
  cursor INTEGER NOT NULL,
  PRIMARY KEY (pipeline, exporter)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS dead_letters (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  pipeline TEXT NOT NULL,
  exporter TEXT NOT NULL,
  time INTEGER NOT NULL,
  letter TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS dead_letters_by_exporter ON dead_letters (pipeline, exporter, id);

CREATE TABLE IF NOT EXISTS recent_failures (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  time INTEGER NOT NULL,
  failure TEXT NOT NULL
);
`;

/**
 * Version 2: processor state (namespaced, versioned entries; see src/store/state.ts) and durable
 * timers. `state_namespaces` keeps each namespace's row count (expired rows not yet purged
 * included) so the bound is checked without counting, and the last write sequence (eviction
 * order). `timers.version` is AUTOINCREMENT: setting a timer again gives it a version never used
 * before, so a clear of an older setting cannot remove a newer one.
 */
const V2 = `
CREATE TABLE IF NOT EXISTS state_entries (
  namespace TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  version INTEGER NOT NULL,
  written INTEGER NOT NULL,
  expires INTEGER,
  PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS state_entries_by_written ON state_entries (namespace, written);
CREATE INDEX IF NOT EXISTS state_entries_by_expiry ON state_entries (namespace, expires) WHERE expires IS NOT NULL;
CREATE TABLE IF NOT EXISTS state_namespaces (
  namespace TEXT PRIMARY KEY,
  entries INTEGER NOT NULL,
  evicted INTEGER NOT NULL,
  last_written INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS timers (
  version INTEGER PRIMARY KEY AUTOINCREMENT,
  pipeline TEXT NOT NULL,
  id TEXT NOT NULL,
  due INTEGER NOT NULL,
  body TEXT NOT NULL,
  UNIQUE (pipeline, id)
);
CREATE INDEX IF NOT EXISTS timers_by_due ON timers (pipeline, due, version);
`;

/**
 * Version 3: the group log. A page commit appends the states of the groups it updated here, in
 * sequence, instead of updating their rows in `groups`: rows keyed by a hashed group key are
 * scattered, so a page touching 250 groups rewrote about 250 database pages, where appending
 * rewrites a handful. The writer folds the log into `groups` (newest row per key wins) once it
 * holds FOLD_ROWS rows (see store.ts; in steps), and at open and at close in one transaction;
 * between folds a group's state is its newest row here if it has one, else its row in `groups`
 * (readers beside the writer merge the two the same way). No index on `group_key`: it would
 * make each append scattered again, and the log stays short (see FOLD_ROWS in store.ts).
 */
const V3 = `
CREATE TABLE IF NOT EXISTS group_log (
  seq INTEGER PRIMARY KEY,
  group_key TEXT NOT NULL,
  version INTEGER NOT NULL,
  open_work INTEGER NOT NULL,
  state TEXT NOT NULL
);
`;

/**
 * Version 4: tables that are emptied whole instead of deleted from by ranges. A ranged `DELETE`
 * writes every database page it touches, about as many bytes as the rows it removes (2,048 rows:
 * about 148 pages), where `DELETE FROM t` without `WHERE` (SQLite's truncate optimization) frees
 * the table's pages in 4–6 page writes: trims of the ingest log and the group log's fold deletes
 * cost as much to write as the appends had.
 * - The ingest log is LOG_SLOTS tables (`ingest_log_<n>`), each a segment holding one range of
 *   sequence numbers; appends go to the newest (see store.ts: SEGMENT_ROWS), and a segment is
 *   emptied once every partition's cursor has passed its entries. Sequence numbers are given by
 *   the writer: the highest ever used is kept in `meta` ('ingest_seq') when a segment is emptied,
 *   so none is reused (a partition cursor compares them). `ingest_log` becomes a view of all
 *   segments (for reading by hand; the store's statements read each segment's index).
 * - The group log is two tables used in turn: a fold takes the full one (it is upserted into
 *   `groups`, then emptied whole) while commits append to the other.
 * Self-contained: an existing file's entries move into the first segment, its AUTOINCREMENT
 * counter into `meta`.
 */
export const LOG_SLOTS = 8;
export const logSlot = (n: number): string => `ingest_log_${n}`;
const slots = Array.from({ length: LOG_SLOTS }, (_, n) => logSlot(n));
const V4 = `
CREATE TABLE IF NOT EXISTS group_log_b (
  seq INTEGER PRIMARY KEY,
  group_key TEXT NOT NULL,
  version INTEGER NOT NULL,
  open_work INTEGER NOT NULL,
  state TEXT NOT NULL
);
${slots
  .map(
    (t) => `CREATE TABLE IF NOT EXISTS ${t} (
  seq INTEGER PRIMARY KEY,
  pipeline TEXT NOT NULL,
  partition TEXT NOT NULL,
  event TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ${t}_by_partition ON ${t} (pipeline, partition, seq);`,
  )
  .join('\n')}
INSERT INTO meta (key, value) VALUES ('ingest_seq', CAST(MAX(
    COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'ingest_log'), 0), COALESCE((SELECT MAX(seq) FROM ingest_log), 0)) AS TEXT))
  ON CONFLICT (key) DO UPDATE SET value = excluded.value;
INSERT INTO ${slots[0]} (seq, pipeline, partition, event) SELECT seq, pipeline, partition, event FROM ingest_log;
DROP TABLE ingest_log;
CREATE VIEW ingest_log AS ${slots.map((t) => `SELECT seq, pipeline, partition, event FROM ${t}`).join(' UNION ALL ')};
`;

/**
 * Version 5: the state of namespaces kept in memory (StateWrite `cached`, keyed-state.ts): one row
 * per live entry, keyed by its write sequence. The writer holds the entries in memory and inserts
 * a row for each write and deletes the row of each entry written over, deleted, purged or evicted,
 * so the rows are always exactly the live entries and load back at open as they were. Rows keyed
 * by sequence are appended side by side and deleted oldest first: the 48 per-trace entries of a
 * `bench:ingest` request dirty a few pages here, where a `state_entries` row each dirtied a random
 * B-tree leaf (about 80 pages, each a WAL frame the ack's sync waits for).
 *
 * And `seen_ids`: the dedupe ids keyed by (pipeline, record time, event id). A record redelivered
 * has its own time again, so it is found; records arrive about in time order, so their ids go in
 * side by side near the newest end of the tree, where `seen_events`, keyed by the (random) id
 * alone, took a random leaf per id (64 a request). `seen_events` stays until the ids an earlier
 * vigil put there have expired (they are still checked).
 */
const V5 = `
CREATE TABLE IF NOT EXISTS seen_ids (
  pipeline TEXT NOT NULL,
  time INTEGER NOT NULL,
  event_id TEXT NOT NULL,
  expires INTEGER NOT NULL,
  PRIMARY KEY (pipeline, time, event_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS seen_ids_by_expiry ON seen_ids (expires);
CREATE TABLE IF NOT EXISTS state_log (
  seq INTEGER PRIMARY KEY,
  namespace TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  version INTEGER NOT NULL,
  expires INTEGER
);
`;

/** A new file gets every table at once. */
export const SCHEMA = V1 + V2 + V3 + V4 + V5;

/** `MIGRATIONS[n]` takes a file of version n to n + 1 (run in one transaction with the version bump). */
export const MIGRATIONS: Readonly<Record<number, string>> = { 1: V2, 2: V3, 3: V4, 4: V5 };
