import t from 'tap';
import { NodeId } from '../../src/raft/types.js';
import { dec, enc } from './helpers.js';
import { Network } from './network.js';
import type { TestPeer } from './peer.js';

const N = NodeId;

/** Read states come out of Ready; collect them as the harness processes Readys. */
function readsOf(n: Network, p: TestPeer): Array<{ index: number; ctx: string }> {
  const out: Array<{ index: number; ctx: string }> = [];
  const orig = p.handleReady.bind(p);
  p.handleReady = () => {
    const got = orig();
    for (const rs of got?.rd.readStates ?? []) out.push({ index: rs.index, ctx: dec(rs.context) });
    return got;
  };
  void n;
  return out;
}

function elected(): Network {
  const n = new Network(3);
  n.peer(1).node.campaign();
  n.stabilize();
  return n;
}

t.test('the leader answers after a heartbeat round confirms it', async (t) => {
  const n = elected();
  const reads = readsOf(n, n.peer(1));
  n.peer(1).node.propose(enc('x'));
  n.stabilize();
  const before = n.delivered.length;
  n.peer(1).node.readIndex(enc('r1'));
  n.stabilize();
  t.same(reads, [{ index: n.peer(1).raft.log.committed, ctx: 'r1' }]);
  const hb = n.delivered.slice(before).filter((m) => m.type === 'heartbeat');
  t.equal(hb.length, 2, 'one confirmation heartbeat per follower');
});

t.test('a follower forwards the request and gets the read index back', async (t) => {
  const n = elected();
  const reads = readsOf(n, n.peer(3));
  n.peer(1).node.propose(enc('x'));
  n.stabilize();
  n.peer(3).node.readIndex(enc('f1'));
  n.stabilize();
  t.same(reads, [{ index: n.peer(1).raft.log.committed, ctx: 'f1' }]);
});

t.test('a leader cut off from the quorum does not answer', async (t) => {
  const n = elected();
  const reads = readsOf(n, n.peer(1));
  n.isolate(1);
  n.peer(1).node.readIndex(enc('lost'));
  n.stabilize();
  n.tick(1, 3); // heartbeats keep retrying the round
  t.same(reads, []);
  n.recover();
  n.tick(1, 1);
  t.same(
    reads.map((r) => r.ctx),
    ['lost'],
    'answered once a quorum confirms',
  );
});

t.test('a new leader defers reads until an entry of its term commits', async (t) => {
  const n = elected();
  n.hook = (m) => !(m.type === 'appResp' && m.to === N(2));
  n.peer(1).node.transferLeader(N(2));
  n.stabilize();
  const reads = readsOf(n, n.peer(2));
  t.equal(n.peer(2).raft.role, 'leader');
  n.peer(2).node.readIndex(enc('early'));
  n.stabilize();
  t.same(reads, [], 'its no-op is not committed yet');
  n.recover();
  n.tick(2, 1);
  n.tick(2, 1);
  t.same(
    reads.map((r) => r.ctx),
    ['early'],
  );
  t.equal(reads[0]!.index, n.peer(2).raft.log.committed);
  t.equal(n.peer(2).raft.log.term(n.peer(2).raft.log.committed), n.peer(2).raft.term);
});

t.test('a single voter answers at once; without a leader the call is refused', async (t) => {
  const one = new Network(1);
  one.peer(1).node.campaign();
  one.stabilize();
  const reads = readsOf(one, one.peer(1));
  one.peer(1).node.readIndex(enc('solo'));
  one.stabilize();
  t.same(
    reads.map((r) => r.ctx),
    ['solo'],
  );
  const none = new Network(3);
  t.throws(() => none.peer(1).node.readIndex(enc('x')), { code: 'ERR_RAFT_PROPOSAL_DROPPED' });
});
