/**
 * The OTLP records the test agents send (test/agents-harness.test.ts pins them), as OTLP/JSON
 * bodies built record by record, so ordering tests can split one agent turn over requests and
 * send its pieces in any order:
 *
 * - the openai agent: an `invoke_agent` root span naming the session, the instrumentation's
 *   `chat` span failing with a 429 (`error.type` RateLimitError, no session), an `execute_tool`
 *   span failing with an exception event, and the log record the agent writes for each caught
 *   failure (the chat failure in the root span, the tool failure inside the tool span);
 * - the AI SDK agent: `ai.generateText.doGenerate` failing with AI_APICallError, the error
 *   propagated to `ai.generateText` and to the agent's root span, the session only in
 *   `ai.telemetry.metadata.sessionId` (and `session.id` on the root).
 */

export interface SpanRecord {
  kind: 'span';
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** End time, ms since the epoch. */
  end: number;
  status?: { code: number; message?: string };
  attributes?: Record<string, string | number>;
  exception?: { type: string; message: string; stacktrace: string };
}

export interface LogRecordSpec {
  kind: 'log';
  traceId: string;
  spanId: string;
  time: number;
  body: string;
  severity?: number;
  attributes?: Record<string, string>;
}

export type AgentRecord = SpanRecord | LogRecordSpec;

const RESOURCE = { 'service.name': 'demo-agent', 'service.instance.id': 'agent-host-1' };

function kv(attrs: Record<string, string | number>) {
  return Object.entries(attrs).map(([key, v]) => ({ key, value: typeof v === 'number' ? { intValue: String(v) } : { stringValue: v } }));
}

function nanos(ms: number): string {
  return `${Math.round(ms)}000000`;
}

/** One ExportTraceServiceRequest (OTLP/JSON) holding the spans among `records`. */
export function tracesBody(records: readonly AgentRecord[], resource: Record<string, string> = RESOURCE): string {
  const spans = records.filter((r): r is SpanRecord => r.kind === 'span');
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: kv(resource) },
        scopeSpans: [
          {
            scope: { name: 'test-agent' },
            spans: spans.map((s) => ({
              traceId: s.traceId,
              spanId: s.spanId,
              ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
              name: s.name,
              kind: 1,
              startTimeUnixNano: nanos(s.end - 20),
              endTimeUnixNano: nanos(s.end),
              attributes: kv(s.attributes ?? {}),
              events: s.exception
                ? [
                    {
                      name: 'exception',
                      timeUnixNano: nanos(s.end),
                      attributes: kv({
                        'exception.type': s.exception.type,
                        'exception.message': s.exception.message,
                        'exception.stacktrace': s.exception.stacktrace,
                      }),
                    },
                  ]
                : [],
              status: s.status ?? { code: 0 },
            })),
          },
        ],
      },
    ],
  });
}

/** One ExportLogsServiceRequest (OTLP/JSON) holding the log records among `records`. */
export function logsBody(records: readonly AgentRecord[], resource: Record<string, string> = RESOURCE): string {
  const logs = records.filter((r): r is LogRecordSpec => r.kind === 'log');
  return JSON.stringify({
    resourceLogs: [
      {
        resource: { attributes: kv(resource) },
        scopeLogs: [
          {
            scope: { name: 'test-agent' },
            logRecords: logs.map((l) => ({
              timeUnixNano: nanos(l.time),
              severityNumber: l.severity ?? 17,
              severityText: 'ERROR',
              body: { stringValue: l.body },
              ...(l.traceId ? { traceId: l.traceId } : {}),
              ...(l.spanId ? { spanId: l.spanId } : {}),
              attributes: kv(l.attributes ?? {}),
            })),
          },
        ],
      },
    ],
  });
}

let counter = 0;
/** A fresh 32-hex trace id and 16-hex span ids. */
export function traceIdFor(n = ++counter): string {
  return (n.toString(16).padStart(8, '0') + 'a1b2c3d4e5f60718293a4b5c').slice(0, 32);
}
export function spanIdFor(trace: number, n: number): string {
  return (trace.toString(16).padStart(6, '0') + n.toString(16).padStart(10, '0')).slice(0, 16);
}

const RATE_LIMIT =
  '429 Rate limit reached for gpt-4o-mini in organization org-3fXq2 on tokens per min (TPM): Limit 30000, Used 29950, Requested 1200. Please try again in 2.4s. Visit https://platform.openai.com/account/rate-limits to learn more.';

export interface OpenAITurn {
  traceId: string;
  root: SpanRecord;
  chat: SpanRecord;
  chatLog: LogRecordSpec;
  tool: SpanRecord;
  toolLog: LogRecordSpec;
  /** All records, in the order the agent's SDK exports them (spans as they end; logs as written). */
  all: AgentRecord[];
}

/**
 * One turn of the openai agent: a failing tool call, then a 429 from the provider; `t0` is the
 * turn's start. With `session: undefined` no record names a session.
 */
