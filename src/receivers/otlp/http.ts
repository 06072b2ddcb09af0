/**
 * The OTLP/HTTP transport (OTLP specification, "OTLP/HTTP"): POST /v1/traces and /v1/logs with
 * binary protobuf (`application/x-protobuf`) or JSON (`application/json`) bodies, optionally
 * gzip-compressed. Answers 200 only after the records are durably appended, in the encoding of the
 * request (an Export*ServiceResponse, with `partial_success` when records were rejected); refusals
 * carry a google.rpc.Status body in that encoding and, when retrying can help, `Retry-After`.
 *
 * Bodies are bounded on the wire and after decompression: the Content-Length is checked before
 * reading, and streamed bytes (wire and inflated) are counted, so a gzip bomb is refused after at
 * most `maxBodySize` inflated bytes. Request handling never throws out of the handler.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGunzip } from 'node:zlib';
import type { IngestConsumer, Signal } from '../../component.ts';
import { VigilError, errorMessage } from '../../errors.ts';
import { BearerAuth } from '../../internal/bearer.ts';
import { formatHostPort, parseEndpoint } from '../../internal/endpoint.ts';
import { listen, warnIfExposed } from '../../internal/listen.ts';
import type { VigilErrorCode } from '../../errors.ts';
import { admissionRefusal, type Held } from './admission.ts';
import { bodyOptions, exportMapped, refusalOf } from './ingest.ts';
import type { ExportOutcome, OtlpProtocol, OtlpTransportOptions } from './ingest.ts';
import { encodeExportResponse, encodeStatus } from './protobuf.ts';
import { decodeAndMapWith, type MappedBody } from './decode-pool.ts';

/** How long shutdown waits for in-flight requests before closing their connections. */
export const SHUTDOWN_GRACE_MS = 5_000;
/** A whole request (headers and body) must arrive within this time. */
export const REQUEST_TIMEOUT_MS = 60_000;
/** After an early refusal, the unread rest of a body is dropped for at most this long before the connection is closed. */
export const DISCARD_GRACE_MS = 2_000;
/** Seconds a refused client is asked to wait before retrying. */
export const RETRY_AFTER_SECONDS = 1;

const PATHS: Record<string, Signal> = { '/v1/traces': 'traces', '/v1/logs': 'logs' };

/** The two OTLP/HTTP body encodings. */
type Encoding = 'json' | 'protobuf';
const MEDIA_TYPES: Record<string, Encoding> = { 'application/json': 'json', 'application/x-protobuf': 'protobuf' };
const PROTOCOLS: Record<Encoding, OtlpProtocol> = { json: 'http-json', protobuf: 'http-protobuf' };

