/**
 * Records that would be released at once skip the correlation log while it holds nothing
 * (src/correlation/ingest.ts, `mayGoStraight`, `planAtIngest`): both sides of the decision through
 * a running vigil (in process, memory store, real OTLP/HTTP requests), and the decision itself.
 * Going straight changes the cost, not the outcome: the records get the session and the
 * correlation a round of the log would give them, and a batch behind a waiting record of its
 * session still goes through the log, behind it.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import fc from 'fast-check';
import { CORRELATION_PIPELINE, DEFAULT_CORRELATION, mayGoStraight, planAtIngest, WAITING_PARTITION, waitingEvent } from '../src/correlation/ingest.ts';
import { planRelease, type ReleasedRecord } from '../src/correlation/plan.ts';
import { memoryLogger } from '../src/logger.ts';
import type { AgentEvent } from '../src/model/event.ts';
import { decodeLogsJson, decodeTracesJson } from '../src/receivers/otlp/json.ts';
import { mapLogs, mapTraces } from '../src/receivers/otlp/mapping.ts';
import { CorrelationRunner, type CorrelationStats } from '../src/service/correlation-runner.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { SqliteStore } from '../src/store/sqlite/store.ts';
import type { StateStore } from '../src/store/types.ts';
import type { Service } from '../src/service/service.ts';
import { aiSdkTurn, logsBody, openaiTurn, tracesBody, type AgentRecord } from './helpers/agent-records.ts';
import { checkProperty } from './helpers/random.ts';
import { startService } from './helpers/in-process.ts';
import { freePort, tempDir, waitFor } from './helpers/vigil-process.ts';
import { writtenJsonLines } from './helpers/work-file.ts';

type WorkEvent = { id: string; type: string; data: Record<string, any> };

const T0 = Date.UTC(2026, 3, 4, 9, 0, 0);

async function start() {
  const dir = tempDir();
  const port = await freePort();
  const work = join(dir, 'work.jsonl');
  const { service } = await startService(`
receivers: { otlp: { protocols: { http: { endpoint: 127.0.0.1:${port} } } } }
processors: { classify: {}, recurrence: { min_recurrence: 1 } }
exporters: { file: { path: ${work} } }
state: { memory: {} }
service:
  correlation: { session_wait: 1500ms, failure_wait: 0s }
  pipelines:
    traces: { receivers: [otlp], processors: [classify, recurrence], exporters: [file] }
`);
  return { service, base: `http://127.0.0.1:${port}`, work };
}

async function send(base: string, spans: readonly AgentRecord[]): Promise<void> {
  const res = await fetch(`${base}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: tracesBody(spans) });
  assert.equal(res.status, 200, await res.text());
}

function readWork(file: string): WorkEvent[] {
  return writtenJsonLines<WorkEvent>(file);
}

async function delivered(file: string, n: number): Promise<WorkEvent[]> {
  await waitFor(() => (readWork(file).length >= n ? true : undefined), `${n} work events in ${file}`, 15_000);
  await new Promise((r) => setTimeout(r, 400));
  return readWork(file);
}

async function stats(service: Service): Promise<CorrelationStats> {
  return ((await service.status()) as { correlation: CorrelationStats }).correlation;
}

/** A turn's spans as the receiver hands them to the service: decoded and mapped, the kept records and the trace → session facts. */
function mapped(spans: readonly AgentRecord[], markers = false): { events: AgentEvent[]; sessions: Map<string, string> } {
  const decoded = decodeTracesJson(tracesBody(spans), { skipIrrelevant: true, markers });
  const m = mapTraces(decoded.groups, { markers });
  for (const [t, s] of decoded.sessions) m.traceSessions.set(t, s);
  return { events: m.events, sessions: m.traceSessions };
}

/** Log records as the receiver hands them to the service (see `mapped`). */
function mappedLogs(records: readonly AgentRecord[]): { events: AgentEvent[]; sessions: Map<string, string> } {
  const decoded = decodeLogsJson(logsBody(records), { skipIrrelevant: true });
  const m = mapLogs(decoded.groups);
  for (const [t, s] of decoded.sessions) m.traceSessions.set(t, s);
  return { events: m.events, sessions: m.traceSessions };
}

