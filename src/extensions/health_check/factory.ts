/**
 * Extension `health_check`: `GET /healthz` answers 200 once the pipelines run and 503 while
 * starting or stopping (the Collector's semantics, usable as a readiness probe); `GET /livez`
 * answers 200 while the process serves at all; `GET /status` returns the store status as JSON
 * (what `vigil status` reads for the memory store); `GET /v1/failures?since=<ms>` the failures the
 * processors reported (the watchdog's provider reports) at or after that time, newest first.
 */
import { createServer, type Server } from 'node:http';
import type { ExtensionFactory, ExtensionSettings, Lifecycle } from '../../component.ts';
import { parseEndpoint, s, type Infer } from '../../config/schema.ts';
import { listen, closeServer } from '../../service/listen.ts';

const schema = s.object({
  endpoint: s.endpoint().default('127.0.0.1:13133'),
});
export type HealthCheckConfig = Infer<typeof schema>;

export interface HealthCheckExtension extends Lifecycle {
  address(): { host: string; port: number } | undefined;
}

export const healthCheckFactory: ExtensionFactory<HealthCheckConfig> = {
  type: 'health_check',
  schema,
  create(settings: ExtensionSettings, cfg): HealthCheckExtension {
    let server: Server | undefined;
    return {
      async start() {
        server = createServer((req, res) => {
          const json = (code: number, body: unknown) => {
            res.writeHead(code, { 'content-type': 'application/json' });
            res.end(JSON.stringify(body));
          };
          if (req.method !== 'GET' && req.method !== 'HEAD') return json(405, { error: 'use GET' });
          const url = new URL(req.url ?? '/', 'http://localhost');
          const path = url.pathname;
          if (path === '/healthz' || path === '/') {
            const ready = settings.isReady();
            return json(ready ? 200 : 503, { status: ready ? 'ready' : 'not ready' });
          }
          if (path === '/livez') return json(200, { status: 'alive' });
          if (path === '/status') {
            settings
              .status()
              .then((st) => json(200, st))
              .catch((err: Error) => json(503, { error: err.message }));
            return;
          }
          if (path === '/v1/failures') {
            const since = url.searchParams.get('since');
            const sinceMs = since === null || since === '' ? 0 : Number(since);
            if (!Number.isFinite(sinceMs) || sinceMs < 0) return json(400, { error: `since must be milliseconds since the epoch (e.g. since=${Date.now() - 3_600_000}), got '${since}'` });
            (settings.failures?.(sinceMs) ?? Promise.resolve([]))
              .then((failures) => json(200, { failures }))
              .catch((err: Error) => json(503, { error: err.message }));
            return;
          }
          json(404, { error: `no such path ${path}; try /healthz, /livez, /status or /v1/failures?since=<ms>` });
        });
        const { host, port } = parseEndpoint(cfg.endpoint)!;
        await listen(server, host, port, settings.id, 'endpoint');
      },
      address() {
        const a = server?.address();
        return a && typeof a === 'object' ? { host: a.address, port: a.port } : undefined;
      },
      async shutdown() {
        const srv = server;
        server = undefined;
        if (srv) await closeServer(srv);
      },
    };
  },
};
