/**
 * The component-facing side of processor state, in the style of the OpenTelemetry Collector's
 * storage extension: a client bound to one namespace, handed to a processor or receiver through
 * its settings (`settings.state`, namespace = the component id). It reads directly from the store
 * and *builds* writes and timers; the component puts them into the page's commit
 * (`withState` / `withTimers` in src/processors/page.ts) or hands them with its records
 * (`IngestConsumer(events, {state})`), so they are written atomically with everything else.
 *
 *   const seen = await settings.state.get(runId);                   // {value, version} | undefined
 *   page = withState(page, [settings.state.put(runId, checkpoint, { version: (seen?.version ?? 0) + 1 })]);
 *   page = withTimers(page, { set: [settings.state.timer({ id: `retry:${runId}`, partition, due, payload })] });
 *   for (const t of settings.state.ownTimers(page)) ...              // on a timer page
 *
 * A component that shares state with others (the trace → session map) asks for a namespace of
 * its own name: `settings.state.withNamespace('trace-session', { maxEntries: 200_000 })`. A processor
 * listed in several pipelines shares its namespace between them; it keys by pipeline if needed.
 */
import type { WorkPage } from '../processors/page.ts';
import { encodeStateWrites, type FiredTimer, type StateEntry, type StateListEntry, type StateWrite, type TimerSpec } from './state.ts';
import type { StateStore } from './types.ts';

export interface StateClientOptions {
  /** The component id: owner of the timers it builds. */
  owner: string;
  /** The namespace's entry bound, carried by every write (see state.ts); the store default when absent. */
  maxEntries?: number;
  /**
   * Keep the namespace in memory (StateWrite `cached`, carried by every write): for a namespace
   * written at most pages under random keys, where a SQLite row per key costs a random page each.
   * Its entries then take memory up to the bound.
   */
  cached?: boolean;
}

export interface StateClient {
  readonly namespace: string;
  readonly owner: string;
  /** Live entries among `keys`. */
  load(keys: readonly string[]): Promise<Map<string, StateEntry>>;
  get(key: string): Promise<StateEntry | undefined>;
  /** Up to `limit` live entries, newest written first (status, restoring a receiver's offsets). */
  list(limit: number): Promise<StateListEntry[]>;
  /**
   * A write of `value` (JSON). `version`: conditional, stored version + 1 (1 to create); omitted,
   * unconditional. `ttlMs`: expires that long after the commit. Throws VIGIL_STATE_INVALID at
   * once for a value over the size bound or a bad key.
   */
  put(key: string, value: unknown, opts?: { version?: number; ttlMs?: number }): StateWrite;
  /** A delete; with `version` (stored version + 1), only if unchanged. */
  delete(key: string, opts?: { version?: number }): StateWrite;
  /** A timer owned by this component. */
  timer(spec: Omit<TimerSpec, 'owner'>): TimerSpec;
  /** The fired timers of a timer page that this component owns. */
  ownTimers(page: WorkPage): FiredTimer[];
  /** A client of another namespace with the same owner (shared state such as the trace → session map). */
  withNamespace(name: string, opts?: { maxEntries?: number; cached?: boolean }): StateClient;
}

export function stateClient(store: StateStore, namespace: string, opts: StateClientOptions): StateClient {
  const bound = { ...(opts.maxEntries !== undefined ? { maxEntries: opts.maxEntries } : {}), ...(opts.cached ? { cached: true } : {}) };
  const checked = (w: StateWrite): StateWrite => {
    encodeStateWrites([w]);
    return w;
  };
  return {
    namespace,
    owner: opts.owner,
    load: (keys) => store.loadState(namespace, keys),
    get: async (key) => (await store.loadState(namespace, [key])).get(key),
    list: (limit) => store.listState(namespace, limit),
    put: (key, value, o = {}) => checked({ namespace, key, value, ...o, ...bound }),
    delete: (key, o = {}) => checked({ namespace, key, value: null, ...o, ...bound }),
    timer: (spec) => ({ ...spec, owner: opts.owner }),
    ownTimers: (page) => (page.timers ?? []).filter((t) => t.owner === opts.owner),
    withNamespace: (name, o = {}) => stateClient(store, name, { owner: opts.owner, ...o }),
  };
}
