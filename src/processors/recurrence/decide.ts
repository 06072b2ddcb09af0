import type { Decision } from '../../model/work.ts';

/** Policy of DESIGN 3.2, with the reference defaults. */
export interface RecurrencePolicy {
  minRecurrence: number;
  /** Milliseconds. */
  groupingWindow: number;
  maxPerTurn: number;
}

export const DEFAULT_MIN_RECURRENCE = 2;
export const DEFAULT_GROUPING_WINDOW_MS = 60_000;
export const DEFAULT_MAX_PER_TURN = 5;

export type Action = 'reject' | 'group' | 'create_work';

/**
 * The recurrence decision for the n-th occurrence of a group, exactly as the reference observer
 * makes it. `total` = previous count + 1; `lastSeen` is the previous occurrence's event time
 * (undefined for the first occurrence) and `now` this occurrence's event time. An occurrence
 * whose event time is before `lastSeen` (late arrival) is neither "within the window" nor
 * "beyond" it by the reference rule `0 <= now - last_seen <= window`; it counts as beyond, as the
 * reference's else-branch does. A zero window holds nothing (`window > 0` is part of the rule), so
 * a repeat at the same instant is chronic, not a burst.
 */
export function decide(policy: RecurrencePolicy, total: number, lastSeen: number | undefined, now: number): Decision {
  if (policy.minRecurrence === 0) return 'Reject';
  const reached = total >= policy.minRecurrence;
  if (lastSeen === undefined) return reached ? 'BurstThresholdReached' : 'BurstCoalesced';
  const gap = now - lastSeen;
  // "Within the window" needs a window: with `grouping_window: 0` only a first occurrence is a burst.
  if (policy.groupingWindow > 0 && gap >= 0 && gap <= policy.groupingWindow) return reached ? 'BurstThresholdReached' : 'BurstCoalesced';
  return reached ? 'ChronicRecurrence' : 'BurstCoalesced';
}

export function actionOf(decision: Decision): Action {
  switch (decision) {
    case 'Reject':
      return 'reject';
    case 'BurstCoalesced':
      return 'group';
    case 'BurstThresholdReached':
    case 'ChronicRecurrence':
      return 'create_work';
  }
}
