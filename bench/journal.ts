/**
 * `npm run bench:journal`: how fast the `journal` receiver takes a journal, side by side with an
 * independent baseline in the same run — a bare reader that streams the file and `JSON.parse`s
 * each line (the floor for any tailer, appending nothing). vigil is measured into the memory store
 * and into the default SQLite store (durable appends, each batch with its file offset), and once
 * more after the journal was compacted by a rename (the search for the offset's last line in the
 * new file, then the rest).
 *
 *   npm run bench:journal -- [--cases 100000] [--batch 256]
 */
import { createReadStream, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { ParseContext } from '../src/config/schema.ts';
import { createLogger } from '../src/logger.ts';
import { journalReceiverFactory, type JournalStats } from '../src/receivers/journal/factory.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { SqliteStore } from '../src/store/sqlite/store.ts';
import { stateClient } from '../src/store/state-client.ts';
import type { StateStore } from '../src/store/types.ts';
import { caseLine } from '../test/helpers/journal.ts';
import { tempDir } from '../test/helpers/vigil-process.ts';

const { values: args } = parseArgs({ options: { cases: { type: 'string', default: '100000' }, batch: { type: 'string', default: '256' } } });
const N = Number(args.cases);
const logger = createLogger({ level: 'error' });

async function bare(path: string): Promise<number> {
  const t0 = performance.now();
  let n = 0;
  for await (const line of createInterface({ input: createReadStream(path), crlfDelay: Infinity })) {
    if (line.trim() === '') continue;
    JSON.parse(line);
    n++;
  }
  if (n !== N) throw new Error(`bare reader read ${n} lines`);
  return performance.now() - t0;
}

async function vigil(path: string, store: StateStore, expect: number): Promise<{ ms: number; stats: JournalStats }> {
  const ctx = new ParseContext();
  const cfg = journalReceiverFactory.schema.parse({ include: [path], batch_size: Number(args.batch), poll_interval: '10ms' }, ['receivers', 'journal'], ctx)!;
  const r = journalReceiverFactory.create(
    {
      id: 'journal',
      logger,
      consumers: { logs: (events, opts) => store.append('logs', events, opts ?? {}) },
      state: stateClient(store, 'journal', { owner: 'journal' }),
    },
    cfg,
  ) as unknown as { start(): Promise<void>; shutdown(): Promise<void>; stats(): JournalStats };
  const t0 = performance.now();
  await r.start();
  while (r.stats().cases < expect) await new Promise((res) => setTimeout(res, 5));
  const ms = performance.now() - t0;
  const stats = r.stats();
  await r.shutdown();
  return { ms, stats };
}

const dir = tempDir('vigil-bench-journal-');
const path = join(dir, 'runtime_error_cases.jsonl');
const text = Array.from({ length: N }, (_, i) => caseLine(i) + '\n').join('');
writeFileSync(path, text);
const mb = Buffer.byteLength(text) / 1e6;
console.log(`journal of ${N} cases, ${mb.toFixed(1)} MB (${Math.round((mb * 1e6) / N)} B per case); batch ${args.batch}; Node ${process.version}`);

const rows: Array<[string, number]> = [];
const baseline = Math.min(await bare(path), await bare(path));
rows.push(['bare reader (readline + JSON.parse)', baseline]);

const memory = new MemoryStore();
await memory.open();
rows.push(['vigil journal → memory store', (await vigil(path, memory, N)).ms]);
await memory.close();

const sqlite = new SqliteStore({ path: join(dir, 'state.db'), synchronous: 'full', busy_timeout: 5000, dedupe_window: 86_400_000 }, logger);
await sqlite.open();
rows.push(['vigil journal → sqlite (synchronous: full)', (await vigil(path, sqlite, N)).ms]);

// The consumer keeps the last tenth and the runtime appends a tenth more: resynchronize, then read the new tenth.
const keep = Math.floor(N * 0.9);
writeFileSync(
  join(dir, 'tmp'),
  Array.from({ length: N - keep }, (_, i) => caseLine(keep + i) + '\n').join('') + Array.from({ length: N / 10 }, (_, i) => caseLine(N + i) + '\n').join(''),
);
renameSync(join(dir, 'tmp'), path);
const after = await vigil(path, sqlite, N / 10);
if (after.stats.duplicates !== 0 || after.stats.rewrites.replaced !== 1) throw new Error(`resync: ${JSON.stringify(after.stats)}`);
await sqlite.close();

console.log('\n| reader | time | cases/s | MB/s | vs bare |\n| --- | --- | --- | --- | --- |');
for (const [name, ms] of rows)
  console.log(
    `| ${name} | ${ms.toFixed(0)} ms | ${Math.round((N / ms) * 1000).toLocaleString('en')} | ${((mb / ms) * 1000).toFixed(1)} | ${(baseline / ms).toFixed(2)}× |`,
  );
console.log(
  `| vigil after a compaction by rename: find the offset's line in ${((N / 5) * (mb / N)).toFixed(1)} MB, read ${N / 10} new cases (sqlite) | ${after.ms.toFixed(0)} ms | ${Math.round((N / 10 / after.ms) * 1000).toLocaleString('en')} | — | — |`,
);
