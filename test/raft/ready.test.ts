import t from 'tap';
import { createRawNode, LogIndex, NodeId, Term } from '../../src/raft/index.js';
import { RawNodeImpl } from '../../src/raft/raw-node.js';
import { MemoryStorage } from '../../src/raft/storage/memory-storage.js';
import { enc } from './helpers.js';

const conf = (ids: number[]) => ({ voters: ids.map(NodeId), learners: [] });
const cfg = (storage: MemoryStorage, id = 1) => ({
  id: NodeId(id),
  storage,
  electionTick: 10,
  heartbeatTick: 1,
  random: () => 0,
});

function persist(s: MemoryStorage, rd: ReturnType<RawNodeImpl['ready']>): void {
  if (rd.snapshot) s.applySnapshot(rd.snapshot);
  s.append(rd.entries);
  if (rd.hardState) s.setHardState(rd.hardState);
}

t.test(
  'a leader counts its own entries toward commit only once advance() confirms them',
  async (t) => {
    const s = MemoryStorage.bootstrap(conf([1]));
    const node = createRawNode(cfg(s));
    node.campaign();
    let rd = node.ready();
    t.equal(rd.softState?.role, 'leader');
    t.same(
      rd.entries.map((e) => e.index),
      [1],
      'the no-op, to persist',
    );
    t.same(rd.committedEntries, [], 'not committed: not durable yet');
    t.equal(rd.hardState?.commit, 0);
    persist(s, rd);
    node.advance();
    rd = node.ready();
    t.equal(rd.hardState?.commit, 1, 'committed after advance');
    t.same(
      rd.committedEntries.map((e) => e.index),
      [1],
    );
    t.notOk(rd.mustSync, 'a commit-only change needs no fsync');
    persist(s, rd);
    node.advance();
    t.notOk(node.hasReady());
  },
);

t.test('input between ready() and advance() lands in the next Ready', async (t) => {
  const s = MemoryStorage.bootstrap(conf([1]));
  const node = createRawNode(cfg(s));
  node.campaign();
  const rd1 = node.ready();
  node.propose(enc('a')); // while rd1 is being written
  persist(s, rd1);
  node.advance();
  const rd2 = node.ready();
  t.same(
    rd2.entries.map((e) => e.index),
    [2],
    'only the new entry',
  );
  t.same(
    rd2.committedEntries.map((e) => e.index),
    [1],
    'the no-op is durable: it commits',
  );
  t.throws(() => node.ready(), /before advance/);
  persist(s, rd2);
  node.advance();
  const rd3 = node.ready();
  t.same(
    rd3.committedEntries.map((e) => e.index),
    [2],
  );
});

t.test('followers ack appends only after persistence; heartbeats answer at once', async (t) => {
  const s = MemoryStorage.bootstrap(conf([1, 2]));
  const node = createRawNode(cfg(s, 2));
  node.step({
    type: 'app',
    from: NodeId(1),
    to: NodeId(2),
    term: Term(1),
    index: LogIndex(0),
    logTerm: Term(0),
    commit: LogIndex(0),
    entries: [{ term: Term(1), index: LogIndex(1), type: 'normal', data: enc('x') }],
  });
  node.step({
    type: 'heartbeat',
    from: NodeId(1),
    to: NodeId(2),
    term: Term(1),
    commit: LogIndex(0),
    context: new Uint8Array(),
  });
  const rd = node.ready();
  t.same(
    rd.messages.map((m) => m.type),
    ['heartbeatResp'],
  );
  t.same(
    rd.messagesAfterPersist.map((m) => m.type),
    ['appResp'],
  );
  t.ok(rd.mustSync);
  t.same(rd.softState, { leader: 1, role: 'follower' });
});

t.test('a restart reloads state and does not hand out applied entries again', async (t) => {
  const s = MemoryStorage.bootstrap(conf([1]));
  const node = createRawNode(cfg(s));
  node.campaign();
  for (let i = 0; i < 3; i++) {
    const rd = node.ready();
    persist(s, rd);
    node.advance();
    if (i === 0) node.propose(enc('a'));
  }
  const again = createRawNode({ ...cfg(s), applied: LogIndex(2) });
  t.equal(again.status().hardState.term, 1);
  t.equal(again.status().applied, 2);
  t.notOk(again.hasReady(), 'everything committed was applied');
  const fresh = createRawNode(cfg(s));
  t.same(
    fresh.ready().committedEntries.map((e) => e.index),
    [1, 2],
    'applied 0: replay all',
  );
});

t.test('the configuration is validated', async (t) => {
  const s = new MemoryStorage();
  t.throws(() => createRawNode({ ...cfg(s), id: NodeId(0) }), { code: 'ERR_INVALID_ARGUMENT' });
  t.throws(() => createRawNode({ ...cfg(s), electionTick: 1 }), { code: 'ERR_INVALID_ARGUMENT' });
  t.throws(() => createRawNode({ ...cfg(s), heartbeatTick: 0 }), { code: 'ERR_INVALID_ARGUMENT' });
});

t.test('status shows progress on the leader only', async (t) => {
  const s = MemoryStorage.bootstrap(conf([1]));
  const node = new RawNodeImpl(cfg(s));
  t.equal(node.status().progress, undefined);
  node.campaign();
  t.equal(node.status().progress?.get(NodeId(1))?.state, 'replicate');
});
