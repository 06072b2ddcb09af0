/**
 * The component model of the OpenTelemetry Collector: each component type has a factory with a
 * type name, a validating schema whose defaults are the default config, and a create function.
 * Factories are registered in one explicit list (src/components.ts), never by import side effects.
 */
import type { OperatorFunction } from 'rxjs';
import type { HistogramSnapshot } from './internal/histogram.ts';
import type { IngestActivity } from './internal/ingest-activity.ts';
import type { Schema } from './config/schema.ts';
import type { Logger } from './logger.ts';
import type { AgentEvent } from './model/event.ts';
import type { OutboxEntry } from './model/work.ts';
import type { StateClient } from './store/state-client.ts';
import type { StateWrite } from './store/state.ts';
import type { StateStore } from './store/types.ts';
import type { WorkPage } from './processors/page.ts';

export type Signal = 'traces' | 'logs';
export const SIGNALS: readonly Signal[] = ['traces', 'logs'];

export interface Lifecycle {
  start(): Promise<void>;
  /** Idempotent; stops accepting, flushes, closes handles. */
  shutdown(): Promise<void>;
  /** Counters for the status endpoint (received, refused, ...), when the component keeps any. */
  stats?(): unknown;
  /** The component's own metrics, read at scrape time; the service adds the component id label. */
  metrics?(): ComponentMetric[];
}

/**
 * One sample of a component's own metric, in Prometheus and Collector conventions: the name says
 * what is counted and its unit (`vigil_receiver_accepted_records_total`), counters end in `_total`,
 * one meaning per name (the labels only split it), and `help` says what one unit is.
 */
export type ComponentMetric = ScalarMetric | HistogramMetric;

export interface ScalarMetric {
  name: string;
  type: 'counter' | 'gauge';
  help: string;
  labels: Record<string, string>;
  value: number;
}

/** A duration's distribution (`vigil_receiver_ack_duration_seconds`): buckets, sum and count. */
export interface HistogramMetric {
  name: string;
  type: 'histogram';
  help: string;
  labels: Record<string, string>;
  histogram: HistogramSnapshot;
}

/** What a receiver hands records to: appends durably, resolves after the append committed. */
export type IngestConsumer = (events: AgentEvent[], opts?: IngestOptions) => Promise<IngestResult>;
export interface IngestOptions {
  /**
   * The receiver's own state (file offsets, ...) to write with these records, built with
   * `settings.state` (see AppendOptions in src/store/types.ts). When the records go to several
   * pipelines the state is written with the last pipeline's append, so it never runs ahead of a
   * pipeline that has not received the records yet; after a crash in between, the receiver
   * re-reads from its older state and the event-id dedupe drops what the first pipelines have.
   * May come with no records (a batch of only malformed lines still moves an offset).
   */
  state?: StateWrite[];
  /**
   * Trace id → session, named by the records of this batch (kept or not: a successful root span
   * that names its session is not kept, the fact is). The records of those traces that name no
   * session take it (DESIGN 3.3). May come with no records.
   */
  traceSessions?: ReadonlyMap<string, string>;
}
export interface IngestResult {
  appended: number;
  duplicates: number;
}

export interface ComponentSettings {
  /** Full component id, `type` or `type/name`. */
  id: string;
  logger: Logger;
}

export interface ReceiverSettings extends ComponentSettings {
  /** One consumer per signal this receiver feeds; absent when no pipeline of that signal uses it. */
  consumers: Partial<Record<Signal, IngestConsumer>>;
  /**
   * Signals some pipeline forwards downstream: for these the receiver attaches each received
   * record to its event (`forward`) and also hands over the records it would otherwise count as
   * irrelevant, marked `forwardOnly`.
   */
  forward?: Partial<Record<Signal, boolean>>;
  /**
   * Signals some pipeline's processors want activity markers of (see ProcessorCapabilities): for
   * these the receiver also appends the small `agent.activity` events of src/model/activity.ts.
   */
  markers?: Partial<Record<Signal, boolean>>;
  /**
   * The receiver's state in the store (namespace = its id): read it at start (e.g. restore file
   * offsets with `list`), build writes to hand with records (`IngestOptions.state`). Absent when
   * the receiver runs without a store (tests of the receiver alone).
   */
  state?: StateClient;
  /**
   * Where a receiver that answers requests (OTLP/HTTP, OTLP/gRPC) says which requests it is working
   * on, so that pipelines and exporters let them go first (src/internal/ingest-activity.ts).
   */
  activity?: IngestActivity;
}

export interface ProcessorSettings extends ComponentSettings {
  pipeline: string;
  store: StateStore;
  /**
   * The processor's state and timers (namespace = its id, owner of its timers): see
   * src/store/state-client.ts. Writes go into the page's commit with `withState` / `withTimers`.
   */
  state: StateClient;
  /**
   * The other pipelines that receive the same records (a receiver feeding several pipelines of
   * one signal). A processor whose state is shared across pipelines (recurrence's groups) uses it
   * to count a record once however many of them process it; empty when none.
   */
  peers?: readonly string[];
}

export interface ExporterSettings extends ComponentSettings {}

/** Whether vigil can accept and keep data now; when not, why (one reason per problem). */
export interface Readiness {
  ready: boolean;
  reasons: string[];
}

