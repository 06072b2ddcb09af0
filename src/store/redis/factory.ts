import type { StoreFactory } from '../../component.ts';
import { s, type Infer } from '../../config/schema.ts';
import { RedisStore } from './store.ts';

const REDIS_URL = ['redis:', 'rediss:'];

const schema = s
  .object({
    /** `redis://[user:password@]host:port/db`; `rediss://` for TLS. The password is never logged. */
    url: s.url(REDIS_URL).default('redis://127.0.0.1:6379/0'),
    /** Prepended to every key, so several deployments can share one Redis. */
    key_prefix: s.string({ minLength: 1, maxLength: 64, pattern: /^[^{}\s]+$/, patternHint: 'a key prefix without braces or spaces' }).default('vigil:'),
    /** Redis Cluster: `enabled: true` treats `url` (and `nodes`) as seed nodes. */
    cluster: s.object({
      enabled: s.boolean().default(false),
      /** More seed nodes besides `url`. */
      nodes: s.array(s.url(REDIS_URL)).default([]),
    }),
    /** How long an event id is remembered to drop redeliveries (wall clock); also how long a drained session's keys stay. */
    dedupe_window: s.duration({ min: 1000 }).default(24 * 3_600_000),
    /** Per connection attempt. */
    connect_timeout: s.duration({ min: 100 }).default(5000),
    /** A command without an answer after this fails (retryably). */
    command_timeout: s.duration({ min: 100 }).default(5000),
  })
  .check((c, report) => {
    if (!c.cluster.enabled && c.cluster.nodes.length > 0) {
      report(['cluster', 'nodes'], 'lists seed nodes but cluster.enabled is false; set cluster.enabled: true, or remove cluster.nodes');
    }
    const db = new URL(c.url).pathname.replace(/^\//, '');
    if (c.cluster.enabled && db !== '' && db !== '0') {
      report(['url'], `selects database ${db}, but a Redis Cluster has only database 0; remove '/${db}' from url (use key_prefix to separate deployments)`);
    }
  });
export type RedisStoreFactoryConfig = Infer<typeof schema>;

export const redisStoreFactory: StoreFactory<RedisStoreFactoryConfig> = {
  type: 'redis',
  schema,
  create: (settings, cfg) => new RedisStore(cfg, settings.logger),
};
