/**
 * A small validating schema language for component configs (the Collector's `Validate()` plus
 * Vector's `deny_unknown_fields`). Parsing never throws: each problem is recorded with its key
 * path so the loader can point at FILE:LINE:COL, and all problems are collected, not just the first.
 */
import { formatHostPort, parseEndpoint } from '../internal/endpoint.ts';
import { parseDuration } from './duration.ts';

export type Path = ReadonlyArray<string | number>;

export interface Issue {
  path: Path;
  message: string;
  severity: 'error' | 'warning';
  /** Point at the key itself rather than its value (unknown keys). */
  atKey?: boolean;
}

export class ParseContext {
  readonly issues: Issue[] = [];
  error(path: Path, message: string, atKey = false): void {
    this.issues.push({ path, message, severity: 'error', atKey });
  }
  warn(path: Path, message: string): void {
    this.issues.push({ path, message, severity: 'warning' });
  }
  get ok(): boolean {
    return !this.issues.some((i) => i.severity === 'error');
  }
}

export abstract class Schema<T> {
  /** Short description used in error messages: `a duration such as 60s`. */
  abstract readonly expected: string;
  /** Parses a present value (not undefined). Records issues; returns a best-effort value. */
  protected abstract parsePresent(value: unknown, path: Path, ctx: ParseContext): T | undefined;

  parse(value: unknown, path: Path, ctx: ParseContext): T | undefined {
    if (value === undefined || (value === null && !this.checksNull)) return this.missing(path, ctx);
    return this.parsePresent(value, path, ctx);
  }

  /** Whether a written `null` (`key:`, `~`, an empty `${env:VAR}`) is checked as a value instead of meaning "not set". */
  get checksNull(): boolean {
    return false;
  }

  protected missing(path: Path, ctx: ParseContext): T | undefined {
    ctx.error(path, `${describePath(path)} is required: expected ${this.expected}`);
    return undefined;
  }

  default(value: T | (() => T)): Schema<T> {
    return new DefaultSchema(this, value);
  }

  optional(): Schema<T | undefined> {
    return new OptionalSchema(this);
  }

  /**
   * For secrets and access-control settings: once the key is written, a value that resolves empty
   * (null, `~`, nothing after the colon, an empty `${env:VAR}`, blank text) is an error instead of
   * silently meaning "not set" — an empty token must never turn authentication off.
   */
  nonEmpty(): Schema<T> {
    return new NonEmptySchema(this);
  }

  /**
   * A cross-field rule (`initial_interval ≤ max_interval`), run on the parsed value once it parsed
   * without errors, so one mistake is not reported twice. `report` records an error at a key path
   * relative to this value, its message following the key's full path (`'exporters.file.x' <message>`);
   * the loader turns it into FILE:LINE:COL like any other problem.
   */
  check(rule: (value: T, report: (at: Path, message: string) => void) => void): Schema<T> {
    return new CheckedSchema(this, rule);
  }
}

class CheckedSchema<T> extends Schema<T> {
  constructor(
    private readonly inner: Schema<T>,
    private readonly rule: (value: T, report: (at: Path, message: string) => void) => void,
  ) {
    super();
  }
  get expected(): string {
    return this.inner.expected;
  }
  override get checksNull(): boolean {
    return this.inner.checksNull;
  }
  override parse(value: unknown, path: Path, ctx: ParseContext): T | undefined {
    const errorsBefore = ctx.issues.filter((i) => i.severity === 'error').length;
    const parsed = this.inner.parse(value, path, ctx);
    if (parsed !== undefined && ctx.issues.filter((i) => i.severity === 'error').length === errorsBefore) {
      this.rule(parsed, (at, message) => ctx.error([...path, ...at], `${describePath([...path, ...at])} ${message}`));
    }
    return parsed;
  }
  protected parsePresent(value: unknown, path: Path, ctx: ParseContext): T | undefined {
    return this.inner.parse(value, path, ctx);
  }
}

class DefaultSchema<T> extends Schema<T> {
  constructor(
    private readonly inner: Schema<T>,
    private readonly fallback: T | (() => T),
  ) {
    super();
  }
  get expected(): string {
    return this.inner.expected;
  }
  override get checksNull(): boolean {
    return this.inner.checksNull;
  }
  protected override missing(): T {
    const f = this.fallback;
    return typeof f === 'function' ? (f as () => T)() : structuredClone(f);
  }
  protected parsePresent(value: unknown, path: Path, ctx: ParseContext): T | undefined {
    return this.inner.parse(value, path, ctx);
  }
}

