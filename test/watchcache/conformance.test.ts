/**
 * The watch conformance suite against both watch implementations (the store directly, and the
 * cache) over both stores (the in-memory double and the LevelDB store). The cache runs with a
 * tiny window and small turn budgets so that replay crosses from the store into the window and
 * fan-out spans several turns.
 */
import t from 'tap';
import { watchConformance } from './conformance.js';
import { cacheImpl, directImpl, levelStore, memoryStore } from './harness.js';

const smallCache = cacheImpl({
  windowMaxEvents: 8,
  windowInitialSlots: 2,
  windowMaxSlots: 16,
  maxDeliveriesPerTurn: 3,
  maxCatchUpEntriesPerTurn: 2,
  watcherBufferBytes: 4096,
});

for (const [storeName, store] of [
  ['memory', memoryStore],
  ['level', levelStore],
] as const) {
  t.test(`${storeName} store, direct`, async (t) => watchConformance(t, store, directImpl));
  t.test(`${storeName} store, cache (defaults)`, async (t) =>
    watchConformance(t, store, cacheImpl()),
  );
  t.test(`${storeName} store, cache (small window)`, async (t) =>
    watchConformance(t, store, smallCache),
  );
}
