/**
 * The OTLP/gRPC transport (OTLP specification, "OTLP/gRPC"): the unary `Export` methods of
 * `opentelemetry.proto.collector.trace.v1.TraceService` and `...logs.v1.LogsService`. Messages are
 * taken as raw bytes (identity (de)serializers) and decoded by protobuf.ts into the same records as
 * OTLP/HTTP; gzip (and deflate) message compression is handled by @grpc/grpc-js, whose receive
 * limit (`max_request_body_size`) applies to the decompressed message too, so a compression bomb is
 * refused with RESOURCE_EXHAUSTED before it is inflated past the limit.
 *
 * Answers: OK with an Export*ServiceResponse (with `partial_success` when records were rejected)
 * only after the durable append; INVALID_ARGUMENT for a malformed message; UNAUTHENTICATED without
 * the bearer token in the `authorization` metadata; UNIMPLEMENTED for a signal no pipeline
 * consumes; RESOURCE_EXHAUSTED (over the ingest limit) and UNAVAILABLE (store unavailable, shutting
 * down) with a google.rpc.RetryInfo in the status details, which OTLP clients need to retry a
 * RESOURCE_EXHAUSTED at all.
 */
import { Metadata, Server, ServerCredentials, ServerInterceptingCall, status as GrpcStatus } from '@grpc/grpc-js';
import type { Responder, ServerInterceptingCallInterface, ServerInterceptor, ServerUnaryCall, ServiceDefinition, StatusObject, sendUnaryData } from '@grpc/grpc-js';
import type { Signal } from '../../component.ts';
import { VigilError, errorMessage } from '../../errors.ts';
import { BearerAuth } from '../../internal/bearer.ts';
import { formatHostPort, parseEndpoint } from '../../internal/endpoint.ts';
import { listenError, warnIfExposed } from '../../internal/listen.ts';
import { admissionRefusal, type Held } from './admission.ts';
import { bodyOptions, exportMapped, refusalOf } from './ingest.ts';
import type { OtlpTransportOptions } from './ingest.ts';
import { encodeExportResponse, encodeStatus } from './protobuf.ts';
import { decodeAndMapWith, type MappedBody } from './decode-pool.ts';

/** How long shutdown waits for in-flight calls before cancelling them. */
export const GRPC_SHUTDOWN_GRACE_MS = 5_000;
/** Seconds a refused client is asked to wait (google.rpc.RetryInfo.retry_delay). */
export const GRPC_RETRY_AFTER_SECONDS = 1;

/** The full method names of the two export methods, by signal. */
export const EXPORT_METHODS: Record<Signal, string> = {
  traces: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
  logs: '/opentelemetry.proto.collector.logs.v1.LogsService/Export',
};
const SIGNAL_OF_METHOD = new Map<string, Signal>(Object.entries(EXPORT_METHODS).map(([signal, path]) => [path, signal as Signal]));

export interface OtlpGrpcServerOptions extends OtlpTransportOptions {
  /** Largest message accepted, compressed or not, in bytes. */
  maxMessageSize: number;
}

