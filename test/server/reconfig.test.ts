/**
 * Strict reconfiguration: on a single member, adding a voter that is not running would
 * leave no quorum of started members, so it is refused with ERR_NOT_ENOUGH_STARTED_MEMBERS
 * (over the JSON API: 412 and etcd's text); a learner is accepted and writes go on. With
 * --strict-reconfig-check=false the add is accepted as a learner promoted once it starts:
 * writes go on, the never-started member can be removed again, and one that does start
 * becomes a voter.
 */
import t from 'tap';
import { enc, freePorts, waitFor } from './helpers.js';
import { LocalCluster } from './local-cluster.js';

const UNREACHABLE = 'http://127.0.0.1:1';

t.test('strict check (default): an unstarted voter is refused, a learner is not', async (t) => {
  const c = await LocalCluster.start(t.testdir(), ['a']);
  t.teardown(() => c.close());
  const a = await c.waitLeader();
  await waitFor('a published', () => a.registry.get(a.id)?.published === true);

  await t.rejects(a.memberAdd([UNREACHABLE], false), {
    code: 'ERR_NOT_ENOUGH_STARTED_MEMBERS',
    message: /not enough started members.*learner/,
  });
  t.equal(a.registry.list().length, 1, 'the refused add changed nothing');
  t.equal(a.driver.status().applied, a.store.appliedIndex, 'nothing left half-done');

  const http = await fetch(new URL('/v3/cluster/member/add', a.clientUrls[0]!), {
    method: 'POST',
    body: JSON.stringify({ peerURLs: [UNREACHABLE] }),
  });
  const body = (await http.json()) as { code: number; message: string };
  t.equal(http.status, 412);
  t.equal(body.code, 9, 'FailedPrecondition');
  t.match(body.message, 'etcdserver: re-configuration failed due to not enough started members');

  await a.write({ op: 'put', key: enc('k'), value: enc('1') });
  const learner = await a.memberAdd([UNREACHABLE], true);
  t.equal(learner.member.isLearner, true);
  await a.write({ op: 'put', key: enc('k'), value: enc('2') });
  // Promoting a learner that never started is refused too, whatever the flag.
  await t.rejects(a.memberPromote(learner.member.id), { code: 'ERR_NOT_ENOUGH_STARTED_MEMBERS' });
  await a.memberRemove(learner.member.id);
  await a.write({ op: 'put', key: enc('k'), value: enc('3') });
  t.equal(a.registry.list().length, 1);
});

t.test('--strict-reconfig-check=false: added, removable, promoted once started', async (t) => {
  const c = await LocalCluster.start(t.testdir(), ['a'], { strictReconfigCheck: 'false' });
  t.teardown(() => c.close());
  const a = await c.waitLeader();
  await waitFor('a published', () => a.registry.get(a.id)?.published === true);

  const forced = await a.memberAdd([UNREACHABLE], false);
  t.equal(forced.member.isLearner, true, 'a learner until it starts');
  await a.write({ op: 'put', key: enc('k'), value: enc('1') });
  await a.memberRemove(forced.member.id);
  t.equal(a.registry.list().length, 1, 'the never-started member is gone');
  await a.write({ op: 'put', key: enc('k'), value: enc('2') });

  // Added the same way, then started: promoted to a voter by the leader.
  const [client, peer] = await freePorts(2);
  const peerUrl = `http://127.0.0.1:${peer}`;
  const added = await a.memberAdd([peerUrl], false);
  t.equal(added.member.isLearner, true);
  const initialCluster = `a=${c.node('a').config.initialAdvertisePeerUrls[0]!.origin},b=${peerUrl}`;
  c.define(
    'b',
    { client: client!, peer: peer! },
    { initialCluster, initialClusterState: 'existing' },
  );
  const b = await c.startNode('b');
  await waitFor('b promoted', () => a.registry.get(b.id)?.isLearner === false, 10_000);
  await waitFor('b sees itself a voter', () => !b.isLearner, 10_000);
  await b.write({ op: 'put', key: enc('from-b'), value: enc('voter') });
  t.equal(a.registry.get(b.id)?.promoteOnStart, undefined, 'the mark is gone once promoted');
});
