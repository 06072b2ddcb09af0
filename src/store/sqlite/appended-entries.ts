/**
 * The ingest-log entries this writer appended and their partition's cursor has not passed yet,
 * kept as they were appended, so that a page of them is served without reading its rows back and
 * parsing each event's JSON again. On `bench:state` that read was about a fifth of a page's cost
 * on the main thread (README, Performance, round 29): a probe of the partition index and a visit
 * of the table's row per entry, then `JSON.parse` of it.
 *
 * What it relies on, all of it the writer's (only the writer appends, moves cursors or deletes
 * entries, and it holds the writer lock):
 * - Every entry with a sequence number above `floor` that its partition's cursor has not passed is
 *   held here, except those of a pipeline whose reader keeps what it reads (`keepNone`): pages of
 *   such a pipeline are always read from the file. `floor` starts at the highest sequence number
 *   in the file at open (entries from before are only in the file) and rises to each held entry
 *   dropped to keep within the bounds.
 * - A page starts after the partition's cursor (and after `after`), so one that starts at or
 *   above `floor` finds here every entry the file holds for it, in the same order.
 * - Cursors only move forward, and the entries they pass are never read again; they leave here when
 *   their page's commit stands (`passed`).
 * The events are the appended objects themselves, frozen (as the memory store keeps them), so
 * nobody can change them after the append. They differ from what the file gives back only where
 * JSON cannot hold a value (a key set to `undefined` is absent there), as the memory store's do.
 *
 * Bounded by the length of the held entries' JSON and by their count: past either, the oldest go
 * first, and pages of the partitions they belonged to are read from the file until their cursors
 * pass them. A backlog within the bounds is the case that matters: a pipeline that keeps up reads
 * what was appended moments before.
 */
import type { AgentEvent } from '../../model/event.ts';
import { deepFreeze } from '../../internal/deep-freeze.ts';
import type { LogEntry } from '../types.ts';

/** The length of the held entries' JSON, at most, in characters (bytes for ASCII): 16 Mi, about 60,000 of `bench:state`'s events. */
export const HELD_BYTES = 16 * 1024 * 1024;
/** A pipeline's entries are held while it has at least this many pending: four pages of 256. */
export const HOLD_FROM_BACKLOG = 1024;
/** Entries held, at most: as many as the log's segments hold before it falls back to ranged deletes. */
export const HELD_ENTRIES = 65_536;

interface Held {
  /** `pipeline \u0000 partition` */
  key: string;
  seq: number;
  /** Undefined once the entry left (its cursor passed it, or it was dropped for the bounds); it may wait in `order` a while. */
  event: AgentEvent | undefined;
  bytes: number;
}

/** A partition's held entries in sequence order, from `head` on. */
interface PartitionHeld {
  entries: Held[];
  head: number;
}

export class AppendedEntries {
  private readonly partitions = new Map<string, PartitionHeld>();
  /** Every entry in append order, from `head` on: the oldest is dropped first. */
  private order: Held[] = [];
  private head = 0;
  private bytes = 0;
  private held = 0;
  private floor = 0;
  /** Pipelines whose reader keeps what it reads (keepNone): none of their entries are held. */
  private readonly unkept = new Set<string>();

  constructor(
    private readonly maxBytes = HELD_BYTES,
    private readonly maxEntries = HELD_ENTRIES,
  ) {}

  /** Starts over: the file holds entries up to `seq`, none of them here. */
  reset(seq: number): void {
    this.partitions.clear();
    this.order = [];
    this.head = 0;
    this.bytes = 0;
    this.held = 0;
    this.floor = seq;
  }

  /**
   * `pipeline`'s reader keeps what it reads (StateStore.readerKeeps): its entries are neither held
   * nor skipped (they do not raise the floor for the others), and its pages come from the file.
   * Entries held before stay until their cursor passes them.
   */
  keepNone(pipeline: string): void {
    this.unkept.add(pipeline);
  }

