/**
 * The service wires components from the config (the Collector's `service` package): one store,
 * receivers feeding each pipeline's ingest log, one processor chain and runner per pipeline, one
 * exporter runner per (pipeline, exporter). Start order is store → exporters → pipelines →
 * extensions → receivers, so nothing is accepted before it can be processed; shutdown reverses it
 * and drains in-flight work.
 */
import type { OperatorFunction } from 'rxjs';
import type { Exporter, IngestConsumer, Lifecycle, Registry, Signal } from '../component.ts';
import type { VigilConfig } from '../config/load.ts';
import { errorMessage, isVigilError, VigilError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { AgentEvent } from '../model/event.ts';
import type { WorkPage } from '../processors/page.ts';
import type { StateStore } from '../store/types.ts';
import { deliveryOf } from '../exporters/delivery.ts';
import { ExporterRunner } from './exporter-runner.ts';
import { PipelineRunner } from './pipeline-runner.ts';

const SHUTDOWN_DRAIN_MS = 10_000;

export interface ServiceOptions {
  logger: Logger;
  /** Overrides for tests. */
  maxBacklog?: number;
  pageSize?: number;
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
  readonly ingestStats = { appended: 0, duplicates: 0, refused: 0 };

  constructor(private readonly config: VigilConfig, private readonly registry: Registry, private readonly opts: ServiceOptions) {}

  get isReady(): boolean {
    return this.state === 'running';
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
    for (const w of config.warnings) log.warn(`${w.file}:${w.line}:${w.col}: ${w.message}`);

    const storeFactory = registry.stores.get(config.state.type)!;
    const store = storeFactory.create({ id: `state/${config.state.type}`, logger: log.child({ component: 'state' }) }, config.state.config);
    await store.open();
    this.store = store;

    for (const [id, c] of config.exporters) {
      if (!this.isUsed('exporters', id)) continue;
      const exporter = registry.exporters.get(c.type)!.create({ id, logger: log.child({ component: id }) }, c.config);
      await exporter.start();
      this.exporters.set(id, exporter);
    }

    for (const [pid, p] of config.service.pipelines) {
      const processors: OperatorFunction<WorkPage, WorkPage>[] = p.processors.map((id) => {
        const c = config.processors.get(id)!;
        return registry.processors.get(c.type)!.create({ id, logger: log.child({ component: id }), pipeline: pid, store }, c.config);
      });
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
          }),
      );
      const runner = new PipelineRunner({
        pipeline: pid,
        store,
        chain,
        logger: log.child({ pipeline: pid }),
        pageSize: opts.pageSize ?? config.service.processing.page_size,
        onCommit: () => exporterRunners.forEach((r) => r.notify()),
      });
      this.pipelines.set(pid, { runner, exporters: exporterRunners });
      for (const r of exporterRunners) await r.start();
      runner.start();
    }

    for (const id of config.service.extensions) {
      const c = config.extensions.get(id)!;
      const ext = registry.extensions.get(c.type)!.create(
        { id, logger: log.child({ component: id }), isReady: () => this.isReady, status: () => this.status() },
        c.config,
      );
      await ext.start();
      this.extensions.set(id, ext);
    }

    for (const [id, c] of config.receivers) {
      const consumers: Partial<Record<Signal, IngestConsumer>> = {};
      for (const signal of ['traces', 'logs'] as const) {
        const targets = [...config.service.pipelines.values()].filter((p) => p.signal === signal && p.receivers.includes(id)).map((p) => p.id);
        if (targets.length) consumers[signal] = this.consumerFor(targets);
      }
      if (Object.keys(consumers).length === 0) continue;
      const receiver = registry.receivers.get(c.type)!.create({ id, logger: log.child({ component: id }), consumers }, c.config);
      await receiver.start();
      this.receivers.set(id, receiver);
    }
  }

  private isUsed(kind: 'exporters', id: string): boolean {
    return [...this.config.service.pipelines.values()].some((p) => p[kind].includes(id));
  }

  /**
   * The ingest path of DESIGN 1: refuse (retryably) when a pipeline's backlog is over its limit,
   * else append durably to every target pipeline and wake its runner. Resolves only after the
   * store committed the append, which is when a receiver may acknowledge.
   */
  private consumerFor(pipelineIds: string[]): IngestConsumer {
    const maxBacklog = this.opts.maxBacklog ?? this.config.service.ingest.max_backlog;
    return async (events: AgentEvent[]) => {
      const store = this.store;
      if (!store || this.state === 'stopped') {
        this.ingestStats.refused += events.length;
        throw new VigilError('VIGIL_SHUTDOWN', 'vigil is shutting down', { transient: true });
      }
      let appended = 0;
      let duplicates = 0;
      try {
        for (const pid of pipelineIds) {
          if ((await store.pendingCount(pid)) >= maxBacklog) {
            this.ingestStats.refused += events.length;
            throw new VigilError('VIGIL_INGEST_BACKPRESSURE', `pipeline '${pid}' has ${maxBacklog} or more records waiting; retry later`, { transient: true });
          }
        }
        for (const pid of pipelineIds) {
          const r = await store.append(pid, events);
          appended = Math.max(appended, r.appended);
          duplicates = Math.max(duplicates, r.duplicates);
          this.pipelines.get(pid)?.runner.notify();
        }
      } catch (err) {
        if (isVigilError(err) && err.transient) throw err;
        this.ingestStats.refused += events.length;
        throw new VigilError('VIGIL_STORE_UNAVAILABLE', `cannot append to the ingest log: ${errorMessage(err)}`, { transient: true, cause: err });
      }
      this.ingestStats.appended += appended;
      this.ingestStats.duplicates += duplicates;
      return { appended, duplicates };
    };
  }

  async status(): Promise<Record<string, unknown>> {
    const store = this.store ? await this.store.status() : undefined;
    return {
      state: this.state,
      store,
      ingest: { ...this.ingestStats },
      receivers: Object.fromEntries([...this.receivers].map(([id, r]) => [id, r.stats?.() ?? {}])),
      pipelines: Object.fromEntries(
        [...this.pipelines].map(([id, p]) => [
          id,
          { ...p.runner.stats, exporters: Object.fromEntries(p.exporters.map((e, i) => [this.config.service.pipelines.get(id)!.exporters[i], e.stats])) },
        ]),
      ),
    };
  }

  /** Stops accepting, drains pipelines and exporters, closes everything. Idempotent. */
  shutdown(): Promise<void> {
    this.stopping ??= this.shutdownInner();
    return this.stopping;
  }

  private async shutdownInner(): Promise<void> {
    const log = this.opts.logger;
    this.state = 'stopping';
    const deadline = Date.now() + SHUTDOWN_DRAIN_MS;
    const settle = async (what: string, fn: () => Promise<void>) => {
      try {
        await fn();
      } catch (err) {
        log.warn(`${what} failed during shutdown`, { error: errorMessage(err) });
      }
    };
    for (const [id, r] of this.receivers) await settle(id, () => r.shutdown());
    for (const [, p] of this.pipelines) {
      await settle('pipeline drain', async () => {
        await p.runner.stop();
        await p.runner.drain(deadline);
      });
    }
    for (const [, p] of this.pipelines) for (const e of p.exporters) await settle('exporter drain', () => e.drain(deadline + 5000));
    for (const [id, e] of this.exporters) await settle(id, () => e.shutdown());
    this.state = 'stopped';
    for (const [id, x] of this.extensions) await settle(id, () => x.shutdown());
    if (this.store) await settle('state store', () => this.store!.close());
    log.info('vigil stopped');
  }
}
