/**
 * `npm run bench:soak`: a real `vigil run` (SQLite state, fsync on) fed for minutes with failures
 * from 50,000 sessions over 100,000 distinct signatures, whose only exporter is a webhook that is
 * dead (nothing listens: every attempt is refused). Every queue must reach its bound and stay
 * there: the outbox at `sending_queue.queue_size` (the oldest become dead letters), the dead
 * letters at 10,000, seen event ids and turns at their `dedupe_window`, groups at the number of
 * signatures. It samples the state files' size and the process's RSS, and prints them beside the
 * baseline: the same run with a file exporter that keeps up (what the state costs when nothing
 * backs up). `--only live` adds a live webhook that accepts everything: one POST per event, so at
 * these rates it falls behind and its queue bound applies too.
 *
 * A run lasts until every bound is reached and then `--flat` seconds more (at most `--seconds`).
 *
 *   npm run bench:soak -- [--flat 150] [--seconds 600] [--rate 1000] [--sessions 50000] [--signatures 100000]
 *                         [--queue 10000] [--dedupe 30s] [--sync normal|full] [--only dead,file,live]
 *
 * SQLite runs with `synchronous: normal` by default: with 50,000 sessions nearly every page is
 * its own commit, and an fsync per commit would hold the run to the disk's fsync rate long before
 * the bounds are reached. The bounds do not depend on it (`--sync full` checks).
 *
 * Figures on a shared machine are noisy; compare the two columns of one run.
 */
import { statSync, existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { letters } from '../test/helpers/faults.ts';
import { freePort, spawnVigil, tempDir, waitFor, writeConfig, type VigilChild } from '../test/helpers/vigil-process.ts';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '600' },
    flat: { type: 'string', default: '150' },
    rate: { type: 'string', default: '1000' },
    sessions: { type: 'string', default: '50000' },
    signatures: { type: 'string', default: '100000' },
    queue: { type: 'string', default: '10000' },
    dedupe: { type: 'string', default: '30s' },
    sync: { type: 'string', default: 'normal' },
    sample: { type: 'string', default: '10' },
    only: { type: 'string' },
  },
});
/** The longest a run may take, and how long it goes on once every bound is reached. */
const SECONDS = Number(args.seconds);
const FLAT_S = Number(args.flat);
const RATE = Number(args.rate);
const SESSIONS = Number(args.sessions);
const SIGNATURES = Number(args.signatures);
const SAMPLE_S = Number(args.sample);
const BATCH = 500;
/** Requests in flight at once, as several agents' exporters would have. */
const SENDERS = 8;

/** One OTLP/JSON logs request of BATCH failure records, numbered from `first`. */
function batch(first: number, t0: number): string {
  const records = [];
  for (let i = first; i < first + BATCH; i++) {
    // Records come in pairs of one signature (the second makes work), spread so that all
    // signatures and sessions are covered early and then keep recurring (work updates).
    const sig = (Math.floor(i / 2) * 7919) % SIGNATURES;
    const session = (i * 104729) % SESSIONS;
    records.push({
      timeUnixNano: `${t0 + i}000000`,
      severityNumber: 17,
      body: { stringValue: `Traceback (most recent call last):\n  File "/srv/agent/tool.py", line 3, in <module>\nLookupError: no handler for ${letters(sig)}` },
      attributes: [
        { key: 'session.id', value: { stringValue: `session-${session}` } },
        { key: 'log.record.uid', value: { stringValue: `r-${i}` } },
      ],
    });
  }
  return JSON.stringify({
    resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'soak-agent' } }] }, scopeLogs: [{ logRecords: records }] }],
  });
}

interface Sample {
  t: number;
  /** Every bound reached by this sample (groups at the number of signatures; dead run: outbox and dead letters full). */
  bounded?: boolean;
  sent: number;
  refused: number;
  /** Requests sent again after a connection error (a keep-alive connection closed under them). */
  networkErrors: number;
  stateMiB: number;
  /** Pages in use in the database file (its size less the free pages it keeps for reuse). */
  liveMiB: number;
  rssMiB: number;
  outboxLag: number;
  deadLetters: number;
  groups: number;
  backlog: number;
}

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

function sizeOf(...files: string[]): number {
  return files.reduce((n, f) => n + (existsSync(f) ? statSync(f).size : 0), 0) / 1048576;
}

/** MiB of the database's pages in use, read beside the running vigil (WAL readers do not block it). */
function livePages(file: string): number {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const pages = Number(db.pragma('page_count', { simple: true })) - Number(db.pragma('freelist_count', { simple: true }));
    return (pages * Number(db.pragma('page_size', { simple: true }))) / 1048576;
  } finally {
    db.close();
  }
}

