/**
 * The JSON reader every OTLP/JSON message walk shares: a cursor over the UTF-8 bytes of a request
 * (RFC 8259 grammar), read in document order without building a parse tree. A walk asks for the
 * next key of an object or the next item of an array and reads or skips each value; strings are
 * located, not decoded, until a walk asks for their text. Nothing here recurses, and nesting is
 * bounded (MAX_JSON_DEPTH), so no body can exhaust the stack or make the reader build millions of
 * containers: a body that is not JSON, or nested too deep, throws a JsonSyntaxError, which fails
 * the whole request.
 */
import { SHORT_STRING, shortAscii } from '../decoding.ts';

/** Containers nested deeper than this refuse the request: an AnyValue level takes 3 or 4, so values about 60 levels deep still pass (and are cut to MAX_VALUE_DEPTH). */
export const MAX_JSON_DEPTH = 256;

/** Bytes that are not JSON (or nested too deep): the whole request is refused. */
export class JsonSyntaxError extends Error {}

// Bytes of the JSON grammar.
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

/** What a value is, by its first byte. */
export const JsonType = { End: 0, String: 1, Number: 2, Object: 3, Array: 4, True: 5, False: 6, Null: 7, Invalid: 8 } as const;
export type JsonType = (typeof JsonType)[keyof typeof JsonType];

const TYPE_OF_BYTE = (() => {
  const t = new Uint8Array(256).fill(JsonType.Invalid);
  t[QUOTE] = JsonType.String;
  t[MINUS] = JsonType.Number;
  for (let c = ZERO; c <= NINE; c++) t[c] = JsonType.Number;
  t[OPEN_OBJECT] = JsonType.Object;
  t[OPEN_ARRAY] = JsonType.Array;
  t[0x74] = JsonType.True;
  t[0x66] = JsonType.False;
  t[0x6e] = JsonType.Null;
  return t;
})();

/** 1 for the bytes that can follow a backslash in a string. */
const ESCAPES = (() => {
  const t = new Uint8Array(256);
  for (const c of '"\\/bfnrtu') t[c.charCodeAt(0)] = 1;
  return t;
})();

const WHITESPACE = (() => {
  const t = new Uint8Array(256);
  for (const c of [0x20, 0x0a, 0x0d, 0x09]) t[c] = 1;
  return t;
})();

/** 1 for the bytes a string holds as they are (not a quote, a backslash or a control character). */
const PLAIN = (() => {
  const t = new Uint8Array(256).fill(1, 0x20);
  t[QUOTE] = 0;
  t[BACKSLASH] = 0;
  return t;
})();

const HEX_DIGIT = (() => {
  const t = new Uint8Array(256);
  for (const c of '0123456789abcdefABCDEF') t[c.charCodeAt(0)] = 1;
  return t;
})();

export class JsonReader {
  pos = 0;
  /** Containers open at the cursor. */
  depth = 0;
  /** The last string read by string(): its bytes between the quotes, and whether it holds escapes. */
  strStart = 0;
  strEnd = 0;
  strEscaped = false;
  /** The last number read by number(): its bytes. */
  numStart = 0;
  numEnd = 0;
  /** Whether the container just opened has had no key or item yet (a comma is not yet due). */
  private first = false;
  /** 1 where the container open at that depth is an object (for skipValue). */
  private readonly objectAt = new Uint8Array(MAX_JSON_DEPTH + 2);
  readonly end: number;

  constructor(readonly buf: Buffer) {
    this.end = buf.length;
  }

  /** Moves the cursor back (or forward) to a value start seen before, at the depth it had there. */
  seek(pos: number, depth: number): void {
    this.pos = pos;
    this.depth = depth;
    this.first = false;
  }

  /** Skips whitespace; the byte at the cursor, or -1 at the end of the body. */
  peek(): number {
    const buf = this.buf;
    let pos = this.pos;
    let c = buf[pos];
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = buf[++pos];
    this.pos = pos;
    return c === undefined ? -1 : c;
  }

