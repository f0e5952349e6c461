/** LevelRaftStorage on real LevelDB: group commit, restart, corruption, write failure. */
import { Level } from 'level';
import t, { type Test } from 'tap';
import { isEtceteraError } from '../../../src/errors.js';
import { logKey } from '../../../src/raft/storage/disk-format.js';
import { LevelRaftStorage } from '../../../src/raft/storage/level-storage.js';
import { type ConfState, LogIndex, NodeId, type Snapshot, Term } from '../../../src/raft/types.js';
import { ent } from './storage-conformance.js';

const CONF: ConfState = { voters: [NodeId(1), NodeId(2), NodeId(3)], learners: [] };
const hs = (term: number, vote: number, commit: number) => ({
  term: Term(term),
  vote: NodeId(vote),
  commit: LogIndex(commit),
});

async function openDb(dir: string): Promise<Level<string, string>> {
  const db = new Level(dir);
  await db.open();
  return db;
}

/** Reopens the database in `dir` and returns a freshly loaded storage. */
async function reopen(t: Test, dir: string, boot?: ConfState) {
  const db = await openDb(dir);
  t.teardown(() => db.close());
  return { db, s: await LevelRaftStorage.open(db, boot ? { bootstrap: boot } : {}) };
}

t.test('persist writes one synced batch per Ready and survives a restart', async (t) => {
  const dir = t.testdir();
  const db = await openDb(dir);
  const s = await LevelRaftStorage.open(db, { bootstrap: CONF });
  t.equal(s.fresh, true);
  const batches: { n: number; sync: unknown }[] = [];
  const orig = db.batch.bind(db);
  // biome-ignore lint/suspicious/noExplicitAny: spying on an overloaded method
  (db as any).batch = (ops: unknown[], opts: { sync?: boolean }) => {
    batches.push({ n: ops.length, sync: opts?.sync });
    return orig(ops as never, opts as never);
  };
  await s.persist({
    entries: [ent(1, 1), ent(2, 1), ent(3, 1)],
    hardState: hs(1, 1, 2),
    mustSync: true,
  });
  await s.persist({ entries: [], hardState: hs(1, 1, 3), mustSync: false });
  t.same(
    batches,
    [{ n: 2, sync: true }],
    'one record for three entries plus the hard state; a commit-only change waits',
  );
  t.same(s.initialState().hardState, hs(1, 1, 3), 'but is visible at once');
  await s.flush();
  t.same(batches[1], { n: 1, sync: false }, 'flush writes it, unsynced');
  await s.persist({ entries: [], hardState: hs(2, 0, 3), mustSync: true });
  t.same(batches[2], { n: 1, sync: true }, 'a new term is written at once');
  await s.persist({ entries: [], hardState: hs(2, 0, 4), mustSync: false });
  await s.persist({ entries: [ent(4, 2)], mustSync: true });
  t.same(batches[3], { n: 2, sync: true }, 'a deferred commit rides with the next append');
  await db.close();

  const { s: again } = await reopen(t, dir, { voters: [NodeId(9)], learners: [] });
  t.equal(again.fresh, false, 'bootstrap ignored on restart');
  t.same(again.initialState(), { hardState: hs(2, 0, 4), confState: CONF });
  t.equal(again.firstIndex(), 1);
  t.equal(again.lastIndex(), 4);
  t.same(
    again.entries(LogIndex(1), LogIndex(5)).map((e) => new TextDecoder().decode(e.data)),
    ['e1', 'e2', 'e3', 'e4'],
  );
});

t.test('a conflicting append is durable: stale entries do not come back', async (t) => {
  const dir = t.testdir();
  const { db, s } = await reopen(t, dir);
  await s.append([ent(1, 1), ent(2, 1), ent(3, 1), ent(4, 1)]);
  await s.persist({ entries: [ent(2, 2, 'new')], hardState: hs(2, 0, 1), mustSync: true });
  await db.close();
  const { s: again } = await reopen(t, dir);
  t.equal(again.lastIndex(), 2);
  t.same(
    again.entries(LogIndex(1), LogIndex(3)).map((e) => e.term),
    [1, 2],
  );
});