function metric(text: string, name: string, labels = ''): number {
  let sum = 0;
  for (const line of text.split('\n'))
    if ((line.startsWith(name + '{') || line.startsWith(name + ' ')) && line.includes(labels)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

type Mode = 'dead' | 'file' | 'live';

async function soak(mode: Mode): Promise<Sample[]> {
  const dir = tempDir('vigil-soak-');
  const [otlp, metricsPort, hookPort] = [await freePort(), await freePort(), await freePort()];
  let hook: ReturnType<typeof createServer> | undefined;
  if (mode === 'live') {
    hook = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end());
    });
    await new Promise<void>((r) => hook!.listen(hookPort, '127.0.0.1', r));
  }
  const state = join(dir, 'state.db');
  const delivery = (batch: number) => `    retry_on_failure: { initial_interval: 1s, max_interval: 5s, max_elapsed_time: 30s }
    sending_queue: { queue_size: ${args.queue}, batch_size: ${batch} }`;
  // The baseline's file is rotated at 64 MiB so the run's disk use stays bounded too.
  const exporterYaml =
    mode === 'file'
      ? `  file:\n    path: ${join(dir, 'work.jsonl')}\n    max_size: 64MiB\n    max_backups: 1\n${delivery(1000)}`
      : `  webhook:\n    endpoint: http://127.0.0.1:${hookPort}/hook\n    timeout: 2s\n${delivery(128)}`;
  const config = writeConfig(
    dir,
    `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlp} } } }
processors:
  classify: {}
  recurrence: { min_recurrence: 2, max_per_turn: 1000000 }
exporters:
${exporterYaml}
state:
  sqlite: { path: ${state}, dedupe_window: ${args.dedupe}, synchronous: ${args.sync} }
service:
  telemetry:
    logs: { level: error }
    metrics: { address: 127.0.0.1:${metricsPort} }
  pipelines:
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: [${mode === 'file' ? 'file' : 'webhook'}] }
`,
  );
  const vigil: VigilChild = spawnVigil(['run', '-c', config], { env: { NODE_OPTIONS: '' } });
  // Never leave the child behind, whatever ends this process.
  const killChild = () => vigil.child.kill('SIGKILL');
  process.once('exit', killChild);
  const url = `http://127.0.0.1:${otlp}/v1/logs`;
  await waitFor(
    async () =>
      (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).catch(() => undefined))?.status === 200 ? true : undefined,
    `vigil to listen\n${vigil.stderr()}`,
    30_000,
  );

  const t0 = Date.UTC(2026, 0, 1);
  const started = Date.now();
  let sent = 0;
  let refused = 0;
  let networkErrors = 0;
  let next = 0;
  const samples: Sample[] = [];
  let nextSample = started + SAMPLE_S * 1000;
  const take = async () => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const s: Sample = {
      t: Math.round((Date.now() - started) / 1000),
      sent,
      refused,
      networkErrors,
      stateMiB: sizeOf(state, `${state}-wal`, `${state}-shm`),
      liveMiB: livePages(state),
      rssMiB: rssOf(vigil.child.pid!),
      outboxLag: metric(text, 'vigil_outbox_lag_items'),
      deadLetters: metric(text, 'vigil_dead_letters'),
      groups: metric(text, 'vigil_groups'),
      backlog: metric(text, 'vigil_ingest_backlog_records'),
    };
    samples.push(s);
    if (boundsAt === undefined && reached(s)) {
      boundsAt = s.t;
      s.bounded = true;
      end = Math.min(end, Date.now() + FLAT_S * 1000);
    }
    process.stderr.write(
      `  ${mode} ${String(s.t).padStart(4)} s  sent ${s.sent}  refused ${s.refused}  network errors ${s.networkErrors}  state ${s.stateMiB.toFixed(1)} MiB (in use ${s.liveMiB.toFixed(1)})  rss ${s.rssMiB.toFixed(0)} MiB  outbox ${s.outboxLag}  dead ${s.deadLetters}  groups ${s.groups}  backlog ${s.backlog}\n`,
    );
  };
  let end = started + SECONDS * 1000;
  let boundsAt: number | undefined;
  const reached = (x: Sample) => x.groups >= SIGNATURES && (mode !== 'dead' || (x.outboxLag >= Number(args.queue) && x.deadLetters >= 10_000));
  // Paced senders: RATE records/s in batches, a few requests in flight as agents' exporters
  // would; a refused batch (backlog over its limit) is sent again after a pause.
  const sender = async () => {
    while (Date.now() < end) {
      const due = Math.floor(((Date.now() - started) / 1000) * RATE);
      if (next + BATCH > due) {
        await new Promise((r) => setTimeout(r, 20));
        continue;
      }
      const first = next;
      next += BATCH;
      for (;;) {
        // A connection the server closed as it was reused (keep-alive) is retried, as OTLP clients do.
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: batch(first, t0) }).catch((err: Error) => {
          if (vigil.child.exitCode !== null) throw new Error(`vigil exited ${vigil.child.exitCode}: ${vigil.stderr().slice(-3000)}`);
          networkErrors++;
          return err;
        });
        if (res instanceof Error) continue;
        await res.arrayBuffer();
        if (res.status === 200) break;
        refused += BATCH;
        await new Promise((r) => setTimeout(r, 200));
      }
      sent += BATCH;
    }
  };
  const sampler = async () => {
    while (Date.now() < end) {
      await new Promise((r) => setTimeout(r, Math.max(0, nextSample - Date.now())));
      nextSample += SAMPLE_S * 1000;
      await take();
    }
  };
  await Promise.all([...Array.from({ length: SENDERS }, sender), sampler()]);
  await take();
  vigil.child.kill('SIGKILL');
  await vigil.exited;
  process.off('exit', killChild);
  if (hook) await new Promise<void>((r) => hook!.close(() => r()));
  return samples;
}