export interface ExtensionSettings extends ComponentSettings {
  /** Readiness as the service sees it: running, the store reachable and writable, ingest not over its limit. */
  readiness(): Promise<Readiness>;
  /** The store's status with the service's counters, for operators. */
  status(): Promise<unknown>;
  /**
   * The bearer tokens the receivers require: operator endpoints without their own `auth` accept
   * these, so protecting ingest also protects what the operator endpoints reveal.
   */
  receiverTokens: readonly string[];
  /** The failures the processors reported at or after `since` (ms since the epoch), newest first by failure time. */
  failures?(since: number): Promise<ReportedFailure[]>;
}

/**
 * An exporter delivers outbox entries; resolving means all were confirmed by the receiving side,
 * throwing (an ExportError) says how far it got and whether to retry. An exporter that delivers
 * one entry at a time reports each confirmation through `progress(n)` (the first n entries are
 * confirmed), so a crash mid-batch repeats only what was not confirmed.
 */
export interface Exporter extends Lifecycle {
  export(entries: OutboxEntry[], progress?: (delivered: number) => Promise<void>): Promise<void>;
}

export interface Factory<Cfg, Settings, Instance> {
  readonly type: string;
  readonly schema: Schema<Cfg>;
  /** Signals the component handles (receivers, processors and exporters). */
  readonly signals?: readonly Signal[];
  create(settings: Settings, config: Cfg): Instance;
}

/**
 * What an exporter consumes from its pipeline besides work events, as a Collector component
 * declares its `consumer.Capabilities`. The service builds a pipeline's stages from its exporters'
 * capabilities and never reads an exporter's config to find out.
 */
export interface ExporterCapabilities {
  /** The pipeline's received records, enriched with their diagnosis (`forward` outbox items). */
  forwardedRecords?: boolean;
  /** An `occurrence` outbox item for every counted occurrence, not only those that made work. */
  everyOccurrence?: boolean;
}

/** What a processor consumes besides failure evidence, as its factory declares it (the wiring follows). */
export interface ProcessorCapabilities {
  /** Activity markers (src/model/activity.ts): receivers feeding the pipeline append them. */
  activityMarkers?: boolean;
  /**
   * The processor counts occurrences (`recurrence`). Of the records through which one failure is
   * seen, the correlation step names one to be counted, preferring a record that goes to a
   * pipeline with such a processor (DESIGN 3.3, one failure, one occurrence).
   */
  countsOccurrences?: boolean;
}

/** What a processor tells operators (`vigil status`, `GET /status`, `GET /v1/failures`), read from its state. */
export interface ProcessorStatus {
  /** Reported failures, newest first by failure time (the watchdog's provider reports). */
  failures?: ReportedFailure[];
  [key: string]: unknown;
}

/** One reported failure as status shows it: the report's data with its failure time. */
export interface ReportedFailure {
  /** Failure (event) time, ms since the epoch, and as ISO 8601. */
  failed_at_ms: number;
  failed_at: string;
  /** The human line. */
  line: string;
  [key: string]: unknown;
}

export interface ReceiverFactory<Cfg = unknown> extends Factory<Cfg, ReceiverSettings, Lifecycle> {
  /** The bearer tokens this receiver, so configured, requires (none: open); operator endpoints accept them too. */
  bearerTokens?(config: Cfg): readonly string[];
}
export interface ProcessorFactory<Cfg = unknown> extends Factory<Cfg, ProcessorSettings, OperatorFunction<WorkPage, WorkPage>> {
  /** What this processor, so configured, consumes besides failure evidence; absent means nothing. */
  capabilities?(config: Cfg): ProcessorCapabilities;
  /** What it tells operators, read from its state (a client of its namespace, read-only use). */
  status?(state: StateClient, config: Cfg): Promise<ProcessorStatus>;
  /**
   * Writes, with a commit of its own, state that must hold from the processor's very first start
   * on (the watchdog's history mark), before the pipeline processes its first page. `startedAt`:
   * when the service started, before any receiver listened. Runs at every start; once the store is
   * reachable when it connects late.
   */
  prepare?(settings: ProcessorSettings, config: Cfg, startedAt: number): Promise<void>;
}
export interface ExporterFactory<Cfg = unknown> extends Factory<Cfg, ExporterSettings, Exporter> {
  /** What this exporter, so configured, consumes; absent means work events only. */
  capabilities?(config: Cfg): ExporterCapabilities;
}
export type ExtensionFactory<Cfg = unknown> = Factory<Cfg, ExtensionSettings, Lifecycle>;
export type StoreFactory<Cfg = unknown> = Factory<Cfg, ComponentSettings, StateStore>;

export type ComponentKind = 'receivers' | 'processors' | 'exporters' | 'extensions';

export interface Registry {
  receivers: ReadonlyMap<string, ReceiverFactory>;
  processors: ReadonlyMap<string, ProcessorFactory>;
  exporters: ReadonlyMap<string, ExporterFactory>;
  extensions: ReadonlyMap<string, ExtensionFactory>;
  stores: ReadonlyMap<string, StoreFactory>;
}

export function makeRegistry(lists: {
  receivers: ReceiverFactory[];
  processors: ProcessorFactory[];
  exporters: ExporterFactory[];
  extensions: ExtensionFactory[];
  stores: StoreFactory[];
}): Registry {
  const index = <F extends { type: string }>(kind: string, fs: F[]): Map<string, F> => {
    const m = new Map<string, F>();
    for (const f of fs) {
      if (m.has(f.type)) throw new Error(`duplicate ${kind} factory '${f.type}'`);
      m.set(f.type, f);
    }
    return m;
  };
  return {
    receivers: index('receiver', lists.receivers),
    processors: index('processor', lists.processors),
    exporters: index('exporter', lists.exporters),
    extensions: index('extension', lists.extensions),
    stores: index('store', lists.stores),
  };
}
