/**
 * The Redis store against real servers: the machine's Redis (REDIS_URL) and a three-master Redis
 * Cluster started by the test on local ports.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { isVigilError, type VigilError } from '../src/errors.ts';
import { memoryLogger } from '../src/logger.ts';
import type { GroupState, OutboxItem } from '../src/model/work.ts';
import { keySpace } from '../src/store/redis/keys.ts';
import { RedisStore, type RedisStoreConfig } from '../src/store/redis/store.ts';
import type { PageCommit, StateStore } from '../src/store/types.ts';
import { event } from './helpers/pages.ts';
import { deletePrefix, REDIS_URL, RedisCluster, RedisServer, uniquePrefix } from './helpers/redis-server.ts';
import { freePort, waitFor } from './helpers/vigil-process.ts';
import { storeConformance } from './helpers/store-conformance.ts';

function config(url: string, prefix: string, cluster?: { nodes: string[] }): RedisStoreConfig {
  return {
    url,
    key_prefix: prefix,
    cluster: { enabled: !!cluster, nodes: cluster?.nodes ?? [] },
    dedupe_window: 24 * 3_600_000,
    connect_timeout: 2000,
    command_timeout: 5000,
  };
}

const prefixes: string[] = [];
after(async () => {
  for (const p of prefixes) await deletePrefix(REDIS_URL, p);
});

const configs = new WeakMap<StateStore, RedisStoreConfig>();
function make(cfg: RedisStoreConfig, now?: () => number): RedisStore {
  const store = new RedisStore(cfg, undefined, now);
  configs.set(store, cfg);
  return store;
}
const reopen = async (store: StateStore) => make(configs.get(store)!);

storeConformance(
  'redis (single node)',
  async (opts) => {
    const prefix = uniquePrefix('conf');
    prefixes.push(prefix);
    return make(config(REDIS_URL, prefix), opts?.now);
  },
  { reopen, commitAppendsAtomic: false },
);

describe('redis cluster', () => {
  let cluster: RedisCluster;
  before(async () => {
    cluster = await RedisCluster.start();
  });
  after(async () => {
    await cluster?.stop();
  });
  storeConformance('redis (cluster of three masters)', async (opts) => make(config(cluster.url, uniquePrefix('cluster'), { nodes: cluster.nodes }), opts?.now), {
    reopen,
    appendStateAtomic: false,
    commitAppendsAtomic: false,
  });
});

const group = (key: string, version: number): GroupState => ({
  groupKey: key,
  count: version,
  firstSeen: 0,
  lastSeen: version,
  lastDecision: 'BurstCoalesced',
  openWorkId: null,
  workGeneration: 0,
  version,
});
const work = (id: string): OutboxItem => ({ kind: 'forward', id, signal: 'logs', record: { id } });
const commitOf = (partition: string, cursor: string, extra: Partial<PageCommit> = {}): PageCommit => ({
  pipeline: 'logs',
  partition,
  cursor,
  groups: [],
  turns: [],
  revisions: [],
  outbox: [],
  failures: [],
  ...extra,
});

describe('redis store: reading a page', () => {
  /**
   * A page's entries are decoded from the log's replies: text of every width comes back as
   * appended (JSON of an event escapes lone surrogates, so they survive too), ids are the log's
   * ids, and an entry is read by its field name wherever it stands.
   */
  async function check(store: RedisStore, url: string, prefix: string, cluster: boolean): Promise<void> {
    const texts = ['plain', 'é ü ß', '中文 エラー', 'emoji 🚀🔥', 'lone \ud800 and \udfff', 'mixed ü🚀\ud83d', '"quotes" \\ back\nslash'];
    const events = texts.map((t, i) => event({ id: `uni-${i}`, time: 1_000 + i, partition: 'p-ü{1}', payload: { state: 'error', outcome: { error: t } } }));
    await store.append('logs', events);
    const raw = cluster ? new Redis.Cluster([url]) : new Redis(url);
    try {
      const log = `${prefix}{logs:p-ü%7B1%7D}:log`;
      const ids = (await raw.xrange(log, '-', '+')).map(([id]) => id);
      // Written by hand: another field before the event's, and one without the event.
      await raw.xadd(log, '*', 'x', '1', 'e', JSON.stringify(event({ id: 'uni-late', time: 2_000, partition: 'p-ü{1}' })));
      const page = await store.readPage('logs', 'p-ü{1}', 100);
      assert.deepEqual(
        page.slice(0, texts.length).map((e) => e.event),
        events.map((e) => JSON.parse(JSON.stringify(e))),
      );
      assert.deepEqual(
        page.slice(0, texts.length).map((e) => e.id),
        ids,
      );
      assert.equal(page[texts.length]!.event.eventId, 'uni-late');
      assert.equal(page.length, texts.length + 1);
      await raw.xadd(log, '*', 'x', '1');
      await assert.rejects(store.readPage('logs', 'p-ü{1}', 100), (err: unknown) => isVigilError(err, 'VIGIL_STORE_CORRUPT'));
    } finally {
      raw.disconnect();
    }
  }

  test('single node: events of any text come back as appended, with their ids; an entry without its event is refused', async () => {
    const cfg = config(REDIS_URL, uniquePrefix('page'));
    prefixes.push(cfg.key_prefix);
    const store = new RedisStore(cfg);
    await store.open();
    try {
      await check(store, REDIS_URL, cfg.key_prefix, false);
    } finally {
      await store.close();
    }
  });

  test('cluster: the same', async () => {
    const cluster = await RedisCluster.start();
    const cfg = config(cluster.url, uniquePrefix('page'), { nodes: cluster.nodes });
    const store = new RedisStore(cfg);
    await store.open();
    try {
      await check(store, cluster.url, cfg.key_prefix, true);
    } finally {
      await store.close();
      await cluster.stop();
    }
  });
});

