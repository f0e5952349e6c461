/**
 * Three members in one process over real loopback sockets: writes through any member,
 * linearizable reads on followers, lease requests forwarded to the leader, and a member
 * that was down catching up from a Raft snapshot of the store.
 */
import t from 'tap';
import { LeaseId } from '../../src/store/types.js';
import { dec, enc, waitFor } from './helpers.js';
import { LocalCluster } from './local-cluster.js';

t.test('writes through every member, reads everywhere', async (t) => {
  const c = await LocalCluster.start(t.testdir(), ['a', 'b', 'c']);
  t.teardown(() => c.close());
  const leader = await c.waitLeader();
  t.same(
    new Set(c.running().map((m) => m.registry.clusterId)).size,
    1,
    'every member derived the same cluster ID',
  );
  for (const [i, m] of c.running().entries()) {
    const r = await m.write({ op: 'put', key: enc(`k${i}`), value: enc(m.config.name) });
    t.equal(r.header.memberId, String(m.id), `answered by ${m.config.name}`);
  }
  // A linearizable read on any member sees every acknowledged write at once.
  for (const m of c.running()) {
    const r = await m.range({ key: enc('k'), rangeEnd: enc('l') });
    t.same(
      r.result.kvs.map((kv) => dec(kv.value)),
      ['a', 'b', 'c'],
      `${m.config.name} sees all`,
    );
  }
  const follower = c.running().find((m) => m !== leader)!;
  const g = await follower.write({ op: 'leaseGrant', id: 0, ttl: 60 });
  const id = g.result.op === 'leaseGrant' ? g.result.result.id : LeaseId(0);
  const ka = await follower.leaseKeepAlive(id);
  t.equal(ka.ttl, 60, 'a follower forwards keepalive to the leader');
  const ttl = await follower.leaseTimeToLive(id, false);
  t.equal(ttl.lease.grantedTtl, 60);
  t.ok(ttl.lease.ttl > 55 && ttl.lease.ttl <= 60, "the remaining TTL is the leader's");
  await c.waitConverged();
  await waitFor('every member published its client URL', () =>
    c.running().every((m) => m.registry.list().every((x) => x.clientURLs.length === 1)),
  );
});

t.test('a member that was down catches up from a snapshot', async (t) => {
  const c = await LocalCluster.start(t.testdir(), ['a', 'b', 'c'], { snapshotCount: 20 });
  t.teardown(() => c.close());
  const leader = await c.waitLeader();
  const down = c.running().find((m) => m !== leader)!.config.name;
  await c.stopNode(down);
  for (let i = 0; i < 60; i++) {
    await leader.write({
      op: 'put',
      key: enc(`s/${String(i).padStart(3, '0')}`),
      value: enc(String(i)),
    });
  }
  t.ok(leader.driver.status().snapshotIndex > 0, 'the leader took a snapshot');
  const back = await c.startNode(down);
  await c.waitConverged(10_000);
  const r = await back.range({ key: enc('s/'), rangeEnd: enc('s0') }, { serializable: true });
  t.equal(r.result.count, 60, 'all writes made while it was down are there');
  t.ok(
    c.node(down).lines.some((l) => l.msg === 'restored from snapshot'),
    'it caught up from a snapshot, not from the log',
  );
  t.equal(back.store.appliedIndex, back.driver.status().applied);
  // It serves new writes like any member.
  await back.write({ op: 'put', key: enc('after'), value: enc('1') });
  t.equal((await leader.range({ key: enc('after') })).result.count, 1);
});