  /** The type of the value at the cursor (after whitespace). */
  type(): JsonType {
    const here = this.buf[this.pos];
    if (here !== undefined && WHITESPACE[here] !== 1) return TYPE_OF_BYTE[here] as JsonType;
    const c = this.peek();
    return c < 0 ? JsonType.End : (TYPE_OF_BYTE[c] as JsonType);
  }

  /** The type of the value right at the cursor, whitespace not skipped (Invalid for whitespace). */
  typeHere(): JsonType {
    const c = this.buf[this.pos];
    return c === undefined ? JsonType.End : (TYPE_OF_BYTE[c] as JsonType);
  }

  /** Whether the bytes at the cursor are exactly `bytes` (ASCII); if so, the cursor moves past them. */
  skipLiteral(bytes: Uint8Array): boolean {
    const buf = this.buf;
    const pos = this.pos;
    if (pos + bytes.length > this.end) return false;
    for (let i = 0; i < bytes.length; i++) if (buf[pos + i] !== bytes[i]) return false;
    this.pos = pos + bytes.length;
    return true;
  }

  /** Opens the object at the cursor (its `{` must be there). */
  openObject(): void {
    this.open(1);
  }

  /** Opens the array at the cursor (its `[` must be there). */
  openArray(): void {
    this.open(0);
  }

  private open(isObject: number): void {
    if (this.depth >= MAX_JSON_DEPTH) syntaxError(`nested deeper than ${MAX_JSON_DEPTH} levels`, this.pos);
    this.pos++;
    this.depth++;
    this.objectAt[this.depth] = isObject;
    this.first = true;
  }

  /**
   * Moves to the next key of the open object: true with the key read (strStart/strEnd/strEscaped)
   * and the cursor at its value; false when the object ends (its `}` consumed).
   */
  nextKey(): boolean {
    // Compact JSON (no whitespace) takes the short way: `,"key":`.
    const pos = this.pos;
    if (!this.first && this.buf[pos] === COMMA && this.buf[pos + 1] === QUOTE) {
      this.pos = pos + 1;
      this.string();
      if (this.buf[this.pos] === COLON) {
        this.pos++;
        return true;
      }
      this.pos = pos;
    }
    let c = this.peek();
    if (c === CLOSE_OBJECT) return this.close();
    if (!this.first) {
      if (c !== COMMA) this.fail(c, "',' or '}'");
      this.pos++;
      c = this.peek();
    }
    this.first = false;
    if (c !== QUOTE) this.fail(c, 'a key (a string)');
    this.string();
    if (this.peek() !== COLON) this.fail(this.peek(), "':' after a key");
    this.pos++;
    return true;
  }

  /** Moves to the next item of the open array: true with the cursor at it; false when the array ends (its `]` consumed). */
  nextItem(): boolean {
    const buf = this.buf;
    const pos = this.pos;
    if (!this.first && buf[pos] === COMMA && buf[pos + 1] !== undefined && WHITESPACE[buf[pos + 1]!] !== 1) {
      this.pos = pos + 1;
      return true;
    }
    const c = this.peek();
    if (c === CLOSE_ARRAY) return this.close();
    if (!this.first) {
      if (c !== COMMA) this.fail(c, "',' or ']'");
      this.pos++;
      this.peek();
    }
    this.first = false;
    return true;
  }

  private close(): false {
    this.pos++;
    this.depth--;
    this.first = false;
    return false;
  }

  /** Reads the string at the cursor (its `"` must be there): its bounds go to strStart/strEnd/strEscaped. */
  string(): void {
    const buf = this.buf;
    const end = this.end;
    let pos = this.pos + 1;
    const start = pos;
    let escaped = false;
    for (;;) {
      while (pos < end && PLAIN[buf[pos]!] === 1) pos++;
      if (pos >= end) syntaxError('unterminated string starting', start - 1);
      const c = buf[pos]!;
      if (c === QUOTE) break;
      if (c === BACKSLASH) {
        escaped = true;
        const e = buf[pos + 1];
        if (e === undefined || ESCAPES[e] !== 1) syntaxError('bad escape in a string', pos);
        if (e === 0x75) {
          if (
            pos + 6 > end ||
            HEX_DIGIT[buf[pos + 2]!] !== 1 ||
            HEX_DIGIT[buf[pos + 3]!] !== 1 ||
            HEX_DIGIT[buf[pos + 4]!] !== 1 ||
            HEX_DIGIT[buf[pos + 5]!] !== 1
          ) {
            syntaxError('bad \\u escape in a string', pos);
          }
          pos += 6;
        } else pos += 2;
        continue;
      }
      if (c < 0x20) syntaxError('control character in a string', pos);
      pos++;
    }
    this.strStart = start;
    this.strEnd = pos;
    this.strEscaped = escaped;
    this.pos = pos + 1;
  }

