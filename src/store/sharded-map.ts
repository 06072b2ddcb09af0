/**
 * A string-keyed Map in insertion order, split into shards so that no single table grows large.
 *
 * Why: V8 keeps a Map in one hash table that it rebuilds whole when it grows, and again when the
 * holes left by deletions fill it. A Map kept at a bound, its oldest entries deleted as new ones
 * come (a namespace of per-trace state, a set of recent ids), rebuilds every time its deletions
 * fill the table: a 100,000-entry Map stops the event loop for 23-28 ms (once 83 ms) each time,
 * a 200,000-entry one for 43-55 ms (`npm run bench:map-pauses`). Requests that arrive meanwhile pile up
 * behind the pause (README, Performance, round 27). Split into SHARDS Maps by a hash of the key,
 * each rebuilds a 32nd of the entries, and the shards rebuild at different moments.
 *
 * The order stays the whole map's insertion order: each entry carries the number of its insertion,
 * the oldest entry is the oldest of the shards' oldest, and iteration merges the shards by it.
 * `set` always moves its key to the newest end (a Map's `set` keeps an existing key's place):
 * every user here wants the write order. The cost: a slot object per entry (about 40 bytes) and
 * about 0.5 µs more per insert and eviction.
 */
const SHARD_BITS = 5;
const SHARDS = 1 << SHARD_BITS;
/** Characters hashed at each end of a long key: ids differ at their ends, and a key may be long. */
const HASHED_END = 32;

interface Slot<V> {
  value: V;
  /** Insertion number: the order across shards. */
  order: number;
}

type Shard<V> = Map<string, Slot<V>>;

/** A shard's oldest entry, and an iterator past it kept for the next look (see `headOf`). */
interface Head<V> {
  head?: [string, Slot<V>];
  rest?: Iterator<[string, Slot<V>]>;
}

export class ShardedMap<V> implements Iterable<[string, V]> {
  /** Created when a key first lands in them. */
  private readonly shards: Array<Shard<V> | undefined> = Array.from({ length: SHARDS }, () => undefined);
  private readonly heads: Array<Head<V>> = Array.from({ length: SHARDS }, () => ({}));
  /** Per shard, the insertion number of its oldest entry when last looked at (Infinity: none). */
  private readonly headOrder: number[] = Array.from({ length: SHARDS }, () => Infinity);
  private count = 0;
  private inserted = 0;

  get size(): number {
    return this.count;
  }

  get(key: string): V | undefined {
    return this.shards[shardOf(key)]?.get(key)?.value;
  }

  has(key: string): boolean {
    return this.shards[shardOf(key)]?.has(key) === true;
  }

  /** Sets `key` as the newest entry (an existing key moves to the newest end). */
  set(key: string, value: V): this {
    const i = shardOf(key);
    let shard = this.shards[i];
    if (!shard) this.shards[i] = shard = new Map();
    if (shard.delete(key)) this.count--;
    const order = this.inserted++;
    shard.set(key, { value, order });
    this.count++;
    // A shard with no entry left had no head: this one is it.
    if (this.headOrder[i] === Infinity) this.headOrder[i] = order;
    return this;
  }

  delete(key: string): boolean {
    const deleted = this.shards[shardOf(key)]?.delete(key) === true;
    if (deleted) this.count--;
    return deleted;
  }

  clear(): void {
    this.shards.fill(undefined);
    this.headOrder.fill(Infinity);
    for (const h of this.heads) {
      h.head = undefined;
      h.rest = undefined;
    }
    this.count = 0;
  }

  /** The oldest entry (first inserted of those left). */
  oldest(): [string, V] | undefined {
    for (;;) {
      // The shard whose head was oldest when last looked at; a head deleted since is found stale
      // below and its shard looked at again (heads only move to newer entries, so a stale order
      // is never above the true one and the minimum is right once its head checks out).
      let min = -1;
      for (let i = 0; i < SHARDS; i++) if (this.headOrder[i]! < (min < 0 ? Infinity : this.headOrder[min]!)) min = i;
      if (min < 0) return undefined;
      const h = this.headOf(min);
      if (h && h[1].order === this.headOrder[min]) return [h[0], h[1].value];
      this.headOrder[min] = h ? h[1].order : Infinity;
    }
  }

  /** Entries in insertion order, oldest first. Not to be changed while iterating (use `unordered`). */
  *entries(): IterableIterator<[string, V]> {
    const its: Array<Iterator<[string, Slot<V>]>> = [];
    const next: Array<[string, Slot<V>]> = [];
    for (const shard of this.shards) {
      if (!shard) continue;
      const it = shard.entries();
      const first = it.next();
      if (first.done === true) continue;
      its.push(it);
      next.push(first.value);
    }
    while (its.length > 0) {
      let min = 0;
      for (let i = 1; i < next.length; i++) if (next[i]![1].order < next[min]![1].order) min = i;
      const [key, slot] = next[min]!;
      yield [key, slot.value];
      const after = its[min]!.next();
      if (after.done === true) {
        its.splice(min, 1);
        next.splice(min, 1);
      } else next[min] = after.value;
    }
  }

  [Symbol.iterator](): IterableIterator<[string, V]> {
    return this.entries();
  }

  /** Values in insertion order. */
  *values(): IterableIterator<V> {
    for (const [, v] of this.entries()) yield v;
  }

  /** Entries shard by shard, in no useful order; the entry just yielded may be deleted meanwhile. */
  *unordered(): IterableIterator<[string, V]> {
    for (const shard of this.shards) {
      if (!shard) continue;
      for (const [key, slot] of shard) yield [key, slot.value];
    }
  }

  /**
   * A shard's oldest entry. The iterator is kept across calls: a fresh one would walk over every
   * entry deleted from the front since the table was last rebuilt (as OldestFirst in bounded-map.ts).
   * A live iterator skips deleted entries and reaches those added after it was made, unless it
   * had finished (then it is made again).
   */
  private headOf(i: number): [string, Slot<V>] | undefined {
    const shard = this.shards[i];
    if (!shard || shard.size === 0) return undefined;
    const h = this.heads[i]!;
    // Still there: a slot is made per insertion, so a key set again has another.
    if (h.head && shard.get(h.head[0]) === h.head[1]) return h.head;
    h.head = undefined;
    let restarted = false;
    for (;;) {
      const next = h.rest?.next();
      if (next === undefined || next.done === true) {
        if (restarted) return undefined;
        h.rest = shard.entries();
        restarted = true;
        continue;
      }
      if (shard.get(next.value[0]) === next.value[1]) return (h.head = next.value);
    }
  }
}

/** The shard of a key: a multiplicative hash of its length and of up to HASHED_END characters at each end, its top bits. */
function shardOf(key: string): number {
  const n = key.length;
  let h = n;
  if (n <= 2 * HASHED_END) {
    for (let i = 0; i < n; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x9e3779b1);
  } else {
    for (let i = 0; i < HASHED_END; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x9e3779b1);
    for (let i = n - HASHED_END; i < n; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x9e3779b1);
  }
  // The product's top bits depend on every character hashed (its low bits only on their low bits).
  return h >>> (32 - SHARD_BITS);
}
