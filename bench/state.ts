/**
 * `npm run bench:state`: events/s through classify → recurrence → commit for each store (memory,
 * sqlite, redis; `--cluster` adds a three-master Redis Cluster), Redis round trips and commands
 * per page, then a long run (default 1,000,000 events over 100,000 groups) per durable store
 * reporting the process's RSS as it goes: it must stay flat (trimmed logs, no per-event memory).
 *
 *   npm run bench:state -- [--events 50000] [--groups 5000] [--partitions 20] [--page 256] [--cluster]
 *                          [--stores memory,sqlite,redis] [--sweep]
 *                          [--long 1000000] [--long-groups 100000] [--long-partitions 200]
 *                          [--long-stores sqlite,redis]
 *
 * Each store's rate is printed beside issue 15's goal for it (met or not). `--sweep` adds how the
 * cost grows: the same run with other page sizes, group counts and partition counts, one varied
 * at a time from the defaults.
 *
 * Its goals are absolute rates, and the machine's speed moves by half between days: the same fixed
 * work is timed before the runs and after the table (bench/machine-speed.ts), to read them against.
 *
 * Redis runs on a private `redis-server` started here (no persistence), so command counts are
 * this benchmark's own. Records are appended in batches as receivers would and processed page by
 * page by the real pipeline runner, with the real processor factories.
 */
import { Redis } from 'ioredis';
import type { OperatorFunction } from 'rxjs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultsOf } from '../src/config/schema.ts';
import { createLogger } from '../src/logger.ts';
import type { AgentEvent } from '../src/model/event.ts';
import { classifyFactory } from '../src/processors/classify/factory.ts';
import type { WorkPage } from '../src/processors/page.ts';
import { recurrenceFactory } from '../src/processors/recurrence/factory.ts';
import { PipelineRunner } from '../src/service/pipeline-runner.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { RedisStore } from '../src/store/redis/store.ts';
import { SqliteStore } from '../src/store/sqlite/store.ts';
import { stateClient } from '../src/store/state-client.ts';
import type { StateStore } from '../src/store/types.ts';
import { RedisCluster, RedisServer } from '../test/helpers/redis-server.ts';
import { tempDir } from '../test/helpers/vigil-process.ts';
import { describeV8, tuneBenchHeap } from './harness.ts';
import { calibrate, describeCalibration, describeCalibrations, machineShares, machineTimes } from './machine-speed.ts';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '50000' },
    groups: { type: 'string', default: '5000' },
    long: { type: 'string', default: '1000000' },
    'long-groups': { type: 'string', default: '100000' },
    'long-stores': { type: 'string', default: 'sqlite,redis' },
    partitions: { type: 'string', default: '20' },
    'long-partitions': { type: 'string', default: '200' },
    page: { type: 'string', default: '256' },
    cluster: { type: 'boolean', default: false },
    stores: { type: 'string', default: 'memory,sqlite,redis' },
    sweep: { type: 'boolean', default: false },
  },
});
let PAGE = Number(args.page);
let PARTITIONS = Number(args.partitions);
tuneBenchHeap();
const PIPELINE = 'logs';
const logger = createLogger({ level: 'error' });

/** Issue 15's goals for the failure path at the default shape (5,000 groups, 20 partitions, pages of 256), events/s. */
const GOALS: Record<string, number> = { memory: 150_000, sqlite: 60_000, redis: 60_000 };

/** A failure name per group made of letters only: digits would be masked by the fingerprint. */
function groupName(k: number): string {
  let s = '';
  do {
    s += String.fromCharCode(97 + (k % 26));
    k = Math.floor(k / 26);
  } while (k > 0);
  return s[0]!.toUpperCase() + s.slice(1);
}

/**
 * One failed execution of group `(i * 7919) % groups`. It goes through JSON as a receiver's record
 * does: `JSON.parse` makes flat strings, where the template literal makes a rope that the memory
 * store would keep and classify's first regex would flatten (0.5–1 µs an event no receiver costs).
 */
function makeEvent(i: number, groups: number): AgentEvent {
  return JSON.parse(JSON.stringify(eventOf(i, groups))) as AgentEvent;
}

function eventOf(i: number, groups: number): AgentEvent {
  const g = (i * 7919) % groups;
  return {
    eventId: `ev-${i}`,
    kind: 'execution.completed',
    payload: { state: 'error', outcome: { error: `Traceback (most recent call last):\n  File "job.py", line 1\n${groupName(g)}Error: step failed` } },
    partition: `session-${i % PARTITIONS}`,
    time: Date.UTC(2026, 0, 1) + i * 1000,
    service: 'bench-agent',
    source: 'jsonl',
  };
}