export function openaiTurn(t0: number, session: string | undefined, n = ++counter): OpenAITurn {
  const traceId = traceIdFor(n);
  const rootId = spanIdFor(n, 1);
  const toolId = spanIdFor(n, 2);
  const chatId = spanIdFor(n, 3);
  const toolStack = `Error: KeyError: 'results'\n    at runTool (/srv/agent/openai-agent.cjs:78:17)\n    at async runTurn (/srv/agent/openai-agent.cjs:131:22)`;
  const tool: SpanRecord = {
    kind: 'span',
    traceId,
    spanId: toolId,
    parentSpanId: rootId,
    name: 'execute_tool run_python',
    end: t0 + 40,
    status: { code: 2, message: "KeyError: 'results'" },
    attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'run_python', 'gen_ai.tool.call.id': `call_${n}`, 'error.type': 'ToolError' },
    exception: { type: 'Error', message: "KeyError: 'results'", stacktrace: toolStack },
  };
  const toolLog: LogRecordSpec = { kind: 'log', traceId, spanId: toolId, time: t0 + 39, body: toolStack, attributes: { 'agent.step': 'tool run_python' } };
  const chat: SpanRecord = {
    kind: 'span',
    traceId,
    spanId: chatId,
    parentSpanId: rootId,
    name: 'chat gpt-4o-mini',
    end: t0 + 400,
    status: { code: 2, message: RATE_LIMIT },
    attributes: {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'error.type': 'RateLimitError',
      'http.response.status_code': 429,
    },
  };
  const chatLog: LogRecordSpec = {
    kind: 'log',
    traceId,
    spanId: rootId,
    time: t0 + 401,
    body: `Error: ${RATE_LIMIT}\n    at APIError.generate (/srv/agent/node_modules/openai/error.js:59:20)\n    at runChat (/srv/agent/openai-agent.cjs:96:5)`,
    attributes: { 'agent.step': 'model request' },
  };
  const root: SpanRecord = {
    kind: 'span',
    traceId,
    spanId: rootId,
    name: 'invoke_agent demo-agent',
    end: t0 + 450,
    attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'demo-agent', ...(session ? { 'session.id': session } : {}) },
  };
  return { traceId, root, chat, chatLog, tool, toolLog, all: [toolLog, tool, chat, chatLog, root] };
}

export interface AISdkTurn {
  traceId: string;
  root: SpanRecord;
  generateText: SpanRecord;
  doGenerate: SpanRecord;
  all: AgentRecord[];
}

const AI_RATE_LIMIT =
  'Rate limit reached for gpt-4o-mini in organization org-3fXq2 on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.';

/**
 * One turn of the AI SDK agent whose model call fails with a 429: doGenerate, generateText and
 * (with `rootErrors`) the agent's root span end in error with the same AI_APICallError. As the
 * real SDK does, doGenerate ends last.
 */
export function aiSdkTurn(t0: number, session: string, opts: { rootErrors?: boolean } = {}, n = ++counter): AISdkTurn {
  const traceId = traceIdFor(n);
  const rootId = spanIdFor(n, 1);
  const genId = spanIdFor(n, 2);
  const doId = spanIdFor(n, 3);
  const meta = {
    'ai.telemetry.functionId': 'demo-ai-agent',
    'ai.telemetry.metadata.sessionId': session,
    'ai.telemetry.metadata.userId': 'user-1',
    'ai.model.provider': 'openai.chat',
    'ai.model.id': 'gpt-4o-mini',
  };
  const stack = `AI_APICallError: ${AI_RATE_LIMIT}\n    at doGenerate (file:///srv/agent/ai-sdk-agent.mjs:48:15)\n    at async fn (file:///srv/agent/node_modules/ai/dist/index.mjs:4500:30)`;
  const exception = { type: 'AI_APICallError', message: AI_RATE_LIMIT, stacktrace: stack };
  const failed = { code: 2, message: AI_RATE_LIMIT };
  const generateText: SpanRecord = {
    kind: 'span',
    traceId,
    spanId: genId,
    parentSpanId: rootId,
    name: 'ai.generateText',
    end: t0 + 5,
    status: failed,
    attributes: { 'ai.operationId': 'ai.generateText', ...meta },
    exception,
  };
  const root: SpanRecord = {
    kind: 'span',
    traceId,
    spanId: rootId,
    name: 'invoke_agent demo-ai-agent',
    end: t0 + 6,
    attributes: { 'gen_ai.operation.name': 'invoke_agent', 'session.id': session },
    ...(opts.rootErrors ? { status: failed, exception } : {}),
  };
  const doGenerate: SpanRecord = {
    kind: 'span',
    traceId,
    spanId: doId,
    parentSpanId: genId,
    name: 'ai.generateText.doGenerate',
    end: t0 + 7,
    status: failed,
    attributes: { 'ai.operationId': 'ai.generateText.doGenerate', 'gen_ai.system': 'openai.chat', 'gen_ai.request.model': 'gpt-4o-mini', ...meta },
    exception,
  };
  return { traceId, root, generateText, doGenerate, all: [generateText, root, doGenerate] };
}
