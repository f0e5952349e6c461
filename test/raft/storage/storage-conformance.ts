/**
 * The RaftStorage conformance suite, written once and run against every implementation
 * (MemoryStorage and LevelRaftStorage, see test/raft/storage/level-storage.test.ts).
 *
 * Writes go through an async harness so one suite covers the synchronous in-memory
 * storage and the durable one alike.
 */
import type { Test } from 'tap';
import { isEtceteraError } from '../../../src/errors.js';
import {
  ByteSize,
  type ConfState,
  type Entry,
  EntryType,
  type HardState,
  LogIndex,
  NodeId,
  type RaftStorage,
  type Snapshot,
  Term,
} from '../../../src/raft/types.js';
import { entrySize } from '../../../src/raft/util.js';

export interface StorageHarness {
  readonly storage: RaftStorage;
  append(entries: readonly Entry[]): Promise<void>;
  setHardState(hs: HardState): Promise<void>;
  applySnapshot(s: Snapshot): Promise<void>;
  createSnapshot(i: LogIndex, cs: ConfState, data: Uint8Array): Promise<Snapshot>;
  compact(i: LogIndex): Promise<void>;
}

export type StorageFactory = (t: Test, bootstrap?: ConfState) => Promise<StorageHarness>;

export const ent = (index: number, term: number, data = `e${index}`): Entry => ({
  index: LogIndex(index),
  term: Term(term),
  type: EntryType.Normal,
  data: new TextEncoder().encode(data),
});

const I = LogIndex;
const CONF: ConfState = { voters: [NodeId(1), NodeId(2), NodeId(3)], learners: [NodeId(4)] };

/** Terms of entries 1..n, for compact comparisons. */
function terms(s: RaftStorage, lo: number, hi: number): number[] {
  return s.entries(I(lo), I(hi)).map((e) => e.term);
}

function throwsCode(t: Test, fn: () => unknown, code: string, msg: string): void {
  try {
    fn();
    t.fail(`${msg}: expected ${code}`);
  } catch (e) {
    t.ok(isEtceteraError(e) && e.code === code, `${msg}: ${code}`);
  }
}

async function rejectsCode(t: Test, p: () => Promise<unknown>, code: string, msg: string) {
  try {
    await p();
    t.fail(`${msg}: expected ${code}`);
  } catch (e) {
    t.ok(isEtceteraError(e) && e.code === code, `${msg}: ${code}`);
  }
}

