/**
 * The one explicit list of component factories. Adding a component type means adding its folder
 * and one line here.
 */
import { makeRegistry, type Registry } from './component.ts';
import { debugExporterFactory } from './exporters/debug/factory.ts';
import { fileExporterFactory } from './exporters/file/factory.ts';
import { otlpHttpExporterFactory } from './exporters/otlphttp/factory.ts';
import { redisStreamExporterFactory } from './exporters/redis_stream/factory.ts';
import { webhookExporterFactory } from './exporters/webhook/factory.ts';
import { healthCheckFactory } from './extensions/health_check/factory.ts';
import { classifyFactory } from './processors/classify/factory.ts';
import { detectFactory } from './processors/detect/factory.ts';
import { recurrenceFactory } from './processors/recurrence/factory.ts';
import { watchdogFactory } from './processors/watchdog/factory.ts';
import { journalReceiverFactory } from './receivers/journal/factory.ts';
import { jsonlReceiverFactory } from './receivers/jsonl/factory.ts';
import { otlpReceiverFactory } from './receivers/otlp/factory.ts';
import { memoryStoreFactory } from './store/memory.ts';
import { redisStoreFactory } from './store/redis/factory.ts';
import { sqliteStoreFactory } from './store/sqlite/factory.ts';

export function components(): Registry {
  return makeRegistry({
    receivers: [otlpReceiverFactory, jsonlReceiverFactory, journalReceiverFactory],
    processors: [classifyFactory, watchdogFactory, detectFactory, recurrenceFactory],
    exporters: [fileExporterFactory, debugExporterFactory, otlpHttpExporterFactory, webhookExporterFactory, redisStreamExporterFactory],
    extensions: [healthCheckFactory],
    stores: [memoryStoreFactory, sqliteStoreFactory, redisStoreFactory],
  });
}