describe('redis store: group state format', () => {
  test('a group is stored compactly and read back exactly; one stored as a GroupState object (the earlier form) is read and rewritten', async () => {
    const cfg = config(REDIS_URL, uniquePrefix('gfmt'));
    prefixes.push(cfg.key_prefix);
    const store = new RedisStore(cfg);
    await store.open();
    const raw = new Redis(REDIS_URL);
    const groupsKey = `${cfg.key_prefix}{state}:groups`;
    try {
      // Every decision, an open and a closed work item, times that are not whole seconds.
      const states: GroupState[] = (['Reject', 'BurstCoalesced', 'BurstThresholdReached', 'ChronicRecurrence'] as const).map((d, i) => ({
        groupKey: `g_new${i}`,
        count: i + 1,
        firstSeen: 1_767_225_600_123 + i,
        lastSeen: 1_767_225_700_456 + i,
        lastDecision: d,
        openWorkId: i % 2 ? `w_${i}` : null,
        workGeneration: i,
        version: 1,
      }));
      await store.commit({ pipeline: 'logs', partition: 'p', cursor: null, groups: states, turns: [], revisions: [], outbox: [], failures: [] });
      assert.deepEqual([...(await store.loadGroups(states.map((g) => g.groupKey))).values()], states);
      const stored = await raw.hget(groupsKey, 'g_new3');
      assert.ok(stored!.length < JSON.stringify(states[3]).length / 2, `stored form: ${stored}`);

      // The earlier form, as an earlier vigil wrote it (and its version in the versions hash).
      const old: GroupState = {
        groupKey: 'g_old',
        count: 3,
        firstSeen: 10,
        lastSeen: 20,
        lastDecision: 'BurstThresholdReached',
        openWorkId: 'w_old',
        workGeneration: 1,
        version: 3,
      };
      await raw.hset(groupsKey, 'g_old', JSON.stringify(old));
      await raw.hset(`${cfg.key_prefix}{state}:group-versions`, 'g_old', '3');
      assert.deepEqual((await store.loadGroups(['g_old'])).get('g_old'), old);
      const next = { ...old, count: 4, lastSeen: 30, lastDecision: 'ChronicRecurrence' as const, version: 4 };
      await store.commit({ pipeline: 'logs', partition: 'p', cursor: null, groups: [next], turns: [], revisions: [], outbox: [], failures: [] });
      assert.deepEqual((await store.loadGroups(['g_old'])).get('g_old'), next);
      assert.ok((await raw.hget(groupsKey, 'g_old'))!.startsWith('[1,'));

      // A form this vigil does not know is refused, not misread.
      await raw.hset(groupsKey, 'g_future', '[2,1,2,3,0,null,0,1]');
      await assert.rejects(store.loadGroups(['g_future']), (err: unknown) => isVigilError(err, 'VIGIL_STORE_CORRUPT'));
    } finally {
      raw.disconnect();
      await store.close();
    }
  });
});

