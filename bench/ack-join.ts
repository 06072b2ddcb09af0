/**
 * Where the client's slowest requests spent their time (bench:ack-phases; README, Performance,
 * round 37): each of the client's slowest latencies joined, by the request's number (its
 * `x-bench-request` header), to what vigil saw of the same request, and cut into
 *
 * - late: the client sent it after its schedule (its thread waited for a CPU or its timer);
 * - to handler: sent, until vigil's handler ran (the request waiting for vigil's event loop);
 * - in vigil: the handler's own time, of which `syncWait` waiting for the WAL's sync;
 * - to client: vigil's answer, until the client read it;
 *
 * and, for the sync wait, the longest of vigil's WAL syncs that ran while the request waited (one
 * slow fdatasync holds every request that commits while it runs, and the next sync too).
 *
 * All times are ms since the epoch: each thread's `performance.timeOrigin + performance.now()`,
 * so a split is as exact as the two threads' origins agree (within about a millisecond here).
 */

/** The client's side, as the open-loop load reports it (bench/harness.ts LoadResult). */
export interface ClientSide {
  latencies: readonly number[];
  /** When each was scheduled, ms after measureFromEpochMs. */
  sentAt: readonly number[];
  measureFromEpochMs: number;
  sendLateMs: readonly number[];
  requestNumbers: readonly number[];
}

/** vigil's side of one request, ms since the epoch. */
export interface ServerSide {
  start: number;
  end: number;
  /** Its append's commit ended (the sync wait starts) and its sync answered. */
  commitEnd: number;
  synced: number;
}

/** A WAL sync (fdatasync), ms since the epoch. */
export interface SyncSpan {
  start: number;
  end: number;
}

export interface SlowRequest {
  latency: number;
  late: number;
  toHandler: number;
  inVigil: number;
  syncWait: number;
  toClient: number;
  /** The longest WAL sync that overlapped the request's wait for its sync (0: none recorded). */
  longestSync: number;
}

/**
 * The slowest `share` of the client's latencies that vigil saw too, slowest first. Requests vigil
 * has no record of (not joined) are left out, and counted by the caller from the sizes.
 */
export function slowestJoined(client: ClientSide, server: ReadonlyMap<number, ServerSide>, syncs: readonly SyncSpan[], share = 0.01): SlowRequest[] {
  const joined: SlowRequest[] = [];
  client.latencies.forEach((latency, i) => {
    const r = server.get(client.requestNumbers[i]!);
    if (!r) return;
    const scheduled = client.measureFromEpochMs + client.sentAt[i]!;
    const sent = scheduled + client.sendLateMs[i]!;
    let longestSync = 0;
    for (const s of syncs) if (s.start < r.synced && s.end > r.commitEnd) longestSync = Math.max(longestSync, s.end - s.start);
    joined.push({
      latency,
      late: sent - scheduled,
      toHandler: r.start - sent,
      inVigil: r.end - r.start,
      syncWait: r.synced - r.commitEnd,
      toClient: scheduled + latency - r.end,
      longestSync,
    });
  });
  joined.sort((a, b) => b.latency - a.latency);
  return joined.slice(0, Math.ceil(joined.length * share));
}

/** Summary statistics of the syncs' durations (ms): count, p50, p99, longest, and how many took `over` ms or more. */
export function syncDurations(syncs: readonly SyncSpan[], over = 20): { n: number; p50: number; p99: number; max: number; over: number } {
  const d = syncs.map((s) => s.end - s.start).sort((a, b) => a - b);
  const at = (q: number) => d[Math.min(d.length - 1, Math.floor(q * d.length))] ?? NaN;
  return { n: d.length, p50: at(0.5), p99: at(0.99), max: d[d.length - 1] ?? NaN, over: d.filter((x) => x >= over).length };
}
