/**
 * The reference rules of DESIGN 3.1, kept exact: the classification and error signature the
 * reference agent runtimes compute. They are the floor vigil builds on and stay available as a
 * baseline (`classify: { rules: reference }`). Pure functions; they never throw on JSON-shaped
 * input (non-string fields, missing objects, arrays, nulls all read as "absent").
 *
 * Where DESIGN 3.1 is silent, these choices hold (and are pinned by test/classify-reference.test.ts):
 *
 * - Lines are split on `\r\n`, `\r` and `\n`. Each line is trimmed before it is tested; a line that
 *   is empty after trimming is "empty".
 * - "A Python traceback" is a text with a line that, trimmed, is exactly
 *   `Traceback (most recent call last):` (case-sensitive). Its signature is the text's last
 *   non-empty line, whatever that line says.
 * - "The part before the first `:`" is the trimmed line up to its first colon, trimmed again; a line
 *   without a colon is all head (Python's `line.split(':', 1)[0]`).
 * - The `Error`/`Exception` suffix is case-sensitive (`RuntimeError`, `java.io.IOException`; not
 *   `terror`, not `Unhandled exception`). Equality with `error`/`fatal`/`panic` is
 *   case-insensitive (`ERROR: x`, `Fatal: x`), and so is the `error:`/`fatal:`/`panic:` prefix
 *   rule, which trimmed lines make a special case of the equality rule (kept for fidelity).
 * - "Does not end with `Warning`" applies to the head, like the other two tests of the sentence.
 *   With a case-sensitive `Error` suffix it can never reject anything; it is kept as written.
 * - Collapsing replaces each run of whitespace (JS `\s`, Unicode spaces included) with one space
 *   and trims; the cut to 96 then counts code points (a surrogate pair is never split) and any
 *   trailing space the cut leaves is dropped, so a signature never starts or ends with whitespace.
 * - Warnings: every form is matched case-insensitively on the trimmed line (the reference lists
 *   `userwarning:` in lower case, so it compares lower-cased text). `contains warning:` subsumes
 *   the `warning:` prefix and the five `…warning:` forms; they are listed for fidelity.
 */
import type { Classification } from '../../model/event.ts';

/** Longest signature, in code points. */
export const SIGNATURE_MAX_CHARS = 96;
/** Signature of a failed execution whose error text is empty. */
export const EXECUTION_ERROR_FALLBACK = 'ExecutionError';
/** Signature of a failed tool call whose error and content are empty. */
export const TOOL_ERROR_FALLBACK = 'ToolError';

const TRACEBACK_HEADER = 'Traceback (most recent call last):';
const BARE_ERROR_HEADS = new Set(['error', 'fatal', 'panic']);
const ERROR_PREFIXES = ['error:', 'fatal:', 'panic:'];
const WARNING_PREFIXES = ['warning:', 'warn:', '[warning]'];
const WARNING_INFIXES = ['warning:', 'userwarning:', 'deprecationwarning:', 'syntaxwarning:', 'runtimewarning:', 'futurewarning:'];
const TOOL_KINDS = new Set(['tool.result', 'scratchpad']);

/** What the reference rules say about one event. */
export interface ReferenceResult {
  classification: Classification;
  /** Present for ExecutionFailure and RecoveredError, null otherwise. */
  signature: string | null;
  /** SkippedPeerCall only: `payload.reason` when it is a string. */
  reason?: string;
}

/** A reference result together with the text it was decided from (for excerpts and extensions). */
export interface ReferenceDecision extends ReferenceResult {
  /** The text the decision came from: the error output, the stderr item, the tool error/content. */
  source?: string;
  /**
   * How the signature was found: `rules` (error-signature rules), `first-line` (the first non-empty
   * line, because the rules found nothing) or `default` (ExecutionError / ToolError).
   */
  signatureFrom?: 'rules' | 'first-line' | 'default';
}

/** Splits text into lines on `\r\n`, `\r` or `\n`. */
export function splitLines(text: string): string[] {
  return text.split(/\r\n|\r|\n/);
}

/** Collapses whitespace runs to one space, trims, and cuts to 96 code points (DESIGN 3.1). */
export function collapseAndCut(text: string, max = SIGNATURE_MAX_CHARS): string {
  const collapsed = text.replace(/\s+/g, ' ').trim();
  if (collapsed.length <= max) return collapsed;
  let out = '';
  let count = 0;
  for (const ch of collapsed) {
    if (count === max) break;
    out += ch;
    count++;
  }
  return out.trimEnd();
}

/** The first non-empty line, collapsed and cut; empty when the text has none. */
export function firstNonEmptyLine(text: string): string {
  for (const line of splitLines(text)) {
    if (line.trim() !== '') return collapseAndCut(line);
  }
  return '';
}

function lastNonEmptyLine(lines: readonly string[]): string {
  for (let i = lines.length - 1; i >= 0; i--) {
    if (lines[i]!.trim() !== '') return lines[i]!;
  }
  return '';
}

/** The part of a trimmed line before its first `:`, trimmed; the whole line when it has none. */
function headOf(line: string): string {
  const colon = line.indexOf(':');
  return (colon < 0 ? line : line.slice(0, colon)).trim();
}

function isErrorLine(line: string): boolean {
  const head = headOf(line);
  const headMatches =
    (head.endsWith('Error') || head.endsWith('Exception') || BARE_ERROR_HEADS.has(head.toLowerCase())) &&
    !head.endsWith('Warning');
  if (headMatches) return true;
  const lower = line.toLowerCase();
  return ERROR_PREFIXES.some((p) => lower.startsWith(p));
}

