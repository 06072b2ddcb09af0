/**
 * Loads pipeline.yaml into a typed VigilConfig. The YAML is parsed keeping positions, `${env:…}`
 * references are substituted on the nodes, each component config goes through its factory's
 * schema, and the service section is cross-checked. Every problem is collected and reported as
 * FILE:LINE:COL in one ConfigError, so a user fixes the whole file in one round.
 */
import { readFile } from 'node:fs/promises';
import { LineCounter, parseDocument } from 'yaml';
import type { Document, YAMLError } from 'yaml';
import type { ComponentKind, Registry, StoreFactory } from '../component.ts';
import { errorMessage, VigilError } from '../errors.ts';
import { substituteEnv } from './env.ts';
import { positionOf } from './positions.ts';
import type { Issue, Path } from './schema.ts';
import { closest, describePath, ParseContext, unknownKeyMessage } from './schema.ts';
import { asRecord, readService, SINGULAR } from './service.ts';
import type { Defined } from './service.ts';

export interface Diagnostic {
  file: string;
  line: number;
  col: number;
  message: string;
  severity: 'error' | 'warning';
}

export interface ComponentConfig<C = unknown> {
  /** `type` or `type/name`, as written. */
  id: string;
  type: string;
  name?: string;
  config: C;
}

export interface PipelineConfig {
  /** `traces`, `logs`, `traces/<name>` or `logs/<name>`. */
  id: string;
  signal: 'traces' | 'logs';
  receivers: string[];
  processors: string[];
  exporters: string[];
}

export interface ServiceConfig {
  extensions: string[];
  pipelines: Map<string, PipelineConfig>;
  telemetry: {
    logs: { level: 'debug' | 'info' | 'warn' | 'error' };
    metrics: { address: string | undefined; auth?: { bearer_token: string } };
    traces: { endpoint: string | undefined; encoding: 'proto' | 'json'; headers: Record<string, string> };
  };
  drain_timeout: number;
  processing: { page_size: number };
  ingest: { max_backlog: number };
  correlation: { session_wait: number; failure_wait: number; max_traces: number; trace_ttl: number };
}

export interface VigilConfig {
  file: string;
  receivers: Map<string, ComponentConfig>;
  processors: Map<string, ComponentConfig>;
  exporters: Map<string, ComponentConfig>;
  extensions: Map<string, ComponentConfig>;
  state: { type: string; config: unknown };
  service: ServiceConfig;
  /** Problems that do not stop vigil (unused components), to be logged at start. */
  warnings: Diagnostic[];
}

/** The store used when `state` is absent, if registered; otherwise the in-memory store. */
export const DEFAULT_STORE = 'sqlite';
const FALLBACK_STORE = 'memory';

const TOP_LEVEL_KEYS = ['receivers', 'processors', 'exporters', 'extensions', 'state', 'service'];
const KINDS: readonly ComponentKind[] = ['receivers', 'processors', 'exporters', 'extensions'];
const COMPONENT_NAME = /^[A-Za-z0-9_.-]+$/;

export function formatDiagnostic(d: Diagnostic): string {
  return `${d.file}:${d.line}:${d.col}: ${d.severity === 'warning' ? 'warning: ' : ''}${d.message}`;
}

export class ConfigError extends VigilError {
  readonly diagnostics: Diagnostic[];
  constructor(diagnostics: Diagnostic[]) {
    super('VIGIL_CONFIG_INVALID', diagnostics.map(formatDiagnostic).join('\n'));
    this.name = 'ConfigError';
    this.diagnostics = diagnostics;
  }
}

export async function loadConfigFile(file: string, registry: Registry, env: NodeJS.ProcessEnv = process.env): Promise<VigilConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : errorMessage(err);
    throw new VigilError('VIGIL_CONFIG_NOT_FOUND', `cannot read config file '${file}': ${why}`, { cause: err });
  }
  return loadConfigText(text, file, registry, env);
}

