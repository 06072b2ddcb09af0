/**
 * A child process for the segment crash test: opens the SQLite store at argv[2] with segments of
 * three entries and a trim at every commit (segments emptied as soon as both partitions passed
 * them), then forever appends an entry to partition A or B (ids argv[3]-<n>) and processes a page
 * of each partition. Prints `appended <id>` once an append resolved (acknowledged), `page <ids>`
 * before a page's commit and `committed` once it resolved. The parent SIGKILLs it at a random moment.
 */
import { SqliteStore } from '../../src/store/sqlite/store.ts';

const [file, prefix] = [process.argv[2]!, process.argv[3]!];
const store = new SqliteStore({ path: file, synchronous: 'full', busy_timeout: 1000, dedupe_window: 3_600_000 }, undefined, Date.now, {
  segmentRows: 3,
  trimEvery: 1,
});
await store.open();
process.stdout.write('ready\n');
for (let n = 0; ; n++) {
  const id = `${prefix}-${n}`;
  const partition = n % 3 ? 'A' : 'B';
  await store.append('logs', [{ eventId: id, kind: 'execution.completed', payload: { state: 'error' }, partition, time: n, service: 'agent', source: 'jsonl' }]);
  process.stdout.write(`appended ${id}\n`);
  // B is read in pages of one and only every other round: it lags, so segments wait for it.
  for (const [p, size] of n % 2
    ? [['A', 2]]
    : [
        ['A', 2],
        ['B', 1],
      ]) {
    const page = await store.readPage('logs', p as string, size as number);
    if (!page.length) continue;
    process.stdout.write(`page ${page.map((e) => e.event.eventId).join(' ')}\n`);
    await store.commit({
      pipeline: 'logs',
      partition: p as string,
      cursor: page[page.length - 1]!.id,
      groups: [],
      turns: [],
      revisions: [],
      outbox: [],
      failures: [],
    });
    process.stdout.write('committed\n');
  }
}
