/**
 * Occurrences already counted (DESIGN 3.3, one failure, one occurrence), in the store's
 * `occurrences` namespace, keyed by occurrence id. Group states are shared by every pipeline (and
 * every sidecar on Redis) while each pipeline reads its own ingest log: when two pipelines take
 * the same records (the same receiver in both), each would count each record once more in the
 * one group, and a record processed later than a newer one would be judged against that newer
 * one's time. The first pipeline to count an occurrence records it here, in the same commit as
 * the group; any later page that meets the occurrence again — in another pipeline, or the same
 * record twice — does not count it, and a pipeline that has not delivered its work events yet
 * delivers the same events (same ids, same content, rebuilt from what is recorded). Only pipelines
 * that share records with another (`ProcessorSettings.peers`) keep it: elsewhere a record reaches
 * the groups once, through one ingest log whose dedupe already drops repeats.
 */
import type { Decision } from '../../model/work.ts';

export const COUNTED_NAMESPACE = 'occurrences';
/** How long a counted occurrence is remembered: as long as a redelivered record is recognised (the stores' default dedupe window). */
export const COUNTED_TTL_MS = 24 * 3_600_000;
/** Counted occurrences remembered at most (the oldest written go first). */
export const COUNTED_MAX_ENTRIES = 200_000;

/** A counted occurrence, short keys (one entry per occurrence). */
export interface CountedOccurrence {
  /** Pipelines that have produced its work events. */
  p: string[];
  /** Its decision, work id, the group's count after it and why it made no work, if so. */
  d: Decision;
  w: string | null;
  c: number;
  s?: 'max_per_turn';
  /** The work events it produced: type (created/updated), decision, and the group's count, first and last seen they carried. */
  e: Array<{ type: 'c' | 'u'; d: Decision; c: number; f: number; l: number }>;
}
