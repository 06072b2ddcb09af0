import { from } from 'rxjs';
import type { ProcessorFactory } from '../../component.ts';
import { s, type Infer } from '../../config/schema.ts';
import { DEFAULT_GROUPING_WINDOW_MS, DEFAULT_MAX_PER_TURN, DEFAULT_MIN_RECURRENCE } from './decide.ts';
import { recurrence } from './operator.ts';

const schema = s.object({
  /** Occurrences a group needs before work is created; 0 rejects every occurrence. */
  min_recurrence: s.int({ min: 0 }).default(DEFAULT_MIN_RECURRENCE),
  /** Occurrences closer than this (event time) are one burst. */
  grouping_window: s.duration().default(DEFAULT_GROUPING_WINDOW_MS),
  /** Work items created at most per agent turn. */
  max_per_turn: s.int({ min: 1 }).default(DEFAULT_MAX_PER_TURN),
  /** `service` groups across sessions of a service; `session` per session, as the reference observer. */
  scope: s.enumOf(['service', 'session'] as const).default('service'),
});

export type RecurrenceConfig = Infer<typeof schema>;

export const recurrenceFactory: ProcessorFactory<RecurrenceConfig> = {
  type: 'recurrence',
  schema,
  create(settings, cfg) {
    const { store, pipeline } = settings;
    return recurrence(
      { minRecurrence: cfg.min_recurrence, groupingWindow: cfg.grouping_window, maxPerTurn: cfg.max_per_turn, scope: cfg.scope },
      {
        loadGroups: (keys) => from(store.loadGroups(keys)),
        loadTurns: (_p, turnIds) => from(store.loadTurns(pipeline, turnIds)),
        lookupRevisions: (ids) => from(store.lookupRevisions(ids)),
      },
      {
        onUnresolvedRevision: (executionId, event, page) =>
          settings.logger.warn('recurrence: no revision known for the execution; occurrence stamped unresolved_revision', {
            pipeline: page.pipeline,
            partition: page.partition,
            execution_id: executionId,
            event_id: event.eventId,
          }),
      },
    );
  },
};
