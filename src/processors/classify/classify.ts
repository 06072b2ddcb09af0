/**
 * Diagnosis of one event by either rule set — `vigil` (vigil.ts: detection engine, fingerprint v3)
 * or `reference` (reference.ts: DESIGN 3.1 exactly, fingerprint v1) — with a bounded excerpt of
 * the text the decision came from. Also the per-line logic of `vigil classify` (DESIGN 4.1).
 */
import type { AgentEvent, Diagnosis } from '../../model/event.ts';
import { fingerprint } from './fingerprint.ts';
import { referenceDecision, referenceIdentity } from './reference.ts';
import { vigilDecision } from './vigil.ts';
import { normalizeCase, RUNTIME_ERROR_CASE } from '../../model/runtime-error.ts';
import { errorKindDiagnosis } from './error-kind.ts';

/** Rule sets of the classify processor: `reference` is DESIGN 3.1 exactly; `vigil` goes further. */
export const CLASSIFY_RULES = ['vigil', 'reference'] as const;
export type ClassifyRules = (typeof CLASSIFY_RULES)[number];

/** Longest excerpt kept on a diagnosis, in UTF-16 code units. */
export const EXCERPT_MAX_CHARS = 2000;
const EXCERPT_GAP = '\n…\n';

/**
 * Diagnoses one event. `reference`: DESIGN 3.1's rules exactly (reference.ts) with fingerprint v1
 * of the signature, and on failures the seed's identity (operation, workspace, revision rule). `vigil`: the detection engine and OpenTelemetry evidence (vigil.ts) with the
 * stack-aware fingerprint v3. Throws only when reading the event itself throws (e.g. a getter);
 * the operator catches that.
 */
export function diagnose(event: AgentEvent, rules: ClassifyRules = 'vigil'): Diagnosis {
  if (event.kind === RUNTIME_ERROR_CASE) return caseDiagnosis(event.payload);
  if (rules === 'vigil') {
    const d = vigilDecision(event.kind, event.payload, event.evidence);
    const diagnosis: Diagnosis = { classification: d.classification, signature: d.signature, fingerprint: d.fingerprint };
    if (d.reason !== undefined) diagnosis.reason = d.reason;
    if (d.source !== undefined && d.source !== '') diagnosis.excerpt = excerptOf(d.source);
    return diagnosis;
  }
  const decision = referenceDecision(event.kind, event.payload);
  const signature = decision.signature;
  const diagnosis: Diagnosis = {
    classification: decision.classification,
    signature,
    fingerprint: signature ? fingerprint(signature) : null,
  };
  if (decision.reason !== undefined) diagnosis.reason = decision.reason;
  if (decision.source !== undefined && decision.source !== '') diagnosis.excerpt = excerptOf(decision.source);
  if (signature !== null) diagnosis.identity = referenceIdentity(event.kind, event.payload);
  return diagnosis;
}

/**
 * A runtime error case (from a journal, or sent as a reference event by other means): its error
 * kind's diagnosis (error-kind.ts), the same under both rule sets. A payload that is not a valid
 * case names nothing (Uncertain), with the reason as its excerpt.
 */
function caseDiagnosis(payload: Record<string, unknown>): Diagnosis {
  const r = normalizeCase(payload);
  if (r.ok) return errorKindDiagnosis(r.case, 'reported');
  return { classification: 'Uncertain', signature: null, fingerprint: null, excerpt: `not a runtime error case: ${r.error}` };
}

/**
 * At most 2,000 characters of the source text: the whole text when it fits, else its head and its
 * tail around a `…` line (the first error line tends to be near the top, a traceback's exception
 * at the bottom). Never splits a surrogate pair.
 */
export function excerptOf(text: string, max = EXCERPT_MAX_CHARS): string {
  if (text.length <= max) return text;
  const room = max - EXCERPT_GAP.length;
  const headLen = Math.ceil(room / 2);
  let head = text.slice(0, headLen);
  let tail = text.slice(text.length - (room - headLen));
  if (/[\uD800-\uDBFF]$/.test(head)) head = head.slice(0, -1);
  if (/^[\uDC00-\uDFFF]/.test(tail)) tail = tail.slice(1);
  return head + EXCERPT_GAP + tail;
}

