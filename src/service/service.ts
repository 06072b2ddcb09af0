/**
 * The service wires components from the config (the Collector's `service` package): one store,
 * receivers feeding each pipeline's ingest log, one processor chain and runner per pipeline, one
 * exporter runner per (pipeline, exporter). Start order: the store opens; every component is
 * created; everything that listens binds (metrics, extensions, receivers — what an accepted
 * request appends is durable and waits for processing); only then do exporters start and the
 * runners deliver. So a vigil that cannot start (a port in use) has sent nothing anywhere.
 * Shutdown reverses it and drains in-flight work.
 */
import { IngestActivity } from '../internal/ingest-activity.ts';
import type { OperatorFunction } from 'rxjs';
import type {
  Exporter,
  ExporterCapabilities,
  IngestConsumer,
  IngestOptions,
  Lifecycle,
  ProcessorStatus,
  Readiness,
  Registry,
  ReportedFailure,
  Signal,
} from '../component.ts';
import type { VigilConfig } from '../config/load.ts';
import { errorMessage, isVigilError, VigilError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { AgentEvent } from '../model/event.ts';
import type { WorkPage } from '../processors/page.ts';
import { stateClient } from '../store/state-client.ts';
import { encodeStateWrites, type StateWrite } from '../store/state.ts';
import type { AppendResult, StateStore } from '../store/types.ts';
import { deliveryOf } from '../exporters/delivery.ts';
import { ExporterRunner } from './exporter-runner.ts';
import { LOOP_DELAY_INTERVAL_MS, LoopDelayMonitor } from './loop-delay.ts';
import { componentFamilies, family, histogramSamples, type MetricFamily } from './metrics.ts';
import { createSelfTracing, type SelfTracing } from './self-tracing.ts';
import { TelemetryServer } from './telemetry-server.ts';
import { PipelineRunner } from './pipeline-runner.ts';
import { forwardRecords } from '../processors/forward/operator.ts';
import { occurrenceRecords } from '../processors/occurrences/operator.ts';
import { backoffDelay, sleep } from '../internal/backoff.ts';
import { operatorAuth } from '../internal/bearer.ts';
import { VIGIL_VERSION } from '../version.ts';
import {
  CORRELATION_PIPELINE,
  mayGoStraight,
  sessionFacts,
  splitForCorrelation,
  waitingEvent,
  WrittenFacts,
  type CorrelationSettings,
} from '../correlation/ingest.ts';
import { CorrelationRunner } from './correlation-runner.ts';

export interface ServiceOptions {
  logger: Logger;
  /** Overrides for tests. */
  maxBacklog?: number;
  pageSize?: number;
  /** vigil's clock (ms since the epoch) for arrival times and waits; `Date.now` by default. */
  now?: () => number;
}

interface PipelineParts {
  runner: PipelineRunner;
  exporters: ExporterRunner[];
}

export class Service {
  private store: StateStore | undefined;
  private readonly receivers = new Map<string, Lifecycle>();
  private readonly exporters = new Map<string, Exporter>();
  private readonly extensions = new Map<string, Lifecycle>();
  private readonly pipelines = new Map<string, PipelineParts>();
  private state: 'new' | 'starting' | 'running' | 'stopping' | 'stopped' = 'new';
  private stopping: Promise<void> | undefined;
  private telemetryServer: TelemetryServer | undefined;
  /** Served as vigil_event_loop_delay_seconds; runs only while metrics are served. */
  private loopDelay: LoopDelayMonitor | undefined;
  private selfTracing: SelfTracing | undefined;
  /** Whether the exporter and pipeline runners run (they wait for a reachable store). */
  private processing = false;
  /**
   * The processors' `prepare` steps, run once before any pipeline runs (prepareProcessors): one per
   * processor id, as its state is (a processor in several pipelines shares its namespace).
   */
  private readonly preparations = new Map<string, () => Promise<void>>();
  private prepared = false;
  /**
   * Set while the store refuses appends although it is reachable (a full disk, Redis out of
   * memory): readiness says so until an append, or a probe write of the failed append's size,
   * succeeds.
   */
  private writeFailure: { since: number; reason: string; bytes: number; probedAt: number } | undefined;
  readonly ingestStats = { appended: 0, duplicates: 0, refused: 0 };
  /** Per pipeline: what its exporters consume besides work events, as their factories declare it. */
  private readonly consumes: ReadonlyMap<string, Required<ExporterCapabilities>>;
  /** The correlation log's runner (trace-aware sessions, one failure one occurrence); created with the store. */
  private correlation: CorrelationRunner | undefined;
  /** The requests receivers are answering: pipelines and exporters let them go first. */
  private readonly activity = new IngestActivity();
  private readonly correlationSettings: CorrelationSettings;
  /** Trace → session facts this process wrote recently (one write per trace, not per request). */
  private readonly writtenFacts: WrittenFacts;
  /** Appends to the correlation log under way: until they land, the log counts as holding records. */
  private logAppends = 0;
  private readonly now: () => number;
  /** Pipelines whose processors want activity markers, as their factories declare it. */
  private readonly wantsMarkers: ReadonlySet<string>;

  constructor(
    private readonly config: VigilConfig,
    private readonly registry: Registry,
    private readonly opts: ServiceOptions,
  ) {
    this.consumes = new Map(
      [...config.service.pipelines].map(([pid, p]) => {
        const caps = p.exporters.map((eid) => {
          const c = config.exporters.get(eid)!;
          return registry.exporters.get(c.type)!.capabilities?.(c.config) ?? {};
        });
        return [pid, { forwardedRecords: caps.some((x) => x.forwardedRecords === true), everyOccurrence: caps.some((x) => x.everyOccurrence === true) }];
      }),
    );
    const c = config.service.correlation;
    this.correlationSettings = { sessionWait: c.session_wait, failureWait: c.failure_wait, maxTraces: c.max_traces, traceTtl: c.trace_ttl };
    this.writtenFacts = new WrittenFacts(this.correlationSettings);
    this.now = opts.now ?? Date.now;
    this.wantsMarkers = new Set(
      [...config.service.pipelines]
        .filter(([, p]) =>
          p.processors.some((id) => {
            const c = config.processors.get(id)!;
            return registry.processors.get(c.type)!.capabilities?.(c.config).activityMarkers === true;
          }),
        )
        .map(([pid]) => pid),
    );
  }

  get isReady(): boolean {
    return this.state === 'running' && this.processing && (this.store?.isAvailable?.() ?? true) && !this.writeFailure;
  }

  /**
   * Whether vigil can accept and keep data now, and why not: not running yet (or stopping), the
   * store unreachable, the store refusing writes, or a pipeline's ingest backlog at its limit
   * (receivers refuse then). A failed write is probed again at most once a second while asked.
   */
  async readiness(): Promise<Readiness> {
    const reasons: string[] = [];
    if (this.state !== 'running') reasons.push(`vigil is ${this.state}`);
    const store = this.store;
    if (store && !(store.isAvailable?.() ?? true)) reasons.push(`the ${this.config.state.type} state store is unreachable`);
    else if (this.state === 'running' && !this.processing) reasons.push('processing waits for the state store');
    if (store && this.writeFailure && (store.isAvailable?.() ?? true)) await this.probeWrite(store);
    if (this.writeFailure) reasons.push(`the state store refuses writes since ${new Date(this.writeFailure.since).toISOString()}: ${this.writeFailure.reason}`);
    if (store && this.state === 'running') {
      const maxBacklog = this.opts.maxBacklog ?? this.config.service.ingest.max_backlog;
      for (const pid of this.pipelines.keys()) {
        const pending = await store.pendingCount(pid).catch(() => 0);
        if (pending >= maxBacklog)
          reasons.push(`pipeline '${pid}' has ${pending} records waiting (service.ingest.max_backlog ${maxBacklog}); receivers refuse until it drains`);
      }
    }
    return { ready: reasons.length === 0, reasons };
  }

  private async probeWrite(store: StateStore): Promise<void> {
    const f = this.writeFailure;
    if (!f || !store.probeWrite || Date.now() - f.probedAt < 1000) return;
    f.probedAt = Date.now();
    try {
      await store.probeWrite(f.bytes);
      this.writeFailure = undefined;
      this.opts.logger.info('the state store takes writes again', { store: this.config.state.type });
    } catch (err) {
      f.reason = errorMessage(err);
    }
  }

  /** Starts everything; on a failure, stops what had started and rethrows. */
  async start(): Promise<void> {
    this.state = 'starting';
    try {
      await this.startInner();
      this.state = 'running';
      this.opts.logger.info('vigil is running', {
        pipelines: [...this.pipelines.keys()],
        store: this.config.state.type,
        receivers: [...this.receivers.keys()],
      });
    } catch (err) {
      await this.shutdown().catch(() => undefined);
      throw err;
    }
  }

  private async startInner(): Promise<void> {
    const { config, registry, opts } = this;
    const log = opts.logger;
    // Before any receiver listens: what processors keep from their first start (prepare) dates from here.
    const startedAt = this.now();
    for (const w of config.warnings) log.warn(`${w.file}:${w.line}:${w.col}: ${w.message}`);

    this.selfTracing = createSelfTracing(config.service.telemetry.traces);
    const tracer = this.selfTracing.tracer;

    const storeFactory = registry.stores.get(config.state.type)!;
    const store = storeFactory.create({ id: `state/${config.state.type}`, logger: log.child({ component: 'state' }) }, config.state.config);
    await store.open();
    this.store = store;

    for (const [id, c] of config.exporters) {
      if (!this.isUsed('exporters', id)) continue;
      // Created now, started once everything listens (see the header).
      this.exporters.set(id, registry.exporters.get(c.type)!.create({ id, logger: log.child({ component: id }) }, c.config));
    }

    for (const [pid, p] of config.service.pipelines) {
      // Pipelines of the same signal sharing a receiver get the same records.
      const peers = [...config.service.pipelines.values()]
        .filter((o) => o.id !== pid && o.signal === p.signal && o.receivers.some((r) => p.receivers.includes(r)))
        .map((o) => o.id);
      const processors: OperatorFunction<WorkPage, WorkPage>[] = p.processors.map((id) => {
        const c = config.processors.get(id)!;
        const factory = registry.processors.get(c.type)!;
        const settings = { id, logger: log.child({ component: id }), pipeline: pid, store, state: stateClient(store, id, { owner: id }), peers };
        if (factory.prepare && !this.preparations.has(id)) this.preparations.set(id, () => factory.prepare!(settings, c.config, startedAt));
        return factory.create(settings, c.config);
      });
      // The stages the pipeline's exporters asked for, after the configured processors.
      if (this.consumes.get(pid)!.forwardedRecords) processors.push(forwardRecords());
      if (this.consumes.get(pid)!.everyOccurrence) processors.push(occurrenceRecords());
      const chain: OperatorFunction<WorkPage, WorkPage> = (source) => processors.reduce((page$, op) => page$.pipe(op), source);
      const exporterRunners = p.exporters.map(
        (eid) =>
          new ExporterRunner({
            pipeline: pid,
            exporterId: eid,
            exporter: this.exporters.get(eid)!,
            store,
            logger: log.child({ component: eid, pipeline: pid }),
            delivery: deliveryOf(config.exporters.get(eid)!.config),
            tracer,
            activity: this.activity,
          }),
      );
      const runner = new PipelineRunner({
        pipeline: pid,
        store,
        chain,
        logger: log.child({ pipeline: pid }),
        pageSize: opts.pageSize ?? config.service.processing.page_size,
        onCommit: () => exporterRunners.forEach((r) => r.notify()),
        tracer,
        processors: p.processors,
        activity: this.activity,
      });
      this.pipelines.set(pid, { runner, exporters: exporterRunners });
    }

    const pipelineIds = [...config.service.pipelines.keys()];
    this.correlation = new CorrelationRunner({
      store,
      logger: log.child({ component: 'correlation' }),
      settings: this.correlationSettings,
      pageSize: opts.pageSize ?? config.service.processing.page_size,
      counting: new Set(
        pipelineIds.filter((pid) =>
          config.service.pipelines.get(pid)!.processors.some((id) => {
            const c = config.processors.get(id)!;
            return registry.processors.get(c.type)!.capabilities?.(c.config).countsOccurrences === true;
          }),
        ),
      ),
      forwarding: new Set(pipelineIds.filter((pid) => this.consumes.get(pid)!.forwardedRecords)),
      onReleased: (pids) => pids.forEach((pid) => this.pipelines.get(pid)?.runner.notify()),
      now: this.now,
      activity: this.activity,
    });

    // A store reachable now is prepared before the receivers listen, so nothing they acknowledge can
    // be processed, or outlive a crash, before the processors' first-start state exists.
    if (store.isAvailable?.() ?? true) await this.prepareProcessors();

    const receiverTokens = this.receiverTokens();
    if (config.service.telemetry.metrics.address) {
      const auth = operatorAuth(config.service.telemetry.metrics.auth?.bearer_token, receiverTokens);
      this.telemetryServer = new TelemetryServer(config.service.telemetry.metrics.address, () => this.metrics(), auth, log);
      await this.telemetryServer.start();
      this.loopDelay = new LoopDelayMonitor();
      this.loopDelay.start();
      log.info('metrics served', { endpoint: `http://${config.service.telemetry.metrics.address}/metrics`, auth: auth.enabled ? 'bearer' : 'none' });
    }

    for (const id of config.service.extensions) {
      const c = config.extensions.get(id)!;
      const ext = registry.extensions.get(c.type)!.create(
        {
          id,
          logger: log.child({ component: id }),
          readiness: () => this.readiness(),
          status: () => this.status(),
          failures: (since) => this.failures(since),
          receiverTokens,
        },
        c.config,
      );
      await ext.start();
      this.extensions.set(id, ext);
    }

    for (const [id, c] of config.receivers) {
      const consumers: Partial<Record<Signal, IngestConsumer>> = {};
      const forward: Partial<Record<Signal, boolean>> = {};
      const markers: Partial<Record<Signal, boolean>> = {};
      for (const signal of ['traces', 'logs'] as const) {
        const targets = [...config.service.pipelines.values()].filter((p) => p.signal === signal && p.receivers.includes(id)).map((p) => p.id);
        if (targets.length) consumers[signal] = this.consumerFor(targets);
        if (targets.some((pid) => this.consumes.get(pid)!.forwardedRecords)) forward[signal] = true;
        // Markers go to every pipeline of the signal fed by this receiver; the others leave them (NormalOutput).
        if (targets.some((pid) => this.wantsMarkers.has(pid))) markers[signal] = true;
      }
      if (Object.keys(consumers).length === 0) continue;
      const receiver = registry.receivers
        .get(c.type)!
        .create(
          { id, logger: log.child({ component: id }), consumers, forward, markers, state: stateClient(store, id, { owner: id }), activity: this.activity },
          c.config,
        );
      await receiver.start();
      this.receivers.set(id, receiver);
    }

    // Everything listens: now exporters may open their connections and files, and deliver.
    for (const [, exporter] of this.exporters) await exporter.start();

    // Processing needs the store. A networked store that is not reachable yet keeps connecting in
    // the background: the receivers answer retryably until it is (DESIGN 1).
    if (store.isAvailable?.() ?? true) {
      await this.startProcessing();
    } else {
      log.warn('the state store is not reachable yet; receivers answer retryably and processing starts once it connects', { store: config.state.type });
      store.whenReady!().then(
        () => this.startProcessing(true),
        () => undefined,
      );
    }
  }

  /** Runs the processors' `prepare` steps (ProcessorFactory), once. */
  private async prepareProcessors(): Promise<void> {
    if (this.prepared) return;
    for (const prepare of this.preparations.values()) await prepare();
    this.prepared = true;
  }

  /** The bearer tokens the configured receivers require (operator endpoints accept them too). */
  private receiverTokens(): string[] {
    return [...this.config.receivers.values()].flatMap((c) => [...(this.registry.receivers.get(c.type)?.bearerTokens?.(c.config) ?? [])]);
  }

  /**
   * Prepares the processors (once), registers the exporters' cursors, then starts exporter and
   * pipeline runners. At start a failure is a startup error; once running (`retry`, the store
   * connected late) a transient one is retried.
   */
  private async startProcessing(retry = false): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      if (this.state === 'stopping' || this.state === 'stopped') return;
      try {
        await this.prepareProcessors();
        for (const [, p] of this.pipelines) for (const r of p.exporters) await r.start();
        await this.retireRemovedExporters();
        break;
      } catch (err) {
        if (!retry || !(isVigilError(err) && err.transient)) throw err;
        this.opts.logger.warn('cannot start processing yet; retrying', { error: errorMessage(err) });
        await sleep(backoffDelay({ initial: 200, max: 5000 }, attempt));
      }
    }
    for (const [, p] of this.pipelines) p.runner.start();
    this.correlation?.start();
    this.processing = true;
    if (retry) this.opts.logger.info('the state store is reachable: processing started', { store: this.config.state.type });
  }

  /**
   * A single-writer store forgets the cursors of exporters no longer in a pipeline: a cursor that
   * nobody advances would keep the outbox from ever being trimmed.
   */
  private async retireRemovedExporters(): Promise<void> {
    const store = this.store!;
    if (store.retireExporters) {
      for (const [pid, p] of this.config.service.pipelines) {
        const gone = await store.retireExporters(pid, p.exporters);
        if (gone.length) this.opts.logger.info('exporters no longer configured: their outbox cursors are retired', { pipeline: pid, exporters: gone });
      }
      return;
    }
    // A shared store keeps every cursor any sidecar registered: one of an exporter removed from
    // every config holds the outbox back for ever. Only the operator knows whether another sidecar
    // still runs it, so say so at start, with the command that retires it.
    if (!store.foreignExporters) return;
    for (const [pid, p] of this.config.service.pipelines) {
      for (const f of await store.foreignExporters(pid, p.exporters)) {
        this.opts.logger.warn(
          `exporter '${f.exporter}' has an outbox cursor in the shared store but is not in this config: the outbox of pipeline '${pid}' is kept until it reads it. If no sidecar runs it any more, retire it: ${f.retire}`,
          { pipeline: pid, exporter: f.exporter, heldBack: f.lag },
        );
      }
    }
  }

  private isUsed(kind: 'exporters', id: string): boolean {
    return [...this.config.service.pipelines.values()].some((p) => p[kind].includes(id));
  }

  /**
   * The ingest path of DESIGN 1: refuse (retryably) when a pipeline's backlog is over its limit,
   * else append durably and wake the runners. Resolves only after the store committed the
   * appends, which is when a receiver may acknowledge.
   *
   * Records of a trace that can be failures — and, while it holds any, every record — go to the
   * correlation log first, once for all target pipelines (src/correlation/ingest.ts); the others
   * go to each target pipeline's ingest log. The trace → session facts of the batch are written
   * with it.
   *
   * A receiver's state (`opts.state`, with the facts) is written with the last append — the
   * correlation log's when records wait there, else the last target pipeline's: it never runs
   * ahead of a pipeline that has not got the records yet, and after a crash between two appends
   * the receiver re-reads from its older state while the event-id dedupe drops what the first
   * appends already have.
   */
  private consumerFor(pipelineIds: string[]): IngestConsumer {
    // Decided once: which target pipelines keep the received records for forwarding.
    const forwarding = new Set(pipelineIds.filter((pid) => this.consumes.get(pid)!.forwardedRecords));
    const maxBacklog = this.opts.maxBacklog ?? this.config.service.ingest.max_backlog;
    const last = pipelineIds[pipelineIds.length - 1]!;
    return async (events: AgentEvent[], opts: IngestOptions = {}) => {
      const store = this.store;
      if (!store || this.state === 'stopped') {
        this.ingestStats.refused += events.length;
        throw new VigilError('VIGIL_SHUTDOWN', 'vigil is shutting down', { transient: true });
      }
      let appended = 0;
      let duplicates = 0;
      try {
        // A malformed state write is the receiver's bug: refuse it before any pipeline has the records.
        encodeStateWrites(opts.state);
        const now = this.now();
        const waitingNow = await store.pendingCount(CORRELATION_PIPELINE);
        for (const pid of pipelineIds) {
          if ((await store.pendingCount(pid)) + waitingNow >= maxBacklog) {
            this.ingestStats.refused += events.length;
            throw new VigilError('VIGIL_INGEST_BACKPRESSURE', `pipeline '${pid}' has ${maxBacklog} or more records waiting; retry later`, { transient: true });
          }
        }
        const batchSessions = sessionFacts(events, opts.traceSessions);
        const facts = this.writtenFacts.writes(batchSessions, now);
        const state = [...(opts.state ?? []), ...facts];
        const logHolds = waitingNow > 0 || this.logAppends > 0;
        const { waiting, direct } = splitForCorrelation(events, logHolds);
        // The log holds nothing: a batch that would be released at once is planned here and goes
        // straight to its pipeline (src/correlation/ingest.ts); if not, or if the plan's state
        // write conflicts (a round or another batch planned the same trace meanwhile), it goes
        // through the log as below.
        const straightOk =
          this.correlation !== undefined &&
          mayGoStraight(waiting, {
            logHolds,
            pipelines: pipelineIds.length,
            atomicSingleWriter: store.kind === 'memory' || store.kind === 'sqlite',
            failureWait: this.correlationSettings.failureWait,
          });
        const straight = straightOk ? await this.appendStraight(store, events, waiting, batchSessions, last, forwarding.has(last), state, now) : undefined;
        if (straight) {
          this.writtenFacts.note(facts, now);
          if (facts.length) this.correlation?.notify();
          this.ingestStats.appended += straight.appended;
          this.ingestStats.duplicates += straight.duplicates;
          return straight;
        }
        const stateOn = waiting.length ? CORRELATION_PIPELINE : last;
        for (const pid of pipelineIds) {
          const withState = pid === stateOn && state.length > 0;
          if (direct.length === 0 && !withState) continue;
          const r = await store.append(pid, forwarding.has(pid) ? direct : withoutForwarding(direct), withState ? { state } : {});
          appended = Math.max(appended, r.appended);
          duplicates = Math.max(duplicates, r.duplicates);
          this.pipelines.get(pid)?.runner.notify();
        }
        if (waiting.length) {
          this.logAppends++;
          try {
            const r = await store.append(
              CORRELATION_PIPELINE,
              waiting.map((e) => waitingEvent(e, pipelineIds, now)),
              state.length ? { state } : {},
            );
            appended += r.appended;
            duplicates += r.duplicates;
          } finally {
            this.logAppends--;
          }
        }
        this.writtenFacts.note(facts, now);
        // New records to release, or new facts that may release waiting ones.
        if (waiting.length || facts.length) this.correlation?.notify();
      } catch (err) {
        this.noteAppendFailure(store, events, err);
        if (isVigilError(err) && err.transient) throw err;
        this.ingestStats.refused += events.length;
        if (isVigilError(err, 'VIGIL_STATE_INVALID')) throw err;
        throw new VigilError('VIGIL_STORE_UNAVAILABLE', `cannot append to the ingest log: ${errorMessage(err)}`, { transient: true, cause: err });
      }
      if (this.writeFailure) {
        this.writeFailure = undefined;
        this.opts.logger.info('the state store takes writes again', { store: this.config.state.type });
      }
      this.ingestStats.appended += appended;
      this.ingestStats.duplicates += duplicates;
      return { appended, duplicates };
    };
  }

  /**
   * A batch planned at ingest and appended straight to its one pipeline (mayGoStraight said it
   * may): the records in batch order — the planned ones in their decided session, with their
   * correlation — with the receiver's state, the session facts and the per-trace failure records
   * in the same append, so it is as durable and as atomic as a round's commit. Undefined when a
   * record must wait or the append's versioned state conflicts: then the batch goes through the
   * log (nothing of it was written).
   */
  private async appendStraight(
    store: StateStore,
    events: readonly AgentEvent[],
    waiting: readonly AgentEvent[],
    batchSessions: ReadonlyMap<string, string>,
    pipeline: string,
    forwards: boolean,
    state: StateWrite[],
    now: number,
  ): Promise<AppendResult | undefined> {
    const correlation = this.correlation!;
    const s = await correlation.planStraight(waiting, pipeline, now, batchSessions);
    if (!s) return undefined;
    const planned = s.byPipeline.get(pipeline) ?? [];
    const waits = new Set(waiting);
    let next = 0;
    const batch = events.map((e) => (waits.has(e) ? planned[next++]! : e));
    let r: AppendResult;
    try {
      r = await store.append(pipeline, forwards ? batch : withoutForwarding(batch), { state: [...state, ...s.state] });
    } catch (err) {
      if (isVigilError(err, 'VIGIL_STORE_CONFLICT')) return undefined;
      throw err;
    }
    correlation.noteStraight(s);
    this.pipelines.get(pipeline)?.runner.notify();
    return r;
  }

  /**
   * An append refused by a reachable store (not backpressure, not a conflict) means the store
   * cannot keep data now: readiness reports it until a write of that size succeeds again.
   */
  private noteAppendFailure(store: StateStore, events: AgentEvent[], err: unknown): void {
    for (const code of ['VIGIL_INGEST_BACKPRESSURE', 'VIGIL_STORE_CONFLICT', 'VIGIL_SHUTDOWN', 'VIGIL_STATE_INVALID'] as const) if (isVigilError(err, code)) return;
    if (!(store.isAvailable?.() ?? true)) return;
    const reason = errorMessage(err);
    const bytes = Math.min(4 * 1024 * 1024, Math.max(64 * 1024, JSON.stringify(events).length));
    if (!this.writeFailure) {
      this.opts.logger.error('the state store refuses appends; receivers answer retryably and /healthz reports not ready', {
        store: this.config.state.type,
        reason,
      });
      this.writeFailure = { since: Date.now(), reason, bytes, probedAt: Date.now() };
    } else {
      this.writeFailure.reason = reason;
      this.writeFailure.bytes = Math.max(this.writeFailure.bytes, bytes);
    }
  }

  async status(): Promise<Record<string, unknown>> {
    const store = this.store ? await this.store.status() : undefined;
    return {
      state: this.state,
      store,
      processors: await this.processorStatus(),
      ingest: { ...this.ingestStats },
      correlation: this.correlation ? structuredClone(this.correlation.stats) : undefined,
      receivers: Object.fromEntries([...this.receivers].map(([id, r]) => [id, r.stats?.() ?? {}])),
      pipelines: Object.fromEntries(
        [...this.pipelines].map(([id, p]) => [
          id,
          { ...p.runner.stats, exporters: Object.fromEntries(p.exporters.map((e, i) => [this.config.service.pipelines.get(id)!.exporters[i], e.stats])) },
        ]),
      ),
    };
  }

  /** What the processors that report status say, by processor id (read from their state in the store). */
  private async processorStatus(): Promise<Record<string, ProcessorStatus>> {
    return this.store ? processorStatuses(this.config, this.registry, this.store) : {};
  }

  /** The processors' reported failures at or after `since`, newest first by failure time. */
  async failures(since: number): Promise<ReportedFailure[]> {
    const all = Object.values(await this.processorStatus()).flatMap((s) => s.failures ?? []);
    return all.filter((f) => f.failed_at_ms >= since).sort((a, b) => b.failed_at_ms - a.failed_at_ms);
  }

  /**
   * vigil's own metrics, read from the components' counters and the store at scrape time, named
   * by Prometheus and Collector conventions: `vigil_<what>_<unit>`, counters ending in `_total`, one
   * meaning per family (labels only split it).
   */
  async metrics(): Promise<MetricFamily[]> {
    const st = this.store ? await this.store.status().catch(() => undefined) : undefined;
    const perPipeline = (pick: (s: PipelineRunner['stats']) => number) =>
      [...this.pipelines].map(([pipeline, p]) => ({ labels: { pipeline }, value: pick(p.runner.stats) }));
    const perExporter = (pick: (s: ExporterRunner['stats']) => number) =>
      [...this.pipelines].flatMap(([pipeline, p]) =>
        p.exporters.map((e, i) => ({ labels: { pipeline, exporter: this.config.service.pipelines.get(pipeline)!.exporters[i]! }, value: pick(e.stats) })),
      );
    const outboxLag = (st?.pipelines ?? []).flatMap((p) =>
      p.outbox.exporters.map((e) => ({ labels: { pipeline: p.pipeline, exporter: e.exporter }, value: e.lag })),
    );
    const syncs = this.store?.syncDurations?.();
    const ingestLag = (st?.pipelines ?? []).map((p) => ({ labels: { pipeline: p.pipeline }, value: p.partitions.reduce((n, x) => n + x.pending, 0) }));
    return [
      family('vigil_build_info', 'gauge', 'Always 1; the labels name the running vigil and Node.js versions.', [
        { labels: { version: VIGIL_VERSION, node_version: process.version }, value: 1 },
      ]),
      family('vigil_up', 'gauge', '1 while the pipelines run, 0 while starting, stopping or waiting for the store.', [{ labels: {}, value: this.isReady ? 1 : 0 }]),
      family(
        'vigil_ingest_records_total',
        'counter',
        'Records receivers handed to the ingest log, by outcome: appended, duplicate (already held), refused (backpressure or store down).',
        [
          { labels: { outcome: 'appended' }, value: this.ingestStats.appended },
          { labels: { outcome: 'duplicate' }, value: this.ingestStats.duplicates },
          { labels: { outcome: 'refused' }, value: this.ingestStats.refused },
        ],
      ),
      ...componentFamilies('receiver', this.receivers),
      family('vigil_ingest_backlog_records', 'gauge', 'Records waiting in the ingest log, per pipeline.', ingestLag),
      family(
        'vigil_correlation_released_records_total',
        'counter',
        'Records the correlation log released to their pipelines, by how their session was decided: own (named by the record), trace (from another record of the trace), fallback (none known after session_wait).',
        this.correlation
          ? (['own', 'trace', 'fallback'] as const).map((session) => ({ labels: { session }, value: this.correlation!.stats.released[session] }))
          : [],
      ),
      family(
        'vigil_correlation_evidence_records_total',
        'counter',
        'Failure records released as evidence of a failure another record of it counts (one failure, one occurrence).',
        this.correlation ? [{ labels: {}, value: this.correlation.stats.evidence }] : [],
      ),
      family(
        'vigil_pages_total',
        'counter',
        'Pages processed and committed.',
        perPipeline((s) => s.pages),
      ),
      family(
        'vigil_page_failures_total',
        'counter',
        'Page processing attempts that failed and are retried.',
        perPipeline((s) => s.failedPages),
      ),
      family(
        'vigil_classified_records_total',
        'counter',
        'Records classified, by diagnostic class.',
        [...this.pipelines].flatMap(([pipeline, p]) =>
          Object.entries(p.runner.stats.classified).map(([classification, value]) => ({ labels: { pipeline, classification }, value })),
        ),
      ),
      family(
        'vigil_occurrences_total',
        'counter',
        'Failure occurrences counted.',
        perPipeline((s) => s.occurrences),
      ),
      family('vigil_work_events_total', 'counter', 'Work events produced, by type (created, updated).', [
        ...perPipeline((s) => s.workCreated).map((x) => ({ ...x, labels: { ...x.labels, type: 'created' } })),
        ...perPipeline((s) => s.workUpdated).map((x) => ({ ...x, labels: { ...x.labels, type: 'updated' } })),
      ]),
      family('vigil_groups', 'gauge', 'Occurrence groups in the store.', st ? [{ labels: {}, value: st.groups }] : []),
      family('vigil_open_work_items', 'gauge', 'Groups with an open work item.', st ? [{ labels: {}, value: st.openWork }] : []),
      family(
        'vigil_exporter_sent_items_total',
        'counter',
        'Outbox items an exporter delivered (confirmed by the receiving side).',
        perExporter((s) => s.exported),
      ),
      family(
        'vigil_exporter_failed_attempts_total',
        'counter',
        'Delivery attempts that failed (and were retried or dead-lettered), by reason: disk_full, io_error, timeout, connection, redirect, response_too_large, response_cut, http_<status>, redis, error.',
        this.perExporterMap((s) => s.failuresByReason, 'reason'),
      ),
      family(
        'vigil_exporter_dead_lettered_items_total',
        'counter',
        'Outbox items given up on and kept as dead letters, by cause: permanent, max_elapsed_time, retry_disabled, queue_full.',
        this.perExporterMap((s) => s.deadLetteredByCause, 'cause'),
      ),
      family('vigil_outbox_lag_items', 'gauge', 'Outbox items waiting for each exporter.', outboxLag),
      family('vigil_dead_letters', 'gauge', 'Dead letters kept in the store.', st ? [{ labels: {}, value: st.deadLetters.total }] : []),
      family(
        'vigil_pending_timers',
        'gauge',
        'Durable timers waiting to fall due.',
        (st?.pipelines ?? []).map((p) => ({ labels: { pipeline: p.pipeline }, value: p.timers.pending })),
      ),
      family(
        'vigil_fired_timers_total',
        'counter',
        'Durable timers fired (timer pages committed).',
        perPipeline((s) => s.timersFired),
      ),
      family(
        'vigil_state_entries',
        'gauge',
        'Live processor-state entries per namespace.',
        (st?.state ?? []).map((n) => ({ labels: { namespace: n.namespace }, value: n.entries })),
      ),
      family(
        'vigil_state_evicted_entries_total',
        'counter',
        'Processor-state entries evicted at their namespace bound.',
        (st?.state ?? []).map((n) => ({ labels: { namespace: n.namespace }, value: n.evicted })),
      ),
      family(
        'vigil_event_loop_delay_seconds',
        'histogram',
        `How late the event loop ran a timer due every ${LOOP_DELAY_INTERVAL_MS} ms: how long requests, pages and deliveries waited for the loop.`,
        this.loopDelay ? histogramSamples({}, this.loopDelay.snapshot()) : [],
      ),
      family(
        'vigil_store_sync_duration_seconds',
        'histogram',
        "The store's syncs to disk, which acks wait for (SQLite: each fdatasync of the WAL, the call alone, timed in the thread that makes it), by duration; absent for stores that do not sync themselves.",
        syncs ? histogramSamples({ store: this.config.state.type }, syncs) : [],
      ),
    ];
  }

  /** One sample per (pipeline, exporter, key) of a per-exporter map of counters. */
  private perExporterMap(pick: (s: ExporterRunner['stats']) => Partial<Record<string, number>>, label: string) {
    return [...this.pipelines].flatMap(([pipeline, p]) =>
      p.exporters.flatMap((e, i) =>
        Object.entries(pick(e.stats)).map(([key, value]) => ({
          labels: { pipeline, exporter: this.config.service.pipelines.get(pipeline)!.exporters[i]!, [label]: key },
          value: value ?? 0,
        })),
      ),
    );
  }

  /** Stops accepting, drains pipelines and exporters, closes everything. Idempotent. */
  shutdown(): Promise<void> {
    this.stopping ??= this.shutdownInner();
    return this.stopping;
  }

  private async shutdownInner(): Promise<void> {
    const log = this.opts.logger;
    this.state = 'stopping';
    // Pipelines get two thirds of the drain time, exporters deliver until the end of it.
    const drainMs = this.config.service.drain_timeout;
    const deadline = Date.now() + Math.round((drainMs * 2) / 3);
    const exportDeadline = Date.now() + drainMs;
    const settle = async (what: string, fn: () => Promise<void>) => {
      try {
        await fn();
      } catch (err) {
        log.warn(`${what} failed during shutdown`, { error: errorMessage(err) });
      }
    };
    for (const [id, r] of this.receivers) await settle(id, () => r.shutdown());
    // Runners that never started (the store never became reachable) have nothing to drain.
    const started = this.processing;
    // Records whose waits are over go on to their pipelines before those drain; the others stay
    // in the correlation log and wait out the rest after the next start.
    if (started && this.correlation) {
      await settle('correlation', async () => {
        await this.correlation!.stop();
        while (Date.now() < deadline && (await this.correlation!.runOnce())) {
          // released a page; look again
        }
      });
    }
    for (const [, p] of this.pipelines) {
      if (!started) continue;
      await settle('pipeline drain', async () => {
        await p.runner.stop();
        await p.runner.drain(deadline);
      });
    }
    // In parallel: a dead exporter must not use up the others' drain time.
    if (started) await Promise.all([...this.pipelines.values()].flatMap((p) => p.exporters.map((e) => settle('exporter drain', () => e.drain(exportDeadline)))));
    for (const [id, e] of this.exporters) await settle(id, () => e.shutdown());
    this.state = 'stopped';
    for (const [id, x] of this.extensions) await settle(id, () => x.shutdown());
    this.loopDelay?.stop();
    if (this.telemetryServer) await settle('metrics server', () => this.telemetryServer!.shutdown());
    if (this.selfTracing) await settle('self tracing', () => this.selfTracing!.shutdown());
    if (this.store) await settle('state store', () => this.store!.close());
    log.info('vigil stopped');
  }
}

/**
 * The status of every processor used by a pipeline whose factory reports one (`status`), by id:
 * for the running service and for `vigil status` on a store opened read-only.
 */
export async function processorStatuses(config: VigilConfig, registry: Registry, store: StateStore): Promise<Record<string, ProcessorStatus>> {
  const out: Record<string, ProcessorStatus> = {};
  const used = new Set([...config.service.pipelines.values()].flatMap((p) => p.processors));
  for (const id of used) {
    const c = config.processors.get(id)!;
    const factory = registry.processors.get(c.type)!;
    if (factory.status) out[id] = await factory.status(stateClient(store, id, { owner: id }), c.config);
  }
  return out;
}

/** Events as a pipeline that does not forward stores them: no forward-only records, no received copies. */
function withoutForwarding(events: AgentEvent[]): AgentEvent[] {
  if (!events.some((e) => e.forward || e.forwardOnly)) return events;
  return events
    .filter((e) => !e.forwardOnly)
    .map((e) => {
      if (!e.forward) return e;
      const { forward: _forward, ...rest } = e;
      return rest;
    });
}