export function storageConformance(t: Test, factory: StorageFactory): void {
  t.test('a fresh storage is empty', async (t) => {
    const { storage } = await factory(t);
    t.equal(storage.firstIndex(), 1);
    t.equal(storage.lastIndex(), 0);
    t.equal(storage.term(I(0)), 0);
    t.same(storage.entries(I(1), I(1)), []);
    t.same(storage.initialState().hardState, { term: 0, vote: 0, commit: 0 });
    throwsCode(t, () => storage.term(I(1)), 'ERR_RAFT_UNAVAILABLE', 'term past the end');
  });

  t.test('bootstrap records the initial membership', async (t) => {
    const { storage } = await factory(t, CONF);
    t.same(storage.initialState().confState, CONF);
    t.equal(storage.snapshot().metadata.index, 0);
    t.equal(storage.lastIndex(), 0);
  });

  t.test('append, then read ranges, terms and size-capped slices', async (t) => {
    const h = await factory(t);
    await h.append([ent(1, 1), ent(2, 1), ent(3, 2), ent(4, 3), ent(5, 3)]);
    const s = h.storage;
    t.equal(s.firstIndex(), 1);
    t.equal(s.lastIndex(), 5);
    t.same(terms(s, 1, 6), [1, 1, 2, 3, 3]);
    t.same(terms(s, 2, 4), [1, 2]);
    t.equal(s.term(I(4)), 3);
    const one = entrySize(s.entries(I(1), I(2))[0]!);
    t.equal(s.entries(I(1), I(6), ByteSize(one * 2)).length, 2, 'cut at the budget');
    t.equal(s.entries(I(1), I(6), ByteSize(one * 2 + 1)).length, 2, 'cut before exceeding');
    t.equal(s.entries(I(1), I(6), ByteSize(0)).length, 1, 'always at least one entry');
    throwsCode(t, () => s.entries(I(3), I(7)), 'ERR_RAFT_UNAVAILABLE', 'hi past the end');
    throwsCode(t, () => s.term(I(6)), 'ERR_RAFT_UNAVAILABLE', 'term past the end');
    const got = s.entries(I(1), I(3));
    got.pop();
    t.equal(s.entries(I(1), I(3)).length, 2, "returned arrays are the caller's");
    t.same(new TextDecoder().decode(s.entries(I(4), I(5))[0]!.data), 'e4');
  });

  t.test('a conflicting append replaces the suffix; a gap is refused', async (t) => {
    const h = await factory(t);
    await h.append([ent(1, 1), ent(2, 1), ent(3, 1), ent(4, 1)]);
    await h.append([ent(3, 2, 'x3')]);
    t.equal(h.storage.lastIndex(), 3, 'entries after the conflict are gone');
    t.same(terms(h.storage, 1, 4), [1, 1, 2]);
    await h.append([ent(2, 1), ent(3, 2, 'x3'), ent(4, 2)]);
    t.same(terms(h.storage, 1, 5), [1, 1, 2, 2], 'overlapping identical prefix is fine');
    await rejectsCode(t, () => h.append([ent(7, 2)]), 'ERR_RAFT_UNAVAILABLE', 'gap');
    t.equal(h.storage.lastIndex(), 4, 'a refused append changes nothing');
  });

  t.test('hard state is stored as given', async (t) => {
    const h = await factory(t);
    await h.append([ent(1, 1), ent(2, 2)]);
    const hs: HardState = { term: Term(2), vote: NodeId(3), commit: LogIndex(2) };
    await h.setHardState(hs);
    t.same(h.storage.initialState().hardState, hs);
  });

  t.test('createSnapshot then compact', async (t) => {
    const h = await factory(t, CONF);
    await h.append([ent(1, 1), ent(2, 1), ent(3, 2), ent(4, 3), ent(5, 3)]);
    const data = Uint8Array.of(9, 9);
    const snap = await h.createSnapshot(I(4), CONF, data);
    t.same(snap.metadata, { index: 4, term: 3, confState: CONF });
    t.same(h.storage.snapshot().metadata, snap.metadata);
    t.same([...h.storage.snapshot().data], [9, 9]);
    await rejectsCode(
      t,
      () => h.createSnapshot(I(3), CONF, data),
      'ERR_RAFT_SNAPSHOT_OUT_OF_DATE',
      'older snapshot',
    );
    await h.compact(I(3));
    const s = h.storage;
    t.equal(s.firstIndex(), 4);
    t.equal(s.lastIndex(), 5);
    t.equal(s.term(I(3)), 2, 'the compaction point keeps its term');
    throwsCode(t, () => s.term(I(2)), 'ERR_RAFT_COMPACTED', 'term below the compaction point');
    throwsCode(t, () => s.entries(I(3), I(5)), 'ERR_RAFT_COMPACTED', 'entries at the point');
    t.same(terms(s, 4, 6), [3, 3]);
    await rejectsCode(t, () => h.compact(I(3)), 'ERR_RAFT_COMPACTED', 'compacting again');
    await h.append([ent(2, 1), ent(3, 2), ent(4, 3), ent(5, 3), ent(6, 3)]);
    t.equal(s.lastIndex(), 6, 'entries below the first index are skipped on append');
    t.same(terms(s, 4, 7), [3, 3, 3]);
  });

  t.test('applySnapshot replaces the log', async (t) => {
    const h = await factory(t, CONF);
    await h.append([ent(1, 1), ent(2, 1), ent(3, 2)]);
    const conf2: ConfState = { voters: [NodeId(1), NodeId(2)], learners: [] };
    const snap: Snapshot = {
      metadata: { index: I(10), term: Term(4), confState: conf2 },
      data: Uint8Array.of(1, 2, 3),
    };
    await h.applySnapshot(snap);
    const s = h.storage;
    t.equal(s.firstIndex(), 11);
    t.equal(s.lastIndex(), 10);
    t.equal(s.term(I(10)), 4);
    t.same(s.initialState().confState, conf2);
    t.same([...s.snapshot().data], [1, 2, 3]);
    await h.append([ent(11, 4), ent(12, 5)]);
    t.same(terms(s, 11, 13), [4, 5]);
    const old: Snapshot = { ...snap, metadata: { ...snap.metadata, index: I(5) } };
    await rejectsCode(t, () => h.applySnapshot(old), 'ERR_RAFT_SNAPSHOT_OUT_OF_DATE', 'older');
  });
}
