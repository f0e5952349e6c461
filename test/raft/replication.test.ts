import t from 'tap';
import { maybeCommit } from '../../src/raft/replication.js';
import { LogIndex, NodeId, Term } from '../../src/raft/types.js';
import { dec, enc, ents, I } from './helpers.js';
import { Network } from './network.js';
import { TestPeer } from './peer.js';

const conf3 = { voters: [1, 2, 3].map(NodeId), learners: [] };
const applied = (p: TestPeer) => p.applied.filter((e) => e.data.length > 0).map((e) => dec(e.data));

function elected(size = 3, options = {}): Network {
  const n = new Network(size, options);
  n.peer(1).node.campaign();
  n.stabilize();
  return n;
}

t.test('proposals replicate and apply in order on every member', async (t) => {
  const n = elected();
  for (const s of ['a', 'b', 'c']) n.peer(1).node.propose(enc(s));
  n.stabilize();
  n.peer(2).node.propose(enc('d')); // forwarded to the leader
  n.stabilize();
  for (const p of n.peers.values()) t.same(applied(p), ['a', 'b', 'c', 'd'], `member ${p.id}`);
});

t.test('an entry of an earlier term is not committed by counting replicas', async (t) => {
  // Leader 1 at term 3 with log [1/1, 2/2, 3/3]: the entry at 2 is on a quorum, but it
  // is from term 2; only once 3/3 is on a quorum may both commit (Raft §5.4.2).
  const peers = [1, 2, 3].map((id) => TestPeer.bootstrap(id, conf3));
  const leader = peers[0]!;
  leader.storage.append(ents(1, [1, 2]));
  leader.storage.setHardState({ term: Term(2), vote: NodeId(1), commit: LogIndex(1) });
  leader.restart();
  const r = leader.raft;
  r.becomeCandidate();
  r.becomeLeader(); // term 3, appends the no-op 3/3
  leader.handleReady(); // persist it
  t.equal(r.log.lastIndex(), 3);
  r.tracker.progress.get(NodeId(2))!.match = I(2);
  t.notOk(maybeCommit(r), 'quorum at index 2 (term 2) does not commit');
  t.equal(r.log.committed, 1);
  r.tracker.progress.get(NodeId(2))!.match = I(3);
  t.ok(maybeCommit(r), 'quorum at index 3 (term 3) commits');
  t.equal(r.log.committed, 3);
});

t.test('a lagging follower catches up, and a divergent one is overwritten', async (t) => {
  const n = new Network(3, { checkQuorum: false }); // so 1 can depose 2 at will
  n.peer(2).node.campaign();
  n.stabilize(); // leader 2, term 1, no-op at 1
  n.isolate(3);
  // What an old leader 2 sent to 3 alone before losing leadership: entries 2..6 of term 1.
  const p3 = n.peer(3);
  p3.storage.append(ents(2, [1, 1, 1, 1, 1]).map((e) => ({ ...e, data: enc('stale') })));
  p3.restart();
  n.peer(1).node.campaign();
  n.stabilize(); // leader 1, term 2
  for (let i = 0; i < 20; i++) n.peer(1).node.propose(enc(`v${i}`));
  n.stabilize();
  n.recover();
  n.tick(1, 1);
  t.same(applied(p3), applied(n.peer(1)));
  t.equal(applied(p3).length, 20);
  t.equal(p3.storage.lastIndex(), n.peer(1).storage.lastIndex());
  const terms = p3.storage.entries(I(2), I(7)).map((e) => e.term);
  t.same(terms, [2, 2, 2, 2, 2], 'the stale term-1 entries were replaced');
});

t.test('fast back-off skips a whole conflicting term per round trip', async (t) => {
  const n = elected();
  n.isolate(3);
  for (let i = 0; i < 50; i++) n.peer(1).node.propose(enc(`v${i}`));
  n.stabilize();
  n.recover();
  const before = n.delivered.length;
  n.tick(1, 1);
  const rejects = n.delivered
    .slice(before)
    .filter((m) => m.type === 'appResp' && m.reject && m.from === NodeId(3));
  t.ok(rejects.length <= 1, `at most one rejection (got ${rejects.length})`);
  t.equal(applied(n.peer(3)).length, 50);
});

t.test('flow control caps un-acked messages to a silent follower', async (t) => {
  const n = elected(3, { maxInflightMsgs: 2, maxSizePerMsg: 1 as never });
  n.drop(2, 1, 1); // 2 receives but its acks are lost
  const before = n.delivered.length;
  for (let i = 0; i < 10; i++) {
    n.peer(1).node.propose(enc(`p${i}`));
    n.stabilize();
  }
  const toTwo = n.delivered
    .slice(before)
    .filter((m) => m.type === 'app' && m.to === NodeId(2) && m.entries.length > 0);
  t.equal(toTwo.length, 2, 'two messages in flight, then the leader holds back');
  t.equal(applied(n.peer(3)).length, 10, 'the other follower is not slowed down');
});

