/**
 * The typed client against the API over the store double: every call's decoded answer, the
 * error mapping to catalogue codes, the lease keeper, and endpoint failover.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { Client, ClientError, isClientError, text } from '../../src/client/index.js';
import { freePort, startDouble } from '../api/servers.js';

async function setup(t: Test) {
  const target = await startDouble(t.testdir());
  const client = new Client({ endpoints: [target.url] });
  t.teardown(async () => {
    client.close();
    await target.close();
  });
  return { client, target };
}

const strings = (kvs: Array<{ key: Uint8Array; value: Uint8Array }>) =>
  kvs.map((kv) => `${text(kv.key)}=${text(kv.value)}`);

t.test('kv: put, get with selectors, delete', async (t) => {
  const { client } = await setup(t);
  const p1 = await client.put('app/a', '1');
  t.equal(p1.header.revision, 2);
  t.equal(p1.header.memberId.length > 0, true);
  const p2 = await client.put('app/a', '2', { prevKv: true });
  t.equal(text(p2.prevKv?.value ?? new Uint8Array()), '1');
  await client.put('app/b', new Uint8Array([0, 255]));
  await client.put('zzz', 'last');

  const one = await client.get('app/a');
  t.same(strings(one.kvs), ['app/a=2']);
  t.match(one.kvs[0], { createRevision: 2, modRevision: 3, version: 2, lease: '0' });
  t.same(strings((await client.get('app/', { prefix: true })).kvs), [
    'app/a=2',
    `app/b=${text(new Uint8Array([0, 255]))}`,
  ]);
  t.same(
    strings((await client.get('app/b', { fromKey: true })).kvs).length,
    2,
    'from-key reads to the end',
  );
  const limited = await client.get('', { fromKey: true, limit: 1, sortOrder: 'DESCEND' });
  t.same(strings(limited.kvs), ['zzz=last']);
  t.equal(limited.more, true);
  t.equal(limited.count, 3);
  t.equal((await client.get('app/', { prefix: true, countOnly: true })).count, 2);
  t.same(strings((await client.get('app/a', { revision: 2 })).kvs), ['app/a=1'], 'a past revision');

  const del = await client.delete('app/', { prefix: true, prevKv: true });
  t.equal(del.deleted, 2);
  t.equal(del.prevKvs.length, 2);
  t.equal((await client.get('app/', { prefix: true })).count, 0);
});

t.test('txn: compares, branches, nested answers', async (t) => {
  const { client } = await setup(t);
  await client.put('k', 'v');
  const r = await client.txn({
    compare: [
      { key: 'k', target: 'VALUE', result: 'EQUAL', value: 'v' },
      { key: 'k', target: 'VERSION', result: 'GREATER', version: 0 },
    ],
    success: [
      { put: { key: 'k', value: 'w', prevKv: true } },
      { range: { key: 'k' } },
      {
        txn: {
          compare: [{ key: 'x', target: 'CREATE', result: 'EQUAL', createRevision: 0 }],
          success: [{ put: { key: 'x', value: '1' } }],
        },
      },
      { delete: { key: 'nothing' } },
    ],
    failure: [{ put: { key: 'failed', value: '1' } }],
  });
  t.equal(r.succeeded, true);
  t.equal(r.header.revision, 3);
  t.same(
    r.responses.map((x) => x.type),
    ['put', 'range', 'txn', 'delete'],
  );
  const [put, range, nested, del] = r.responses;
  t.match(put, { type: 'put', revision: 3 });
  t.equal(put?.type === 'put' ? text(put.prevKv?.value ?? new Uint8Array()) : '', 'v');
  t.same(
    range?.type === 'range' ? strings(range.kvs) : [],
    ['k=w'],
    'a range sees the txn’s own put',
  );
  t.match(nested, { type: 'txn', succeeded: true, responses: [{ type: 'put', revision: 3 }] });
  t.match(del, { type: 'delete', deleted: 0 });
  const failed = await client.txn({
    compare: [{ key: 'k', target: 'MOD', result: 'LESS', modRevision: 1 }],
  });
  t.equal(failed.succeeded, false);
  t.same(failed.responses, []);
});

t.test('errors carry the catalogue code', async (t) => {
  const { client } = await setup(t);
  await client.put('a', '1');
  await client.put('a', '2');
  await client.compact(3);
  const err = await client.get('a', { revision: 2 }).catch((e: unknown) => e);
  t.ok(isClientError(err, 'ERR_COMPACTED'), 'compacted');
  t.match(err, {
    grpcCode: 11,
    httpStatus: 400,
    message: 'etcdserver: mvcc: required revision has been compacted',
  });
  t.ok(isClientError(await client.put('', 'x').catch((e: unknown) => e), 'ERR_EMPTY_KEY'));
  t.ok(isClientError(await client.leaseRevoke(99).catch((e: unknown) => e), 'ERR_LEASE_NOT_FOUND'));
  const bad = await client.transport
    .post('/v3/kv/range', { key: 'YQ', extra: 1 })
    .catch((e: unknown) => e);
  t.ok(
    isClientError(bad, 'ERR_UNKNOWN_FIELD'),
    'an etcetera detail after the catalogue text still maps',
  );
});

t.test('leases: grant, time to live, keepalive, list, revoke, keeper', async (t) => {
  const { client } = await setup(t);
  const g = await client.leaseGrant(30, 500);
  t.same([g.id, g.ttl], ['500', 30]);
  await client.put('leased', 'v', { lease: g.id });
  const ttl = await client.leaseTimeToLive(g.id, { keys: true });
  t.match(ttl, { id: '500', grantedTtl: 30 });
  t.same(ttl.keys.map(text), ['leased']);
  t.equal((await client.leaseKeepAliveOnce(500n)).ttl, 30);
  t.same((await client.leases()).leases, ['500']);
  const auto = await client.leaseGrant(10);
  t.ok(BigInt(auto.id) > 0n, 'the server picks an ID');

  const renewals: number[] = [];
  let lost = false;
  const keeper = client.leaseKeepAlive(g.id, {
    intervalMs: 30,
    onRenew: (r) => renewals.push(r.ttl),
    onLost: () => (lost = true),
  });
  await new Promise((r) => setTimeout(r, 120));
  t.ok(renewals.length >= 2, `renewed ${renewals.length} times`);
  await client.leaseRevoke(g.id);
  await new Promise((r) => setTimeout(r, 100));
  t.ok(lost, 'the keeper reports the lease gone');
  t.notOk(keeper.running);
  t.equal((await client.get('leased')).count, 0, 'its key went with it');
  t.equal((await client.leaseTimeToLive(g.id)).ttl, -1);
});

t.test('members, status, health, version', async (t) => {
  const { client } = await setup(t);
  const list = await client.memberList();
  t.equal(list.members.length, 1);
  t.match(list.members[0], { name: 'default', isLearner: false });
  const added = await client.memberAdd(['http://127.0.0.1:9'], { isLearner: true });
  t.match(added.member, { isLearner: true, peerURLs: ['http://127.0.0.1:9'] });
  await client.memberPromote(added.member.id);
  const removed = await client.memberRemove(added.member.id);
  t.equal(removed.members.length, 1);
  const s = await client.status();
  t.match(s, { version: '3.4.23', isLearner: false, errors: [] });
  t.equal(s.leader, s.header.memberId);
  t.same(await client.health(), { health: true, reason: '' });
  t.same(await client.version(), { etcdserver: '3.4.23', etcdcluster: '3.4.0' });
});

/** A server that counts requests and breaks each connection without answering. */
async function breaker(): Promise<{ url: string; hits: () => number; server: Server }> {
  let hits = 0;
  const server = createServer((req) => {
    hits++;
    req.socket.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits: () => hits,
    server,
  };
}

t.test(
  'failover: refused connections move on; writes that may have arrived are not repeated',
  async (t) => {
    const target = await startDouble(t.testdir());
    const dead = `http://127.0.0.1:${await freePort()}`;
    const broken = await breaker();
    t.teardown(async () => {
      broken.server.close();
      await target.close();
    });
    const viaDead = new Client({ endpoints: [dead, target.url] });
    await viaDead.put('k', 'v');
    t.equal((await viaDead.get('k')).count, 1, 'a refused endpoint is skipped');
    viaDead.close();

    const viaBroken = new Client({ endpoints: [broken.url, target.url] });
    const err = await viaBroken.put('k', 'w').catch((e: unknown) => e);
    t.ok(err instanceof ClientError && err.httpStatus === 0, 'a write cut off mid-request fails');
    t.equal(broken.hits(), 1, 'and is not sent again');
    t.equal(
      text((await viaBroken.get('k')).kvs[0]?.value ?? new Uint8Array()),
      'v',
      'a read moves on to the next endpoint',
    );
    t.equal(broken.hits(), 2);
    viaBroken.close();

    const none = new Client({ endpoints: [dead], timeoutMs: 1000 });
    const down = await none.get('k').catch((e: unknown) => e);
    t.match(down, { grpcCode: 14, httpStatus: 0 });
    none.close();
  },
);

t.test('watch over the server: events once and in order across dropped connections', async (t) => {
  const target = await startDouble(t.testdir());
  const writer = new Client({ endpoints: [target.url] });
  const watcher = new Client({ endpoints: [target.url] });
  t.teardown(async () => {
    writer.close();
    watcher.close();
    await target.close();
  });
  await writer.put('w/0', 'before');
  const seen: string[] = [];
  const watch = watcher.watch('w/', { prefix: true, startRevision: 2, prevKv: true }, (b) => {
    for (const e of b.events) seen.push(`${e.type} ${text(e.kv.key)}@${e.kv.modRevision}`);
  });
  await watch.ready;
  for (let round = 0; round < 3; round++) {
    for (let i = 1; i <= 5; i++) await writer.put(`w/${i}`, `r${round}`);
    await writer.delete(`w/${round + 1}`);
    // Cut every open connection (the watch stream among them); the watch resumes.
    target.server.closeAllConnections();
  }
  const until = Date.now() + 5000;
  while (seen.length < 1 + 3 * 6 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  await watch.close();
  t.equal(seen.length, 19, 'every change once');
  t.same(seen[0], 'PUT w/0@2', 'from the start revision');
  const revs = seen.map((s) => Number(s.split('@')[1]));
  t.same(
    revs,
    [...revs].sort((a, b) => a - b),
    'in revision order',
  );
  t.equal(new Set(revs).size, revs.length, 'no revision twice');
});
