/**
 * The reference observer's classification (DESIGN 3.1, seed 000), transcribed literally:
 * `classify: { rules: reference }`. Each function below is one function of the seed, in its order
 * and with its oddities; nothing here is shared with the vigil rules (STYLE 17), and nothing is
 * "fixed". Where the seed's text reads oddly, the oddity is the rule:
 *
 * - A tool result's text is `payload.error` when it is a string — even an empty or blank one (then
 *   the signature is `ToolError`, never `payload.content`'s) — else `payload.content`.
 * - A text is a traceback when it *contains* `Traceback (most recent call last):` anywhere (also
 *   `log: Traceback …`, `+ Exception Group Traceback …`); its signature is its last non-empty line.
 * - The head of a line is its part before the first `:`, taken as it stands (not trimmed); a line
 *   without a colon has no head. `Error`/`Exception`/`Warning` suffixes compare case-sensitively,
 *   equality with `error`/`fatal`/`panic` case-insensitively.
 * - Lines are Rust's `str::lines()`: split on `\n` (a `\r` before it goes too); a lone `\r` splits
 *   nothing. Trimming and whitespace are Rust's too: Unicode `White_Space` (so U+0085 is
 *   whitespace and U+FEFF is not, unlike JavaScript's `trim`).
 * - A signature is the line whitespace-collapsed, then its first 96 characters (Unicode scalar
 *   values) as they fall: a space the cut leaves at the end stays.
 * - Warnings compare the lower-cased trimmed line; the `…warning` head needs a colon.
 * - Types are JSON's: a field of another type than the seed reads (a list for a text, a number for
 *   a state) reads as absent.
 *
 * The seed's identity rules (operation and workspace naming, revision resolution) are here too:
 * `referenceIdentity` names what the recurrence processor groups a reference failure by.
 */
import type { Classification, ReferenceIdentity } from '../../model/event.ts';

/** Signature of a failed execution whose error text names nothing. */
const EXECUTION_ERROR = 'ExecutionError';
/** Signature of a failed tool call whose text names nothing. */
const TOOL_ERROR = 'ToolError';
const TRACEBACK = 'Traceback (most recent call last):';
const SIGNATURE_CHARS = 96;

/** What the reference rules say about one event. */
export interface ReferenceResult {
  classification: Classification;
  /** Present for ExecutionFailure and RecoveredError, null otherwise. */
  signature: string | null;
  /** SkippedPeerCall only: `payload.reason` when it is a string. */
  reason?: string;
}

/** A reference result together with the text it was decided from (for the excerpt). */
export interface ReferenceDecision extends ReferenceResult {
  source?: string;
}

/** The reference classification of an event. */
export function classifyReference(kind: string, payload: Record<string, unknown>): ReferenceResult {
  const { source: _source, ...result } = referenceDecision(kind, payload);
  return result;
}

/** The reference classification of an event, with the text it was decided from. */
export function referenceDecision(kind: unknown, payload: unknown): ReferenceDecision {
  const p = object(payload);
  if (kind === 'execution.completed') {
    const outcome = object(p.outcome);
    if (p.state === 'error') {
      const error = string(outcome.error);
      return { classification: 'ExecutionFailure', signature: signatureOr(error, EXECUTION_ERROR), source: error };
    }
    const stderr = firstStderr(outcome.output);
    if (stderr === undefined) return { classification: 'NormalOutput', signature: null };
    const signature = errorSignature(stderr);
    if (signature !== '') return { classification: 'RecoveredError', signature, source: stderr };
    if (isWarning(stderr)) return { classification: 'StderrWarning', signature: null, source: stderr };
    return { classification: 'Uncertain', signature: null, source: stderr };
  }
  if ((kind === 'tool.result' || kind === 'scratchpad') && p.type === 'tool_result') {
    if (p.status === 'skipped') {
      const d: ReferenceDecision = { classification: 'SkippedPeerCall', signature: null };
      if (typeof p.reason === 'string') d.reason = p.reason;
      return d;
    }
    if (p.status === 'error') {
      const text = typeof p.error === 'string' ? p.error : string(p.content);
      return { classification: 'ExecutionFailure', signature: signatureOr(text, TOOL_ERROR), source: text };
    }
  }
  return { classification: 'NormalOutput', signature: null };
}

