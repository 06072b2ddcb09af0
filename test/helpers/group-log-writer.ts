/**
 * A child process for the group-log crash test: opens the SQLite store at argv[2] with a fold
 * every argv[3] commits, then commits pages forever, each bumping a few of argv[4] groups (g000,
 * g001, …; round robin, from the versions the file holds), and prints `acked <key> <version>` once
 * a commit resolved (durable). The parent SIGKILLs it at a random moment.
 */
import { SqliteStore } from '../../src/store/sqlite/store.ts';
import type { GroupState } from '../../src/model/work.ts';

const [file, foldEvery, count] = [process.argv[2]!, Number(process.argv[3]), Number(process.argv[4])];
const foldChunk = process.argv[5] ? Number(process.argv[5]) : undefined;
const store = new SqliteStore({ path: file, synchronous: 'full', busy_timeout: 1000, dedupe_window: 3_600_000 }, undefined, Date.now, { foldEvery, foldChunk });
await store.open();
const keys = Array.from({ length: count }, (_, i) => `g${String(i).padStart(3, '0')}`);
const groups = await store.loadGroups(keys);
process.stdout.write('ready\n');
for (let n = 0; ; n++) {
  const page: GroupState[] = [];
  for (let j = 0; j < 7; j++) {
    const key = keys[(n * 7 + j) % count]!;
    const version = (groups.get(key)?.version ?? 0) + 1;
    // count follows version, openWorkId every other version: the reader checks both.
    page.push({
      groupKey: key,
      count: version,
      firstSeen: 0,
      lastSeen: n,
      lastDecision: 'BurstThresholdReached',
      openWorkId: version % 2 ? `w-${key}` : null,
      workGeneration: 0,
      version,
    });
  }
  await store.commit({ pipeline: 'logs', partition: 'P', cursor: null, groups: page, turns: [], revisions: [], outbox: [], failures: [] });
  for (const g of page) groups.set(g.groupKey, g);
  process.stdout.write(page.map((g) => `acked ${g.groupKey} ${g.version}\n`).join(''));
}
