/**
 * `npm run bench:ingest` — OTLP/HTTP ingest throughput and latency of vigil's `otlp` receiver (an
 * in-process vigil: otlp receiver → classify processor → debug exporter, `memory` store) side by
 * side, in the same run, with a bare node:http server that only decodes the same payloads
 * (`JSON.parse` for OTLP/JSON, vigil's own protobuf decoder for OTLP/protobuf).
 *
 * Load: batches of 512 spans (realistic agent spans: model calls, tool calls, agent turns with GenAI
 * attributes; one span in 32 failed, with an exception event and a Python traceback), sent by N
 * concurrent keep-alive clients from a worker thread. Every request carries fresh trace ids, so
 * vigil appends and classifies every failed span (no dedupe).
 *
 * Both servers stay up and are measured in alternating slices (bare, vigil, vigil, bare, ...), so
 * that background load on the machine affects both alike; a vigil slice lasts until vigil's
 * pipeline has also processed everything it accepted, so vigil gets no processing time for free.
 *
 * Options: --duration=SECONDS per server (6), --rounds=N slices per server (6), --warmup=SECONDS
 * (1), --concurrency=N (8), --spans=N (512), --only=json|protobuf, --server=vigil|bare.
 */
import { Worker } from 'node:worker_threads';

interface LoadSpec {
  url: string;
  contentType: string;
  template: Uint8Array;
  /** Where the 8-hex-digit (JSON) or 4-byte (protobuf) per-request trace id prefix goes. */
  offsets: number[];
  binary: boolean;
  concurrency: number;
  warmupMs: number;
  durationMs: number;
  /** First request number (keeps trace ids unique across runs). */
  firstRequest: number;
}

interface LoadResult {
  requests: number;
  failures: number;
  elapsedMs: number;
  /** Request latencies in ms, sorted. */
  latencies: number[];
}

const TRACE_MARKER = 'deadbeef';

/**
 * The load generator, run in a worker thread (its own event loop, so the server under test has the
 * main thread to itself). Plain JavaScript: Node 20 does not apply tsx's loader to workers. Each
 * client sends one request at a time over a keep-alive connection; latency is measured from the
 * request to the end of the response, after the warm-up.
 */
const LOAD_GENERATOR = `
const { request, Agent } = require('node:http');
const { parentPort, workerData: spec } = require('node:worker_threads');
const agent = new Agent({ keepAlive: true, maxSockets: spec.concurrency });
const template = Buffer.from(spec.template);
const target = new URL(spec.url);
let next = spec.firstRequest;
const measureFrom = performance.now() + spec.warmupMs;
const stopAt = measureFrom + spec.durationMs;
const latencies = [];
let failures = 0;
function body(n) {
  const b = Buffer.from(template);
  for (const offset of spec.offsets) {
    if (spec.binary) b.writeUInt32BE(n >>> 0, offset);
    else b.write((n >>> 0).toString(16).padStart(8, '0'), offset, 'latin1');
  }
  return b;
}
function post(payload) {
  return new Promise((resolve) => {
    const req = request({ host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent,
      headers: { 'content-type': spec.contentType, 'content-length': payload.length } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
      res.on('error', () => resolve(0));
    });
    req.on('error', () => resolve(0));
    req.end(payload);
  });
}
async function client() {
  while (performance.now() < stopAt) {
    const payload = body(next++);
    const t0 = performance.now();
    const status = await post(payload);
    const t1 = performance.now();
    if (t0 < measureFrom) continue;
    if (status === 200) latencies.push(t1 - t0); else failures++;
  }
}
Promise.all(Array.from({ length: spec.concurrency }, client)).then(() => {
  const elapsedMs = performance.now() - measureFrom;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  parentPort.postMessage({ requests: latencies.length, failures, elapsedMs, latencies });
});
`;

await main();

// ---------------------------------------------------------------------------------------------
// Main thread: payloads, servers, report

