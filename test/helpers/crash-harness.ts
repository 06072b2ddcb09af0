/**
 * The crash harness: a fixed stream of OTLP log records (bursts, chronic repeats hours apart, many
 * sessions, redelivered batches) sent to a real `vigil run` child by an at-least-once client (a
 * batch is resent until it gets a 200, like an SDK retrying), optionally SIGKILLing vigil — and
 * Redis — at random moments and restarting them. A run returns the work events the file exporter
 * delivered, so a test can compare a crashed run with an uninterrupted one.
 *
 * The kill timings come from a seeded PRNG: each run logs its seed, and `VIGIL_CRASH_SEED=<seed>`
 * replays the same schedule of kills (the same delays between them; where in the stream each one
 * lands still depends on how fast the machine runs).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RedisServer } from './redis-server.ts';
import { freePort, spawnVigil, tempDir, waitFor, writeConfig, type VigilChild } from './vigil-process.ts';
import { otlpLogs } from './otlp-logs.ts';

/** mulberry32: a small seeded PRNG, so the stream is the same in every run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SIGNATURES = ['Alpha', 'Bravo', 'Charlie', 'Delta', 'Echo', 'Foxtrot', 'Golf', 'Hotel', 'India', 'Juliet'].map(
  (n) => `${n}Error: the ${n.toLowerCase()} step failed`,
);

interface StreamRecord {
  uid: string;
  session: string;
  time: number;
  severity: number;
  body: string;
  /** The failure's signature; undefined for warnings that create nothing. */
  signature?: string;
}

export interface Batch {
  session: string;
  body: string;
}

export interface CrashStream {
  batches: Batch[];
  records: number;
  /** True count per group (`session|signature`): distinct records of that failure in that session. */
  groups: Map<string, number>;
}

/**
 * Sessions each have up to four failures (so `max_per_turn: 5` never decides) with a pattern:
 * a burst within seconds, chronic repeats one to three hours apart, a single occurrence, or a
 * burst followed by chronic repeats; plus warnings. Each batch is one trace of one session; about
 * one batch in eight is sent a second time later on (redelivery).
 */
export function crashStream(seed = 7, sessions = 90): CrashStream {
  const rand = prng(seed);
  const pick = (n: number) => Math.floor(rand() * n);
  const perSession: StreamRecord[][] = [];
  const groups = new Map<string, number>();
  let uid = 0;
  for (let s = 0; s < sessions; s++) {
    const session = `crash-session-${s}`;
    const base = Date.UTC(2026, 0, 5) + s * 600_000;
    const records: StreamRecord[] = [];
    const sigs = [...SIGNATURES].sort(() => rand() - 0.5).slice(0, 1 + pick(4));
    for (const signature of sigs) {
      const pattern = pick(4);
      const times: number[] = [];
      let t = base + pick(60_000);
      const n = pattern === 2 ? 1 : 3 + pick(8);
      for (let i = 0; i < n; i++) {
        times.push(t);
        const chronic = pattern === 1 || (pattern === 3 && i >= n / 2);
        t += chronic ? 3_600_000 + pick(7_200_000) : 500 + pick(5000);
      }
      for (const time of times)
        records.push({
          uid: `r${uid++}`,
          session,
          time,
          severity: 17,
          body: `Traceback (most recent call last):\n  File "/srv/agent/step.py", line 9, in run\n${signature}`,
          signature,
        });
      groups.set(`${session}|${signature}`, times.length);
    }
    for (let w = pick(4); w > 0; w--)
      records.push({ uid: `r${uid++}`, session, time: base + pick(3_600_000), severity: 13, body: 'DeprecationWarning: pkg_resources is deprecated' });
    records.sort((a, b) => a.time - b.time);
    perSession.push(records);
  }
  // One trace per batch of 1..8 records of a session; sessions interleave, each in its own order.
  const queues = perSession.map((records) => {
    const out: Batch[] = [];
    for (let i = 0; i < records.length;) {
      const n = 1 + pick(8);
      out.push(batchOf(records.slice(i, i + n), rand));
      i += n;
    }
    return out;
  });
  const batches: Batch[] = [];
  const redeliver: Array<{ at: number; batch: Batch }> = [];
  while (queues.some((q) => q.length)) {
    const live = queues.filter((q) => q.length);
    const b = live[pick(live.length)]!.shift()!;
    batches.push(b);
    if (rand() < 0.125) redeliver.push({ at: batches.length + 5 + pick(60), batch: b });
    for (const r of redeliver.filter((x) => x.at <= batches.length)) {
      batches.push(r.batch);
      redeliver.splice(redeliver.indexOf(r), 1);
    }
  }
  for (const r of redeliver) batches.push(r.batch);
  return { batches, records: uid, groups };
}

