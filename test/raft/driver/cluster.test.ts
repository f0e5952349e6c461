/** Three drivers on real loopback sockets with LevelDB storage. */
import t, { type Test } from 'tap';
import { ConfChangeType, NodeId } from '../../../src/raft/types.js';
import { Cluster, cmd, freePort, url } from './cluster.js';
import { waitFor } from './helpers.js';

const dirs = (t: Test, n = 3) => Array.from({ length: n }, (_, i) => `${t.testdir()}/m${i + 1}`);

t.test('elects a leader and replicates proposals from any member', async (t) => {
  const c = await Cluster.start(dirs(t));
  t.teardown(() => c.close());
  const leader = await c.waitLeader();
  t.ok(leader, `leader ${leader.id}`);
  const results = await Promise.all(
    Array.from({ length: 60 }, (_, i) => c.get((i % 3) + 1).driver.propose(cmd(`c${i}`))),
  );
  const indexes = results.map((r) => r.index);
  t.equal(new Set(indexes).size, 60, 'each proposal has its own index');
  t.same(
    results.map((r) => String(r.outcome).split('#')[0]),
    Array.from({ length: 60 }, (_, i) => `c${i}`),
    "each proposer, leader or follower, gets its own command's outcome from its own apply",
  );
  await c.waitApplied(60);
  const lists = c.running().map((m) => m.app.commands.join(','));
  t.equal(new Set(lists).size, 1, 'every member applied the same sequence');
  t.same([...c.get(1).app.commands].sort(), Array.from({ length: 60 }, (_, i) => `c${i}`).sort());
});

t.test('a stopped follower: the others keep committing; restarted, it catches up', async (t) => {
  const c = await Cluster.start(dirs(t));
  t.teardown(() => c.close());
  const leader = await c.waitLeader();
  const follower = [1, 2, 3].find((id) => id !== leader.id)!;
  await Promise.all(Array.from({ length: 20 }, (_, i) => leader.driver.propose(cmd(`a${i}`))));
  await c.waitApplied(20);
  await c.stopMember(follower);
  await Promise.all(Array.from({ length: 40 }, (_, i) => leader.driver.propose(cmd(`b${i}`))));
  t.equal(leader.app.commands.length, 60, 'two of three commit');
  const back = await c.restartMember(follower);
  t.equal(back.storage.fresh, false);
  t.ok(back.storage.lastIndex() >= 20, 'the log was reloaded from disk');
  await c.waitApplied(60);
  t.same(back.app.commands, leader.app.commands, 'caught up to the same sequence');
  t.equal(back.app.restores, 0, 'caught up from the log, no snapshot needed');
});

t.test('a follower behind the compacted log catches up through a snapshot', async (t) => {
  const c = await Cluster.start(dirs(t), { snapshotEntries: 30, snapshotCatchUpEntries: 5 });
  t.teardown(() => c.close());
  const leader = await c.waitLeader();
  const follower = [1, 2, 3].find((id) => id !== leader.id)!;
  await leader.driver.propose(cmd('first'));
  await c.waitApplied(1);
  await c.stopMember(follower);
  for (let round = 0; round < 4; round++) {
    await Promise.all(
      Array.from({ length: 25 }, (_, i) => leader.driver.propose(cmd(`r${round}-${i}`))),
    );
  }
  t.ok(
    leader.storage.firstIndex() > 10,
    `leader compacted (first index ${leader.storage.firstIndex()})`,
  );
  const back = await c.restartMember(follower);
  await c.waitApplied(101);
  t.same(back.app.commands, leader.app.commands);
  t.ok(back.app.restores >= 1, 'installed the leader snapshot');
  t.ok(back.storage.snapshot().metadata.index > 10, 'and persisted it');
  await back.driver.propose(cmd('after'));
  await c.waitApplied(102);
});

t.test('a stopped leader is replaced and commits continue', async (t) => {
  const c = await Cluster.start(dirs(t));
  t.teardown(() => c.close());
  const old = await c.waitLeader();
  await old.driver.propose(cmd('x'));
  const term = old.driver.status().term;
  await c.stopMember(old.id);
  const next = await c.waitLeader();
  t.not(next.id, old.id);
  t.ok(next.driver.status().term > term, 'a later term');
  await next.driver.propose(cmd('y'));
  await c.waitApplied(2);
  t.same(next.app.commands, ['x', 'y']);
  const back = await c.restartMember(old.id);
  await c.waitApplied(2);
  t.same(back.app.commands, ['x', 'y'], 'the old leader rejoins as a follower');
  t.equal((await c.waitLeader()).id, next.id);
});

