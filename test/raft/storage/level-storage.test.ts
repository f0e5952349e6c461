/** The RaftStorage conformance suite, against MemoryStorage and LevelRaftStorage. */
import { Level } from 'level';
import t from 'tap';
import { LevelRaftStorage } from '../../../src/raft/storage/level-storage.js';
import { MemoryStorage } from '../../../src/raft/storage/memory-storage.js';
import { type StorageHarness, storageConformance } from './storage-conformance.js';

t.test('MemoryStorage', async (t) => {
  storageConformance(t, async (_t, boot) => {
    const m = boot === undefined ? new MemoryStorage() : MemoryStorage.bootstrap(boot);
    const h: StorageHarness = {
      storage: m,
      append: async (e) => m.append(e),
      setHardState: async (hs) => m.setHardState(hs),
      applySnapshot: async (s) => m.applySnapshot(s),
      createSnapshot: async (i, cs, d) => m.createSnapshot(i, cs, d),
      compact: async (i) => m.compact(i),
    };
    return h;
  });
});

t.test('LevelRaftStorage', async (t) => {
  storageConformance(t, async (t, boot) => {
    const db = new Level(t.testdir());
    await db.open();
    t.teardown(() => db.close());
    const s = await LevelRaftStorage.open(db, boot === undefined ? {} : { bootstrap: boot });
    return {
      storage: s,
      append: (e) => s.append(e),
      setHardState: (hs) => s.setHardState(hs),
      applySnapshot: (snap) => s.applySnapshot(snap),
      createSnapshot: (i, cs, d) => s.createSnapshot(i, cs, d),
      compact: (i) => s.compact(i),
    };
  });
});