function chainFor(store: StateStore): OperatorFunction<WorkPage, WorkPage> {
  const settings = { id: 'bench', logger, pipeline: PIPELINE, store, state: stateClient(store, 'bench', { owner: 'bench' }) };
  const classify = classifyFactory.create(settings, defaultsOf(classifyFactory.schema));
  const recurrence = recurrenceFactory.create(settings, defaultsOf(recurrenceFactory.schema));
  return (page$) => page$.pipe(classify, recurrence);
}

interface Measure {
  appendMs: number;
  processMs: number;
  /** CPU time of the process (all threads) while processing: moves less with the machine's load than the wall-clock rate. */
  processCpuMs: number;
  pages: number;
  events: number;
  /** CPU time of the Redis server (`INFO cpu`, all its threads) while processing; 0 for other stores. */
  serverCpuMs: number;
  /** Redis round trips (and those overlapping another) and commands while processing (not appending). */
  trips: number;
  overlapped: number;
  commands: number;
}

/** Reads the Redis counters; zeros for other stores. `serverCpuMs`: the server's CPU time so far (a connection of its own, not counted). */
type Counters = (() => { trips: number; overlapped: number; commands: number }) & { serverCpuMs?: () => Promise<number> };

/** Processes every partition until drained with the real pipeline runner (rounds of one page per partition). */
async function drain(runner: PipelineRunner, m: Measure): Promise<void> {
  const { pages, entries } = runner.stats;
  await runner.drain(Date.now() + 3_600_000);
  if (runner.stats.failedPages > 0) throw new Error(`${runner.stats.failedPages} pages failed`);
  m.pages += runner.stats.pages - pages;
  m.events += runner.stats.entries - entries;
}

/** Appends `total` events in receiver-sized batches, processing every `every` events. */
async function run(store: StateStore, total: number, groups: number, every: number, counters: Counters, onProgress?: (done: number) => void): Promise<Measure> {
  const runner = new PipelineRunner({ pipeline: PIPELINE, store, chain: chainFor(store), logger, pageSize: PAGE });
  await store.registerExporter(PIPELINE, 'bench');
  const m: Measure = { appendMs: 0, processMs: 0, processCpuMs: 0, serverCpuMs: 0, pages: 0, events: 0, trips: 0, overlapped: 0, commands: 0 };
  const BATCH = 100;
  for (let done = 0; done < total;) {
    const upto = Math.min(total, done + every);
    let t = performance.now();
    for (; done < upto; done += BATCH) {
      const batch: AgentEvent[] = [];
      for (let i = done; i < Math.min(upto, done + BATCH); i++) batch.push(makeEvent(i, groups));
      await store.append(PIPELINE, batch);
    }
    done = upto;
    m.appendMs += performance.now() - t;
    const serverBefore = (await counters.serverCpuMs?.()) ?? 0;
    t = performance.now();
    const before = counters();
    const cpu = process.cpuUsage();
    await drain(runner, m);
    m.processMs += performance.now() - t;
    const used = process.cpuUsage(cpu);
    m.processCpuMs += (used.user + used.system) / 1000;
    const after = counters();
    m.serverCpuMs += ((await counters.serverCpuMs?.()) ?? 0) - serverBefore;
    m.trips += after.trips - before.trips;
    m.overlapped += after.overlapped - before.overlapped;
    m.commands += after.commands - before.commands;
    // An exporter that keeps up: the outbox is delivered and trimmed as in a real deployment.
    for (;;) {
      const out = await store.readOutbox(PIPELINE, 'bench', 1000);
      if (out.length === 0) break;
      await store.ackOutbox(PIPELINE, 'bench', out[out.length - 1]!.seq);
    }
    onProgress?.(done);
  }
  return m;
}

/** Redis: round trips (the store's count of sequential waits) and commands sent (pipelined ones included). */
function countersOf(store: StateStore, serverCpuMs?: () => Promise<number>): Counters {
  if (!(store instanceof RedisStore)) return () => ({ trips: 0, overlapped: 0, commands: 0 });
  let commands = 0;
  const client = store.client as unknown as { sendCommand: (...a: unknown[]) => unknown };
  const original = client.sendCommand.bind(client);
  client.sendCommand = (...a: unknown[]) => {
    commands++;
    return original(...a);
  };
  return Object.assign(() => ({ trips: store.counters.roundTrips, overlapped: store.counters.overlapped, commands }), { serverCpuMs });
}

/**
 * The private server's CPU time in ms (user + system of all its threads, `INFO cpu`), read on a
 * connection of its own. It shares the machine's cores with this process, so its cost per event
 * is part of what the Redis store costs.
 */
