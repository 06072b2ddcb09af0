/**
 * Deletes a Map's oldest entries (its insertion order) one by one. A Map keeps a deleted entry as a
 * hole in its table until it rehashes, and a fresh iterator walks over every hole from the start:
 * evicting "the first key" with a new iterator each time costs as many steps as were evicted since
 * the last rehash (thousands, in a map of tens of thousands). One iterator kept across evictions
 * resumes where the last one stopped: a Map's iterator visits entries added after it was made
 * (re-inserted keys come again at the end, in order) and skips deleted ones, so what it yields
 * next is always the oldest entry left.
 */
export class OldestFirst<K> {
  private keys: Iterator<K> | undefined;

  constructor(private readonly map: Map<K, unknown>) {}

  /** Deletes the oldest entry; returns its key (undefined when the map is empty). */
  deleteOldest(): K | undefined {
    let next = this.keys?.next();
    // A finished iterator stays finished: start again (the map was emptied meanwhile, or never read).
    if (next === undefined || next.done === true) {
      this.keys = this.map.keys();
      next = this.keys.next();
      if (next.done === true) return undefined;
    }
    this.map.delete(next.value);
    return next.value;
  }
}

/** A Map that forgets its oldest insertions beyond `max` entries (memory stays bounded). */
export class BoundedMap<K, V> {
  private readonly map = new Map<K, V>();
  private readonly oldest = new OldestFirst<K>(this.map);
  constructor(private readonly max: number) {}

  get(key: K): V | undefined {
    return this.map.get(key);
  }

  has(key: K): boolean {
    return this.map.has(key);
  }

  set(key: K, value: V): void {
    // Re-inserting moves the key to the newest end.
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.max) this.oldest.deleteOldest();
  }

  delete(key: K): void {
    this.map.delete(key);
  }

  get size(): number {
    return this.map.size;
  }
}
