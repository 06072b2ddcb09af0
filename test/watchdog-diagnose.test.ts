/**
 * The watchdog's diagnosis table, case by case, with the providers' and agent CLIs' real texts as
 * their SDKs and CLIs print them (OpenAI, Anthropic, Gemini, Bedrock, Azure OpenAI; Claude Code,
 * Codex, Gemini CLI, OpenClaw). Sources: the providers' error references and the bodies quoted in
 * public issue reports; the fake OpenAI server's bodies (test/helpers/fake-openai.ts) are OpenAI's.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  CATEGORIES,
  diagnoseProviderFailure,
  providerName,
  statusInText,
  summarizeError,
  type Category,
  type FailureFacts,
} from '../src/processors/watchdog/diagnose.ts';
import { reportLine } from '../src/processors/watchdog/events.ts';
import { FAKE_OPENAI_ANSWERS } from './helpers/fake-openai.ts';

interface Case {
  name: string;
  facts: FailureFacts;
  category: Category;
  temporary: boolean;
  /** Words the hint must contain (the fix it names). */
  hint?: RegExp;
}

/** What the openai-node SDK makes of an error answer: `${status} ${error.message}`. */
const openaiSdk = (scenario: keyof typeof FAKE_OPENAI_ANSWERS): FailureFacts => {
  const a = FAKE_OPENAI_ANSWERS[scenario];
  return { error: `${a.status} ${(a.body as { error: { message: string } }).error.message}`, status: a.status, provider: 'openai', model: 'gpt-4o-mini' };
};