/**
 * The reference error signature of a text: empty for empty text; for a Python traceback its last
 * non-empty line; otherwise the first line that names an error (see the module comment), or empty.
 * Collapsed and cut to 96 characters.
 */
export function referenceSignature(text: string): string {
  if (typeof text !== 'string' || text === '') return '';
  const lines = splitLines(text);
  if (lines.some((l) => l.trim() === TRACEBACK_HEADER)) return collapseAndCut(lastNonEmptyLine(lines));
  for (const raw of lines) {
    const line = raw.trim();
    if (line !== '' && isErrorLine(line)) return collapseAndCut(line);
  }
  return '';
}

function isWarningLine(line: string): boolean {
  const lower = line.toLowerCase();
  if (WARNING_PREFIXES.some((p) => lower.startsWith(p))) return true;
  if (WARNING_INFIXES.some((p) => lower.includes(p))) return true;
  return headOf(lower).endsWith('warning');
}

/** Whether any line of the text is a warning by the reference rules (case-insensitive). */
export function isReferenceWarning(text: string): boolean {
  if (typeof text !== 'string' || text === '') return false;
  for (const raw of splitLines(text)) {
    const line = raw.trim();
    if (line !== '' && isWarningLine(line)) return true;
  }
  return false;
}

/** The reference classification of an event (DESIGN 3.1), without the decision's source text. */
export function classifyReference(kind: string, payload: Record<string, unknown>): ReferenceResult {
  const { source: _source, signatureFrom: _from, ...result } = referenceDecision(kind, payload);
  return result;
}

/** The reference classification of an event, with the text it was decided from. */
export function referenceDecision(kind: unknown, payload: unknown): ReferenceDecision {
  const p = asRecord(payload);
  if (kind === 'execution.completed') return executionDecision(p);
  if (typeof kind === 'string' && TOOL_KINDS.has(kind) && p.type === 'tool_result') return toolDecision(p);
  return { classification: 'NormalOutput', signature: null };
}

function executionDecision(p: Record<string, unknown>): ReferenceDecision {
  const outcome = asRecord(p.outcome);
  if (p.state === 'error') {
    const source = textOf(outcome.error, '\n');
    return { classification: 'ExecutionFailure', ...signatureWithFallback(source, EXECUTION_ERROR_FALLBACK), source };
  }
  const stderr = firstStderrText(outcome.output);
  if (stderr === undefined) return { classification: 'NormalOutput', signature: null };
  const signature = referenceSignature(stderr);
  if (signature !== '') return { classification: 'RecoveredError', signature, signatureFrom: 'rules', source: stderr };
  if (isReferenceWarning(stderr)) return { classification: 'StderrWarning', signature: null, source: stderr };
  return { classification: 'Uncertain', signature: null, source: stderr };
}

function toolDecision(p: Record<string, unknown>): ReferenceDecision {
  if (p.status === 'skipped') {
    const d: ReferenceDecision = { classification: 'SkippedPeerCall', signature: null };
    if (typeof p.reason === 'string') d.reason = p.reason;
    return d;
  }
  if (p.status === 'error') {
    // `payload.error or payload.content`: the error text when it has any content, else the content.
    const error = textOf(p.error, '\n');
    const source = error.trim() !== '' ? error : textOf(p.content, '\n');
    return { classification: 'ExecutionFailure', ...signatureWithFallback(source, TOOL_ERROR_FALLBACK), source };
  }
  return { classification: 'NormalOutput', signature: null };
}

function signatureWithFallback(text: string, fallback: string): Pick<ReferenceDecision, 'signature' | 'signatureFrom'> {
  const signature = referenceSignature(text);
  if (signature !== '') return { signature, signatureFrom: 'rules' };
  const first = firstNonEmptyLine(text);
  if (first !== '') return { signature: first, signatureFrom: 'first-line' };
  return { signature: fallback, signatureFrom: 'default' };
}

/**
 * The text of the first stderr item of `outcome.output[]` whose text is not blank; undefined when
 * there is none. An item is stderr when `name === 'stderr'` (Jupyter/nbformat stream outputs:
 * `{output_type: 'stream', name: 'stderr', text}`) or `stream === 'stderr'`. Its `text` is a string
 * or, as nbformat allows, a list of strings that is joined without a separator.
 */
export function firstStderrText(output: unknown): string | undefined {
  if (!Array.isArray(output)) return undefined;
  for (const item of output) {
    const rec = asRecord(item);
    if (rec.name !== 'stderr' && rec.stream !== 'stderr') continue;
    const text = textOf(rec.text, '');
    if (text.trim() !== '') return text;
  }
  return undefined;
}

/**
 * Reads a text field: a string as is; a list of strings and of `{type: 'text', text}` content
 * blocks (tool_result content) joined with `joiner`; anything else is empty.
 */
export function textOf(value: unknown, joiner: string): string {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) return '';
  const parts: string[] = [];
  for (const v of value) {
    if (typeof v === 'string') parts.push(v);
    else {
      const rec = asRecord(v);
      if (typeof rec.text === 'string' && (rec.type === undefined || rec.type === 'text')) parts.push(rec.text);
    }
  }
  return parts.join(joiner);
}

const EMPTY: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

export function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : EMPTY;
}