  /**
   * An entry appended and not held (the writer holds entries only while its pipeline is behind):
   * pages that reach back to it read the file, so what was held before it is of no use any more.
   */
  skip(pipeline: string, seq: number): void {
    if (this.unkept.has(pipeline)) return;
    if (this.order.length > this.head) this.reset(seq);
    else this.floor = Math.max(this.floor, seq);
  }

  /** Entries held now (tests). */
  get size(): number {
    return this.held;
  }

  /** An entry of a committed append: `bytes` is the length of its JSON in the file (what the bound counts). */
  add(pipeline: string, partition: string, seq: number, event: AgentEvent, bytes: number): void {
    if (this.unkept.has(pipeline)) return;
    const key = `${pipeline}\u0000${partition}`;
    const entry: Held = { key, seq, event, bytes };
    const p = this.partitions.get(key);
    if (p) p.entries.push(entry);
    else this.partitions.set(key, { entries: [entry], head: 0 });
    this.order.push(entry);
    this.bytes += bytes;
    this.held++;
    // Counted in `order`, entries that left included: one entry of a partition that stopped moving
    // (a page failing, backing off) must not keep every later entry's slot there.
    while (this.bytes > this.maxBytes || this.order.length - this.head > this.maxEntries) this.dropOldest();
    this.compactOrder();
  }

  /**
   * Up to `limit` entries of the partition after sequence number `after` (at or after its cursor),
   * or undefined when some of them may be in the file only.
   */
  read(pipeline: string, partition: string, after: number, limit: number): LogEntry[] | undefined {
    if (after < this.floor || this.unkept.has(pipeline)) return undefined;
    const p = this.partitions.get(`${pipeline}\u0000${partition}`);
    if (!p) return [];
    const { entries } = p;
    // The first entry after `after`: a page starts at the cursor, mostly the list's head.
    let lo = p.head;
    let hi = entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (entries[mid]!.seq <= after) lo = mid + 1;
      else hi = mid;
    }
    const end = Math.min(entries.length, lo + limit);
    const page: LogEntry[] = new Array<LogEntry>(end - lo);
    // Frozen when first served, not when appended: the append's commit is on a request's path to
    // its answer, a page waits for a moment without requests.
    for (let i = lo; i < end; i++) page[i - lo] = { id: String(entries[i]!.seq), event: deepFreeze(entries[i]!.event!) };
    return page;
  }

  /** A commit that stands moved the partition's cursor to `cursor`: the entries it passed leave. */
  passed(pipeline: string, partition: string, cursor: number): void {
    const key = `${pipeline}\u0000${partition}`;
    const p = this.partitions.get(key);
    if (!p) return;
    while (p.head < p.entries.length && p.entries[p.head]!.seq <= cursor) this.leave(p.entries[p.head++]!);
    this.compact(key, p);
    // Entries that left stay in `order` until they reach its head.
    while (this.head < this.order.length && this.order[this.head]!.event === undefined) this.order[this.head++] = undefined as unknown as Held;
    this.compactOrder();
  }

  /** The oldest entry in `order` goes; one still held leaves, and pages of its partition that reach back to it read the file. */
  private dropOldest(): void {
    const oldest = this.order[this.head]!;
    this.order[this.head++] = undefined as unknown as Held;
    if (oldest.event === undefined) return;
    const p = this.partitions.get(oldest.key)!;
    // The oldest entry of all is its partition's oldest too (both in sequence order).
    p.head++;
    this.leave(oldest);
    this.compact(oldest.key, p);
    this.floor = Math.max(this.floor, oldest.seq);
  }

  private leave(entry: Held): void {
    entry.event = undefined;
    this.bytes -= entry.bytes;
    this.held--;
  }

  private compact(key: string, p: PartitionHeld): void {
    if (p.head === p.entries.length) this.partitions.delete(key);
    else if (p.head > 64 && p.head * 2 > p.entries.length) {
      p.entries = p.entries.slice(p.head);
      p.head = 0;
    }
  }

  private compactOrder(): void {
    if (this.head === this.order.length) {
      this.order = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.order.length) {
      this.order = this.order.slice(this.head);
      this.head = 0;
    }
  }
}
