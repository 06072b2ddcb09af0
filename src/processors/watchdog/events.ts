/**
 * The watchdog's work events (DESIGN 4.2): `dev.vigil.provider.retry` and
 * `dev.vigil.provider.report`, CloudEvents whose `data` is `{request_id, partition, category,
 * temporary, hint, error, step, title, retried, trace_id, span_id}` plus `run`, `failed_at`,
 * `provider`, `model`, `status_code`, `detail` and the text for people or agents: a retry's
 * `prompt`, a report's `line`. Ids are stable (a hash of type and request id), so a redelivered or
 * replayed event is the same event.
 */
import { stableHash } from '../../model/identity.ts';
import type { ProviderEventData, WorkEvent, WorkOutboxItem } from '../../model/work.ts';
import type { FailureRecord } from './checkpoint.ts';

export const RETRY_EVENT = 'dev.vigil.provider.retry';
export const REPORT_EVENT = 'dev.vigil.provider.report';

/**
 * The human line of a report:
 * `[run failed] #<conversation> "<title>": <error>. Last step: <step>.[ After one automatic retry.][ <hint>.]`
 */
export function reportLine(conversation: string, f: Pick<FailureRecord, 'title' | 'error' | 'step' | 'hint'>, retried: boolean): string {
  const hint = f.hint.trim();
  return `[run failed] #${conversation} "${f.title}": ${sentence(f.error)} Last step: ${sentence(f.step)}${retried ? ' After one automatic retry.' : ''}${hint ? ` ${sentence(hint)}` : ''}`;
}

/** What a retry asks the agent: continue where it stopped, without redoing work. */
export function retryPrompt(f: Pick<FailureRecord, 'error'>): string {
  return `Your previous turn stopped because a model request failed (${noPeriod(f.error)}). Continue from where you left off, without redoing work that is already done.`;
}

export interface ProviderEventInput {
  type: typeof RETRY_EVENT | typeof REPORT_EVENT;
  run: string;
  conversation: string;
  failedAtMs: number;
  /** The event's time: the retry's due time, the (second) failure's time for a report. */
  timeMs: number;
  failure: FailureRecord;
  retried: boolean;
}

export function providerEvent(input: ProviderEventInput): WorkOutboxItem {
  const { type, run, conversation, failure: f } = input;
  const requestId = `${type === RETRY_EVENT ? 'watchdog-retry' : 'watchdog-report'}:${run}`;
  const id = stableHash(['provider-event', type, requestId]);
  const data: ProviderEventData = {
    request_id: requestId,
    partition: conversation,
    category: f.category,
    temporary: f.temporary,
    hint: f.hint,
    error: f.error,
    step: f.step,
    title: f.title,
    retried: input.retried,
    trace_id: f.trace_id,
    span_id: f.span_id,
    run,
    failed_at: new Date(input.failedAtMs).toISOString(),
    provider: f.provider,
    model: f.model,
    status_code: f.status_code,
    detail: f.detail,
    ...(type === RETRY_EVENT ? { prompt: retryPrompt(f) } : { line: reportLine(conversation, f, input.retried) }),
  };
  const event: WorkEvent = {
    specversion: '1.0',
    id,
    source: `vigil/${f.service}`,
    type,
    time: new Date(input.timeMs).toISOString(),
    subject: conversation,
    datacontenttype: 'application/json',
    data,
  };
  return { kind: 'work', id, event };
}

function noPeriod(s: string): string {
  return s.trim().replace(/\.+$/, '');
}

/** The text ended as a sentence: a period added unless it already ends in `.`, `!`, `?` or `…`. */
function sentence(s: string): string {
  const t = s.trim();
  return /[.!?…]$/.test(t) ? t : `${t}.`;
}
