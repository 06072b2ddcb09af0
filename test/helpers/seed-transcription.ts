/**
 * A second, independent transcription of the reference observer's classification (DESIGN 3.1),
 * written from the design's text alone — not from src/processors/classify/reference.ts — so that a
 * property test can hold the port to the text. Deliberately plain: no shared helpers, no speed
 * tricks. The seed is Rust, so "whitespace" is Unicode White_Space (`char::is_whitespace`),
 * "characters" are Unicode scalar values (`chars()`), and lines are `str::lines()`.
 */

export interface SeedDecision {
  classification: 'ExecutionFailure' | 'RecoveredError' | 'StderrWarning' | 'SkippedPeerCall' | 'Uncertain' | 'NormalOutput';
  signature: string | null;
  reason?: string;
}

const WS = /^\p{White_Space}$/u;

function isWs(ch: string): boolean {
  return WS.test(ch);
}

/** Rust `str::trim`: strips White_Space at both ends. */
function rustTrim(s: string): string {
  const chars = Array.from(s);
  let a = 0;
  let b = chars.length;
  while (a < b && isWs(chars[a]!)) a++;
  while (b > a && isWs(chars[b - 1]!)) b--;
  return chars.slice(a, b).join('');
}

/** Rust `str::lines`: split on `\n`, drop one `\r` before each `\n` and at the very end, no trailing empty line. */
function rustLines(s: string): string[] {
  if (s === '') return [];
  const parts = s.split('\n');
  if (parts[parts.length - 1] === '') parts.pop();
  return parts.map((p) => (p.endsWith('\r') ? p.slice(0, -1) : p));
}

/** `split_whitespace().collect::<Vec<_>>().join(" ")` */
function collapse(s: string): string {
  const words: string[] = [];
  let cur = '';
  for (const ch of s) {
    if (isWs(ch)) {
      if (cur !== '') words.push(cur);
      cur = '';
    } else cur += ch;
  }
  if (cur !== '') words.push(cur);
  return words.join(' ');
}

/** `chars().take(96).collect()` */
function first96(s: string): string {
  return Array.from(s).slice(0, 96).join('');
}

function clean(line: string): string {
  return first96(collapse(line));
}

/** The error signature of DESIGN 3.1 ("the floor, not the ceiling"); '' when none. */
export function seedErrorSignature(text: string): string {
  if (rustTrim(text) === '') return '';
  const lines = rustLines(text).map(rustTrim);
  if (text.includes('Traceback (most recent call last):')) {
    for (let i = lines.length - 1; i >= 0; i--) {
      if (lines[i] !== '') return clean(lines[i]!);
    }
    return '';
  }
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon >= 0) {
      const head = line.slice(0, colon);
      const lowerHead = head.toLowerCase();
      const named = head.endsWith('Error') || head.endsWith('Exception') || lowerHead === 'error' || lowerHead === 'fatal' || lowerHead === 'panic';
      if (named && !head.endsWith('Warning')) return clean(line);
    }
    if (line.startsWith('error:') || line.startsWith('fatal:') || line.startsWith('panic:')) return clean(line);
  }
  return '';
}

/** The warning test of DESIGN 3.1, over every line. */
export function seedIsWarning(text: string): boolean {
  for (const raw of rustLines(text)) {
    const line = rustTrim(raw).toLowerCase();
    if (line.startsWith('warning:') || line.startsWith('warn:') || line.startsWith('[warning]')) return true;
    for (const needle of ['warning:', 'userwarning:', 'deprecationwarning:', 'syntaxwarning:', 'runtimewarning:', 'futurewarning:']) {
      if (line.includes(needle)) return true;
    }
    const colon = line.indexOf(':');
    if (colon >= 0 && line.slice(0, colon).endsWith('warning')) return true;
  }
  return false;
}

/** First non-empty line, whitespace-collapsed, cut to 96; '' when none. */
function firstLineFallback(text: string): string {
  for (const line of rustLines(text)) {
    const t = rustTrim(line);
    if (t !== '') return clean(t);
  }
  return '';
}

function obj(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** The classification of one event of the reference observer. */
export function seedClassify(kind: string, payload: Record<string, unknown>): SeedDecision {
  if (kind === 'execution.completed') {
    const outcome = obj(payload.outcome);
    if (payload.state === 'error') {
      const text = str(outcome?.error);
      const sig = seedErrorSignature(text) || firstLineFallback(text) || 'ExecutionError';
      return { classification: 'ExecutionFailure', signature: sig };
    }
    const output = Array.isArray(outcome?.output) ? (outcome!.output as unknown[]) : [];
    for (const item of output) {
      const o = obj(item);
      if (o === undefined || o.name !== 'stderr') continue;
      const text = str(o.text);
      if (rustTrim(text) === '') continue;
      const sig = seedErrorSignature(text);
      if (sig !== '') return { classification: 'RecoveredError', signature: sig };
      if (seedIsWarning(text)) return { classification: 'StderrWarning', signature: null };
      return { classification: 'Uncertain', signature: null };
    }
    return { classification: 'NormalOutput', signature: null };
  }
  if ((kind === 'tool.result' || kind === 'scratchpad') && payload.type === 'tool_result') {
    if (payload.status === 'skipped') {
      const d: SeedDecision = { classification: 'SkippedPeerCall', signature: null };
      if (typeof payload.reason === 'string') d.reason = payload.reason;
      return d;
    }
    if (payload.status === 'error') {
      const text = typeof payload.error === 'string' ? payload.error : str(payload.content);
      const sig = seedErrorSignature(text) || firstLineFallback(text) || 'ToolError';
      return { classification: 'ExecutionFailure', signature: sig };
    }
  }
  return { classification: 'NormalOutput', signature: null };
}
