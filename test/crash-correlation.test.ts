/**
 * Crash tests of the correlation log (DESIGN 3.3): vigil is SIGKILLed while acknowledged records
 * wait for their trace's session, or for the other records of their failure; after the restart
 * every record is processed once, in the right session — the waits resume from each record's
 * arrival, which is stored with it.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { logsBody, openaiTurn, tracesBody, type AgentRecord } from './helpers/agent-records.ts';
import { freePort, healthy, spawnVigil, tempDir, untilReady, type VigilChild, waitFor, writeConfig } from './helpers/vigil-process.ts';

type WorkEvent = { id: string; type: string; data: Record<string, any> };

interface Setup {
  config: string;
  otlp: string;
  health: string;
  work: string;
}

async function setup(waits: string): Promise<Setup> {
  const dir = tempDir('vigil-crash-corr-');
  const [otlpPort, healthPort] = [await freePort(), await freePort()];
  const work = join(dir, 'work.jsonl');
  const config = writeConfig(
    dir,
    `receivers:
  otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlpPort} } } }
processors:
  classify: {}
  recurrence: { min_recurrence: 1 }
exporters:
  file: { path: ${work} }
extensions:
  health_check: { endpoint: 127.0.0.1:${healthPort} }
state:
  sqlite: { path: ${join(dir, 'state.db')} }
service:
  extensions: [health_check]
  correlation: { ${waits} }
  pipelines:
    traces: { receivers: [otlp], processors: [classify, recurrence], exporters: [file] }
    logs: { receivers: [otlp], processors: [classify, recurrence], exporters: [file] }
`,
  );
  return { config, otlp: `http://127.0.0.1:${otlpPort}`, health: `http://127.0.0.1:${healthPort}`, work };
}

async function run(s: Setup, children: VigilChild[]): Promise<VigilChild> {
  const child = spawnVigil(['run', '-c', s.config]);
  children.push(child);
  await untilReady(child, healthy(s.health));
  return child;
}

async function kill(child: VigilChild): Promise<void> {
  child.child.kill('SIGKILL');
  await child.exited;
}

async function send(s: Setup, records: readonly AgentRecord[]): Promise<void> {
  const spans = records.filter((r) => r.kind === 'span');
  const logs = records.filter((r) => r.kind === 'log');
  if (spans.length)
    assert.equal((await fetch(`${s.otlp}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: tracesBody(spans) })).status, 200);
  if (logs.length)
    assert.equal((await fetch(`${s.otlp}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: logsBody(logs) })).status, 200);
}

/** Records waiting in the correlation log, as /status tells. */
async function waiting(s: Setup): Promise<number> {
  const st = (await (await fetch(`${s.health}/status`)).json()) as { store: { pipelines: Array<{ pipeline: string; partitions: Array<{ pending: number }> }> } };
  return st.store.pipelines.filter((p) => p.pipeline === 'correlation').reduce((n, p) => n + p.partitions.reduce((m, x) => m + x.pending, 0), 0);
}

/**
 * The work events in the file, one per event id. The file exporter delivers at least once (a SIGKILL
 * after a batch is synced but before its delivery is recorded sends it again after the restart,
 * README "Delivery guarantees per exporter"), so a line may repeat; a repeat must be the same event,
 * byte for byte, which downstream deduplication by id relies on.
 */
function readWork(file: string): WorkEvent[] {
  if (!existsSync(file)) return [];
  const byId = new Map<string, { line: string; event: WorkEvent }>();
  for (const line of readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
    const event = JSON.parse(line) as WorkEvent;
    const seen = byId.get(event.id);
    if (seen) assert.equal(line, seen.line, `event ${event.id} delivered twice with different contents`);
    else byId.set(event.id, { line, event });
  }
  return [...byId.values()].map((e) => e.event);
}

