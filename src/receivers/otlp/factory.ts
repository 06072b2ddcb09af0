/**
 * The `otlp` receiver: OTLP/HTTP with JSON bodies in this version (protobuf bodies and gRPC come
 * later and will feed the same normalized records, mapping and ingest path).
 */
import type { Lifecycle, ReceiverFactory, ReceiverSettings } from '../../component.ts';
import { otlpConfigSchema, httpEndpointOf } from './config.ts';
import type { OtlpReceiverConfig } from './config.ts';
import { OtlpHttpServer } from './http.ts';
import { emptyReceiverStats } from './ingest.ts';
import type { OtlpReceiverStats } from './ingest.ts';

/** The receiver instance: a Lifecycle with counters and the bound HTTP address. */
export interface OtlpReceiver extends Lifecycle {
  /** Per-signal counters since creation (a copy). */
  stats(): OtlpReceiverStats;
  /** The bound OTLP/HTTP address once started (useful with port 0); undefined otherwise. */
  address(): { host: string; port: number } | undefined;
}

export interface OtlpReceiverOptions {
  /** How long shutdown waits for in-flight requests (default SHUTDOWN_GRACE_MS). */
  shutdownGraceMs?: number;
  /** Clock for records without any timestamp (default Date.now). */
  now?: () => number;
}

export function createOtlpReceiver(settings: ReceiverSettings, config: OtlpReceiverConfig, options: OtlpReceiverOptions = {}): OtlpReceiver {
  const { id, logger, consumers } = settings;
  const stats = emptyReceiverStats();
  const endpoint = httpEndpointOf(config);
  const http =
    endpoint === undefined
      ? undefined
      : new OtlpHttpServer({
          id,
          endpoint,
          maxBodySize: config.max_request_body_size,
          bearerToken: config.auth?.bearer_token,
          consumers,
          logger,
          stats,
          shutdownGraceMs: options.shutdownGraceMs,
          now: options.now,
        });
  let started = false;

  return {
    async start() {
      if (started) return;
      started = true;
      if (config.protocols.grpc) {
        logger.warn(
          `OTLP/gRPC is not available in this version of vigil (it will be added later); ` +
            `receiver '${id}' does not listen on ${config.protocols.grpc.endpoint}` +
            (http ? '; OTLP/HTTP is served' : '; add protocols.http to receive OTLP/HTTP'),
          { receiver: id },
        );
      }
      try {
        await http?.start();
      } catch (err) {
        started = false;
        throw err;
      }
    },
    async shutdown() {
      await http?.shutdown();
      logger.debug('OTLP receiver stopped', { receiver: id, stats: structuredClone(stats) });
    },
    stats: () => structuredClone(stats),
    address: () => http?.address(),
  };
}

/** The factory's create returns the full receiver (stats, address) to callers that know the type. */
export interface OtlpReceiverFactory extends ReceiverFactory<OtlpReceiverConfig> {
  create(settings: ReceiverSettings, config: OtlpReceiverConfig): OtlpReceiver;
}

export const otlpReceiverFactory: OtlpReceiverFactory = {
  type: 'otlp',
  schema: otlpConfigSchema,
  signals: ['traces', 'logs'],
  create: (settings, config) => createOtlpReceiver(settings, config),
};

export type { OtlpReceiverConfig };
