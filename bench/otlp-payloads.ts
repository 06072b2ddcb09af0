/**
 * The payloads of `npm run bench:ingest`: OTLP trace export requests of realistic agent spans
 * (model calls, tool calls, agent turns with GenAI attributes; one span in 32, a model call, failed
 * with OpenAI's 404 model_not_found: an exception event and a Python traceback), encoded as
 * OTLP/JSON and as OTLP/protobuf by the independent codec (the 0.214.0 otlp-transformer's generated
 * protobufjs root), with the offsets of a per-request trace id prefix so every request can carry
 * fresh trace ids, and of every timestamp so every request can carry current times (as an SDK's
 * export does: records arrive about in time order).
 *
 * Until round 43 the failed model calls carried a Python FileNotFoundError from a tool's code,
 * which the watchdog's table took for a missing model (a substring match, fixed then). Those
 * bodies were 1.7% (JSON) and 3.5% (protobuf) smaller: 434,567 and 208,627 bytes for 512 spans,
 * against 441,975 and 216,115. Both are processed alike: sixteen model_not_found reports a request.
 */
import { randomBytes } from 'node:crypto';
import root0214 from 'otlp-transformer-0214/build/src/generated/root.js';

/** Where each request writes its number: the first 4 bytes of every trace id. */
export const TRACE_MARKER = 'deadbeef';

export interface Payload {
  template: Uint8Array;
  /** Where the 8-hex-digit (JSON) or 4-byte (protobuf) per-request trace id prefix goes. */
  offsets: number[];
  /** Every timestamp: its offset and its value in the template (ns since the epoch, as text), 19 decimal digits (JSON) or a fixed64 (protobuf). */
  times: Array<[offset: number, nanos: string]>;
}

/** The template's times start here (ns since the epoch); a request shifts them all by the same amount. */
export const TIME_BASE_NANOS = BigInt(Date.UTC(2026, 10, 30, 12)) * 1_000_000n;

/** One request body per encoding, with the offsets of the per-request trace id prefixes. */
export function buildPayloads(spans: number): { json: Payload; protobuf: Payload; errorSpans: number } {
  const root = root0214 as any;
  const TraceRequest = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

  const hexId = (bytes: number) => randomBytes(bytes).toString('hex');
  const now = TIME_BASE_NANOS;
  const times = new Set<bigint>();
  const str = (key: string, value: string) => ({ key, value: { stringValue: value } });
  const int = (key: string, value: number) => ({ key, value: { intValue: value } });
  // The failed model call, as openai-python raises it and its instrumentation records it.
  const failure =
    "Error code: 404 - {'error': {'message': 'The model `gpt-4o` does not exist or you do not have access to it.', 'type': 'invalid_request_error', 'param': None, 'code': 'model_not_found'}}";
  const traceback = [
    'Traceback (most recent call last):',
    '  File "/srv/agent/llm.py", line 48, in complete',
    '    response = client.chat.completions.create(**request)',
    '  File "/usr/lib/python3.12/site-packages/openai/_base_client.py", line 1047, in request',
    '    raise self._make_status_error_from_response(err.response) from None',
    `openai.NotFoundError: ${failure}`,
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
    times.add(start).add(end);
    if (i % 32 === 21) times.add(end - 1000n);
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
            attributes: [str('exception.type', 'openai.NotFoundError'), str('exception.message', failure), str('exception.stacktrace', traceback)],
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
      status: failed ? { code: 2, message: failure } : { code: 1 },
    };
    const parent = position === 0 ? undefined : agentSpan;
    jsonSpans.push({ traceId, spanId, ...(parent ? { parentSpanId: parent } : {}), ...common });
    protoSpans.push({
      traceId: Buffer.from(traceId, 'hex'),
      spanId: Buffer.from(spanId, 'hex'),
      ...(parent ? { parentSpanId: Buffer.from(parent, 'hex') } : {}),
      ...common,
    });
  }
  const resource = {
    attributes: [
      str('service.name', 'coding-agent'),
      str('service.version', '1.8.0'),
      str('service.instance.id', 'host-1/4242'),
      str('telemetry.sdk.language', 'python'),
    ],
  };
  const scope = { name: 'opentelemetry.instrumentation.openai_v2', version: '2.1b0' };

  const json = Buffer.from(JSON.stringify({ resourceSpans: [{ resource, scopeSpans: [{ scope, spans: jsonSpans }] }] }));
  const protobuf = Buffer.from(TraceRequest.encode(TraceRequest.fromObject({ resourceSpans: [{ resource, scopeSpans: [{ scope, spans: protoSpans }] }] })).finish());
  return {
    json: { template: json, offsets: offsetsOf(json, Buffer.from(TRACE_MARKER, 'latin1')), times: jsonTimes(json, times) },
    protobuf: { template: protobuf, offsets: offsetsOf(protobuf, Buffer.from(TRACE_MARKER, 'hex')), times: protobufTimes(protobuf, times) },
    errorSpans,
  };
}

/** The times of a JSON body: each a quoted 19-digit decimal. */
function jsonTimes(body: Buffer, times: ReadonlySet<bigint>): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  for (const t of times) for (const at of offsetsOf(body, Buffer.from(`"${t}"`, 'latin1'))) out.push([at + 1, String(t)]);
  return out;
}

/** The times of a protobuf body: each a fixed64 after its field's tag (span start 7, end 8; event time 1). */
function protobufTimes(body: Buffer, times: ReadonlySet<bigint>): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  for (const t of times) {
    const le = Buffer.alloc(8);
    le.writeBigUInt64LE(t);
    for (const at of offsetsOf(body, le)) if ([0x39, 0x41, 0x09].includes(body[at - 1]!)) out.push([at, String(t)]);
  }
  return out;
}

function offsetsOf(haystack: Buffer, needle: Buffer): number[] {
  const out: number[] = [];
  for (let i = haystack.indexOf(needle); i >= 0; i = haystack.indexOf(needle, i + needle.length)) out.push(i);
  return out;
}
