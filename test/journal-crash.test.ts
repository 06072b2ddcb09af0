/**
 * Crash test of the `journal` receiver: a separate process writes a journal as a runtime and its
 * consumer do — appends, partial lines finished later, malformed lines, compactions by
 * rewrite-and-rename and in place — while a real `vigil run` reads it and is SIGKILLed and
 * restarted between appends (and, on Redis, Redis itself once). Every case must arrive exactly
 * once: one `work.created` per case (each case is its own failure, `min_recurrence: 1`), and no
 * `work.updated` (a case counted twice would update its group). On SQLite and on Redis.
 *
 * The consumer only ever drops cases vigil has already taken (their work event was delivered), as
 * the real consumer drops what it consumed; what it keeps may or may not have been read by vigil.
 * The schedule comes from the test seed (printed; VIGIL_TEST_SEED replays it).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { caseLine, startJournalWriter } from './helpers/journal.ts';
import { seededRandom } from './helpers/random.ts';
import { RedisServer, uniquePrefix } from './helpers/redis-server.ts';
import { freePort, healthy, spawnVigil, tempDir, untilReady, type VigilChild, waitFor, writeConfig } from './helpers/vigil-process.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Run {
  state: string;
  redis?: RedisServer;
  salt: number;
  log: (m: string) => void;
}

async function crashRun({ state, redis, salt, log }: Run): Promise<void> {
  const rand = seededRandom(salt);
  const pick = (n: number) => Math.floor(rand() * n);
  const dir = tempDir('vigil-journal-crash-');
  const journal = join(dir, 'runtime_error_cases.jsonl');
  const workFile = join(dir, 'work.jsonl');
  const healthPort = await freePort();
  const config = writeConfig(
    dir,
    `receivers:
  journal: { include: [${journal}], poll_interval: 50ms, batch_size: 4 }
processors:
  classify: {}
  recurrence: { min_recurrence: 1, max_per_turn: 100000 }
exporters:
  file/work: { path: ${workFile} }
extensions:
  health_check: { endpoint: 127.0.0.1:${healthPort} }
state:
${state}
service:
  extensions: [health_check]
  processing: { page_size: 8 }
  pipelines:
    logs: { receivers: [journal], processors: [classify, recurrence], exporters: [file/work] }
`,
  );
  const writer = startJournalWriter(journal);
  const stderr: string[] = [];
  let vigil: VigilChild | undefined;
  const start = async () => {
    vigil = spawnVigil(['run', '-c', config]);
    await untilReady(vigil!, healthy(`http://127.0.0.1:${healthPort}`), 'vigil to be ready', 60_000);
  };
  const kill = async () => {
    vigil!.child.kill('SIGKILL');
    await vigil!.exited;
    stderr.push(vigil!.stderr());
    vigil = undefined;
  };
  const created = () => {
    const seen = new Set<string>();
    if (!existsSync(workFile)) return seen;
    for (const l of readFileSync(workFile, 'utf8').split('\n')) {
      if (!l.trim()) continue;
      try {
        const e = JSON.parse(l);
        if (e.type === 'dev.vigil.work.created') seen.add(e.data.evidence.event_id);
      } catch {
        // A line cut by SIGKILL mid-write: the event is delivered again whole.
      }
    }
    return seen;
  };

  const written: string[] = [];
  let partial: { id: string; rest: string } | undefined;
  let n = 0;
  let kills = 0;
  let compactions = 0;
  let redisKilled = false;
  await start();
  try {
    for (let step = 0; step < 24; step++) {
      if (partial) {
        await writer.write(partial.rest);
        written.push(partial.id);
        partial = undefined;
      }
      const lines: string[] = [];
      for (let k = 1 + pick(5); k > 0; k--) {
        lines.push(caseLine(n));
        written.push(`case-${String(n++).padStart(5, '0')}`);
        if (rand() < 0.1) lines.push('{"case_id": "broken", "error_kind":');
        if (rand() < 0.05) lines.push(caseLine(90_000 + step, { error_kind: 'no_such_kind' }));
      }
      await writer.append(lines);
      if (rand() < 0.3) {
        const line = caseLine(n) + '\n';
        const cut = 30 + pick(line.length - 40);
        partial = { id: `case-${String(n++).padStart(5, '0')}`, rest: line.slice(cut) };
        await writer.write(line.slice(0, cut));
      }
      if (rand() < 0.3) {
        // The consumer keeps everything from the first case vigil has not delivered yet.
        const done = created();
        const keepFrom = written.find((id) => !done.has(id)) ?? partial?.id ?? null;
        const how = rand() < 0.7 ? 'rename' : 'inplace';
        await writer.compact(keepFrom, how);
        compactions++;
        log(`step ${step}: compacted (${how}) keeping from ${keepFrom}`);
      }
      if (vigil && rand() < 0.3) {
        await sleep(pick(300));
        await kill();
        kills++;
        log(`step ${step}: SIGKILL vigil`);
        continue; // the next step's appends happen while vigil is down
      }
      if (redis && !redisKilled && step > 8 && vigil) {
        redisKilled = true;
        await redis.kill();
        log(`step ${step}: SIGKILL redis`);
        await sleep(200 + pick(400));
        await redis.start();
      }
      if (!vigil) await start();
      await sleep(pick(150));
    }
    if (partial) {
      await writer.write(partial.rest);
      written.push(partial.id);
    }
    if (!vigil) await start();
    await waitFor(() => (written.every((id) => created().has(id)) ? true : undefined), `all ${written.length} cases to be delivered`, 60_000, 100).catch(
      (err: unknown) => {
        // Say which cases never arrived and what the journal and vigil held, so a rare loss can be explained from a CI log.
        const done = created();
        const missing = written.filter((id) => !done.has(id));
        const journalNow = existsSync(journal) ? readFileSync(journal, 'utf8') : '(no journal)';
        // Whether a missing case was processed at all: a work event other than work.created naming
        // it (an update: its group existed already) or none (it never reached the pipeline's decision).
        const workLines = existsSync(workFile) ? readFileSync(workFile, 'utf8').split('\n') : [];
        const aboutMissing = workLines.filter((l) => missing.some((id) => l.includes(`"${id}"`)));
        // Every warning and error of every run (the store's outage, refused batches and commits), in order.
        const warnings = [...stderr, vigil?.stderr() ?? '']
          .flatMap((log, run) => log.split('\n').map((l) => `run ${run}: ${l}`))
          .filter((l) => l.includes('"level":"warn"') || l.includes('"level":"error"'))
          .slice(-200);
        throw new Error(
          `${(err as Error).message}; missing ${missing.join(', ')}\nwork events naming them:\n${aboutMissing.join('\n').slice(-6000) || '(none)'}\nwarnings and errors of all runs:\n${warnings.join('\n').slice(-20000)}\njournal now:\n${journalNow.slice(-3000)}\nvigil's log (this run):\n${vigil?.stderr().slice(-6000) ?? ''}\nearlier runs:\n${stderr.join('\n').slice(-12000)}`,
        );
      },
    );
    await sleep(300);
  } finally {
    if (vigil) {
      vigil.child.kill('SIGTERM');
      await vigil.exited;
      stderr.push(vigil.stderr());
    }
    await writer.close();
  }
  log(`${written.length} cases, ${kills} SIGKILLs of vigil, ${compactions} compactions`);

  const byId = new Map<string, any>();
  for (const l of readFileSync(workFile, 'utf8').split('\n')) {
    if (!l.trim()) continue;
    let e: any;
    try {
      e = JSON.parse(l);
    } catch {
      continue;
    }
    const seen = byId.get(e.id);
    assert.ok(!seen || JSON.stringify(seen) === JSON.stringify(e), `event ${e.id} delivered with two contents`);
    byId.set(e.id, e);
  }
  const events = [...byId.values()];
  const updated = events.filter((e) => e.type === 'dev.vigil.work.updated');
  assert.deepEqual(
    updated.map((e) => e.data.evidence.event_id),
    [],
    'no case was counted twice',
  );
  const perCase = new Map<string, number>();
  for (const e of events) perCase.set(e.data.evidence.event_id, (perCase.get(e.data.evidence.event_id) ?? 0) + 1);
  assert.deepEqual([...perCase.keys()].sort(), [...written].sort(), 'every case, and nothing else');
  assert.ok(
    [...perCase.values()].every((c) => c === 1),
    'one work item per case',
  );
  assert.ok(events.every((e) => e.data.count === 1 && e.data.error_kind === 'invalid_tool_args'));
  // No errors logged, but those of the store while the SIGKILLed Redis was down (they name it).
  const errors = stderr
    .join('\n')
    .split('\n')
    .filter((l) => l.includes('"level":"error"') && !(redis && l.includes(`redis://127.0.0.1:${redis.port}`)));
  assert.deepEqual(errors, []);
}

test('journal, SQLite: SIGKILLs between appends, compactions while running — every case exactly once', { timeout: 300_000 }, async (t) => {
  const dir = tempDir();
  await crashRun({ state: `  sqlite: { path: ${join(dir, 'state.db')} }`, salt: 1, log: (m) => t.diagnostic(m) });
});

let redis: RedisServer;
before(async () => {
  redis = await RedisServer.start({ durable: true });
});
after(async () => {
  await redis?.stop();
});

test('journal, Redis (appendfsync always): SIGKILLs of vigil and once of Redis — every case exactly once', { timeout: 300_000 }, async (t) => {
  await crashRun({
    state: `  redis: { url: "${redis.url}", key_prefix: "${uniquePrefix('journal-crash')}", connect_timeout: 1s, command_timeout: 3s }`,
    redis,
    salt: 2,
    log: (m) => t.diagnostic(m),
  });
});