export function loadConfigText(text: string, file: string, registry: Registry, env: NodeJS.ProcessEnv = process.env): VigilConfig {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const fromYaml =
    (severity: Diagnostic['severity']) =>
    (e: YAMLError): Diagnostic => ({
      file,
      ...lineCounter.linePos(e.pos[0]),
      message: yamlMessage(e, text),
      severity,
    });
  // One syntax error usually derails the parser for the rest of the file; only the first is worth
  // reading. Duplicate keys are independent of each other, so all of them are reported.
  const syntax = doc.errors.filter((e) => e.code !== 'DUPLICATE_KEY').slice(0, 1);
  const duplicates = doc.errors.filter((e) => e.code === 'DUPLICATE_KEY');
  const yamlDiagnostics = [...syntax, ...duplicates].map(fromYaml('error')).concat(doc.warnings.map(fromYaml('warning')));
  // After a syntax error the tree is a guess; checking it would only add misleading errors.
  if (syntax.length > 0) throw new ConfigError(sortByPosition(yamlDiagnostics));

  // Substitution problems are kept apart so the schema's complaint about the same unexpanded
  // value (e.g. "must be an endpoint") is not reported a second time.
  const envCtx = new ParseContext();
  substituteEnv(doc, env, envCtx);
  const ctx = new ParseContext();
  let root: unknown;
  try {
    root = doc.toJS();
  } catch (err) {
    ctx.error([], `cannot resolve the document: ${errorMessage(err)}`); // e.g. an undefined *alias
  }
  const config = readRoot(root, file, registry, ctx);

  const failed = envCtx.issues.map((i) => i.path);
  const issues = [...envCtx.issues, ...ctx.issues.filter((i) => !failed.some((p) => startsWith(i.path, p)))];
  const diagnostics = sortByPosition([...yamlDiagnostics, ...issues.map((i) => toDiagnostic(i, file, doc, lineCounter))]);
  if (diagnostics.some((d) => d.severity === 'error')) throw new ConfigError(diagnostics);
  config.warnings = diagnostics;
  return config;
}

function readRoot(root: unknown, file: string, registry: Registry, ctx: ParseContext): VigilConfig {
  let top = asRecord(root ?? {});
  if (!top) {
    ctx.error([], `the document must be a mapping with the keys ${TOP_LEVEL_KEYS.join(', ')}`);
    top = {};
  }
  for (const key of Object.keys(top)) {
    if (!TOP_LEVEL_KEYS.includes(key)) ctx.error([key], unknownKeyMessage(key, TOP_LEVEL_KEYS, []), true);
  }
  const defined: Defined = {
    components: { receivers: new Map(), processors: new Map(), exporters: new Map(), extensions: new Map() },
    ids: { receivers: [], processors: [], exporters: [], extensions: [] },
  };
  for (const kind of KINDS) {
    defined.ids[kind] = Object.keys(asRecord(top[kind]) ?? {});
    defined.components[kind] = readComponents(kind, top[kind], registry, ctx);
  }
  const state = readState(top.state, registry.stores, ctx);
  const service = readService(top.service, defined, registry, ctx);
  return { file, ...defined.components, state, service, warnings: [] };
}

