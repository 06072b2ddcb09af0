/**
 * The `detect` processor (DESIGN 3.5): each detector on the records the OTLP mapping and the
 * activity markers make, its per-turn counts across pages, the journal/trace match (one failure,
 * one occurrence), and its behaviour as an RxJS operator in virtual time.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { lastValueFrom, map, of, type Observable, type OperatorFunction } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import type { AgentEvent } from '../src/model/event.ts';
import { classify } from '../src/processors/classify/operator.ts';
import { DETECTORS } from '../src/processors/detect/detectors.ts';
import { detect, stateKey, TURN_BOUNDS, type DetectOptions } from '../src/processors/detect/operator.ts';
import { newTimerPage, newWorkPage, type PageItem, type WorkPage } from '../src/processors/page.ts';
import { recurrence } from '../src/processors/recurrence/operator.ts';
import { MAX_STATE_VALUE_BYTES, type StateEntry, type StateWrite } from '../src/store/state.ts';
import { chatFailure, CONTEXT_LENGTH_400, journalCase, marker, toolSpanFailure, TRACE_A, TRACE_B, ZOD_ISSUES } from './helpers/detect-events.ts';
import { mapState } from './helpers/pages.ts';

const defaults: DetectOptions = { repeatThreshold: 3, detectors: new Set(DETECTORS), turnTtlMs: 3_600_000, detectedBy: 'vigil/detect' };

/** The detect processor's state in a map, with the store's version check on writes. */
function detectState() {
  const entries = new Map<string, StateEntry>();
  return {
    entries,
    load: (keys: readonly string[]) => of(new Map(keys.filter((k) => entries.has(k)).map((k) => [k, entries.get(k)!] as const))),
    put: (key: string, value: unknown, opts: { version: number; ttlMs: number }): StateWrite => ({ namespace: 'detect', key, value, ...opts }),
    apply(writes: readonly StateWrite[] = []) {
      for (const w of writes) {
        const stored = entries.get(w.key)?.version ?? 0;
        if (w.version !== undefined && w.version !== stored + 1) throw new Error(`conflict on ${w.key}: stored ${stored}, wrote ${w.version}`);
        const json = JSON.stringify(w.value);
        assert.ok(Buffer.byteLength(json) <= MAX_STATE_VALUE_BYTES, `state value of ${w.key} over the bound: ${json.length}`);
        entries.set(w.key, { value: JSON.parse(json), version: stored + 1 });
      }
    },
  };
}

let entrySeq = 0;
const page = (events: AgentEvent[], partition = 'sess-1', pipeline = 'traces'): WorkPage =>
  newWorkPage(
    pipeline,
    partition,
    events.map((event) => ({ id: String(++entrySeq), event })),
  );

/** classify → detect → recurrence, committing state between pages, as a pipeline does. */
function pipeline(opts: Partial<DetectOptions> = {}, minRecurrence = 1) {
  const dstate = detectState();
  const rstate = mapState();
  const chain: OperatorFunction<WorkPage, WorkPage> = (p$) =>
    p$.pipe(
      classify({ rules: 'vigil' }),
      detect({ ...defaults, ...opts }, dstate),
      recurrence(
        { minRecurrence, groupingWindow: 60_000, maxPerTurn: 100, scope: 'service' },
        {
          loadGroups: (keys) => of(rstate.pick(rstate.groups, keys)),
          loadTurns: (_p, ids) => of(rstate.pick(rstate.turns, ids)),
          lookupRevisions: (ids) => of(rstate.pick(rstate.revisions, ids)),
        },
      ),
    );
  return {
    dstate,
    rstate,
    async run(events: AgentEvent[], partition?: string, pipelineId?: string): Promise<WorkPage> {
      const out = await lastValueFrom(of(page(events, partition, pipelineId)).pipe(chain));
      dstate.apply(out.commit.state);
      rstate.apply(out.commit);
      return out;
    },
  };
}

const kinds = (p: WorkPage) => p.items.map((i) => `${i.diagnosis?.errorKind?.kind ?? i.diagnosis?.classification}${i.mergedInto ? '(merged)' : ''}`);
const counted = (p: WorkPage) => p.items.filter((i) => i.occurrence).map((i) => i.diagnosis!.errorKind?.kind ?? i.diagnosis!.signature);

