/**
 * The `vigil` rule set: DESIGN 3.1's classes and decision structure, with the detection engine
 * (detect.ts) in place of the reference signature and warning rules, and OpenTelemetry evidence
 * (exception type/message, `error.type`, status message, log severity) where the text says less.
 *
 * - A failed execution (`state: error`) or tool call (`status: error`) is ExecutionFailure named by
 *   the most telling failure in its text; without one, by the evidence's `type: message`; without
 *   that, by the signal that killed it (exit status 128 + n: `SIGSEGV` for 139); without that, by
 *   the text's first non-empty line that is not a warning (framed: no colour codes, no timestamp);
 *   without that, `ExecutionError` / `ToolError`, identified with the exit status when known.
 * - A successful execution's first non-empty stderr item: a real failure → RecoveredError;
 *   otherwise a warning (or WARN log severity) → StderrWarning; otherwise Uncertain.
 * - Skipped tool calls and everything else: as the reference rules.
 */
import type { Classification, Evidence } from '../../model/event.ts';
import { detect } from './detect.ts';
import { Rank, type FailureKey } from './finding.ts';
import { fingerprintV3 } from './fingerprint3.ts';
import { frameLines } from './frame.ts';
import { isWarningLine } from './formats/warning.ts';
import { asRecord, collapseAndCut, EXECUTION_ERROR_FALLBACK, firstStderrText, SIGNATURE_MAX_CHARS, textOf, TOOL_ERROR_FALLBACK } from './text.ts';

/** A vigil decision: class, signature and fingerprint, and the text it was made from. */
export interface VigilDecision {
  classification: Classification;
  signature: string | null;
  fingerprint: string | null;
  reason?: string;
  source?: string;
  /** The format that recognised the failure (`python`, `node`, …; `evidence`, `first-line`, `default` for fallbacks). */
  format?: string;
}

const TOOL_KINDS = new Set(['tool.result', 'scratchpad']);
/** OTLP SeverityNumber 13..16 is WARN. */
const SEVERITY_WARN_MIN = 13;
const SEVERITY_WARN_MAX = 16;

/** Decides an event by the vigil rules. */
export function vigilDecision(kind: unknown, payload: unknown, evidence?: Evidence): VigilDecision {
  const p = asRecord(payload);
  if (kind === 'execution.completed') {
    const outcome = asRecord(p.outcome);
    if (p.state === 'error') return failed(textOf(outcome.error, '\n'), EXECUTION_ERROR_FALLBACK, evidence, exitStatusOf(p, outcome));
    const stderr = firstStderrText(outcome.output);
    if (stderr === undefined) return { classification: 'NormalOutput', signature: null, fingerprint: null };
    const found = detect(stderr);
    // A hint names a failure only in a run that failed.
    if (found.failure && found.failure.rank !== Rank.Hint) {
      return named('RecoveredError', found.failure.signature, found.failure.key, stderr, found.failure.format);
    }
    if (found.warning || isWarnSeverity(evidence)) return { classification: 'StderrWarning', signature: null, fingerprint: null, source: stderr };
    return { classification: 'Uncertain', signature: null, fingerprint: null, source: stderr };
  }
  if (typeof kind === 'string' && TOOL_KINDS.has(kind) && p.type === 'tool_result') {
    if (p.status === 'error') {
      // A blank error string says nothing: the content is read instead (the reference reads only the error).
      const error = textOf(p.error, '\n');
      return failed(error.trim() !== '' ? error : textOf(p.content, '\n'), TOOL_ERROR_FALLBACK, evidence, exitStatusOf(p, asRecord(p.outcome)));
    }
    if (p.status === 'skipped') {
      const d: VigilDecision = { classification: 'SkippedPeerCall', signature: null, fingerprint: null };
      if (typeof p.reason === 'string') d.reason = p.reason;
      return d;
    }
  }
  return { classification: 'NormalOutput', signature: null, fingerprint: null };
}

function failed(source: string, fallback: string, evidence: Evidence | undefined, exitStatus: number | undefined): VigilDecision {
  const found = detect(source);
  if (found.failure) return named('ExecutionFailure', found.failure.signature, found.failure.key, source, found.failure.format);
  const fromEvidence = evidenceSignature(evidence);
  if (fromEvidence) return named('ExecutionFailure', fromEvidence, { kind: 'text', text: fromEvidence }, source, 'evidence');
  const signal = exitStatus === undefined ? undefined : signalOf(exitStatus);
  if (signal) return named('ExecutionFailure', signal, { kind: 'status', name: signal }, source, 'signal');
  const first = firstLine(source);
  if (first) return named('ExecutionFailure', first, { kind: 'text', text: first }, source, 'first-line');
  // Nothing names it: the exit status is all a silent failure says (grep's 1 is not a guard's 3).
  const key: FailureKey = exitStatus === undefined ? { kind: 'status', name: fallback } : { kind: 'status', name: fallback, code: exitStatus };
  return named('ExecutionFailure', fallback, key, source, 'default');
}

