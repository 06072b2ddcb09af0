/**
 * How the Redis store keeps a group's state in the groups hash (field: the group key). Written as
 * a JSON array without the key or property names — `[1, count, firstSeen, lastSeen, decision,
 * openWorkId, workGeneration, version]`, the decision as its index in DECISIONS — about 80 bytes
 * instead of the 230 of the GroupState object: each page commit sends some 250 of them, so the
 * commit is about a third smaller on the socket. The leading 1 is the format. Groups written as
 * a GroupState object (before this format) are read as they are.
 */
import { VigilError } from '../../errors.ts';
import type { Decision, GroupState } from '../../model/work.ts';

/** Decisions by their index in the stored form (append only: stored indices must keep their meaning). */
const DECISIONS: readonly Decision[] = ['Reject', 'BurstCoalesced', 'BurstThresholdReached', 'ChronicRecurrence'];
const DECISION_INDEX = new Map<Decision, number>(DECISIONS.map((d, i) => [d, i]));
const FORMAT = 1;

export function encodeGroup(g: GroupState): string {
  const d = DECISION_INDEX.get(g.lastDecision);
  if (d === undefined) throw new VigilError('VIGIL_STORE_CORRUPT', `group ${g.groupKey} has an unknown decision ${JSON.stringify(g.lastDecision)}`);
  return JSON.stringify([FORMAT, g.count, g.firstSeen, g.lastSeen, d, g.openWorkId, g.workGeneration, g.version]);
}

/** A stored group, in either form; `groupKey` is its hash field. */
export function decodeGroup(groupKey: string, raw: string): GroupState {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch (err) {
    throw new VigilError('VIGIL_STORE_CORRUPT', `redis holds an unreadable group ${groupKey}`, { cause: err });
  }
  if (!Array.isArray(v)) {
    // The earlier form: the GroupState itself.
    if (typeof v !== 'object' || v === null) throw new VigilError('VIGIL_STORE_CORRUPT', `redis holds an unreadable group ${groupKey}`);
    return v as GroupState;
  }
  const [format, count, firstSeen, lastSeen, d, openWorkId, workGeneration, version] = v as unknown[];
  const lastDecision = typeof d === 'number' ? DECISIONS[d] : undefined;
  if (
    format !== FORMAT ||
    v.length !== 8 ||
    typeof count !== 'number' ||
    typeof firstSeen !== 'number' ||
    typeof lastSeen !== 'number' ||
    lastDecision === undefined ||
    (openWorkId !== null && typeof openWorkId !== 'string') ||
    typeof workGeneration !== 'number' ||
    typeof version !== 'number'
  ) {
    throw new VigilError('VIGIL_STORE_CORRUPT', `redis holds a group ${groupKey} in a form this vigil cannot read (${raw.slice(0, 80)})`);
  }
  return { groupKey, count, firstSeen, lastSeen, lastDecision, openWorkId, workGeneration, version };
}
