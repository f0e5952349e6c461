/**
 * Membership in one process: add a fourth member as a learner, start it with
 * --initial-cluster-state existing, see it catch up and refuse what a learner must refuse,
 * promote it, remove an original member; the cluster keeps serving throughout.
 */
import t from 'tap';
import { dec, enc, freePorts, waitFor } from './helpers.js';
import { LocalCluster } from './local-cluster.js';

t.test('add a learner, join it, promote it, remove a voter', async (t) => {
  const c = await LocalCluster.start(t.testdir(), ['a', 'b', 'c']);
  t.teardown(() => c.close());
  const leader = await c.waitLeader();
  for (let i = 0; i < 20; i++)
    await leader.write({ op: 'put', key: enc(`m/${i}`), value: enc('x') });

  // member add --learner, through a follower.
  const follower = c.running().find((m) => m !== leader)!;
  const [client, peer] = await freePorts(2);
  const peerUrl = `http://127.0.0.1:${peer}`;
  const added = await follower.memberAdd([peerUrl], true);
  t.equal(added.member.isLearner, true);
  t.equal(added.member.name, '', 'an added member has no name until it starts');
  t.equal(added.members.length, 4);
  await t.rejects(follower.memberAdd([peerUrl], false), { code: 'ERR_PEER_URL_EXIST' });
  await t.rejects(follower.memberAdd(['http://127.0.0.1:1'], true), {
    code: 'ERR_TOO_MANY_LEARNERS',
  });

  // Start it as etcd would be told after `member add`: the whole cluster, state existing.
  const initialCluster = [...c.nodes.values()]
    .map((n) => `${n.name}=${n.config.initialAdvertisePeerUrls[0]!.origin}`)
    .concat(`d=${peerUrl}`)
    .join(',');
  c.define(
    'd',
    { client: client!, peer: peer! },
    { initialCluster, initialClusterState: 'existing' },
  );
  const d = await c.startNode('d');
  t.equal(String(d.id), added.member.id, 'the new member found its ID in the registry');
  await c.waitConverged();
  const r = await d.range({ key: enc('m/'), rangeEnd: enc('m0') }, { serializable: true });
  t.equal(r.result.count, 20, 'the learner has the data');
  await t.rejects(d.write({ op: 'put', key: enc('no'), value: enc('1') }), {
    code: 'ERR_NOT_SUPPORTED_FOR_LEARNER',
  });
  await t.rejects(d.range({ key: enc('m/1') }), { code: 'ERR_NOT_SUPPORTED_FOR_LEARNER' });
  await waitFor('d published its name', () => leader.registry.get(d.id)?.name === 'd');

  // Promote, then remove an original voter that is not the leader.
  const promoted = await leader.memberPromote(added.member.id);
  t.equal(promoted.members.find((m) => m.id === added.member.id)?.isLearner, false);
  await waitFor('d sees itself promoted', () => !d.isLearner);
  await d.write({ op: 'put', key: enc('from-d'), value: enc('voter') });
  const victim = c.running().find((m) => m !== leader && m !== d)!;
  let removedEvent = false;
  victim.once('removed', () => (removedEvent = true));
  const left = await leader.memberRemove(String(victim.id));
  t.equal(left.members.length, 3);
  t.notOk(left.members.some((m) => m.id === String(victim.id)));
  await waitFor('the removed member learns it', () => removedEvent, 3000);
  await c.stopNode(victim.config.name);
  await t.rejects(leader.memberRemove(String(victim.id)), { code: 'ERR_MEMBER_NOT_FOUND' });

  // Three voters left (leader, the other original, d): writes and reads go on.
  for (const m of c.running()) {
    await m.write({ op: 'put', key: enc(`after/${m.config.name}`), value: enc('ok') });
  }
  const after = await d.range({ key: enc('after/'), rangeEnd: enc('after0') });
  t.same(
    after.result.kvs.map((kv) => dec(kv.value)),
    ['ok', 'ok', 'ok'],
  );
  t.equal(d.registry.list().length, 3, 'every member has the same registry');
});

t.test('a restarted joiner needs no cluster flags', async (t) => {
  const c = await LocalCluster.start(t.testdir(), ['a', 'b', 'c']);
  t.teardown(() => c.close());
  const leader = await c.waitLeader();
  // A voter add needs a quorum of started (published) members: wait for the publishes.
  await waitFor('every member published', () =>
    leader.registry.list().every((m) => m.published === true),
  );
  const [client, peer] = await freePorts(2);
  const peerUrl = `http://127.0.0.1:${peer}`;
  await leader.memberAdd([peerUrl], false);
  const initialCluster = [...c.nodes.values()]
    .map((n) => `${n.name}=${n.config.initialAdvertisePeerUrls[0]!.origin}`)
    .concat(`d=${peerUrl}`)
    .join(',');
  c.define(
    'd',
    { client: client!, peer: peer! },
    { initialCluster, initialClusterState: 'existing' },
  );
  const d = await c.startNode('d');
  await leader.write({ op: 'put', key: enc('x'), value: enc('1') });
  await c.waitConverged();
  await c.stopNode('d');
  // The same data dir with no cluster flags at all.
  c.define('d', { client: client!, peer: peer! }, {});
  const again = await c.startNode('d');
  t.equal(again.id, d.id);
  await leader.write({ op: 'put', key: enc('y'), value: enc('2') });
  await c.waitConverged();
  t.equal((await again.range({ key: enc('y') })).result.count, 1);
});
