/**
 * The few protobuf messages vigil answers with: the export responses (`collector/{trace,logs}/v1`)
 * and google.rpc.Status with a RetryInfo detail.
 */
import { LEN, VARINT } from './wire.ts';

/** Type URL of google.rpc.RetryInfo inside a google.protobuf.Any. */
export const RETRY_INFO_TYPE_URL = 'type.googleapis.com/google.rpc.RetryInfo';

/**
 * ExportTraceServiceResponse / ExportLogsServiceResponse (same shape): `partial_success` (1) with
 * `rejected_spans` / `rejected_log_records` (1, int64) and `error_message` (2). Zero bytes (the
 * empty message) when there is nothing to report, as the specification asks.
 */
export function encodeExportResponse(rejected: number, errorMessage: string): Buffer {
  if (rejected === 0 && errorMessage === '') return Buffer.alloc(0);
  const partial: Buffer[] = [];
  if (rejected > 0) partial.push(tag(1, VARINT), varint(rejected));
  if (errorMessage !== '') partial.push(...lengthField(2, Buffer.from(errorMessage, 'utf8')));
  return Buffer.concat(lengthField(1, Buffer.concat(partial)));
}

/**
 * google.rpc.Status: `code` (1), `message` (2), `details` (3, google.protobuf.Any: `type_url` 1,
 * `value` 2). With `retryAfterSeconds`, one detail is a google.rpc.RetryInfo whose `retry_delay`
 * (1, google.protobuf.Duration: `seconds` 1) tells an OTLP/gRPC client it may retry and when.
 */
export function encodeStatus(code: number, message: string, retryAfterSeconds?: number): Buffer {
  const parts: Buffer[] = [];
  if (code !== 0) parts.push(tag(1, VARINT), varint(code));
  if (message !== '') parts.push(...lengthField(2, Buffer.from(message, 'utf8')));
  if (retryAfterSeconds !== undefined) {
    const duration = Buffer.concat([tag(1, VARINT), varint(retryAfterSeconds)]);
    const retryInfo = Buffer.concat(lengthField(1, duration));
    const any = Buffer.concat([...lengthField(1, Buffer.from(RETRY_INFO_TYPE_URL, 'utf8')), ...lengthField(2, retryInfo)]);
    parts.push(...lengthField(3, any));
  }
  return Buffer.concat(parts);
}

function tag(field: number, wireType: number): Buffer {
  return varint(field * 8 + wireType);
}

/** A non-negative integer below 2^53 as a varint. */
function varint(n: number): Buffer {
  const bytes: number[] = [];
  let v = n;
  while (v >= 0x80) {
    bytes.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  bytes.push(v);
  return Buffer.from(bytes);
}

function lengthField(field: number, value: Buffer): Buffer[] {
  return [tag(field, LEN), varint(value.length), value];
}
