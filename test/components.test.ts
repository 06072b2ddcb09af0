/**
 * The shared lifecycle suite every factory passes (the Collector's generated component tests):
 * the default config validates; create → start → shutdown works and leaves nothing open (no
 * server, socket, timer or file handle more than before); and a page pushed through every
 * processor comes out whole, with nothing left running once the page is through.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { lastValueFrom, of, type OperatorFunction } from 'rxjs';
import type { ProcessorFactory } from '../src/component.ts';
import { ParseContext } from '../src/config/schema.ts';
import { components } from '../src/components.ts';
import { memoryLogger } from '../src/logger.ts';
import { newTimerPage, newWorkPage, type WorkPage } from '../src/processors/page.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { stateClient } from '../src/store/state-client.ts';
import { event } from './helpers/pages.ts';
import { tempDir, waitFor } from './helpers/vigil-process.ts';

/** Active handles and requests (servers, sockets, timers, fs requests, …) by type. */
function openResources(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const type of process.getActiveResourcesInfo()) counts.set(type, (counts.get(type) ?? 0) + 1);
  return counts;
}

/** Waits (closing handles need a few turns of the event loop) until no type has more open than `before`. */
async function assertNothingLeftOpen(before: Map<string, number>, what: string): Promise<void> {
  const extra = () => [...openResources()].filter(([type, n]) => n > (before.get(type) ?? 0)).map(([type, n]) => `${type} ×${n - (before.get(type) ?? 0)}`);
  await waitFor(() => (extra().length === 0 ? true : undefined), `${what} to close everything it opened`, 5_000, 10).catch(() => {
    assert.fail(`${what} left open: ${extra().join(', ')}`);
  });
}

