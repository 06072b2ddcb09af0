/** A local HTTP server that records what it receives and answers as the test says. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { gunzipSync } from 'node:zlib';

export interface Captured {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  /** The raw body as sent (before any decompression). */
  raw: Buffer;
  /** The body, gunzipped when it came gzipped. */
  body: Buffer;
}

export type Responder = (req: Captured, res: ServerResponse) => void | 'hang';

export interface CaptureServer {
  url: string;
  port: number;
  received: Captured[];
  respond: Responder;
  close(): Promise<void>;
}

export async function startCaptureServer(port = 0, respond: Responder = (_r, res) => void res.end('{}')): Promise<CaptureServer> {
  const received: Captured[] = [];
  const state = { respond };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const body = req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
      const captured: Captured = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, raw, body };
      received.push(captured);
      const r = state.respond(captured, res);
      if (r === 'hang') return; // never answer: the client times out
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${bound}`,
    port: bound,
    received,
    get respond() {
      return state.respond;
    },
    set respond(fn: Responder) {
      state.respond = fn;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
