/**
 * The correlation log's release plan in virtual time (src/correlation/plan.ts): the records the
 * test agents send (test/helpers/agent-records.ts), decoded and mapped by the real OTLP/JSON
 * decoder and mapping, split at ingest as the service splits them, and released by the plan at
 * chosen times — child before root, root before child, log before span, span before log, one
 * trace over several requests and pages, and every order of a turn's requests (a property).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { canonicalFailure } from '../src/correlation/failure-keys.ts';
import { DEFAULT_CORRELATION, sessionFacts, splitForCorrelation, TRACE_SESSION_NAMESPACE, waitingEvent, WrittenFacts } from '../src/correlation/ingest.ts';
import { KeptEntries } from '../src/correlation/kept-entries.ts';
import { planRelease, type ReleasedRecord } from '../src/correlation/plan.ts';
import type { AgentEvent } from '../src/model/event.ts';
import { decodeLogsJson, decodeTracesJson } from '../src/receivers/otlp/json.ts';
import { mapLogs, mapTraces } from '../src/receivers/otlp/mapping.ts';
import type { LogEntry } from '../src/store/types.ts';
import { aiSdkTurn, logsBody, openaiTurn, tracesBody, type AgentRecord } from './helpers/agent-records.ts';
import { checkProperty } from './helpers/random.ts';

const T0 = Date.UTC(2026, 0, 1);
const SESSION_WAIT = 10_000;
const FAILURE_WAIT = 5_000;

interface Delivered {
  event: AgentEvent;
  pipeline: string;
  at: number;
  how: 'direct' | 'own' | 'trace' | 'fallback';
}

/** The ingest split and the correlation log of one vigil, in virtual time. */
class Sim {
  now = T0;
  private seq = 0;
  readonly waiting: LogEntry[] = [];
  readonly sessions = new Map<string, string>();
  readonly released = new Map<string, ReleasedRecord[]>();
  readonly delivered: Delivered[] = [];
  lastWake: number | null = null;

  /** planRelease's memo, kept across plans as the correlation runner keeps it. */
  private readonly memo = new WeakMap<LogEntry, ReleasedRecord | null>();
  /** The waiting records as the runner keeps them, beside `waiting` (rounds.index). */
  private readonly kept = new KeptEntries();

  constructor(
    readonly pageSize = 256,
    readonly counting: ReadonlySet<string> = new Set(['traces', 'logs']),
    /**
     * Records a plan releases at most; with `memo`, what the pages' records are as failure records
     * is worked out once; with `index`, the waiting records are kept as the correlation runner keeps
     * them (KeptEntries) and the plan finds failure records by its index instead of a scan.
     */
    readonly rounds: { maxReleased?: number; memo?: boolean; index?: boolean } = {},
  ) {}

  /** One export request of spans (to the `traces` pipeline) or log records (to `logs`), received now. */
  send(records: readonly AgentRecord[]): void {
    const spans = records.filter((r) => r.kind === 'span');
    const logs = records.filter((r) => r.kind === 'log');
    if (spans.length) this.ingest(decodeAndMap('traces', tracesBody(spans)), 'traces');
    if (logs.length) this.ingest(decodeAndMap('logs', logsBody(logs)), 'logs');
  }

  private ingest(batch: { events: AgentEvent[]; traceSessions: Map<string, string> }, pipeline: string): void {
    for (const [t, s] of sessionFacts(batch.events, batch.traceSessions)) this.sessions.set(t, s);
    const { waiting, direct } = splitForCorrelation(batch.events, this.waiting.length > 0);
    for (const event of direct) this.delivered.push({ event, pipeline, at: this.now, how: 'direct' });
    const entries = waiting.map((event) => ({ id: String(++this.seq), event: waitingEvent(event, [pipeline], this.now) }));
    this.waiting.push(...entries);
    this.kept.add(entries);
  }

