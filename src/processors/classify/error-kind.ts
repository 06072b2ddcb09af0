/**
 * Error kinds as first-class classification (DESIGN 3.5): the diagnosis of a runtime error case,
 * whether a runtime wrote it to its journal or vigil's detectors derived it from traces, so that
 * both name and identify the same failure the same way.
 *
 * - class: `ExecutionFailure` (a case reports a failure that happened);
 * - operation: the kind (the recurrence processor groups by it);
 * - signature: `<kind>: <telling line>`, the telling line being what the vigil rules name in the
 *   observation's evidence (else its actual behaviour) — `invalid_tool_args: ZodError: …`; the kind
 *   alone when the case says nothing;
 * - fingerprint: `v3:` + a hash of the kind and the v3 fingerprint of the evidence, so volatile
 *   parts are masked exactly as for any failure. The evidence is first compacted as the reference
 *   runtime compacts it before writing (whitespace runs collapsed, cut to 1,200 characters): a
 *   case written by the runtime and the same failure seen in a span, multi-line, are one identity.
 *
 * The same for both rule sets: the reference rules know no error kinds, and a case says what it is.
 */
import type { Diagnosis } from '../../model/event.ts';
import type { RuntimeErrorCase } from '../../model/runtime-error.ts';
import { excerptOf } from './classify.ts';
import { versionedHash64 } from './fingerprint3.ts';
import { vigilDecision } from './vigil.ts';

/** The reference runtime's cut of `observation.evidence` (`compact_runtime_error_text(…, 1200)`). */
export const EVIDENCE_MAX_CHARS = 1200;

/** The text a case is named and identified by: its evidence, else its actual behaviour. */
export function tellingText(c: RuntimeErrorCase): string {
  const { evidence, actual_behavior } = c.observation;
  if (typeof evidence === 'string' && evidence.trim() !== '') return evidence;
  return typeof actual_behavior === 'string' ? actual_behavior : '';
}

/**
 * Whitespace runs collapsed to one space, cut to 1,200 characters (code points) with `...` after
 * a cut — what the reference runtime writes as a case's evidence. Idempotent on its own output.
 */
export function compactEvidence(text: string, max = EVIDENCE_MAX_CHARS): string {
  const compact = text
    .split(/\s+/)
    .filter((w) => w !== '')
    .join(' ');
  const chars = [...compact];
  if (chars.length <= max) return compact;
  if (compact.endsWith('...') && chars.length <= max + 3) return compact;
  return chars.slice(0, max).join('') + '...';
}

/** The diagnosis of a normalized case; `origin` says who found it. */
export function errorKindDiagnosis(c: RuntimeErrorCase, origin: 'reported' | 'detected'): Diagnosis {
  const text = tellingText(c);
  const named = text.trim() === '' ? undefined : vigilDecision('execution.completed', { state: 'error', outcome: { error: text } });
  const compact = text.trim() === '' ? '' : compactEvidence(text);
  const identity = compact === '' ? '' : (vigilDecision('execution.completed', { state: 'error', outcome: { error: compact } }).fingerprint ?? '');
  const diagnosis: Diagnosis = {
    classification: 'ExecutionFailure',
    signature: named?.signature ? `${c.error_kind}: ${named.signature}` : c.error_kind,
    fingerprint: kindFingerprint(c.error_kind, identity),
    errorKind: { kind: c.error_kind, severity: c.severity, detectedBy: c.detected_by, origin },
  };
  if (text.trim() !== '') diagnosis.excerpt = excerptOf(text);
  return diagnosis;
}

/** `v3:` + 16 hex digits over the kind and the evidence's own fingerprint. */
export function kindFingerprint(kind: string, evidenceFingerprint: string): string {
  return versionedHash64(['kind', kind, evidenceFingerprint]);
}
