/**
 * Runs the test agents (test/fixtures/agents/) as real child processes: an agent instrumented with
 * the OpenTelemetry JS NodeSDK and @opentelemetry/instrumentation-openai around the real `openai`
 * client, and an agent on the Vercel AI SDK 5 with its mock model. Their OTLP exporters are set up
 * by the standard OTEL_* environment variables, exactly as a user would configure them.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { FakeOpenAIScenario } from './fake-openai.ts';
import { ROOT } from './vigil-process.ts';

export type AgentStep = { tool: string; error?: string; args?: unknown } | { chat: FakeOpenAIScenario } | { span: string };

export interface AgentSession {
  id: string;
  /** `gen_ai.conversation.id` (openai agent). */
  conversation?: string;
  /** `gen_ai.conversation.title` on the root span (openai agent). */
  title?: string;
  /** Each turn is one trace: an `invoke_agent` root span with the steps inside. */
  turns: AgentStep[][];
}

export interface AgentPlan {
  sessions: AgentSession[];
  /** Where `session.id` goes: the root span only (the usual case), every span, or nowhere. */
  sessionOn?: 'root' | 'all' | 'none';
  /** openai agent: whether caught failures are also logged (default true), as a stack text or with exception.* attributes. */
  logFailures?: boolean;
  logStyle?: 'stack' | 'exception';
  /** openai agent: the fake server's base URL, and the client's own retries (default 0). */
  openai?: string;
  maxRetries?: number;
  /** AI SDK agent: whether the agent's root span also ends in error when generateText throws. */
  rootErrors?: boolean;
}

export interface AgentExport {
  /** OTLP/HTTP base endpoint (`http://127.0.0.1:4318`), or per-signal full URLs. */
  endpoint?: string;
  tracesEndpoint?: string;
  logsEndpoint?: string;
  protocol?: 'http/json' | 'http/protobuf' | 'grpc';
  serviceName?: string;
  headers?: Record<string, string>;
  /** Resource attributes (`OTEL_RESOURCE_ATTRIBUTES`), e.g. `session.id` for an agent process that serves one session. */
  resourceAttributes?: Record<string, string>;
}

export interface AgentTurn {
  session: string;
  turn: number;
  traceId: string;
  rootSpanId: string;
  steps?: Array<{ kind: 'tool' | 'chat' | 'span'; name: string; spanId?: string; error?: string }>;
  text?: string;
  error?: string;
}

export interface AgentRun {
  code: number | null;
  turns: AgentTurn[];
  stderr: string;
}

const AGENTS = {
  openai: join(ROOT, 'test/fixtures/agents/openai-agent.cjs'),
  'ai-sdk': join(ROOT, 'test/fixtures/agents/ai-sdk-agent.mjs'),
} as const;

/** Runs an agent to completion (its SDK flushes and shuts down before it exits). */
export function runAgent(kind: keyof typeof AGENTS, plan: AgentPlan, exp: AgentExport, timeoutMs = 30_000): Promise<AgentRun> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    VIGIL_AGENT_PLAN: JSON.stringify(plan),
    OTEL_SERVICE_NAME: exp.serviceName ?? `demo-${kind}-agent`,
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_LOGS_EXPORTER: 'otlp',
    OTEL_METRICS_EXPORTER: 'none',
    OTEL_EXPORTER_OTLP_PROTOCOL: exp.protocol ?? 'http/protobuf',
    // Short batches so a test does not wait for the SDK's 5 s schedule (shutdown flushes anyway).
    OTEL_BSP_SCHEDULE_DELAY: '100',
    OTEL_BLRP_SCHEDULE_DELAY: '100',
    OTEL_NODE_RESOURCE_DETECTORS: 'env,host,process',
  };
  for (const k of Object.keys(env)) if (k.startsWith('OTEL_EXPORTER_OTLP_') && k !== 'OTEL_EXPORTER_OTLP_PROTOCOL') delete env[k];
  if (exp.endpoint) env.OTEL_EXPORTER_OTLP_ENDPOINT = exp.endpoint;
  if (exp.tracesEndpoint) env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = exp.tracesEndpoint;
  if (exp.logsEndpoint) env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT = exp.logsEndpoint;
  if (exp.resourceAttributes)
    env.OTEL_RESOURCE_ATTRIBUTES = Object.entries(exp.resourceAttributes)
      .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
      .join(',');
  else delete env.OTEL_RESOURCE_ATTRIBUTES;
  if (exp.headers)
    env.OTEL_EXPORTER_OTLP_HEADERS = Object.entries(exp.headers)
      .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
      .join(',');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [AGENTS[kind]], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${kind} agent did not finish within ${timeoutMs} ms; stderr:\n${err}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      const turns = out
        .split('\n')
        .filter((l) => l.trim().startsWith('{'))
        .map((l) => JSON.parse(l) as AgentTurn);
      resolve({ code, turns, stderr: err });
    });
  });
}