describe('redis store: a page commit', () => {
  test('groups travel as one argument: keys of any characters and thousands of groups are stored as before; a stale version anywhere refuses the whole page', async () => {
    const cfg = config(REDIS_URL, uniquePrefix('gpack'));
    prefixes.push(cfg.key_prefix);
    const store = new RedisStore(cfg);
    await store.open();
    const raw = new Redis(REDIS_URL);
    const s = `${cfg.key_prefix}{state}:`;
    try {
      // Quotes, backslashes, a newline, non-ASCII and astral characters in keys, and more groups
      // than one version check (a thousand) holds, so a stale one lands past a chunk boundary.
      // A lone surrogate is stored as U+FFFD, as an argument's UTF-8 encoding stores it (and HMGET finds it).
      const odd = ['g_"quoted"', 'g_back\\slash', 'g_new\nline', 'g_ünï cödé', 'g_🙂', 'g_tab\there', '', 'g_lone\ud800', 'g_\udc00lone'];
      const keys = [...odd, ...Array.from({ length: 2500 }, (_, i) => `g_${i}`)];
      const v1 = keys.map((k, i): GroupState => ({ ...group(k, 1), openWorkId: i % 3 ? `w_${i}` : null, lastDecision: 'ChronicRecurrence' }));
      await store.commit({ pipeline: 'logs', partition: 'p', cursor: null, groups: v1, turns: [], revisions: [], outbox: [], failures: [] });
      assert.deepEqual(await store.loadGroups(keys), new Map(v1.map((g) => [g.groupKey, g])));
      const versions = await raw.hgetall(`${s}group-versions`);
      assert.deepEqual(versions, Object.fromEntries(keys.map((k) => [Buffer.from(k).toString(), '1'])));
      assert.deepEqual(new Set(await raw.smembers(`${s}open-work`)), new Set(v1.filter((g) => g.openWorkId).map((g) => Buffer.from(g.groupKey).toString())));
      // The stored value is the group codec's, byte for byte (what other sidecars read).
      assert.equal(await raw.hget(`${s}groups`, 'g_🙂'), `[1,1,0,1,3,${JSON.stringify(v1[4]!.openWorkId)},0,1]`);

      for (const stale of [0, 999, 1000, 1006, keys.length - 1]) {
        const bad = v1.map((g, i) => ({ ...g, version: i === stale ? 3 : 2 }));
        await assert.rejects(
          store.commit({ pipeline: 'logs', partition: 'p', cursor: null, groups: bad, turns: [], revisions: [], outbox: [], failures: [] }),
          (err: VigilError) => isVigilError(err, 'VIGIL_STORE_CONFLICT') && err.message.includes(`group ${keys[stale]} changed`),
        );
      }
      assert.deepEqual(await store.loadGroups(keys), new Map(v1.map((g) => [g.groupKey, g])), 'a refused page changes nothing');

      // The next version, with every open work item closed and every closed one opened.
      const v2 = v1.map((g, i): GroupState => ({ ...g, count: 2, version: 2, openWorkId: g.openWorkId ? null : `w2_${i}` }));
      await store.commit({ pipeline: 'logs', partition: 'p', cursor: null, groups: v2, turns: [], revisions: [], outbox: [], failures: [] });
      assert.deepEqual(await store.loadGroups(keys), new Map(v2.map((g) => [g.groupKey, g])));
      assert.deepEqual(new Set(await raw.smembers(`${s}open-work`)), new Set(v2.filter((g) => g.openWorkId).map((g) => Buffer.from(g.groupKey).toString())));
      assert.equal(await raw.hget(`${s}group-versions`, 'g_2499'), '2');
    } finally {
      raw.disconnect();
      await store.close();
    }
  });
});