  /** The text of the last string read (a short ASCII one through the table of strings made last: see shortAscii). */
  stringText(): string {
    if (!this.strEscaped) {
      const start = this.strStart;
      const end = this.strEnd;
      if (start === end) return '';
      if (end - start <= SHORT_STRING) {
        const ascii = shortAscii(this.buf, start, end);
        if (ascii !== undefined) return ascii;
      }
      return this.buf.toString('utf8', start, end);
    }
    return JSON.parse(this.buf.toString('utf8', this.strStart - 1, this.strEnd + 1)) as string;
  }

  /** The byte length of the last string once decoded (as UTF-8). */
  stringBytes(): number {
    return this.strEscaped ? Buffer.byteLength(this.stringText(), 'utf8') : this.strEnd - this.strStart;
  }

  /** Describes the last string read, for a message. */
  describeString(): string {
    const text = this.stringText();
    return `the string ${JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text)}`;
  }

  /** Reads the number at the cursor (JSON number grammar): its bytes go to numStart/numEnd. */
  number(): void {
    const buf = this.buf;
    let pos = this.pos;
    const start = pos;
    if (buf[pos] === MINUS) pos++;
    const intStart = pos;
    while (isDigit(buf[pos])) pos++;
    if (pos === intStart || (buf[intStart] === ZERO && pos - intStart > 1)) syntaxError('bad number', start);
    if (buf[pos] === DOT) {
      const fracStart = ++pos;
      while (isDigit(buf[pos])) pos++;
      if (pos === fracStart) syntaxError('bad number', start);
    }
    if (buf[pos] === 0x65 || buf[pos] === 0x45) {
      pos++;
      if (buf[pos] === PLUS || buf[pos] === MINUS) pos++;
      const expStart = pos;
      while (isDigit(buf[pos])) pos++;
      if (pos === expStart) syntaxError('bad number', start);
    }
    this.numStart = start;
    this.numEnd = pos;
    this.pos = pos;
  }

  /** The value of the last number read. */
  numberValue(): number {
    const buf = this.buf;
    const end = this.numEnd;
    let i = this.numStart;
    const negative = buf[i] === MINUS;
    if (negative) i++;
    // Up to 15 digits, an integer is exact in a double: sum it up without a string.
    if (end - i <= 15) {
      let n = 0;
      for (; i < end; i++) {
        const c = buf[i]!;
        if (c < ZERO || c > NINE) break;
        n = n * 10 + (c - ZERO);
      }
      if (i === end) return negative ? -n : n;
    }
    return Number(buf.toString('latin1', this.numStart, end));
  }

  /** Reads `true`, `false` or `null` at the cursor; returns its type. */
  literal(): JsonType {
    const buf = this.buf;
    const pos = this.pos;
    const c = buf[pos];
    if (c === 0x74 && buf[pos + 1] === 0x72 && buf[pos + 2] === 0x75 && buf[pos + 3] === 0x65) {
      this.pos += 4;
      return JsonType.True;
    }
    if (c === 0x66 && buf[pos + 1] === 0x61 && buf[pos + 2] === 0x6c && buf[pos + 3] === 0x73 && buf[pos + 4] === 0x65) {
      this.pos += 5;
      return JsonType.False;
    }
    if (c === 0x6e && buf[pos + 1] === 0x75 && buf[pos + 2] === 0x6c && buf[pos + 3] === 0x6c) {
      this.pos += 4;
      return JsonType.Null;
    }
    return this.fail(c ?? -1, 'a value');
  }

