/**
 * The client against a server, written once and run against each server and transport the
 * tests have (client.test.ts: the store double; client-member.test.ts: a real member;
 * client-etcd.test.ts: the real etcd over gRPC and JSON): every call's decoded answer, the
 * error mapping to catalogue codes, the lease keeper, and a watch across cut connections.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { Test } from 'tap';
import { Client, isClientError, type Protocol, text } from '../../src/client/index.js';
import type { Target } from '../api/servers.js';

export type Start = (dir: string) => Promise<Target>;

export interface SuiteOptions {
  transport: Protocol;
  /** The real etcd (it ignores unknown JSON fields, which etcetera refuses). */
  etcd?: boolean;
}

/** A TCP proxy in front of a server, whose connections can all be cut at once (and are counted). */
export async function proxy(
  target: string,
): Promise<{ url: string; cut(): void; connections(): number; close(): Promise<void> }> {
  const to = new URL(target);
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server: Server = createServer((inbound) => {
    accepted++;
    const outbound = connect(Number(to.port), to.hostname);
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    inbound.pipe(outbound).pipe(inbound);
    inbound.on('close', () => outbound.destroy());
    outbound.on('close', () => inbound.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    cut: () => {
      for (const s of sockets) s.destroy();
    },
    connections: () => accepted,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

const strings = (kvs: Array<{ key: Uint8Array; value: Uint8Array }>) =>
  kvs.map((kv) => `${text(kv.key)}=${text(kv.value)}`);

export function clientSuite(t: Test, start: Start, o: SuiteOptions): void {
  const { transport } = o;
  const setup = async (t: Test) => {
    const target = await start(t.testdir());
    const client = new Client({ endpoints: [target.url], transport });
    t.equal(client.protocol, transport);
    t.teardown(async () => {
      client.close();
      await target.close();
    });
    return { client, target };
  };

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
    t.same(
      strings((await client.get('app/a', { revision: 2 })).kvs),
      ['app/a=1'],
      'a past revision',
    );

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
      // The gateway's HTTP status; over gRPC the answer is HTTP/2 200 with a grpc-status.
      httpStatus: transport === 'json' ? 400 : 200,
      message: 'etcdserver: mvcc: required revision has been compacted',
    });
    t.ok(isClientError(await client.put('', 'x').catch((e: unknown) => e), 'ERR_EMPTY_KEY'));
    t.ok(
      isClientError(await client.leaseRevoke(99).catch((e: unknown) => e), 'ERR_LEASE_NOT_FOUND'),
    );
    if (o.etcd) return;
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

  t.test(
    'watch over the server: events once and in order across dropped connections',
    async (t) => {
      const target = await start(t.testdir());
      const cutter = await proxy(target.url);
      const writer = new Client({ endpoints: [target.url], transport });
      const watcher = new Client({ endpoints: [cutter.url], transport });
      t.teardown(async () => {
        writer.close();
        watcher.close();
        await cutter.close();
        await target.close();
      });
      await writer.put('w/0', 'before');
      const seen: string[] = [];
      const watch = watcher.watch('w/', { prefix: true, startRevision: 2, prevKv: true }, (b) => {
        for (const e of b.events) seen.push(`${e.type} ${text(e.kv.key)}@${e.kv.modRevision}`);
      });
      await watch.ready;
      const waitSeen = async (n: number) => {
        const until = Date.now() + 5000;
        while (seen.length < n && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
      };
      for (let round = 0; round < 4; round++) {
        for (let i = 1; i <= 5; i++) await writer.put(`w/${i}`, `r${round}`);
        await writer.delete(`w/${round + 1}`);
        if (round === 3) break;
        // Once this round arrived over the stream, cut its connection: the next round is
        // written while the watch is away, and must arrive after it resumes.
        await waitSeen(1 + (round + 1) * 6);
        cutter.cut();
      }
      await waitSeen(25);
      await watch.close();
      t.ok(watch.reconnects >= 3, `reconnected ${watch.reconnects} times`);
      t.equal(seen.length, 25, 'every change once');
      t.same(seen[0], 'PUT w/0@2', 'from the start revision');
      const revs = seen.map((s) => Number(s.split('@')[1]));
      t.same(
        revs,
        [...revs].sort((a, b) => a - b),
        'in revision order',
      );
      t.equal(new Set(revs).size, revs.length, 'no revision twice');
    },
  );
}
