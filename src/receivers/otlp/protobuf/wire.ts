/**
 * The protobuf wire reader every OTLP message decoder shares (protobuf encoding spec: varints,
 * fixed 32/64-bit values, length-delimited fields, groups). Every read is bounded by an explicit
 * `end` (the end of the enclosing message), so a length that points past its message is caught
 * where it is read; bytes that are not well-formed protobuf throw a WireError, which fails the
 * whole request. Nothing here recurses: groups (only ever unknown fields in OTLP) are skipped with
 * an explicit, bounded stack, so no input can exhaust the call stack.
 */

// Wire types.
export const VARINT = 0;
export const I64 = 1;
export const LEN = 2;
export const SGROUP = 3;
export const EGROUP = 4;
export const I32 = 5;
export const WIRE_NAMES: readonly string[] = ['VARINT', 'I64', 'LEN', 'SGROUP', 'EGROUP', 'I32'];

/** Groups nested deeper than this are refused (OTLP has no groups; protoc's own parser stops at 100 levels of nesting). */
export const MAX_GROUP_DEPTH = 100;

/** Bytes that are not well-formed protobuf: the whole request is refused. */
export class WireError extends Error {}

export class WireReader {
  pos = 0;
  /** Wire type and field number of the last tag read by next(). */
  wireType = 0;
  field = 0;
  /** The high 32 bits of the last varint64() or fixed64() read. */
  hi = 0;

  constructor(public buf: Buffer) {}

  /** Reads the next tag before `end`; false at the end of the message. */
  next(end: number): boolean {
    if (this.pos >= end) {
      if (this.pos > end) throw new WireError('a field runs past the end of its message');
      return false;
    }
    const tag = this.uint32(end);
    this.field = tag >>> 3;
    this.wireType = tag & 7;
    if (this.field === 0) throw new WireError('field number 0 is not valid');
    if (this.wireType > I32) throw new WireError(`wire type ${this.wireType} is not valid`);
    return true;
  }

  /** A varint that must fit in 32 bits unsigned (tags, lengths). */
  uint32(end: number): number {
    const buf = this.buf;
    let pos = this.pos;
    if (pos >= end) throw new WireError('truncated varint');
    let b = buf[pos++]!;
    if (b < 0x80) {
      this.pos = pos;
      return b;
    }
    let result = b & 0x7f;
    for (let shift = 7; ; shift += 7) {
      if (shift >= 70) throw new WireError('varint longer than 10 bytes');
      if (pos >= end) throw new WireError('truncated varint');
      b = buf[pos++]!;
      if (shift < 28) result |= (b & 0x7f) << shift;
      else if (shift === 28) {
        if ((b & 0x70) !== 0) throw new WireError('varint does not fit in 32 bits');
        result += (b & 0x0f) * 0x10000000;
      } else if ((b & 0x7f) !== 0) throw new WireError('varint does not fit in 32 bits');
      if (b < 0x80) break;
    }
    this.pos = pos;
    return result;
  }

  /** A full 64-bit varint: returns the low 32 bits (unsigned), the high 32 bits go to `hi`. */
  varint64(end: number): number {
    const buf = this.buf;
    let pos = this.pos;
    let lo = 0;
    let hi = 0;
    for (let i = 0; ; i++) {
      if (i === 10) throw new WireError('varint longer than 10 bytes');
      if (pos >= end) throw new WireError('truncated varint');
      const b = buf[pos++]!;
      const bits = b & 0x7f;
      if (i < 4) lo |= bits << (7 * i);
      else if (i === 4) {
        lo |= bits << 28;
        hi |= bits >>> 4;
      } else hi |= bits << (7 * i - 32);
      if (b < 0x80) break;
    }
    this.pos = pos;
    this.hi = hi >>> 0;
    return lo >>> 0;
  }

  /** The start of a length-delimited field's bytes; the cursor moves past them (to its end). */
  lengthDelimited(end: number): number {
    const len = this.uint32(end);
    const start = this.pos;
    if (len > end - start) throw new WireError(`truncated message: a field of ${len} bytes runs past the end of its message`);
    this.pos = start + len;
    return start;
  }

  /** A fixed64: returns the low 32 bits, the high 32 bits go to `hi`. */
  fixed64(end: number): number {
    if (end - this.pos < 8) throw new WireError('truncated fixed64');
    const lo = this.buf.readUInt32LE(this.pos);
    this.hi = this.buf.readUInt32LE(this.pos + 4);
    this.pos += 8;
    return lo;
  }

  double(end: number): number {
    if (end - this.pos < 8) throw new WireError('truncated double');
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  fixed32(end: number): number {
    if (end - this.pos < 4) throw new WireError('truncated fixed32');
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }

  /** Skips the value of the field whose tag was just read (any wire type, groups included). */
  skip(end: number): void {
    if (this.wireType === SGROUP) this.skipGroup(end);
    else this.skipValue(end);
  }

  private skipValue(end: number): void {
    switch (this.wireType) {
      case VARINT:
        this.varint64(end);
        return;
      case I64:
        if (end - this.pos < 8) throw new WireError('truncated fixed64');
        this.pos += 8;
        return;
      case LEN:
        this.lengthDelimited(end);
        return;
      case I32:
        if (end - this.pos < 4) throw new WireError('truncated fixed32');
        this.pos += 4;
        return;
      default:
        throw new WireError(`unexpected end-group tag of field ${this.field}`);
    }
  }

  /** A group and the groups inside it, up to the matching end-group tag, with a bounded stack. */
  private skipGroup(end: number): void {
    const open: number[] = [this.field];
    while (open.length > 0) {
      if (!this.next(end)) throw new WireError(`group ${open[open.length - 1]} is not closed`);
      if (this.wireType === EGROUP) {
        const field = open.pop()!;
        if (this.field !== field) throw new WireError(`group ${field} closed by an end-group tag of field ${this.field}`);
      } else if (this.wireType === SGROUP) {
        if (open.length >= MAX_GROUP_DEPTH) throw new WireError(`groups nested deeper than ${MAX_GROUP_DEPTH} levels`);
        open.push(this.field);
      } else {
        this.skipValue(end);
      }
    }
  }
}

/** An unsigned 64-bit value from its halves, as a decimal string. */
export function uint64String(lo: number, hi: number): string {
  if (hi < 0x200000) return String(hi * 0x100000000 + lo);
  return ((BigInt(hi) << 32n) | BigInt(lo)).toString();
}

/** A signed 64-bit value (two's complement halves): a number when safe, else a decimal string. */
export function int64Value(lo: number, hi: number): number | string {
  if ((hi & 0x80000000) === 0) {
    if (hi < 0x200000) return hi * 0x100000000 + lo;
    return ((BigInt(hi) << 32n) | BigInt(lo)).toString();
  }
  const big = BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo));
  const n = Number(big);
  return Number.isSafeInteger(n) ? n : big.toString();
}