class NonEmptySchema<T> extends Schema<T> {
  constructor(private readonly inner: Schema<T>) {
    super();
  }
  get expected(): string {
    return this.inner.expected;
  }
  override get checksNull(): boolean {
    return true;
  }
  protected parsePresent(value: unknown, path: Path, ctx: ParseContext): T | undefined {
    const empty =
      value === null ||
      (typeof value === 'string' && value.trim() === '') ||
      (typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 0);
    if (empty) {
      ctx.error(
        path,
        `${describePath(path)} must not be empty: it is written but resolves to nothing (null, ~, nothing after the colon, or an empty \${env:VAR}), and an empty secret or auth setting would turn protection off; give it a value, or remove the key`,
      );
      return undefined;
    }
    return this.inner.parse(value, path, ctx);
  }
}

class OptionalSchema<T> extends Schema<T | undefined> {
  constructor(private readonly inner: Schema<T>) {
    super();
  }
  get expected(): string {
    return this.inner.expected;
  }
  override get checksNull(): boolean {
    return this.inner.checksNull;
  }
  protected override missing(): undefined {
    return undefined;
  }
  protected parsePresent(value: unknown, path: Path, ctx: ParseContext): T | undefined {
    return this.inner.parse(value, path, ctx);
  }
}

export function describePath(path: Path): string {
  if (path.length === 0) return 'the document';
  return `'${path.map(String).join('.')}'`;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)}`;
  return `${typeof value} ${String(value as number | boolean | bigint)}`;
}

function wrongType(ctx: ParseContext, path: Path, expected: string, value: unknown): undefined {
  ctx.error(path, `${describePath(path)} must be ${expected}, got ${typeName(value)}`);
  return undefined;
}

class StringSchema extends Schema<string> {
  constructor(private readonly opts: { minLength?: number; maxLength?: number; pattern?: RegExp; patternHint?: string }) {
    super();
  }
  get expected(): string {
    return this.opts.patternHint ?? 'a string';
  }
  protected parsePresent(value: unknown, path: Path, ctx: ParseContext): string | undefined {
    if (typeof value !== 'string') {
      // Scalars written without quotes are accepted where a string is expected (port-like ids).
      if (typeof value === 'number' || typeof value === 'boolean') value = String(value);
      else return wrongType(ctx, path, this.expected, value);
    }
    const v = value as string;
    if (this.opts.minLength !== undefined && v.length < this.opts.minLength) {
      ctx.error(path, `${describePath(path)} must not be empty`);
    } else if (this.opts.maxLength !== undefined && v.length > this.opts.maxLength) {
      ctx.error(path, `${describePath(path)} must be at most ${this.opts.maxLength} characters`);
    } else if (this.opts.pattern && !this.opts.pattern.test(v)) {
      ctx.error(path, `${describePath(path)} must be ${this.expected}, got ${typeName(v)}`);
    }
    return v;
  }
}

class NumberSchema extends Schema<number> {
  constructor(private readonly opts: { integer: boolean; min?: number; max?: number }) {
    super();
  }
  get expected(): string {
    const base = this.opts.integer ? 'an integer' : 'a number';
    if (this.opts.min !== undefined && this.opts.max !== undefined) return `${base} from ${this.opts.min} to ${this.opts.max}`;
    if (this.opts.min !== undefined) return `${base} >= ${this.opts.min}`;
    if (this.opts.max !== undefined) return `${base} <= ${this.opts.max}`;
    return base;
  }
  protected parsePresent(value: unknown, path: Path, ctx: ParseContext): number | undefined {
    let n = value;
    // Values substituted from the environment arrive as strings.
    if (typeof n === 'string' && n.trim() !== '' && Number.isFinite(Number(n))) n = Number(n);
    if (typeof n !== 'number' || !Number.isFinite(n)) return wrongType(ctx, path, this.expected, value);
    if (this.opts.integer && !Number.isInteger(n)) return wrongType(ctx, path, this.expected, value);
    if ((this.opts.min !== undefined && n < this.opts.min) || (this.opts.max !== undefined && n > this.opts.max)) {
      ctx.error(path, `${describePath(path)} must be ${this.expected}, got ${n}`);
    }
    return n;
  }
}

class BooleanSchema extends Schema<boolean> {
  readonly expected = 'true or false';
  protected parsePresent(value: unknown, path: Path, ctx: ParseContext): boolean | undefined {
    if (value === 'true') return true;
    if (value === 'false') return false;
    if (typeof value !== 'boolean') return wrongType(ctx, path, this.expected, value);
    return value;
  }
}

/** Durations as `60s`, `500ms`, `1m30s`, `2h`; parsed to milliseconds. */
class DurationSchema extends Schema<number> {
  readonly expected = 'a duration such as 60s, 500ms or 1m30s';
  constructor(private readonly opts: { min?: number }) {
    super();
  }
  protected parsePresent(value: unknown, path: Path, ctx: ParseContext): number | undefined {
    // A bare 0 is unambiguous; any other bare number lacks its unit.
    if (value === 0) return 0;
    if (typeof value === 'number') {
      ctx.error(path, `${describePath(path)} must be ${this.expected}: write the unit, e.g. ${value}s or ${value}ms`);
      return undefined;
    }
    if (typeof value !== 'string') return wrongType(ctx, path, this.expected, value);
    const ms = parseDuration(value);
    if (ms === undefined) return wrongType(ctx, path, this.expected, value);
    if (this.opts.min !== undefined && ms < this.opts.min) {
      ctx.error(path, `${describePath(path)} must be at least ${this.opts.min}ms, got ${value}`);
    }
    return ms;
  }
}

/** Byte sizes as `4MiB`, `512KiB`, `1048576`. */
class SizeSchema extends Schema<number> {
  readonly expected = 'a size such as 4MiB, 512KiB or a number of bytes';
  protected parsePresent(value: unknown, path: Path, ctx: ParseContext): number | undefined {
    const n = parseSize(value);
    if (n === undefined) return wrongType(ctx, path, this.expected, value);
    return n;
  }
}

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  kb: 1000,
  mb: 1000 ** 2,
  gb: 1000 ** 3,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
  k: 1024,
  m: 1024 ** 2,
  g: 1024 ** 3,
};

export function parseSize(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(value);
  if (!m) return undefined;
  const unit = SIZE_UNITS[m[2]!.toLowerCase()];
  if (unit === undefined) return undefined;
  return Math.round(Number(m[1]) * unit);
}

/** `host:port`; a bare `:port` or port binds to 127.0.0.1, never to all interfaces by accident. */
class EndpointSchema extends Schema<string> {
  readonly expected = 'an endpoint such as 127.0.0.1:4318';
  protected parsePresent(value: unknown, path: Path, ctx: ParseContext): string | undefined {
    if (typeof value === 'number') value = `:${value}`;
    if (typeof value !== 'string') return wrongType(ctx, path, this.expected, value);
    const parsed = parseEndpoint(value);
    if (!parsed) return wrongType(ctx, path, this.expected, value);
    return formatHostPort(parsed.host, parsed.port);
  }
}

class UrlSchema extends Schema<string> {
  constructor(private readonly protocols: string[]) {
    super();
  }
  get expected(): string {
    return `a URL (${this.protocols.map((p) => p + '//').join(', ')})`;
  }
  protected parsePresent(value: unknown, path: Path, ctx: ParseContext): string | undefined {
    if (typeof value !== 'string') return wrongType(ctx, path, this.expected, value);
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return wrongType(ctx, path, this.expected, value);
    }
    if (!this.protocols.includes(url.protocol)) {
      ctx.error(path, `${describePath(path)} must use ${this.protocols.join(' or ')}, got ${url.protocol}`);
    }
    // `scheme://:${env:PASSWORD}@host` with the variable empty: credentials written but empty.
    const authority = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(value)?.[1] ?? '';
    const at = authority.lastIndexOf('@');
    if (at >= 0 && (at === 0 || authority[at - 1] === ':')) {
      ctx.error(
        path,
        `${describePath(path)} has credentials that are empty (${at === 0 ? 'nothing' : 'no password'} before '@', perhaps an empty \${env:VAR}); give them a value, or remove the '@' part`,
      );
    }
    return value;
  }
}

