/**
 * Fingerprint version 1 (DESIGN 3.1): the identity of a failure. The signature stays readable;
 * the fingerprint masks what varies between two occurrences of the same failure (ids, times,
 * addresses, paths, quoted values, numbers) and hashes the rest, so the same failure groups
 * together and different failures do not. The algorithm is versioned (`v1:`) so that a later
 * change never silently regroups stored occurrences.
 *
 * Masks run in this order, each its own pass, each match replaced by a `<name>` placeholder
 * (Sentry's parameterization, plus paths and ports that Sentry lacks):
 *
 * | # | mask | placeholder | matches |
 * | - | ---- | ----------- | ------- |
 * | 1 | uuid | `<uuid>` | `8-4-4-4-12` hex |
 * | 2 | date | `<date>` | ISO dates and date-times with fraction and zone, `HH:MM:SS[.fff]`, `2024/01/31`, `1/31/2024`, `Jan 31[, 2024]` |
 * | 3 | addr | `<addr>` | `0x` + 6..16 hex digits (pointers; `0x0` and short constants fall to hex) |
 * | 4 | hex  | `<hex>` | other `0x…`; 8+ hex chars holding both a digit and a letter, as a whole word |
 * | 5 | path | `<path>` + `.ext` | absolute Unix paths (`/tmp/…`, `/home/x/…`, `/Users/x/…`), `~/…`, Windows `C:\…`; the basename's extension (a letter then ≤ 7 alphanumerics) is kept: it is stable where the directory (checkout, user, temp dir) is not |
 * | 6 | quoted | `<quoted>` | `'…'` and `"…"`, not glued to a word (`can't` is no quote) |
 * | 7 | ip   | `<ip>` | IPv4; IPv6 full or `::`-compressed holding a digit (`Class::method` survives) |
 * | 8 | port | `:<port>` | `:N` after `<ip>`, `localhost`, `]` or a URL authority `//host` (not after file names: `foo.c:12` is a line number, masked as a number) |
 * | 9 | duration | `<duration>` | `12ms`, `1.5s`, `3m`, `2h`, `250us`, `10 seconds`, `3 days` |
 * | 10 | size | `<size>` | `512MB`, `4 KiB`, `100 bytes` |
 * | 11 | number | `<num>` | ints, floats, dotted numbers, exponents, negatives — never inside an identifier: not after a letter, digit, `_`, `.` or `word-` (so `utf-8`, `x86_64`, `sha256`, `E0308`, `int64`, `v2` survive) |
 *
 * Whitespace runs are collapsed to one space (ends trimmed) before the masks run. Masking is
 * idempotent: guards treat a placeholder as part of a word, and a mask absorbs only placeholders of
 * earlier masks. Every expression is linear-time: quantified parts never overlap, and look-behind
 * guards keep a run from being rescanned at each of its positions.
 */
import { createHash } from 'node:crypto';

export const FINGERPRINT_VERSION = 'v1';

const H = '[0-9a-fA-F]';
const MONTH = '(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)';
// Word guards. A placeholder counts as part of a word on either side (`>` before, `<` after), so
// that masking is idempotent: what survived next to a word survives next to a placeholder too.
const START = '(?<![\\w>])';
const END = '(?![\\w<])';
// Numbers: not after a word, a `.` (fraction, version part) or `word-` (utf-8, ISO-8859-1).
const NUM_START = '(?<![\\w.>])(?<![\\w>]-)';
// A path segment: file-name characters or a placeholder of a mask that runs before paths (a mask
// may only absorb placeholders of earlier masks, or a second pass would change the text).
const SEG = '(?:[\\w.@%+~-]|<(?:uuid|date|addr|hex)>)+';

const re = (parts: string[]) => new RegExp(parts.join('|'), 'g');

