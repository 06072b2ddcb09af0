/**
 * Deeply nested bodies (issue 12, item 7) against a real `vigil run`: a 4 MiB OTLP/JSON body of
 * nested arrays used to stall the event loop for seconds per request (/livez included), and 2M
 * nested protobuf start-group tags answered 500 / gRPC INTERNAL "Maximum call stack size exceeded".
 * Now both are refused at once as invalid (400 / INVALID_ARGUMENT) with a message saying why, the
 * decoder stops reading where the nesting goes too deep, and /livez keeps answering meanwhile.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { credentials, status as GrpcStatus } from '@grpc/grpc-js';
import type { ServiceError } from '@grpc/grpc-js';
import { MAX_JSON_DEPTH } from '../src/receivers/otlp/json.ts';
import { MAX_GROUP_DEPTH } from '../src/receivers/otlp/protobuf.ts';
import { freePort, healthy, spawnVigil, tempDir, untilReady, writeConfig } from './helpers/vigil-process.ts';
import type { VigilChild } from './helpers/vigil-process.ts';
import { RawOtlpClient } from './helpers/raw-grpc.ts';

const MIB = 1024 * 1024;
/** Bad requests sent at once: each used to hold the event loop for 0.5 s or more. */
const CONCURRENT = 6;
/**
 * The longest /livez may take while they are handled. Not a speed target: the old decoder took
 * seconds; the new one refuses each in microseconds, so this only catches a stall.
 */
const LIVENESS_BOUND_MS = 2_000;

/** 4 MiB of nested arrays: `[[[[…]]]]`. */
const nestedArrays = Buffer.from('['.repeat(2 * MIB) + ']'.repeat(2 * MIB));
/** A well-formed request with the nesting inside an attribute value, where a record would be read. */
const nestedInValue = Buffer.from(
  `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","attributes":[{"key":"k","value":` +
    '{"arrayValue":{"values":['.repeat(100_000) +
    ']}}'.repeat(100_000) +
    '}]}]}]}]}',
);
/** 2M start-group tags of field 15 (an unknown field of the request), nested: `[0x7b] × 2M`. */
const nestedGroups = Buffer.alloc(2 * MIB, 15 * 8 + 3);

let vigil: VigilChild;
let http: string;
let grpcTarget: string;
let livez: string;

before(async () => {
  const dir = tempDir();
  const [httpPort, grpcPort, healthPort] = [await freePort(), await freePort(), await freePort()];
  const cfg = writeConfig(
    dir,
    `receivers:
  otlp:
    protocols:
      http: { endpoint: 127.0.0.1:${httpPort} }
      grpc: { endpoint: 127.0.0.1:${grpcPort} }
processors:
  classify: {}
exporters:
  debug: {}
extensions:
  health_check: { endpoint: 127.0.0.1:${healthPort} }
state:
  memory: {}
service:
  extensions: [health_check]
  pipelines:
    traces: { receivers: [otlp], processors: [classify], exporters: [debug] }
`,
  );
  vigil = spawnVigil(['run', '-c', cfg]);
  http = `http://127.0.0.1:${httpPort}`;
  grpcTarget = `127.0.0.1:${grpcPort}`;
  livez = `http://127.0.0.1:${healthPort}/livez`;
  await untilReady(vigil, healthy(`http://127.0.0.1:${healthPort}`));
});

after(async () => {
  vigil.child.kill('SIGTERM');
  assert.equal(await vigil.exited, 0, vigil.stderr());
});

/** Runs `work` while polling /livez back to back; returns the work's result and the longest /livez round trip. */
async function whileProbingLiveness<T>(work: () => Promise<T>): Promise<{ result: T; longestMs: number; probes: number }> {
  let done = false;
  let longestMs = 0;
  let probes = 0;
  const probing = (async () => {
    while (!done) {
      const t0 = performance.now();
      const res = await fetch(livez);
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      longestMs = Math.max(longestMs, performance.now() - t0);
      probes++;
    }
  })();
  try {
    return { result: await work(), longestMs, probes };
  } finally {
    done = true;
    await probing;
  }
}

