/**
 * The API tier (`etcetera proxy`, src/tier) in front of a real etcd 3.4: etcdctl and
 * src/client through it, writes made directly to etcd seen once by the tier's watchers,
 * history below the tier's cache window read from the upstream, many client watches on one
 * upstream watch (the tier's metrics and etcd's own watcher count), consistent reads that
 * leave the cache caught up, leases and member lists through the tier.
 * One etcd and one tier for the whole file; skipped, with the reason printed, without etcd.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import { Client, isClientError, text } from '../../src/client/index.js';
import { silentLogger } from '../../src/server/logger.js';
import { parseProxyArgs, type RunningProxy, startProxy } from '../../src/tier/proxy.js';
import { etcdUnavailable, startEtcd } from '../api/servers.js';
import { waitFor } from '../server/helpers.js';

const exec = promisify(execFile);
const skip = etcdUnavailable() ?? false;

/** A gauge's value from a /metrics text. */
function metric(body: string, name: string): number {
  const line = body.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line === undefined ? Number.NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
}
const metrics = async (url: string) => (await fetch(`${url}/metrics`)).text();

t.test('the tier in front of etcd', { skip }, async (t) => {
  const etcd = await startEtcd(t.testdir());
  const direct = new Client({ endpoints: [etcd.url] });
  // Written before the tier starts: below its cache window, so served from etcd's history.
  await direct.put('old/1', 'a');
  await direct.put('old/2', 'b');
  await direct.delete('old/1');
  const proxy: RunningProxy = await startProxy(
    parseProxyArgs(['--endpoints', etcd.url, '--listen-client-urls', 'http://127.0.0.1:0']),
    { logger: silentLogger() },
  );
  const url = proxy.clientUrls[0]!.href.replace(/\/$/, '');
  const client = new Client({ endpoints: [url] });
  t.teardown(async () => {
    client.close();
    direct.close();
    await proxy.stop();
    await etcd.close();
  });
  const etcdctl = (...args: string[]) => exec('etcdctl', ['--endpoints', url, ...args]);

  await t.test('etcdctl put, get and watch through the tier', async (t) => {
    const watch = execFile('etcdctl', ['--endpoints', url, 'watch', 'ctl/', '--prefix']);
    let out = '';
    watch.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const exited = new Promise((r) => watch.once('exit', r));
    // etcdctl prints nothing when its watch is created: wait until the tier has it.
    await waitFor(
      'etcdctl watch',
      async () => metric(await metrics(url), 'etcetera_tier_watchers') >= 1,
      10_000,
    );
    t.equal((await etcdctl('put', 'ctl/a', 'one')).stdout, 'OK\n');
    t.equal((await etcdctl('get', 'ctl/a')).stdout, 'ctl/a\none\n');
    t.equal((await etcdctl('del', 'ctl/a')).stdout, '1\n');
    await waitFor('the watch output', () => out.includes('DELETE'), 10_000);
    watch.kill('SIGTERM');
    await exited;
    t.equal(out, 'PUT\nctl/a\none\nDELETE\nctl/a\n\n');
  });

  await t.test('a write made directly to etcd reaches a tier watcher once', async (t) => {
    const seen: string[] = [];
    const w = client.watch('d/', { prefix: true }, (b) => {
      for (const e of b.events) seen.push(`${e.type} ${text(e.kv.key)}=${text(e.kv.value)}`);
    });
    await w.ready;
    await direct.put('d/x', '1');
    await direct.put('d/x', '2');
    await direct.delete('d/x');
    await waitFor('three events', () => seen.length >= 3);
    // A later write proves nothing more was coming for the first three.
    await direct.put('d/end', 'e');
    await waitFor('the fourth event', () => seen.length >= 4);
    t.same(seen, ['PUT d/x=1', 'PUT d/x=2', 'DELETE d/x=', 'PUT d/end=e']);
    await w.close();
  });

  await t.test('a watch from before the cache window is served from etcd history', async (t) => {
    const seen: string[] = [];
    const w = client.watch('old/', { prefix: true, startRevision: 2, prevKv: true }, (b) => {
      for (const e of b.events)
        seen.push(
          `${e.type} ${text(e.kv.key)}@${e.kv.modRevision}${e.prevKv ? ` prev=${text(e.prevKv.value)}` : ''}`,
        );
    });
    await waitFor('the old events', () => seen.length >= 3);
    await direct.put('old/3', 'c');
    await waitFor('a live event after them', () => seen.length >= 4);
    t.same(seen.slice(0, 3), ['PUT old/1@2', 'PUT old/2@3', 'DELETE old/1@4 prev=a']);
    t.match(seen[3], /^PUT old\/3@\d+$/);
    await w.close();
  });

  await t.test('1,000 client watches of one prefix are one upstream watch', async (t) => {
    const n = 1000;
    const counts = new Array<number>(n).fill(0);
    const watchers = Array.from({ length: n }, (_, i) =>
      client.watch('many/', { prefix: true }, (b) => {
        counts[i]! += b.events.length;
      }),
    );
    await Promise.all(watchers.map((w) => w.ready));
    await direct.put('many/k', 'v');
    await waitFor('every watcher got the event', () => counts.every((c) => c >= 1), 20_000);
    const m = await metrics(url);
    t.ok(metric(m, 'etcetera_tier_watchers') >= n, 'the tier serves them all');
    t.equal(metric(m, 'etcetera_tier_upstream_watches'), 1, 'one upstream watch');
    t.ok(metric(m, 'etcetera_tier_coalescing_ratio') >= n, 'ratio');
    // etcd's own count of its watchers: the tier's one.
    t.equal(metric(await metrics(etcd.url), 'etcd_debugging_mvcc_watcher_total'), 1);
    t.same(new Set(counts), new Set([1]), 'each watcher saw the event once');
    await Promise.all(watchers.map((w) => w.close()));
  });

  await t.test('a consistent read leaves the cache caught up with its answer', async (t) => {
    await direct.put('cr/k', 'v');
    const r = await client.get('cr/k');
    t.equal(text(r.kvs[0]!.value), 'v');
    t.ok(proxy.member.watchSource.currentRevision >= r.header.revision);
    t.equal(metric(await metrics(url), 'etcetera_tier_upstream_lag_revisions'), 0);
  });

  await t.test('txns through the tier answer as etcd does', async (t) => {
    const txn = {
      compare: [{ key: 'txn/k', target: 'VERSION' as const, result: 'EQUAL' as const, version: 0 }],
      success: [
        { put: { key: 'txn/k', value: 'one', prevKv: true } },
        { range: { key: 'txn/', prefix: true } },
      ],
      failure: [
        { delete: { key: 'txn/k', prevKv: true } },
        { range: { key: 'txn/', prefix: true } },
      ],
    };
    const first = await client.txn(txn);
    t.equal(first.succeeded, true);
    t.match(first.responses, [{ type: 'put' }, { type: 'range', count: 1 }]);
    const second = await client.txn(txn);
    t.equal(second.succeeded, false, 'the compare saw the first txn');
    t.equal(second.responses[0]?.type, 'delete');
    const del = second.responses[0] as { deleted: number; prevKvs: { value: Uint8Array }[] };
    t.equal(del.deleted, 1);
    t.same(
      del.prevKvs.map((kv) => text(kv.value)),
      ['one'],
    );
    t.equal((await direct.get('txn/k')).kvs.length, 0, 'etcd applied both');
  });

  await t.test('leases through the tier', async (t) => {
    const l = await client.leaseGrant(30);
    t.ok(BigInt(l.id) < 2n ** 53n, 'the tier chose an ID the member contract carries');
    await client.put('lease/k', 'v', { lease: l.id });
    const ttl = await client.leaseTimeToLive(l.id, { keys: true });
    t.same(ttl.keys.map(text), ['lease/k']);
    t.ok((await client.leaseKeepAliveOnce(l.id)).ttl > 0);
    await client.leaseRevoke(l.id);
    t.equal((await direct.get('lease/k')).kvs.length, 0, 'the revoke reached etcd');
  });

  await t.test('member lists name the tier', async (t) => {
    const { members } = await client.memberList();
    t.equal(members.length, 1);
    t.same(members[0]!.clientURLs, [url]);
    t.equal(members[0]!.name, 'default', 'the upstream member, with the tier as its client URL');
  });

  await t.test('a compaction through the tier ends watches from before it', async (t) => {
    const { header } = await client.put('cmp/k', 'v');
    await client.compact(header.revision);
    const err = await new Promise<unknown>((resolve) => {
      client.watch('cmp/', { prefix: true, startRevision: 2 }, () => undefined, {
        onError: resolve,
      });
    });
    t.ok(isClientError(err, 'ERR_COMPACTED'), String(err));
  });
});
