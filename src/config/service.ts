/**
 * The `service` section: which extensions run and how components are wired into pipelines. Every
 * reference is cross-checked against the top-level sections before anything is built (the
 * Collector's `otelcol/config.go` Validate), and each bad reference is reported at its list item.
 */
import type { ComponentKind, Registry, Signal } from '../component.ts';
import { SIGNALS } from '../component.ts';
import type { ComponentConfig, PipelineConfig, ServiceConfig } from './load.ts';
import type { ParseContext, Path } from './schema.ts';
import { closest, defaultsOf, describePath, s } from './schema.ts';
import { DEFAULT_CORRELATION } from '../correlation/ingest.ts';

const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
const PIPELINE_NAME = /^[A-Za-z0-9_.-]+$/;
const PIPELINE_IDS = 'traces, logs, traces/<name>, logs/<name>';
export const SINGULAR: Record<ComponentKind, string> = { receivers: 'receiver', processors: 'processor', exporters: 'exporter', extensions: 'extension' };

const componentIds = s.array(s.string({ minLength: 1, patternHint: 'component ids (type or type/name)' }));

/** Shape and unknown keys only; references are checked below against the raw lists. */
const serviceSchema = s.object({
  extensions: componentIds.default([]),
  pipelines: s.record(s.object({ receivers: componentIds, processors: componentIds.default([]), exporters: componentIds })).optional(),
  telemetry: s.object({
    logs: s.object({ level: s.enumOf(LOG_LEVELS).default('info') }),
    /** vigil's own metrics in the Prometheus text format at http://<address>/metrics; off when absent. */
    metrics: s.object({
      address: s.endpoint().optional(),
      /** Token for GET /metrics; without it the receivers' tokens are taken (or none). */
      auth: s.object({ bearer_token: s.secret() }).nonEmpty().optional(),
    }),
    /** vigil's own traces (pages processed, exports) sent over OTLP/HTTP; off when absent. */
    traces: s.object({
      endpoint: s.url(['http:', 'https:']).optional(),
      encoding: s.enumOf(['proto', 'json'] as const).default('proto'),
      headers: s.record(s.secret()).default({}),
    }),
  }),
  /** How long a shutdown (SIGINT/SIGTERM) may take to process and deliver what was accepted; the rest waits for the next start. */
  drain_timeout: s.duration().default(15_000),
  /** Records a pipeline reads from one partition's ingest log per page (one atomic commit each). */
  processing: s.object({ page_size: s.int({ min: 1, max: 100_000 }).default(256) }),
  /** Records waiting in one pipeline's ingest log beyond which receivers refuse with a retryable answer. */
  ingest: s.object({ max_backlog: s.int({ min: 1 }).default(100_000) }),
  /**
   * Trace-aware sessions and one failure, one occurrence (DESIGN 3.3): how long records wait for
   * their trace's session and for the other records of their failure, and how many traces the
   * store remembers.
   */
  correlation: s.object({
    /** A record that names no session waits this long for its trace's session, then takes service.instance.id / default. */
    session_wait: s.duration().default(DEFAULT_CORRELATION.sessionWait),
    /** A failure record of a trace waits this long for the other records of its failure (the span a log is about, a failed child). */
    failure_wait: s.duration().default(DEFAULT_CORRELATION.failureWait),
    /** Traces whose session and failure records the store keeps at most (the oldest written go first). */
    max_traces: s.int({ min: 1 }).default(DEFAULT_CORRELATION.maxTraces),
    /** How long a trace's session and failure records are kept after they were last written. */
    trace_ttl: s.duration({ min: 1000 }).default(DEFAULT_CORRELATION.traceTtl),
  }),
});

/** What the service section refers to: the components that parsed, and every id written down. */
export interface Defined {
  components: Record<ComponentKind, Map<string, ComponentConfig>>;
  /** All ids under each section, including those whose type was unknown (already reported). */
  ids: Record<ComponentKind, string[]>;
}