t.test('pipelining: the leader sends a new batch before earlier ones are acked', async (t) => {
  const n = elected();
  n.ignore('appResp');
  const before = n.delivered.length;
  n.peer(1).node.propose(enc('a'));
  n.stabilize();
  n.peer(1).node.propose(enc('b'));
  n.stabilize();
  const apps = n.delivered.slice(before).filter((m) => m.type === 'app' && m.to === NodeId(2));
  t.equal(apps.length, 2, 'both went out although nothing was acked');
});

t.test('a follower that needs compacted entries gets a snapshot, then the log', async (t) => {
  const n = elected();
  n.isolate(3);
  for (let i = 0; i < 10; i++) n.peer(1).node.propose(enc(`v${i}`));
  n.stabilize();
  const leader = n.peer(1);
  const at = leader.raft.log.applied;
  leader.storage.createSnapshot(at, leader.raft.tracker.conf, enc('image'));
  leader.storage.compact(at);
  leader.node.propose(enc('after'));
  n.stabilize();
  n.recover();
  n.tick(1, 1);
  const p3 = n.peer(3);
  t.equal(p3.storage.snapshot().metadata.index, at, 'snapshot installed');
  t.same(dec(p3.storage.snapshot().data), 'image');
  t.same(applied(p3), ['after'], 'then the entries after it');
  t.equal(p3.raft.log.committed, leader.raft.log.committed);
  const pr = leader.raft.tracker.progress.get(NodeId(3))!;
  t.equal(pr.state, 'replicate');
});

t.test('a failed snapshot send is retried after the follower answers again', async (t) => {
  const n = elected();
  n.isolate(3);
  for (let i = 0; i < 5; i++) n.peer(1).node.propose(enc(`v${i}`));
  n.stabilize();
  const leader = n.peer(1);
  const at = leader.raft.log.applied;
  leader.storage.createSnapshot(at, leader.raft.tracker.conf, enc('image'));
  leader.storage.compact(at);
  n.recover();
  n.ignore('snap');
  n.tick(1, 1);
  const pr = leader.raft.tracker.progress.get(NodeId(3))!;
  t.equal(pr.state, 'snapshot');
  leader.node.reportSnapshot(NodeId(3), 'failure');
  t.equal(pr.state, 'probe');
  n.recover();
  n.tick(1, 2);
  t.equal(n.peer(3).storage.snapshot().metadata.index, at);
  t.equal(pr.state, 'replicate');
});

t.test('reportUnreachable sends a pipelining follower back to probing', async (t) => {
  const n = elected();
  const pr = n.peer(1).raft.tracker.progress.get(NodeId(2))!;
  t.equal(pr.state, 'replicate');
  n.peer(1).node.reportUnreachable(NodeId(2));
  t.equal(pr.state, 'probe');
});

t.test('the uncommitted-size cap refuses proposals until entries apply', async (t) => {
  const n = elected(3, { maxUncommittedEntriesSize: 10 as never });
  n.isolate(1);
  n.peer(1).node.propose(enc('12345678'));
  t.throws(() => n.peer(1).node.propose(enc('12345678')), { code: 'ERR_RAFT_PROPOSAL_DROPPED' });
  n.recover();
  n.stabilize();
  n.tick(1, 1);
  t.doesNotThrow(() => n.peer(1).node.propose(enc('12345678')));
});

t.test('proposals without a leader are refused', async (t) => {
  const n = new Network(3);
  t.throws(() => n.peer(1).node.propose(enc('x')), { code: 'ERR_RAFT_PROPOSAL_DROPPED' });
  const m = new Network(3, { disableProposalForwarding: true });
  m.peer(1).node.campaign();
  m.stabilize();
  t.throws(() => m.peer(2).node.propose(enc('x')), { code: 'ERR_RAFT_PROPOSAL_DROPPED' });
});

t.test('malformed appends from the network are dropped', async (t) => {
  const n = elected();
  const p = n.peer(2);
  const last = p.raft.log.lastIndex();
  p.node.step({
    type: 'app',
    from: NodeId(1),
    to: NodeId(2),
    term: Term(1),
    index: last,
    logTerm: Term(1),
    commit: last,
    entries: ents(last + 2, [1]), // a gap
  });
  t.notOk(p.node.hasReady(), 'ignored');
  p.node.step({
    type: 'heartbeat',
    from: NodeId(1),
    to: NodeId(9),
    term: Term(1),
    commit: last,
    context: new Uint8Array(),
  });
  t.notOk(p.node.hasReady(), 'not addressed to this member');
  p.node.step({
    type: 'app',
    from: NodeId(3),
    to: NodeId(2),
    term: Term(0),
    index: last,
    logTerm: Term(1),
    commit: last,
    entries: [],
  });
  t.notOk(p.node.hasReady(), 'term 0 is for local input only');
  t.equal(p.raft.lead, 1);
});
