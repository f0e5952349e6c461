import t from 'tap';
import { applyConfChange, decodeConfChange, encodeConfChange } from '../../src/raft/confchange.js';
import { ConfChangeType, NodeId } from '../../src/raft/types.js';
import { enc } from './helpers.js';
import { Network } from './network.js';
import { TestPeer } from './peer.js';
import { seededRandom } from './rand.js';

const N = NodeId;

function elected(size = 3): Network {
  const n = new Network(size);
  n.peer(1).node.campaign();
  n.stabilize();
  return n;
}

/** A new member joins with the membership that includes it, as a driver would set it up. */
function join(n: Network, id: number, asLearner: boolean): TestPeer {
  const cs = n.peer(1).raft.tracker.conf;
  const conf = asLearner
    ? { voters: cs.voters, learners: [...cs.learners, N(id)] }
    : { voters: [...cs.voters, N(id)], learners: cs.learners };
  const p = TestPeer.bootstrap(id, conf);
  n.add(p);
  return p;
}

t.test('conf changes encode and apply as pure data', async (t) => {
  const cc = { type: ConfChangeType.AddLearner, nodeId: N(7), context: enc('http://x') };
  t.same(decodeConfChange(encodeConfChange(cc)), cc);
  t.throws(() => decodeConfChange(new Uint8Array([9, 9])), { code: 'ERR_CORRUPT' });
  const cs = { voters: [N(1), N(2)], learners: [] };
  const added = applyConfChange(cs, cc);
  t.same(added, { voters: [1, 2], learners: [7] });
  t.same(applyConfChange(added, { type: 'addVoter', nodeId: N(7) }), {
    voters: [1, 2, 7],
    learners: [],
  });
  t.equal(applyConfChange(cs, { type: 'removeNode', nodeId: N(9) }), cs, 'invalid: unchanged');
  t.equal(
    applyConfChange({ voters: [N(1)], learners: [] }, { type: 'removeNode', nodeId: N(1) }).voters
      .length,
    1,
  );
});

t.test('add a learner, let it catch up, promote it, then remove a voter', async (t) => {
  const n = elected();
  n.peer(1).node.propose(enc('before'));
  n.stabilize();
  const p4 = join(n, 4, true);
  n.peer(1).node.proposeConfChange({ type: 'addLearner', nodeId: N(4) });
  n.stabilize();
  n.tick(1, 1);
  t.same(n.peer(1).raft.tracker.conf, { voters: [1, 2, 3], learners: [4] });
  t.same(
    p4.applied.map((e) => e.index),
    n.peer(1).applied.map((e) => e.index),
    'learner caught up',
  );
  t.same(p4.raft.tracker.conf, { voters: [1, 2, 3], learners: [4] });
  n.tick(4, 50);
  t.equal(p4.raft.role, 'follower', 'a learner never campaigns');

  n.peer(1).node.proposeConfChange({ type: 'addVoter', nodeId: N(4) });
  n.stabilize();
  t.same(n.peer(1).raft.tracker.conf, { voters: [1, 2, 3, 4], learners: [] });
  t.same(p4.raft.tracker.conf.voters, [1, 2, 3, 4], 'promoted');

  n.peer(1).node.proposeConfChange({ type: 'removeNode', nodeId: N(3) });
  n.stabilize();
  t.same(n.peer(1).raft.tracker.conf, { voters: [1, 2, 4], learners: [] });
  n.isolate(2);
  n.isolate(4);
  n.peer(1).node.propose(enc('two of three'));
  n.stabilize();
  t.notOk(
    n.peer(1).applied.some((e) => e.data.length === 12),
    'needs 2 of {1,2,4}',
  );
  n.recover();
  n.isolate(3);
  n.tick(1, 1);
  t.ok(n.peer(4).applied.some((e) => new TextDecoder().decode(e.data) === 'two of three'));
});

t.test('one change at a time; invalid changes are refused', async (t) => {
  const n = elected();
  n.isolate(1);
  n.peer(1).node.proposeConfChange({ type: 'addLearner', nodeId: N(4) });
  t.throws(() => n.peer(1).node.proposeConfChange({ type: 'addLearner', nodeId: N(5) }), {
    code: 'ERR_RAFT_CONF_CHANGE_PENDING',
  });
  n.recover();
  n.stabilize();
  n.tick(1, 1);
  t.throws(() => n.peer(1).node.proposeConfChange({ type: 'removeNode', nodeId: N(9) }), {
    code: 'ERR_RAFT_INVALID_CONF_CHANGE',
  });
  t.throws(
    () => n.peer(1).node.proposeConfChange({ type: 'addLearner', nodeId: N(2) }),
    {
      code: 'ERR_RAFT_INVALID_CONF_CHANGE',
    },
    'no demotion',
  );
  t.doesNotThrow(() => n.peer(1).node.proposeConfChange({ type: 'addLearner', nodeId: N(5) }));
});

t.test('a new leader refuses conf changes until its earlier entries are applied', async (t) => {
  const n = elected();
  // 2 receives 'c' but never learns that it committed.
  n.hook = (m) =>
    !(m.to === N(2) && (m.type === 'heartbeat' || (m.type === 'app' && m.entries.length === 0)));
  n.peer(1).node.propose(enc('c'));
  n.stabilize();
  const r2 = n.peer(2).raft;
  t.ok(r2.log.applied < r2.log.lastIndex(), '2 has an unapplied entry');
  // Hand leadership to 2, and keep its no-op from committing for now.
  n.hook = (m) => !(m.type === 'appResp' && m.to === N(2));
  n.peer(1).node.transferLeader(N(2));
  n.stabilize();
  t.equal(r2.role, 'leader');
  t.throws(() => n.peer(2).node.proposeConfChange({ type: 'addLearner', nodeId: N(4) }), {
    code: 'ERR_RAFT_CONF_CHANGE_PENDING',
  });
  n.recover();
  n.tick(2, 1);
  t.doesNotThrow(() => n.peer(2).node.proposeConfChange({ type: 'addLearner', nodeId: N(4) }));
});

t.test('a removed leader steps down and the rest elect a new one', async (t) => {
  const n = new Network(3, { random: seededRandom(7) });
  n.peer(1).node.campaign();
  n.stabilize();
  n.peer(1).node.proposeConfChange({ type: 'removeNode', nodeId: N(1) });
  n.stabilize();
  t.equal(n.peer(1).raft.role, 'follower');
  t.notOk(n.peer(1).raft.promotable());
  n.tickAll(40);
  const leader = n.leader();
  t.ok(leader !== undefined && leader.id !== N(1), 'a remaining member leads');
  n.tick(1, 50);
  t.equal(n.peer(1).raft.role, 'follower', 'the removed member never campaigns');
});

t.test('membership survives a restart: conf changes up to applied are replayed', async (t) => {
  const n = elected();
  n.peer(1).node.proposeConfChange({ type: 'addLearner', nodeId: N(4) });
  n.stabilize();
  const p2 = n.peer(2);
  p2.restart();
  t.same(p2.raft.tracker.conf, { voters: [1, 2, 3], learners: [4] });
});
