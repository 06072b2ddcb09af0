import type { StoreFactory } from '../../component.ts';
import { s, type Infer } from '../../config/schema.ts';
import { SqliteStore } from './store.ts';

export const DEFAULT_SQLITE_PATH = '.vigil/state.db';

const schema = s.object({
  /** The database file (created with its folder); relative paths are from the working directory. */
  path: s.string({ minLength: 1 }).default(DEFAULT_SQLITE_PATH),
  /** `full` fsyncs every commit before a receiver answers (durable acks); `normal` may lose the last commits on power loss. */
  synchronous: s.enumOf(['full', 'normal'] as const).default('full'),
  /** How long a write waits for a lock held by another process before failing retryably. */
  busy_timeout: s.duration().default(5000),
  /** How long an event id is remembered to drop redeliveries (wall clock). */
  dedupe_window: s.duration({ min: 1000 }).default(24 * 3_600_000),
});
export type SqliteStoreFactoryConfig = Infer<typeof schema>;

export const sqliteStoreFactory: StoreFactory<SqliteStoreFactoryConfig> = {
  type: 'sqlite',
  schema,
  create: (settings, cfg) => new SqliteStore(cfg, settings.logger),
};