/** The error signature, else the first non-empty line, else the fallback. */
function signatureOr(text: string, fallback: string): string {
  const signature = errorSignature(text);
  if (signature !== '') return signature;
  for (const line of lines(text)) {
    const t = trim(line);
    if (t !== '') return clean(t);
  }
  return fallback;
}

/** The text of the first `stderr` item of `outcome.output[]` whose text is not empty (trimmed). */
function firstStderr(output: unknown): string | undefined {
  if (!Array.isArray(output)) return undefined;
  for (const item of output) {
    const o = object(item);
    if (o.name !== 'stderr') continue;
    const text = string(o.text);
    if (trim(text) !== '') return text;
  }
  return undefined;
}

/** DESIGN 3.1's error signature; empty when the text names no error. */
export function referenceSignature(text: string): string {
  return errorSignature(typeof text === 'string' ? text : '');
}

function errorSignature(text: string): string {
  if (trim(text) === '') return '';
  const all = lines(text).map(trim);
  if (text.includes(TRACEBACK)) {
    for (let i = all.length - 1; i >= 0; i--) if (all[i] !== '') return clean(all[i]!);
    return '';
  }
  for (const line of all) {
    const colon = line.indexOf(':');
    if (colon >= 0) {
      const head = line.slice(0, colon);
      const lower = head.toLowerCase();
      if ((head.endsWith('Error') || head.endsWith('Exception') || lower === 'error' || lower === 'fatal' || lower === 'panic') && !head.endsWith('Warning')) {
        return clean(line);
      }
    }
    if (line.startsWith('error:') || line.startsWith('fatal:') || line.startsWith('panic:')) return clean(line);
  }
  return '';
}

/** Whether any line of the text is a warning by DESIGN 3.1. */
export function isReferenceWarning(text: string): boolean {
  return isWarning(typeof text === 'string' ? text : '');
}

function isWarning(text: string): boolean {
  for (const raw of lines(text)) {
    const line = trim(raw).toLowerCase();
    if (line.startsWith('warning:') || line.startsWith('warn:') || line.startsWith('[warning]')) return true;
    if (
      line.includes('warning:') ||
      line.includes('userwarning:') ||
      line.includes('deprecationwarning:') ||
      line.includes('syntaxwarning:') ||
      line.includes('runtimewarning:') ||
      line.includes('futurewarning:')
    ) {
      return true;
    }
    const colon = line.indexOf(':');
    if (colon >= 0 && line.slice(0, colon).endsWith('warning')) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Identity (DESIGN 3.3 as the seed applies it)

/**
 * How the seed groups a failure: by the kind of work that failed — `cell.execution` for an
 * execution, `tool.execution` for a tool result — and the workspace it ran in (`payload.workspace`,
 * else `payload.workspace_path`; absent when neither is a non-empty string).
 */
export function referenceIdentity(kind: unknown, payload: unknown): ReferenceIdentity {
  const p = object(payload);
  const identity: ReferenceIdentity = { rules: 'reference', operation: kind === 'execution.completed' ? 'cell.execution' : 'tool.execution' };
  const workspace = nonEmpty(p.workspace) ?? nonEmpty(p.workspace_path);
  if (workspace !== undefined) identity.workspace = workspace;
  return identity;
}

// ---------------------------------------------------------------------------------------------
// The seed's text primitives (Rust's `str` methods)

const EDGE_SPACE = /^\p{White_Space}+|\p{White_Space}+$/gu;
const SPACE_RUN = /\p{White_Space}+/u;

/** `str::trim`. */
function trim(s: string): string {
  return s.replace(EDGE_SPACE, '');
}

/** `str::lines`: split on `\n`, a `\r` before it removed; no empty line after a final `\n`. */
function lines(s: string): string[] {
  if (s === '') return [];
  const parts = s.split('\n');
  if (parts[parts.length - 1] === '') parts.pop();
  for (let i = 0; i < parts.length; i++) if (parts[i]!.endsWith('\r')) parts[i] = parts[i]!.slice(0, -1);
  return parts;
}

/** `split_whitespace().join(" ")`, then `chars().take(96)`. */
function clean(s: string): string {
  const collapsed = s
    .split(SPACE_RUN)
    .filter((w) => w !== '')
    .join(' ');
  if (collapsed.length <= SIGNATURE_CHARS) return collapsed;
  let out = '';
  let n = 0;
  for (const ch of collapsed) {
    if (n === SIGNATURE_CHARS) break;
    out += ch;
    n++;
  }
  return out;
}

function object(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function string(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function nonEmpty(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}
