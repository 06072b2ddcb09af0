/**
 * The `vigil` command line (DESIGN 4.1): run, validate, classify, status.
 */
import { parseArgs } from 'node:util';
import { components } from '../components.ts';
import { ConfigError, formatDiagnostic, loadConfigFile } from '../config/load.ts';
import { errorMessage, isVigilError } from '../errors.ts';
import { createLogger } from '../logger.ts';
import { runClassify } from './classify.ts';
import { printStatus } from './status.ts';
import { Service } from '../service/service.ts';

const USAGE = `usage: vigil <command> [options]

commands:
  run      [-c pipeline.yaml]   run the pipelines until SIGINT/SIGTERM, then drain and stop
  validate [-c pipeline.yaml]   check the config; exit 1 and print FILE:LINE:COL: message per problem
  classify                      JSONL on stdin → one classification per line on stdout
  status   [-c pipeline.yaml]   cursors and lag per partition, groups, open work, recent failures

options:
  -c, --config FILE   pipeline configuration (default: pipeline.yaml)
  -h, --help          this help
`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '-h' || command === '--help' || command === 'help') {
    process.stdout.write(USAGE);
    return command ? 0 : 2;
  }
  let values: { config?: string; help?: boolean; json?: boolean };
  try {
    ({ values } = parseArgs({
      args: rest,
      options: { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    process.stderr.write(`vigil ${command}: ${errorMessage(err)}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const configFile = values.config ?? 'pipeline.yaml';
  switch (command) {
    case 'run':
      return run(configFile);
    case 'validate':
      return validate(configFile);
    case 'classify':
      return runClassify(process.stdin, process.stdout);
    case 'status':
      return status(configFile, values.json ?? false);
    default:
      process.stderr.write(`vigil: unknown command '${command}'\n\n${USAGE}`);
      return 2;
  }
}

async function validate(file: string): Promise<number> {
  try {
    const cfg = await loadConfigFile(file, components());
    for (const w of cfg.warnings) process.stderr.write(formatDiagnostic(w) + '\n');
    process.stdout.write(`${file}: valid (${cfg.service.pipelines.size} pipeline${cfg.service.pipelines.size === 1 ? '' : 's'})\n`);
    return 0;
  } catch (err) {
    return reportConfigError(err);
  }
}

function reportConfigError(err: unknown): number {
  if (err instanceof ConfigError) {
    for (const d of err.diagnostics) process.stdout.write(formatDiagnostic(d) + '\n');
    const errors = err.diagnostics.filter((d) => d.severity === 'error').length;
    process.stderr.write(`${errors} problem${errors === 1 ? '' : 's'} found\n`);
    return 1;
  }
  process.stderr.write(`vigil: ${errorMessage(err)}\n`);
  return 1;
}

async function run(file: string): Promise<number> {
  let cfg;
  try {
    cfg = await loadConfigFile(file, components());
  } catch (err) {
    return reportConfigError(err);
  }
  const logger = createLogger({ level: cfg.service.telemetry.logs.level });
  const service = new Service(cfg, components(), { logger });
  // Signals are handled from the start: receivers listen (and may acknowledge) before start()
  // resolves, so a SIGTERM then must drain like any other, not kill the process mid-start.
  let started: Promise<void> | undefined;
  const stopped = new Promise<number>((resolve) => {
    let signals = 0;
    const stop = (signal: string) => {
      if (++signals > 1) {
        logger.warn(`second ${signal}: exiting without draining`);
        resolve(130);
        return;
      }
      logger.info(`${signal} received: draining and stopping`);
      (started ?? Promise.resolve())
        .catch(() => undefined)
        .then(() => service.shutdown())
        .then(
          () => resolve(0),
          (err) => {
            logger.error(`shutdown failed: ${errorMessage(err)}`);
            resolve(1);
          },
        );
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
  });
  try {
    started = service.start();
    await started;
  } catch (err) {
    logger.error(`cannot start: ${errorMessage(err)}`, isVigilError(err) ? { code: err.code } : {});
    return 1;
  }
  return stopped;
}

async function status(file: string, json: boolean): Promise<number> {
  let cfg;
  try {
    cfg = await loadConfigFile(file, components());
  } catch (err) {
    return reportConfigError(err);
  }
  return printStatus(cfg, components(), json);
}
