/**
 * Text helpers of the vigil rules: reading the reference payload's text fields as agents really
 * send them, and the signature form. Separate from reference.ts, which stays a literal port of the
 * seed (STYLE 17): the vigil rules read more shapes than the seed does.
 */

/** Longest signature, in code points. */
export const SIGNATURE_MAX_CHARS = 96;
/** Signature of a failed execution whose error text names nothing. */
export const EXECUTION_ERROR_FALLBACK = 'ExecutionError';
/** Signature of a failed tool call whose error and content name nothing. */
export const TOOL_ERROR_FALLBACK = 'ToolError';

/**
 * Collapses whitespace runs (JavaScript `\s`) to one space, trims, and cuts to 96 code points
 * without splitting a surrogate pair; a space the cut leaves at the end is dropped, so a signature
 * never starts or ends with whitespace.
 */
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

/** The value when it is a plain object, else an empty frozen one. */
export function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : EMPTY;
}