function serverCpuOf(url: string): { read: () => Promise<number>; close: () => void } {
  const conn = new Redis(url, { lazyConnect: false });
  return {
    read: async () => {
      const info = await conn.info('cpu');
      const field = (name: string) => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1] ?? NaN);
      return (field('used_cpu_user') + field('used_cpu_sys')) * 1000;
    },
    close: () => conn.disconnect(),
  };
}

/** Each store made gets keys of its own: a later run (the sweep) must not find an earlier one's events (deduplicated) or groups. */
let redisRuns = 0;
const redisConfig = (url: string, cluster?: RedisCluster) => ({
  url,
  key_prefix: `bench${++redisRuns}:`,
  cluster: { enabled: !!cluster, nodes: cluster?.nodes ?? [] },
  dedupe_window: 24 * 3_600_000,
  connect_timeout: 5000,
  command_timeout: 30_000,
});

/**
 * Warms up the JIT on a throwaway run of the store about to be measured (its own code, the driver's,
 * the processors'), as a sidecar that has run a while is: warming up on the memory store alone left
 * the SQLite and Redis code being compiled during their measured runs (about 14% of the Redis run's
 * samples were V8's compiler). A function of its own: the throwaway store (its 10,000 events, groups
 * and ids) is garbage once it returns, not old-generation data that a suspended frame of `main`
 * keeps and every measured run's collections go over again.
 */
async function warmUp(make: () => StateStore): Promise<void> {
  const warm = make();
  await warm.open();
  await warm.whenReady?.();
  await run(warm, 10_000, 1000, 10_000, countersOf(warm));
  await warm.close();
}

