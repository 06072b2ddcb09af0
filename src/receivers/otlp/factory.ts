/**
 * The `otlp` receiver: OTLP/HTTP (protobuf and JSON bodies) and OTLP/gRPC, both feeding the same
 * normalized records, mapping, counters and ingest path.
 */
import type { Lifecycle, ReceiverFactory, ReceiverSettings } from '../../component.ts';
import { Admission, MIB, type AdmissionStats } from './admission.ts';
import { DEFAULT_REQUEST_LIMIT_MIB, DEFAULT_WAITING_LIMIT_MIB, otlpConfigSchema, httpEndpointOf } from './config.ts';
import type { OtlpReceiverConfig } from './config.ts';
import { DecodePool } from './decode-pool.ts';
import type { DecodePoolStats } from './decode-pool.ts';
import { OtlpGrpcServer } from './grpc.ts';
import { OtlpHttpServer } from './http.ts';
import { OtlpCounters } from './ingest.ts';
import type { OtlpReceiverStats } from './ingest.ts';
import { ackMetrics, admissionMetrics, decodeMetrics, otlpReceiverMetrics } from './metrics.ts';

/** The receiver instance: a Lifecycle with counters and the bound addresses. */
export interface OtlpReceiver extends Lifecycle {
  /** Counters per signal, in total and per protocol, since creation (a copy). */
  stats(): OtlpReceiverStats;
  /** The bound OTLP/HTTP address once started (useful with port 0); undefined otherwise. */
  address(): { host: string; port: number } | undefined;
  /** The bound OTLP/gRPC address once started; undefined otherwise. */
  grpcAddress(): { host: string; port: number } | undefined;
  /** Where bodies were decoded (worker threads or the event loop); undefined with `decode_threads: 0`. */
  decoding(): DecodePoolStats | undefined;
  /** What admission control holds and has refused (admission.ts). */
  admission(): AdmissionStats;
}

export interface OtlpReceiverOptions {
  /** How long shutdown waits for in-flight requests (default 5 s). */
  shutdownGraceMs?: number;
  /** Clock for records without any timestamp (default Date.now). */
  now?: () => number;
}

export function createOtlpReceiver(settings: ReceiverSettings, config: OtlpReceiverConfig, options: OtlpReceiverOptions = {}): OtlpReceiver {
  const { id, logger, consumers } = settings;
  const counters = new OtlpCounters();
  const decoder = (config.decode_threads ?? 0) > 0 ? new DecodePool(config.decode_threads!, logger) : undefined;
  // One admission for both protocols: together they hold at most the limit.
  const { request_limit_mib = DEFAULT_REQUEST_LIMIT_MIB, waiting_limit_mib = DEFAULT_WAITING_LIMIT_MIB } = config.admission ?? {};
  const admission = new Admission(request_limit_mib * MIB, waiting_limit_mib * MIB);
  const common = {
    id,
    bearerToken: config.auth?.bearer_token,
    consumers,
    logger,
    counters,
    shutdownGraceMs: options.shutdownGraceMs,
    now: options.now,
    forward: settings.forward ?? {},
    markers: settings.markers ?? {},
    decoder,
    activity: settings.activity,
    admission,
  };
  const httpEndpoint = httpEndpointOf(config);
  const http = httpEndpoint === undefined ? undefined : new OtlpHttpServer({ ...common, endpoint: httpEndpoint, maxBodySize: config.max_request_body_size });
  const grpcEndpoint = config.protocols.grpc?.endpoint;
  const grpc = grpcEndpoint === undefined ? undefined : new OtlpGrpcServer({ ...common, endpoint: grpcEndpoint, maxMessageSize: config.max_request_body_size });
  let started = false;

  const stop = async () => {
    await Promise.all([http?.shutdown(), grpc?.shutdown()]);
    await decoder?.close();
  };

  return {
    async start() {
      if (started) return;
      started = true;
      try {
        await http?.start();
        await grpc?.start();
      } catch (err) {
        started = false;
        await stop();
        throw err;
      }
    },
    async shutdown() {
      await stop();
      logger.debug('OTLP receiver stopped', { receiver: id, stats: counters.snapshot(), decoding: decoder?.stats() });
    },
    stats: () => counters.snapshot(),
    metrics: () => [
      ...otlpReceiverMetrics(counters.snapshot()),
      ...ackMetrics(counters.ackDurations()),
      ...admissionMetrics(admission.stats()),
      ...decodeMetrics(decoder?.stats()),
    ],
    address: () => http?.address(),
    grpcAddress: () => grpc?.address(),
    decoding: () => decoder?.stats(),
    admission: () => admission.stats(),
  };
}

/** The factory's create returns the full receiver (stats, addresses) to callers that know the type. */
export interface OtlpReceiverFactory extends ReceiverFactory<OtlpReceiverConfig> {
  create(settings: ReceiverSettings, config: OtlpReceiverConfig): OtlpReceiver;
}

export const otlpReceiverFactory: OtlpReceiverFactory = {
  type: 'otlp',
  schema: otlpConfigSchema,
  signals: ['traces', 'logs'],
  bearerTokens: (config) => (config.auth ? [config.auth.bearer_token] : []),
  create: (settings, config) => createOtlpReceiver(settings, config),
};

export type { OtlpReceiverConfig };
