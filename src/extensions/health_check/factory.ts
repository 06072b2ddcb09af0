/**
 * Extension `health_check`: `GET /healthz` answers 200 when vigil can accept and keep data now and
 * 503 with the reasons when it cannot (starting or stopping, the store unreachable or refusing
 * writes — a full disk —, an ingest backlog over its limit): a readiness probe. `GET /livez`
 * answers 200 while the process serves at all. `GET /status` returns the store status as JSON
 * (what `vigil status` reads for the memory store); it reveals session ids and signatures, so it
 * takes a bearer token: the extension's own `auth.bearer_token`, else any token the receivers
 * require. The probes stay open (they reveal only readiness).
 * `GET /v1/failures?since=<ms>` returns the failures the processors reported (the watchdog's
 * provider reports) at or after that time, newest first; it takes the same token as /status.
 */
import { createServer, type Server } from 'node:http';
import type { ExtensionFactory, ExtensionSettings, Lifecycle } from '../../component.ts';
import { s, type Infer } from '../../config/schema.ts';
import { operatorAuth } from '../../internal/bearer.ts';
import { parseEndpoint } from '../../internal/endpoint.ts';
import { closeServer, listen, warnIfExposed } from '../../internal/listen.ts';

const schema = s.object({
  endpoint: s.endpoint().default('127.0.0.1:13133'),
  /** Token for `GET /status` and `GET /v1/failures`; without it they take the receivers' tokens (or are open when there are none). */
  auth: s.object({ bearer_token: s.secret() }).nonEmpty().optional(),
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
    const auth = operatorAuth(cfg.auth?.bearer_token, settings.receiverTokens);
    return {
      async start() {
        server = createServer((req, res) => {
          const json = (code: number, body: unknown, headers: Record<string, string> = {}) => {
            res.writeHead(code, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
            res.end(JSON.stringify(body));
          };
          if (req.method !== 'GET' && req.method !== 'HEAD') return json(405, { error: 'use GET' });
          const url = new URL(req.url ?? '/', 'http://localhost');
          const path = url.pathname;
          if (path === '/healthz' || path === '/') {
            settings
              .readiness()
              .then((r) => json(r.ready ? 200 : 503, r.ready ? { status: 'ready' } : { status: 'not ready', reasons: r.reasons }))
              .catch((err: Error) => json(503, { status: 'not ready', reasons: [err.message] }));
            return;
          }
          if (path === '/livez') return json(200, { status: 'alive' });
          const unauthorized = () =>
            json(
              401,
              { error: `GET ${path} needs Authorization: Bearer <token> (the health_check auth.bearer_token, else a receiver token)` },
              { 'www-authenticate': 'Bearer' },
            );
          if (path === '/status') {
            if (!auth.check(req.headers.authorization)) return unauthorized();
            settings
              .status()
              .then((st) => json(200, st))
              .catch((err: Error) => json(503, { error: err.message }));
            return;
          }
          if (path === '/v1/failures') {
            if (!auth.check(req.headers.authorization)) return unauthorized();
            const since = url.searchParams.get('since');
            const sinceMs = since === null || since === '' ? 0 : Number(since);
            if (!Number.isFinite(sinceMs) || sinceMs < 0)
              return json(400, { error: `since must be milliseconds since the epoch (e.g. since=${Date.now() - 3_600_000}), got '${since}'` });
            (settings.failures?.(sinceMs) ?? Promise.resolve([]))
              .then((failures) => json(200, { failures }))
              .catch((err: Error) => json(503, { error: err.message }));
            return;
          }
          json(404, { error: `no such path ${path.slice(0, 200)}; try /healthz, /livez, /status or /v1/failures?since=<ms>` });
        });
        const { host, port } = parseEndpoint(cfg.endpoint)!;
        const where = { what: `extension '${settings.id}'`, configKey: `extensions.${settings.id}.endpoint` };
        await listen(server, host, port, where);
        warnIfExposed(settings.logger, host, port, auth.enabled, {
          ...where,
          fix: `GET /status and /v1/failures show session ids and signatures to anyone; set extensions.${settings.id}.auth.bearer_token, or bind 127.0.0.1`,
        });
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