describe('redis store: round trips, faults and connections', () => {
  let cluster: RedisCluster;
  before(async () => {
    cluster = await RedisCluster.start();
  });
  after(async () => {
    await cluster?.stop();
  });

  for (const mode of ['single node', 'cluster'] as const) {
    test(`${mode}: round trips per page do not grow with the page`, async () => {
      const cfg = mode === 'cluster' ? config(cluster.url, uniquePrefix('rt'), { nodes: cluster.nodes }) : config(REDIS_URL, uniquePrefix('rt'));
      if (mode === 'single node') prefixes.push(cfg.key_prefix);
      const store = new RedisStore(cfg);
      await store.open();
      try {
        const trips = async (fn: () => Promise<unknown>) => {
          const before = store.counters.roundTrips;
          await fn();
          return store.counters.roundTrips - before;
        };
        const sizes = [1, 200];
        const measured = [];
        for (const n of sizes) {
          const partition = `p${n}`;
          const events = Array.from({ length: n }, (_, i) => event({ id: `${partition}-${i}`, time: i, partition }));
          const append = await trips(() => store.append('logs', events));
          let page: Awaited<ReturnType<RedisStore['readPage']>> = [];
          const read = await trips(async () => (page = await store.readPage('logs', partition, 256)));
          const keys = page.map((_, i) => `g-${partition}-${i}`);
          const load = await trips(() => store.loadGroups(keys));
          const commit = await trips(() =>
            store.commit(
              commitOf(partition, page[page.length - 1]!.id, {
                groups: keys.map((k) => group(k, 1)),
                outbox: keys.map((k) => work(k)),
                turns: keys.map((k) => ({ turnId: k, created: 1 })),
                revisions: keys.map((k) => ({ executionId: k, revision: 'r' })),
                failures: keys.map((k, i) => ({ time: i, partition, groupKey: k, occurrenceId: k, signature: 'E', decision: 'BurstCoalesced' })),
              }),
            ),
          );
          measured.push({ append, read, load, commit });
        }
        assert.deepEqual(measured[1], measured[0], `page of 1 vs page of 200: ${JSON.stringify(measured)}`);
        assert.ok(measured[0]!.commit <= (mode === 'cluster' ? 3 : 1), JSON.stringify(measured));
      } finally {
        await store.close();
      }
    });
  }

  test('cluster: a crash between the state step and the cursor step neither loses nor double-counts the page', async () => {
    const cfg = config(cluster.url, uniquePrefix('crash'), { nodes: cluster.nodes });
    const crashed = new RedisStore(cfg);
    await crashed.open();
    await crashed.registerExporter('logs', 'file');
    await crashed.append(
      'logs',
      ['e1', 'e2', 'e3'].map((id, i) => event({ id, time: i, partition: 'S' })),
    );
    const page = await crashed.readPage('logs', 'S', 2);
    crashed.faults.betweenCommitSteps = () => {
      throw new Error('simulated crash');
    };
    const pageCommit = commitOf('S', page[1]!.id, { groups: [group('g', 1)], outbox: [work('w1')] });
    await assert.rejects(crashed.commit(pageCommit), /simulated crash/);
    await crashed.close();

    const restarted = new RedisStore(cfg);
    await restarted.open();
    try {
      // The state counted e1 and e2: the next page starts after them, and the cursor caught up.
      assert.deepEqual(
        (await restarted.readPage('logs', 'S', 10)).map((e) => e.event.eventId),
        ['e3'],
      );
      const st = await restarted.status();
      assert.equal(st.pipelines.find((p) => p.pipeline === 'logs')!.partitions.find((p) => p.partition === 'S')!.cursor, page[1]!.id);
      // Replaying the same commit (a runner that did not see it succeed) is refused and changes nothing.
      await assert.rejects(restarted.commit(pageCommit), (err: unknown) => isVigilError(err, 'VIGIL_STORE_CONFLICT'));
      assert.equal((await restarted.loadGroups(['g'])).get('g')!.version, 1);
      assert.deepEqual(
        (await restarted.readOutbox('logs', 'file', 10)).map((o) => o.id),
        ['w1'],
        'the work event is there once',
      );
      assert.equal(await restarted.pendingCount('logs'), 1);
    } finally {
      await restarted.close();
    }
  });

  test('unreachable at open: opens anyway, refuses retryably with the URL masked, connects with AUTH when the server comes', async () => {
    const port = await freePort();
    const logger = memoryLogger();
    const store = new RedisStore({ ...config(`redis://vigil:s3cret-pw@127.0.0.1:${port}/0`, uniquePrefix('late')), connect_timeout: 500 }, logger);
    let server: RedisServer | undefined;
    await store.open();
    try {
      assert.equal(store.isAvailable(), false);
      const refused = await store.append('logs', [event({ id: 'x', time: 1 })]).then(
        () => assert.fail('append must fail while redis is down'),
        (err: unknown) => err,
      );
      assert.ok(isVigilError(refused, 'VIGIL_STORE_UNAVAILABLE') && refused.transient, String(refused));
      assert.match(refused.message, new RegExp(`redis://vigil:\\*\\*\\*@127\\.0\\.0\\.1:${port}/0`));
      const logged = JSON.stringify(logger.entries);
      assert.match(logged, /unreachable/);
      assert.doesNotMatch(logged + refused.message, /s3cret-pw/);

      server = await RedisServer.start({ port, password: 's3cret-pw', user: 'vigil' });
      await store.whenReady();
      assert.deepEqual(await store.append('logs', [event({ id: 'x', time: 1 })]), { appended: 1, duplicates: 0 });
      const reader = new RedisStore({ ...config(`redis://vigil:wrong@127.0.0.1:${port}/0`, uniquePrefix('late')), connect_timeout: 500 });
      await assert.rejects(reader.open({ readOnly: true }), (err: unknown) => isVigilError(err, 'VIGIL_STORE_UNAVAILABLE') && !/wrong/.test((err as Error).message));
    } finally {
      await store.close();
      await server?.stop();
    }
  });

  test('lost mid-run (SIGKILL of an appendonly redis): refuses retryably, resumes with everything acknowledged', async () => {
    const server = await RedisServer.start({ durable: true });
    const store = new RedisStore(config(server.url, uniquePrefix('lost')));
    await store.open();
    try {
      await store.append('logs', [event({ id: 'a', time: 1, partition: 'L' }), event({ id: 'b', time: 2, partition: 'L' })]);
      const [a] = await store.readPage('logs', 'L', 1);
      await store.commit(commitOf('L', a!.id, { groups: [group('g', 1)] }));
      await server.kill();
      await assert.rejects(
        store.append('logs', [event({ id: 'c', time: 3, partition: 'L' })]),
        (err: unknown) => isVigilError(err, 'VIGIL_STORE_UNAVAILABLE') && (err as VigilError).transient,
      );
      await server.start();
      await waitFor(() => (store.isAvailable() ? true : undefined), 'the store to reconnect');
      // As an OTLP client retries a 503: a refusal here must be the transient one, and whatever
      // attempt is accepted, the log holds b and c once each.
      const resent = [event({ id: 'c', time: 3, partition: 'L' }), event({ id: 'b', time: 2, partition: 'L' })];
      const accepted = await waitFor(
        () =>
          store.append('logs', resent).catch((err: unknown) => {
            assert.ok(isVigilError(err, 'VIGIL_STORE_UNAVAILABLE') && (err as VigilError).transient, `unexpected refusal: ${String(err)}`);
            return undefined;
          }),
        'the re-sent batch to be accepted',
      );
      assert.equal(accepted.appended + accepted.duplicates, 2);
      assert.deepEqual(
        (await store.readPage('logs', 'L', 10)).map((e) => e.event.eventId),
        ['b', 'c'],
      );
      assert.equal((await store.loadGroups(['g'])).get('g')!.version, 1);
    } finally {
      await store.close();
      await server.stop();
    }
  });
});

test('an event id an earlier vigil added to a dedupe set alone (no time) still drops its redelivery until it expires', async () => {
  const cfg = config(REDIS_URL, uniquePrefix('legacy-seen'));
  prefixes.push(cfg.key_prefix);
  let clock = 1_000_000;
  const store = make(cfg, () => clock);
  await store.open();
  const raw = new Redis(REDIS_URL);
  try {
    await raw.zadd(keySpace(cfg.key_prefix).partition('logs', 'session-1').seen, clock + 1000, 'old');
    assert.deepEqual(await store.append('logs', [event({ id: 'old', time: 5 })]), { appended: 0, duplicates: 1 });
    clock += 1001;
    assert.deepEqual(await store.append('logs', [event({ id: 'old', time: 5 })]), { appended: 1, duplicates: 0 });
  } finally {
    raw.disconnect();
    await store.close();
  }
});