  /** Skips the value at the cursor, whatever it is, checking its syntax (no recursion). */
  skipValue(): void {
    const base = this.depth;
    for (;;) {
      const c = this.peek();
      const type = c < 0 ? JsonType.End : (TYPE_OF_BYTE[c] as JsonType);
      let more = false;
      switch (type) {
        case JsonType.String:
          this.string();
          break;
        case JsonType.Number:
          this.number();
          break;
        case JsonType.Object:
          this.openObject();
          more = this.nextKey();
          break;
        case JsonType.Array:
          this.openArray();
          more = this.nextItem();
          break;
        case JsonType.True:
        case JsonType.False:
        case JsonType.Null:
          this.literal();
          break;
        default:
          this.fail(c, 'a value');
      }
      if (more) continue;
      // A value is complete: close the containers it completes, until another value is due.
      while (this.depth > base) {
        if (this.objectAt[this.depth] === 1 ? this.nextKey() : this.nextItem()) {
          more = true;
          break;
        }
      }
      if (!more) return;
    }
  }

  /**
   * Describes the value at the cursor for a message (`an array`, `the string "…"`, `number 5`,
   * `boolean true`, `null`) and skips it.
   */
  describeValue(): string {
    switch (this.type()) {
      case JsonType.String:
        this.string();
        return this.describeString();
      case JsonType.Number:
        this.number();
        return `number ${String(this.numberValue())}`;
      case JsonType.Object:
        this.skipValue();
        return 'an object';
      case JsonType.Array:
        this.skipValue();
        return 'an array';
      default: {
        const t = this.literal();
        return t === JsonType.Null ? 'null' : `boolean ${t === JsonType.True}`;
      }
    }
  }

  /** Throws a JsonSyntaxError naming what was expected and what is at the cursor. */
  fail(c: number, expected: string): never {
    const got = c < 0 ? 'the end of the body' : c >= 0x20 && c < 0x7f ? `'${String.fromCharCode(c)}'` : `byte 0x${c.toString(16).padStart(2, '0')}`;
    syntaxError(`expected ${expected}, got ${got}`, this.pos);
  }
}

/**
 * Throws a JsonSyntaxError. Out of line, with the position as a number, on purpose: a message
 * template that names a loop's index inside the loop makes V8 compile the loop several times slower
 * (measured: 5x on string scanning), even when it never runs.
 */
function syntaxError(message: string, at: number): never {
  throw new JsonSyntaxError(`${message} at byte ${at}`);
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= ZERO && c <= NINE;
}

/**
 * Field names of one message, looked up by the bytes of a key without creating a string: each
 * name (lowerCamelCase and, where it differs, snake_case) maps to a small integer id.
 */
export class FieldNames {
  /** Per key length: the names of that length (latin1 strings) and their ids, side by side. */
  private readonly names: Array<string[] | undefined> = [];
  private readonly ids: Array<number[] | undefined> = [];
  private readonly byName = new Map<string, number>();

  constructor(names: Record<string, number>) {
    for (const [name, id] of Object.entries(names)) {
      (this.names[name.length] ??= []).push(name);
      (this.ids[name.length] ??= []).push(id);
      this.byName.set(name, id);
    }
  }

  /** The id of the key just read by `r`, or -1. */
  idOf(r: JsonReader): number {
    if (r.strEscaped) return this.byName.get(r.stringText()) ?? -1;
    const start = r.strStart;
    const len = r.strEnd - start;
    const names = this.names[len];
    if (names === undefined) return -1;
    const buf = r.buf;
    for (let k = 0; k < names.length; k++) {
      // From the last byte back: attribute keys share their prefixes (`gen_ai.`), rarely their ends.
      const name = names[k]!;
      let i = len - 1;
      while (i >= 0 && buf[start + i] === name.charCodeAt(i)) i--;
      if (i < 0) return this.ids[len]![k]!;
    }
    return -1;
  }
}

/** A lowerCamelCase name and its snake_case spelling. */
export function withSnakeCase(names: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, id] of Object.entries(names)) {
    out[name] = id;
    out[name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = id;
  }
  return out;
}
