/**
 * Processor `detect` (DESIGN 3.5): agent-runtime error kinds from traces alone, and one
 * occurrence for a journal case and the same failure seen in a trace. Place it after `classify`
 * and before `recurrence`, in every pipeline that takes a `journal` receiver or agent traces.
 */
import type { ProcessorFactory } from '../../component.ts';
import { s, type Infer } from '../../config/schema.ts';
import { DETECTORS } from './detectors.ts';
import { detect } from './operator.ts';

/** Detectors that read activity markers (`compaction`, `model_request.ok`). */
const MARKER_DETECTORS: ReadonlySet<string> = new Set(['context_overflow_after_recovery', 'model_empty_reasoning_output']);
/** Failures in one turn that make a repeated-failure case, unless configured. */
export const DEFAULT_REPEAT_THRESHOLD = 3;
/** Turns whose counts are kept at most (the state namespace's bound). */
export const DEFAULT_MAX_TURNS = 100_000;

const schema = s.object({
  /** N: the same tool failing with the same fingerprint N times in a turn, or N failed model requests in a turn. */
  repeat_threshold: s.int({ min: 2, max: 1000 }).default(DEFAULT_REPEAT_THRESHOLD),
  /** The detectors to run (all by default). */
  detectors: s.array(s.enumOf(DETECTORS)).default([...DETECTORS]),
  /** How long a turn's counts are kept after its last record (wall clock of the store). */
  turn_ttl: s.duration({ min: 1000 }).default(24 * 3600_000),
  /** Turns whose counts are kept at most; the oldest written go first. */
  max_turns: s.int({ min: 100, max: 10_000_000 }).default(DEFAULT_MAX_TURNS),
});
export type DetectConfig = Infer<typeof schema>;

export const detectFactory: ProcessorFactory<DetectConfig> = {
  type: 'detect',
  schema,
  signals: ['traces', 'logs'],
  // Two detectors read successful records: the markers receivers keep for them (README "Activity markers").
  capabilities: (cfg) => ({ activityMarkers: cfg.detectors.some((d) => MARKER_DETECTORS.has(d)) }),
  create(settings, cfg) {
    const state = settings.state.withNamespace(settings.state.namespace, { maxEntries: cfg.max_turns });
    return detect(
      { repeatThreshold: cfg.repeat_threshold, detectors: new Set(cfg.detectors), turnTtlMs: cfg.turn_ttl, detectedBy: `vigil/${settings.id}` },
      { load: (keys) => state.load(keys), put: (key, value, opts) => state.put(key, value, opts) },
    );
  },
};
