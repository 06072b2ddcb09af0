import { from } from 'rxjs';
import type { ProcessorFactory, ProcessorStatus, ReportedFailure } from '../../component.ts';
import { s, type Infer } from '../../config/schema.ts';
import { isVigilError } from '../../errors.ts';
import type { StateClient } from '../../store/state-client.ts';
import { newTimerPage, withState } from '../page.ts';
import { MARK_KEY, RECENT_KEY, watchdog, type RecentReports, type WatchdogNamespace, type WatchdogStateView } from './operator.ts';

/** The wait before the one automatic retry of a temporary failure (DESIGN 3.4). */
export const DEFAULT_RETRY_AFTER_MS = 60_000;
/** Reports kept for `vigil status` and `GET /v1/failures`. */
export const DEFAULT_FAILURE_LIMIT = 20;

/** Entries of the facts namespace (conversations, judged runs): evicted oldest first beyond this. */
const FACTS_MAX_ENTRIES = 200_000;
/** Checkpoints are never evicted: pending ones are bounded by the pipelines' timers, retried ones expire. */
const CHECKPOINTS_MAX_ENTRIES = 1_000_000;

const schema = s.object({
  /** How long after a temporary failure the one automatic retry goes out. */
  retry_after: s.duration({ min: 1 }).default(DEFAULT_RETRY_AFTER_MS),
  /** Reports kept, newest first by failure time (`vigil status`, `GET /v1/failures`). */
  failure_limit: s.int({ min: 1, max: 200 }).default(DEFAULT_FAILURE_LIMIT),
  /** Provider failures the watchdog handles also go on to recurrence and may open ordinary work. */
  open_work: s.boolean().default(false),
});

export type WatchdogConfig = Infer<typeof schema>;

/** The watchdog's three namespaces, as clients of the processor's state. */
export function watchdogClients(state: StateClient): Record<WatchdogNamespace, StateClient> {
  return {
    // Written at most pages, a judged run per failure under its random run id: kept in memory
    // (README, State: namespaces kept in memory), as the correlation's per-trace state is.
    facts: state.withNamespace(state.namespace, { maxEntries: FACTS_MAX_ENTRIES, cached: true }),
    checkpoints: state.withNamespace(`${state.namespace}/checkpoints`, { maxEntries: CHECKPOINTS_MAX_ENTRIES }),
    reports: state.withNamespace(`${state.namespace}/reports`, { maxEntries: 16 }),
  };
}

export function watchdogStateView(state: StateClient): WatchdogStateView {
  const clients = watchdogClients(state);
  return {
    load: (ns, keys) => from(clients[ns].load(keys)),
    put: (ns, key, value, opts) => clients[ns].put(key, value, opts),
    delete: (ns, key, opts) => clients[ns].delete(key, opts),
    timer: (spec) => state.timer(spec),
    ownTimers: (page) => state.ownTimers(page),
  };
}

export const watchdogFactory: ProcessorFactory<WatchdogConfig> = {
  type: 'watchdog',
  schema,
  signals: ['traces', 'logs'],
  capabilities: () => ({ activityMarkers: true }),
  create(settings, cfg) {
    const now = Date.now;
    return watchdog(
      {
        id: settings.id,
        pipeline: settings.pipeline,
        retryAfterMs: cfg.retry_after,
        failureLimit: cfg.failure_limit,
        openWork: cfg.open_work,
        now,
        startedAt: now(),
      },
      watchdogStateView(settings.state),
      {
        log: (l) => {
          const fields = { pipeline: settings.pipeline, ...l.fields };
          if (l.level === 'error') settings.logger.error(l.message, fields);
          else if (l.level === 'warn') settings.logger.warn(l.message, fields);
          else settings.logger.info(l.message, fields);
        },
      },
    );
  },
  /**
   * The history mark, written at the very first start, before any receiver listens: failures
   * before it are history. Written by the operator at its first page instead, a first run stopped
   * before that page left none, and the next start's later time made the failures the first run
   * had acknowledged history, never reported.
   */
  async prepare(settings, _cfg, startedAt) {
    const checkpoints = watchdogClients(settings.state).checkpoints;
    if (await checkpoints.get(MARK_KEY)) return;
    const write = checkpoints.put(MARK_KEY, { v: 1, since: startedAt }, { version: 1 });
    try {
      // A commit that moves no cursor, as a timer page's does: the mark alone.
      await settings.store.commit(withState(newTimerPage(settings.pipeline, '', []), [write]).commit);
    } catch (err) {
      // Another sidecar sharing the store wrote its mark first: that one stands.
      if (!isVigilError(err, 'VIGIL_STORE_CONFLICT')) throw err;
    }
  },
  async status(state): Promise<ProcessorStatus> {
    const recent = (await watchdogClients(state).reports.get(RECENT_KEY))?.value as Partial<RecentReports> | undefined;
    const failures: ReportedFailure[] = Array.isArray(recent?.failures) ? recent.failures : [];
    return { failures, counts: recent?.counts ?? {} };
  },
};
