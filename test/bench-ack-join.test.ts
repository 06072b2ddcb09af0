/**
 * bench/ack-join.ts: the client's slowest requests joined to vigil's times by request number, cut
 * into the client's delay, the wait for the handler, the handler and the way back, with the longest
 * WAL sync each waited behind.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { slowestJoined, syncDurations } from '../bench/ack-join.ts';

const T0 = 1_700_000_000_000;

test('joins by request number and splits each latency into its parts, slowest first', () => {
  // Request 7 was answered late because a 60 ms sync ran while it waited; 6 and 8 came before and after it.
  const client = {
    latencies: [8, 70, 9],
    sentAt: [0, 10, 90],
    measureFromEpochMs: T0,
    sendLateMs: [0.5, 2, 0.2],
    requestNumbers: [6, 7, 8],
  };
  const server = new Map([
    [6, { start: T0 + 1, end: T0 + 7.5, commitEnd: T0 + 5, synced: T0 + 7 }],
    [7, { start: T0 + 13, end: T0 + 79, commitEnd: T0 + 17, synced: T0 + 78.5 }],
    [8, { start: T0 + 91, end: T0 + 98.6, commitEnd: T0 + 95, synced: T0 + 98 }],
  ]);
  const syncs = [
    { start: T0 + 5.2, end: T0 + 6.8 },
    { start: T0 + 15, end: T0 + 75 },
    { start: T0 + 75, end: T0 + 78.3 },
    { start: T0 + 95.5, end: T0 + 97.8 },
  ];
  const [slowest, ...rest] = slowestJoined(client, server, syncs, 0.5);
  assert.equal(rest.length, 1); // half of 3, rounded up
  assert.deepEqual(Object.fromEntries(Object.entries(slowest!).map(([k, v]) => [k, Math.round(v * 10) / 10])), {
    latency: 70,
    late: 2,
    toHandler: 1,
    inVigil: 66,
    syncWait: 61.5,
    toClient: 1,
    longestSync: 60,
  });
  // The parts add up to the client's latency.
  const s = slowest!;
  assert.ok(Math.abs(s.late + s.toHandler + s.inVigil + s.toClient - s.latency) < 1e-3); // epoch ms: about 2e-4 ms of float precision
  assert.equal(rest[0]!.latency, 9);
  // Request 8 waited from 95 to 98, behind the short sync only.
  assert.ok(Math.abs(rest[0]!.longestSync - 2.3) < 1e-3);
});

test('requests vigil has no record of are left out, not matched to another', () => {
  const client = { latencies: [50, 5], sentAt: [0, 10], measureFromEpochMs: T0, sendLateMs: [0, 0], requestNumbers: [1, 2] };
  const server = new Map([[2, { start: T0 + 10.5, end: T0 + 14.5, commitEnd: T0 + 12, synced: T0 + 14 }]]);
  const slow = slowestJoined(client, server, [], 1);
  assert.equal(slow.length, 1);
  assert.equal(slow[0]!.latency, 5);
});

test('sync durations: count, quantiles, longest and how many reached the bound', () => {
  const syncs = [1, 2, 3, 25, 98.5].map((d, i) => ({ start: T0 + i * 100, end: T0 + i * 100 + d }));
  assert.deepEqual(syncDurations(syncs, 20), { n: 5, p50: 3, p99: 98.5, max: 98.5, over: 2 });
  assert.equal(syncDurations([]).n, 0);
});
