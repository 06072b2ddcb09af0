/**
 * OTLP/protobuf, written from the OTLP .proto definitions (opentelemetry-proto `collector/{trace,logs}/v1`,
 * `trace/v1`, `logs/v1`, `common/v1`, `resource/v1`): decoding of ExportTraceServiceRequest and
 * ExportLogsServiceRequest into the same normalized records as OTLP/JSON, and the messages vigil
 * answers with. One small wire reader (protobuf/wire.ts) serves every message walk: common values
 * and the request framing (protobuf/common.ts), spans (protobuf/spans.ts), log records
 * (protobuf/logs.ts); each walk either builds a record or only checks it.
 *
 * Validation and bounds are those of OTLP/JSON:
 * - bytes that are not well-formed protobuf (a truncated message, a length past its end, a varint
 *   over 10 bytes, wire type 6 or 7, an unbalanced group, groups nested deeper than 100 levels)
 *   fail the whole request with VIGIL_PAYLOAD_INVALID (HTTP 400, gRPC INVALID_ARGUMENT), as does a
 *   wrong wire type for a field above the records (`resource_spans`, `scope_spans`, `spans`, ...);
 * - a well-formed record with a field of the wrong wire type, an id of the wrong length, a string
 *   that is not UTF-8 or a negative enum is rejected alone (OTLP partial success), and so are the
 *   records under a resource or scope with such a field;
 * - attribute counts, string lengths and nesting depth are bounded and counted.
 */
export { decodeTracesProtobuf } from './protobuf/spans.ts';
export { decodeLogsProtobuf } from './protobuf/logs.ts';
export { RETRY_INFO_TYPE_URL, encodeExportResponse, encodeStatus } from './protobuf/answers.ts';
export { MAX_GROUP_DEPTH } from './protobuf/wire.ts';
