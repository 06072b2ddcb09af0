/**
 * Exporter `redis_stream`: XADD each work event to a Redis Stream (field `event` holds the
 * CloudEvent JSON, field `id` its id), trimmed with an approximate MAXLEN. Consumers read with
 * XREAD or consumer groups (XREADGROUP). A Lua script adds an event only if its id was not added
 * within `dedupe_window`, so a redelivery after a crash does not appear twice in the stream; the
 * id key shares the stream's hash slot, so this works on Redis Cluster too. One round trip per batch.
 */
import { Redis } from 'ioredis';
import type { ExporterFactory } from '../../component.ts';
import { s, type Infer } from '../../config/schema.ts';
import { errorMessage } from '../../errors.ts';
import { isWorkEntry } from '../../model/work.ts';
import { ExportError, withDelivery } from '../delivery.ts';
import { redactUrl } from '../../internal/redact.ts';

const schema = withDelivery({
  /** `redis://[:password@]host:port/db` or `rediss://` for TLS. */
  url: s.url(['redis:', 'rediss:']).default('redis://127.0.0.1:6379/0'),
  stream: s.string({ minLength: 1 }).default('vigil:work-events'),
  /** Approximate maximum stream length (XADD MAXLEN ~); 0 never trims. */
  maxlen: s.int({ min: 0 }).default(100_000),
  /** How long an event id is remembered to drop redeliveries. */
  dedupe_window: s.duration({ min: 1000 }).default(24 * 3_600_000),
  timeout: s.duration({ min: 1 }).default(5_000),
});
export type RedisStreamExporterConfig = Infer<typeof schema>;

const ADD_ONCE = `
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[3]) then
  if tonumber(ARGV[1]) > 0 then
    return redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'event', ARGV[2], 'id', ARGV[4])
  end
  return redis.call('XADD', KEYS[1], '*', 'event', ARGV[2], 'id', ARGV[4])
end
return false`;

/** The hash tag that puts a key in the stream's slot: the stream's own tag, or the whole name. */
export function slotTag(stream: string): string {
  const open = stream.indexOf('{');
  if (open >= 0) {
    const close = stream.indexOf('}', open + 1);
    if (close > open + 1) return stream.slice(open, close + 1);
  }
  return `{${stream}}`;
}

export const redisStreamExporterFactory: ExporterFactory<RedisStreamExporterConfig> = {
  type: 'redis_stream',
  schema,
  create(settings, cfg) {
    let client: Redis | undefined;
    const where = redactUrl(cfg.url);
    const tag = slotTag(cfg.stream);
    const getClient = () => {
      client ??= new Redis(cfg.url, {
        lazyConnect: true,
        // Fail fast and let the exporter runner's backoff decide when to try again.
        maxRetriesPerRequest: 1,
        enableOfflineQueue: true,
        connectTimeout: cfg.timeout,
        commandTimeout: cfg.timeout,
        retryStrategy: (times) => Math.min(times * 200, 5_000),
      });
      client.on('error', () => undefined); // reported through failed commands, not as unhandled events
      client.defineCommand('vigilAddOnce', { numberOfKeys: 2, lua: ADD_ONCE });
      return client;
    };
    return {
      async start() {
        getClient();
      },
      async export(entries) {
        const work = entries.map((e, i) => ({ e, i })).filter(({ e }) => isWorkEntry(e));
        if (work.length === 0) return;
        const redis = getClient() as Redis & { vigilAddOnce(...args: unknown[]): Promise<unknown> };
        const pipeline = redis.pipeline();
        for (const { e } of work) {
          if (!isWorkEntry(e)) continue;
          (pipeline as unknown as { vigilAddOnce(...args: unknown[]): void }).vigilAddOnce(
            cfg.stream,
            `${tag}:vigil-seen:${e.id}`,
            cfg.maxlen,
            JSON.stringify(e.event),
            cfg.dedupe_window,
            e.id,
          );
        }
        let results: Array<[Error | null, unknown]> | null;
        try {
          results = await pipeline.exec();
        } catch (err) {
          throw new ExportError(`${settings.id}: XADD to ${cfg.stream} at ${where} failed: ${errorMessage(err)}`, { cause: err, reason: 'redis' });
        }
        const firstError = (results ?? []).findIndex(([err]) => err);
        if (results === null || firstError >= 0) {
          const err = results?.[firstError]?.[0];
          // Everything before the first failed entry was added (the pipeline runs in order).
          const delivered = firstError >= 0 ? work[firstError]!.i : 0;
          throw new ExportError(`${settings.id}: XADD to ${cfg.stream} at ${where} failed: ${err ? errorMessage(err) : 'no reply'}`, { delivered, reason: 'redis' });
        }
      },
      async shutdown() {
        const c = client;
        client = undefined;
        if (c) await c.quit().catch(() => c.disconnect());
      },
    };
  },
};