async function main(): Promise<void> {
  const events = Number(args.events);
  const groups = Number(args.groups);
  const redis = await RedisServer.start();
  const redisCpu = serverCpuOf(redis.url);
  const cluster = args.cluster ? await RedisCluster.start() : undefined;
  const stores: Array<[string, () => StateStore]> = [
    ['memory', () => new MemoryStore()],
    [
      'sqlite',
      () => new SqliteStore({ path: join(tempDir('vigil-bench-'), 'state.db'), synchronous: 'full', busy_timeout: 5000, dedupe_window: 24 * 3_600_000 }, logger),
    ],
    ['redis', () => new RedisStore(redisConfig(redis.url), logger)],
  ];
  if (cluster) stores.push(['redis-cluster', () => new RedisStore(redisConfig(cluster.url, cluster), logger)]);

  console.log(`vigil state benchmark: ${events.toLocaleString()} events, ${groups.toLocaleString()} groups, ${PARTITIONS} partitions, pages of ${PAGE}`);
  // The goals are absolute rates on "this machine", whose speed moves by half from one session to
  // the next: the same fixed work timed before and after says how fast it was for this run.
  const speed0 = calibrate();
  console.log(
    `node ${process.version} (${describeV8()}), ${process.platform}/${process.arch}; redis on a private redis-server (no persistence); sqlite synchronous=full (fsync per commit); calibration work ${describeCalibration(speed0)} (bench/machine-speed.ts)\n`,
  );
  const rows: Array<Record<string, string | number>> = [];
  let baseline: { append: number; process: number } | undefined;
  try {
    const measured = String(args.stores).split(',').filter(Boolean);
    for (const [name, make] of stores) {
      if (!measured.includes(name) && !(name === 'redis-cluster' && cluster)) continue;
      await warmUp(make);
      const store = make();
      await store.open();
      await store.whenReady?.();
      const counters = countersOf(store, name === 'redis' ? redisCpu.read : undefined);
      // Append everything in receiver batches, then process the backlog in full pages.
      const machine0 = machineTimes();
      const m = await run(store, events, groups, events, counters);
      const shares = machineShares(machine0, machineTimes());
      const append = events / (m.appendMs / 1000);
      const processRate = m.events / (m.processMs / 1000);
      baseline ??= { append, process: processRate };
      const row: Record<string, string | number> = {
        store: name,
        'append ev/s': Math.round(append),
        'classify→recurrence→commit ev/s': Math.round(processRate),
        goal: GOALS[name] ? GOALS[name].toLocaleString('en') : '—',
        met: GOALS[name] ? (processRate >= GOALS[name] ? 'met' : 'not met') : '—',
        'vs memory': `${(processRate / baseline.process).toFixed(2)}×`,
        'CPU µs/ev': ((m.processCpuMs * 1000) / m.events).toFixed(1),
        pages: m.pages,
        // The hypervisor's share of the machine's time during the run (bench/machine-speed.ts): it slows every store alike.
        'stolen %': shares ? (100 * shares.steal).toFixed(0) : '—',
      };
      if (store instanceof RedisStore) {
        // While processing: backlog polls, page reads (read ahead), revision/group/turn loads and the commit.
        row['round trips/page'] = (m.trips / m.pages).toFixed(2);
        // Those not overlapping another: the page's sequential waits for the server.
        row['waits/page'] = ((m.trips - m.overlapped) / m.pages).toFixed(2);
        row['commands/page'] = (m.commands / m.pages).toFixed(2);
        if (counters.serverCpuMs) row['redis-server CPU µs/ev'] = ((m.serverCpuMs * 1000) / m.events).toFixed(1);
      }
      rows.push(row);
      await store.close();
    }
    console.table(rows);
    console.log(`For these runs ${describeCalibrations(speed0, calibrate())}.`);
    if (String(args.stores) !== 'memory,sqlite,redis' || groups !== 5000 || PARTITIONS !== 20 || PAGE !== 256 || events !== 50000) {
      console.log('(goals are for the default shape: 50,000 events over 5,000 groups, 20 partitions, pages of 256)');
    }

    if (args.sweep) {
      // One dimension varied at a time from the run above; events/s of classify → recurrence → commit.
      const base = { page: PAGE, groups, partitions: PARTITIONS };
      const variants: Array<{ page: number; groups: number; partitions: number; varied: string }> = [
        ...[64, 1024].map((page) => ({ ...base, page, varied: 'page' })),
        ...[500, 50_000].map((g) => ({ ...base, groups: g, varied: 'groups' })),
        ...[1, 200].map((partitions) => ({ ...base, partitions, varied: 'partitions' })),
      ];
      const sweepRows: Array<Record<string, string | number>> = [];
      for (const v of [{ ...base, varied: 'none' }, ...variants]) {
        PAGE = v.page;
        PARTITIONS = v.partitions;
        const row: Record<string, string | number> = { varied: v.varied, page: v.page, groups: v.groups, partitions: v.partitions };
        for (const [name, make] of stores) {
          if (!measured.includes(name)) continue;
          const store = make();
          await store.open();
          await store.whenReady?.();
          const m = await run(store, events, v.groups, events, countersOf(store));
          row[`${name} ev/s`] = Math.round(m.events / (m.processMs / 1000));
          await store.close();
        }
        sweepRows.push(row);
      }
      PAGE = base.page;
      PARTITIONS = base.partitions;
      console.log('\nhow the cost grows (one dimension varied at a time):');
      console.table(sweepRows);
    }

    const long = Number(args.long);
    const longGroups = Number(args['long-groups']);
    if (long > 0) {
      PARTITIONS = Number(args['long-partitions']);
      console.log(
        `\nlong run: ${long.toLocaleString()} events over ${longGroups.toLocaleString()} groups and ${PARTITIONS} partitions, appended and processed in turns (RSS of this process)`,
      );
      const longRows: Array<Record<string, string | number>> = [];
      for (const name of String(args['long-stores']).split(',').filter(Boolean)) {
        const make = stores.find(([n]) => n === name)?.[1];
        if (!make) throw new Error(`unknown store '${name}' for --long-stores`);
        const store = make();
        await store.open();
        await store.whenReady?.();
        globalThis.gc?.();
        const start = process.memoryUsage().rss;
        let peak = start;
        const marks: string[] = [];
        const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 100);
        const t = performance.now();
        // Chunks of one full page per partition: the log never holds more than one chunk.
        const chunk = PAGE * PARTITIONS;
        const m = await run(store, long, longGroups, chunk, countersOf(store), (done) => {
          peak = Math.max(peak, process.memoryUsage().rss);
          process.stderr.write(
            `\r  ${name}: ${done.toLocaleString()} events, ${Math.round(done / ((performance.now() - t) / 1000))} ev/s, RSS ${mb(process.memoryUsage().rss)}   `,
          );
          if (done % (long / 4) < chunk) marks.push(`${(done / 1e6).toFixed(2)}M: ${mb(process.memoryUsage().rss)}`);
        });
        clearInterval(timer);
        globalThis.gc?.();
        const end = process.memoryUsage().rss;
        const st = await store.status();
        longRows.push({
          store: name,
          'events/s (append + process)': Math.round(long / ((performance.now() - t) / 1000)),
          groups: st.groups,
          'RSS at start': mb(start),
          'RSS along the run': marks.join(', '),
          'RSS at end': mb(end),
          'peak RSS': mb(peak),
          'log left': st.pipelines.flatMap((p) => p.partitions).reduce((n, p) => n + p.pending, 0),
          'outbox left': st.pipelines.reduce((n, p) => n + p.outbox.size, 0),
        });
        void m;
        await store.close();
      }
      process.stderr.write('\n');
      console.table(longRows);
    }
  } finally {
    redisCpu.close();
    await redis.stop();
    await cluster?.stop();
  }
}

function mb(bytes: number): string {
  return `${Math.round(bytes / 1024 / 1024)} MiB`;
}

await main();
