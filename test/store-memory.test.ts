import { MemoryStore } from '../src/store/memory.ts';
import { storeConformance } from './helpers/store-conformance.ts';

storeConformance('memory', async () => new MemoryStore());