t.test('snapshot, compaction and received snapshots survive a restart', async (t) => {
  const dir = t.testdir();
  const { db, s } = await reopen(t, dir, CONF);
  await s.append([ent(1, 1), ent(2, 1), ent(3, 2), ent(4, 2), ent(5, 2)]);
  await s.createSnapshot(LogIndex(4), CONF, Uint8Array.of(4, 4));
  await s.compact(LogIndex(2));
  try {
    await s.compact(LogIndex(5));
    t.fail('compacting past the snapshot must be refused');
  } catch (e) {
    t.ok(isEtceteraError(e, 'ERR_RAFT_UNAVAILABLE'), 'compaction past the snapshot refused');
  }
  await db.close();

  const r1 = await reopen(t, dir);
  t.equal(r1.s.firstIndex(), 5, 'the reloaded log starts after the snapshot');
  t.equal(r1.s.lastIndex(), 5);
  t.equal(r1.s.term(LogIndex(4)), 2);
  t.same([...r1.s.snapshot().data], [4, 4]);
  const keys = await r1.db
    .sublevel<Uint8Array, Uint8Array>('raft-log', { keyEncoding: 'view' })
    .keys()
    .all();
  t.equal(keys.length, 1, 'entries at or below the snapshot were cleaned up on load');

  const received: Snapshot = {
    metadata: {
      index: LogIndex(20),
      term: Term(5),
      confState: { voters: [NodeId(1)], learners: [] },
    },
    data: Uint8Array.of(20),
  };
  await r1.s.persist({
    snapshot: received,
    entries: [ent(21, 5)],
    hardState: hs(5, 0, 20),
    mustSync: true,
  });
  await r1.db.close();
  const r2 = await reopen(t, dir);
  t.equal(r2.s.firstIndex(), 21);
  t.equal(r2.s.lastIndex(), 21);
  t.same(r2.s.initialState(), { hardState: hs(5, 0, 20), confState: received.metadata.confState });
  t.same([...r2.s.snapshot().data], [20]);
});

t.test('corrupt records are refused on load with ERR_CORRUPT', async (t) => {
  const log = (db: Level<string, string>) =>
    db.sublevel<Uint8Array, Uint8Array>('raft-log', { keyEncoding: 'view', valueEncoding: 'view' });
  const state = (db: Level<string, string>) =>
    db.sublevel<string, Uint8Array>('raft-state', { valueEncoding: 'view' });
  const cases: [string, (db: Level<string, string>) => Promise<void>][] = [
    ['garbage record', (db) => log(db).put(logKey(LogIndex(3)), Uint8Array.of(1, 255))],
    [
      'segment stored under the wrong key',
      async (db) => {
        const second = await log(db).get(logKey(LogIndex(3)));
        await log(db).put(logKey(LogIndex(1)), second!);
      },
    ],
    ['gap in the log', (db) => log(db).del(logKey(LogIndex(1)))],
    ['unknown format version', (db) => state(db).put('hard', Uint8Array.of(7, 1, 1, 1))],
    ['commit past the log', (db) => state(db).put('hard', Uint8Array.of(1, 1, 1, 9))],
  ];
  for (const [name, damage] of cases) {
    t.test(name, async (t) => {
      const { db, s } = await reopen(t, t.testdir());
      await s.persist({ entries: [ent(1, 1), ent(2, 1)], hardState: hs(1, 1, 1), mustSync: true });
      await s.persist({ entries: [ent(3, 1), ent(4, 1)], mustSync: true });
      await damage(db);
      await t.rejects(LevelRaftStorage.open(db), { code: 'ERR_CORRUPT' });
    });
  }
});

t.test('a failed write is fatal for the storage', async (t) => {
  const db = await openDb(t.testdir());
  const s = await LevelRaftStorage.open(db);
  await s.append([ent(1, 1)]);
  await db.close();
  await t.rejects(s.append([ent(2, 1)]), { code: 'ERR_STORAGE' });
  t.throws(
    () => s.lastIndex(),
    { code: 'ERR_STORAGE' },
    'reads fail too: the mirror is ahead of disk',
  );
  t.throws(() => s.persist({ entries: [], mustSync: false }), { code: 'ERR_STORAGE' });
});
