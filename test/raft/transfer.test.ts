import t from 'tap';
import { NodeId } from '../../src/raft/types.js';
import { enc } from './helpers.js';
import { Network } from './network.js';

const N = NodeId;

function elected(): Network {
  const n = new Network(3);
  n.peer(1).node.campaign();
  n.stabilize();
  return n;
}

t.test('leadership moves to an up-to-date follower at once', async (t) => {
  const n = elected();
  const before = n.delivered.length;
  n.peer(1).node.transferLeader(N(2));
  n.stabilize();
  t.equal(n.peer(2).raft.role, 'leader');
  t.equal(n.peer(1).raft.role, 'follower');
  t.equal(n.peer(2).raft.term, 2);
  const timeoutNow = n.delivered.slice(before).filter((m) => m.type === 'timeoutNow');
  t.equal(timeoutNow.length, 1);
  const votes = n.delivered.slice(before).filter((m) => m.type === 'vote');
  t.ok(
    votes.every((m) => m.type === 'vote' && m.transfer),
    'votes skip the leader lease',
  );
});

t.test('a lagging transferee catches up first; proposals are refused meanwhile', async (t) => {
  const n = elected();
  n.isolate(3);
  for (let i = 0; i < 5; i++) n.peer(1).node.propose(enc(`v${i}`));
  n.stabilize();
  n.peer(1).node.transferLeader(N(3));
  t.throws(() => n.peer(1).node.propose(enc('during')), { code: 'ERR_RAFT_PROPOSAL_DROPPED' });
  n.recover();
  n.tick(1, 1);
  t.equal(n.peer(3).raft.role, 'leader');
  t.equal(n.peer(3).raft.log.lastIndex() > 6, true);
});

t.test('a transfer that cannot finish is abandoned after an election timeout', async (t) => {
  const n = elected();
  n.isolate(3);
  n.peer(1).node.propose(enc('x'));
  n.stabilize();
  n.peer(1).node.transferLeader(N(3));
  t.equal(n.peer(1).raft.leadTransferee, 3);
  n.recover();
  n.ignore('app');
  n.ignore('snap');
  n.tick(1, 10);
  t.equal(n.peer(1).raft.leadTransferee, 0);
  t.equal(n.peer(1).raft.role, 'leader');
  t.doesNotThrow(() => n.peer(1).node.propose(enc('after')));
});

t.test('a follower forwards the request; learners and unknown ids are ignored', async (t) => {
  const n = elected();
  n.peer(3).node.transferLeader(N(3));
  n.stabilize();
  t.equal(n.peer(3).raft.role, 'leader');
  n.peer(3).node.transferLeader(N(9));
  t.equal(n.peer(3).raft.leadTransferee, 0);
});
