/**
 * What makes two records of one trace "the same failure" (DESIGN 3.3, one failure, one
 * occurrence): their failure text once the error-type prefixes and the wrapper text are set
 * aside. A chat span's status `429 Rate limit reached for …` with `error.type` `RateLimitError`,
 * the agent's log `Error: 429 Rate limit reached for …` with its stack, and the AI SDK's
 * `AI_APICallError: Rate limit reached for …` on `ai.generateText` all read `429 Rate limit
 * reached for …` / `Rate limit reached for …` here; `tool run_python failed (attempt 3): Error:
 * KeyError: 'results'` reads `'results'` as the span's exception `KeyError: 'results'` does.
 *
 * A record has up to four such keys (exception message, status message, error text, stack head),
 * so that records match when any of their texts do. The keys only ever compare records of one
 * trace that are also related by their spans and close in time (plan.ts), so they need no
 * masking of volatile parts: the same failure prints the same message in each of its records.
 */
import type { AgentEvent } from '../model/event.ts';
import { hash64 } from '../processors/classify/fingerprint3.ts';
import { unwrap } from '../processors/classify/formats/wrapper.ts';

/** Characters of the canonical text a key is made of. */
const KEY_TEXT_MAX = 200;
/** Canonical texts shorter than this say too little to tie records together (`Error`, `x`). */
const KEY_TEXT_MIN = 4;
/** Keys kept per record. */
const MAX_KEYS = 4;

/**
 * A head `Name: ` or `Name [CODE]: ` (`Uncaught ` allowed before it); it is an error-type head when
 * the name ends like one: `Error: `, `KeyError: `, `AI_APICallError: `, `java.io.IOException: `.
 */
const HEAD = /^(?:Uncaught )?((?:[A-Za-z_$][\w$]*\.)*[A-Za-z_$][\w$]*)(?: \[[A-Z][A-Z0-9_]*\])?:\s+/;
const TYPE_NAME = /(?:Error|Exception|Fault|Failure|Err)$/;

/** The failure keys of a record: short hashes of its canonical failure texts; empty when it names none. */
export function failureKeys(event: AgentEvent): string[] {
  const keys: string[] = [];
  for (const t of failureTexts(event)) {
    const key = keyOfLine(firstLine(t));
    if (key === undefined) continue;
    if (!keys.includes(key)) keys.push(key);
    if (keys.length >= MAX_KEYS) break;
  }
  return keys;
}

/** First lines' keys (null: names no failure) seen lately: a failure's texts recur in its records and in the next failures. */
const KEYS_BY_LINE = new Map<string, string | null>();
/** Lines remembered at most (then forgotten all at once: a cache, not a record), and the longest line remembered. */
const KEYS_BY_LINE_MAX = 4096;
const KEYED_LINE_MAX_CHARS = 1024;

/** The key of a text's first line, as `hash64([canonicalFailure(text)])`; undefined when it names no failure. */
function keyOfLine(line: string | undefined): string | undefined {
  if (line === undefined) return undefined;
  const known = KEYS_BY_LINE.get(line);
  if (known !== undefined) return known ?? undefined;
  const canonical = canonicalLine(line);
  const key = canonical === undefined ? null : hash64([canonical]);
  if (line.length > KEYED_LINE_MAX_CHARS) return key ?? undefined;
  if (KEYS_BY_LINE.size >= KEYS_BY_LINE_MAX) KEYS_BY_LINE.clear();
  KEYS_BY_LINE.set(line, key);
  return key ?? undefined;
}

/**
 * The failure text of a line, with wrapper text (`[retry] attempt 1 failed: `, `tool x failed
 * (attempt 3): `) and error-type heads set aside, whitespace collapsed; undefined when too short.
 */
export function canonicalFailure(text: string): string | undefined {
  return canonicalLine(firstLine(text));
}

/** canonicalFailure of a text's first (non-blank, trimmed) line. */
function canonicalLine(first: string | undefined): string | undefined {
  let line = first;
  if (line === undefined) return undefined;
  line = unwrap(line) ?? line;
  for (let guard = 0; guard < 8; guard++) {
    const m = HEAD.exec(line);
    if (!m || !TYPE_NAME.test(m[1]!) || m[0].length >= line.length) break;
    line = line.slice(m[0].length);
  }
  const canonical = line.replace(/\s+/g, ' ').trim().slice(0, KEY_TEXT_MAX);
  return canonical.length >= KEY_TEXT_MIN ? canonical : undefined;
}

/** The texts a record names its failure by, most specific first: exception message, status message, error text. */
export function failureTexts(event: AgentEvent): string[] {
  const out: string[] = [];
  // A loop, not a closure per record: records are planned on every ingest.
  for (const v of [event.evidence?.exceptionMessage, event.evidence?.statusMessage, errorTextOf(event), event.evidence?.stacktrace]) {
    if (typeof v === 'string' && v.trim() !== '') out.push(v);
  }
  return out;
}

/** The error text of a reference payload: a failed execution's error, a stderr item, a tool result's error or content. */
export function errorTextOf(event: AgentEvent): string | undefined {
  const p = event.payload;
  if (event.kind === 'execution.completed') {
    const outcome = record(p.outcome);
    if (p.state === 'error') return stringOf(outcome.error);
    if (Array.isArray(outcome.output)) {
      for (const item of outcome.output) {
        const o = record(item);
        if (o.name === 'stderr' || o.stream === 'stderr') return stringOf(o.text);
      }
    }
    return undefined;
  }
  if (event.kind === 'tool.result' || event.kind === 'scratchpad') return stringOf(p.error) ?? stringOf(p.content);
  return undefined;
}

/** Whether the record is a failure a trace can hold other records of: an error or a stderr text in a trace. */
export function isTraceFailure(event: AgentEvent): boolean {
  if (event.traceId === undefined || event.forwardOnly) return false;
  const p = event.payload;
  if (event.kind === 'execution.completed') return p.state === 'error' || errorTextOf(event) !== undefined;
  if (event.kind === 'tool.result' || event.kind === 'scratchpad') return p.type === 'tool_result' && p.status === 'error';
  return false;
}

/** A span that ended in error (a failed execution, tool call or model request): what log records and ancestors can be about. */
export function isFailedSpan(event: AgentEvent): boolean {
  if (event.source !== 'otlp.traces') return false;
  const p = event.payload;
  return (event.kind === 'execution.completed' && p.state === 'error') || (event.kind === 'tool.result' && p.status === 'error');
}

function firstLine(text: string): string | undefined {
  for (let start = 0; start < text.length;) {
    const nl = text.indexOf('\n', start);
    const end = nl < 0 ? text.length : nl;
    const line = text.slice(start, end).trim();
    if (line !== '') return line;
    start = end + 1;
  }
  return undefined;
}

function record(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function stringOf(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() !== '' ? v : undefined;
}