async function post(body: Buffer, contentType: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${http}/v1/traces`, { method: 'POST', headers: { 'content-type': contentType }, body: new Uint8Array(body) });
  return { status: res.status, text: await res.text() };
}

function grpcExport(body: Buffer): Promise<ServiceError | undefined> {
  const client = new RawOtlpClient(grpcTarget, credentials.createInsecure(), { 'grpc.max_send_message_length': 8 * MIB }) as unknown as {
    traces: (b: Buffer, cb: (err: ServiceError | null) => void) => void;
    close: () => void;
  };
  return new Promise((resolve) =>
    client.traces(body, (err) => {
      client.close();
      resolve(err ?? undefined);
    }),
  );
}

describe('deep nesting is refused at once, and vigil stays live', () => {
  test('OTLP/JSON: 4 MiB of nested arrays → 400 naming the depth bound, read no further than it', async () => {
    const { result, longestMs, probes } = await whileProbingLiveness(() =>
      Promise.all([...Array.from({ length: CONCURRENT - 1 }, () => post(nestedArrays, 'application/json')), post(nestedInValue, 'application/json')]),
    );
    for (const { status, text } of result) {
      assert.equal(status, 400, text);
      assert.match(JSON.parse(text).message, new RegExp(`^request body is not valid JSON: nested deeper than ${MAX_JSON_DEPTH} levels at byte \\d+$`));
    }
    // The reader stopped where the bound was crossed: byte 128 of the arrays, not the end of 4 MiB.
    assert.equal(JSON.parse(result[0]!.text).message, `request body is not valid JSON: nested deeper than ${MAX_JSON_DEPTH} levels at byte ${MAX_JSON_DEPTH}`);
    assert.ok(probes > 0 && longestMs < LIVENESS_BOUND_MS, `/livez took up to ${longestMs.toFixed(0)} ms over ${probes} probes`);
  });

  test('OTLP/protobuf over HTTP: 2M nested start-group tags → 400 naming the bound, not 500', async () => {
    const { result, longestMs } = await whileProbingLiveness(() =>
      Promise.all(Array.from({ length: CONCURRENT }, () => post(nestedGroups, 'application/x-protobuf'))),
    );
    for (const { status, text } of result) {
      assert.equal(status, 400, text);
      assert.match(text, new RegExp(`groups nested deeper than ${MAX_GROUP_DEPTH} levels`));
      assert.doesNotMatch(text, /call stack/);
    }
    assert.ok(longestMs < LIVENESS_BOUND_MS, `/livez took up to ${longestMs.toFixed(0)} ms`);
  });

  test('OTLP/gRPC: 2M nested start-group tags → INVALID_ARGUMENT naming the bound, not INTERNAL', async () => {
    const { result: errors, longestMs } = await whileProbingLiveness(() => Promise.all(Array.from({ length: CONCURRENT }, () => grpcExport(nestedGroups))));
    for (const err of errors) {
      assert.equal(err?.code, GrpcStatus.INVALID_ARGUMENT, String(err));
      assert.match(err!.details, new RegExp(`^request body is not a valid protobuf ExportTraceServiceRequest: groups nested deeper than ${MAX_GROUP_DEPTH} levels`));
    }
    assert.ok(longestMs < LIVENESS_BOUND_MS, `/livez took up to ${longestMs.toFixed(0)} ms`);
  });

  test('afterwards vigil takes a good request as usual', async () => {
    const good = Buffer.from(
      JSON.stringify({
        resourceSpans: [
          {
            scopeSpans: [
              { spans: [{ traceId: '5b8efff798038103d269b633813fc60c', spanId: 'eee19b7ec3c1b174', name: 'job', status: { code: 2, message: 'boom' } }] },
            ],
          },
        ],
      }),
    );
    const { status, text } = await post(good, 'application/json');
    assert.equal(status, 200, text);
    assert.equal(text, '{}');
  });
});