/** One top-level component section: each key is a component id, each value its config. */
function readComponents(kind: ComponentKind, raw: unknown, registry: Registry, ctx: ParseContext): Map<string, ComponentConfig> {
  const out = new Map<string, ComponentConfig>();
  if (raw == null) return out;
  const section = asRecord(raw);
  if (!section) {
    ctx.error([kind], `'${kind}' must be a mapping of component ids (type or type/name) to their configs`);
    return out;
  }
  const factories = registry[kind];
  for (const [id, value] of Object.entries(section)) {
    const path = [kind, id];
    const slash = id.indexOf('/');
    const type = slash < 0 ? id : id.slice(0, slash);
    const name = slash < 0 ? undefined : id.slice(slash + 1);
    if (type === '' || (name !== undefined && !COMPONENT_NAME.test(name))) {
      ctx.error(
        path,
        `invalid ${SINGULAR[kind]} id '${id}' in '${kind}': write type or type/name, where the name is non-empty letters, digits, '_', '.' or '-'`,
        true,
      );
      continue;
    }
    const factory = factories.get(type);
    if (!factory) {
      ctx.error(path, unknownTypeMessage(`${SINGULAR[kind]} type`, type, [...factories.keys()], path), true);
      continue;
    }
    const config = factory.schema.parse(value ?? {}, path, ctx);
    out.set(id, { id, type, ...(name === undefined ? {} : { name }), config });
  }
  return out;
}

/** `state` names exactly one store type as its only key: `sqlite: { path: ... }`. */
function readState(raw: unknown, stores: ReadonlyMap<string, StoreFactory>, ctx: ParseContext): VigilConfig['state'] {
  const types = [...stores.keys()];
  const section = asRecord(raw ?? {});
  if (!section) {
    ctx.error(['state'], `'state' must be a mapping with one store type as its key (one of ${types.join(', ')}), e.g. sqlite: { path: .vigil/state.db }`);
    return { type: FALLBACK_STORE, config: undefined };
  }
  const [chosen, ...extra] = Object.keys(section);
  for (const key of extra) {
    ctx.error(['state', key], `'state' must name exactly one store, got ${[chosen, ...extra].join(', ')}; keep one of them`, true);
  }
  const type = chosen ?? (stores.has(DEFAULT_STORE) ? DEFAULT_STORE : FALLBACK_STORE);
  const factory = stores.get(type);
  if (!factory) {
    ctx.error(['state', type], unknownTypeMessage('store type', type, types, ['state']), true);
    return { type, config: undefined };
  }
  return { type, config: factory.schema.parse(section[type] ?? {}, ['state', type], ctx) };
}

function unknownTypeMessage(what: string, type: string, valid: string[], path: Path): string {
  const guess = closest(type, valid);
  const hint = guess ? ` (did you mean '${guess}'?)` : '';
  const choices = valid.length ? `valid types: ${valid.join(', ')}` : `no ${what}s are registered`;
  return `unknown ${what} '${type}' in ${describePath(path)}${hint}; ${choices}`;
}

/** The yaml library's messages, made single-line and, for the common cases, actionable. */
function yamlMessage(e: YAMLError, text: string): string {
  if (e.code === 'DUPLICATE_KEY') {
    const key = /^("[^"\n]*"|'[^'\n]*'|[^:\n]+?)\s*:/.exec(text.slice(e.pos[0]))?.[1];
    return `duplicate key${key ? ` '${key}'` : ''}: each key may appear once in a mapping; merge or remove the repeated one`;
  }
  if (e.code === 'MULTIPLE_DOCS') return "the file must hold a single YAML document; remove the '---' and what follows";
  // `{ tag: ${env:X} }`: inside a flow mapping the `{` of an unquoted reference ends the scalar.
  const hint = text.startsWith('${', e.pos[0] - 1) ? '; quote values holding ${env:...} inside { } or [ ], e.g. "${env:VAR}"' : '';
  return `YAML syntax error: ${e.message.split('\n')[0]}${hint}`;
}

function toDiagnostic(issue: Issue, file: string, doc: Document, lineCounter: LineCounter): Diagnostic {
  const { line, col } = positionOf(doc, lineCounter, issue.path, issue.atKey);
  return { file, line, col, message: issue.message, severity: issue.severity };
}

function sortByPosition(ds: Diagnostic[]): Diagnostic[] {
  return [...ds].sort((a, b) => a.line - b.line || a.col - b.col);
}

function startsWith(path: Path, prefix: Path): boolean {
  return prefix.length <= path.length && prefix.every((seg, i) => String(seg) === String(path[i]));
}