t.test('readIndex on a follower is a linearizable barrier', async (t) => {
  const c = await Cluster.start(dirs(t));
  t.teardown(() => c.close());
  const leader = await c.waitLeader();
  const follower = c.get([1, 2, 3].find((id) => id !== leader.id)!);
  for (let i = 0; i < 10; i++) {
    const w = await leader.driver.propose(cmd(`w${i}`));
    const r = await follower.driver.readIndex();
    t.ok(r >= w.index, `read index ${r} covers write ${w.index}`);
    t.ok(follower.app.commands.includes(`w${i}`), 'and the follower has applied it');
  }
});

t.test('leader transfer, and requests fail cleanly once stopped', async (t) => {
  const c = await Cluster.start(dirs(t));
  t.teardown(() => c.close());
  const leader = await c.waitLeader();
  const target = [1, 2, 3].find((id) => id !== leader.id)!;
  await leader.driver.transferLeader(c.get(target).id);
  t.equal((await c.waitLeader()).id, target);
  await c.stopMember(target);
  await t.rejects(c.get(target).driver.propose(cmd('late')), { code: 'ERR_CLOSED' });
  await t.rejects(c.get(target).driver.readIndex(), { code: 'ERR_CLOSED' });
});

t.test('membership: a learner joins through a conf change, catches up, is promoted', async (t) => {
  const c = await Cluster.start(dirs(t, 4), {}, 3);
  t.teardown(() => c.close());
  const leader = await c.waitLeader();
  await Promise.all(Array.from({ length: 20 }, (_, i) => leader.driver.propose(cmd(`m${i}`))));
  const port = await freePort();
  const added = await leader.driver.proposeConfChange({
    type: ConfChangeType.AddLearner,
    nodeId: NodeId(4),
    context: new TextEncoder().encode(url(port)),
  });
  t.ok(added.index > 20, 'the change is applied on the leader');
  t.ok(leader.transport.peerIds().includes(NodeId(4)), 'the transport learnt its URL');
  const joiner = await c.startMember(NodeId(4), port, {
    voters: [NodeId(1), NodeId(2), NodeId(3)],
    learners: [NodeId(4)],
  });
  await c.waitApplied(20);
  t.same(joiner.app.commands, leader.app.commands, 'the learner caught up');
  await leader.driver.proposeConfChange({ type: ConfChangeType.AddVoter, nodeId: NodeId(4) });
  await leader.driver.propose(cmd('with four voters'));
  await c.waitApplied(21);
  t.same(joiner.app.commands, leader.app.commands);
});

t.test('proposals a deposed leader could not commit fail with ERR_LEADER_CHANGED', async (t) => {
  const c = await Cluster.start(dirs(t));
  t.teardown(() => c.close());
  const old = await c.waitLeader();
  await old.driver.propose(cmd('before'));
  await c.waitApplied(1);
  c.isolate(old.id);
  const doomed = Array.from({ length: 5 }, (_, i) =>
    old.driver.propose(cmd(`doomed${i}`)).then(
      () => 'applied',
      (e: { code?: string }) => e.code ?? 'error',
    ),
  );
  const others = c.running().filter((m) => m.id !== old.id);
  await waitFor(
    () => others.some((m) => m.driver.status().role === 'leader'),
    'a new leader among the others',
  );
  const next = others.find((m) => m.driver.status().role === 'leader')!;
  await Promise.all(Array.from({ length: 10 }, (_, i) => next.driver.propose(cmd(`new${i}`))));
  c.heal(old.id);
  const outcomes = await Promise.all(doomed);
  t.same(outcomes, Array(5).fill('ERR_LEADER_CHANGED'), 'told at once, not after a timeout');
  await c.waitApplied(11);
  t.same(old.app.commands, next.app.commands, 'the deposed leader follows the new log');
  t.notOk(old.app.commands.some((x) => x.startsWith('doomed')));
});