const CASES: Case[] = [
  // ---------------------------------------------------------------- OpenAI
  {
    name: 'OpenAI 429 rate_limit_exceeded (TPM)',
    facts: { ...openaiSdk('rate_limit'), errorType: 'RateLimitError' },
    category: 'rate_limited',
    temporary: true,
    hint: /OpenAI.*about 2\.4s/,
  },
  {
    name: 'OpenAI 429 insufficient_quota',
    facts: { ...openaiSdk('quota'), errorType: 'RateLimitError' },
    category: 'quota_exhausted',
    temporary: false,
    hint: /credits/,
  },
  {
    name: 'OpenAI 401 invalid_api_key',
    facts: { ...openaiSdk('auth'), errorType: 'AuthenticationError' },
    category: 'invalid_credentials',
    temporary: false,
    hint: /OpenAI.*OPENAI_API_KEY/,
  },
  { name: 'OpenAI 500 server_error', facts: { ...openaiSdk('server_error'), errorType: 'InternalServerError' }, category: 'provider_error', temporary: true },
  { name: 'OpenAI 503 engine overloaded', facts: { ...openaiSdk('overloaded'), errorType: 'InternalServerError' }, category: 'overloaded', temporary: true },
  {
    name: 'OpenAI 400 context_length_exceeded',
    facts: { ...openaiSdk('context_length'), errorType: 'BadRequestError' },
    category: 'context_too_long',
    temporary: false,
    hint: /gpt-4o-mini's context window: compact/,
  },
  { name: 'OpenAI 400 invalid_type', facts: { ...openaiSdk('bad_request'), errorType: 'BadRequestError' }, category: 'bad_request', temporary: false },
  {
    name: 'OpenAI (Python SDK) 429 request too large for TPM',
    facts: {
      error:
        "Error code: 429 - {'error': {'message': 'Request too large for gpt-4o in organization org-VDAWofJASuLH0vVz8o9tiQZr on tokens per min (TPM): Limit 30000, Requested 30601. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.', 'type': 'tokens', 'param': None, 'code': 'rate_limit_exceeded'}}",
      provider: 'openai',
    },
    category: 'rate_limited',
    temporary: true,
  },
  {
    name: 'OpenAI APIConnectionError',
    facts: { error: 'Connection error.', errorType: 'APIConnectionError', provider: 'openai' },
    category: 'network',
    temporary: true,
  },
  {
    name: 'OpenAI APIConnectionTimeoutError',
    facts: { error: 'Request timed out.', errorType: 'APIConnectionTimeoutError', provider: 'openai' },
    category: 'network',
    temporary: true,
  },
  {
    name: 'OpenAI 404 model_not_found',
    facts: { error: '404 The model `gpt-5-turbo` does not exist or you do not have access to it.', provider: 'openai', model: 'gpt-5-turbo' },
    category: 'model_not_found',
    temporary: false,
  },

  // ---------------------------------------------------------------- Anthropic
  {
    name: 'Anthropic 429 rate_limit_error',
    facts: {
      error:
        '429 {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit (https://docs.anthropic.com/en/api/rate-limits); see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later."}}',
      provider: 'anthropic',
      errorType: 'RateLimitError',
    },
    category: 'rate_limited',
    temporary: true,
    hint: /Anthropic/,
  },
  {
    name: 'Anthropic 429 enforced_spend_limit_reached',
    facts: {
      error:
        '429 {"type":"error","error":{"type":"rate_limit_error","message":"You have reached your specified workspace API usage limits.","details":{"error_code":"enforced_spend_limit_reached"}}}',
      provider: 'anthropic',
    },
    category: 'quota_exhausted',
    temporary: false,
  },
  {
    name: 'Anthropic 529 overloaded_error',
    facts: { error: '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', provider: 'anthropic' },
    category: 'overloaded',
    temporary: true,
  },
  {
    name: 'Anthropic overloaded_error mid-stream (no status)',
    facts: { error: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', provider: 'anthropic' },
    category: 'overloaded',
    temporary: true,
  },
  {
    name: 'Anthropic 401 authentication_error',
    facts: { error: '401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}', provider: 'anthropic' },
    category: 'invalid_credentials',
    temporary: false,
    hint: /ANTHROPIC_API_KEY/,
  },
  {
    name: 'Anthropic 500 api_error',
    facts: { error: '500 {"type":"error","error":{"type":"api_error","message":"Internal server error"}}', provider: 'anthropic' },
    category: 'provider_error',
    temporary: true,
  },
  {
    name: 'Anthropic 400 prompt is too long',
    facts: {
      error: '400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208415 tokens > 200000 maximum"}}',
      provider: 'anthropic',
    },
    category: 'context_too_long',
    temporary: false,
  },
  {
    name: 'Anthropic 413 request_too_large',
    facts: {
      error: '413 {"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}',
      provider: 'anthropic',
    },
    category: 'context_too_long',
    temporary: false,
  },
  {
    name: 'Anthropic 402 billing_error',
    facts: {
      error: '402 {"type":"error","error":{"type":"billing_error","message":"Your credit balance is too low to access the Anthropic API."}}',
      provider: 'anthropic',
    },
    category: 'quota_exhausted',
    temporary: false,
  },
  {
    name: 'Anthropic 403 permission_error',
    facts: {
      error: '403 {"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}',
      provider: 'anthropic',
    },
    category: 'permission_denied',
    temporary: false,
  },

  // ---------------------------------------------------------------- Gemini
  {
    name: 'Gemini 429 RESOURCE_EXHAUSTED per minute (RetryInfo)',
    facts: {
      error:
        '{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"43s"}]}}',
      provider: 'gcp.gemini',
    },
    category: 'rate_limited',
    temporary: true,
    hint: /Gemini.*about 43s/,
  },
  {
    name: 'Gemini 429 RESOURCE_EXHAUSTED per day',
    facts: {
      error:
        "429 RESOURCE_EXHAUSTED. {'error': {'code': 429, 'message': 'You exceeded your current quota, please check your plan and billing details.', 'status': 'RESOURCE_EXHAUSTED', 'details': [{'@type': 'type.googleapis.com/google.rpc.QuotaFailure', 'violations': [{'quotaMetric': 'generativelanguage.googleapis.com/generate_content_free_tier_requests', 'quotaId': 'GenerateRequestsPerDayPerProjectPerModel-FreeTier'}]}]}}",
      provider: 'gcp.gemini',
    },
    category: 'quota_exhausted',
    temporary: false,
  },
  {
    name: 'Gemini (Vertex) 429 Resource exhausted',
    facts: {
      error:
        '429 Resource exhausted. Please try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details.',
    },
    category: 'rate_limited',
    temporary: true,
  },
  {
    name: 'Gemini 400 API key not valid',
    facts: {
      error:
        '[400 Bad Request] API key not valid. Please pass a valid API key. [{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]',
      status: 400,
      provider: 'gcp.gemini',
    },
    category: 'invalid_credentials',
    temporary: false,
    hint: /GEMINI_API_KEY/,
  },
  {
    name: 'Gemini 503 UNAVAILABLE model overloaded',
    facts: { error: '{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}', provider: 'gcp.gemini' },
    category: 'overloaded',
    temporary: true,
  },
  {
    name: 'Gemini 500 INTERNAL',
    facts: {
      error:
        '{"error":{"code":500,"message":"An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting","status":"INTERNAL"}}',
      provider: 'gcp.gemini',
    },
    category: 'provider_error',
    temporary: true,
  },
  {
    name: 'Gemini 400 input token count exceeds',
    facts: {
      error:
        '{"error":{"code":400,"message":"The input token count (1234567) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}',
      provider: 'gcp.gemini',
    },
    category: 'context_too_long',
    temporary: false,
  },
  {
    name: 'Gemini 403 unregistered callers (no API key)',
    facts: {
      error:
        '{"error":{"code":403,"message":"Method doesn\'t allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.","status":"PERMISSION_DENIED"}}',
      provider: 'gcp.gemini',
    },
    category: 'provider_not_configured',
    temporary: false,
  },

  // ---------------------------------------------------------------- Bedrock
  {
    name: 'Bedrock ThrottlingException (botocore)',
    facts: {
      error:
        'An error occurred (ThrottlingException) when calling the InvokeModel operation (reached max retries: 4): Too many requests, please wait before trying again. You have sent too many requests.  Wait before trying again.',
      provider: 'aws.bedrock',
    },
    category: 'rate_limited',
    temporary: true,
    hint: /Bedrock/,
  },
  {
    name: 'Bedrock ThrottlingException: too many tokens (JS SDK)',
    facts: { error: 'Too many tokens, please wait before trying again.', errorType: 'ThrottlingException', status: 429 },
    category: 'rate_limited',
    temporary: true,
    hint: /Bedrock/,
  },
  {
    name: 'Bedrock ValidationException input too long',
    facts: {
      error: 'An error occurred (validationException) when calling the InvokeModelWithResponseStream operation: Input is too long for requested model.',
      provider: 'aws.bedrock',
    },
    category: 'context_too_long',
    temporary: false,
  },
  {
    name: 'Bedrock AccessDeniedException',
    facts: { error: "You don't have access to the model with the specified model ID.", errorType: 'AccessDeniedException', provider: 'aws.bedrock' },
    category: 'permission_denied',
    temporary: false,
  },
  {
    name: 'Bedrock ServiceUnavailableException',
    facts: { error: 'Bedrock is unable to process your request.', errorType: 'ServiceUnavailableException', provider: 'aws.bedrock' },
    category: 'overloaded',
    temporary: true,
  },
  {
    name: 'Bedrock ModelNotReadyException',
    facts: { error: 'Model is not ready to serve inference requests.', errorType: 'ModelNotReadyException', provider: 'aws.bedrock' },
    category: 'overloaded',
    temporary: true,
  },
  {
    name: 'Bedrock UnrecognizedClientException',
    facts: { error: 'The security token included in the request is invalid.', errorType: 'UnrecognizedClientException', provider: 'aws.bedrock' },
    category: 'invalid_credentials',
    temporary: false,
  },

  // ---------------------------------------------------------------- Azure OpenAI
  {
    name: 'Azure OpenAI 429 token rate limit, retry after 6 seconds',
    facts: {
      error:
        '429 Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-01 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit.',
      provider: 'azure.ai.openai',
    },
    category: 'rate_limited',
    temporary: true,
    hint: /Azure OpenAI.*about 6s/,
  },
  {
    name: 'Azure OpenAI 429 retry after 86400 seconds (a day: quota)',
    facts: {
      error:
        "Error code: 429 - {'error': {'code': '429', 'message': 'Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2023-05-15 have exceeded token rate limit of your current AIServices S0 pricing tier. Please retry after 86400 seconds. Please contact Azure support service if you would like to further increase the default rate limit.'}}",
      provider: 'openai',
    },
    category: 'quota_exhausted',
    temporary: false,
    hint: /Azure OpenAI.*24h|1d|Azure OpenAI/,
  },
  {
    name: 'Azure OpenAI 401 invalid subscription key',
    facts: {
      error:
        '401 Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.',
      provider: 'azure.ai.openai',
    },
    category: 'invalid_credentials',
    temporary: false,
  },
  {
    name: 'Azure OpenAI 404 DeploymentNotFound',
    facts: {
      error: '404 The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.',
      provider: 'azure.ai.openai',
    },
    category: 'model_not_found',
    temporary: false,
  },
  {
    name: 'Azure OpenAI 400 content_filter',
    facts: {
      error: "400 The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.",
      provider: 'azure.ai.openai',
    },
    category: 'content_filtered',
    temporary: false,
  },

  // ---------------------------------------------------------------- agent CLIs: login, OAuth, configuration
  {
    name: 'Claude Code: Invalid API key · Please run /login',
    facts: { error: 'Invalid API key · Please run /login', provider: 'anthropic' },
    category: 'not_logged_in',
    temporary: false,
    hint: /Claude Code: \/login/,
  },
  { name: 'Claude Code: Not logged in', facts: { error: 'Not logged in · Please run /login', provider: 'anthropic' }, category: 'not_logged_in', temporary: false },
  {
    name: 'Claude Code: OAuth token has expired',
    facts: {
      error:
        'API Error: 401 {"type":"error","error":{"type":"authentication_error","message":"OAuth token has expired. Please obtain a new token or refresh your existing token."},"request_id":"req_011CUfEoUHxoPjKj7PJHsAZt"} · Please run /login',
      provider: 'anthropic',
    },
    category: 'not_logged_in',
    temporary: false,
    hint: /Log in to Anthropic/,
  },
  {
    name: 'Claude Code: no authentication method',
    facts: {
      error:
        'Could not resolve authentication method. Expected either apiKey or authToken to be set. Or for one of the "X-Api-Key" or "Authorization" headers to be explicitly omitted',
      provider: 'anthropic',
    },
    category: 'provider_not_configured',
    temporary: false,
  },
  {
    name: 'Codex: access token could not be refreshed (refresh token already used)',
    facts: { error: 'Your access token could not be refreshed because your refresh token was already used. Please log out and sign in again.', provider: 'openai' },
    category: 'oauth_refresh_failed',
    temporary: false,
    hint: /codex login/,
  },
  {
    name: 'Codex MCP: OAuth token refresh failed: invalid_grant',
    facts: { error: 'OAuth token refresh failed: invalid_grant: session not found' },
    category: 'oauth_refresh_failed',
    temporary: false,
  },
  {
    name: 'OpenClaw: OAuth token refresh failed for anthropic',
    facts: {
      error: 'OAuth token refresh failed for anthropic: Failed to refresh OAuth token for anthropic. Please try again or re-authenticate.',
      provider: 'anthropic',
    },
    category: 'oauth_refresh_failed',
    temporary: false,
  },
  {
    name: 'OpenClaw: No API key found for provider',
    facts: {
      error:
        'No API key found for provider "anthropic". Auth store: /home/u/.openclaw/agents/main/agent/auth-profiles.json (agentDir: /home/u/.openclaw/agents/main/agent). Configure auth for this agent (openclaw agents add <id>) or copy auth-profiles.json from the main agentDir.',
      provider: 'anthropic',
    },
    category: 'provider_not_configured',
    temporary: false,
    hint: /ANTHROPIC_API_KEY/,
  },
  {
    name: 'a runtime: Provider is not configured',
    facts: { error: 'Provider is not configured: openrouter' },
    category: 'provider_not_configured',
    temporary: false,
  },
  {
    name: 'a run that ended with reason no_model',
    facts: { error: 'run ended: no_model', reason: 'no_model' },
    category: 'provider_not_configured',
    temporary: false,
  },
  {
    name: 'Gemini CLI: set an auth method',
    facts: {
      error:
        'Please set an Auth method in your /home/u/.gemini/settings.json or specify one of the following environment variables before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA',
      provider: 'gcp.gemini',
    },
    category: 'provider_not_configured',
    temporary: false,
  },
  {
    name: 'Claude Code api_error without status (connection)',
    facts: { error: 'API error (no response)', provider: 'anthropic' },
    category: 'network',
    temporary: true,
  },
  { name: 'Codex: idle timeout waiting for SSE', facts: { error: 'idle timeout waiting for SSE', provider: 'openai' }, category: 'network', temporary: true },
  {
    name: 'Codex: stream disconnected before completion',
    facts: { error: 'stream disconnected before completion: Transport error: error decoding response body', provider: 'openai' },
    category: 'incomplete_response',
    temporary: true,
  },
  {
    name: 'Codex: response.failed (status 200)',
    facts: { error: 'response.failed', status: 200, provider: 'openai' },
    category: 'incomplete_response',
    temporary: true,
  },
  {
    name: 'a run that ended with reason model_error, nothing more',
    facts: { error: 'run ended: model_error', reason: 'model_error' },
    category: 'incomplete_response',
    temporary: true,
  },
  {
    name: 'HTTP 409 conflict',
    facts: { error: '409 {"type":"error","error":{"type":"conflict_error","message":"Conflict"}}' },
    category: 'provider_error',
    temporary: true,
  },
  { name: 'HTTP 408 request timeout', facts: { error: 'Request Timeout', status: 408 }, category: 'network', temporary: true },
  {
    name: 'HTTP 504 timeout_error',
    facts: { error: '504 {"type":"error","error":{"type":"timeout_error","message":"Request timed out"}}', provider: 'anthropic' },
    category: 'network',
    temporary: true,
  },
  // The SDKs' own exception names, and a DNS failure as Node.js words it: matched as words.
  {
    name: "the SDKs' NotFoundError as the error type (no status in the text)",
    facts: { error: 'Resource not found', errorType: 'NotFoundError', provider: 'openai' },
    category: 'model_not_found',
    temporary: false,
  },
  {
    name: 'openai-python NotFoundError as Python prints it, qualified by its module',
    facts: { error: 'openai.NotFoundError: Resource not found', provider: 'azure.ai.openai' },
    category: 'model_not_found',
    temporary: false,
  },
  {
    name: 'Node.js DNS failure ENOTFOUND',
    facts: { error: 'getaddrinfo ENOTFOUND api.anthropic.com', provider: 'anthropic' },
    category: 'network',
    temporary: true,
  },
  // A model call that failed in the agent's own code (a local exception recorded on the chat
  // span): Python's FileNotFoundError and ModuleNotFoundError hold `notfounderror` and `enotfound`
  // inside them, and are neither a missing model nor a DNS failure. No row knows them.
  {
    name: "Python FileNotFoundError raised inside a model call: no known cause, not 'model not found'",
    facts: {
      error: "FileNotFoundError: [Errno 2] No such file or directory: '/workspace/notes.md'",
      errorType: 'FileNotFoundError',
      provider: 'openai',
      model: 'gpt-4o',
    },
    category: 'incomplete_response',
    temporary: true,
    hint: /without a known cause/,
  },
  {
    name: "Python ModuleNotFoundError raised inside a model call: no known cause, not 'model not found'",
    facts: { error: "ModuleNotFoundError: No module named 'tiktoken'", errorType: 'ModuleNotFoundError', provider: 'openai' },
    category: 'incomplete_response',
    temporary: true,
    hint: /without a known cause/,
  },
];

describe("watchdog diagnosis: one table, the providers' real texts", () => {
  for (const c of CASES) {
    test(c.name, () => {
      const d = diagnoseProviderFailure(c.facts);
      assert.equal(d.category, c.category, `${c.name}: ${c.facts.error}`);
      assert.equal(d.temporary, c.temporary);
      assert.ok(d.hint.length > 0 && !d.hint.endsWith('.'), d.hint);
      if (c.hint) assert.match(d.hint, c.hint);
    });
  }

  test('every category is exercised by a real text', () => {
    const seen = new Set(CASES.map((c) => c.category));
    assert.deepEqual(
      CATEGORIES.filter((c) => !seen.has(c)),
      [],
    );
  });

  test('every provider of the issue has cases: OpenAI, Anthropic, Gemini, Bedrock, Azure OpenAI and the agent CLIs', () => {
    for (const p of ['OpenAI', 'Anthropic', 'Gemini', 'Bedrock', 'Azure OpenAI', 'Claude Code', 'Codex', 'Gemini CLI'])
      assert.ok(
        CASES.some((c) => c.name.startsWith(p)),
        p,
      );
  });
});

describe('watchdog diagnosis: helpers', () => {
  test('the HTTP status an SDK message starts with', () => {
    assert.equal(statusInText('429 Rate limit reached'), 429);
    assert.equal(statusInText("Error code: 429 - {'error': {}}"), 429);
    assert.equal(statusInText('API Error: 529 {"type":"error"}'), 529);
    assert.equal(statusInText('HTTP 401: User not found.'), 401);
    assert.equal(statusInText('{"error":{"code":503,"message":"x"}}'), 503);
    assert.equal(statusInText('Connection error.'), undefined);
  });

  test('provider names from gen_ai.provider.name, else from the text', () => {
    assert.equal(providerName('openai'), 'OpenAI');
    assert.equal(providerName('aws.bedrock'), 'Bedrock');
    assert.equal(providerName('gcp.gemini'), 'Gemini');
    assert.equal(providerName('openai', 'requests to the chatcompletions_create operation under azure openai api'), 'Azure OpenAI');
    assert.equal(providerName(undefined, 'throttlingexception: too many tokens'), 'Bedrock');
    assert.equal(providerName(undefined, ''), 'the provider');
  });

  test('the error a report names: the provider message out of its JSON, after the status, one line', () => {
    assert.equal(summarizeError('529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'), '529 Overloaded');
    assert.equal(summarizeError("Error code: 429 - {'error': {'message': 'Rate limit reached for gpt-4o', 'type': 'tokens'}}"), '429 Rate limit reached for gpt-4o');
    assert.equal(
      summarizeError(
        '{"error":{"message":"{\\n  \\"error\\": {\\n    \\"code\\": 400,\\n    \\"message\\": \\"API key not valid. Please pass a valid API key.\\"\\n  }\\n}\\n","code":400,"status":"Bad Request"}}',
      ),
      '400 API key not valid. Please pass a valid API key.',
    );
    assert.equal(summarizeError('Connection error.'), 'Connection error.');
    assert.equal(summarizeError('500 The server had an error\n    at foo (x.js:1:1)'), '500 The server had an error');
    assert.equal(summarizeError('x'.repeat(400)).length, 300);
  });

  test('the human line of a report, exactly', () => {
    const f = { title: 'Fix the tests', error: '529 Overloaded', step: 'read_file', hint: 'Anthropic is overloaded: this passes, retrying later usually works' };
    assert.equal(
      reportLine('sess-1', f, true),
      '[run failed] #sess-1 "Fix the tests": 529 Overloaded. Last step: read_file. After one automatic retry. Anthropic is overloaded: this passes, retrying later usually works.',
    );
    assert.equal(
      reportLine('sess-2', { ...f, title: 'Untitled', error: 'Request timed out.', step: 'model request', hint: '' }, false),
      '[run failed] #sess-2 "Untitled": Request timed out. Last step: model request.',
    );
  });
});
