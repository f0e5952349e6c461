/**
 * Upstream failover of the API tier: a three-member etcd 3.4 cluster behind one tier; while
 * writes go on, the member the tier's upstream watch runs on is killed with SIGKILL. The
 * tier's watch moves to the next endpoint and resumes from the last revision it delivered,
 * so a client watcher on the tier sees exactly the history etcd recorded: every event once,
 * in order. Skipped, with the reason printed, without etcd.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { Client, text } from '../../src/client/index.js';
import { silentLogger } from '../../src/server/logger.js';
import { parseProxyArgs, startProxy } from '../../src/tier/proxy.js';
import { etcdUnavailable, freePort, waitHealthy } from '../api/servers.js';
import { waitFor } from '../server/helpers.js';

const skip = etcdUnavailable() ?? false;

interface EtcdMember {
  name: string;
  url: string;
  child: ChildProcess;
  exited: Promise<void>;
}

async function startCluster(dir: string): Promise<EtcdMember[]> {
  const names = ['e1', 'e2', 'e3'];
  const ports: { client: number; peer: number }[] = [];
  for (const _ of names) ports.push({ client: await freePort(), peer: await freePort() });
  const initial = names.map((n, i) => `${n}=http://127.0.0.1:${ports[i]!.peer}`).join(',');
  const members = names.map((name, i) => {
    const url = `http://127.0.0.1:${ports[i]!.client}`;
    const peer = `http://127.0.0.1:${ports[i]!.peer}`;
    const child = spawn(
      'etcd',
      [
        `--name=${name}`,
        `--data-dir=${join(dir, name)}`,
        `--listen-client-urls=${url}`,
        `--advertise-client-urls=${url}`,
        `--listen-peer-urls=${peer}`,
        `--initial-advertise-peer-urls=${peer}`,
        `--initial-cluster=${initial}`,
        '--initial-cluster-state=new',
        '--initial-cluster-token=tier-failover',
        '--heartbeat-interval=50',
        '--election-timeout=500',
        '--log-level=error',
      ],
      { stdio: 'ignore' },
    );
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    return { name, url, child, exited };
  });
  try {
    await Promise.all(members.map((m) => waitHealthy(m.url, 30_000)));
  } catch (e) {
    for (const m of members) m.child.kill('SIGKILL');
    throw e;
  }
  return members;
}

t.test('killing the upstream endpoint in use loses and repeats no event', { skip }, async (t) => {
  const cluster = await startCluster(t.testdir());
  const proxy = await startProxy(
    parseProxyArgs([
      '--endpoints',
      cluster.map((m) => m.url).join(','),
      '--listen-client-urls',
      'http://127.0.0.1:0',
    ]),
    { logger: silentLogger() },
  );
  const url = proxy.clientUrls[0]!.href.replace(/\/$/, '');
  const viaTier = new Client({ endpoints: [url] });
  // The tier starts on the first endpoint; the writer uses the other two.
  const victim = cluster[0]!;
  t.equal(proxy.member.watchSource.endpoint, new URL(victim.url).host, 'the watch runs on e1');
  const writer = new Client({ endpoints: cluster.slice(1).map((m) => m.url), timeoutMs: 5000 });
  t.teardown(async () => {
    viaTier.close();
    writer.close();
    await proxy.stop();
    for (const m of cluster) m.child.kill('SIGKILL');
    await Promise.all(cluster.map((m) => m.exited));
  });

  const seen: string[] = [];
  const w = viaTier.watch('f/', { prefix: true }, (b) => {
    for (const e of b.events)
      seen.push(`${text(e.kv.key)}@${e.kv.modRevision}=${text(e.kv.value)}`);
  });
  const first = await w.ready;

  const total = 60;
  for (let i = 0; i < total; i++) {
    if (i === 20) {
      victim.child.kill('SIGKILL');
      await victim.exited;
    }
    // A write that failed during the election is tried again; etcd's own history below is
    // the truth the watcher is compared with, so a write applied twice is no false alarm.
    for (let attempt = 0; ; attempt++) {
      try {
        await writer.put(`f/${i % 7}`, String(i));
        break;
      } catch (e) {
        if (attempt > 20) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
  const last = (await writer.get('f/', { prefix: true })).header.revision;
  await waitFor(
    'the tier delivered the last write',
    () => proxy.member.watchSource.currentRevision >= last,
    20_000,
  );

  // etcd's own record of the same range, read from a surviving member.
  const truth: string[] = [];
  const h = writer.watch('f/', { prefix: true, startRevision: first + 1 }, (b) => {
    for (const e of b.events)
      truth.push(`${text(e.kv.key)}@${e.kv.modRevision}=${text(e.kv.value)}`);
  });
  await waitFor(
    'etcd history',
    () => truth.length > 0 && truth.at(-1)!.includes(`@${last}=`),
    20_000,
  );
  await waitFor('the tier watcher', () => seen.length >= truth.length, 20_000);
  await h.close();
  await w.close();
  t.ok(truth.length >= total, `${truth.length} events recorded`);
  t.same(seen, truth, 'the tier watcher saw every event once, in order');
  t.not(proxy.member.watchSource.endpoint, new URL(victim.url).host, 'the watch moved on');
  t.ok(proxy.member.watchSource.reconnects >= 1);
  const m = await (await fetch(`${url}/metrics`)).text();
  const inUse = m
    .split('\n')
    .filter((l) => l.startsWith('etcetera_tier_upstream_endpoint{') && l.endsWith(' 1'));
  t.same(inUse, [
    `etcetera_tier_upstream_endpoint{endpoint="${proxy.member.watchSource.endpoint}"} 1`,
  ]);
});
