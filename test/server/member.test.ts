/**
 * One member in this process, on ephemeral loopback ports: the MemberApi end to end
 * (writes through Raft, linearizable and serializable reads, leases, compaction, status,
 * membership listing), persistence across a restart, and the client listener over a real
 * socket.
 */
import { join } from 'node:path';
import { Level } from 'level';
import t from 'tap';
import { newCluster } from '../../src/server/bootstrap.js';
import { MemberRegistry } from '../../src/server/registry.js';
import { LeaseId } from '../../src/store/types.js';
import { dec, enc, singleConfig, startSingle, waitFor } from './helpers.js';

t.test('writes and reads through Raft', async (t) => {
  const m = await startSingle(t.testdir());
  t.teardown(() => m.stop());
  await waitFor('leader', () => m.health().health);
  const put = await m.write({ op: 'put', key: enc('a'), value: enc('1') });
  t.equal(put.result.op, 'put');
  t.equal(put.header.revision, 2, 'the put answers with its own revision');
  t.equal(put.header.memberId, String(m.id));
  t.equal(put.header.clusterId, m.registry.clusterId);
  const r = await m.range({ key: enc('a') });
  t.equal(r.result.kvs.length, 1);
  t.equal(dec(r.result.kvs[0]!.value), '1');
  const s = await m.range({ key: enc('a') }, { serializable: true });
  t.equal(s.result.kvs[0]?.version, 1);
  const txn = await m.write({
    op: 'txn',
    compare: [{ key: enc('a'), result: 'EQUAL', target: 'VALUE', value: enc('1') }],
    success: [{ type: 'put', request: { key: enc('b'), value: enc('2') } }],
    failure: [],
  });
  t.ok(txn.result.op === 'txn' && txn.result.result.succeeded);
  t.equal(m.store.appliedIndex, m.driver.status().applied, 'store applied index = raft applied');
});

t.test('a bad write fails with its error and changes nothing', async (t) => {
  const m = await startSingle(t.testdir());
  t.teardown(() => m.stop());
  const before = m.store.currentRevision;
  await t.rejects(m.write({ op: 'put', key: enc(''), value: enc('x') }), { code: 'ERR_EMPTY_KEY' });
  await t.rejects(m.write({ op: 'compact', revision: 100 }), { code: 'ERR_FUTURE_REV' });
  await t.rejects(m.write({ op: 'leaseRevoke', id: 12345 }), { code: 'ERR_LEASE_NOT_FOUND' });
  t.equal(m.store.currentRevision, before);
  const metrics = await m.metrics.metrics();
  t.match(metrics, /etcd_server_proposals_pending 0/, 'no waiter is left behind');
  t.match(metrics, /etcd_server_proposals_committed_total 2/, 'the two that failed at apply');
});

t.test('leases: grant with a member-chosen ID, keepalive, time-to-live, revoke', async (t) => {
  const m = await startSingle(t.testdir());
  t.teardown(() => m.stop());
  const g = await m.write({ op: 'leaseGrant', id: 0, ttl: 30 });
  if (g.result.op !== 'leaseGrant') throw new Error('not a grant');
  const id = g.result.result.id;
  t.ok(id > 0, 'the member chose an ID');
  await m.write({ op: 'put', key: enc('l'), value: enc('v'), lease: id });
  const ka = await m.leaseKeepAlive(id);
  t.equal(ka.ttl, 30);
  const ttl = await m.leaseTimeToLive(id, true);
  t.equal(ttl.lease.grantedTtl, 30);
  t.same(ttl.lease.keys.map(dec), ['l']);
  t.same((await m.leaseLeases()).leases, [id]);
  t.equal((await m.leaseKeepAlive(LeaseId(999))).ttl, 0, 'keepalive of an unknown lease: TTL 0');
  t.equal((await m.leaseTimeToLive(LeaseId(999), false)).lease.ttl, -1);
  await m.write({ op: 'leaseRevoke', id });
  t.equal((await m.range({ key: enc('l') })).result.kvs.length, 0, 'revoke deleted the key');
});