class EnumSchema<T extends string> extends Schema<T> {
  constructor(private readonly values: readonly T[]) {
    super();
  }
  get expected(): string {
    return `one of ${this.values.join(', ')}`;
  }
  protected parsePresent(value: unknown, path: Path, ctx: ParseContext): T | undefined {
    if (typeof value !== 'string' || !this.values.includes(value as T)) {
      return wrongType(ctx, path, this.expected, value);
    }
    return value as T;
  }
}

class ArraySchema<T> extends Schema<T[]> {
  constructor(private readonly item: Schema<T>) {
    super();
  }
  get expected(): string {
    return `a list of ${this.item.expected}`;
  }
  protected parsePresent(value: unknown, path: Path, ctx: ParseContext): T[] | undefined {
    if (!Array.isArray(value)) return wrongType(ctx, path, this.expected, value);
    const out: T[] = [];
    value.forEach((v, i) => {
      const parsed = this.item.parse(v, [...path, i], ctx);
      if (parsed !== undefined) out.push(parsed);
    });
    return out;
  }
}

class RecordSchema<T> extends Schema<Record<string, T>> {
  constructor(private readonly value: Schema<T>) {
    super();
  }
  get expected(): string {
    return `a mapping of names to ${this.value.expected}`;
  }
  protected parsePresent(value: unknown, path: Path, ctx: ParseContext): Record<string, T> | undefined {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return wrongType(ctx, path, this.expected, value);
    const out: Record<string, T> = {};
    for (const [k, v] of Object.entries(value)) {
      const parsed = this.value.parse(v, [...path, k], ctx);
      if (parsed !== undefined) out[k] = parsed;
    }
    return out;
  }
}

