import t from 'tap';
import { Inflights } from '../../src/raft/inflights.js';
import { Progress } from '../../src/raft/progress.js';
import { committedIndex, voteResult } from '../../src/raft/quorum.js';
import { ByteSize, NodeId } from '../../src/raft/types.js';
import { I } from './helpers.js';

const B = ByteSize;

t.test('inflights cap messages and bytes, and free by acknowledged index', async (t) => {
  const f = new Inflights(3, B(100));
  f.add(I(2), B(10));
  f.add(I(4), B(10));
  t.notOk(f.full());
  f.add(I(6), B(10));
  t.ok(f.full(), 'three messages');
  f.freeLE(I(4));
  t.equal(f.count, 1);
  t.equal(f.bytes, 10);
  f.add(I(8), B(95));
  t.ok(f.full(), 'byte cap reached');
  f.freeFirst();
  t.equal(f.count, 1);
  f.freeLE(I(100));
  t.equal(f.count, 0);
  t.throws(() => {
    const g = new Inflights(1, B(0));
    g.add(I(1), B(1));
    g.add(I(2), B(1));
  }, /overflow/);
});

t.test('the ring wraps around', async (t) => {
  const f = new Inflights(2, B(0));
  for (let i = 1; i <= 10; i++) {
    f.add(I(i), B(1));
    f.freeLE(I(i - 1));
    t.equal(f.count, i === 1 ? 1 : 1);
  }
  f.freeLE(I(10));
  t.equal(f.count, 0);
});

t.test('probe sends one message at a time; an ack switches to pipelining', async (t) => {
  const pr = new Progress(I(6), false, 4, B(0));
  t.equal(pr.state, 'probe');
  pr.sentEntries(2, I(7), B(10));
  t.ok(pr.isPaused(), 'one probe in flight');
  t.equal(pr.next, 6, 'probe does not advance next');
  t.ok(pr.maybeUpdate(I(7)));
  t.notOk(pr.isPaused());
  pr.becomeReplicate();
  t.equal(pr.next, 8);
  for (let i = 0; i < 4; i++) pr.sentEntries(1, I(8 + i), B(1));
  t.equal(pr.next, 12, 'replicate advances next optimistically');
  t.ok(pr.isPaused(), 'in-flight cap reached');
  pr.inflights.freeLE(I(9));
  t.notOk(pr.isPaused());
});

t.test('rejections step next back, ignoring stale ones', async (t) => {
  const pr = new Progress(I(10), false, 4, B(0));
  t.notOk(pr.maybeDecrTo(I(5), I(5)), 'not the probe we sent (next-1 = 9)');
  t.ok(pr.maybeDecrTo(I(9), I(3)));
  t.equal(pr.next, 4, 'jumps to the hint + 1');
  pr.match = I(5);
  pr.becomeReplicate();
  pr.sentEntries(3, I(9), B(3));
  t.notOk(pr.maybeDecrTo(I(4), I(4)), 'below match: stale');
  t.ok(pr.maybeDecrTo(I(7), I(2)));
  t.equal(pr.next, 6, 'replicate falls back to match + 1');
});

t.test('snapshot state pauses until it ends; probing resumes after the snapshot', async (t) => {
  const pr = new Progress(I(3), false, 4, B(0));
  pr.becomeSnapshot(I(20));
  t.ok(pr.isPaused());
  pr.becomeProbe();
  t.equal(pr.next, 21);
});

t.test('quorum: committed index and election outcome', async (t) => {
  const ids = [1, 2, 3, 4, 5].map(NodeId);
  const match = new Map(ids.map((id, k) => [id, I([9, 3, 7, 5, 1][k]!)]));
  t.equal(
    committedIndex(ids, (id) => match.get(id)!),
    5,
    'third largest of five',
  );
  t.equal(
    committedIndex(ids.slice(0, 2), (id) => match.get(id)!),
    3,
    'both of two',
  );
  const v = (g: Array<[number, boolean]>) => new Map(g.map(([id, b]) => [NodeId(id), b]));
  t.equal(
    voteResult(
      ids.slice(0, 3),
      v([
        [1, true],
        [2, true],
      ]),
    ),
    'won',
  );
  t.equal(
    voteResult(
      ids.slice(0, 3),
      v([
        [1, true],
        [2, false],
      ]),
    ),
    'pending',
  );
  t.equal(
    voteResult(
      ids.slice(0, 3),
      v([
        [1, true],
        [2, false],
        [3, false],
      ]),
    ),
    'lost',
  );
  t.equal(
    voteResult(
      ids.slice(0, 4),
      v([
        [1, true],
        [2, true],
      ]),
    ),
    'pending',
    '2 of 4 is no quorum',
  );
});
