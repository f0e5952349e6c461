/**
 * The client against the real etcd 3.4: the shared suite over gRPC and over the JSON
 * gateway, and what only gRPC has: one stream carrying every watch, a watch that resumes
 * exactly once across a kill -9 and restart of the member, failover that never repeats a
 * write, the maintenance calls, and the snapshot stream with its SHA-256 trailer.
 * Skipped, with the reason printed, where etcd is not installed.
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { Client, type ClientError, isClientError, text } from '../../src/client/index.js';
import { etcdUnavailable, freePort, startEtcd } from '../api/servers.js';
import { clientSuite, proxy } from './suite.js';

const skip = etcdUnavailable() ?? false;

t.test('the suite over gRPC against etcd', { skip }, async (t) => {
  clientSuite(t, (dir) => startEtcd(dir), { transport: 'grpc', etcd: true });
});

t.test('the suite over the JSON gateway against etcd', { skip }, async (t) => {
  clientSuite(t, (dir) => startEtcd(dir), { transport: 'json', etcd: true });
});

const until = async (cond: () => boolean, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
};

async function etcdWithClient(t: Test) {
  const etcd = await startEtcd(t.testdir());
  const client = new Client({ endpoints: [etcd.url] });
  t.teardown(async () => {
    client.close();
    await etcd.close();
  });
  return { etcd, client };
}

t.test('one gRPC connection carries every watch and call of a client', { skip }, async (t) => {
  const etcd = await startEtcd(t.testdir());
  const front = await proxy(etcd.url);
  const client = new Client({ endpoints: [front.url] });
  t.teardown(async () => {
    client.close();
    await front.close();
    await etcd.close();
  });
  const seen: string[][] = [[], [], []];
  const watches = ['a', 'b', 'c'].map((k, i) =>
    client.watch(k, { prefix: true }, (b) => {
      for (const e of b.events) seen[i]?.push(`${text(e.kv.key)}=${text(e.kv.value)}`);
    }),
  );
  await Promise.all(watches.map((w) => w.ready));
  for (const k of ['a1', 'b1', 'c1', 'a2']) await client.put(k, k.toUpperCase());
  await until(() => seen.flat().length === 4);
  t.same(seen, [['a1=A1', 'a2=A2'], ['b1=B1'], ['c1=C1']], 'each watch gets its own keys');
  await watches[1]?.close();
  await client.put('b2', 'B2');
  await client.put('a3', 'A3');
  await until(() => seen[0]?.length === 3);
  t.same(seen[1], ['b1=B1'], 'a cancelled watch gets nothing more');
  t.equal(front.connections(), 1, 'three watches and the puts over one connection');
  for (const w of watches) await w.close();
});

t.test('a gRPC watch resumes exactly once across kill -9 and restart', { skip }, async (t) => {
  const dir = t.testdir();
  let etcd = await startEtcd(dir);
  const ports = etcd.ports;
  const watcher = new Client({ endpoints: [etcd.url] });
  t.teardown(async () => {
    watcher.close();
    await etcd.close();
  });
  const seen: string[] = [];
  const watch = watcher.watch('k/', { prefix: true }, (b) => {
    for (const e of b.events) seen.push(`${e.type} ${text(e.kv.key)}@${e.kv.modRevision}`);
  });
  await watch.ready;
  const write = async (round: number) => {
    const writer = new Client({ endpoints: [etcd.url] });
    for (let i = 0; i < 5; i++) await writer.put(`k/${i}`, `r${round}`);
    await writer.delete('k/0');
    writer.close();
  };
  await write(0);
  await until(() => seen.length === 6);
  for (let round = 1; round <= 2; round++) {
    process.kill(etcd.pid, 'SIGKILL');
    await etcd.close();
    etcd = await startEtcd(dir, ports);
    // Written at once, likely before the watch is back: it must replay them.
    await write(round);
  }
  await until(() => seen.length === 18);
  await new Promise((r) => setTimeout(r, 200));
  await watch.close();
  t.ok(watch.reconnects >= 2, `reconnected ${watch.reconnects} times`);
  t.equal(seen.length, 18, 'every change once');
  const revs = seen.map((s) => Number(s.split('@')[1]));
  t.same(
    revs,
    Array.from({ length: 18 }, (_, i) => i + 2),
    'revisions 2..19, in order, none twice',
  );
});

t.test('a watch from a compacted revision ends with ERR_COMPACTED', { skip }, async (t) => {
  const { client } = await etcdWithClient(t);
  for (let i = 0; i < 3; i++) await client.put('k', String(i));
  await client.compact(4);
  let ended: ClientError | undefined;
  const watch = client.watch('k', { startRevision: 2 }, () => t.fail('no events'), {
    onError: (e) => {
      ended = e;
    },
  });
  await until(() => ended !== undefined);
  t.ok(isClientError(ended, 'ERR_COMPACTED'), 'compacted');
  t.equal(watch.reconnects, 0, 'not retried');
});

t.test(
  'gRPC failover: a refused endpoint is skipped; a write that may have arrived is not repeated',
  { skip },
  async (t) => {
    const { etcd } = await etcdWithClient(t);
    const dead = `http://127.0.0.1:${await freePort()}`;
    const viaDead = new Client({ endpoints: [dead, etcd.url] });
    await viaDead.put('k', 'v');
    t.equal((await viaDead.get('k')).count, 1, 'went to the live endpoint');
    viaDead.close();

    // An HTTP/2 server that takes each call and resets it unanswered.
    let hits = 0;
    const broken = createServer();
    broken.on('stream', (stream) => {
      hits++;
      stream.on('error', () => undefined);
      stream.close(2); // INTERNAL_ERROR
    });
    await new Promise<void>((r) => broken.listen(0, '127.0.0.1', r));
    t.teardown(() => broken.close());
    const viaBroken = new Client({
      endpoints: [`http://127.0.0.1:${(broken.address() as AddressInfo).port}`, etcd.url],
    });
    const err = await viaBroken.put('k', 'w').catch((e: unknown) => e);
    t.match(err, { httpStatus: 0 }, 'the write fails');
    t.equal(hits, 1, 'and is not sent again');
    t.equal(text((await viaBroken.get('k')).kvs[0]?.value ?? new Uint8Array()), 'v');
    t.equal(hits, 2, 'a read moved on to the next endpoint');
    viaBroken.close();

    const none = new Client({ endpoints: [dead], timeoutMs: 1000 });
    t.match(await none.get('k').catch((e: unknown) => e), { grpcCode: 14, httpStatus: 0 });
    none.close();
  },
);

t.test(
  'maintenance over gRPC: status, alarms, defragment, hashkv, move-leader',
  { skip },
  async (t) => {
    const { client } = await etcdWithClient(t);
    await client.put('k', 'v');
    const s = await client.status();
    t.match(s, { version: '3.4.23', errors: [] });
    t.same((await client.alarmList()).alarms, []);
    t.same((await client.alarmDisarm()).alarms, []);
    await client.defragment();
    const h1 = await client.hashKv();
    await client.put('k', 'w');
    const h2 = await client.hashKv();
    t.not(h1.hash, h2.hash, 'the hash covers the new version');
    t.equal((await client.hashKv(h1.header.revision)).hash, h1.hash, 'a past revision');
    const err = await client.moveLeader('12345').catch((e: unknown) => e);
    t.match(err, { message: 'etcdserver: bad leader transferee', httpStatus: 200 });
  },
);

t.test('snapshot stream: the database with a SHA-256 trailer', { skip }, async (t) => {
  const { client } = await etcdWithClient(t);
  for (let i = 0; i < 50; i++) await client.put(`k${i}`, 'x'.repeat(1000));
  const chunks: Uint8Array[] = [];
  for await (const c of client.snapshot()) chunks.push(c);
  const all = Buffer.concat(chunks);
  t.ok(all.length > 50_000, `${all.length} bytes`);
  const body = all.subarray(0, all.length - 32);
  t.same(
    createHash('sha256').update(body).digest('hex'),
    all.subarray(all.length - 32).toString('hex'),
    'the trailer is the SHA-256 of the rest',
  );
});
