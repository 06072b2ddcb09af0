/**
 * bench/stalls.ts's view of the long gaps by stage (`--long=MS`): on a small profile built by
 * hand, each sample's time goes to the gap its timestamp falls in, under the first stage whose
 * rule matches a frame of its stack (a request's decode is decode, not the request's handling).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stageOf, stagesByGap, type Profile, type ProfileNode } from '../bench/stalls.ts';

const SRC = 'file:///work/vigil/src';

function node(id: number, functionName: string, url: string, children: number[] = []): ProfileNode {
  return { id, callFrame: { functionName, url, lineNumber: 0 }, children };
}

// (root) ─┬─ handle (receivers) ─┬─ decodeBody ── compactKeyValue (receivers/otlp/json)
//         │                      └─ onRequest (receivers)
//         ├─ processImmediate (node) ── commitAppends (store)
//         ├─ round (pipeline runner) ── classify operator (processors)
//         ├─ (garbage collector)
//         └─ (idle)
const NODES: ProfileNode[] = [
  node(1, '(root)', '', [2, 3, 4, 9, 10]),
  node(2, 'handle', `${SRC}/receivers/otlp/http.ts`, [5, 11]),
  node(5, 'decodeBody', `${SRC}/receivers/otlp/decode-pool.ts`, [7]),
  node(7, 'compactKeyValue', `${SRC}/receivers/otlp/json/common.ts`),
  node(11, 'onRequest', `${SRC}/receivers/otlp/http.ts`),
  node(3, 'processImmediate', 'node:internal/timers', [6]),
  node(6, 'commitAppends', `${SRC}/store/sqlite/store.ts`),
  node(4, 'round', `${SRC}/service/pipeline-runner.ts`, [8]),
  node(8, 'classifyPage', `${SRC}/processors/classify/operator.ts`),
  node(9, '(garbage collector)', ''),
  node(10, '(idle)', ''),
];

/** Samples as [timestamp µs, node id]; the profile stores them as deltas from the one before. */
function profileOf(samples: Array<[number, number]>): Profile {
  let last = 0;
  return {
    nodes: NODES,
    startTime: 0,
    samples: samples.map(([, id]) => id),
    timeDeltas: samples.map(([t]) => {
      const d = t - last;
      last = t;
      return d;
    }),
  };
}

test('each sample inside a gap counts by its stage; samples outside every gap do not count', () => {
  const profile = profileOf([
    [500, 7], // before the first gap
    [1500, 7], // decode, 1.0 ms
    [2000, 6], // append commit, 0.5
    [3000, 8], // pipeline page, 1.0
    [3500, 9], // collector, 0.5
    [4500, 10], // idle, 1.0
    [5500, 7], // after the first gap
    [9900, 11], // before the second
    [10400, 11], // request's other handling, 0.5
    [11000, 7], // decode, 0.6
    [13000, 6], // after the last gap
  ]);
  const gaps: Array<[number, number, string]> = [
    [1000, 5000, 'json vigil/sqlite'],
    [10000, 12000, 'json vigil/sqlite'],
  ];
  const byGap = stagesByGap(profile, gaps).map((m) => Object.fromEntries([...m].map(([k, v]) => [k, Math.round(v * 1000) / 1000])));
  assert.deepEqual(byGap, [
    { decode: 1, 'append commit': 0.5, 'pipeline page': 1, 'garbage collector': 0.5, idle: 1 },
    { 'request, other': 0.5, decode: 0.6 },
  ]);
});

test('the first matching stage wins, leaf first for the collector and idle; a stack with none of ours is other', () => {
  const byId = new Map(NODES.map((n) => [n.id, n]));
  const stack = (...ids: number[]) => ids.map((id) => byId.get(id)!);
  // compactKeyValue's stack also matches the request rule (receivers): decode comes first.
  assert.equal(stageOf(stack(7, 5, 2, 1)), 'decode');
  assert.equal(stageOf(stack(11, 2, 1)), 'request, other');
  assert.equal(stageOf(stack(6, 3, 1)), 'append commit');
  assert.equal(stageOf(stack(8, 4, 1)), 'pipeline page');
  assert.equal(stageOf(stack(9, 1)), 'garbage collector');
  assert.equal(stageOf(stack(10, 1)), 'idle');
  assert.equal(stageOf(stack(3, 1)), 'other');
});
