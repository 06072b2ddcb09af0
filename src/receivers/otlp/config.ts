/**
 * Config of the `otlp` receiver (DESIGN 4.4), in the OpenTelemetry Collector's shape:
 *
 * ```yaml
 * receivers:
 *   otlp:
 *     protocols:
 *       http: { endpoint: 127.0.0.1:4318 }
 *       grpc: { endpoint: 127.0.0.1:4317 }
 *     max_request_body_size: 4MiB
 *     auth: { bearer_token: ${env:VIGIL_OTLP_TOKEN} }
 *     decode_threads: 1              # 0 on a single-CPU machine
 *     admission: { request_limit_mib: 128, waiting_limit_mib: 32 }
 * ```
 */
import { availableParallelism } from 'node:os';
import { MIB } from './admission.ts';
import { Schema, s } from '../../config/schema.ts';
import type { ParseContext, Path } from '../../config/schema.ts';

export const DEFAULT_HTTP_ENDPOINT = '127.0.0.1:4318';
export const DEFAULT_GRPC_ENDPOINT = '127.0.0.1:4317';
/** Applies to the bytes on the wire and, for gzip bodies, to the decompressed bytes. */
export const DEFAULT_MAX_REQUEST_BODY_SIZE = 4 * 1024 * 1024;
/**
 * One decode thread (decode-pool.ts: OTLP/JSON bodies, and protobuf ones when markers are mapped)
 * where the machine has a second CPU, none on a single CPU (where the thread would only take turns
 * with the event loop).
 * Round 12 found a thread on 2 cores bought throughput (OTLP/JSON +20%) but not latency; round 40,
 * on a quiet machine, measured JSON's ack p99 at the goal's half rate under 20 ms with it in every
 * run, at a higher half rate, and undecided in 2 of 3 without: a 424 KiB body's 3-4 ms decode no
 * longer holds the loop that answers the other requests. README, Performance, round 40.
 */
export function defaultDecodeThreads(cpus: number = availableParallelism()): number {
  return cpus >= 2 ? 1 : 0;
}
export const DEFAULT_DECODE_THREADS = defaultDecodeThreads();
/**
 * Admission (admission.ts), the OpenTelemetry Collector's defaults for it: 128 MiB of requests held
 * at once (32 bodies of the largest size, far more than two cores decode at a time) and 32 MiB more
 * waiting; past that, requests are refused retryably. README, Bounds.
 */
export const DEFAULT_REQUEST_LIMIT_MIB = 128;
export const DEFAULT_WAITING_LIMIT_MIB = 32;

export interface OtlpReceiverConfig {
  protocols: {
    /** OTLP/HTTP, protobuf and JSON bodies. Enabled with its default when no protocol is configured. */
    http?: { endpoint: string };
    /** OTLP/gRPC, served when configured. */
    grpc?: { endpoint: string };
  };
  /** Largest request body (HTTP) or message (gRPC) accepted, in bytes, on the wire and decompressed. */
  max_request_body_size: number;
  auth?: {
    /** Requests must carry `Authorization: Bearer <token>` (HTTP header, gRPC metadata); never empty. */
    bearer_token: string;
  };
  /**
   * Worker threads that decode and map large OTLP/JSON request bodies, and OTLP/protobuf ones whose
   * signal's pipelines want activity markers (decode-pool.ts); 0 reads every body on the event loop.
   * Default: 1 where the machine has 2 or more CPUs, else 0 (defaultDecodeThreads).
   */
  decode_threads?: number;
  /** Bytes of requests held at once and waiting, in MiB (admission.ts); request_limit_mib 0 turns it off. */
  admission?: { request_limit_mib: number; waiting_limit_mib: number };
}

/**
 * A protocol section: absent means "not configured", while a key written without a value
 * (`http:` in YAML, i.e. null) means "enabled with defaults", as in the Collector.
 */
class ProtocolSection<T> extends Schema<T | undefined> {
  constructor(private readonly inner: Schema<T>) {
    super();
  }
  get expected(): string {
    return this.inner.expected;
  }
  override parse(value: unknown, path: Path, ctx: ParseContext): T | undefined {
    if (value === undefined) return undefined;
    return this.inner.parse(value === null ? {} : value, path, ctx);
  }
  protected parsePresent(value: unknown, path: Path, ctx: ParseContext): T | undefined {
    return this.inner.parse(value, path, ctx);
  }
}

export const otlpConfigSchema: Schema<OtlpReceiverConfig> = s
  .object({
    protocols: s.object({
      http: new ProtocolSection(s.object({ endpoint: s.endpoint().default(DEFAULT_HTTP_ENDPOINT) })),
      grpc: new ProtocolSection(s.object({ endpoint: s.endpoint().default(DEFAULT_GRPC_ENDPOINT) })),
    }),
    max_request_body_size: s.size().default(DEFAULT_MAX_REQUEST_BODY_SIZE),
    // Written but empty (`auth:`, `bearer_token: ${env:TOK}` with TOK empty) is an error, never "no auth".
    auth: s.object({ bearer_token: s.secret() }).nonEmpty().optional(),
    decode_threads: s.int({ min: 0, max: 64 }).default(DEFAULT_DECODE_THREADS),
    admission: s.object({
      request_limit_mib: s.int({ min: 0, max: 1 << 20 }).default(DEFAULT_REQUEST_LIMIT_MIB),
      waiting_limit_mib: s.int({ min: 0, max: 1 << 20 }).default(DEFAULT_WAITING_LIMIT_MIB),
    }),
  })
  .check((c, report) => {
    const limit = c.admission?.request_limit_mib ?? 0;
    if (limit > 0 && limit * MIB < c.max_request_body_size) {
      const needed = Math.ceil(c.max_request_body_size / MIB);
      report(
        ['admission', 'request_limit_mib'],
        `(${limit}) is less than max_request_body_size (${c.max_request_body_size} bytes): a request of that size could never be admitted; set it to at least ${needed}, or to 0 to turn admission off`,
      );
    }
    const { http, grpc } = c.protocols;
    if (http && grpc && http.endpoint === grpc.endpoint && !http.endpoint.endsWith(':0')) {
      report(
        ['protocols', 'grpc', 'endpoint'],
        `(${grpc.endpoint}) is the same as protocols.http.endpoint: each protocol needs its own port (the defaults are 4317 for gRPC, 4318 for HTTP)`,
      );
    }
  });

/** The HTTP endpoint to serve: the configured one, or the default when no protocol is configured. */
export function httpEndpointOf(config: OtlpReceiverConfig): string | undefined {
  if (config.protocols.http) return config.protocols.http.endpoint;
  if (!config.protocols.grpc) return DEFAULT_HTTP_ENDPOINT;
  return undefined;
}
