/**
 * V8 settings for the process that runs vigil, set once at its start (`vigil run`; the benchmarks
 * set the same, so they measure what users run).
 *
 * Allocation-site pretenuring is off. V8 allocates the objects of a site whose objects mostly
 * survived a scavenge straight in the old generation; vigil's request and page objects live just
 * long enough (a request waits for its sync, a page for its commit) for many of its sites to be
 * chosen, and then die young anyway. Their young children stay alive behind those dead old
 * objects until the next mark-compact: every scavenge copies them and promotes them. Off, the
 * garbage collector took about half the time at 45 requests/s on the SQLite default, with
 * shorter scavenges and a lower ack p99 in 11 comparisons of 12 (README, Performance, round 24).
 */
import { setFlagsFromString } from 'node:v8';

/** Idempotent: setting a flag to what it is changes nothing. */
export function tuneHeap(): void {
  setFlagsFromString('--no-allocation-site-pretenuring');
}
