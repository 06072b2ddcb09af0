/**
 * Serves vigil's own metrics: `GET /metrics` in the Prometheus text format. Metrics name
 * pipelines and exporters and count what passed, so the endpoint takes a bearer token when one is
 * configured (`service.telemetry.metrics.auth`, else the receivers' tokens).
 */
import { createServer, type Server } from 'node:http';
import type { BearerAuth } from '../internal/bearer.ts';
import { parseEndpoint } from '../internal/endpoint.ts';
import { closeServer, listen, warnIfExposed } from '../internal/listen.ts';
import type { Logger } from '../logger.ts';
import { renderMetrics, type MetricFamily } from './metrics.ts';

export class TelemetryServer {
  private server: Server | undefined;

  constructor(
    private readonly endpoint: string,
    private readonly collect: () => Promise<MetricFamily[]>,
    private readonly auth: BearerAuth,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method !== 'GET' || path !== '/metrics') {
        res.writeHead(404, { 'content-type': 'text/plain' });
        return void res.end('metrics are at GET /metrics\n');
      }
      if (!this.auth.check(req.headers.authorization)) {
        res.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer' });
        return void res.end('GET /metrics needs Authorization: Bearer <token> (service.telemetry.metrics.auth.bearer_token, else a receiver token)\n');
      }
      this.collect().then(
        (families) => {
          res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
          res.end(renderMetrics(families));
        },
        (err: Error) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(`cannot collect metrics: ${err.message}\n`);
        },
      );
    });
    const { host, port } = parseEndpoint(this.endpoint)!;
    const where = { what: 'service.telemetry.metrics', configKey: 'service.telemetry.metrics.address' };
    await listen(this.server, host, port, where);
    warnIfExposed(this.logger, host, port, this.auth.enabled, { ...where, fix: 'set service.telemetry.metrics.auth.bearer_token, or bind 127.0.0.1' });
  }

  async shutdown(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (s) await closeServer(s, 1000);
  }
}
