/** Runs a vigil Service in this process from a config text, for tests that need its internals. */
import { components } from '../../src/components.ts';
import { loadConfigText } from '../../src/config/load.ts';
import { memoryLogger } from '../../src/logger.ts';
import { Service } from '../../src/service/service.ts';

export async function startService(yaml: string, opts: { maxBacklog?: number } = {}) {
  const config = loadConfigText(yaml, 'test.yaml', components(), process.env);
  const logger = memoryLogger();
  const service = new Service(config, components(), { logger, ...opts });
  await service.start();
  return { service, logger, config };
}