async function workItems(s: Setup, n: number): Promise<WorkEvent[]> {
  await waitFor(() => (readWork(s.work).filter((e) => e.type === 'dev.vigil.work.created').length >= n ? true : undefined), `${n} work items`, 30_000);
  await new Promise((r) => setTimeout(r, 1500));
  return readWork(s.work);
}

describe('correlation log: SIGKILL while records wait', () => {
  const children: VigilChild[] = [];
  after(() => children.forEach((c) => c.child.kill('SIGKILL')));

  test('records waiting for their session survive a SIGKILL; after the restart their root arrives and each is processed once, in its session', async () => {
    const s = await setup('session_wait: 60s, failure_wait: 500ms');
    const turn = openaiTurn(Date.UTC(2026, 2, 1), 'sess-crash');
    const first = await run(s, children);
    await send(s, [turn.tool, turn.chat, turn.toolLog, turn.chatLog]);
    await waitFor(async () => ((await waiting(s)) === 4 ? true : undefined), 'four records waiting');
    await new Promise((r) => setTimeout(r, 700)); // their failure wait is over; the session wait is not
    assert.equal(await waiting(s), 4, 'they wait for their session');
    await kill(first);

    await run(s, children);
    assert.equal(await waiting(s), 4, 'nothing acknowledged was lost');
    await send(s, [turn.root]);
    const events = await workItems(s, 2);
    assert.equal(events.length, 2, JSON.stringify(events.map((e) => [e.type, e.data.signature])));
    for (const e of events) {
      assert.equal(e.type, 'dev.vigil.work.created');
      assert.equal(e.data.partition, 'sess-crash');
      assert.equal(e.data.evidence.related.length, 1);
    }
    await waitFor(async () => ((await waiting(s)) === 0 ? true : undefined), 'an empty correlation log');
  });

  test("a trace's session told before a SIGKILL (the root, not kept) is known after the restart: its children go to it at once", async () => {
    // A session wait longer than the test: a child released by its fallback instead would come too late.
    const s = await setup('session_wait: 120s, failure_wait: 300ms');
    const turn = openaiTurn(Date.UTC(2026, 2, 5), 'sess-told');
    const first = await run(s, children);
    await send(s, [turn.root]);
    await kill(first);

    await run(s, children);
    await send(s, [turn.tool, turn.chat, turn.toolLog, turn.chatLog]);
    const events = await workItems(s, 2);
    assert.deepEqual(
      events.map((e) => [e.type, e.data.partition]),
      [
        ['dev.vigil.work.created', 'sess-told'],
        ['dev.vigil.work.created', 'sess-told'],
      ],
    );
  });

  test('SIGKILL within the failure wait, the root already acknowledged: after the restart the wait resumes and each failure is one work item', async () => {
    const s = await setup('session_wait: 60s, failure_wait: 2s');
    const turn = openaiTurn(Date.UTC(2026, 2, 2), 'sess-crash-2');
    const first = await run(s, children);
    await send(s, turn.all);
    await kill(first);
    await run(s, children);
    const events = await workItems(s, 2);
    assert.equal(events.length, 2, JSON.stringify(events.map((e) => [e.type, e.data.signature])));
    assert.deepEqual(
      events.map((e) => e.data.partition),
      ['sess-crash-2', 'sess-crash-2'],
    );
    // Sent again after the restart (an SDK retrying): recognised, nothing new.
    await send(s, turn.all);
    await new Promise((r) => setTimeout(r, 3000));
    assert.equal(readWork(s.work).length, 2);
  });

  test('repeated SIGKILLs while turns arrive and wait: every failure once, each in its session', async () => {
    // Every root is sent, so no record waits out session_wait here; it is long enough that a restart
    // slowed by a loaded machine (4-12 s seen) does not release children before their root arrives.
    const s = await setup('session_wait: 30s, failure_wait: 300ms');
    const t0 = Date.UTC(2026, 2, 3);
    const turns = Array.from({ length: 12 }, (_, i) => openaiTurn(t0 + i * 600_000, `sess-k${i % 4}`));
    let child = await run(s, children);
    for (let i = 0; i < turns.length; i++) {
      const turn = turns[i]!;
      // Children first, the root in a later request (as SDK batches often split them).
      await send(s, [turn.tool, turn.chat, turn.toolLog, turn.chatLog]);
      await new Promise((r) => setTimeout(r, 50 + ((i * 37) % 150)));
      if (i % 3 === 1) {
        await kill(child);
        child = await run(s, children);
      }
      await send(s, [turn.root]);
    }
    // The same two failures in every turn: two groups, one work item each, counted once per turn.
    const events = await waitFor(
      () => {
        const es = readWork(s.work);
        const last = new Map<string, number>();
        for (const e of es) last.set(e.data.work_id, Math.max(last.get(e.data.work_id) ?? 0, e.data.count));
        return [...last.values()].length === 2 && [...last.values()].every((c) => c === turns.length) ? es : undefined;
      },
      'both groups counted once per turn',
      60_000,
    );
    await new Promise((r) => setTimeout(r, 1500));
    const all = readWork(s.work);
    assert.equal(all.filter((e) => e.type === 'dev.vigil.work.created').length, 2);
    const counts = new Map<string, number>();
    for (const e of all) counts.set(e.data.work_id, Math.max(counts.get(e.data.work_id) ?? 0, e.data.count));
    assert.deepEqual([...counts.values()], [turns.length, turns.length], 'no failure counted twice or lost');
    const byTrace = new Map(turns.map((t, i) => [t.traceId, `sess-k${i % 4}`]));
    for (const e of all) assert.equal(e.data.partition, byTrace.get(e.data.trace_id), `${e.data.trace_id} in its session`);
    assert.ok(events.length >= 2);
  });

  test('records that skip the log (nothing waits, no failure wait) survive a SIGKILL right after their acknowledgement: every failure once, in its session', async () => {
    const s = await setup('session_wait: 60s, failure_wait: 0s');
    const t0 = Date.UTC(2026, 2, 4);
    const turns = Array.from({ length: 9 }, (_, i) => openaiTurn(t0 + i * 600_000, `sess-s${i % 3}`));
    for (let round = 0; round < 3; round++) {
      const child = await run(s, children);
      const mine = turns.slice(round * 3, round * 3 + 3);
      // Whole turns, the root with its failed children: they go straight to the traces pipeline.
      await send(s, [mine[0]!.tool, mine[0]!.chat, mine[0]!.root]);
      const st = (await (await fetch(`${s.health}/status`)).json()) as { correlation: { straight: number; rounds: number } };
      assert.deepEqual([st.correlation.straight, st.correlation.rounds], [2, 0], 'they skipped the correlation log');
      for (const turn of mine.slice(1)) await send(s, [turn.tool, turn.chat, turn.root]);
      // Killed as soon as the last is acknowledged: what the pipeline had not processed yet must be on disk.
      await kill(child);
    }
    await run(s, children);
    await waitFor(
      () => {
        const last = new Map<string, number>();
        for (const e of readWork(s.work)) last.set(e.data.work_id, Math.max(last.get(e.data.work_id) ?? 0, e.data.count));
        return [...last.values()].length === 2 && [...last.values()].every((c) => c === turns.length) ? true : undefined;
      },
      'both groups counted once per turn',
      60_000,
    );
    await new Promise((r) => setTimeout(r, 1500));
    const all = readWork(s.work);
    assert.equal(all.filter((e) => e.type === 'dev.vigil.work.created').length, 2);
    const counts = new Map<string, number>();
    for (const e of all) counts.set(e.data.work_id, Math.max(counts.get(e.data.work_id) ?? 0, e.data.count));
    assert.deepEqual([...counts.values()], [turns.length, turns.length], 'no failure counted twice or lost');
    const byTrace = new Map(turns.map((t, i) => [t.traceId, `sess-s${i % 3}`]));
    for (const e of all) assert.equal(e.data.partition, byTrace.get(e.data.trace_id), `${e.data.trace_id} in its session`);
  });
});