describe('argument problems of a failed tool call', () => {
  const cases: Array<[string, AgentEvent, string | undefined]> = [
    ['a zod validation error (ZodError with its issues)', toolSpanFailure('read_file', ZOD_ISSUES, { type: 'ZodError' }), 'invalid_tool_args'],
    [
      'MCP invalid params (-32602)',
      toolSpanFailure('get_weather', 'MCP error -32602: Invalid arguments for tool get_weather: [{"path":["city"],"message":"Required"}]', {
        type: 'McpError',
        errorType: '-32602',
      }),
      'invalid_tool_args',
    ],
    ['a JSON-schema validation text (ajv)', toolSpanFailure('search', "data must have required property 'query'", { type: 'ValidationError' }), 'invalid_tool_args'],
    [
      'a pydantic validation error',
      toolSpanFailure('search', '1 validation error for SearchArgs\nquery\n  Field required [type=missing, input_value={}, input_type=dict]', {
        type: 'ValidationError',
      }),
      'invalid_tool_args',
    ],
    ['serde: missing field', toolSpanFailure('write_file', 'missing field `content` at line 1 column 24', { type: 'Error' }), 'invalid_tool_args'],
    [
      'AI SDK: invalid input for a tool',
      toolSpanFailure('read_file', 'Invalid input for tool read_file: Type validation failed: Value: {"path":3}.', { type: 'AI_InvalidToolInputError' }),
      'invalid_tool_args',
    ],
    [
      'AI SDK: tool input that did not parse',
      toolSpanFailure('read_file', 'Invalid input for tool read_file: JSON parsing failed: Text: {"path": .\nError message: Unexpected end of JSON input', {
        type: 'AI_InvalidToolInputError',
      }),
      'tool_schema_error',
    ],
    [
      'AI SDK: no such tool',
      toolSpanFailure('nope', "Model tried to call unavailable tool 'nope'. Available tools: read_file.", { type: 'AI_NoSuchToolError' }),
      'tool_schema_error',
    ],
    [
      'Python json: arguments that did not parse',
      toolSpanFailure('run', 'Expecting value: line 1 column 9 (char 8)', { type: 'JSONDecodeError' }),
      'tool_schema_error',
    ],
    ['a plain tool failure', toolSpanFailure('read_file', "KeyError: 'results'", { type: 'KeyError' }), undefined],
    ['EINVAL from the OS is no argument problem', toolSpanFailure('write_file', "OSError: [Errno 22] Invalid argument: '/dev/x'", { type: 'OSError' }), undefined],
  ];
  for (const [name, event, kind] of cases) {
    test(`${name} → ${kind ?? 'left as it is'}`, async () => {
      const out = await pipeline().run([event]);
      const d = out.items[0]!.diagnosis!;
      assert.equal(out.items.length, 1);
      assert.equal(d.errorKind?.kind, kind);
      if (kind) {
        assert.deepEqual(d.errorKind, { kind, severity: 2, detectedBy: 'vigil/detect', origin: 'detected' });
        assert.ok(d.signature!.startsWith(`${kind}: `), d.signature!);
        assert.match(d.fingerprint!, /^v3:[0-9a-f]{16}$/);
        assert.equal(out.items[0]!.occurrence?.operation, kind, 'the kind is the operation');
        // The record's own excerpt (its stack) is kept.
        assert.ok(d.excerpt?.includes('at runTool'), d.excerpt);
      }
    });
  }

  test("Gemini CLI's invalid_tool_params (a tool_call event with error_type) is invalid_tool_args", async () => {
    const e: AgentEvent = {
      eventId: 'gem-1',
      kind: 'tool.result',
      payload: {
        type: 'tool_result',
        status: 'error',
        error: "params must have required property 'file_path'",
        error_type: 'invalid_tool_params',
        tool_name: 'read_file',
      },
      partition: 'g',
      time: 1,
      service: 'gemini-cli',
      turnId: 'prompt-1',
      source: 'otlp.logs',
    };
    const out = await pipeline().run([e]);
    assert.equal(out.items[0]!.diagnosis!.errorKind?.kind, 'invalid_tool_args');
  });

  test('volatile parts do not split the kind: two calls with other values are one group', async () => {
    const p = pipeline();
    const a = await p.run([toolSpanFailure('read_file', 'Invalid arguments for tool read_file: limit must be <= 100, got 250', { trace: TRACE_A })]);
    const b = await p.run([toolSpanFailure('read_file', 'Invalid arguments for tool read_file: limit must be <= 100, got 1000', { trace: TRACE_B })]);
    assert.equal(a.items[0]!.occurrence!.groupKey, b.items[0]!.occurrence!.groupKey);
    assert.equal(b.items[0]!.occurrence!.count, 2);
  });
});