  /** Moves the clock to `t` and releases what the plan lets go, page by page. */
  at(t: number): this {
    this.now = t;
    let limit = this.pageSize;
    for (;;) {
      const page = this.waiting.slice(0, limit);
      if (page.length === 0) return this;
      const input = {
        entries: page,
        sessions: this.sessions,
        released: this.released,
        complete: page.length === this.waiting.length,
        failureIndex: this.rounds.index ? this.kept.indicesOf : undefined,
      };
      if (this.rounds.index) assert.deepEqual(this.kept.entries, this.waiting, 'the kept entries are the waiting records');
      const opts = {
        now: this.now,
        sessionWait: SESSION_WAIT,
        failureWait: FAILURE_WAIT,
        counts: (ps: readonly string[]) => ps.some((p) => this.counting.has(p)),
        maxReleased: this.rounds.maxReleased,
        memo: this.rounds.memo ? this.memo : undefined,
      };
      const plan = planRelease(input, opts);
      if (this.rounds.maxReleased !== undefined) assert.ok(plan.released.length <= this.rounds.maxReleased, 'no more than maxReleased');
      // As the router does: a record that needs more of the log in view gets a longer page.
      if (plan.released.length === 0 && plan.needMore) {
        limit *= 2;
        continue;
      }
      limit = this.pageSize;
      this.lastWake = plan.wakeAt;
      for (const [traceId, list] of plan.traces) this.released.set(traceId, list);
      for (const r of plan.released) {
        const { route, ...event } = r.event;
        this.delivered.push({ event, pipeline: route!.pipelines[0]!, at: this.now, how: r.session });
      }
      this.waiting.splice(0, plan.released.length);
      this.kept.drop(plan.released.length);
      if (plan.released.length === 0) return this;
    }
  }

  /** The delivered record of an event id. */
  of(eventId: string): Delivered {
    const d = this.delivered.find((x) => x.event.eventId === eventId);
    assert.ok(d, `${eventId} was not delivered; delivered: ${this.delivered.map((x) => x.event.eventId).join(', ')}`);
    return d;
  }
}

function decodeAndMap(signal: 'traces' | 'logs', body: string) {
  if (signal === 'traces') {
    const decoded = decodeTracesJson(body, { skipIrrelevant: true });
    const mapped = mapTraces(decoded.groups);
    for (const [t, s] of decoded.sessions) mapped.traceSessions.set(t, s);
    return mapped;
  }
  const decoded = decodeLogsJson(body, { skipIrrelevant: true });
  const mapped = mapLogs(decoded.groups);
  for (const [t, s] of decoded.sessions) mapped.traceSessions.set(t, s);
  return mapped;
}

const idOf = (r: { traceId: string; spanId: string }) => `${r.traceId}:${r.spanId}`;

