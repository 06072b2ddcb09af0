import { BoundedMap } from './bounded-map.ts';

/**
 * Remembers, for each page a store handed out, the cursor it was read after. A commit of that page
 * must find the cursor still there: if another writer (a second sidecar, a pipeline runner that
 * re-read) committed part of the same entries in between, the group versions alone would not
 * notice when the page was processed from the state that writer left, and those entries would be
 * counted twice. A commit of a page this store did not hand out falls back to "the cursor moves
 * forward".
 */
export class PageBases {
  private readonly bases = new BoundedMap<string, string>(10_000);

  /** `base`: the cursor the page was read after ('' when the partition had none). */
  remember(pipeline: string, partition: string, lastId: string | undefined, base: string): void {
    if (lastId !== undefined) this.bases.set(key(pipeline, partition, lastId), base);
  }

  /** The base of the page ending at `cursor`, if this store handed it out (forgotten once taken). */
  take(pipeline: string, partition: string, cursor: string): string | undefined {
    const k = key(pipeline, partition, cursor);
    const base = this.bases.get(k);
    if (base !== undefined) this.bases.delete(k);
    return base;
  }
}

function key(pipeline: string, partition: string, lastId: string): string {
  return `${pipeline}\u0000${partition}\u0000${lastId}`;
}