describe('repeated_identical_tool_error', () => {
  test('the third identical failure of a tool in a turn makes one case, after it; a fourth makes none', async () => {
    const p = pipeline();
    const fail = (time: number) => toolSpanFailure('read_file', "KeyError: 'results'", { type: 'KeyError', time });
    const out = await p.run([fail(1), fail(2), fail(3), fail(4)]);
    assert.deepEqual(kinds(out), ['ExecutionFailure', 'ExecutionFailure', 'ExecutionFailure', 'repeated_identical_tool_error', 'ExecutionFailure']);
    const c = out.items[3]!;
    assert.equal(c.entry.event.eventId, `${out.items[2]!.entry.event.eventId}#repeated_identical_tool_error`);
    assert.equal(c.entry.event.time, 3);
    assert.equal(c.entry.event.traceId, TRACE_A);
    assert.match(c.diagnosis!.signature!, /^repeated_identical_tool_error: KeyError: 'results'$/);
    assert.equal((c.entry.event.payload.observation as { retry_count: number }).retry_count, 2);
    assert.deepEqual(out.commit.cursor, out.items[4]!.entry.id, 'the cursor still covers the page');
  });

  test('counts carry over pages (from the store), per turn, per tool and fingerprint', async () => {
    const p = pipeline();
    // Errors of one type thrown at one place are one fingerprint (v3: the stack outweighs the message); these differ by type.
    const f = (trace: string, tool: string, message: string) =>
      toolSpanFailure(tool, message, { trace, type: message.startsWith('ENOENT') ? 'FileNotFoundError' : 'PermissionError' });
    await p.run([f(TRACE_A, 'read_file', 'ENOENT: no such file'), f(TRACE_A, 'read_file', 'EACCES: permission denied')]);
    await p.run([
      f(TRACE_A, 'read_file', 'ENOENT: no such file'),
      f(TRACE_B, 'read_file', 'ENOENT: no such file'),
      f(TRACE_A, 'write_file', 'ENOENT: no such file'),
    ]);
    const third = await p.run([f(TRACE_A, 'read_file', 'ENOENT: no such file')]);
    assert.deepEqual(kinds(third), ['ExecutionFailure', 'repeated_identical_tool_error']);
    assert.equal(p.dstate.entries.get(stateKey(TRACE_A))!.version, 3, 'one write per page that touched the turn');
  });

  test('N is configurable', async () => {
    const out = await pipeline({ repeatThreshold: 2 }).run([toolSpanFailure('t', 'boom', { type: 'Error' }), toolSpanFailure('t', 'boom', { type: 'Error' })]);
    assert.deepEqual(kinds(out), ['ExecutionFailure', 'ExecutionFailure', 'repeated_identical_tool_error']);
  });

  test('a disabled detector makes nothing', async () => {
    const f = () => toolSpanFailure('t', 'boom', { type: 'Error' });
    const out = await pipeline({ detectors: new Set(['invalid_tool_args']) }).run([f(), f(), f()]);
    assert.deepEqual(kinds(out), ['ExecutionFailure', 'ExecutionFailure', 'ExecutionFailure']);
  });
});

describe('model_request_repeated_failure', () => {
  test('the third failed model request of a turn, whatever its error', async () => {
    const out = await pipeline().run([
      chatFailure('429 Rate limit reached', { errorType: 'RateLimitError', status: 429 }),
      chatFailure('500 The server had an error'),
      chatFailure('503 overloaded'),
    ]);
    assert.deepEqual(kinds(out), ['ExecutionFailure', 'ExecutionFailure', 'ExecutionFailure', 'model_request_repeated_failure']);
    assert.equal(out.items[3]!.diagnosis!.errorKind!.severity, 3);
    assert.match(out.items[3]!.diagnosis!.signature!, /^model_request_repeated_failure: /);
  });
});

