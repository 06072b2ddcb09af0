/**
 * `new Date(ms).toISOString()` without a Date: the failure path writes three such times into every
 * work event, and on this VM the native call (with its Date object) cost 0.6–1.1 µs where the
 * arithmetic below costs about 0.2. Same string for every time the native call formats with a
 * four-digit year (0000–9999); any other value (negative years, years past 9999, NaN) is left to
 * the native call, which also keeps its RangeError for invalid times.
 */

const DAY_MS = 86_400_000;
/** 10000-01-01T00:00:00.000Z: the first time the native call writes with six year digits. */
const YEAR_10000_MS = 253_402_300_800_000;
/** 0000-01-01T00:00:00.000Z. */
const YEAR_0_MS = -62_167_219_200_000;

export function isoTime(ms: number): string {
  if (!(ms >= YEAR_0_MS && ms < YEAR_10000_MS)) return new Date(ms).toISOString();
  // A Date's time value drops fractional milliseconds toward zero (TimeClip).
  const t = Math.trunc(ms);
  const days = Math.floor(t / DAY_MS);
  let rest = t - days * DAY_MS;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1000);
  const millis = rest - seconds * 1000;
  // Civil date from days since 1970-01-01 (H. Hinnant's `civil_from_days`, proleptic Gregorian).
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  // One flat string from its character codes: a template would leave a tree of pieces (a rope)
  // that the work event keeps, so more objects for the collector than the native call's one.
  return String.fromCharCode(
    DIGIT + Math.floor(year / 1000),
    DIGIT + (Math.floor(year / 100) % 10),
    DIGIT + (Math.floor(year / 10) % 10),
    DIGIT + (year % 10),
    DASH,
    DIGIT + Math.floor(month / 10),
    DIGIT + (month % 10),
    DASH,
    DIGIT + Math.floor(day / 10),
    DIGIT + (day % 10),
    T,
    DIGIT + Math.floor(hours / 10),
    DIGIT + (hours % 10),
    COLON,
    DIGIT + Math.floor(minutes / 10),
    DIGIT + (minutes % 10),
    COLON,
    DIGIT + Math.floor(seconds / 10),
    DIGIT + (seconds % 10),
    DOT,
    DIGIT + Math.floor(millis / 100),
    DIGIT + (Math.floor(millis / 10) % 10),
    DIGIT + (millis % 10),
    Z,
  );
}

const DIGIT = 48;
const DASH = 45;
const T = 84;
const COLON = 58;
const DOT = 46;
const Z = 90;