/** A named failure: the signature (collapsed, cut to 96) and the v3 fingerprint of its key. */
function named(classification: Classification, signature: string, key: FailureKey, source: string, format: string): VigilDecision {
  return { classification, signature: toSignature(signature), fingerprint: fingerprintV3(key), source, format };
}

/** Linux signal names by number: an exit status of 128 + n is a death by signal n. */
const SIGNAL_NAMES = [
  '',
  'SIGHUP',
  'SIGINT',
  'SIGQUIT',
  'SIGILL',
  'SIGTRAP',
  'SIGABRT',
  'SIGBUS',
  'SIGFPE',
  'SIGKILL',
  'SIGUSR1',
  'SIGSEGV',
  'SIGUSR2',
  'SIGPIPE',
  'SIGALRM',
  'SIGTERM',
  'SIGSTKFLT',
  'SIGCHLD',
  'SIGCONT',
  'SIGSTOP',
  'SIGTSTP',
  'SIGTTIN',
  'SIGTTOU',
  'SIGURG',
  'SIGXCPU',
  'SIGXFSZ',
  'SIGVTALRM',
  'SIGPROF',
  'SIGWINCH',
  'SIGIO',
  'SIGPWR',
  'SIGSYS',
];

/** `SIGSEGV` for 139 (128 + 11), … ; undefined for other statuses. */
export function signalOf(exitStatus: number): string | undefined {
  const n = exitStatus - 128;
  return n >= 1 && n < SIGNAL_NAMES.length ? SIGNAL_NAMES[n] : undefined;
}

/**
 * The exit status of a failed execution, when the payload gives one: `outcome.exit_code`, else
 * `payload.exit_code` (`vigil classify` passes a raw text's `exit_code` this way).
 */
function exitStatusOf(p: Record<string, unknown>, outcome: Record<string, unknown>): number | undefined {
  for (const v of [outcome.exit_code, p.exit_code]) if (typeof v === 'number' && Number.isInteger(v) && v !== 0) return v;
  return undefined;
}

// Whitespace other than single inner spaces: only then is the full collapse needed.
const NEEDS_COLLAPSE = /[\t\n\v\f\r\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]| {2}|^ | $/;

const SURROGATE = /[\uD800-\uDFFF]/;

/**
 * DESIGN 3.1's signature form, exactly `collapseAndCut` (whitespace collapsed, 96 code points, no
 * trailing space) but without its per-character loop when no surrogate pair is near the cut.
 * Never empty: a text of only whitespace is named by its JSON form.
 */
export function toSignature(text: string): string {
  const collapsed = NEEDS_COLLAPSE.test(text) ? text.replace(/\s+/g, ' ').trim() : text;
  if (collapsed.length <= SIGNATURE_MAX_CHARS) return collapsed || collapseAndCut(JSON.stringify(text));
  const head = collapsed.slice(0, SIGNATURE_MAX_CHARS + 1);
  return SURROGATE.test(head) ? collapseAndCut(collapsed) : head.slice(0, SIGNATURE_MAX_CHARS).trimEnd();
}

/**
 * The first non-empty framed line (colour codes and timestamps removed) that is not a warning — a
 * warning printed before the failure does not name it; when every line warns, the first.
 */
function firstLine(text: string): string {
  if (typeof text !== 'string' || text.trim() === '') return '';
  let first = '';
  for (const line of frameLines(text.length > 65536 ? text.slice(0, 65536) : text)) {
    const t = line.trim();
    if (t === '') continue;
    if (!isWarningLine(t)) return line;
    if (first === '') first = line;
  }
  return first;
}

/**
 * `exception.type: exception.message`; else `error.type: status message` (or either alone) —
 * what structured telemetry says when the text names nothing.
 */
function evidenceSignature(evidence: Evidence | undefined): string | undefined {
  if (typeof evidence !== 'object' || evidence === null) return undefined;
  const str = (v: unknown) => (typeof v === 'string' ? v.trim() : '');
  const type = str(evidence.exceptionType);
  if (type) {
    const message = str(evidence.exceptionMessage);
    return message ? `${type}: ${message}` : type;
  }
  const errorType = str(evidence.errorType);
  const status = str(evidence.statusMessage);
  if (errorType && status) return status.startsWith(errorType) ? status : `${errorType}: ${status}`;
  return errorType || status || undefined;
}

function isWarnSeverity(evidence: Evidence | undefined): boolean {
  const n = evidence?.severityNumber;
  if (typeof n === 'number' && n > 0) return n >= SEVERITY_WARN_MIN && n <= SEVERITY_WARN_MAX;
  const text = typeof evidence?.severityText === 'string' ? evidence.severityText.trim().toUpperCase() : '';
  return text === 'WARN' || text === 'WARNING';
}