t.test('the leader expires leases by proposing revokes', async (t) => {
  // Election timeout 200 ms: the minimum TTL is ceil(0.3) = 1 s.
  const m = await startSingle(t.testdir(), {}, { leaseCheckMs: 50 });
  t.teardown(() => m.stop());
  const g = await m.write({ op: 'leaseGrant', id: 77, ttl: 1 });
  t.equal(g.result.op === 'leaseGrant' && g.result.result.ttl, 1);
  await m.write({ op: 'put', key: enc('tmp'), value: enc('x'), lease: 77 });
  await waitFor(
    'expiry',
    async () => (await m.range({ key: enc('tmp') })).result.kvs.length === 0,
    4000,
  );
  t.same((await m.leaseLeases()).leases, []);
});

t.test('auto-compaction by revision', async (t) => {
  const m = await startSingle(
    t.testdir(),
    { autoCompactionMode: 'revision', autoCompactionRetention: '5' },
    { revisionCompactionCheckMs: 30 },
  );
  t.teardown(() => m.stop());
  for (let i = 0; i < 12; i++) await m.write({ op: 'put', key: enc('k'), value: enc(String(i)) });
  await waitFor('compaction', () => m.store.compactRevision >= 8);
  t.equal(m.store.compactRevision, m.store.currentRevision - 5);
  await t.rejects(m.range({ key: enc('k'), revision: 2 }), { code: 'ERR_COMPACTED' });
});

t.test('status, health, member list, learner-only checks', async (t) => {
  const m = await startSingle(t.testdir());
  t.teardown(() => m.stop());
  await waitFor('leader', () => m.health().health);
  await m.write({ op: 'put', key: enc('s'), value: enc('1') });
  const st = await m.status();
  t.equal(st.leader, String(m.id));
  t.equal(st.isLearner, false);
  t.ok(st.dbSize > 0);
  t.ok(st.raftAppliedIndex >= 2);
  t.equal(st.header.revision, 2);
  await waitFor('published', () => m.registry.get(m.id)?.clientURLs.length === 1);
  const list = await m.memberList();
  t.equal(list.members.length, 1);
  t.equal(list.members[0]?.name, 'm1');
  t.same(list.members[0]?.clientURLs, [`http://127.0.0.1:${m.clientUrls[0]!.port}`]);
  await t.rejects(m.memberRemove(String(m.id)), { code: 'ERR_RAFT_INVALID_CONF_CHANGE' });
  await t.rejects(m.memberPromote(String(m.id)), { code: 'ERR_MEMBER_NOT_LEARNER' });
  await t.rejects(m.memberRemove('12'), { code: 'ERR_MEMBER_NOT_FOUND' });
  await t.rejects(m.memberAdd(['ftp://x:1'], false), { code: 'ERR_MEMBER_BAD_URLS' });
});

t.test('a restart keeps identity, data and leases, with no cluster flags', async (t) => {
  const dir = t.testdir();
  const m1 = await startSingle(dir);
  await m1.write({ op: 'put', key: enc('p'), value: enc('kept') });
  await m1.write({ op: 'leaseGrant', id: 5, ttl: 60 });
  const { id } = m1;
  const cluster = m1.registry.clusterId;
  await m1.stop();
  // Different cluster flags are ignored on restart: the identity is in the database.
  const m2 = await startSingle(dir, { initialCluster: 'other=http://127.0.0.1:9', name: 'other' });
  t.teardown(() => m2.stop());
  t.equal(m2.id, id);
  t.equal(m2.registry.clusterId, cluster);
  t.equal(dec((await m2.range({ key: enc('p') })).result.kvs[0]!.value), 'kept');
  t.same((await m2.leaseLeases()).leases, [5]);
  await m2.write({ op: 'put', key: enc('p'), value: enc('again') });
  t.equal(m2.store.appliedIndex, m2.driver.status().applied);
});

t.test('the client listener answers /health and /metrics over a real socket', async (t) => {
  const m = await startSingle(t.testdir());
  t.teardown(() => m.stop());
  await waitFor('leader', () => m.health().health);
  const base = m.clientUrls[0]!;
  const h = await fetch(new URL('/health', base));
  t.equal(h.status, 200);
  t.match(await h.json(), { health: 'true' });
  const metrics = await (await fetch(new URL('/metrics', base))).text();
  t.match(metrics, /etcd_server_has_leader 1/);
  t.match(metrics, /etcd_server_apply_duration_seconds_bucket/);
});