describe('the session of a trace', () => {
  test('child before root: a chat span without a session waits for its root and goes in the root session', () => {
    const turn = openaiTurn(T0, 'sess-A');
    const sim = new Sim();
    sim.send([turn.chat]);
    sim.at(T0 + 3000);
    assert.equal(sim.delivered.length, 0, 'nothing goes before the trace session is known');
    assert.equal(sim.lastWake, T0 + SESSION_WAIT, 'it waits at most session_wait');
    sim.send([turn.root]);
    sim.at(T0 + FAILURE_WAIT);
    const chat = sim.of(idOf(turn.chat));
    assert.equal(chat.event.partition, 'sess-A');
    assert.equal(chat.how, 'trace');
    assert.equal(chat.event.awaitsSession, undefined);
  });

  test('root before child: the session is known when the child comes; the child still waits failure_wait for the rest of its failure', () => {
    const turn = openaiTurn(T0, 'sess-B');
    const sim = new Sim();
    sim.send([turn.root]);
    assert.equal(sim.waiting.length, 0, 'a successful root span is not kept');
    assert.equal(sim.sessions.get(turn.traceId), 'sess-B', 'its session is');
    sim.send([turn.chat]);
    sim.at(T0 + FAILURE_WAIT - 1);
    assert.equal(sim.delivered.length, 0);
    sim.at(T0 + FAILURE_WAIT);
    assert.equal(sim.of(idOf(turn.chat)).event.partition, 'sess-B');
  });

  test('no record of the trace names a session: after session_wait the record takes service.instance.id', () => {
    const turn = openaiTurn(T0, undefined);
    const sim = new Sim();
    sim.send([turn.chat, turn.root]);
    sim.at(T0 + SESSION_WAIT - 1);
    assert.equal(sim.delivered.length, 0);
    sim.at(T0 + SESSION_WAIT);
    const chat = sim.of(idOf(turn.chat));
    assert.equal(chat.event.partition, 'agent-host-1');
    assert.equal(chat.how, 'fallback');
  });

  test('the AI SDK names the session in ai.telemetry.metadata.sessionId: no session wait', () => {
    const turn = aiSdkTurn(T0, 'sess-ai');
    const sim = new Sim();
    sim.send([turn.doGenerate]);
    sim.at(T0 + FAILURE_WAIT);
    const d = sim.of(idOf(turn.doGenerate));
    assert.equal(d.event.partition, 'sess-ai');
    assert.equal(d.how, 'own');
    assert.equal(d.event.user, 'user-1');
  });

  test('records keep their arrival order per session: a record behind a waiting one waits with it', () => {
    const a = openaiTurn(T0, 'sess-C');
    const sim = new Sim();
    sim.send([a.chat]); // waits for its root
    // A record that needs no wait at all (no trace), same session, arrives behind it.
    sim.at(T0 + 100).send([{ kind: 'log', traceId: '', spanId: '', time: T0 + 100, body: 'ERROR: disk full', attributes: { 'session.id': 'sess-C' } }]);
    assert.equal(sim.waiting.length, 2, 'while the correlation log holds records, every record goes behind them');
    sim.send([a.root]);
    sim.at(T0 + FAILURE_WAIT);
    assert.deepEqual(
      sim.delivered.map((d) => [d.event.source, d.event.partition]),
      [
        ['otlp.traces', 'sess-C'],
        ['otlp.logs', 'sess-C'],
      ],
    );
  });
});

