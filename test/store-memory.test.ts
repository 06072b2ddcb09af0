import { MemoryStore } from '../src/store/memory.ts';
import { storeConformance } from './helpers/store-conformance.ts';

storeConformance('memory', async (opts) => new MemoryStore({ dedupe_window: 24 * 3_600_000, max_seen_ids: 1_000_000 }, opts?.now));
