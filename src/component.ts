/**
 * The component model of the OpenTelemetry Collector: each component type has a factory with a
 * type name, a validating schema whose defaults are the default config, and a create function.
 * Factories are registered in one explicit list (src/components.ts), never by import side effects.
 */
import type { OperatorFunction } from 'rxjs';
import type { Schema } from './config/schema.ts';
import type { Logger } from './logger.ts';
import type { AgentEvent } from './model/event.ts';
import type { OutboxEntry } from './model/work.ts';
import type { StateStore } from './store/types.ts';
import type { WorkPage } from './processors/page.ts';

export type Signal = 'traces' | 'logs';
export const SIGNALS: readonly Signal[] = ['traces', 'logs'];

export interface Lifecycle {
  start(): Promise<void>;
  /** Idempotent; stops accepting, flushes, closes handles. */
  shutdown(): Promise<void>;
  /** Counters for status and metrics (received, refused, ...), when the component keeps any. */
  stats?(): unknown;
}

/** What a receiver hands records to: appends durably, resolves after the append committed. */
export type IngestConsumer = (events: AgentEvent[]) => Promise<IngestResult>;
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
}

export interface ProcessorSettings extends ComponentSettings {
  pipeline: string;
  store: StateStore;
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
  /** Receivers: the bearer tokens a config makes them require (none: open). */
  readonly bearerTokens?: (config: Cfg) => readonly string[];
  create(settings: Settings, config: Cfg): Instance;
}

export type ReceiverFactory<Cfg = any> = Factory<Cfg, ReceiverSettings, Lifecycle>;
export type ProcessorFactory<Cfg = any> = Factory<Cfg, ProcessorSettings, OperatorFunction<WorkPage, WorkPage>>;
export type ExporterFactory<Cfg = any> = Factory<Cfg, ExporterSettings, Exporter>;
export type ExtensionFactory<Cfg = any> = Factory<Cfg, ExtensionSettings, Lifecycle>;
export type StoreFactory<Cfg = any> = Factory<Cfg, ComponentSettings, StateStore>;

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
