import t from 'tap';
import { NodeId, Term } from '../../src/raft/types.js';
import { enc } from './helpers.js';
import { Network } from './network.js';

const elect = (n: Network, id: number) => {
  n.peer(id).node.campaign();
  n.stabilize();
};

t.test('a campaign elects a leader whose no-op commits everywhere', async (t) => {
  const n = new Network(3);
  elect(n, 1);
  t.equal(n.peer(1).raft.role, 'leader');
  for (const p of n.peers.values()) {
    t.equal(p.raft.term, 1);
    t.equal(p.raft.lead, 1);
    t.same(
      p.applied.map((e) => [e.term, e.index, e.data.length]),
      [[1, 1, 0]],
      `${p.id} applied the no-op`,
    );
  }
});

t.test('a follower campaigns on its own after an election timeout', async (t) => {
  const n = new Network(3);
  n.tick(2, 9);
  t.equal(n.peer(2).raft.role, 'follower');
  n.tick(2, 1); // random() = 0: the randomized timeout is exactly electionTick (10)
  t.equal(n.peer(2).raft.role, 'leader');
});

t.test('a candidate that loses steps down; votes are not split across a term', async (t) => {
  const n = new Network(3);
  n.ignore('preVote');
  n.ignore('vote');
  elect(n, 1); // pre-vote never answered: stays pre-candidate, term unchanged
  t.equal(n.peer(1).raft.role, 'preCandidate');
  t.equal(n.peer(1).raft.term, 0);
  n.recover();
  elect(n, 2);
  t.equal(n.peer(2).raft.role, 'leader');
  t.equal(n.peer(1).raft.role, 'follower');
});

t.test('pre-vote: an isolated member does not inflate terms or disrupt the leader', async (t) => {
  const n = new Network(3);
  elect(n, 1);
  n.isolate(3);
  for (let i = 0; i < 5; i++) n.tick(3, 30);
  t.equal(n.peer(3).raft.term, 1, 'pre-votes never succeed, so the term stays');
  t.equal(n.peer(3).raft.role, 'preCandidate');
  n.recover();
  n.tick(1, 1); // a heartbeat brings 3 back as follower
  t.equal(n.peer(1).raft.role, 'leader');
  t.equal(n.peer(1).raft.term, 1, 'the leader was not disturbed');
  t.equal(n.peer(3).raft.role, 'follower');
});

t.test(
  'without pre-vote (and check-quorum) a rejoining member forces a new election',
  async (t) => {
    const n = new Network(3, { preVote: false, checkQuorum: false });
    elect(n, 1);
    n.isolate(3);
    n.tick(3, 30);
    t.ok(n.peer(3).raft.term > 1, 'the isolated member bumped its term');
    n.recover();
    n.tick(3, 10); // its next campaign reaches the others
    t.ok(n.peer(1).raft.term > 1, 'the leader learned the higher term');
    t.not(n.peer(1).raft.role, 'leader', 'and stepped down');
  },
);

t.test('check-quorum: a leader cut off from the quorum steps down', async (t) => {
  const n = new Network(3);
  elect(n, 1);
  n.isolate(1);
  n.tick(1, 10);
  t.equal(n.peer(1).raft.role, 'leader', 'followers were active in the first round');
  n.tick(1, 10);
  t.equal(n.peer(1).raft.role, 'follower');
  t.equal(n.peer(1).raft.lead, 0);
});

t.test(
  'leader lease: a follower that hears its leader ignores a vote at a higher term',
  async (t) => {
    const n = new Network(3);
    elect(n, 1);
    const f = n.peer(2);
    f.node.step({
      type: 'vote',
      from: NodeId(3),
      to: NodeId(2),
      term: Term(5),
      index: f.raft.log.lastIndex(),
      logTerm: f.raft.log.lastTerm(),
      transfer: false,
    });
    t.equal(f.raft.term, 1, 'term unchanged');
    t.equal(f.raft.vote, 1, 'still voted for the leader');
    t.notOk(f.node.hasReady(), 'no answer at all');
  },
);

t.test('a vote is refused to a candidate with a less up-to-date log', async (t) => {
  const n = new Network(3, { checkQuorum: false }); // no lease: only the log check decides
  elect(n, 1);
  n.isolate(3);
  n.peer(1).node.propose(enc('x'));
  n.stabilize();
  n.recover();
  n.isolate(1);
  const before = n.delivered.length;
  n.tick(3, 10);
  const answers = n.delivered
    .slice(before)
    .filter((m) => m.type === 'preVoteResp' && m.from === NodeId(2));
  t.equal(answers.length, 1);
  t.equal(answers[0]?.type === 'preVoteResp' && answers[0].reject, true, '2 has x, 3 does not');
  t.not(n.peer(3).raft.role, 'leader');
});

t.test('a vote survives a crash: after restart the member refuses another candidate', async (t) => {
  const n = new Network(3, { preVote: false });
  n.peer(2).node.step({
    type: 'vote',
    from: NodeId(1),
    to: NodeId(2),
    term: Term(1),
    index: n.peer(2).raft.log.lastIndex(),
    logTerm: Term(0),
    transfer: false,
  });
  const got = n.peer(2).handleReady()!;
  t.equal(got.rd.messages.length, 0, 'the grant does not leave before persistence');
  t.equal(got.rd.messagesAfterPersist[0]?.type, 'voteResp');
  t.ok(got.rd.mustSync, 'a vote must be fsynced');
  n.peer(2).restart();
  t.equal(n.peer(2).raft.vote, 1, 'the vote was durable');
  n.peer(2).node.step({
    type: 'vote',
    from: NodeId(3),
    to: NodeId(2),
    term: Term(1),
    index: n.peer(2).raft.log.lastIndex(),
    logTerm: Term(0),
    transfer: false,
  });
  const again = n.peer(2).handleReady()!;
  const resp = again.rd.messagesAfterPersist[0];
  t.equal(resp?.type === 'voteResp' && resp.reject, true, 'the second candidate is refused');
});

t.test("a candidate's vote requests leave only after its own vote is durable", async (t) => {
  const n = new Network(3, { preVote: false });
  n.peer(1).node.campaign();
  const rd = n.peer(1).node.ready();
  t.same(rd.messages, []);
  t.same(
    rd.messagesAfterPersist.map((m) => m.type),
    ['vote', 'vote'],
  );
  t.same(rd.hardState, { term: 1, vote: 1, commit: 0 });
});

t.test('learners and removed members never campaign', async (t) => {
  const n = new Network([1, 2]);
  const p = n.peer(2);
  p.raft.tracker.setConf({ voters: [NodeId(1)], learners: [NodeId(2)] }, p.raft.log.lastIndex());
  n.tick(2, 100);
  t.equal(p.raft.role, 'follower');
  t.equal(p.raft.term, 0);
  p.node.campaign();
  t.equal(p.raft.role, 'follower');
});
