/** Serves vigil's own metrics: `GET /metrics` in the Prometheus text format. */
import { createServer, type Server } from 'node:http';
import { parseEndpoint } from '../config/schema.ts';
import { renderMetrics, type MetricFamily } from './metrics.ts';
import { closeServer, listen } from './listen.ts';

export class TelemetryServer {
  private server: Server | undefined;

  constructor(private readonly endpoint: string, private readonly collect: () => Promise<MetricFamily[]>) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method !== 'GET' || path !== '/metrics') {
        res.writeHead(404, { 'content-type': 'text/plain' });
        return void res.end('metrics are at GET /metrics\n');
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
    await listen(this.server, host, port, 'service.telemetry.metrics', 'service.telemetry.metrics.address');
  }

  async shutdown(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (s) await closeServer(s, 1000);
  }
}