/** A refusal decided by vigil: a gRPC status code and message, with RetryInfo when retrying helps. */
class Refused extends Error {
  constructor(
    readonly code: GrpcStatus,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

const identity = (b: Buffer): Buffer => b;

function serviceDefinition(path: string): ServiceDefinition {
  return {
    Export: {
      path,
      requestStream: false,
      responseStream: false,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    },
  };
}

export class OtlpGrpcServer {
  private server: Server | undefined;
  private port: number | undefined;
  private host: string | undefined;
  private stopping = false;
  private closing: Promise<void> | undefined;
  private readonly auth: BearerAuth;

  constructor(private readonly options: OtlpGrpcServerOptions) {
    this.auth = new BearerAuth([options.bearerToken]);
  }

  /** Binds the endpoint; rejects with VIGIL_LISTEN_FAILED naming the endpoint and the key to change. */
  async start(): Promise<void> {
    if (this.server) return;
    const { id, endpoint, maxMessageSize } = this.options;
    const parsed = parseEndpoint(endpoint);
    if (!parsed)
      throw new VigilError('VIGIL_LISTEN_FAILED', `receiver '${id}': '${endpoint}' is not an endpoint such as 127.0.0.1:4317; change protocols.grpc.endpoint`);
    const server = new Server({
      'grpc.max_receive_message_length': maxMessageSize,
      interceptors: [this.exportInterceptor()],
    });
    server.addService(serviceDefinition(EXPORT_METHODS.traces), { Export: this.handler('traces') });
    server.addService(serviceDefinition(EXPORT_METHODS.logs), { Export: this.handler('logs') });
    const address = formatHostPort(parsed.host, parsed.port);
    const where = { what: `receiver '${id}'`, protocol: 'OTLP/gRPC', configKey: `receivers.${id}.protocols.grpc.endpoint` };
    this.port = await new Promise<number>((resolve, reject) => {
      server.bindAsync(address, ServerCredentials.createInsecure(), (err, port) => {
        if (!err) return resolve(port);
        reject(listenError(where, parsed.host, parsed.port, err));
      });
    });
    this.host = parsed.host;
    this.server = server;
    warnIfExposed(this.options.logger, parsed.host, this.port, this.auth.enabled, { ...where, fix: `set receivers.${id}.auth.bearer_token, or bind 127.0.0.1` });
    this.options.logger.info('OTLP/gRPC receiver listening', { endpoint: formatHostPort(parsed.host, this.port) });
  }

  /** The bound address, once started. */
  address(): { host: string; port: number } | undefined {
    if (!this.server || this.port === undefined || this.host === undefined) return undefined;
    return { host: this.host, port: this.port };
  }

  /** Stops accepting, lets in-flight calls finish (bounded), then cancels the rest. Idempotent. */
  shutdown(): Promise<void> {
    this.closing ??= this.close();
    return this.closing;
  }

  private async close(): Promise<void> {
    this.stopping = true;
    const server = this.server;
    if (!server) return;
    const grace = this.options.shutdownGraceMs ?? GRPC_SHUTDOWN_GRACE_MS;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, grace);
      timer.unref();
      server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /**
   * Every call to an export method: counted, with every call that ends without an OK status (the
   * refusals vigil's handler sends, and the ones gRPC sends itself before the handler runs — a
   * message over the size limit, a bad compression — which only end the call: onCancel); and
   * admitted (admission.ts) before its message is read. grpc-js leaves a call's HTTP/2 stream
   * paused until the call is asked to read, so a call that waits holds no more than its stream's
   * flow-control window. A call is admitted for max_request_body_size (its message's length is not
   * known before the message is read) and, once its message is received, holds the message's
   * length until its end.
   */
  private exportInterceptor(): ServerInterceptor {
    return (method, call) => {
      const signal = SIGNAL_OF_METHOD.get(method.path);
      if (!signal) return new ServerInterceptingCall(call);
      const { counters, admission, maxMessageSize, id } = this.options;
      counters.add(signal, 'grpc', { requests: 1 });
      const arrived = performance.now();
      let ended = false;
      let held: Held | undefined;
      let leave: (() => void) | undefined;
      const end = (ok: boolean) => {
        if (ended) return;
        ended = true;
        if (!ok) counters.add(signal, 'grpc', { refused: 1 });
        else counters.observeAck(signal, 'grpc', (performance.now() - arrived) / 1000);
        leave?.();
        held?.release();
      };
      const admit = (admitted: AdmittedCall, read: () => void) => {
        if (ended) return read();
        const admittedNow = admission.acquire(maxMessageSize, (drop) => (leave = drop));
        if (admittedNow === undefined) {
          admitted.sendStatus(this.statusOf(signal, new Refused(GrpcStatus.RESOURCE_EXHAUSTED, admissionRefusal(id, admission), GRPC_RETRY_AFTER_SECONDS)));
          return;
        }
        const start = (h: Held | undefined) => {
          if (h === undefined) return; // cancelled while waiting
          if (ended) return h.release();
          held = h;
          read();
        };
        if (admittedNow instanceof Promise) void admittedNow.then(start);
        else start(admittedNow);
      };
      const responder: Responder = {
        start: (next) =>
          next({
            // The message (decompressed, as grpc-js hands it on) is what the call holds from here.
            onReceiveMessage: (message: Buffer, nextMessage) => {
              held?.shrinkTo(message.length);
              nextMessage(message);
            },
            onCancel: () => end(false),
          }),
        sendStatus: (status, next) => {
          end(status.code === GrpcStatus.OK);
          next(status);
        },
      };
      return new AdmittedCall(call, responder, admit);
    };
  }

  private handler(signal: Signal) {
    return (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>): void => {
      const answered = this.options.activity?.begin();
      this.export(signal, call)
        .then(
          (response) => callback(null, response),
          (err: unknown) => callback(this.statusOf(signal, err)),
        )
        .finally(() => answered?.());
    };
  }

  private async export(signal: Signal, call: ServerUnaryCall<Buffer, Buffer>): Promise<Buffer> {
    const { id, consumers, counters } = this.options;
    if (this.stopping) throw new Refused(GrpcStatus.UNAVAILABLE, `receiver '${id}' is shutting down`, GRPC_RETRY_AFTER_SECONDS);
    if (!this.auth.check(authorizationOf(call.metadata))) {
      throw new Refused(GrpcStatus.UNAUTHENTICATED, 'missing or wrong bearer token (metadata authorization: Bearer <token>)');
    }
    const consumer = consumers[signal];
    if (!consumer) throw new Refused(GrpcStatus.UNIMPLEMENTED, `no pipeline consumes ${signal} from receiver '${id}'; add it to a ${signal} pipeline`);
    let input: MappedBody;
    try {
      input = await decodeAndMapWith(this.options.decoder, 'protobuf', signal, call.request, bodyOptions(this.options, signal));
    } catch (err) {
      if (err instanceof VigilError && err.code === 'VIGIL_PAYLOAD_INVALID') throw new Refused(GrpcStatus.INVALID_ARGUMENT, err.message);
      throw err;
    }
    let outcome;
    try {
      outcome = await exportMapped(signal, input, consumer, counters, 'grpc');
    } catch (err) {
      const refusal = refusalOf(err);
      if (refusal.reason === 'backpressure') throw new Refused(GrpcStatus.RESOURCE_EXHAUSTED, refusal.message, GRPC_RETRY_AFTER_SECONDS);
      if (refusal.reason === 'unavailable') throw new Refused(GrpcStatus.UNAVAILABLE, refusal.message, GRPC_RETRY_AFTER_SECONDS);
      throw new Refused(GrpcStatus.INTERNAL, refusal.message);
    }
    if (outcome.rejected > 0) {
      this.options.logger.warn('OTLP export partially rejected', {
        signal,
        protocol: 'grpc',
        rejected: outcome.rejected,
        reason: outcome.errorMessage.slice(0, 500),
      });
    }
    return encodeExportResponse(outcome.rejected, outcome.errorMessage);
  }

  /** The status of a refused call, logged, with a google.rpc.Status (and RetryInfo) in `grpc-status-details-bin`. */
  private statusOf(signal: Signal, err: unknown): StatusObject {
    const refused = err instanceof Refused ? err : new Refused(GrpcStatus.INTERNAL, `internal error: ${errorMessage(err)}`);
    this.options.logger.warn('OTLP/gRPC request refused', { code: GrpcStatus[refused.code], signal, reason: refused.message });
    const metadata = new Metadata();
    metadata.set('grpc-status-details-bin', encodeStatus(refused.code, refused.message, refused.retryAfterSeconds));
    return { code: refused.code, details: refused.message, metadata };
  }
}

/**
 * An export call that reads its message only once admitted (admission.ts): its first startRead
 * asks `admit`, which calls back when the call may read, or refuses it.
 */
class AdmittedCall extends ServerInterceptingCall {
  private admitted = false;

  constructor(
    next: ServerInterceptingCallInterface,
    responder: Responder,
    private readonly admit: (call: AdmittedCall, read: () => void) => void,
  ) {
    super(next, responder);
  }

  override startRead(): void {
    if (this.admitted) return super.startRead();
    this.admit(this, () => {
      this.admitted = true;
      super.startRead();
    });
  }
}

/** The one `authorization` metadata value; '' when absent or repeated. */
function authorizationOf(metadata: Metadata): string {
  const values = metadata.get('authorization');
  return values.length === 1 && typeof values[0] === 'string' ? values[0] : '';
}