/** google.rpc.Code values used in Status bodies. */
const RPC = {
  INVALID_ARGUMENT: 3,
  NOT_FOUND: 5,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

/** The vigil error code a refusal corresponds to, for logs. */
const REFUSAL_CODES: Partial<Record<number, VigilErrorCode>> = {
  400: 'VIGIL_PAYLOAD_INVALID',
  401: 'VIGIL_UNAUTHORIZED',
  413: 'VIGIL_PAYLOAD_TOO_LARGE',
  415: 'VIGIL_UNSUPPORTED_MEDIA_TYPE',
  429: 'VIGIL_INGEST_BACKPRESSURE',
};

export interface OtlpHttpServerOptions extends OtlpTransportOptions {
  /** Largest body accepted, on the wire and decompressed, in bytes. */
  maxBodySize: number;
}

/** A refusal decided while reading the request, answered with `status` and a Status body. */
class Refused extends Error {
  constructor(
    readonly status: number,
    readonly rpcCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export class OtlpHttpServer {
  private server: Server | undefined;
  private stopping = false;
  private closing: Promise<void> | undefined;
  private inFlight = 0;
  private idle: (() => void) | undefined;
  /** Requests that sent `Expect: 100-continue` and were not yet told to send their bodies. */
  private readonly awaitingContinue = new WeakSet<IncomingMessage>();
  private readonly auth: BearerAuth;

  constructor(private readonly options: OtlpHttpServerOptions) {
    this.auth = new BearerAuth([options.bearerToken]);
  }

  /** Binds the endpoint; rejects with VIGIL_LISTEN_FAILED naming the endpoint when it cannot. */
  async start(): Promise<void> {
    if (this.server) return;
    const { id, endpoint } = this.options;
    const parsed = parseEndpoint(endpoint);
    if (!parsed)
      throw new VigilError('VIGIL_LISTEN_FAILED', `receiver '${id}': '${endpoint}' is not an endpoint such as 127.0.0.1:4318; change protocols.http.endpoint`);
    const server = createServer((req, res) => this.onRequest(req, res));
    // A client that asks before sending its body (`Expect: 100-continue`, as curl does past 1 MiB)
    // is told to send it once admitted, not at once as Node would: a request that waits for room
    // or is refused sends nothing.
    server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
      this.awaitingContinue.add(req);
      this.onRequest(req, res);
    });
    server.requestTimeout = REQUEST_TIMEOUT_MS;
    server.headersTimeout = Math.min(REQUEST_TIMEOUT_MS, 30_000);
    const where = { what: `receiver '${id}'`, protocol: 'OTLP/HTTP', configKey: `receivers.${id}.protocols.http.endpoint` };
    await listen(server, parsed.host, parsed.port, where);
    warnIfExposed(this.options.logger, parsed.host, parsed.port, this.auth.enabled, { ...where, fix: `set receivers.${id}.auth.bearer_token, or bind 127.0.0.1` });
    server.on('error', (err) => this.options.logger.warn('OTLP/HTTP server error', { error: errorMessage(err) }));
    this.server = server;
    const addr = this.address();
    this.options.logger.info('OTLP/HTTP receiver listening', { endpoint: addr ? formatHostPort(addr.host, addr.port) : endpoint });
  }

  /** The bound address, once started. */
  address(): { host: string; port: number } | undefined {
    const addr = this.server?.address();
    if (!addr || typeof addr === 'string') return undefined;
    return { host: (addr as AddressInfo).address, port: (addr as AddressInfo).port };
  }

  /** Stops accepting, waits (bounded) for in-flight requests, closes connections. Idempotent. */
  shutdown(): Promise<void> {
    this.closing ??= this.close();
    return this.closing;
  }

  private async close(): Promise<void> {
    const server = this.server;
    this.stopping = true;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    if (this.inFlight > 0) {
      const grace = this.options.shutdownGraceMs ?? SHUTDOWN_GRACE_MS;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, grace);
        timer.unref();
        this.idle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    server.closeAllConnections();
    await closed;
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    this.inFlight++;
    const answered = this.options.activity?.begin();
    res.once('close', () => {
      answered?.();
      this.inFlight--;
      if (this.inFlight === 0 && this.idle) this.idle();
    });
    this.handle(req, res).catch((err: unknown) => {
      // Last line of defence: nothing escapes to crash the process.
      this.options.logger.warn('OTLP/HTTP request failed', { path: safePath(req.url), error: errorMessage(err) });
      this.refuse(res, req, undefined, encodingOf(req), new Refused(500, RPC.INTERNAL, 'internal error'));
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const arrived = performance.now();
    const path = safePath(req.url);
    // Answers use the request's encoding when it is one of OTLP's, JSON otherwise.
    const encoding = encodingOf(req);
    const signal = PATHS[path];
    if (!signal) {
      return this.refuse(res, req, undefined, encoding, new Refused(404, RPC.NOT_FOUND, `no OTLP endpoint at ${path}; use POST /v1/traces or POST /v1/logs`));
    }
    const { counters } = this.options;
    const protocol = encoding ? PROTOCOLS[encoding] : undefined;
    counters.add(signal, protocol, { requests: 1 });
    let held: Held | undefined;
    try {
      const { consumer, encoding: bodyEncoding, compression } = this.checkRequest(req, signal, encoding);
      held = await this.admit(req, res, compression);
      if (held === undefined) return; // the client left while waiting
      if (this.awaitingContinue.delete(req)) res.writeContinue();
      const body = await readBody(req, this.options.maxBodySize, compression);
      // A gzip or chunked body was admitted for the body limit; it holds what it took.
      held.shrinkTo(body.length);
      let input: MappedBody;
      try {
        input = await decodeAndMapWith(this.options.decoder, bodyEncoding, signal, body, bodyOptions(this.options, signal));
      } catch (err) {
        if (err instanceof VigilError && err.code === 'VIGIL_PAYLOAD_INVALID') throw new Refused(400, RPC.INVALID_ARGUMENT, err.message);
        throw err;
      }
      let outcome: ExportOutcome;
      try {
        outcome = await exportMapped(signal, input, consumer, counters, PROTOCOLS[bodyEncoding]);
      } catch (err) {
        const refusal = refusalOf(err);
        if (refusal.reason === 'backpressure') {
          throw new Refused(429, RPC.RESOURCE_EXHAUSTED, refusal.message, { 'Retry-After': String(RETRY_AFTER_SECONDS) });
        }
        if (refusal.reason === 'unavailable') {
          throw new Refused(503, RPC.UNAVAILABLE, refusal.message, { 'Retry-After': String(RETRY_AFTER_SECONDS) });
        }
        throw new Refused(500, RPC.INTERNAL, refusal.message);
      }
      this.answer(res, signal, bodyEncoding, outcome);
      counters.observeAck(signal, PROTOCOLS[bodyEncoding], (performance.now() - arrived) / 1000);
      if (outcome.rejected > 0) {
        this.options.logger.warn('OTLP export partially rejected', { signal, protocol, rejected: outcome.rejected, reason: truncate(outcome.errorMessage, 500) });
      }
    } catch (err) {
      if (!(err instanceof Refused)) throw err;
      counters.add(signal, protocol, { refused: 1 });
      this.refuse(res, req, signal, encoding, err);
    } finally {
      held?.release();
    }
  }

  /**
   * Waits until admission control (admission.ts) lets the request in, its body unread meanwhile;
   * undefined when the client leaves while waiting. Refuses retryably (429) when waiting is full.
   */
  private async admit(req: IncomingMessage, res: ServerResponse, compression: Compression): Promise<Held | undefined> {
    const { admission, maxBodySize } = this.options;
    const declared = req.headers['content-length'];
    // A gzip body may inflate to the limit and a chunked one may grow to it: both are charged the limit.
    const bytes = declared !== undefined && compression === 'identity' ? Number(declared) : maxBodySize;
    const admitted = admission.acquire(bytes, (drop) => res.once('close', drop));
    if (admitted === undefined) {
      throw new Refused(429, RPC.RESOURCE_EXHAUSTED, admissionRefusal(this.options.id, admission), { 'Retry-After': String(RETRY_AFTER_SECONDS) });
    }
    return admitted;
  }

  /** 200 with the export response: empty, or `partialSuccess` when records were rejected or something was bounded. */
  private answer(res: ServerResponse, signal: Signal, encoding: Encoding, outcome: ExportOutcome): void {
    if (outcome.rejected === 0 && outcome.errorMessage === '' && !this.stopping) {
      // The common answer is a constant: its headers are prebuilt and its body is a string, which
      // Node sends in one write with the head (a Buffer body costs a second chunk and a writev).
      if (res.headersSent || res.destroyed) return;
      const ok = OK_ANSWERS[encoding];
      res.writeHead(200, ok.headers);
      res.end(ok.body, 'latin1');
      return;
    }
    if (encoding === 'protobuf') {
      this.sendBytes(res, 200, encodeExportResponse(outcome.rejected, outcome.errorMessage));
      return;
    }
    const rejectedKey = signal === 'traces' ? 'rejectedSpans' : 'rejectedLogRecords';
    const response =
      outcome.rejected > 0 || outcome.errorMessage !== '' ? { partialSuccess: { [rejectedKey]: String(outcome.rejected), errorMessage: outcome.errorMessage } } : {};
    this.send(res, 200, response);
  }

  /** Method, auth, pipeline, content type, content encoding and declared size; returns the signal's consumer and the body's encoding and compression. */
  private checkRequest(
    req: IncomingMessage,
    signal: Signal,
    encoding: Encoding | undefined,
  ): { consumer: IngestConsumer; encoding: Encoding; compression: Compression } {
    const { id, consumers, maxBodySize } = this.options;
    if (this.stopping) throw new Refused(503, RPC.UNAVAILABLE, `receiver '${id}' is shutting down`, { 'Retry-After': String(RETRY_AFTER_SECONDS) });
    if (req.method !== 'POST') throw new Refused(405, RPC.UNIMPLEMENTED, `method ${req.method ?? ''} is not allowed; use POST`, { Allow: 'POST' });
    if (!this.auth.check(req.headers.authorization)) {
      throw new Refused(401, RPC.UNAUTHENTICATED, 'missing or wrong bearer token (Authorization: Bearer <token>)', { 'WWW-Authenticate': 'Bearer' });
    }
    const consumer = consumers[signal];
    if (!consumer) throw new Refused(404, RPC.NOT_FOUND, `no pipeline consumes ${signal} from receiver '${id}'; add it to a ${signal} pipeline`);

    const [mediaType = '', ...params] = (req.headers['content-type'] ?? '')
      .toLowerCase()
      .split(';')
      .map((p) => p.trim());
    if (encoding === undefined) {
      throw new Refused(
        415,
        RPC.INVALID_ARGUMENT,
        `unsupported content type '${truncate(mediaType || '(none)', 100)}'; send application/x-protobuf (OTLP/protobuf) or application/json (OTLP/JSON)`,
      );
    }
    const charset = params
      .find((p) => p.startsWith('charset='))
      ?.slice('charset='.length)
      .replace(/"/g, '');
    if (encoding === 'json' && charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      throw new Refused(415, RPC.INVALID_ARGUMENT, `unsupported charset '${truncate(charset, 40)}'; OTLP/JSON is UTF-8`);
    }
    const compression = contentEncoding(req); // refuses unsupported encodings before reading
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > maxBodySize) {
      throw new Refused(413, RPC.INVALID_ARGUMENT, `request body of ${declared} bytes exceeds max_request_body_size (${maxBodySize} bytes)`);
    }
    return { consumer, encoding, compression };
  }

  private refuse(res: ServerResponse, req: IncomingMessage, signal: Signal | undefined, encoding: Encoding | undefined, refused: Refused): void {
    this.options.logger.warn('OTLP/HTTP request refused', {
      status: refused.status,
      code: REFUSAL_CODES[refused.status],
      signal,
      path: safePath(req.url),
      reason: refused.message,
    });
    // A client refused before it was told to send its body may send it or not (RFC 9110, 10.1.1):
    // the connection closes after the answer, so neither leaves it out of step.
    const headers = this.awaitingContinue.has(req) ? { ...refused.headers, Connection: 'close' } : refused.headers;
    if (encoding === 'protobuf') this.sendBytes(res, refused.status, encodeStatus(refused.rpcCode, refused.message), headers);
    else this.send(res, refused.status, { code: refused.rpcCode, message: refused.message }, headers);
    if (!req.complete) discardRest(req, this.options.maxBodySize);
  }

  private send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    this.write(res, status, 'application/json', Buffer.from(JSON.stringify(body), 'utf8'), headers);
  }

  private sendBytes(res: ServerResponse, status: number, body: Buffer, headers: Record<string, string> = {}): void {
    this.write(res, status, 'application/x-protobuf', body, headers);
  }

  private write(res: ServerResponse, status: number, contentType: string, body: Buffer, headers: Record<string, string>): void {
    if (res.headersSent || res.destroyed) return;
    res.writeHead(status, {
      'Content-Type': contentType,
      'Content-Length': String(body.length),
      ...(this.stopping ? { Connection: 'close' } : {}),
      ...headers,
    });
    res.end(body);
  }
}

/**
 * The 200 answers with nothing to report, per encoding: the empty Export*ServiceResponse (zero
 * bytes in protobuf, `{}` in JSON), the same bytes `answer`'s general path writes for them.
 */
const OK_ANSWERS: Record<Encoding, { headers: Record<string, string>; body: string }> = {
  json: { headers: { 'Content-Type': 'application/json', 'Content-Length': '2' }, body: '{}' },
  protobuf: { headers: { 'Content-Type': 'application/x-protobuf', 'Content-Length': '0' }, body: '' },
};

/** The OTLP encoding named by the Content-Type header; undefined for any other media type. */
function encodingOf(req: IncomingMessage): Encoding | undefined {
  const header = req.headers['content-type'];
  if (header === undefined) return undefined;
  const semicolon = header.indexOf(';');
  const mediaType = (semicolon < 0 ? header : header.slice(0, semicolon)).trim().toLowerCase();
  return MEDIA_TYPES[mediaType];
}

/** How a body is compressed (its Content-Encoding). */
type Compression = 'gzip' | 'identity';

/** `gzip` or identity; any other Content-Encoding is refused with 415. */
function contentEncoding(req: IncomingMessage): Compression {
  const enc = (req.headers['content-encoding'] ?? '').trim().toLowerCase();
  if (enc === '' || enc === 'identity') return 'identity';
  if (enc === 'gzip' || enc === 'x-gzip') return 'gzip';
  throw new Refused(415, RPC.INVALID_ARGUMENT, `unsupported content encoding '${truncate(enc, 40)}'; use gzip or none`);
}

/**
 * Reads the body, counting wire bytes and (for gzip) inflated bytes against `max`; stops reading
 * and inflating as soon as either is over, so neither a large body nor a gzip bomb is held.
 */
function readBody(req: IncomingMessage, max: number, encoding: Compression): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let wire = 0;
    let size = 0;
    let settled = false;
    const gunzip = encoding === 'gzip' ? createGunzip() : undefined;

    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      req.pause();
      req.removeListener('data', onWire);
      gunzip?.destroy();
      reject(err);
    };
    const finish = () => {
      if (settled) return;
      settled = true;
      resolve(Buffer.concat(chunks, size));
    };
    const onBody = (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > max) {
        fail(new Refused(413, RPC.INVALID_ARGUMENT, `decompressed request body exceeds max_request_body_size (${max} bytes)`));
        return;
      }
      chunks.push(chunk);
    };
    const onWire = (chunk: Buffer) => {
      if (settled) return;
      wire += chunk.length;
      if (wire > max) {
        fail(new Refused(413, RPC.INVALID_ARGUMENT, `request body exceeds max_request_body_size (${max} bytes)`));
        return;
      }
      if (!gunzip) return onBody(chunk);
      if (!gunzip.write(chunk)) {
        req.pause();
        gunzip.once('drain', () => {
          if (!settled) req.resume();
        });
      }
    };

    if (gunzip) {
      gunzip.on('data', onBody);
      gunzip.on('end', finish);
      gunzip.on('error', (err) => fail(new Refused(400, RPC.INVALID_ARGUMENT, `request body is not valid gzip: ${err.message}`)));
    }
    req.on('data', onWire);
    req.on('end', () => (gunzip ? gunzip.end() : finish()));
    // The request's only errors are its connection's ('aborted': the client went away mid-body):
    // the client's doing, not vigil's, so they are refusals like the close below, not internal errors.
    const gone = () => new Refused(400, RPC.INVALID_ARGUMENT, 'the client closed the connection before the body was complete');
    req.on('error', () => fail(gone()));
    req.on('close', () => {
      if (!req.complete) fail(gone());
    });
  });
}

/**
 * After an early answer, the rest of the body is read and dropped for a bounded number of bytes
 * and time, then the connection is closed. Closing at once would reset the connection while the
 * client is still sending, and it could lose the answer (EPIPE instead of 413); draining without
 * a bound would let a client make the server read forever.
 */
function discardRest(req: IncomingMessage, budgetBytes: number): void {
  let seen = 0;
  const close = () => {
    clearTimeout(timer);
    req.socket.destroy();
  };
  const timer = setTimeout(close, DISCARD_GRACE_MS);
  timer.unref();
  req.removeAllListeners('data');
  req.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > budgetBytes) close();
  });
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
  req.resume();
}

/** The path without query string, bounded for messages and logs. */
function safePath(url: string | undefined): string {
  const path = (url ?? '/').split('?')[0] ?? '/';
  return truncate(path, 200);
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