export function readService(raw: unknown, defined: Defined, registry: Registry, ctx: ParseContext): ServiceConfig {
  const parsed = serviceSchema.parse(raw ?? {}, ['service'], ctx);
  const used: Record<ComponentKind, Set<string>> = { receivers: new Set(), processors: new Set(), exporters: new Set(), extensions: new Set() };
  const rawService = asRecord(raw);

  const extensions = stringItems(rawService?.extensions);
  checkReferences('extensions', extensions, ['service', 'extensions'], undefined, defined, registry, used, ctx);

  const pipelines = new Map<string, PipelineConfig>();
  const rawPipelines = asRecord(rawService?.pipelines) ?? {};
  for (const [id, rawPipeline] of Object.entries(rawPipelines)) {
    const path = ['service', 'pipelines', id];
    const signal = pipelineSignal(id, path, ctx);
    const pipeline: PipelineConfig = { id, signal: signal ?? 'traces', receivers: [], processors: [], exporters: [] };
    for (const kind of ['receivers', 'processors', 'exporters'] as const) {
      const list = asRecord(rawPipeline)?.[kind];
      pipeline[kind] = stringItems(list);
      checkReferences(kind, pipeline[kind], [...path, kind], signal, defined, registry, used, ctx);
      if (kind !== 'processors' && Array.isArray(list) && list.length === 0) {
        ctx.error([...path, kind], `${describePath([...path, kind])} must list at least one ${SINGULAR[kind]}`);
      }
    }
    if (signal) pipelines.set(id, pipeline);
  }
  // A `service` or `pipelines` of the wrong type was already reported by the schema.
  const wrongType = (raw != null && !rawService) || (rawService?.pipelines != null && !asRecord(rawService.pipelines));
  if (Object.keys(rawPipelines).length === 0 && !wrongType) {
    ctx.error(
      ['service', 'pipelines'],
      `no pipelines are defined: add service.pipelines with at least one of ${PIPELINE_IDS}, e.g. traces: { receivers: [otlp], exporters: [debug] }`,
    );
  }

  warnUnused(defined, used, ctx);
  // The settings as the schema parsed them, its defaults filled in. Without a parse the section
  // was reported as wrong, and the config is refused before these are used.
  const { telemetry, drain_timeout, processing, ingest, correlation } = parsed ?? defaultsOf(serviceSchema);
  return { extensions, pipelines, telemetry, drain_timeout, processing, ingest, correlation };
}

/** `traces`, `logs`, `traces/<name>`, `logs/<name>`; anything else is reported at the key. */
function pipelineSignal(id: string, path: Path, ctx: ParseContext): Signal | undefined {
  const slash = id.indexOf('/');
  const signal = slash < 0 ? id : id.slice(0, slash);
  if (!SIGNALS.includes(signal as Signal)) {
    const guess = closest(signal, SIGNALS);
    const hint = guess ? ` (did you mean '${guess}'?)` : '';
    ctx.error(path, `unknown pipeline signal '${signal}' in ${describePath(path)}${hint}; valid pipeline ids: ${PIPELINE_IDS}`, true);
    return undefined;
  }
  if (slash >= 0 && !PIPELINE_NAME.test(id.slice(slash + 1))) {
    ctx.error(path, `invalid pipeline id '${id}': the name after '/' must be non-empty letters, digits, '_', '.' or '-'`, true);
    return undefined;
  }
  return signal as Signal;
}

function checkReferences(
  kind: ComponentKind,
  ids: string[],
  path: Path,
  signal: Signal | undefined,
  defined: Defined,
  registry: Registry,
  used: Record<ComponentKind, Set<string>>,
  ctx: ParseContext,
): void {
  const where = path.join('.');
  const seen = new Set<string>();
  ids.forEach((id, i) => {
    const itemPath = [...path, i];
    if (id === '') return; // empty or non-scalar item: the schema reported it
    if (seen.has(id)) {
      ctx.error(itemPath, `${where}: '${id}' is listed more than once; list each ${SINGULAR[kind]} once`);
      return;
    }
    seen.add(id);
    const all = defined.ids[kind];
    if (!all.includes(id)) {
      const guess = closest(id, all);
      const choices = all.length ? `defined: ${[...all].sort().join(', ')}` : `none are defined, add '${id}' under '${kind}'`;
      ctx.error(itemPath, `${where}: '${id}' is not defined under '${kind}'; ${choices}${guess ? ` (did you mean '${guess}'?)` : ''}`);
      return;
    }
    used[kind].add(id);
    const component = defined.components[kind].get(id);
    const supported = component && registry[kind].get(component.type)?.signals;
    if (signal && supported && !supported.includes(signal)) {
      ctx.error(itemPath, `${where}: ${SINGULAR[kind]} '${id}' does not handle ${signal} (it handles: ${supported.join(', ')}); remove it from this pipeline`);
    }
  });
}

/** Unused components are legal but almost always a mistake, so they warn (at their key). */
function warnUnused(defined: Defined, used: Record<ComponentKind, Set<string>>, ctx: ParseContext): void {
  for (const kind of ['receivers', 'processors', 'exporters', 'extensions'] as const) {
    for (const id of defined.components[kind].keys()) {
      if (used[kind].has(id)) continue;
      const fix =
        kind === 'extensions'
          ? 'is not listed in service.extensions; it will not be started (add it there or remove it)'
          : 'is not used by any pipeline; it will not be started (add it to a pipeline or remove it)';
      ctx.issues.push({ path: [kind, id], message: `${SINGULAR[kind]} '${id}' is defined but ${fix}`, severity: 'warning', atKey: true });
    }
  }
}

export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** List items as ids, keeping their indexes (the schema already reported non-scalar items). */
function stringItems(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return value.map((v) => (typeof v === 'string' || typeof v === 'number' ? String(v) : ''));
}