describe('context_overflow_after_recovery', () => {
  test('a context-length failure after a compaction in the same turn', async () => {
    const out = await pipeline().run([marker('compaction', { trigger: 'auto' }, { time: 10 }), chatFailure(CONTEXT_LENGTH_400, { time: 20 })]);
    assert.deepEqual(kinds(out), ['NormalOutput', 'ExecutionFailure', 'context_overflow_after_recovery']);
    assert.equal(out.items[2]!.entry.event.time, 20);
  });

  test('whichever arrives first: the failure waits in the turn state for its compaction', async () => {
    const p = pipeline();
    const first = await p.run([chatFailure(CONTEXT_LENGTH_400, { time: 20 })]);
    assert.deepEqual(kinds(first), ['ExecutionFailure']);
    const second = await p.run([marker('compaction', {}, { time: 10 })]);
    assert.deepEqual(kinds(second), ['NormalOutput', 'context_overflow_after_recovery']);
    assert.equal(second.items[1]!.entry.event.time, 20);
    // The same identity either way.
    const other = await pipeline().run([marker('compaction', {}, { time: 10, trace: TRACE_B }), chatFailure(CONTEXT_LENGTH_400, { time: 20, trace: TRACE_B })]);
    assert.equal(other.items[2]!.diagnosis!.fingerprint, second.items[1]!.diagnosis!.fingerprint);
  });

  test('no compaction, a compaction after the failure, or another turn: nothing', async () => {
    const p = pipeline();
    const none = await p.run([
      chatFailure(CONTEXT_LENGTH_400, { time: 20 }),
      marker('compaction', {}, { time: 30 }),
      marker('compaction', {}, { time: 5, trace: TRACE_B }),
    ]);
    assert.deepEqual(kinds(none), ['ExecutionFailure', 'NormalOutput', 'NormalOutput']);
  });

  test('other failures after a compaction are not overflows', async () => {
    const out = await pipeline().run([marker('compaction', {}, { time: 10 }), chatFailure('429 Rate limit reached', { time: 20, errorType: 'RateLimitError' })]);
    assert.deepEqual(kinds(out), ['NormalOutput', 'ExecutionFailure']);
  });
});

describe('model_empty_reasoning_output', () => {
  test('a successful model request with an empty output (model_request.ok, output_empty) is re-diagnosed', async () => {
    const ok = { provider: 'openai', model: 'gpt-4o-mini', finish_reasons: ['stop'] };
    const out = await pipeline().run([marker('model_request.ok', { ...ok, output_empty: true }), marker('model_request.ok', { ...ok, output_empty: false })]);
    assert.deepEqual(kinds(out), ['model_empty_reasoning_output', 'NormalOutput']);
    assert.equal(out.items[0]!.diagnosis!.signature, 'model_empty_reasoning_output: empty model output from openai gpt-4o-mini (finish reasons: stop)');
    assert.equal(out.items[0]!.occurrence!.operation, 'model_empty_reasoning_output');
  });
});

describe('a journal case and the same failure detected from a trace in the same turn', () => {
  const zod = ZOD_ISSUES;
  const journal = (over: Record<string, unknown> = {}) =>
    journalCase({ turn_id: TRACE_A, error_kind: 'invalid_tool_args', observation: { evidence: zod.split(/\s+/).join(' '), actual_behavior: 'rejected' }, ...over });

  test('are one occurrence of one group, in either order', async () => {
    for (const order of ['journal first', 'trace first'] as const) {
      const p = pipeline();
      const events = [journal(), toolSpanFailure('read_file', zod, { type: 'ZodError' })];
      if (order === 'trace first') events.reverse();
      const out = await p.run(events);
      const [a, b] = out.items.filter((i) => i.diagnosis?.errorKind);
      assert.equal(a!.diagnosis!.fingerprint, b!.diagnosis!.fingerprint, 'one identity');
      assert.equal(b!.mergedInto, `${TRACE_A}/invalid_tool_args`, order);
      assert.equal(a!.occurrence!.count, 1);
      assert.equal(b!.occurrence, undefined);
      assert.equal(out.commit.groups.length, 1);
    }
  });

  test('also across pages and pipelines (the journal in a logs pipeline, traces in another)', async () => {
    const p = pipeline();
    const j = await p.run([journal()], '/var/agent/runtime_error_cases.jsonl', 'logs');
    const t = await p.run([toolSpanFailure('read_file', zod, { type: 'ZodError' })], 'sess-1', 'traces');
    assert.equal(j.items[0]!.occurrence!.count, 1);
    assert.equal(t.items[0]!.mergedInto, `${TRACE_A}/invalid_tool_args`);
    assert.equal(t.commit.groups.length, 0);
  });

  test('two cases and one detection are two occurrences; another turn or another fingerprint is not merged', async () => {
    const p = pipeline();
    const out = await p.run([journal({ case_id: 'c-1' }), journal({ case_id: 'c-2' }), toolSpanFailure('read_file', zod, { type: 'ZodError' })]);
    assert.deepEqual(kinds(out), ['invalid_tool_args', 'invalid_tool_args', 'invalid_tool_args(merged)']);
    const other = await p.run([journal({ case_id: 'c-3', turn_id: TRACE_B }), toolSpanFailure('read_file', 'missing field `path`', { type: 'Error' })]);
    assert.deepEqual(kinds(other), ['invalid_tool_args', 'invalid_tool_args']);
    assert.equal(counted(other).length, 2);
  });

  test('the same record counted in a second pipeline (one receiver, two pipelines) is not counted again', async () => {
    const p = pipeline();
    const c = journal();
    await p.run([c], 'x', 'logs');
    const again = await p.run([c], 'x', 'logs/copy');
    assert.deepEqual(kinds(again), ['invalid_tool_args(merged)']);
  });

  test('a journal case of a kind no detector makes is counted as it is', async () => {
    const out = await pipeline().run([journalCase({ error_kind: 'missing_finish_and_send', observation: { evidence: 'assistant text without finish_and_send' } })]);
    assert.deepEqual(counted(out), ['missing_finish_and_send']);
  });
});

