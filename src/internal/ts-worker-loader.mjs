/**
 * Run from the TypeScript sources (the tests and benches: `node --import tsx`), a worker thread
 * must register the TypeScript loader itself: Node 20's workers do not inherit the hooks the main
 * thread registered. A worker of ours imports this module first in that case (decode-pool.ts).
 * JavaScript (not TypeScript) so that it loads before the loader does; `npm run build` compiles
 * only `.ts` files, so it is not in dist/: built JavaScript needs no loader.
 */
import { register } from 'tsx/esm/api';

register();
