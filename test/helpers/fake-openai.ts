/**
 * A local stand-in for the OpenAI Chat Completions API, for end-to-end tests with the real `openai`
 * npm client. The test picks each answer through the last user message: `scenario:<name>`. The
 * error bodies are the ones OpenAI documents and sends (type, code, message wording), so the
 * client raises its real error classes (RateLimitError, AuthenticationError, ...) with the real
 * message shapes (`429 Rate limit reached for ...`).
 */
import { createServer, type Server } from 'node:http';

export type FakeOpenAIScenario = 'ok' | 'empty' | 'rate_limit' | 'quota' | 'auth' | 'server_error' | 'overloaded' | 'context_length' | 'bad_request';

interface Answer {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}

const completion = (content: string, finishReason = 'stop') => ({
  id: 'chatcmpl-' + Math.random().toString(36).slice(2, 12),
  object: 'chat.completion',
  created: Math.floor(Date.now() / 1000),
  model: 'gpt-4o-mini-2024-07-18',
  choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: finishReason }],
  usage: { prompt_tokens: 12, completion_tokens: content ? 3 : 0, total_tokens: content ? 15 : 12 },
});

const error = (message: string, type: string, code: string | null, param: string | null = null) => ({ error: { message, type, param, code } });

export const FAKE_OPENAI_ANSWERS: Record<FakeOpenAIScenario, Answer> = {
  ok: { status: 200, body: completion('The file has 3 lines.') },
  empty: { status: 200, body: completion('') },
  rate_limit: {
    status: 429,
    headers: { 'retry-after': '1', 'x-ratelimit-limit-tokens': '30000', 'x-ratelimit-remaining-tokens': '50' },
    body: error(
      'Rate limit reached for gpt-4o-mini in organization org-3fXq2 on tokens per min (TPM): Limit 30000, Used 29950, Requested 1200. Please try again in 2.4s. Visit https://platform.openai.com/account/rate-limits to learn more.',
      'tokens',
      'rate_limit_exceeded',
    ),
  },
  quota: {
    status: 429,
    body: error(
      'You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.',
      'insufficient_quota',
      'insufficient_quota',
    ),
  },
  auth: {
    status: 401,
    body: error(
      'Incorrect API key provided: sk-proj-****************************abcd. You can find your API key at https://platform.openai.com/account/api-keys.',
      'invalid_request_error',
      'invalid_api_key',
    ),
  },
  server_error: {
    status: 500,
    body: error('The server had an error while processing your request. Sorry about that!', 'server_error', null),
  },
  overloaded: {
    status: 503,
    body: error('The engine is currently overloaded, please try again later.', 'server_error', null),
  },
  context_length: {
    status: 400,
    body: error(
      "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
      'invalid_request_error',
      'context_length_exceeded',
      'messages',
    ),
  },
  bad_request: {
    status: 400,
    body: error("Invalid type for 'temperature': expected a decimal, but got a string instead.", 'invalid_request_error', 'invalid_type', 'temperature'),
  },
};

export interface FakeOpenAI {
  /** Base URL for the client, ending in `/v1`. */
  baseURL: string;
  /** Every request's scenario, in arrival order. */
  requests: Array<{ scenario: FakeOpenAIScenario; path: string }>;
  close(): Promise<void>;
}

/** The scenario named by the last user message (`scenario:<name>`); `ok` when none is named. */
function scenarioOf(body: string): FakeOpenAIScenario {
  try {
    const req = JSON.parse(body) as { messages?: Array<{ role: string; content: unknown }> };
    const users = (req.messages ?? []).filter((m) => m.role === 'user');
    const last = users[users.length - 1];
    const text = typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '');
    const m = /scenario:([a-z_]+)/.exec(text);
    if (m && m[1]! in FAKE_OPENAI_ANSWERS) return m[1] as FakeOpenAIScenario;
  } catch {
    // not JSON: answer ok
  }
  return 'ok';
}

export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const requests: FakeOpenAI['requests'] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      const scenario = scenarioOf(body);
      requests.push({ scenario, path: req.url ?? '' });
      const answer = FAKE_OPENAI_ANSWERS[scenario];
      res.writeHead(answer.status, {
        'content-type': 'application/json',
        'x-request-id': 'req_' + Math.random().toString(16).slice(2, 18),
        // The client must not retry on its own: each failure the test asks for happens once.
        'x-should-retry': 'false',
        ...answer.headers,
      });
      res.end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