/** A correlation runner as the service makes it, with no failure wait (batches may go straight). */
function straightRunner(store: StateStore): CorrelationRunner {
  return new CorrelationRunner({
    store,
    logger: memoryLogger(),
    settings: { ...DEFAULT_CORRELATION, failureWait: 0 },
    pageSize: 64,
    counting: new Set(['traces']),
    forwarding: new Set(),
  });
}
describe('records skip the correlation log while it holds nothing', () => {
  const services: Service[] = [];
  after(async () => {
    for (const s of services) await s.shutdown();
  });

  test('nothing waits: a turn goes straight to its pipeline, in its trace session, each failure once; so does one whose session is already stored', async () => {
    const v = await start();
    services.push(v.service);
    const turn = openaiTurn(T0, 'sess-straight');
    await send(v.base, [turn.tool, turn.chat, turn.root]);
    const first = await delivered(v.work, 2);
    assert.deepEqual(
      first.map((e) => [e.type, e.data.partition, e.data.trace_id]),
      [
        ['dev.vigil.work.created', 'sess-straight', turn.traceId],
        ['dev.vigil.work.created', 'sess-straight', turn.traceId],
      ],
    );
    let s = await stats(v.service);
    assert.equal(s.straight, 2, 'the two failed spans went straight');
    assert.equal(s.rounds, 0, 'the correlation log never held them');
    assert.deepEqual(s.released, { own: 0, trace: 2, fallback: 0 }, 'their session came from their trace, as a round would decide');

    // The root first, its failed children in a later request: their session is the stored fact.
    const second = openaiTurn(T0 + 60_000, 'sess-straight');
    await send(v.base, [second.root]);
    await send(v.base, [second.tool, second.chat]);
    const all = await delivered(v.work, 4);
    assert.deepEqual(
      all.slice(2).map((e) => [e.type, e.data.partition, e.data.count]),
      [
        ['dev.vigil.work.updated', 'sess-straight', 2],
        ['dev.vigil.work.updated', 'sess-straight', 2],
      ],
    );
    s = await stats(v.service);
    assert.equal(s.straight, 4);
    assert.equal(s.rounds, 0);
  });

  test('a record of the session waits in the log: a later turn goes through the log behind it, and is processed after it', async () => {
    const v = await start();
    services.push(v.service);
    const a = openaiTurn(T0, 'sess-behind');
    const b = openaiTurn(T0 + 60_000, 'sess-behind');
    // A's failed spans name no session and their root has not come: they wait for it.
    await send(v.base, [a.tool, a.chat]);
    // B is complete and names its session; it would go straight if nothing waited.
    await send(v.base, [b.tool, b.chat, b.root]);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(readWork(v.work).length, 0, 'B did not overtake A');
    await send(v.base, [a.root]);
    const events = await delivered(v.work, 4);
    // The same two failures in one session: A's create the work items, B's update them.
    assert.deepEqual(
      events.map((e) => [e.type, e.data.trace_id]),
      [
        ['dev.vigil.work.created', a.traceId],
        ['dev.vigil.work.created', a.traceId],
        ['dev.vigil.work.updated', b.traceId],
        ['dev.vigil.work.updated', b.traceId],
      ],
    );
    assert.ok(events.every((e) => e.data.partition === 'sess-behind'));
    const s = await stats(v.service);
    assert.equal(s.straight, 0, 'nothing went straight while the log held records');
    assert.ok(s.rounds >= 1);
    assert.equal(s.released.trace + s.released.own, 4);
  });
});

describe('the decision', () => {
  const conditions = { logHolds: false, pipelines: 1, atomicSingleWriter: true, failureWait: 0 };
  const counts = () => true;

  test('may go straight only while the log holds nothing, to one pipeline, on a single-writer store, without a failure wait to sit out', () => {
    const turn = openaiTurn(T0, 'sess-d');
    const { events } = mapped([turn.tool, turn.chat, turn.root]);
    assert.equal(events.length, 2);
    assert.equal(mayGoStraight(events, conditions), true);
    assert.equal(mayGoStraight(events, { ...conditions, logHolds: true }), false);
    assert.equal(mayGoStraight(events, { ...conditions, pipelines: 2 }), false);
    assert.equal(mayGoStraight(events, { ...conditions, atomicSingleWriter: false }), false);
    assert.equal(mayGoStraight(events, { ...conditions, failureWait: 5000 }), false, 'a failure sits out its failure wait in the log');
    assert.equal(mayGoStraight([], conditions), false);
  });

  test('the plan at ingest releases all or nothing: a record whose session is unknown keeps the whole batch for the log', () => {
    const turn = openaiTurn(T0, 'sess-p');
    const opts = { now: T0, sessionWait: 10_000, failureWait: 0, counts };
    const empty = { sessions: new Map<string, string>(), released: new Map() };
    const arrival = { pipelines: ['traces'], receivedAt: T0 };

    const whole = mapped([turn.tool, turn.chat, turn.root]);
    const plan = planAtIngest(whole.events, arrival, { ...empty, sessions: whole.sessions }, opts);
    assert.ok(plan, 'the root in the batch tells the session');
    assert.deepEqual(
      plan.released.map((r) => [r.event.partition, r.session]),
      [
        ['sess-p', 'trace'],
        ['sess-p', 'trace'],
      ],
    );
    assert.ok(plan.released.every((r) => r.event.correlation?.counted === r.event.eventId));
    assert.deepEqual([...plan.traces.keys()], [turn.traceId], 'its failure records are written with it');

    const children = mapped([turn.tool, turn.chat]);
    assert.equal(planAtIngest(children.events, arrival, empty, opts), undefined, 'no session known: they wait');
    assert.ok(planAtIngest(children.events, arrival, { ...empty, sessions: new Map([[turn.traceId, 'sess-p']]) }, opts));
    assert.equal(
      planAtIngest(children.events, arrival, { ...empty, sessions: new Map([[turn.traceId, 'sess-p']]) }, { ...opts, failureWait: 1000 }),
      undefined,
      'a failure wait not over: they wait',
    );
  });
});