describe('bounds and the operator', () => {
  test("a turn's state stays under the value bound however many records it sees", async () => {
    const p = pipeline();
    for (let i = 0; i < 6; i++) {
      await p.run(Array.from({ length: 200 }, (_, j) => toolSpanFailure(`tool_${(i * 200 + j) % 300}`, `failure number word${j}`, { type: 'Error' })));
    }
    const value = p.dstate.entries.get(stateKey(TRACE_A))!.value as { seen: string[]; tools: object };
    assert.equal(value.seen.length, TURN_BOUNDS.seen);
    assert.equal(Object.keys(value.tools).length, TURN_BOUNDS.keys);
  });

  test('records without a turn and records that are no evidence pass untouched, without a state write', async () => {
    const noTurn: AgentEvent = {
      eventId: 'x',
      kind: 'execution.completed',
      payload: { state: 'error', outcome: { error: 'boom' } },
      partition: 'p',
      time: 1,
      service: 's',
      source: 'jsonl',
    };
    const out = await pipeline().run([noTurn, marker('tool.ok', { tool_name: 'x' })]);
    assert.deepEqual(kinds(out), ['ExecutionFailure', 'NormalOutput']);
    assert.equal(out.commit.state, undefined);
  });

  test('marble: pages keep their order whatever the state loads take; a timer page passes through as it is', () => {
    const scheduler = new TestScheduler((a, e) => assert.deepStrictEqual(a, e));
    scheduler.run(({ cold, hot, expectObservable }) => {
      const entries = new Map<string, StateEntry>();
      const delays = ['---', '-'];
      let call = 0;
      const op = detect(defaults, {
        load: (keys): Observable<Map<string, StateEntry>> =>
          cold(`${delays[call++ % 2]}(a|)`, { a: new Map(keys.filter((k) => entries.has(k)).map((k) => [k, entries.get(k)!])) }),
        put: (key, value, o) => ({ namespace: 'detect', key, value, ...o }),
      });
      const diagnosed = (e: AgentEvent): PageItem => ({
        entry: { id: 'e', event: e },
        diagnosis: { classification: 'ExecutionFailure', signature: 'boom', fingerprint: 'fp' },
      });
      const p1 = { ...page([]), items: [diagnosed(toolSpanFailure('t', 'boom'))] };
      const p2 = { ...page([]), items: [diagnosed(toolSpanFailure('t', ZOD_ISSUES, { type: 'ZodError' }))] };
      const timer = newTimerPage('traces', 'sess-1', [{ id: 't1', owner: 'other', partition: 'sess-1', due: 1, payload: null, version: 1 }]);
      const source = hot('-a-b-t', { a: p1, b: p2, t: timer });
      // concatMap: b waits behind a's 3-frame load, then its own 1-frame one; the timer page waits
      // behind b and passes as it is.
      const out = source.pipe(
        op,
        map((p) => (p === timer ? 'timer' : kinds(p).join(','))),
      );
      expectObservable(out).toBe('----a(bt)', { a: 'ExecutionFailure', b: 'invalid_tool_args', t: 'timer' });
    });
  });
});
