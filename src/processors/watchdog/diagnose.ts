/**
 * Diagnosis of a failed model request (DESIGN 3.4): one table, read top to bottom, specific
 * before generic — the first row whose test matches the error text, the HTTP status or the error
 * type decides the category, whether it is temporary, and the hint that names the fix. The texts
 * are the providers' and agent CLIs' own (OpenAI, Anthropic, Gemini, Bedrock, Azure OpenAI,
 * Claude Code, Codex, Gemini CLI, OpenClaw); test/watchdog-diagnose.test.ts holds one real text
 * per row and provider.
 */

export const CATEGORIES = [
  'context_too_long',
  'oauth_refresh_failed',
  'not_logged_in',
  'provider_not_configured',
  'quota_exhausted',
  'rate_limited',
  'invalid_credentials',
  'permission_denied',
  'model_not_found',
  'content_filtered',
  'overloaded',
  'incomplete_response',
  'network',
  'provider_error',
  'bad_request',
] as const;
export type Category = (typeof CATEGORIES)[number];

/** What the watchdog knows of a failed model request. */
export interface FailureFacts {
  /** The error text as sent (SDK message, provider body, CLI message). */
  error: string;
  /** HTTP status, when known. */
  status?: number | undefined;
  /** `error.type` or the exception type (`RateLimitError`, `ThrottlingException`, `AI_APICallError`, ...). */
  errorType?: string | undefined;
  /** `gen_ai.provider.name` / `gen_ai.system` or what the CLI implies (`anthropic`, `openai`, `gcp.gemini`, ...). */
  provider?: string | undefined;
  model?: string | undefined;
  /** A run's end reason (`model_error`, `no_model`), when the failure is a run that ended so. */
  reason?: string | undefined;
}

export interface ProviderDiagnosis {
  category: Category;
  /** Passes by itself (a retry may succeed): overloaded, server errors, dropped streams, rate limits. */
  temporary: boolean;
  /** What fixes it, naming the provider (and the login, the limit, the context) — no trailing period. */
  hint: string;
}

interface Row {
  category: Category;
  temporary: boolean;
  test: (f: Facts) => boolean;
  hint: (f: Facts) => string;
}

/** The facts as the rows read them: lower-case text, status, type, provider's display name. */
interface Facts {
  text: string;
  raw: string;
  status: number | undefined;
  type: string;
  provider: string;
  model: string | undefined;
  reason: string;
}

const has = (re: RegExp) => (f: Facts) => re.test(f.text) || re.test(f.type);

