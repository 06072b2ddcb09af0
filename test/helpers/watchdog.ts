/**
 * Test helpers for the provider watchdog: events as the OTLP mapping makes them (a failed model
 * request with `payload.model_request`, activity markers, tool results), and a pipeline
 * classify → watchdog → recurrence over a real store whose runner runs on a virtual clock.
 */
import assert from 'node:assert/strict';
import { defaultsOf } from '../../src/config/schema.ts';
import { memoryLogger } from '../../src/logger.ts';
import { ACTIVITY_KIND, type ActivityName } from '../../src/model/activity.ts';
import type { AgentEvent } from '../../src/model/event.ts';
import type { ProviderEventData, WorkOutboxItem } from '../../src/model/work.ts';
import { classifyFactory } from '../../src/processors/classify/factory.ts';
import { recurrenceFactory } from '../../src/processors/recurrence/factory.ts';
import { watchdogStateView } from '../../src/processors/watchdog/factory.ts';
import { watchdog, type WatchdogOptions } from '../../src/processors/watchdog/operator.ts';
import { modelRequestPayload } from '../../src/receivers/otlp/mapping/common.ts';
import { PipelineRunner } from '../../src/service/pipeline-runner.ts';
import { MemoryStore } from '../../src/store/memory.ts';
import { stateClient } from '../../src/store/state-client.ts';
import type { StateStore } from '../../src/store/types.ts';

export const T0 = Date.UTC(2026, 5, 1, 12);

let seq = 0;

export interface FailureSpec {
  run: string;
  time: number;
  error: string;
  partition?: string;
  status?: number;
  errorType?: string;
  provider?: string;
  model?: string;
  id?: string;
  spanId?: string;
}

/** A failed model request as the mapping makes it of a failed `chat` span. */
export function failure(f: FailureSpec): AgentEvent {
  const spanId = f.spanId ?? `s${++seq}`;
  return {
    eventId: f.id ?? `${f.run}:${spanId}`,
    kind: 'execution.completed',
    payload: modelRequestPayload({ provider: f.provider ?? 'openai', model: f.model ?? 'gpt-4o', errorType: f.errorType, httpStatus: f.status, error: f.error }),
    partition: f.partition ?? 'sess-1',
    time: f.time,
    service: 'agent',
    operation: 'chat gpt-4o',
    traceId: f.run,
    spanId,
    turnId: f.run,
    source: 'otlp.traces',
  };
}

/** An activity marker of `run`. */
export function marker(activity: ActivityName, run: string, time: number, fields: Record<string, unknown> = {}, partition = 'sess-1'): AgentEvent {
  const spanId = `m${++seq}`;
  return {
    eventId: `${run}:${spanId}`,
    kind: ACTIVITY_KIND,
    payload: { activity, ...fields },
    partition,
    time,
    service: 'agent',
    traceId: run,
    spanId,
    turnId: run,
    source: 'otlp.traces',
  };
}

/** Errors the providers send, as the SDKs print them. */
export const ERRORS = {
  server: { error: '500 The server had an error while processing your request. Sorry about that!', status: 500, errorType: 'InternalServerError' },
  overloaded: { error: '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', status: 529, provider: 'anthropic' },
  rateLimit: {
    error: '429 Rate limit reached for gpt-4o in organization org-3fXq2 on tokens per min (TPM): Limit 30000, Used 29950, Requested 1200. Please try again in 2.4s.',
    status: 429,
    errorType: 'RateLimitError',
  },
  auth: { error: '401 Incorrect API key provided: sk-proj-****abcd.', status: 401, errorType: 'AuthenticationError' },
  login: { error: 'Invalid API key · Please run /login', provider: 'anthropic' },
} as const;

export interface Sim {
  store: StateStore;
  clock: { now: number };
  runner: PipelineRunner;
  logger: ReturnType<typeof memoryLogger>;
  /** Appends the events and runs the pipeline until nothing is left to do now. */
  send(...events: AgentEvent[]): Promise<void>;
  /** Advances the virtual clock to `at`, firing what falls due on the way, each at its due time. */
  until(at: number): Promise<void>;
  /** The provider events delivered so far, in order, with the virtual time they were committed at. */
  events(): Array<ProviderEventData & { type: string; time: string; committedAt: number }>;
  /** The work.created events so far. */
  work(): number;
}

/** classify → watchdog → recurrence over a memory store (or `store`), on a virtual clock starting at T0. */
export async function simulate(opts: Partial<WatchdogOptions> & { store?: StateStore } = {}): Promise<Sim> {
  const store = opts.store ?? new MemoryStore();
  await store.open();
  await store.registerExporter('traces', 'test');
  const clock = { now: T0 };
  const logger = memoryLogger();
  const settings = (id: string) => ({ id, logger, pipeline: 'traces', store, state: stateClient(store, id, { owner: id }) });
  const wd = watchdog(
    { id: 'watchdog', pipeline: 'traces', retryAfterMs: 60_000, failureLimit: 20, openWork: false, now: () => clock.now, startedAt: T0 - 3600_000, ...opts },
    watchdogStateView(settings('watchdog').state),
    { log: (l) => logger[l.level](l.message, l.fields) },
  );
  const runner = new PipelineRunner({
    pipeline: 'traces',
    store,
    logger,
    pageSize: 256,
    now: () => clock.now,
    processors: ['classify', 'watchdog', 'recurrence'],
    chain: (page$) =>
      page$.pipe(
        classifyFactory.create(settings('classify'), defaultsOf(classifyFactory.schema)),
        wd,
        recurrenceFactory.create(settings('recurrence'), { ...defaultsOf(recurrenceFactory.schema), min_recurrence: 1 }),
      ),
  });
  const seen: Array<ProviderEventData & { type: string; time: string; committedAt: number }> = [];
  let work = 0;
  const drain = async () => {
    while (await runner.runOnce());
    const out = await store.readOutbox('traces', 'test', 10_000);
    for (const o of out) {
      if (o.kind !== 'work') continue;
      const item = o as WorkOutboxItem;
      if (item.event.type.startsWith('dev.vigil.provider.'))
        seen.push({ ...(item.event.data as ProviderEventData), type: item.event.type, time: item.event.time, committedAt: clock.now });
      else if (item.event.type === 'dev.vigil.work.created') work++;
    }
    if (out.length) await store.ackOutbox('traces', 'test', out[out.length - 1]!.seq);
  };
  return {
    store,
    clock,
    runner,
    logger,
    async send(...events) {
      await store.append('traces', events);
      await drain();
    },
    async until(at) {
      for (;;) {
        await drain();
        if (clock.now >= at) return;
        const wait = runner.idleWaitMs();
        assert.ok(wait > 0, 'an idle round must not spin');
        clock.now = Math.min(at, clock.now + wait);
      }
    },
    events: () => seen,
    work: () => work,
  };
}
