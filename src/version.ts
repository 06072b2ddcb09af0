/**
 * vigil's version, from package.json (beside src/ and dist/, in the repository and in the package):
 * `vigil --version` and the vigil_build_info metric.
 */
import { createRequire } from 'node:module';

export const VIGIL_VERSION: string = (createRequire(import.meta.url)('../package.json') as { version: string }).version;