/** The table. Order matters: the first matching row decides. */
const TABLE: readonly Row[] = [
  {
    category: 'context_too_long',
    temporary: false,
    test: (f) =>
      f.status === 413 ||
      has(
        /context_length_exceeded|maximum context length|prompt is too long|input token count \(?\d+\)? exceeds the maximum|input is too long for requested model|request_too_large|exceeds? (the|its) context window|too many tokens in the (prompt|request)|context window (is )?exceeded/,
      )(f),
    hint: (f) => `The conversation is longer than ${f.model ? `${f.model}'s` : "the model's"} context window: compact or shorten the context`,
  },
  {
    category: 'oauth_refresh_failed',
    temporary: false,
    test: has(
      /invalid_grant|oauth token refresh failed|failed to refresh (the )?oauth token|access token could not be refreshed|refresh token (was |has been )?(already used|revoked|expired|invalidated|invalid)|refresh_token_(invalidated|reused|expired)|token refresh failed/,
    ),
    hint: (f) => `The ${f.provider} login expired and could not be refreshed: log in to ${f.provider} again${cliLogin(f)}`,
  },
  {
    category: 'not_logged_in',
    temporary: false,
    test: has(
      /not logged in|run \/login|please log ?in|login required|log in again|sign in again|oauth token has expired|session (has )?expired|re-?authenticate|invalid bearer token/,
    ),
    hint: (f) => `Log in to ${f.provider} again${cliLogin(f)}`,
  },
  {
    category: 'provider_not_configured',
    temporary: false,
    test: (f) =>
      f.reason === 'no_model' ||
      has(
        /no api key (found|available|provided|set)|provider (is )?not configured|is not configured|missing api key|api key (is )?(missing|not set|required)|could not resolve authentication method|must specify the gemini_api_key|please set an auth method|unregistered callers|no model (is )?(configured|available|selected)|unknown provider/,
      )(f),
    hint: (f) => `No credentials or model are configured for ${f.provider}: set its API key${apiKeyVariable(f)} or configure the provider`,
  },
  {
    // Gemini says "exceeded your current quota" for per-minute limits too: the quota id tells.
    category: 'quota_exhausted',
    temporary: false,
    test: (f) => has(/resource_exhausted|resource has been exhausted|resource exhausted/)(f) && /per ?day|perday|daily/.test(f.text),
    hint: (f) => `The daily quota at ${f.provider} is used up: wait for it to reset or raise the quota`,
  },
  {
    category: 'rate_limited',
    temporary: true,
    test: has(/resource_exhausted|resource has been exhausted|resource exhausted/),
    hint: (f) => `Rate limited by ${f.provider}: wait${waitHint(f)} before sending more requests, or lower the request rate`,
  },
  {
    // Azure OpenAI: a token rate limit whose wait is a day is a quota.
    category: 'quota_exhausted',
    temporary: false,
    test: (f) => /rate limit/.test(f.text) && (retryAfterSeconds(f.text) ?? 0) >= 3600,
    hint: (f) => `The quota at ${f.provider} is used up (retry after ${formatSeconds(retryAfterSeconds(f.text)!)}): raise the quota or wait for it to reset`,
  },
  {
    category: 'quota_exhausted',
    temporary: false,
    test: (f) =>
      f.status === 402 ||
      has(
        /insufficient_quota|exceeded your current quota|quota (exceeded|exhausted)|enforced_spend_limit_reached|spend(ing)? limit|credit balance is too low|billing_error|billing hard limit|payment required|out of credits/,
      )(f),
    hint: (f) => `Credits or quota at ${f.provider} are used up: add credits or raise the plan's limit`,
  },
  {
    category: 'rate_limited',
    temporary: true,
    test: (f) =>
      f.status === 429 ||
      has(
        /rate_limit_exceeded|rate_limit_error|rate limit|ratelimiterror|throttlingexception|throttl|too many requests|too many tokens|requests per min|tokens per min/,
      )(f),
    hint: (f) => `Rate limited by ${f.provider}: wait${waitHint(f)} before sending more requests, or lower the request rate`,
  },
  {
    category: 'invalid_credentials',
    temporary: false,
    test: (f) =>
      f.status === 401 ||
      has(
        /invalid_api_key|incorrect api key|invalid x-api-key|authentication_error|api key not valid|api_key_invalid|api key not found|invalid api key|invalid authentication|unrecognizedclientexception|security token included in the request is (invalid|expired)|expiredtokenexception|invalid subscription key|authenticationerror|unauthenticated/,
      )(f),
    hint: (f) => `${f.provider} rejected the credentials: check or replace the API key${apiKeyVariable(f)}`,
  },
  {
    category: 'permission_denied',
    temporary: false,
    test: (f) =>
      f.status === 403 ||
      has(/permission_error|permission_denied|permissiondenied|accessdeniedexception|access denied|don't have access to the model|does not have access|forbidden/)(
        f,
      ),
    hint: (f) => `The credentials have no access to ${f.model ?? 'this model'} at ${f.provider}: grant access or choose another model`,
  },
  {
    category: 'model_not_found',
    temporary: false,
    test: (f) =>
      f.status === 404 ||
      has(
        /model_not_found|deploymentnotfound|deployment for this resource does not exist|model \S+ (does not exist|not found)|unknown model|\bnotfounderror|resourcenotfoundexception/,
      )(f),
    hint: (f) => `${f.model ? `The model ${f.model}` : 'The model'} does not exist at ${f.provider} or is not available to you: check the model name`,
  },
  {
    category: 'content_filtered',
    temporary: false,
    test: has(/content_filter|content management policy|content_policy_violation|prompt was blocked|blocked due to safety|responsibleaipolicyviolation/),
    hint: (f) => `${f.provider}'s content filter refused the request: rephrase it or adjust the content`,
  },
  {
    category: 'overloaded',
    temporary: true,
    test: (f) =>
      f.status === 529 ||
      f.status === 503 ||
      has(
        /overloaded_error|overloaded|serviceunavailableexception|service unavailable|modelnotreadyexception|currently loading|temporarily unavailable|high demand|\bunavailable\b/,
      )(f),
    hint: (f) => `${f.provider} is overloaded: this passes, retrying later usually works`,
  },
  {
    category: 'incomplete_response',
    temporary: true,
    test: (f) =>
      (f.status === undefined || f.status === 200) &&
      has(
        /stream disconnected before completion|response\.failed|response\.incomplete|incomplete|stream ended|ended before|unexpected end of (json|input|stream)|premature close|empty response|no response body|response was cut/,
      )(f),
    hint: (f) => `The response from ${f.provider} ended early: this passes, retrying usually works`,
  },
  {
    category: 'network',
    temporary: true,
    test: (f) =>
      f.status === 408 ||
      has(
        /apiconnectionerror|apiconnectiontimeouterror|connection error|econnreset|econnrefused|etimedout|\benotfound|eai_again|socket hang up|fetch failed|timed out|timeout|network error|stream disconnected|api error \(no response\)|no response/,
      )(f),
    hint: (f) => `The connection to ${f.provider} failed or the stream was cut off: check the network; retrying usually works`,
  },
  {
    category: 'provider_error',
    temporary: true,
    test: (f) =>
      (f.status !== undefined && (f.status >= 500 || f.status === 409 || f.status === 424)) ||
      has(
        /api_error|internal server error|internalservererror|server_error|internal error|internalserverexception|modeltimeoutexception|timeout_error|bad gateway|gateway timeout/,
      )(f),
    hint: (f) => `${f.provider} failed on its side (server error): this passes, retrying usually works`,
  },
  {
    category: 'bad_request',
    temporary: false,
    test: (f) => f.status !== undefined && f.status >= 400 && f.status < 500,
    hint: (f) => `${f.provider} rejected the request as invalid: check the request and its parameters`,
  },
];

