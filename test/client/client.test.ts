/**
 * The client against the store double (the shared suite in suite.ts), plus what only a
 * double allows: membership changes, and endpoint failover with broken servers.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { Client, ClientError, text } from '../../src/client/index.js';
import { freePort, startDouble } from '../api/servers.js';
import { clientSuite } from './suite.js';

clientSuite(t, (dir) => startDouble(dir), { transport: 'json' });

async function setup(t: Test) {
  const target = await startDouble(t.testdir());
  const client = new Client({ endpoints: [target.url], transport: 'json' });
  t.teardown(async () => {
    client.close();
    await target.close();
  });
  return { client, target };
}

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
    const viaDead = new Client({ endpoints: [dead, target.url], transport: 'json' });
    await viaDead.put('k', 'v');
    t.equal((await viaDead.get('k')).count, 1, 'a refused endpoint is skipped');
    viaDead.close();

    const viaBroken = new Client({ endpoints: [broken.url, target.url], transport: 'json' });
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

    const none = new Client({ endpoints: [dead], timeoutMs: 1000, transport: 'json' });
    const down = await none.get('k').catch((e: unknown) => e);
    t.match(down, { grpcCode: 14, httpStatus: 0 });
    none.close();
  },
);
