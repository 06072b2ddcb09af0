/**
 * Retry checkpoints, with the seed's semantics (DESIGN 3.4): versioned (`version: 1`), bounded (at
 * most 64 attempt counters), persisted before the wait starts (in the same commit as the durable
 * timer that ends the wait), restored after a restart with the remaining delay (the timer's due
 * time is absolute). An unknown version or an oversized checkpoint is a clear error that defers
 * the retry — never a crash, never a silent drop. The same rules read the checkpoints agent
 * runtimes send (`retry.checkpoint` markers): one vigil cannot read suppresses vigil's own retry too.
 */
import { VigilError } from '../../errors.ts';

export const CHECKPOINT_VERSION = 1;
/** Attempt counters a checkpoint may hold. */
export const MAX_ATTEMPT_COUNTERS = 64;

/** What a report or a retry says about a failure, kept in the checkpoint for when the timer fires. */
export interface FailureRecord {
  category: string;
  temporary: boolean;
  hint: string;
  error: string;
  detail: string;
  step: string;
  title: string;
  provider: string | null;
  model: string | null;
  status_code: number | null;
  trace_id: string | null;
  span_id: string | null;
  service: string;
}

/** The watchdog's checkpoint of one conversation's retry chain. */
export interface RetryCheckpoint {
  version: typeof CHECKPOINT_VERSION;
  conversation: string;
  /** The pipeline whose timer ends the wait. */
  pipeline: string;
  /** The failed run the chain started with (`watchdog-retry:<run>`, `watchdog-report:<run>`). */
  run: string;
  /** `pending`: waiting for the retry; `retried`: the retry went out, waiting for its outcome. */
  state: 'pending' | 'retried';
  failed_at_ms: number;
  resume_at_ms: number;
  retried_at_ms?: number;
  /** Automatic retries per failed run (at most MAX_ATTEMPT_COUNTERS counters). */
  attempts: Record<string, number>;
  failure: FailureRecord;
}

export type CheckpointRead<T> = { ok: true; value: T } | { ok: false; problem: string };

/** Reads a stored checkpoint: a version-1 checkpoint within the bounds, or what is wrong with it. */
export function readCheckpoint(value: unknown): CheckpointRead<RetryCheckpoint> {
  const common = readCommon(value);
  if (!common.ok) return common;
  const c = value as Partial<RetryCheckpoint>;
  if (typeof c.conversation !== 'string' || typeof c.run !== 'string' || typeof c.pipeline !== 'string')
    return { ok: false, problem: 'it has no conversation, run or pipeline' };
  if (c.state !== 'pending' && c.state !== 'retried') return { ok: false, problem: `its state ${JSON.stringify(c.state)} is neither "pending" nor "retried"` };
  if (!Number.isFinite(c.failed_at_ms) || !Number.isFinite(c.resume_at_ms)) return { ok: false, problem: 'it has no failed_at_ms or resume_at_ms' };
  if (typeof c.failure !== 'object' || c.failure === null) return { ok: false, problem: 'it has no failure' };
  return { ok: true, value: c as RetryCheckpoint };
}

/** What vigil reads of a runtime's own retry checkpoint. */
export interface RuntimeCheckpoint {
  resumeAtMs: number | undefined;
  attempts: number;
}

/**
 * Reads a runtime's retry checkpoint (`detail` of a `retry.checkpoint` marker): version 1, at most
 * 64 attempt counters, not over the marker's size bound (`detail: null`), JSON.
 */
export function readRuntimeCheckpoint(detail: unknown, rawSize: unknown): CheckpointRead<RuntimeCheckpoint> {
  if (detail === null && typeof rawSize === 'number') return { ok: false, problem: `it is ${rawSize} bytes of JSON, over the bound of 16384 bytes` };
  if (typeof detail === 'string') return { ok: false, problem: 'its detail is not JSON' };
  const common = readCommon(detail);
  if (!common.ok) return common;
  const d = detail as Record<string, unknown>;
  const resume = d.resume_at_ms;
  return { ok: true, value: { resumeAtMs: typeof resume === 'number' && Number.isFinite(resume) ? resume : undefined, attempts: common.value } };
}

/** The version and the attempt counters' bound, common to both; the number of counters. */
function readCommon(value: unknown): CheckpointRead<number> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, problem: 'it is not a JSON object' };
  const v = value as Record<string, unknown>;
  if (v.version !== CHECKPOINT_VERSION) {
    return { ok: false, problem: `its version is ${JSON.stringify(v.version ?? null)}; this vigil reads version ${CHECKPOINT_VERSION} only` };
  }
  const attempts = v.attempts;
  const counters = attempts === undefined || attempts === null ? 0 : typeof attempts === 'object' ? Object.keys(attempts).length : -1;
  if (counters < 0) return { ok: false, problem: 'its attempts are not an object of counters' };
  if (counters > MAX_ATTEMPT_COUNTERS) return { ok: false, problem: `it holds ${counters} attempt counters, over the bound of ${MAX_ATTEMPT_COUNTERS}` };
  return { ok: true, value: counters };
}

/** Adds one attempt for `run`, keeping at most MAX_ATTEMPT_COUNTERS counters (the oldest go first). */
export function withAttempt(attempts: Record<string, number>, run: string): Record<string, number> {
  const next = { ...attempts, [run]: (attempts[run] ?? 0) + 1 };
  const keys = Object.keys(next);
  for (let i = 0; keys.length - i > MAX_ATTEMPT_COUNTERS; i++) delete next[keys[i]!];
  return next;
}

/**
 * The clear error for a checkpoint vigil cannot read: where, what, and what to do. `deferredUntil`:
 * when vigil's retry is looked at again (absent: the checkpoint was just received).
 */
export function checkpointError(where: string, problem: string, deferredUntil?: number): VigilError {
  const deferred =
    deferredUntil === undefined
      ? "vigil's automatic retry of this conversation is deferred while it stays"
      : `vigil's automatic retry is deferred to ${new Date(deferredUntil).toISOString()}, and again while it stays`;
  return new VigilError(
    'VIGIL_CHECKPOINT_INVALID',
    `${where}: the retry checkpoint cannot be read because ${problem}; ${deferred}. A finished turn of the conversation clears it; ` +
      'a checkpoint of another version comes from a newer vigil or runtime: run a version that reads it, or remove it.',
  );
}