/** No row matched: an upstream response that failed without saying why (status 200 or none). */
const FALLBACK: Row = {
  category: 'incomplete_response',
  temporary: true,
  test: () => true,
  hint: (f) => `The request to ${f.provider} failed without a known cause: this may pass, retrying usually works`,
};

/** The table's verdict for one failed model request. */
export function diagnoseProviderFailure(input: FailureFacts): ProviderDiagnosis {
  const f = factsOf(input);
  const row = TABLE.find((r) => r.test(f)) ?? FALLBACK;
  return { category: row.category, temporary: row.temporary, hint: row.hint(f) };
}

function factsOf(input: FailureFacts): Facts {
  const raw = input.error ?? '';
  const text = raw.toLowerCase();
  const type = (input.errorType ?? '').toLowerCase();
  return {
    text,
    raw,
    status: input.status ?? statusInText(raw),
    type,
    provider: providerName(input.provider, `${text} ${type}`),
    model: input.model,
    reason: (input.reason ?? '').toLowerCase(),
  };
}

/** The HTTP status an error text states (`429 {...}`, `Error code: 429 - ...`, `API Error: 529 ...`, `"code": 429`). */
export function statusInText(text: string): number | undefined {
  const m =
    /^\s*(?:[\w.]*error:?\s*)?(?:error code:\s*|api error:\s*|http\s*|status(?: code)?:?\s*)?([1-5]\d\d)\b/i.exec(text) ?? /"code"\s*:\s*([45]\d\d)\b/.exec(text);
  return m ? Number(m[1]) : undefined;
}

const PROVIDERS: Array<[RegExp, string]> = [
  [/^azure|azure openai/, 'Azure OpenAI'],
  [/^openai|^codex/, 'OpenAI'],
  [/^anthropic|^claude/, 'Anthropic'],
  [/^aws\.bedrock|^bedrock|^amazon-bedrock/, 'Bedrock'],
  [/^gcp\.vertex|^vertex/, 'Vertex AI'],
  [/^gcp\.gemini|^gemini|^google/, 'Gemini'],
  [/^mistral/, 'Mistral'],
  [/^groq/, 'Groq'],
  [/^openrouter/, 'OpenRouter'],
];