/** The masks of version 1, in order. Each is global; replacement strings may use `$1`. */
const MASKS: ReadonlyArray<{ name: string; re: RegExp; replace: string | ((m: string) => string) }> = [
  { name: 'uuid', re: re([`${START}${H}{8}-${H}{4}-${H}{4}-${H}{4}-${H}{12}${END}`]), replace: '<uuid>' },
  {
    name: 'date',
    re: re([
      // ISO 8601 date, optionally with time, fraction and zone.
      `${START}\\d{4}-\\d{2}-\\d{2}(?:[T ]\\d{2}:\\d{2}(?::\\d{2})?(?:[.,]\\d{1,9})?(?:Z|[+-]\\d{2}:?\\d{2})?)?(?![\\d<])`,
      // Time of day with seconds (without seconds it reads as line:col).
      '(?<![\\w:.>])\\d{1,2}:\\d{2}:\\d{2}(?:[.,]\\d{1,9})?(?:Z|[+-]\\d{2}:?\\d{2})?(?![\\d:<])',
      // 2024/01/31 and 1/31/2024.
      '(?<![\\w/.>])\\d{4}/\\d{1,2}/\\d{1,2}(?![\\w/<])',
      '(?<![\\w/.>])\\d{1,2}/\\d{1,2}/\\d{4}(?![\\w/<])',
      // Jan 31, Jan 31 2024, January 31, 2024 (case-sensitive month names).
      `${START}${MONTH}\\s{1,2}\\d{1,2}(?:,?\\s\\d{4})?${END}`,
    ]),
    replace: '<date>',
  },
  { name: 'addr', re: re([`${START}0[xX]${H}{6,16}${END}`]), replace: '<addr>' },
  {
    name: 'hex',
    re: re([`${START}0[xX]${H}+${END}`, `${START}(?=${H}*\\d)(?=${H}*[a-fA-F])${H}{8,}${END}`]),
    replace: '<hex>',
  },
  {
    name: 'path',
    re: re([
      // Unix absolute or home-relative; not the second half of `and/or`, a URL (`://`) or `a/b`.
      `(?:${START}~|(?<![\\w.:/>\\]~-]))(?:/${SEG})+/?`,
      // Windows drive paths, with either separator; not after `.` (a kept extension, `x.C:\`).
      `(?<![\\w.>])[A-Za-z]:[\\\\/][^\\s'"|*?:<>]*`,
    ]),
    replace: (m) => `<path>${extensionOf(m)}`,
  },
  { name: 'quoted', re: re([`${START}'[^'\\n]*'${END}`, `${START}"[^"\\n]*"${END}`]), replace: '<quoted>' },
  {
    name: 'ip',
    re: re([
      `${NUM_START}(?:\\d{1,3}\\.){3}\\d{1,3}(?![\\w<]|\\.\\d)`,
      `(?<![\\w:>])(?:${H}{1,4}:){7}${H}{1,4}(?![\\w:<])`,
      // Compressed: groups, then `::`, then groups; holds a digit so `Class::method` survives.
      `(?<![\\w:>])(?=[0-9a-fA-F:]*\\d)(?:(?:${H}{1,4}:){1,6}|:):(?:${H}{1,4}(?::${H}{1,4}){0,6})?(?![\\w:<])`,
    ]),
    replace: '<ip>',
  },
  { name: 'port', re: re([`(<ip>|${START}localhost|\\]|//[\\w.-]+):\\d{1,5}${END}`]), replace: '$1:<port>' },
  {
    name: 'duration',
    re: re([
      `${NUM_START}\\d+(?:\\.\\d+)?(?:ns|us|µs|ms|s|m|h|[ ]?(?:nanoseconds?|microseconds?|milliseconds?|seconds?|secs?|minutes?|mins?|hours?|hrs?|days?))${END}`,
    ]),
    replace: '<duration>',
  },
  { name: 'size', re: re([`${NUM_START}\\d+(?:\\.\\d+)?[ ]?(?:[KMGTP]i?B|[kmgt]b|bytes?|B)${END}`]), replace: '<size>' },
  { name: 'number', re: re([`${NUM_START}-?\\d+(?:\\.\\d+)*(?:[eE][+-]?\\d+)?${END}`]), replace: '<num>' },
];

/** The extension of a path's basename (`.py`), or empty. */
function extensionOf(path: string): string {
  const cut = Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\'));
  const base = path.slice(cut + 1);
  const m = /\.([A-Za-z][A-Za-z0-9]{0,7})$/.exec(base);
  return m && m.index > 0 ? `.${m[1]}` : '';
}

/** The signature with volatile parts masked and whitespace collapsed (fingerprint v1's input). */
export function normalizeSignature(signature: string): string {
  if (typeof signature !== 'string') return '';
  // Collapse first: masks then see one line, as the normalized text is, so masking is idempotent.
  let text = signature.replace(/\s+/g, ' ').trim();
  for (const mask of MASKS) {
    mask.re.lastIndex = 0;
    text = typeof mask.replace === 'string' ? text.replace(mask.re, mask.replace) : text.replace(mask.re, mask.replace);
  }
  return text;
}

export interface FingerprintOptions {
  /** Language or format of the failure (`python`, `node`, ...); part of the identity when given. */
  language?: string;
}

/**
 * `v1:` + the first 16 hex digits of SHA-256 over the length-prefixed fields (language,
 * normalized signature), so that no two different field splits hash alike.
 */
export function fingerprint(signature: string, opts: FingerprintOptions = {}): string {
  const normalized = normalizeSignature(signature);
  const language = typeof opts.language === 'string' ? opts.language.trim().toLowerCase() : '';
  const input = `${FINGERPRINT_VERSION}\n${language.length}:${language}\n${normalized.length}:${normalized}`;
  return `${FINGERPRINT_VERSION}:${createHash('sha256').update(input).digest('hex').slice(0, 16)}`;
}
