/**
 * A queue over an array that is taken from the front: the memory store's partition logs and
 * outboxes. `Array.prototype.splice(0, n)` moves every entry behind the first n, so trimming a
 * page off a long backlog cost time in proportion to the backlog (a log 10,000 entries deep moved
 * them all for every page of 256); here a trim moves a start index, and the array is compacted
 * only once the dropped head is as long as what is left (each entry is moved at most once more).
 */
export class Fifo<T> {
  private items: T[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  /** The i-th entry from the front. */
  at(i: number): T | undefined {
    return i >= 0 ? this.items[this.head + i] : undefined;
  }

  /** Up to `n` entries from the front, as a new array. */
  first(n: number): T[] {
    return this.items.slice(this.head, this.head + Math.max(0, n));
  }

  /** Drops the entries at the front while `drop` says so; returns how many went. */
  dropWhile(drop: (item: T) => boolean): number {
    let i = this.head;
    const end = this.items.length;
    while (i < end && drop(this.items[i]!)) {
      // Let go of it now, not at the next compaction: the store holds no more than it did.
      (this.items as Array<T | undefined>)[i] = undefined;
      i++;
    }
    const dropped = i - this.head;
    this.head = i;
    if (this.head === end) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= end) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return dropped;
  }

  *[Symbol.iterator](): IterableIterator<T> {
    for (let i = this.head; i < this.items.length; i++) yield this.items[i]!;
  }
}