describe('two batches of one trace planned at ingest from the same state', () => {
  const stores: Array<[string, () => StateStore]> = [
    ['memory', () => new MemoryStore()],
    ['sqlite', () => new SqliteStore({ path: join(tempDir(), 'state.db'), synchronous: 'full', busy_timeout: 1000, dedupe_window: 3_600_000 })],
  ];
  for (const [name, make] of stores) {
    test(`${name}: the second append conflicts whole (its batch then goes through the log), the first stands`, async () => {
      const store = make();
      await store.open();
      try {
        const runner = straightRunner(store);
        const turn = openaiTurn(T0, 'sess-race');
        const first = mapped([turn.tool, turn.root]);
        const second = mapped([turn.chat, turn.root]);
        const plan = (m: typeof first) => runner.planStraight(m.events, 'traces', T0, m.sessions);
        // Both planned before either is appended, as two concurrent requests would be.
        const [a, b] = [await plan(first), await plan(second)];
        assert.ok(a && b);
        await store.append('traces', a.byPipeline.get('traces')!, { state: a.state });
        await assert.rejects(
          store.append('traces', b.byPipeline.get('traces')!, { state: b.state }),
          (err: { code?: string }) => err.code === 'VIGIL_STORE_CONFLICT',
        );
        const page = await store.readPage('traces', 'sess-race', 10);
        assert.deepEqual(
          page.map((e) => e.event.eventId),
          a.byPipeline.get('traces')!.map((e) => e.eventId),
          'only the first batch is in the pipeline',
        );
        // Planned again, now from the state the first wrote: it joins the first's failure records.
        const again = await plan(second);
        assert.ok(again);
        await store.append('traces', again.byPipeline.get('traces')!, { state: again.state });
        const list = (await store.loadState('trace-failures', [turn.traceId])).get(turn.traceId)!.value as { r: Array<{ e: string }> };
        assert.deepEqual(
          list.r.map((r) => r.e),
          [...a.byPipeline.get('traces')!, ...again.byPipeline.get('traces')!].map((e) => e.eventId),
        );
      } finally {
        await store.close();
      }
    });
  }
});

