/**
 * Wrapper lines (issue #11): a line that only says that an attempt or a call failed, around the
 * error that made it fail — `tool run_python failed (attempt 3): Error: KeyError: 'results'`,
 * `[retry] attempt 1 failed: connect ECONNREFUSED 127.0.0.1:5432`, `retry 2/3 failed: curl: (7) …`,
 * `Error: Error: ENOENT: …`. The line as printed names the failure (it is what the person saw, and
 * issue #13 names a handled error by its line); its identity is the inner error's, so the attempt
 * number never splits a group and the line groups with the same error printed unwrapped.
 *
 * Recognised prefixes, any number of them, in any order:
 * - a retry tag: `[retry] `, `[retrying] `, `[attempt 2] `, `[attempt 2/3] `, or a short tag naming
 *   the job (`[sync] `), which only counts before one of the prefixes below;
 * - an attempt that failed: `attempt 2 failed: `, `retry 2/3 failed: `, `try 1 of 3 failed with: `;
 * - a named call that failed on an attempt: `tool run_python failed (attempt 3): `,
 *   `fetch rates failed (try 2/5): `;
 * - a retry notice: `retrying after error: `, `retrying in 2s: `, `will retry: `;
 * - a generic error type around another error: `Error: Error: …`, `Error: KeyError: …`,
 *   `Exception: ValueError: …` (an outer `Error`/`Exception` head whose message is itself an
 *   error line).
 */

// A retry tag, or any short tag naming the job (`[sync] attempt 1 failed: …`): a tag alone never
// makes a wrapper (below), so a logger's `[INFO] ` prefix before a failed attempt reads the same.
const TAG = /^\[(?:retry|retrying|attempt \d+(?:\/\d+)?|[A-Za-z][\w.:-]{0,31})\] /i;
const ATTEMPT_FAILED = /^(?:attempt|retry|try) #?\d+(?:(?:\/| of )\d+)? failed(?: with)?: /i;
// `<what> failed (attempt N[/M]): `; what: a short phrase without a colon.
const CALL_FAILED = /^[^:()]{1,80} failed \((?:attempt|retry|try) #?\d+(?:(?:\/| of )\d+)?\): /i;
const RETRY_NOTICE = /^(?:retrying|will retry)(?: in \d+(?:\.\d+)?\s?(?:ms|s|m|seconds?))?(?: after(?: an?)?(?: error)?| because of(?: an?)?(?: error)?)?: /i;
// An outer generic error head whose message is an error line of its own.
const GENERIC_OUTER = /^(?:Uncaught )?(?:Error|Exception): (?=(?:Uncaught )?(?:[A-Za-z_$][\w$]*\.)*[\w$]*(?:Error|Exception)(?: \[[A-Z][A-Z0-9_]*\])?: \S)/;

/** Whether a trimmed line can start with a wrapper prefix (a cheap test before `unwrap`). */
export function mayWrap(t: string): boolean {
  const c = t.charCodeAt(0);
  return c === 91 /* [ */ || c === 69 /* E */ || c === 85 /* U */ || t.includes(' failed') || /^(?:retrying|will retry)/i.test(t);
}

/** The error a wrapper line wraps (trimmed line `t`), or undefined when the line is no wrapper. */
export function unwrap(t: string): string | undefined {
  let rest = t;
  let outer = false;
  for (let guard = 0; guard < 8; guard++) {
    // A tag alone (`[retry] attempt 1 succeeded`) says nothing failed: only a failed attempt, a
    // failed call or a retry notice makes a wrapper.
    const tag = TAG.exec(rest);
    const m = tag ?? ATTEMPT_FAILED.exec(rest) ?? CALL_FAILED.exec(rest) ?? RETRY_NOTICE.exec(rest);
    if (!m) break;
    rest = rest.slice(m[0].length).trimStart();
    if (!tag) outer = true;
  }
  let doubled = false;
  for (let guard = 0; guard < 8; guard++) {
    const m = GENERIC_OUTER.exec(rest);
    if (!m) break;
    rest = rest.slice(m[0].length);
    doubled = true;
  }
  if ((!outer && !doubled) || rest.trim() === '') return undefined;
  return rest;
}
