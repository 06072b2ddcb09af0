/**
 * The Redis store's commit sends a group's open-work change only where the group's open flag
 * changed since the version it read (`RedisStore.openFlag`); elsewhere the commit script leaves
 * the open-work set alone. Seeded random steps (see helpers/random.ts) on a private `redis-server`:
 * two stores sharing one prefix (two sidecars) load random groups, sometimes go stale, and commit
 * random groups with random open flags, some of them refused; every commit that applies is
 * applied again by a store on another prefix that never loads (so sends every flag, the general
 * path). After every step both prefixes hold the same open-work set, groups and versions, and the
 * set is exactly the groups with open work.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { isVigilError } from '../src/errors.ts';
import type { GroupState } from '../src/model/work.ts';
import { RedisStore } from '../src/store/redis/store.ts';
import type { PageCommit } from '../src/store/types.ts';
import { seededRandom, testSeed } from './helpers/random.ts';
import { RedisServer, uniquePrefix } from './helpers/redis-server.ts';

let server: RedisServer;
before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  await server?.stop();
});

function store(prefix: string): RedisStore {
  return new RedisStore({
    url: server.url,
    key_prefix: prefix,
    cluster: { enabled: false, nodes: [] },
    dedupe_window: 3_600_000,
    connect_timeout: 2000,
    command_timeout: 10_000,
  });
}

const commitOf = (groups: GroupState[]): PageCommit => ({
  pipeline: 'logs',
  partition: 'p',
  cursor: null,
  groups,
  turns: [],
  revisions: [],
  outbox: [],
  failures: [],
});

test('open-work changes only where a flag changed: the same set, groups and versions as sending every flag, over seeded random loads and commits', async () => {
  const random = seededRandom(1501);
  const pick = <T>(xs: readonly T[]): T[] => xs.filter(() => random() < 0.4);
  const shared = uniquePrefix('open');
  const general = uniquePrefix('open-all');
  const sidecars = [store(shared), store(shared)];
  const reference = store(general);
  const raw = new Redis(server.url);
  for (const s of [...sidecars, reference]) await s.open();
  // How many flags the sidecars left out (the shortcut taken), counted around the store's own choice.
  let skipped = 0;
  for (const s of sidecars) {
    const spied = s as unknown as { openFlag(g: GroupState): string };
    const choose = spied.openFlag.bind(s);
    spied.openFlag = (g) => {
      const flag = choose(g);
      if (flag === '') skipped++;
      return flag;
    };
  }
  // Keys the commit handles specially (quotes, a backslash, astral characters) among plain ones.
  const keys = ['g_"q"', 'g_\\', 'g_🙂', ...Array.from({ length: 37 }, (_, i) => `g_${i}`)];
  /** What the store holds: each group's state, by the commits that applied. */
  const model = new Map<string, GroupState>();
  let applied = 0;
  let refused = 0;
  let flagsKept = 0;
  try {
    for (let step = 0; step < 150; step++) {
      const writer = sidecars[random() < 0.5 ? 0 : 1]!;
      // A load, maybe of other groups than the commit's, maybe long before it (stale by then).
      if (random() < 0.8) await writer.loadGroups(pick(keys));
      const groups = pick(keys).map((k, i): GroupState => {
        const was = model.get(k);
        const open = was && random() < 0.7 ? was.openWorkId !== null : random() < 0.5;
        // Now and then a version this commit did not read: the whole page is refused.
        const version = (was?.version ?? 0) + (random() < 0.01 ? 2 : 1);
        return {
          groupKey: k,
          count: version,
          firstSeen: 0,
          lastSeen: step,
          lastDecision: 'ChronicRecurrence',
          openWorkId: open ? `w_${step}_${i}` : null,
          workGeneration: 1,
          version,
        };
      });
      if (groups.length === 0) continue;
      try {
        await writer.commit(commitOf(groups));
      } catch (err) {
        assert.ok(isVigilError(err, 'VIGIL_STORE_CONFLICT'), String(err));
        refused++;
        continue;
      }
      applied++;
      for (const g of groups) {
        if ((model.get(g.groupKey)?.openWorkId !== null) === (g.openWorkId !== null) && model.has(g.groupKey)) flagsKept++;
        model.set(g.groupKey, g);
      }
      await reference.commit(commitOf(groups));

      const open = [...model.values()].filter((g) => g.openWorkId !== null).map((g) => g.groupKey);
      const setOf = async (prefix: string) => new Set(await raw.smembers(`${prefix}{state}:open-work`));
      const where = `step ${step} (seed ${testSeed()})`;
      assert.deepEqual(await setOf(shared), new Set(open), `open-work is the groups with open work at ${where}`);
      assert.deepEqual(await setOf(shared), await setOf(general), `the same open-work as sending every flag at ${where}`);
      for (const h of ['groups', 'group-versions']) {
        assert.deepEqual(await raw.hgetall(`${shared}{state}:${h}`), await raw.hgetall(`${general}{state}:${h}`), `the same ${h} at ${where}`);
      }
    }
    // The steps did what they are for: commits applied and refused, flags kept and changed, and
    // the shortcut taken for many of the kept ones but not all (some were not read, or stale).
    const counts = `applied ${applied}, refused ${refused}, flags kept ${flagsKept}, left out ${skipped}`;
    assert.ok(applied > 50 && refused > 5 && skipped > 50 && skipped < flagsKept, counts);
  } finally {
    raw.disconnect();
    for (const s of [...sidecars, reference]) await s.close();
  }
});