describe('one failure, one occurrence', () => {
  test('log before span: the log waits for the span it is about, and both name the chat span', () => {
    const turn = openaiTurn(T0, 'sess-1');
    const sim = new Sim();
    sim.send([turn.chatLog]);
    sim.at(T0 + 1000).send([turn.chat, turn.root]);
    sim.at(T0 + FAILURE_WAIT).at(T0 + 1000 + FAILURE_WAIT);
    const log = sim.of(sim.delivered.find((d) => d.event.source === 'otlp.logs')!.event.eventId);
    const chat = sim.of(idOf(turn.chat));
    assert.deepEqual(log.event.correlation, { anchor: idOf(turn.chat), counted: idOf(turn.chat) });
    assert.equal(chat.event.correlation!.anchor, idOf(turn.chat));
    assert.equal(chat.event.correlation!.counted, idOf(turn.chat));
    assert.deepEqual(
      chat.event.correlation!.related?.map((r) => r.eventId),
      [log.event.eventId],
      'the counted record lists the log as evidence',
    );
    assert.equal(log.event.partition, 'sess-1');
    assert.equal(chat.event.partition, 'sess-1');
  });

  test('span before log: the log joins the span released before it', () => {
    const turn = openaiTurn(T0, 'sess-1');
    const sim = new Sim();
    sim.send([turn.chat, turn.root]);
    sim.at(T0 + FAILURE_WAIT);
    const chat = sim.of(idOf(turn.chat));
    assert.equal(chat.event.correlation!.anchor, idOf(turn.chat));
    sim.at(T0 + FAILURE_WAIT + 200).send([turn.chatLog]);
    sim.at(T0 + 2 * FAILURE_WAIT + 200);
    const log = sim.delivered.find((d) => d.event.source === 'otlp.logs')!;
    assert.deepEqual(log.event.correlation, { anchor: idOf(turn.chat), counted: idOf(turn.chat) });
  });

  test('a tool failure: the span with its exception event and the log written inside it are one failure', () => {
    for (const order of [
      [['toolLog'], ['tool']],
      [['tool'], ['toolLog']],
    ] as const) {
      const turn = openaiTurn(T0, 'sess-2');
      const sim = new Sim();
      order.forEach((names, i) => sim.at(T0 + i * 300).send(names.map((n) => turn[n])));
      sim.send([turn.root]);
      sim.at(T0 + 20_000);
      const anchors = new Set(sim.delivered.map((d) => d.event.correlation?.anchor));
      assert.deepEqual([...anchors], [idOf(turn.tool)], `order ${JSON.stringify(order)}`);
    }
  });

  test('the AI SDK: doGenerate, generateText and the root all end in the one 429; doGenerate names it, in every order of their requests', () => {
    const orders = permutations(['doGenerate', 'generateText', 'root'] as const);
    for (const order of orders) {
      const turn = aiSdkTurn(T0, 'sess-ai', { rootErrors: true });
      const sim = new Sim();
      order.forEach((name, i) => sim.at(T0 + 10 + i * 100).send([turn[name]]));
      sim.at(T0 + 20_000);
      assert.equal(sim.delivered.length, 3, `order ${order.join(',')}`);
      for (const d of sim.delivered) {
        assert.deepEqual(
          { anchor: d.event.correlation?.anchor, counted: d.event.correlation?.counted },
          { anchor: idOf(turn.doGenerate), counted: idOf(turn.doGenerate) },
          `order ${order.join(',')}: ${d.event.eventId}`,
        );
        assert.equal(d.event.partition, 'sess-ai');
      }
    }
  });

  test('a retried call failing the same way twice in one turn is two failures; each log goes with its own call', () => {
    const turn = openaiTurn(T0, 'sess-3');
    const retryChat = { ...turn.chat, spanId: turn.chat.spanId.replace(/.$/, 'f'), end: turn.chat.end + 1500 };
    const retryLog = { ...turn.chatLog, time: turn.chatLog.time + 1500, body: turn.chatLog.body.replace('runChat', 'runChatAgain') };
    const sim = new Sim();
    sim.send([turn.chatLog, retryLog]);
    sim.at(T0 + 300).send([turn.chat, retryChat, turn.root]);
    sim.at(T0 + 20_000);
    const logs = sim.delivered.filter((d) => d.event.source === 'otlp.logs').sort((a, b) => a.event.time - b.event.time);
    assert.equal(logs[0]!.event.correlation!.anchor, idOf(turn.chat));
    assert.equal(logs[1]!.event.correlation!.anchor, idOf(retryChat));
    const anchors = new Set(sim.delivered.map((d) => d.event.correlation!.anchor));
    assert.equal(anchors.size, 2);
  });

  test('a record of the failure that comes after the others were released still joins it (it does not rename it)', () => {
    const turn = openaiTurn(T0, 'sess-4');
    const sim = new Sim();
    sim.send([turn.chatLog, turn.root]);
    sim.at(T0 + FAILURE_WAIT);
    const log = sim.delivered.find((d) => d.event.source === 'otlp.logs')!;
    assert.equal(log.event.correlation!.anchor, log.event.eventId, 'no span within failure_wait: the log names its failure');
    sim.at(T0 + 8000).send([turn.chat]);
    sim.at(T0 + 8000 + FAILURE_WAIT);
    assert.deepEqual(sim.of(idOf(turn.chat)).event.correlation, { anchor: log.event.eventId, counted: log.event.eventId });
  });

  test('the most telling record goes to a pipeline that counts nothing: the log counts for itself', () => {
    const turn = openaiTurn(T0, 'sess-5');
    const sim = new Sim(256, new Set(['logs']));
    sim.send([turn.chat, turn.root]);
    sim.send([turn.chatLog]);
    sim.at(T0 + FAILURE_WAIT);
    const log = sim.delivered.find((d) => d.event.source === 'otlp.logs')!;
    assert.deepEqual(log.event.correlation, { anchor: idOf(turn.chat), counted: log.event.eventId });
    assert.equal(sim.of(idOf(turn.chat)).event.correlation!.counted, idOf(turn.chat));
  });

  test('one trace over several requests and pages decides as one request and one page', () => {
    const expected = run(openaiTurn(T0, 'sess-6', 901), 256, {}, (turn, sim) => sim.send(turn.all));
    const split = run(openaiTurn(T0, 'sess-6', 901), 1, {}, (turn, sim) => turn.all.forEach((r, i) => sim.at(T0 + i * 50).send([r])));
    assert.deepEqual(split, expected);
    assert.equal(new Set(expected.map((d) => d.anchor)).size, 2, 'two failures: the tool call and the 429');
  });

  test('a plan releases at most maxReleased records, and then leaves nothing waiting: the rest is planned at once', () => {
    const sim = new Sim();
    const turn = openaiTurn(T0, 'sess-m', 903);
    sim.send(turn.all);
    const page = sim.waiting.slice();
    assert.ok(page.length >= 3, 'the turn waits in the log');
    const input = { entries: page, sessions: sim.sessions, released: sim.released, complete: true };
    const opts = { now: T0 + 60_000, sessionWait: SESSION_WAIT, failureWait: FAILURE_WAIT, counts: () => true };
    const all = planRelease(input, opts);
    assert.equal(all.released.length, page.length);
    const first = planRelease(input, { ...opts, maxReleased: 2 });
    assert.deepEqual(
      { released: first.released.map((r) => r.entryId), wakeAt: first.wakeAt, waitsFor: first.waitsFor, needMore: first.needMore },
      { released: all.released.slice(0, 2).map((r) => r.entryId), wakeAt: null, waitsFor: null, needMore: false },
    );
    assert.deepEqual(first.released, all.released.slice(0, 2), 'the same records as planned at once');
  });

  test("property: whatever the order and grouping of a turn's requests within failure_wait, and however many records a plan may release, the same records get the same session and anchor", () => {
    const canonical = run(openaiTurn(T0, 'sess-p', 777), 256, {}, (turn, sim) => sim.send(turn.all));
    const ai = run(aiSdkTurn(T0, 'sess-q', { rootErrors: true }, 778), 256, {}, (turn, sim) => sim.send(turn.all));
    checkProperty(
      fc.property(
        fc.shuffledSubarray([0, 1, 2, 3, 4], { minLength: 5, maxLength: 5 }),
        fc.array(fc.integer({ min: 0, max: 900 }), { minLength: 5, maxLength: 5 }),
        fc.integer({ min: 1, max: 4 }),
        fc.record({ maxReleased: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }), memo: fc.boolean(), index: fc.boolean() }),
        (order, gaps, pageSize, rounds) => {
          const got = run(openaiTurn(T0, 'sess-p', 777), pageSize, rounds, (turn, sim) => {
            let t = T0;
            order.forEach((i, k) => {
              t += gaps[k]!;
              sim.at(t).send([turn.all[i]!]);
            });
          });
          assert.deepEqual(got, canonical);
          const gotAi = run(aiSdkTurn(T0, 'sess-q', { rootErrors: true }, 778), pageSize, rounds, (turn, sim) => {
            let t = T0;
            order
              .filter((i) => i < 3)
              .forEach((i, k) => {
                t += gaps[k]!;
                sim.at(t).send([turn.all[i]!]);
              });
          });
          assert.deepEqual(gotAi, ai);
        },
      ),
      { numRuns: 150 },
    );
  });
});

