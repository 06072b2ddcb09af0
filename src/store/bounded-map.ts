import { ShardedMap } from './sharded-map.ts';

/**
 * A string-keyed Map that forgets its oldest insertions beyond `max` entries (memory stays
 * bounded). Sharded (sharded-map.ts): its bounds are tens of thousands of entries, where one V8
 * Map would stop the event loop for milliseconds to tens of them each time its table is rebuilt.
 */
export class BoundedMap<K extends string, V> {
  private readonly map = new ShardedMap<V>();
  constructor(private readonly max: number) {}

  get(key: K): V | undefined {
    return this.map.get(key);
  }

  has(key: K): boolean {
    return this.map.has(key);
  }

  set(key: K, value: V): void {
    // Re-inserting moves the key to the newest end (ShardedMap's `set`).
    this.map.set(key, value);
    if (this.map.size > this.max) {
      const oldest = this.map.oldest();
      if (oldest) this.map.delete(oldest[0]);
    }
  }

  delete(key: K): void {
    this.map.delete(key);
  }

  get size(): number {
    return this.map.size;
  }
}