/** A provider's display name, from `gen_ai.provider.name` or what the error text names; "the provider" when unknown. */
export function providerName(provider: string | undefined, text = ''): string {
  const p = (provider ?? '').toLowerCase();
  if (/azure openai|azureexception|microsoft/.test(text) && (p === '' || p.startsWith('openai') || p.startsWith('azure'))) return 'Azure OpenAI';
  for (const [re, name] of PROVIDERS) if (p && re.test(p)) return name;
  if (p) return provider!;
  if (/bedrock|throttlingexception|accessdeniedexception|unrecognizedclientexception/.test(text)) return 'Bedrock';
  if (/generativelanguage|resource_exhausted|api_key_invalid|gemini/.test(text)) return 'Gemini';
  if (/anthropic|x-api-key|overloaded_error|claude/.test(text)) return 'Anthropic';
  if (/openai|chatgpt/.test(text)) return 'OpenAI';
  return 'the provider';
}

/** How to log in again with the agent CLI that talks to this provider. */
function cliLogin(f: Facts): string {
  if (f.provider === 'Anthropic' || /run \/login/.test(f.text)) return ' (Claude Code: /login)';
  if (f.provider === 'OpenAI' && /codex|chatgpt|sign in|log out/.test(f.text)) return ' (Codex: codex login)';
  if (f.provider === 'Gemini' || f.provider === 'Vertex AI') return ' (Gemini CLI: /auth)';
  if (f.provider === 'OpenAI') return ' (Codex: codex login)';
  return '';
}

const API_KEY_VARIABLES: Record<string, string> = {
  OpenAI: 'OPENAI_API_KEY',
  Anthropic: 'ANTHROPIC_API_KEY',
  Gemini: 'GEMINI_API_KEY',
  'Azure OpenAI': 'AZURE_OPENAI_API_KEY',
  Bedrock: 'AWS credentials',
};

function apiKeyVariable(f: Facts): string {
  const v = API_KEY_VARIABLES[f.provider];
  return v ? ` (${v})` : '';
}

/** " about 2.4s" from the provider's own wait ("try again in 2.4s", "retry after 6 seconds", `retryDelay: "43s"`). */
function waitHint(f: Facts): string {
  const m = /try again in (\d+(?:\.\d+)?\s*(?:ms|s|m|h|seconds?|minutes?))/.exec(f.text) ?? /"retrydelay"\s*:\s*"(\d+(?:\.\d+)?s)"/.exec(f.text);
  if (m) return ` about ${m[1]!.replace(/\s+/g, '')}`;
  const s = retryAfterSeconds(f.text);
  return s !== undefined ? ` about ${formatSeconds(s)}` : ' for the limit to reset';
}

function retryAfterSeconds(text: string): number | undefined {
  const m = /retry after (\d+) seconds?/.exec(text);
  return m ? Number(m[1]) : undefined;
}

function formatSeconds(s: number): string {
  if (s >= 3600 && s % 3600 === 0) return `${s / 3600}h`;
  if (s >= 60 && s % 60 === 0) return `${s / 60}m`;
  return `${s}s`;
}

/**
 * The error as a report names it: the provider's own message pulled out of the JSON or Python dict
 * an SDK wraps it in (innermost `message`), after the HTTP status, on one line, at most 300 characters.
 */
export function summarizeError(text: string, status?: number): string {
  const message = innermostMessage(text) ?? firstLine(text);
  const code = status ?? statusInText(text);
  let out = message.replace(/\s+/g, ' ').trim();
  if (code !== undefined && !out.startsWith(String(code))) out = `${code} ${out}`;
  if (out === '') out = code !== undefined ? `HTTP ${code}` : 'model request failed';
  return out.length > 300 ? `${out.slice(0, 299)}…` : out;
}

/** The deepest `"message": "…"` (or `'message': '…'`) of an error body, decoding JSON strings nested in it. */
function innermostMessage(text: string): string | undefined {
  let current = text;
  let found: string | undefined;
  for (let depth = 0; depth < 4; depth++) {
    const m = /"message"\s*:\s*"((?:[^"\\]|\\.)*)"/.exec(current) ?? /'message'\s*:\s*'((?:[^'\\]|\\.)*)'/.exec(current);
    if (!m) break;
    let value = m[1]!;
    try {
      value = JSON.parse(`"${value}"`) as string;
    } catch {
      // a Python repr: keep it as it is
    }
    found = value;
    if (!/"message"|'message'/.test(value)) break;
    current = value;
  }
  return found;
}

function firstLine(text: string): string {
  for (const line of text.split(/\r?\n/)) if (line.trim() !== '') return line.trim();
  return '';
}