function hex(rand: () => number, bytes: number): string {
  let s = '';
  for (let i = 0; i < bytes; i++)
    s += Math.floor(rand() * 256)
      .toString(16)
      .padStart(2, '0');
  return s;
}

function batchOf(records: StreamRecord[], rand: () => number): Batch {
  const traceId = hex(rand, 16);
  const body = otlpLogs(
    records.map((r) => ({ time: r.time, severity: r.severity, body: r.body, traceId, spanId: hex(rand, 8), session: r.session, uid: r.uid })),
    { 'service.name': 'crash-agent', 'service.version': '2.0.0' },
  );
  return { session: records[0]!.session, body };
}

export type StateConfig = { sqlite: string } | { redis: { url: string; prefix: string } };

/** The kill-timing seed: `VIGIL_CRASH_SEED` when set (to replay a run), else a fresh random one. */
export function crashSeed(env: NodeJS.ProcessEnv = process.env): number {
  const given = env.VIGIL_CRASH_SEED;
  if (given !== undefined && given !== '') {
    const n = Number(given);
    if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new Error(`VIGIL_CRASH_SEED must be an integer from 0 to 4294967295, got ${JSON.stringify(given)}`);
    return n;
  }
  return Math.floor(Math.random() * 0x100000000);
}

/** One step of the chaos: wait `afterMs`, then SIGKILL vigil (and restart it) or Redis (restarted `downMs` later). */
export type KillStep = { kill: 'vigil'; afterMs: number } | { kill: 'redis'; afterMs: number; downMs: number };

/** The kills of a run and the delays before them, all drawn from the seed. */
export function killSchedule(seed: number, kills: number, killRedis: boolean): KillStep[] {
  const rand = prng(seed);
  const redisAt = killRedis ? Math.floor(rand() * (kills + 1)) : -1;
  const steps: KillStep[] = [];
  for (let k = 0; k <= kills; k++) {
    if (k === redisAt) steps.push({ kill: 'redis', afterMs: Math.round(200 + rand() * 800), downMs: Math.round(300 + rand() * 700) });
    if (k < kills) steps.push({ kill: 'vigil', afterMs: Math.round(300 + rand() * 1500) });
  }
  return steps;
}

export interface RunOptions {
  state: StateConfig;
  /** SIGKILLs of vigil, each followed by a restart. */
  kills: number;
  /** Seed of the kill timings (default: crashSeed()). */
  seed?: number;
  /** A private Redis to SIGKILL and restart (appendonly) once during the run. */
  redisToKill?: RedisServer;
  pageSize?: number;
  log?: (msg: string) => void;
}

export interface RunResult {
  events: Array<Record<string, any>>;
  /** Lines of the work-events file (repeats included: delivery is at least once). */
  lines: number;
  groupsInStore: number;
  openWork: number;
  stderr: string;
  /** The kill-timing seed this run used. */
  seed: number;
}