describe('a batch planned at ingest from its records as they came', () => {
  // Three turns: one names its session on its root only (its failed spans await it; the root's
  // activity marker names it), one names none, one of the AI SDK (every span names it).
  const named = openaiTurn(T0, 'sess-eq', 9101);
  const unnamed = openaiTurn(T0 + 1000, undefined, 9102);
  const ai = aiSdkTurn(T0 + 2000, 'sess-ai', { rootErrors: true }, 9103);
  const pool: AgentEvent[] = [];
  for (const turn of [named, unnamed, ai]) {
    pool.push(
      ...mapped(
        turn.all.filter((r) => r.kind === 'span'),
        true,
      ).events,
    );
    pool.push(...mappedLogs(turn.all.filter((r) => r.kind === 'log')).events);
  }
  const traces = [named.traceId, unnamed.traceId, ai.traceId];

  /** The plan of the log's copies of `records` (waitingEvent), as before records were planned as they came. */
  function planOfCopies(records: readonly AgentEvent[], receivedAt: number, known: Parameters<typeof planAtIngest>[2], opts: Parameters<typeof planAtIngest>[3]) {
    const entries = records.map((event, i) => ({ id: String(i), event: waitingEvent(event, ['traces'], receivedAt) }));
    const plan = planRelease({ entries, sessions: known.sessions, released: known.released, complete: true }, opts);
    return plan.released.length === records.length ? plan : undefined;
  }

  test("property: the same plan as of the log's copies, route aside (same records, keys in the same order, same state)", () => {
    checkProperty(
      fc.property(
        fc.subarray(pool.map((_, i) => i)),
        fc.subarray(pool.map((_, i) => i)),
        fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
        fc.constantFrom(0, 3_000, 20_000),
        fc.constantFrom(0, 1_000),
        fc.boolean(),
        (batch, before, knownSessions, later, failureWait, counting) => {
          const opts = { now: T0 + later, sessionWait: 10_000, failureWait, counts: () => counting };
          const sessions = new Map<string, string>();
          traces.forEach((t, i) => {
            if (knownSessions[i]) sessions.set(t, `known-${i}`);
          });
          // Failure records released before: those an earlier batch of the same records released.
          const earlier = planOfCopies(
            before.map((i) => pool[i]!),
            T0,
            { sessions, released: new Map() },
            { ...opts, now: T0 + 60_000 },
          );
          const released: Map<string, readonly ReleasedRecord[]> = earlier?.traces ?? new Map();
          const records = batch.map((i) => pool[i]!);
          const want = planOfCopies(records, T0, { sessions, released }, opts);
          const got = planAtIngest(records, { pipelines: ['traces'], receivedAt: T0 }, { sessions, released }, opts);
          if (!want) return assert.equal(got, undefined);
          assert.ok(got, 'planned as they came, every record goes too');
          const copies = want.released.map(({ entryId, session, event: { route: _route, ...event } }) => JSON.stringify({ entryId, session, event }));
          assert.deepEqual(
            got.released.map(({ entryId, session, event }) => JSON.stringify({ entryId, session, event })),
            copies,
          );
          assert.ok(got.released.every((r) => r.event.route === undefined));
          assert.equal(JSON.stringify([...got.traces]), JSON.stringify([...want.traces]));
          assert.equal(got.wakeAt, want.wakeAt);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('a trace whose failure records this process did not plan is planned at ingest as having none', () => {
  const stores: Array<[string, () => StateStore]> = [
    ['memory', () => new MemoryStore()],
    ['sqlite', () => new SqliteStore({ path: join(tempDir(), 'state.db'), synchronous: 'full', busy_timeout: 1000, dedupe_window: 3_600_000 })],
  ];
  for (const [name, make] of stores) {
    test(`${name}: when the store holds some (a restart), the append conflicts whole; through the log the batch joins them, and is read from then on`, async () => {
      const store = make();
      await store.open();
      const runnerFor = () => straightRunner(store);
      try {
        const turn = aiSdkTurn(T0, 'sess-restart');
        const first = mapped([turn.generateText, turn.root]);
        const second = mapped([turn.doGenerate]);
        const before = runnerFor();
        const a = await before.planStraight(first.events, 'traces', T0, first.sessions);
        assert.ok(a);
        await store.append('traces', a.byPipeline.get('traces')!, { state: a.state });

        // A new process: it never planned this trace, so it plans the batch as if the trace had no failure records.
        const after = runnerFor();
        const b = await after.planStraight(second.events, 'traces', T0 + 10, second.sessions);
        assert.ok(b);
        assert.deepEqual(
          b.state.map((w) => [w.key, w.version]),
          [[turn.traceId, 1]],
          'its write expects none',
        );
        await assert.rejects(
          store.append('traces', b.byPipeline.get('traces')!, { state: b.state }),
          (err: { code?: string }) => err.code === 'VIGIL_STORE_CONFLICT',
        );
        assert.deepEqual(
          (await store.readPage('traces', 'sess-restart', 10)).map((e) => e.event.eventId),
          a.byPipeline.get('traces')!.map((e) => e.eventId),
          'nothing of the second batch was appended',
        );

        // Through the log, as the service sends a batch whose straight append conflicted: a round reads the trace's records.
        await store.append(
          CORRELATION_PIPELINE,
          second.events.map((e) => waitingEvent(e, ['traces'], T0 + 10)),
        );
        assert.ok(await after.runOnce());
        const page = await store.readPage('traces', 'sess-restart', 10);
        const doGenerate = page.find((e) => e.event.eventId === second.events[0]!.eventId)!.event;
        const generateText = a.byPipeline.get('traces')!.find((e) => e.spanId === turn.generateText.spanId)!;
        assert.equal(doGenerate.correlation?.anchor, generateText.correlation?.anchor, 'it joins the failure planned before the restart');
        assert.equal(doGenerate.correlation?.counted, generateText.correlation?.counted);
        assert.equal(await store.pendingCount(CORRELATION_PIPELINE), 0);
        assert.equal((await store.readPage(CORRELATION_PIPELINE, WAITING_PARTITION, 10)).length, 0);

        // Its round wrote the trace's records: the next batch of the trace reads them (and its append stands).
        const third = mapped([turn.doGenerate, turn.root].map((r) => ({ ...r, spanId: r.spanId.replace(/.$/, 'f') })));
        const c = await after.planStraight(third.events, 'traces', T0 + 20, third.sessions);
        assert.ok(c);
        const stored = (await store.loadState('trace-failures', [turn.traceId])).get(turn.traceId)!;
        assert.deepEqual(
          c.state.map((w) => [w.key, w.version]),
          [[turn.traceId, stored.version + 1]],
        );
        await store.append('traces', c.byPipeline.get('traces')!, { state: c.state });
      } finally {
        await store.close();
      }
    });
  }
});
