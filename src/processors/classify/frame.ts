/**
 * Framing: turns raw tool output into the lines the format detectors read. Terminal colour and
 * cursor codes are removed (agents often capture output through a pty), `\r\n` and lone `\r`
 * end lines (progress bars redraw with `\r`), and a leading log timestamp is cut off each line so
 * that `2026-01-31 12:00:00,123 ERROR app: x` reads as `ERROR app: x` (the timestamp is volatile
 * and says nothing about the failure). Indentation is kept: it is how tracebacks and stacks are
 * told from the lines around them.
 *
 * Every expression here is anchored or has no overlapping quantifiers, so framing is linear in
 * the input: a 1 MB single line or a 10,000-line stack costs one pass.
 */

// CSI (`ESC [ … final`), OSC (`ESC ] … BEL|ST`) and two-byte escapes.
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]/g;
const LINE_BREAK = /\r\n|\r|\n/;
// `2026-01-31T12:00:00.123Z `, `2026-01-31 12:00:00,123 `, `[2026-01-31 12:00:00] `, `12:00:00.123 `,
// `[12:00:00] `; then optional spaces. Anchored at the start; each part is bounded.
const TIMESTAMP = /^\[?(?:\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?|\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?)\]?[ \t]+/;

/** Removes ANSI escape sequences. */
export function stripAnsi(text: string): string {
  return text.indexOf('\x1b') === -1 ? text : text.replace(ANSI, '');
}

/** The framed lines of a text: ANSI removed, split on any line break, leading timestamps cut. */
export function frameLines(text: string): string[] {
  const clean = stripAnsi(text);
  if (clean.indexOf('\r') !== -1) {
    const lines = clean.split(LINE_BREAK);
    for (let i = 0; i < lines.length; i++) lines[i] = cutTimestamp(lines[i]!);
    return lines;
  }
  // `\n` only (the common case): sliced by hand, cheaper than `split` for a few short lines.
  const lines: string[] = [];
  let start = 0;
  for (;;) {
    const end = clean.indexOf('\n', start);
    if (end === -1) {
      lines.push(cutTimestamp(start === 0 ? clean : clean.slice(start)));
      return lines;
    }
    lines.push(cutTimestamp(clean.slice(start, end)));
    start = end + 1;
  }
}

/** The line without its leading timestamp. */
function cutTimestamp(line: string): string {
  const c = line.charCodeAt(0);
  // Only lines starting with a digit or `[` can carry a timestamp: one cheap test per line.
  if ((c >= 48 && c <= 57) || c === 91) {
    const m = TIMESTAMP.exec(line);
    if (m) return line.slice(m[0].length);
  }
  return line;
}

/** Index of the first character that is not a space or tab (the line's length when blank). */
export function indentOf(line: string): number {
  let i = 0;
  while (i < line.length) {
    const c = line.charCodeAt(i);
    if (c !== 32 && c !== 9) break;
    i++;
  }
  return i;
}

/** Whether a line is empty or only whitespace. */
export function isBlank(line: string): boolean {
  return line.trim() === '';
}
