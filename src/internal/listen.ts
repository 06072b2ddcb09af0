/**
 * Binding and closing servers, for every component that serves HTTP (receivers, extensions, the
 * metrics endpoint): a bind failure is one clear error naming the component, the endpoint and the
 * key to change; a bind beyond this machine without auth is warned about.
 */
import type { Server } from 'node:http';
import { VigilError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { formatHostPort, isLoopback } from './endpoint.ts';

export interface ListenOptions {
  /** Who listens, for messages: `receiver 'otlp'`, `extension 'health_check'`. */
  what: string;
  /** What is served, when the listener serves one of several: `OTLP/HTTP`, `OTLP/gRPC`. */
  protocol?: string;
  /** The config key that sets the endpoint, named in the error as the fix. */
  configKey: string;
}

/** Why a bind failed, in an operator's words. */
export function bindFailure(code: string | undefined, message: string): string {
  switch (code) {
    case 'EADDRINUSE':
      return 'the address is already in use (is another vigil or collector running?)';
    case 'EACCES':
      return 'permission denied (ports below 1024 need privileges)';
    case 'EADDRNOTAVAIL':
      return 'the address is not available on this machine';
    default:
      return message;
  }
}

/** The VIGIL_LISTEN_FAILED error for a failed bind. */
export function listenError(opts: ListenOptions, host: string, port: number, err: NodeJS.ErrnoException): VigilError {
  const why = bindFailure(err.code ?? /\b(EADDRINUSE|EACCES|EADDRNOTAVAIL)\b/.exec(err.message)?.[1], err.message);
  const serving = opts.protocol ? ` for ${opts.protocol}` : '';
  return new VigilError(
    'VIGIL_LISTEN_FAILED',
    `${opts.what} cannot listen${serving} on ${formatHostPort(host, port)}: ${why}; change '${opts.configKey}' in the config`,
    { cause: err },
  );
}

/** Binds a server; a bind failure rejects with VIGIL_LISTEN_FAILED (see listenError). */
export function listen(server: Server, host: string, port: number, opts: ListenOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      reject(listenError(opts, host, port, err));
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}

/**
 * Warns when an endpoint is reachable from other machines and nothing asks for a token: anyone
 * who can reach it can then send data (receivers) or read session ids and signatures (operator
 * endpoints).
 */
export function warnIfExposed(logger: Logger, host: string, port: number, authenticated: boolean, opts: ListenOptions & { fix: string }): void {
  if (authenticated || isLoopback(host)) return;
  const serving = opts.protocol ? ` (${opts.protocol})` : '';
  logger.warn(`${opts.what}${serving} listens on ${formatHostPort(host, port)}, reachable from other machines, without authentication; ${opts.fix}`, {
    endpoint: formatHostPort(host, port),
  });
}

/** Stops accepting and closes idle keep-alive connections; waits for in-flight requests up to `graceMs`. */
export function closeServer(server: Server, graceMs = 5000): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      server.closeAllConnections();
    }, graceMs);
    t.unref();
    server.close(() => {
      clearTimeout(t);
      resolve();
    });
    server.closeIdleConnections();
  });
}
