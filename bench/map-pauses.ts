/**
 * The event-loop pauses of a bounded map (README, Performance, round 27): a map held at N entries,
 * each new key's insertion followed by the deletion of the oldest, as vigil's per-trace state and
 * its sets of recent ids are kept. A plain `Map` (the baseline: V8's own) rebuilds its one table
 * whenever the holes of its deletions fill it, which stops the thread for a time that grows with
 * N; `ShardedMap` (src/store/sharded-map.ts) rebuilds 32 smaller tables at different moments.
 *
 *   npm run bench:map-pauses -- [--sizes=50000,100000,200000] [--ops=600000]
 *
 * Prints, per size and map: the longest single insert-and-evict, and how many took 1 ms or more,
 * among those with no garbage collection inside them (the collector's pauses come from the
 * allocation of the keys and values as much as from the map; they are counted apart), and the mean
 * time per operation. Keys look like trace ids (32 hex characters); each run starts with the map
 * already full, and the two maps alternate per size.
 */
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { ShardedMap } from '../src/store/sharded-map.ts';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const sizes = (args.sizes ?? '50000,100000,200000').split(',').map(Number);
const ops = Number(args.ops ?? 600_000);
if (sizes.some((n) => !(Number.isInteger(n) && n > 0)) || !(Number.isInteger(ops) && ops > 0)) {
  console.error('usage: bench/map-pauses.ts [--sizes=50000,100000,200000] [--ops=600000]');
  process.exit(2);
}

/** A trace-id-like key: 32 hex characters, the first 8 scrambled as random ids are. */
const keyOf = (n: number) => `${(Math.imul(n, 0x9e3779b1) >>> 0).toString(16).padStart(8, '0')}${n.toString(16).padStart(24, '0')}`;

interface Bounded {
  set(key: string, value: object): void;
  evictOldest(): void;
}

function plainMap(): Bounded {
  const map = new Map<string, object>();
  // One kept iterator, as vigil's code evicts (a fresh one per eviction walks the table's holes).
  let keys = map.keys();
  return {
    set: (k, v) => {
      map.delete(k);
      map.set(k, v);
    },
    evictOldest: () => {
      let next = keys.next();
      if (next.done === true) {
        keys = map.keys();
        next = keys.next();
      }
      if (next.done !== true) map.delete(next.value);
    },
  };
}

function shardedMap(): Bounded {
  const map = new ShardedMap<object>();
  return {
    set: (k, v) => void map.set(k, v),
    evictOldest: () => {
      const oldest = map.oldest();
      if (oldest) map.delete(oldest[0]);
    },
  };
}

/** The collector's pauses, as [start, end] in performance.now() time. */
const collections: Array<[number, number]> = [];
const observer = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) collections.push([e.startTime, e.startTime + e.duration]);
});
observer.observe({ entryTypes: ['gc'] });

async function run(make: () => Bounded, size: number): Promise<{ longestMs: number; over1ms: number; gcOver1ms: number; meanUs: number }> {
  const m = make();
  let n = 0;
  for (; n < size; n++) m.set(keyOf(n), { n });
  const slow: Array<[number, number]> = [];
  const start = performance.now();
  for (let i = 0; i < ops; i++, n++) {
    const t = performance.now();
    m.set(keyOf(n), { n });
    m.evictOldest();
    const end = performance.now();
    if (end - t >= 1) slow.push([t, end]);
  }
  const totalMs = performance.now() - start;
  // The observer's entries arrive on a later turn of the event loop.
  await new Promise((resolve) => setTimeout(resolve, 50));
  let longest = 0;
  let over = 0;
  let gcOver = 0;
  for (const [t, end] of slow) {
    if (collections.some(([s, e]) => s < end && e > t)) gcOver++;
    else {
      over++;
      longest = Math.max(longest, end - t);
    }
  }
  collections.length = 0;
  return { longestMs: longest, over1ms: over, gcOver1ms: gcOver, meanUs: (totalMs * 1000) / ops };
}

console.log(`bench:map-pauses — a map held at N entries, ${ops.toLocaleString('en-US')} inserts each evicting the oldest; Node.js ${process.version}`);
console.log('           without a collection inside:');
console.log('entries    map           longest ms  ops >= 1 ms  with one: ops >= 1 ms  mean µs/op (timer included)');
for (const size of sizes) {
  for (const [name, make] of [
    ['Map (V8)', plainMap],
    ['ShardedMap', shardedMap],
  ] as const) {
    const r = await run(make, size);
    console.log(
      `${size.toLocaleString('en-US').padStart(7)}    ${name.padEnd(12)}  ${r.longestMs.toFixed(2).padStart(10)}  ${String(r.over1ms).padStart(11)}  ${String(r.gcOver1ms).padStart(21)}  ${r.meanUs.toFixed(2).padStart(10)}`,
    );
  }
}
observer.disconnect();
