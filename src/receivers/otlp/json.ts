/**
 * OTLP/JSON decoding (OTLP specification, "JSON Protobuf Encoding") of ExportTraceServiceRequest and
 * ExportLogsServiceRequest into the normalized records of normalized.ts. The body is read once, in
 * document order, by one small JSON reader (json/reader.ts) that every message walk shares: common
 * values and the request framing (json/common.ts), spans (json/spans.ts), log records
 * (json/logs.ts); each walk either builds a record or only checks it, so records the relevance
 * test lets go are never materialized, and no parse tree of the whole body is ever built.
 *
 * Receivers are lenient where the proto3 JSON mapping is: snake_case field names and enum names are
 * accepted besides lowerCamelCase and integers, int64 values as strings or numbers, `null` as the
 * default value, unknown fields ignored. A span or log record with a wrong-typed field is rejected
 * alone and counted (OTLP partial success); only a body that is not JSON (or nested deeper than
 * MAX_JSON_DEPTH), or whose structure above the records is not the expected one, fails the whole
 * request with VIGIL_PAYLOAD_INVALID.
 */
export { decodeTracesJson } from './json/spans.ts';
export { decodeLogsJson } from './json/logs.ts';
export { MAX_JSON_DEPTH } from './json/reader.ts';