function stateYaml(state: StateConfig): string {
  if ('sqlite' in state) return `  sqlite: { path: ${state.sqlite} }`;
  return `  redis: { url: "${state.redis.url}", key_prefix: "${state.redis.prefix}", connect_timeout: 1s, command_timeout: 3s }`;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One complete run of the stream through a `vigil run` child (restarted after each kill). */
export async function runStream(stream: CrashStream, opts: RunOptions): Promise<RunResult> {
  const log = opts.log ?? (() => undefined);
  const seed = opts.seed ?? crashSeed();
  if (opts.kills > 0 || opts.redisToKill) log(`kill timings seed ${seed} (replay with VIGIL_CRASH_SEED=${seed})`);
  const dir = tempDir('vigil-crash-');
  const [otlpPort, healthPort] = [await freePort(), await freePort()];
  const workFile = join(dir, 'work-events.jsonl');
  const config = writeConfig(
    dir,
    `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlpPort} } } }
processors:
  classify: {}
  recurrence: { min_recurrence: 2, grouping_window: 60s, max_per_turn: 5, scope: session }
exporters:
  file/work: { path: ${workFile} }
extensions:
  health_check: { endpoint: 127.0.0.1:${healthPort} }
state:
${stateYaml(opts.state)}
service:
  extensions: [health_check]
  processing: { page_size: ${opts.pageSize ?? 8} }
  pipelines:
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: [file/work] }
`,
  );
  const health = `http://127.0.0.1:${healthPort}`;
  const stderr: string[] = [];
  let vigil: VigilChild = spawnVigil(['run', '-c', config]);
  const healthy = () =>
    waitFor(
      async () => {
        if (vigil.child.exitCode !== null) throw new Error(`vigil exited ${vigil.child.exitCode}: ${vigil.stderr()}`);
        return (await fetch(`${health}/healthz`)).status === 200 ? true : undefined;
      },
      'vigil to be ready',
      60_000,
    );
  await healthy();

  let sending = true;
  const sender = (async () => {
    for (const batch of stream.batches) {
      for (;;) {
        const res = await fetch(`http://127.0.0.1:${otlpPort}/v1/logs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: batch.body,
          signal: AbortSignal.timeout(10_000),
        }).catch(() => undefined);
        if (res?.status === 200) break;
        await res?.text().catch(() => undefined);
        await sleep(50);
      }
      await sleep(3);
    }
    sending = false;
  })();

  const chaos = (async () => {
    for (const step of killSchedule(seed, opts.kills, !!opts.redisToKill)) {
      await sleep(step.afterMs);
      if (step.kill === 'redis') {
        log(`SIGKILL redis (sending: ${sending})`);
        await opts.redisToKill!.kill();
        await sleep(step.downMs);
        await opts.redisToKill!.start();
        continue;
      }
      log(`SIGKILL vigil (sending: ${sending})`);
      vigil.child.kill('SIGKILL');
      await vigil.exited;
      stderr.push(vigil.stderr());
      vigil = spawnVigil(['run', '-c', config]);
      await healthy();
    }
  })();

  await Promise.all([sender, chaos]);
  // Wait until everything acknowledged is processed and delivered.
  const st = await waitFor(
    async () => {
      const body = (await (await fetch(`${health}/status`)).json()) as any;
      const pending = body.store.pipelines.flatMap((p: any) => p.partitions).reduce((n: number, p: any) => n + p.pending, 0);
      const lag = body.store.pipelines.flatMap((p: any) => p.outbox.exporters).reduce((n: number, e: any) => n + e.lag, 0);
      return pending === 0 && lag === 0 ? body.store : undefined;
    },
    'the backlog and the outbox to drain',
    90_000,
  );
  vigil.child.kill('SIGTERM');
  const code = await vigil.exited;
  stderr.push(vigil.stderr());
  if (code !== 0) throw new Error(`vigil exited ${code}:\n${stderr.join('\n')}`);
  const text = existsSync(workFile) ? readFileSync(workFile, 'utf8') : '';
  const lines = text.split('\n').filter(Boolean);
  return { events: lines.map((l) => JSON.parse(l)), lines: lines.length, groupsInStore: st.groups, openWork: st.openWork, stderr: stderr.join('\n'), seed };
}

export interface Summary {
  /** Events by id after dedupe (the file exporter delivers at least once). */
  byId: Map<string, Record<string, any>>;
  /** Ids delivered with two different contents (must be none). */
  conflicting: string[];
  created: Set<string>;
  workIds: Set<string>;
  /** Work ids per group (must be one). */
  workOfGroup: Map<string, Set<string>>;
  /** The highest count delivered per group: the newest event's count. */
  countOfGroup: Map<string, number>;
  /** Group key → `session|signature`, to compare with the stream's true counts. */
  nameOfGroup: Map<string, string>;
}

export function summarize(events: Array<Record<string, any>>): Summary {
  const byId = new Map<string, Record<string, any>>();
  const conflicting: string[] = [];
  for (const e of events) {
    const seen = byId.get(e.id);
    if (seen && JSON.stringify(seen) !== JSON.stringify(e)) conflicting.push(e.id);
    byId.set(e.id, e);
  }
  const s: Summary = { byId, conflicting, created: new Set(), workIds: new Set(), workOfGroup: new Map(), countOfGroup: new Map(), nameOfGroup: new Map() };
  for (const e of byId.values()) {
    const d = e.data;
    if (e.type === 'dev.vigil.work.created') s.created.add(e.id);
    s.workIds.add(d.work_id);
    if (!s.workOfGroup.has(d.group_key)) s.workOfGroup.set(d.group_key, new Set());
    s.workOfGroup.get(d.group_key)!.add(d.work_id);
    s.countOfGroup.set(d.group_key, Math.max(s.countOfGroup.get(d.group_key) ?? 0, d.count));
    s.nameOfGroup.set(d.group_key, `${d.partition}|${d.signature}`);
  }
  return s;
}
