/**
 * The shared lifecycle suite every factory passes (the Collector's generated component tests):
 * the default config validates, and create → start → shutdown works and leaves no open server.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ParseContext } from '../src/config/schema.ts';
import { components } from '../src/components.ts';
import { memoryLogger } from '../src/logger.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { tempDir } from './helpers/vigil-process.ts';

const registry = components();
/** Minimal configs for components that have required keys; the rest start from `{}`. */
const minimal: Record<string, unknown> = {
  'exporters/file': { path: join(tempDir(), 'work.jsonl') },
  'exporters/otlphttp': { endpoint: 'http://127.0.0.1:9' },
  'exporters/webhook': { endpoint: 'http://127.0.0.1:9/hook' },
  'exporters/redis_stream': { url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0' },
  'receivers/otlp': { protocols: { http: { endpoint: '127.0.0.1:0' } } },
  'receivers/jsonl': { include: [join(tempDir(), 'none-*.jsonl')] },
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
        const logger = memoryLogger();
        const settings = {
          id: type,
          logger,
          consumers: { logs: async () => ({ appended: 0, duplicates: 0 }) },
          pipeline: 'logs',
          store: new MemoryStore(),
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
          return;
        }
        const lifecycle = instance as { start(): Promise<void>; shutdown(): Promise<void> };
        await lifecycle.start();
        await lifecycle.shutdown();
        await lifecycle.shutdown(); // idempotent
        assert.equal(logger.entries.filter((e) => e.level === 'error').length, 0, JSON.stringify(logger.entries));
      });
    }
  }
});
