import { existsSync, readFileSync } from 'node:fs';

/**
 * The JSON lines a running vigil's `file` exporter has written so far ([] before the file exists).
 * The exporter writes a batch with one or more `write` calls while a test polls the file, so a read
 * can end inside a line still being written: that unterminated tail is left for the next read, as a
 * reader tailing a JSONL file leaves it. A terminated line that does not parse is a defect and
 * throws, naming the line. (A line cut by a crash is removed by the exporter when it starts again:
 * test/file-exporter.test.ts.)
 */
export function writtenJsonLines<T = Record<string, any>>(file: string): T[] {
  if (!existsSync(file)) return [];
  const lines = readFileSync(file, 'utf8').split('\n');
  // The last piece is '' when the text ends in a newline, else the line being written.
  lines.pop();
  return parseJsonLines<T>(file, lines);
}

/** Whole lines of `file` as JSON (blank ones skipped); one that does not parse throws, naming it. */
export function parseJsonLines<T>(file: string, lines: readonly string[]): T[] {
  return lines
    .filter((l) => l !== '')
    .map((l, i) => {
      try {
        return JSON.parse(l) as T;
      } catch {
        throw new Error(`${file}:${i + 1} is not a whole JSON line: ${JSON.stringify(l.slice(0, 80))}`);
      }
    });
}