const registry = components();
/** Minimal configs for components that have required keys; the rest start from `{}`. */
const minimal: Record<string, unknown> = {
  'exporters/file': { path: join(tempDir(), 'work.jsonl') },
  'exporters/otlphttp': { endpoint: 'http://127.0.0.1:9' },
  'exporters/webhook': { endpoint: 'http://127.0.0.1:9/hook' },
  'exporters/redis_stream': { url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0' },
  'receivers/otlp': { protocols: { http: { endpoint: '127.0.0.1:0' } } },
  'receivers/jsonl': { include: [join(tempDir(), 'none-*.jsonl')] },
  'receivers/journal': { include: [join(tempDir(), '*/runtime_error_cases.jsonl')] },
  'extensions/health_check': { endpoint: '127.0.0.1:0' },
  'stores/sqlite': { path: join(tempDir(), 'state.db') },
  'stores/redis': { url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0' },
};

describe('every registered component', () => {
  for (const kind of ['receivers', 'processors', 'exporters', 'extensions', 'stores'] as const) {
    for (const [type, factory] of registry[kind]) {
      test(`${kind}/${type}: config validates; create, start, shutdown`, async () => {
        const ctx = new ParseContext();
        const cfg = factory.schema.parse(minimal[`${kind}/${type}`] ?? {}, [kind, type], ctx);
        assert.deepEqual(ctx.issues, []);
        const before = openResources();
        const logger = memoryLogger();
        const store = new MemoryStore();
        const settings = {
          id: type,
          logger,
          consumers: { logs: async () => ({ appended: 0, duplicates: 0 }) },
          pipeline: 'logs',
          store,
          state: stateClient(store, type, { owner: type }),
          readiness: async () => ({ ready: true, reasons: [] }),
          status: async () => ({}),
          receiverTokens: [],
        };
        const instance = (factory.create as (s: unknown, c: unknown) => unknown)(settings, cfg);
        if (kind === 'processors') {
          assert.equal(typeof instance, 'function', 'a processor is an OperatorFunction');
          return;
        }
        if (kind === 'stores') {
          const store = instance as MemoryStore;
          await store.open();
          await store.close();
          await assertNothingLeftOpen(before, `stores/${type}`);
          return;
        }
        const lifecycle = instance as { start(): Promise<void>; shutdown(): Promise<void> };
        await lifecycle.start();
        await lifecycle.shutdown();
        await lifecycle.shutdown(); // idempotent
        assert.equal(logger.entries.filter((e) => e.level === 'error').length, 0, JSON.stringify(logger.entries));
        await assertNothingLeftOpen(before, `${kind}/${type}`);
      });
    }
  }
});

describe('every registered processor, with a page', () => {
  const TRACEBACK = 'Traceback (most recent call last):\n  File "/srv/job.py", line 3, in run\nKeyError: \'port\'';
  /** A page as the pipeline runner reads it: a failed execution, a warning and a normal output. */
  const rawPage = (): WorkPage =>
    newWorkPage('logs', 'session-1', [
      { id: '1', event: event({ id: 'e1', time: Date.UTC(2026, 0, 1), payload: { state: 'error', outcome: { error: TRACEBACK } } }) },
      {
        id: '2',
        event: event({
          id: 'e2',
          time: Date.UTC(2026, 0, 1, 0, 0, 1),
          payload: { state: 'ok', outcome: { output: [{ output_type: 'stream', name: 'stderr', text: 'UserWarning: x' }] } },
        }),
      },
      { id: '3', event: event({ id: 'e3', time: Date.UTC(2026, 0, 1, 0, 0, 2), payload: { state: 'ok', outcome: { output: [] } } }) },
    ]);
  const processors = [...registry.processors.values()];
  const create = (factory: ProcessorFactory, store: MemoryStore): OperatorFunction<WorkPage, WorkPage> => {
    const ctx = new ParseContext();
    const cfg = factory.schema.parse({}, ['processors', factory.type], ctx);
    return factory.create(
      { id: factory.type, logger: memoryLogger(), pipeline: 'logs', store, state: stateClient(store, factory.type, { owner: factory.type }) },
      cfg,
    );
  };

  for (const [i, factory] of processors.entries()) {
    test(`processors/${factory.type}: a page goes through whole, and nothing stays open after it`, async () => {
      const store = new MemoryStore();
      await store.open();
      // The processors before it in the list prepare the page as a pipeline would.
      const upstream = processors.slice(0, i).map((f) => create(f, store));
      const input = await lastValueFrom(upstream.reduce((page$, op) => page$.pipe(op), of(rawPage())));
      const before = openResources();
      const out = await lastValueFrom(of(input).pipe(create(factory, store)));
      assert.deepEqual(
        out.items.map((item) => item.entry.id),
        ['1', '2', '3'],
        'every item, in order',
      );
      assert.equal(out.commit.cursor, '3', 'the cursor covers the page');
      assert.deepEqual([out.pipeline, out.partition], ['logs', 'session-1']);
      await assertNothingLeftOpen(before, `processors/${factory.type}`);
      await store.close();
    });
  }

  for (const factory of processors) {
    test(`processors/${factory.type}: a timer page of timers it does not own passes through unchanged`, async () => {
      const store = new MemoryStore();
      await store.open();
      const page = newTimerPage('logs', 'session-1', [
        { id: 'watchdog-retry:r1', owner: 'someone/else', partition: 'session-1', due: 1, payload: { run: 'r1' }, version: 1 },
      ]);
      const snapshot = structuredClone(page);
      const out = await lastValueFrom(of(page).pipe(create(factory, store)));
      assert.equal(out, page);
      assert.deepEqual(out, snapshot);
      await store.close();
    });
  }

  test('through the whole chain: the failure is classified, counted and grouped; the rest is not', async () => {
    const store = new MemoryStore();
    await store.open();
    const before = openResources();
    const out = await lastValueFrom(processors.map((f) => create(f, store)).reduce((page$, op) => page$.pipe(op), of(rawPage())));
    assert.deepEqual(
      out.items.map((item) => [item.diagnosis?.classification, item.diagnosis?.signature ?? null, item.occurrence?.decision ?? null]),
      [
        ['ExecutionFailure', "KeyError: 'port'", 'BurstCoalesced'],
        ['StderrWarning', null, null],
        ['NormalOutput', null, null],
      ],
    );
    assert.equal(out.commit.groups.length, 1, 'one group in the commit');
    await assertNothingLeftOpen(before, 'the processor chain');
    await store.close();
  });
});