t.test('stop fails new requests with ERR_CLOSED', async (t) => {
  const m = await startSingle(t.testdir());
  await m.stop();
  await t.rejects(m.write({ op: 'put', key: enc('x'), value: enc('y') }), { code: 'ERR_CLOSED' });
  await m.stop(); // idempotent
});

t.test('the watch cache follows the applied writes', async (t) => {
  const m = await startSingle(t.testdir());
  t.teardown(() => m.stop());
  await waitFor('leader', () => m.health().health);
  const it = m.watchCache.watchIterator({ key: 'w/', prefix: true });
  await m.write({ op: 'put', key: enc('w/1'), value: enc('a') });
  await m.write({ op: 'deleteRange', key: enc('w/1') });
  const seen: string[] = [];
  for await (const r of it) {
    if (r.type !== 'events') continue;
    for (const e of r.events) seen.push(`${e.type} ${dec(e.kv.key)}`);
    if (seen.length === 2) break;
  }
  t.same(seen, ['PUT w/1', 'DELETE w/1']);
});

t.test('the etcd JSON API on the client listener: put, range, a watch stream', async (t) => {
  const m = await startSingle(t.testdir());
  t.teardown(() => m.stop());
  await waitFor('leader', () => m.health().health);
  const base = m.clientUrls[0]!;
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const post = (path: string, body: unknown) =>
    fetch(new URL(path, base), { method: 'POST', body: JSON.stringify(body) });
  const watch = await post('/v3/watch', {
    create_request: { key: b64('h/'), range_end: b64('h0') },
  });
  const reader = watch.body!.getReader();
  let buffered = '';
  const nextResult = async () => {
    for (;;) {
      const nl = buffered.indexOf('\n');
      if (nl >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        return JSON.parse(line).result;
      }
      const { value, done } = await reader.read();
      if (done) throw new Error('watch stream ended');
      buffered += Buffer.from(value).toString('utf8');
    }
  };
  t.equal((await nextResult()).created, true);
  const put = await post('/v3/kv/put', { key: b64('h/1'), value: b64('v') });
  t.equal(put.status, 200);
  const revision = ((await put.json()) as { header: { revision: string } }).header.revision;
  const ev = await nextResult();
  t.equal(ev.events[0].kv.key, b64('h/1'));
  t.equal(ev.header.revision, revision, 'the event comes at the put revision');
  const range = (await (await post('/v3/kv/range', { key: b64('h/1') })).json()) as {
    kvs: Array<{ value: string }>;
  };
  t.equal(range.kvs[0]?.value, b64('v'));
  await reader.cancel();
});

t.test(
  'a crash between recording the identity and the first Raft write is survivable',
  async (t) => {
    const dir = t.testdir();
    const config = singleConfig(dir);
    // What a member leaves behind if it dies right after establishIdentity.
    const db = new Level(join(dir, 'db'));
    await db.open();
    const cluster = newCluster(config);
    const self = cluster.members[0]!;
    await MemberRegistry.create(
      db,
      { id: self.id, name: 'm1', token: config.initialClusterToken },
      cluster,
    );
    await db.close();
    const m = await startSingle(dir);
    t.teardown(() => m.stop());
    t.equal(m.id, self.id);
    await m.write({ op: 'put', key: enc('alive'), value: enc('1') });
    t.ok(m.health().health, 'Raft was bootstrapped from the recorded membership');
  },
);

t.test('a port in use fails the start and releases the data dir', async (t) => {
  const dir = t.testdir();
  const first = await startSingle(dir);
  const port = first.clientUrls[0]!.port;
  await first.stop();
  const blocker = await startSingle(`${dir}-other`);
  t.teardown(() => blocker.stop());
  await t.rejects(
    startSingle(dir, { listenClientUrls: `http://127.0.0.1:${blocker.clientUrls[0]!.port}` }),
    { code: 'EADDRINUSE' },
  );
  const again = await startSingle(dir, { listenClientUrls: `http://127.0.0.1:${port}` });
  t.ok(again.id > 0, 'the database was closed cleanly and opens again');
  await again.stop();
});
