/**
 * A grpc-js client of vigil's OTLP export methods that sends and receives raw bytes (no codec), so
 * a test controls every byte of a request: `new RawOtlpClient(target, credentials.createInsecure())`,
 * then `.traces(body, metadata, callback)` or `.logs(...)`.
 */
import { makeGenericClientConstructor } from '@grpc/grpc-js';
import { EXPORT_METHODS } from '../../src/receivers/otlp/grpc.ts';

const identity = (b: Buffer) => b;
const rawMethod = (path: string) => ({
  path,
  requestStream: false,
  responseStream: false,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity,
});

export const RawOtlpClient = makeGenericClientConstructor({ traces: rawMethod(EXPORT_METHODS.traces), logs: rawMethod(EXPORT_METHODS.logs) }, 'OtlpExport');
