/**
 * Stores as tests make them beside the conformance suite: a Redis store on the shared test server
 * (REDIS_URL) under its own key prefix, with the settings every such test uses.
 */
import { RedisStore } from '../../src/store/redis/store.ts';
import { REDIS_URL } from './redis-server.ts';

export function localRedisStore(prefix: string): RedisStore {
  return new RedisStore({
    url: REDIS_URL,
    key_prefix: prefix,
    cluster: { enabled: false, nodes: [] },
    dedupe_window: 3_600_000,
    connect_timeout: 2000,
    command_timeout: 5000,
  });
}