/** From the sample where every bound was first reached to the end: what "flat" is judged on. */
function afterBounds(samples: Sample[], pick: (s: Sample) => number): string {
  const i = samples.findIndex((x) => x.bounded);
  if (i < 0) return 'bounds not reached (run longer: --seconds)';
  const span = samples.slice(i);
  const values = span.map(pick);
  return `${values[0]!.toFixed(1)} at ${span[0]!.t} s → ${values.at(-1)!.toFixed(1)} at ${span.at(-1)!.t} s (min ${Math.min(...values).toFixed(1)}, max ${Math.max(...values).toFixed(1)})`;
}

async function main(): Promise<void> {
  const modes = (args.only ? args.only.split(',') : ['dead', 'file']) as Mode[];
  console.log(
    `soak: ${SECONDS} s per run, ${RATE} failure records/s in batches of ${BATCH}, ${SESSIONS} sessions, ${SIGNATURES} signatures, queue_size ${args.queue}, dedupe_window ${args.dedupe}; SQLite, synchronous ${args.sync}`,
  );
  const runs: Record<string, Sample[]> = {};
  for (const m of modes) runs[m] = await soak(m);
  const names: Record<Mode, string> = { dead: 'dead webhook', file: 'file exporter keeping up (baseline)', live: 'live webhook (one POST at a time)' };
  const cols = modes.map((m) => names[m]);
  const row = (label: string, f: (s: Sample[]) => string) => console.log(`| ${label} | ${modes.map((m) => f(runs[m]!)).join(' | ')} |`);
  console.log(`\n| | ${cols.join(' | ')} |`);
  console.log(`| --- | ${modes.map(() => '---').join(' | ')} |`);
  row(
    'records accepted (refused and resent; requests resent after a connection error)',
    (s) => `${s.at(-1)!.sent} (${s.at(-1)!.refused}; ${s.at(-1)!.networkErrors})`,
  );
  row('groups at the end', (s) => String(s.at(-1)!.groups));
  row('outbox lag: max over the run / at the end', (s) => `${Math.max(...s.map((x) => x.outboxLag))} / ${s.at(-1)!.outboxLag}`);
  row('dead letters kept at the end', (s) => String(s.at(-1)!.deadLetters));
  row('state files on disk, db + WAL (MiB), from the bounds on', (s) => afterBounds(s, (x) => x.stateMiB));
  row('database pages in use (MiB), from the bounds on', (s) => afterBounds(s, (x) => x.liveMiB));
  row('RSS (MiB) from the bounds on', (s) => afterBounds(s, (x) => x.rssMiB));
  console.log('\nsamples (t s: state files MiB / in use MiB / RSS MiB / outbox / dead letters / groups):');
  for (const m of modes)
    console.log(
      `  ${m}: ${runs[m]!.map((s) => `${s.t}: ${s.stateMiB.toFixed(1)}/${s.liveMiB.toFixed(1)}/${s.rssMiB.toFixed(0)}/${s.outboxLag}/${s.deadLetters}/${s.groups}`).join('  ')}`,
    );
}

await main();
