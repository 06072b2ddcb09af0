/**
 * The `vigil` command line (DESIGN 4.1): run, validate, classify, status.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Registry } from '../component.ts';
import { components } from '../components.ts';
import { ConfigError, formatDiagnostic, loadConfigFile } from '../config/load.ts';
import { errorMessage, isVigilError } from '../errors.ts';
import { createLogger } from '../logger.ts';
import { runClassify } from './classify.ts';
import { CLASSIFY_RULES, type ClassifyRules } from '../processors/classify/classify.ts';
import { printStatus } from './status.ts';
import { Service } from '../service/service.ts';
import { tuneHeap } from '../service/heap.ts';
import { VIGIL_VERSION } from '../version.ts';

const USAGE = `usage: vigil <command> [options]

commands:
  run      [-c pipeline.yaml]   run the pipelines until SIGINT/SIGTERM, then drain and stop
  validate [-c pipeline.yaml]   check the config; exit 1 and print FILE:LINE:COL: message per problem
  classify [--rules R]          JSONL on stdin → one classification per line on stdout
  status   [-c pipeline.yaml]   cursors and lag per partition, groups, open work, recent failures

options:
  -c, --config FILE   pipeline configuration (default: ./pipeline.yaml, else the one vigil ships)
  --rules R           classify: vigil (default) or reference (DESIGN 3.1 exactly)
  -h, --help          this help
  -v, --version       vigil's version
`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '-h' || command === '--help' || command === 'help') {
    process.stdout.write(USAGE);
    return command ? 0 : 2;
  }
  if (command === '-v' || command === '--version' || command === 'version') {
    process.stdout.write(`vigil ${VIGIL_VERSION} (Node.js ${process.version})\n`);
    return 0;
  }
  let values: { config?: string; help?: boolean; json?: boolean; rules?: string };
  try {
    ({ values } = parseArgs({
      args: rest,
      options: { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' }, rules: { type: 'string' } },
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
  if (values.rules !== undefined && command !== 'classify') {
    process.stderr.write(`vigil ${command}: --rules applies to 'vigil classify' only; set 'rules' of the classify processor in the config instead\n`);
    return 2;
  }
  const configFile = values.config ?? defaultConfigFile();
  switch (command) {
    case 'run':
      return runVigil(configFile);
    case 'validate':
      return validate(configFile);
    case 'classify': {
      const rules = values.rules ?? 'vigil';
      if (!(CLASSIFY_RULES as readonly string[]).includes(rules)) {
        process.stderr.write(`vigil classify: --rules must be one of ${CLASSIFY_RULES.join(', ')}, got '${rules}'\n`);
        return 2;
      }
      return runClassify(process.stdin, process.stdout, rules as ClassifyRules);
    }
    case 'status':
      return status(configFile, values.json ?? false);
    default:
      process.stderr.write(`vigil: unknown command '${command}'\n\n${USAGE}`);
      return 2;
  }
}

/**
 * `pipeline.yaml` in the working directory; without one, the default pipeline shipped beside
 * bin/ and dist/ (OTLP/HTTP in on 127.0.0.1:4318, work events to ./work-events.jsonl, state in
 * ./.vigil), so `npx vigil run` works in an empty directory.
 */
function defaultConfigFile(): string {
  if (existsSync('pipeline.yaml')) return 'pipeline.yaml';
  const shipped = fileURLToPath(new URL('../../pipeline.yaml', import.meta.url));
  process.stderr.write(`vigil: no pipeline.yaml in ${process.cwd()}; using the default pipeline ${shipped} (write your own or pass -c FILE)\n`);
  return shipped;
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

/**
 * `vigil run`: runs the service until SIGINT/SIGTERM. `registry` is the one list of components;
 * tests pass it extended with test-only components to run a real `vigil run` with them.
 */
export async function runVigil(file: string, registry: Registry = components()): Promise<number> {
  tuneHeap();
  let cfg;
  try {
    cfg = await loadConfigFile(file, registry);
  } catch (err) {
    return reportConfigError(err);
  }
  const logger = createLogger({ level: cfg.service.telemetry.logs.level });
  const service = new Service(cfg, registry, { logger });
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
