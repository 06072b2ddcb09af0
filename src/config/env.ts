/**
 * Environment substitution as the Collector does it: `${env:VAR}`, `${env:VAR:-default}`, and
 * `$$` for a literal `$`. It runs on the YAML nodes before schemas see the values, so each
 * problem keeps its source position and a substituted `${env:PORT}` can still become a number.
 */
import { isMap, isScalar, isSeq, parseDocument, Scalar } from 'yaml';
import type { Document } from 'yaml';
import { keyText } from './positions.ts';
import type { ParseContext, Path } from './schema.ts';
import { describePath } from './schema.ts';

const REFERENCE = /^env:([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$/s;
/** `$$`, a complete `${...}`, or a `${` that is never closed. */
const TOKEN = /\$\$|\$\{([^}]*)\}|\$\{.*$/gs;

export type Expansion = { ok: true; text: string; whole: boolean } | { ok: false; message: string };

/**
 * Expands the references in one string. `whole` is true when the string is exactly one
 * reference, the case where the result is re-read as a YAML scalar. A default ends at the first
 * `}`; a `$` not followed by `$` or `{` is kept as it is.
 */
export function expandString(text: string, env: NodeJS.ProcessEnv): Expansion {
  const problems: string[] = [];
  const out = text.replace(TOKEN, (token: string, ref: string | undefined) => {
    if (token === '$$') return '$';
    const m = ref === undefined ? null : REFERENCE.exec(ref);
    if (!m) {
      problems.push(
        ref === undefined
          ? `unterminated reference '${token}': close it with '}', or write $$ for a literal $`
          : `unsupported reference '${token}': only \${env:VAR} and \${env:VAR:-default} are supported; write $$ for a literal $`,
      );
      return token;
    }
    const [, name, fallback] = m as unknown as [string, string, string | undefined];
    const value = env[name] ?? fallback;
    if (value === undefined) problems.push(`environment variable ${name} is not set: set ${name} or write \${env:${name}:-default}`);
    return value ?? token;
  });
  if (problems.length > 0) return { ok: false, message: problems.join('; ') };
  return { ok: true, text: out, whole: /^\$\{[^}]*\}$/.test(text) };
}

/** Re-reads substituted text the way YAML would have read it in place; only scalars are taken. */
function asYamlScalar(text: string): unknown {
  const doc = parseDocument(text);
  if (doc.errors.length === 0 && (doc.contents === null || isScalar(doc.contents))) return doc.contents?.value ?? null;
  return text;
}

/** Substitutes in every string value of the document in place; keys are left alone. */
export function substituteEnv(doc: Document, env: NodeJS.ProcessEnv, ctx: ParseContext): void {
  const walk = (node: unknown, path: Path): void => {
    if (isMap(node)) {
      for (const pair of node.items) walk(pair.value, [...path, keyText(pair.key)]);
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => walk(item, [...path, i]));
    } else if (isScalar(node) && typeof node.value === 'string' && node.value.includes('$')) {
      const result = expandString(node.value, env);
      if (!result.ok) {
        ctx.error(path, `${describePath(path)}: ${result.message}`);
        return;
      }
      // Only an unquoted whole reference is typed: `"${env:PORT}"` stays a string, as quoting says.
      node.value = result.whole && node.type === Scalar.PLAIN ? asYamlScalar(result.text) : result.text;
    }
  };
  walk(doc.contents, []);
}
