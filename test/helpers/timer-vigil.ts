/**
 * `vigil run` with the test-only `timer_probe` processor registered (it is not in
 * src/components.ts): `node --import tsx test/helpers/timer-vigil.ts <pipeline.yaml>`. Everything
 * else is the real CLI path: config loading, the Service, stores, receivers, exporters, signals.
 */
import { makeRegistry } from '../../src/component.ts';
import { runVigil } from '../../src/cli/main.ts';
import { components } from '../../src/components.ts';
import { timerProbeFactory } from './timer-probe.ts';

const base = components();
const registry = makeRegistry({
  receivers: [...base.receivers.values()],
  processors: [...base.processors.values(), timerProbeFactory],
  exporters: [...base.exporters.values()],
  extensions: [...base.extensions.values()],
  stores: [...base.stores.values()],
});
const code = await runVigil(process.argv[2]!, registry);
process.exitCode = code;
setImmediate(() => process.exit(code)).unref?.();
