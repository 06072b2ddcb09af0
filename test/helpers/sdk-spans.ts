/** Spans as the OpenTelemetry JS SDK records them, for the tests that export them with its exporters. */
import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';

/** An agent turn (`invoke_agent coder`) whose tool call (`execute_tool bash`) failed, in `session`. */
export async function failedToolSpans(session = 's1'): Promise<ReadableSpan[]> {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ resource: resourceFromAttributes({ 'service.name': 'sdk-agent' }), spanProcessors: [new SimpleSpanProcessor(memory)] });
  const tracer = provider.getTracer('sdk-agent');
  const agent = tracer.startSpan('invoke_agent coder', { attributes: { 'session.id': session } });
  const tool = tracer.startSpan('execute_tool bash', { attributes: { 'session.id': session } }, trace.setSpan(context.active(), agent));
  tool.setStatus({ code: SpanStatusCode.ERROR, message: 'exit status 1: command not found' });
  tool.end();
  agent.end();
  await provider.forceFlush();
  const spans = memory.getFinishedSpans();
  await provider.shutdown();
  return spans;
}
