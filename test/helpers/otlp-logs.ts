/** OTLP/JSON ExportLogsServiceRequest bodies for tests that send log records to a running vigil. */

export interface LogSpec {
  /** Event time in milliseconds since the epoch. */
  time: number;
  body: string;
  /** OTLP SeverityNumber; 17 is ERROR. */
  severity?: number;
  session?: string;
  /** `log.record.uid`, the record's own id. */
  uid?: string;
  traceId?: string;
  spanId?: string;
}

const str = (key: string, value: string) => ({ key, value: { stringValue: value } });

/** One resource (service.name and any other resource attributes) with the given records. */
export function otlpLogs(records: LogSpec[], resource: Record<string, string> = { 'service.name': 'agent' }): string {
  return JSON.stringify({
    resourceLogs: [
      {
        resource: { attributes: Object.entries(resource).map(([k, v]) => str(k, v)) },
        scopeLogs: [
          {
            logRecords: records.map((r) => ({
              timeUnixNano: `${r.time}000000`,
              severityNumber: r.severity ?? 17,
              body: { stringValue: r.body },
              ...(r.traceId ? { traceId: r.traceId } : {}),
              ...(r.spanId ? { spanId: r.spanId } : {}),
              attributes: [...(r.session ? [str('session.id', r.session)] : []), ...(r.uid ? [str('log.record.uid', r.uid)] : [])],
            })),
          },
        ],
      },
    ],
  });
}

/** POSTs an OTLP/JSON logs body. */
export function postLogs(url: string, body: string): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
}
