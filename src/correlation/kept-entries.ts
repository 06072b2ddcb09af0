/**
 * The correlation log's entries a runner keeps between rounds (its whole failure wait, read once),
 * with the entries that may be failure records indexed by trace. A round releases a prefix; the
 * plan then needs the failure records of the traces that prefix releases failure records of, which
 * it would otherwise find by scanning every kept entry (14,000 at 45 requests/s of the bench's
 * payloads, 1.6 ms of a 2.2 ms plan; README, Performance, rounds 23 and 24).
 */
import { isTraceFailure } from './failure-keys.ts';
import type { LogEntry } from '../store/types.ts';

export class KeptEntries {
  private list: LogEntry[] = [];
  /**
   * Entries are numbered as they come; this is the number of `list[0]`. The index keeps numbers,
   * not positions, so releasing a prefix moves `base` and leaves the index as it is.
   */
  private base = 0;
  /** Per trace, the numbers of its kept entries that may be failure records, ascending. */
  private readonly byTrace = new Map<string, number[]>();

  get entries(): readonly LogEntry[] {
    return this.list;
  }

  get length(): number {
    return this.list.length;
  }

  /** Entries read after the kept ones, in log order. */
  add(more: readonly LogEntry[]): void {
    let n = this.base + this.list.length;
    for (const entry of more) {
      const event = entry.event;
      if (event.traceId !== undefined && isTraceFailure(event)) {
        const list = this.byTrace.get(event.traceId);
        if (list) list.push(n);
        else this.byTrace.set(event.traceId, [n]);
      }
      n++;
    }
    this.list = this.list.length ? this.list.concat(more) : [...more];
  }

  /** The first `count` entries went (released). */
  drop(count: number): void {
    if (count <= 0) return;
    const end = this.base + Math.min(count, this.list.length);
    for (let i = 0; i < count && i < this.list.length; i++) {
      const traceId = this.list[i]!.event.traceId;
      const list = traceId === undefined ? undefined : this.byTrace.get(traceId);
      if (!list) continue;
      // A trace's numbers are ascending: the dropped ones are at its head.
      let k = 0;
      while (k < list.length && list[k]! < end) k++;
      if (k === list.length) this.byTrace.delete(traceId!);
      else if (k > 0) list.splice(0, k);
    }
    this.list = this.list.slice(count);
    this.base = end;
  }

  clear(): void {
    this.list = [];
    this.byTrace.clear();
  }

  /** The positions (in `entries`) of a trace's kept entries that may be failure records, ascending: planRelease's `failureIndex`. */
  readonly indicesOf = (traceId: string): number[] => {
    const list = this.byTrace.get(traceId);
    if (!list) return [];
    const base = this.base;
    return list.map((n) => n - base);
  };
}
