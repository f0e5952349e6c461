import t from 'tap';
import { RaftLog } from '../../src/raft/log.js';
import { MemoryStorage } from '../../src/raft/storage/memory-storage.js';
import { ByteSize } from '../../src/raft/types.js';
import { entrySize } from '../../src/raft/util.js';
import { ent, ents, I, indexesOf, T, termsOf } from './helpers.js';

const NO_CAP = ByteSize(1 << 30);

function logWith(stored: number[], unstable: number[] = []): RaftLog {
  const s = new MemoryStorage();
  s.append(ents(1, stored));
  const log = new RaftLog(s, NO_CAP);
  if (unstable.length > 0) log.append(ents(stored.length + 1, unstable));
  return log;
}

t.test('indexes and terms span storage and the unstable tail', async (t) => {
  const log = logWith([1, 1, 2], [2, 3]);
  t.equal(log.firstIndex(), 1);
  t.equal(log.lastIndex(), 5);
  t.equal(log.stableLastIndex(), 3);
  t.same(
    [1, 2, 3, 4, 5].map((i) => log.term(I(i))),
    [1, 1, 2, 2, 3],
  );
  t.equal(log.term(I(0)), 0, 'the dummy before the first entry has term 0');
  t.equal(log.term(I(6)), undefined, 'past the end');
  t.same(termsOf(log.slice(I(2), I(5))), [1, 2, 2], 'a slice crosses the boundary');
});

t.test('maybeAppend: match, conflict replaces the suffix, mismatch refuses', async (t) => {
  const log = logWith([1, 1, 2, 2]);
  t.equal(log.maybeAppend(I(2), T(1), I(3), ents(3, [2, 2])), 4, 'all already present');
  t.equal(log.unstable.entries.length, 0, 'nothing new to persist');
  t.equal(log.committed, 3);
  t.equal(log.maybeAppend(I(3), T(2), I(3), ents(4, [3, 3])), 5, 'conflict at 4');
  t.same(termsOf(log.slice(I(1), I(6))), [1, 1, 2, 3, 3]);
  t.same(indexesOf(log.unstable.entries), [4, 5], 'the replacement is unstable');
  t.equal(log.maybeAppend(I(5), T(2), I(5), ents(6, [3])), undefined, 'term mismatch at 5');
  t.equal(log.maybeAppend(I(9), T(3), I(5), []), undefined, 'gap after the end');
  t.throws(() => log.maybeAppend(I(1), T(1), I(3), ents(2, [9])), /conflicts with committed/);
});

t.test('commit is bounded by the log and never moves back', async (t) => {
  const log = logWith([1, 1, 1]);
  log.commitTo(I(2));
  log.commitTo(I(1));
  t.equal(log.committed, 2);
  t.throws(() => log.commitTo(I(4)), /past last index/);
  t.throws(() => log.append(ents(2, [5])), /below commit/);
});

t.test('findConflictByTerm walks back to a term the leader can use', async (t) => {
  // terms by index: 1:1 2:1 3:2 4:2 5:5 6:5
  const log = logWith([1, 1, 2, 2, 5, 5]);
  t.same(log.findConflictByTerm(I(6), T(3)), [4, 2], 'skips the whole term 5');
  t.same(log.findConflictByTerm(I(6), T(5)), [6, 5]);
  t.same(log.findConflictByTerm(I(4), T(1)), [2, 1]);
  t.same(log.findConflictByTerm(I(2), T(0)), [0, 0], 'runs into the start');
});

t.test('isUpToDate compares last term, then last index', async (t) => {
  const log = logWith([1, 2, 2]);
  t.ok(log.isUpToDate(I(1), T(3)), 'higher last term wins with a shorter log');
  t.ok(log.isUpToDate(I(3), T(2)));
  t.notOk(log.isUpToDate(I(2), T(2)), 'same term, shorter');
  t.notOk(log.isUpToDate(I(9), T(1)), 'lower term, longer');
});

t.test('only stable committed entries are handed out to apply', async (t) => {
  const log = logWith([1, 1], [1, 1]);
  log.commitTo(I(4));
  t.same(indexesOf(log.nextCommittedEntries()), [1, 2], 'entries 3..4 are not durable yet');
  (log.storage as MemoryStorage).append(log.unstable.entries); // the driver persists them
  log.stableTo(I(4), T(1));
  t.same(indexesOf(log.nextCommittedEntries()), [1, 2, 3, 4]);
  log.appliedTo(I(4));
  t.notOk(log.hasNextCommittedEntries());
});

t.test('stableTo ignores an entry that was replaced meanwhile', async (t) => {
  const log = logWith([1], [1, 1]); // unstable 2, 3 at term 1
  log.append(ents(3, [2])); // a new leader replaces 3
  log.stableTo(I(3), T(1)); // the old Ready persisted 3@1
  t.same(indexesOf(log.unstable.entries), [2, 3], 'nothing marked stable');
  t.equal(log.term(I(3)), 2);
  log.stableTo(I(3), T(2));
  t.same(log.unstable.entries, []);
});

t.test(
  'a restored snapshot replaces the log and hides committed entries until stored',
  async (t) => {
    const log = logWith([1, 1, 1]);
    log.commitTo(I(3));
    const snap = {
      metadata: { index: I(10), term: T(4), confState: { voters: [], learners: [] } },
      data: new Uint8Array(),
    };
    log.restore(snap);
    t.equal(log.firstIndex(), 11);
    t.equal(log.lastIndex(), 10);
    t.equal(log.committed, 10);
    t.equal(log.term(I(10)), 4);
    t.equal(log.term(I(5)), undefined, 'below the snapshot is gone');
    t.notOk(log.hasNextCommittedEntries(), 'a pending snapshot blocks applying');
  },
);

t.test('slices respect the byte budget but always return one entry', async (t) => {
  const s = new MemoryStorage();
  s.append([ent(1, 1, 'aaaa'), ent(2, 1, 'bbbb'), ent(3, 1, 'cccc')]);
  const log = new RaftLog(s, NO_CAP);
  log.append([ent(4, 1, 'dddd')]);
  const one = entrySize(ent(1, 1, 'aaaa'));
  t.equal(log.slice(I(1), I(5), ByteSize(one * 2)).length, 2);
  t.equal(log.slice(I(1), I(5), ByteSize(1)).length, 1);
  t.equal(log.slice(I(3), I(5), ByteSize(one * 2)).length, 2, 'across storage and unstable');
  t.equal(log.slice(I(1), I(5)).length, 4);
  s.compact(I(2));
  t.throws(() => log.slice(I(2), I(3)), { code: 'ERR_RAFT_COMPACTED' });
});
