import type { Server } from 'node:http';
import { VigilError } from '../errors.ts';

/** Binds a server; a bind failure becomes a clear error naming the component, endpoint and fix. */
export function listen(server: Server, host: string, port: number, componentId: string, configKey: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      const endpoint = `${host.includes(':') ? `[${host}]` : host}:${port}`;
      const why =
        err.code === 'EADDRINUSE'
          ? 'the address is already in use (is another vigil or collector running?)'
          : err.code === 'EACCES'
            ? 'permission denied'
            : err.code === 'EADDRNOTAVAIL'
              ? 'the address is not available on this machine'
              : err.message;
      reject(new VigilError('VIGIL_LISTEN_FAILED', `${componentId}: cannot listen on ${endpoint}: ${why}; change '${configKey}' in the config`, { cause: err }));
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
