/**
 * File globs for the `journal` receiver's `include` and `exclude`, as the Collector's filelog
 * receiver reads them (doublestar): `*` and `?` match within one path segment, `**` matches any
 * number of directories, `~/` is the home directory, and a relative pattern is relative to the
 * working directory. An `exclude` pattern without a `/` is matched against the file name alone,
 * one that starts with `**` against any tail of the path.
 *
 * Expansion is bounded: at most MAX_GLOB_DEPTH directories below a `**`, at most MAX_MATCHES
 * files per pattern; symbolic links to directories are not followed below a `**` (no cycles).
 */
import { readdir, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve, sep } from 'node:path';

export const MAX_GLOB_DEPTH = 16;
export const MAX_MATCHES = 1024;

const WILDCARD = /[*?]/;

/** The absolute form of a pattern: `~/` expanded, relative patterns resolved against the working directory. */
export function absolutePattern(pattern: string): string {
  const expanded = pattern === '~' || pattern.startsWith('~/') ? join(homedir(), pattern.slice(1)) : pattern;
  return isAbsolute(expanded) ? resolve(expanded) : resolve(process.cwd(), expanded);
}

/** The directory a pattern's expansion starts from: its segments before the first wildcard. */
export function staticBase(pattern: string): string {
  const segments = absolutePattern(pattern).split(sep);
  const firstWild = segments.findIndex((s) => WILDCARD.test(s));
  if (firstWild < 0) return segments.slice(0, -1).join(sep) || sep;
  return segments.slice(0, firstWild).join(sep) || sep;
}

/** A regular expression for one path segment (`*`, `?`). */
function segmentRegExp(segment: string): RegExp {
  return new RegExp(
    '^' +
      segment
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*/g, '[^/]*')
        .replace(/\?/g, '[^/]') +
      '$',
  );
}

/** A regular expression for a whole path: `**` spans directories, `*` and `?` stay within one. */
export function pathRegExp(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*' && pattern[i + 1] === '*') {
      const slashAfter = pattern[i + 2] === '/';
      re += slashAfter ? '(?:.*/)?' : '.*';
      i += slashAfter ? 2 : 1;
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp('^' + re + '$');
}

/** Whether `file` (absolute) is excluded by one of the patterns. */
export function excluded(file: string, matchers: readonly RegExp[]): boolean {
  const name = file.slice(file.lastIndexOf(sep) + 1);
  return matchers.some((m) => m.test(file) || m.test(name));
}

/**
 * Compiles exclude patterns: one without a `/` matches the file name, one starting with `**` any
 * part of the path, any other the absolute path (relative ones resolved as `include`'s are).
 */
export function excludeMatchers(patterns: readonly string[]): RegExp[] {
  return patterns.map((p) => (p.startsWith('**') || !p.includes('/') ? pathRegExp(p) : pathRegExp(absolutePattern(p))));
}

/** The regular files a pattern names now, sorted; at most MAX_MATCHES. */
export async function expandGlob(pattern: string): Promise<string[]> {
  const abs = absolutePattern(pattern);
  if (!WILDCARD.test(abs)) return (await isFile(abs)) ? [abs] : [];
  const segments = abs.split(sep).filter((s, i) => s !== '' || i === 0);
  const out = new Set<string>();
  await walk(sep, segments.slice(1), out, 0);
  return [...out].sort().slice(0, MAX_MATCHES);
}

async function walk(dir: string, rest: string[], out: Set<string>, depth: number): Promise<void> {
  if (out.size >= MAX_MATCHES) return;
  if (rest.length === 0) return;
  const [segment, ...tail] = rest as [string, ...string[]];
  if (segment === '**') {
    // Zero directories, then one more level at a time.
    await walk(dir, tail, out, depth);
    if (depth >= MAX_GLOB_DEPTH) return;
    for (const entry of await entries(dir)) {
      if (entry.isDirectory()) await walk(join(dir, entry.name), rest, out, depth + 1);
    }
    return;
  }
  if (!WILDCARD.test(segment)) {
    const next = join(dir, segment);
    if (tail.length === 0) {
      if (await isFile(next)) out.add(next);
    } else await walk(next, tail, out, depth);
    return;
  }
  const re = segmentRegExp(segment);
  for (const entry of await entries(dir)) {
    if (!re.test(entry.name)) continue;
    const next = join(dir, entry.name);
    if (tail.length === 0) {
      if (entry.isFile() || (entry.isSymbolicLink() && (await isFile(next)))) out.add(next);
    } else if (entry.isDirectory() || entry.isSymbolicLink()) await walk(next, tail, out, depth);
  }
}

async function entries(dir: string) {
  return readdir(dir, { withFileTypes: true }).catch(() => []);
}

async function isFile(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isFile(),
    () => false,
  );
}