/** One output line of `vigil classify`. */
export interface ClassifiedLine {
  classification: Diagnosis['classification'];
  signature: string | null;
  fingerprint: string | null;
  /** SkippedPeerCall's reason, when the payload has one. */
  reason?: string;
}
/** A malformed line: `line N: what is wrong`. */
export interface MalformedLine {
  error: string;
}
export type ClassifyLineResult = ClassifiedLine | MalformedLine;

/**
 * Classifies one JSONL input line of `vigil classify` (DESIGN 4.1); `lineNo` is 1-based and names
 * the line in error messages. Two input forms:
 * - a reference event `{"kind": string, "payload": object}`;
 * - raw text `{"text": string, "exit_code"?: integer | null}`: a non-zero exit code is a failed
 *   execution whose error output is the text; 0, null or absent is a successful execution that
 *   wrote the text to stderr.
 * Other keys are ignored. A line that is not JSON, not an object, has both or neither form, or has
 * a field of the wrong type yields `{error: "line N: …"}`. Never throws.
 */
export function classifyLine(line: string, lineNo: number, rules: ClassifyRules = 'vigil'): ClassifyLineResult {
  const fail = (message: string): MalformedLine => ({ error: `line ${lineNo}: ${message}` });
  try {
    if (typeof line !== 'string' || line.trim() === '') return fail('empty line; expected a JSON object');
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      return fail(`not valid JSON (${clip(err instanceof Error ? err.message : String(err), 160)})`);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      return fail(`expected a JSON object, got ${describe(value)}`);
    }
    const input = value as Record<string, unknown>;
    const hasKind = Object.hasOwn(input, 'kind');
    const hasText = Object.hasOwn(input, 'text');
    if (hasKind && hasText) return fail('has both "kind" and "text"; use {"kind", "payload"} or {"text", "exit_code"}');
    if (!hasKind && !hasText) {
      return fail('expected a reference event {"kind": ..., "payload": {...}} or raw text {"text": ..., "exit_code": N}');
    }
    let kind: string;
    let payload: Record<string, unknown>;
    if (hasKind) {
      if (typeof input.kind !== 'string') return fail(`"kind" must be a string, got ${describe(input.kind)}`);
      if (!Object.hasOwn(input, 'payload')) return fail('"payload" is required with "kind"');
      const p = input.payload;
      if (typeof p !== 'object' || p === null || Array.isArray(p)) return fail(`"payload" must be an object, got ${describe(p)}`);
      kind = input.kind;
      payload = p as Record<string, unknown>;
    } else {
      if (typeof input.text !== 'string') return fail(`"text" must be a string, got ${describe(input.text)}`);
      const code = input.exit_code;
      if (code !== undefined && code !== null && !(typeof code === 'number' && Number.isInteger(code))) {
        return fail(`"exit_code" must be an integer, got ${describe(code)}`);
      }
      kind = 'execution.completed';
      payload =
        typeof code === 'number' && code !== 0
          ? { state: 'error', outcome: { error: input.text, exit_code: code } }
          : { state: 'ok', outcome: { output: [{ output_type: 'stream', name: 'stderr', text: input.text }] } };
    }
    const d = diagnose(syntheticEvent(kind, payload, lineNo), rules);
    const out: ClassifiedLine = { classification: d.classification, signature: d.signature, fingerprint: d.fingerprint };
    if (d.reason !== undefined) out.reason = d.reason;
    return out;
  } catch (err) {
    return fail(`could not classify (${clip(err instanceof Error ? err.message : String(err), 160)})`);
  }
}

function syntheticEvent(kind: string, payload: Record<string, unknown>, lineNo: number): AgentEvent {
  return { eventId: `line:${lineNo}`, kind, payload, partition: '', time: 0, service: '', source: 'jsonl' };
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return `the string ${JSON.stringify(clip(value, 40))}`;
  return `${typeof value} ${String(value as number | boolean)}`;
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