async function main(): Promise<void> {
  const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
  const durationMs = Number(args.duration ?? 6) * 1000;
  const rounds = Number(args.rounds ?? 6);
  const warmupMs = Number(args.warmup ?? 1) * 1000;
  const concurrency = Number(args.concurrency ?? 8);
  const spansPerBatch = Number(args.spans ?? 512);
  const encodings = (['json', 'protobuf'] as const).filter((e) => args.only === undefined || args.only === e);
  const servers = (['bare node:http', 'vigil'] as const).filter((s) => args.server === undefined || s.startsWith(args.server));

  const { cpus } = await import('node:os');
  const payloads = await buildPayloads(spansPerBatch);
  console.log(
    `bench:ingest — ${spansPerBatch} spans per request (${payloads.errorSpans} failed), ${concurrency} concurrent clients, ` +
      `${durationMs / 1000} s per server in ${rounds} alternating slices after ${warmupMs / 1000} s warm-up; Node.js ${process.version}, ${cpus().length} CPU(s)`,
  );
  console.log(`payload: OTLP/JSON ${(payloads.json.template.length / 1024).toFixed(0)} KiB, OTLP/protobuf ${(payloads.protobuf.template.length / 1024).toFixed(0)} KiB per request\n`);

  const rows: Array<{ encoding: string; server: string; result: LoadResult }> = [];
  let firstRequest = 1;
  for (const encoding of encodings) {
    const payload = payloads[encoding];
    const running = new Map<string, Running>();
    for (const server of servers) running.set(server, server === 'vigil' ? await startVigil() : await startBare(encoding));
    const spec = (url: string, warmup: number, duration: number): LoadSpec => {
      const s: LoadSpec = {
        url: `${url}/v1/traces`,
        contentType: encoding === 'json' ? 'application/json' : 'application/x-protobuf',
        template: payload.template,
        offsets: payload.offsets,
        binary: encoding === 'protobuf',
        concurrency,
        warmupMs: warmup,
        durationMs: duration,
        firstRequest,
      };
      firstRequest += 1_000_000;
      return s;
    };
    try {
      const totals = new Map<string, LoadResult>(servers.map((s) => [s, { requests: 0, failures: 0, elapsedMs: 0, latencies: [] }]));
      for (const server of running.values()) {
        await load(spec(server.url, warmupMs, 0));
        await server.drained?.();
      }
      for (let round = 0; round < rounds; round++) {
        const order = round % 2 === 0 ? servers : [...servers].reverse();
        for (const name of order) {
          const server = running.get(name)!;
          const result = await load(spec(server.url, 0, durationMs / rounds));
          if (server.drained) {
            const t0 = performance.now();
            await server.drained();
            result.elapsedMs += performance.now() - t0;
          }
          const total = totals.get(name)!;
          total.requests += result.requests;
          total.failures += result.failures;
          total.elapsedMs += result.elapsedMs;
          total.latencies.push(...result.latencies);
        }
      }
      for (const name of servers) {
        const total = totals.get(name)!;
        total.latencies.sort((a, b) => a - b);
        rows.push({ encoding, server: name, result: total });
      }
      const vigil = running.get('vigil');
      if (vigil?.summary) console.log(`  (${encoding}) vigil: ${await vigil.summary()}`);
    } finally {
      for (const server of running.values()) await server.stop();
    }
  }

  console.log('');
  console.log('encoding   server            spans/s   requests/s   p50 ms   p99 ms   failures   vigil/bare');
  for (const { encoding, server, result } of rows) {
    const spansPerSec = (result.requests * spansPerBatch) / (result.elapsedMs / 1000);
    const bare = rows.find((r) => r.encoding === encoding && r.server !== 'vigil')?.result;
    const ratio = server === 'vigil' && bare ? (result.requests / result.elapsedMs / (bare.requests / bare.elapsedMs)).toFixed(2) : '';
    console.log(
      `${encoding.padEnd(10)} ${server.padEnd(16)} ${fmt(spansPerSec).padStart(9)} ${(result.requests / (result.elapsedMs / 1000)).toFixed(1).padStart(12)} ` +
        `${percentile(result.latencies, 50).toFixed(1).padStart(8)} ${percentile(result.latencies, 99).toFixed(1).padStart(8)} ${String(result.failures).padStart(10)} ${ratio.padStart(12)}`,
    );
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

function load(spec: LoadSpec): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(LOAD_GENERATOR, { eval: true, workerData: spec });
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

interface Running {
  url: string;
  stop(): Promise<void>;
  summary?: () => Promise<string>;
  /** Resolves once everything accepted so far has been processed (vigil's pipeline is idle). */
  drained?: () => Promise<void>;
}

/**
 * The baseline: node:http, read the body, decode it, answer. Nothing else. Protobuf is decoded by
 * vigil's decoder in its cheapest mode (the one vigil's receiver uses: spans that cannot matter are
 * validated, not built), so the comparison measures everything vigil does beyond decoding.
 */
async function startBare(encoding: 'json' | 'protobuf'): Promise<Running> {
  const { createServer } = await import('node:http');
  const { decodeTracesProtobuf } = await import('../src/receivers/otlp/protobuf.ts');
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (encoding === 'json') JSON.parse(body.toString('utf8'));
      else decodeTracesProtobuf(body, { skipIrrelevant: true });
      const answer = encoding === 'json' ? '{}' : '';
      res.writeHead(200, { 'content-type': encoding === 'json' ? 'application/json' : 'application/x-protobuf', 'content-length': answer.length });
      res.end(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** vigil in process: otlp receiver → classify → debug exporter, memory store. */
async function startVigil(): Promise<Running> {
  const { components } = await import('../src/components.ts');
  const { loadConfigText } = await import('../src/config/load.ts');
  const { createLogger } = await import('../src/logger.ts');
  const { Service } = await import('../src/service/service.ts');
  const { freePort } = await import('../test/helpers/vigil-process.ts');
  const port = await freePort();
  const config = loadConfigText(
    `receivers:
  otlp:
    protocols:
      http: { endpoint: 127.0.0.1:${port} }
processors:
  classify: {}
exporters:
  debug: { verbosity: basic }
state:
  memory: {}
service:
  pipelines:
    traces: { receivers: [otlp], processors: [classify], exporters: [debug] }
`,
    'bench.yaml',
    components(),
  );
  const service = new Service(config, components(), { logger: createLogger({ level: 'error' }) });
  await service.start();
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () => service.shutdown(),
    drained: async () => {
      for (;;) {
        const status = (await service.status()) as { store: { pipelines: Array<{ partitions: Array<{ pending: number }> }> } };
        const pending = status.store.pipelines.flatMap((p) => p.partitions).reduce((n, p) => n + p.pending, 0);
        if (pending === 0) return;
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    },
    summary: async () => {
      const status = (await service.status()) as { receivers: { otlp: { traces: Record<string, number> } }; ingest: Record<string, number> };
      const t = status.receivers.otlp.traces;
      return `${t.requests} requests, ${t.accepted} spans accepted (${t.irrelevant} not relevant), ${status.ingest.appended} failures appended and classified`;
    },
  };
}

/** One request body per encoding, with the offsets of the per-request trace id prefixes. */
async function buildPayloads(spans: number): Promise<{ json: { template: Uint8Array; offsets: number[] }; protobuf: { template: Uint8Array; offsets: number[] }; errorSpans: number }> {
  const { randomBytes } = await import('node:crypto');
  const root = (await import('otlp-transformer-0214/build/src/generated/root.js')).default as any;
  const TraceRequest = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

  const hexId = (bytes: number) => randomBytes(bytes).toString('hex');
  const now = BigInt(Date.UTC(2026, 10, 30, 12)) * 1_000_000n;
  const str = (key: string, value: string) => ({ key, value: { stringValue: value } });
  const int = (key: string, value: number) => ({ key, value: { intValue: value } });
  const traceback = [
    'Traceback (most recent call last):',
    '  File "/srv/agent/tools/run.py", line 48, in execute',
    '    result = handler(**arguments)',
    '  File "/srv/agent/tools/files.py", line 17, in read_file',
    '    with open(path) as f:',
    "FileNotFoundError: [Errno 2] No such file or directory: '/workspace/notes.md'",
  ].join('\n');

  // Turns of 16 spans: invoke_agent → chat ×6, execute_tool ×6, retrieval ×3; one trace per turn.
  let errorSpans = 0;
  const jsonSpans: object[] = [];
  const protoSpans: object[] = [];
  let traceId = '';
  let agentSpan = '';
  for (let i = 0; i < spans; i++) {
    if (i % 16 === 0) {
      traceId = TRACE_MARKER + hexId(12);
      agentSpan = hexId(8);
    }
    const position = i % 16;
    const spanId = position === 0 ? agentSpan : hexId(8);
    const failed = i % 32 === 21;
    const start = now + BigInt(i) * 1_000_000n;
    const end = start + 850_000_000n;
    let name: string;
    let attributes: object[];
    const session = [str('session.id', 'sess-7f3a2c'), str('gen_ai.conversation.id', 'conv-7f3a2c')];
    if (position === 0) {
      name = 'invoke_agent coder';
      attributes = [str('gen_ai.operation.name', 'invoke_agent'), str('gen_ai.agent.name', 'coder'), str('gen_ai.agent.id', 'agent-01'), ...session];
    } else if (position % 2 === 1 && position < 13) {
      name = 'chat gpt-4o';
      attributes = [
        str('gen_ai.operation.name', 'chat'),
        str('gen_ai.provider.name', 'openai'),
        str('gen_ai.request.model', 'gpt-4o'),
        str('gen_ai.response.model', 'gpt-4o-2024-08-06'),
        str('gen_ai.response.id', `chatcmpl-${hexId(12)}`),
        int('gen_ai.usage.input_tokens', 1200 + i),
        int('gen_ai.usage.output_tokens', 200 + (i % 50)),
        str('gen_ai.response.finish_reasons', 'stop'),
        str('server.address', 'api.openai.com'),
        int('server.port', 443),
        ...session,
      ];
    } else if (position < 13) {
      name = 'execute_tool read_file';
      attributes = [
        str('gen_ai.operation.name', 'execute_tool'),
        str('gen_ai.tool.name', 'read_file'),
        str('gen_ai.tool.call.id', `call_${hexId(8)}`),
        str('gen_ai.tool.type', 'function'),
        str('code.function.name', 'read_file'),
        ...session,
      ];
    } else {
      name = 'retrieval docs';
      attributes = [str('gen_ai.operation.name', 'retrieval'), str('gen_ai.data_source.id', 'docs-index'), int('db.response.returned_rows', 8), ...session];
    }
    const events = failed
      ? [
          {
            name: 'exception',
            timeUnixNano: String(end - 1000n),
            attributes: [str('exception.type', 'FileNotFoundError'), str('exception.message', "[Errno 2] No such file or directory: '/workspace/notes.md'"), str('exception.stacktrace', traceback)],
          },
        ]
      : [];
    if (failed) errorSpans++;
    const common = {
      name,
      kind: name.startsWith('chat') ? 3 : 1,
      startTimeUnixNano: String(start),
      endTimeUnixNano: String(end),
      attributes,
      events,
      status: failed ? { code: 2, message: "FileNotFoundError: [Errno 2] No such file or directory: '/workspace/notes.md'" } : { code: 1 },
    };
    const parent = position === 0 ? undefined : agentSpan;
    jsonSpans.push({ traceId, spanId, ...(parent ? { parentSpanId: parent } : {}), ...common });
    protoSpans.push({ traceId: Buffer.from(traceId, 'hex'), spanId: Buffer.from(spanId, 'hex'), ...(parent ? { parentSpanId: Buffer.from(parent, 'hex') } : {}), ...common });
  }
  const resource = { attributes: [str('service.name', 'coding-agent'), str('service.version', '1.8.0'), str('service.instance.id', 'host-1/4242'), str('telemetry.sdk.language', 'python')] };
  const scope = { name: 'opentelemetry.instrumentation.openai_v2', version: '2.1b0' };

  const json = Buffer.from(JSON.stringify({ resourceSpans: [{ resource, scopeSpans: [{ scope, spans: jsonSpans }] }] }));
  const protobuf = Buffer.from(TraceRequest.encode(TraceRequest.fromObject({ resourceSpans: [{ resource, scopeSpans: [{ scope, spans: protoSpans }] }] })).finish());
  return {
    json: { template: json, offsets: offsetsOf(json, Buffer.from(TRACE_MARKER, 'latin1')) },
    protobuf: { template: protobuf, offsets: offsetsOf(protobuf, Buffer.from(TRACE_MARKER, 'hex')) },
    errorSpans,
  };
}

function offsetsOf(haystack: Buffer, needle: Buffer): number[] {
  const out: number[] = [];
  for (let i = haystack.indexOf(needle); i >= 0; i = haystack.indexOf(needle, i + needle.length)) out.push(i);
  return out;
}