export type Shape = Record<string, Schema<unknown>>;
export type Infer<S> = S extends Schema<infer T> ? T : never;
export type InferShape<S extends Shape> = { [K in keyof S]: Infer<S[K]> };

export class ObjectSchema<S extends Shape> extends Schema<InferShape<S>> {
  readonly expected = 'a mapping';
  constructor(readonly shape: S) {
    super();
  }
  /** An absent object is its defaults: `processors: { classify: }` means "classify with defaults". */
  protected override missing(path: Path, ctx: ParseContext): InferShape<S> | undefined {
    return this.parsePresent({}, path, ctx);
  }
  protected parsePresent(value: unknown, path: Path, ctx: ParseContext): InferShape<S> | undefined {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return wrongType(ctx, path, this.expected, value);
    const input = value as Record<string, unknown>;
    const keys = Object.keys(this.shape);
    for (const k of Object.keys(input)) {
      if (!Object.prototype.hasOwnProperty.call(this.shape, k)) {
        ctx.error([...path, k], unknownKeyMessage(k, keys, path), true);
      }
    }
    const out: Record<string, unknown> = {};
    for (const k of keys) {
      const parsed = this.shape[k]!.parse(input[k], [...path, k], ctx);
      if (parsed !== undefined) out[k] = parsed;
    }
    return out as InferShape<S>;
  }
}

export function unknownKeyMessage(key: string, valid: readonly string[], path: Path): string {
  const where = path.length ? ` in ${describePath(path)}` : '';
  const guess = closest(key, valid);
  const hint = guess ? ` (did you mean '${guess}'?)` : '';
  const choices = valid.length ? `; valid keys: ${valid.join(', ')}` : '; no keys are accepted here';
  return `unknown key '${key}'${where}${hint}${choices}`;
}

/** The closest valid name by edit distance, when it is close enough to be a likely typo. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDist = Infinity;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDist) {
      bestDist = d;
      best = c;
    }
  }
  return best !== undefined && bestDist <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = prev[j]!;
      prev[j] = Math.min(prev[j]! + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = tmp;
    }
  }
  return prev[b.length]!;
}

/** The schema builders, used by every component's config. */
export const s = {
  object: <S extends Shape>(shape: S): ObjectSchema<S> => new ObjectSchema(shape),
  string: (opts: { minLength?: number; maxLength?: number; pattern?: RegExp; patternHint?: string } = {}): Schema<string> => new StringSchema(opts),
  /** A secret (token, signing key, API-key header value): a string that must not resolve empty once written; never logged. */
  secret: (): Schema<string> => new StringSchema({}).nonEmpty(),
  int: (opts: { min?: number; max?: number } = {}): Schema<number> => new NumberSchema({ integer: true, ...opts }),
  number: (opts: { min?: number; max?: number } = {}): Schema<number> => new NumberSchema({ integer: false, ...opts }),
  boolean: (): Schema<boolean> => new BooleanSchema(),
  duration: (opts: { min?: number } = {}): Schema<number> => new DurationSchema(opts),
  size: (): Schema<number> => new SizeSchema(),
  endpoint: (): Schema<string> => new EndpointSchema(),
  url: (protocols: string[] = ['http:', 'https:']): Schema<string> => new UrlSchema(protocols),
  enumOf: <T extends string>(values: readonly T[]): Schema<T> => new EnumSchema(values),
  array: <T>(item: Schema<T>): Schema<T[]> => new ArraySchema(item),
  record: <T>(value: Schema<T>): Schema<Record<string, T>> => new RecordSchema(value),
};

/** Parses `{}` against a schema: the component's default config. */
export function defaultsOf<T>(schema: Schema<T>): T {
  const ctx = new ParseContext();
  const v = schema.parse({}, [], ctx);
  if (!ctx.ok || v === undefined) throw new Error(`default config does not validate: ${ctx.issues.map((i) => i.message).join('; ')}`);
  return v;
}