/** Sends a turn as `send` says, lets every wait pass, and returns what each record became. */
function run<T>(turn: T, pageSize: number, rounds: Sim['rounds'], send: (turn: T, sim: Sim) => void) {
  const sim = new Sim(pageSize, undefined, rounds);
  send(turn, sim);
  sim.at(sim.now + 60_000);
  return sim.delivered
    .map((d) => ({
      id: d.event.eventId,
      partition: d.event.partition,
      anchor: d.event.correlation?.anchor,
      counted: d.event.correlation?.counted,
      related: d.event.correlation?.related?.map((r) => r.eventId).sort(),
    }))
    .sort((a, b) => (a.id < b.id ? -1 : 1));
}

function permutations<T>(xs: readonly T[]): T[][] {
  if (xs.length <= 1) return [xs.slice()];
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((rest) => [x, ...rest]));
}

describe('the same failure once type prefixes and wrappers are set aside', () => {
  const rows: Array<[string, string | undefined]> = [
    ['429 Rate limit reached for gpt-4o-mini', '429 Rate limit reached for gpt-4o-mini'],
    ['Error: 429 Rate limit reached for gpt-4o-mini\n    at APIError.generate (x.js:1:1)', '429 Rate limit reached for gpt-4o-mini'],
    ['AI_APICallError: Rate limit reached', 'Rate limit reached'],
    ["Error: KeyError: 'results'", "'results'"],
    ["tool run_python failed (attempt 3): Error: KeyError: 'results'", "'results'"],
    ["[retry] attempt 1 failed: KeyError: 'results'", "'results'"],
    ['Uncaught TypeError [ERR_INVALID_ARG_TYPE]: bad argument', 'bad argument'],
    ['java.io.IOException: disk full', 'disk full'],
    ["Error code: 429 - {'error': {}}", "Error code: 429 - {'error': {}}"],
    ['Error: x', undefined],
    ['   \n  ', undefined],
  ];
  for (const [text, canonical] of rows) test(JSON.stringify(text.slice(0, 50)), () => assert.equal(canonicalFailure(text), canonical));
});

describe('correlation at ingest', () => {
  const event = (over: Partial<AgentEvent>): AgentEvent => ({
    eventId: 'e',
    kind: 'execution.completed',
    payload: { state: 'error' },
    partition: 'p',
    time: 0,
    service: 's',
    source: 'otlp.logs',
    ...over,
  });

  test('records of a trace wait; others only while the log holds records; forward-only records never', () => {
    const traced = event({ traceId: 't1' });
    const untraced = event({});
    const forwardOnly = event({ traceId: 't1', forwardOnly: true });
    assert.deepEqual(splitForCorrelation([traced, untraced, forwardOnly], false), { waiting: [traced], direct: [untraced, forwardOnly] });
    assert.deepEqual(splitForCorrelation([traced, untraced, forwardOnly], true), { waiting: [traced, untraced], direct: [forwardOnly] });
    assert.deepEqual(waitingEvent(traced, ['traces'], 42).route, { pipelines: ['traces'], receivedAt: 42, partition: 'p' });
  });

  test('a batch tells the sessions its receiver found and those its records name; a record that awaits its session tells none', () => {
    const facts = sessionFacts(
      [event({ traceId: 't1', partition: 's1' }), event({ traceId: 't2', partition: 'fallback', awaitsSession: true })],
      new Map([['t3', 's3']]),
    );
    assert.deepEqual([...facts].sort(), [
      ['t1', 's1'],
      ['t3', 's3'],
    ]);
  });

  test('a process writes a trace session once, again when it changes or after half its TTL', () => {
    const written = new WrittenFacts(DEFAULT_CORRELATION, 2);
    const facts = new Map([['t1', 's1']]);
    const first = written.writes(facts, 0);
    assert.deepEqual(first, [
      { namespace: TRACE_SESSION_NAMESPACE, key: 't1', value: 's1', ttlMs: DEFAULT_CORRELATION.traceTtl, maxEntries: DEFAULT_CORRELATION.maxTraces, cached: true },
    ]);
    written.note(first, 0);
    assert.deepEqual(written.writes(facts, 1000), []);
    assert.equal(written.writes(new Map([['t1', 's2']]), 1000).length, 1);
    assert.equal(written.writes(facts, DEFAULT_CORRELATION.traceTtl / 2).length, 1);
    written.note(
      written.writes(
        new Map([
          ['t2', 'x'],
          ['t3', 'y'],
        ]),
        5,
      ),
      5,
    );
    assert.equal(written.writes(facts, 1000).length, 1, 'bounded: the oldest is forgotten');
  });
});
