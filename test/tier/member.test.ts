/**
 * The API tier in front of an etcetera member (both in this process): src/client and the
 * etcd JSON API through the tier, a write made directly to the member seen once by a tier
 * watcher, two tiers over one member (a write through one is seen by the other's watchers),
 * and kubectl through the tier's Kubernetes face (skipped, with the reason, without kubectl).
 */
import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { Client, text } from '../../src/client/index.js';
import { silentLogger } from '../../src/server/logger.js';
import { parseProxyArgs, type RunningProxy, startProxy } from '../../src/tier/proxy.js';
import { startMember } from '../api/servers.js';
import { writeKubeconfig } from '../k8s/kubeconfig.js';
import { waitFor } from '../server/helpers.js';

const exec = promisify(execFile);

function findKubectl(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const p = join(dir, 'kubectl');
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {}
  }
  return undefined;
}

/** A TCP forwarder to `target` that can refuse and cut its connections for a while. */
async function forwarder(target: string) {
  const to = new URL(target);
  const sockets = new Set<Socket>();
  let holding = false;
  const server = createServer((inbound) => {
    if (holding) {
      inbound.destroy();
      return;
    }
    const outbound = connect(Number(to.port), to.hostname);
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    hold() {
      holding = true;
      for (const s of sockets) s.destroy();
    },
    release() {
      holding = false;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

const tierOver = (endpoint: string): Promise<RunningProxy> =>
  startProxy(
    parseProxyArgs(['--endpoints', endpoint, '--listen-client-urls', 'http://127.0.0.1:0']),
    { logger: silentLogger() },
  );
const urlOf = (p: RunningProxy) => p.clientUrls[0]!.href.replace(/\/$/, '');

t.test('the tier in front of an etcetera member', async (t) => {
  const upstream = await startMember(join(t.testdir(), 'm'));
  const a = await tierOver(upstream.url);
  const b = await tierOver(upstream.url);
  const direct = new Client({ endpoints: [upstream.url] });
  const ca = new Client({ endpoints: [urlOf(a)] });
  const cb = new Client({ endpoints: [urlOf(b)] });
  t.teardown(async () => {
    ca.close();
    cb.close();
    direct.close();
    await a.stop();
    await b.stop();
    await upstream.close();
  });

  await t.test('put, get and watch through the tier; direct writes seen once', async (t) => {
    const seen: string[] = [];
    // From revision 1 of a fresh cluster: nothing to read from the upstream's history.
    const w = ca.watch('k/', { prefix: true, startRevision: 1 }, (batch) => {
      for (const e of batch.events) seen.push(`${e.type} ${text(e.kv.key)}=${text(e.kv.value)}`);
    });
    await w.ready;
    await new Promise((r) => setImmediate(r));
    t.equal(a.member.watchSource.upstreamWatches, 1, 'no history read is held open upstream');
    await ca.put('k/1', 'via-tier');
    await direct.put('k/2', 'direct');
    await direct.delete('k/1');
    await waitFor('three events', () => seen.length >= 3);
    const r = await ca.get('k/', { prefix: true });
    t.same(
      r.kvs.map((kv) => text(kv.key)),
      ['k/2'],
    );
    await ca.put('k/end', 'e');
    await waitFor('the last event', () => seen.length >= 4);
    t.same(seen, ['PUT k/1=via-tier', 'PUT k/2=direct', 'DELETE k/1=', 'PUT k/end=e']);
    await w.close();
  });

  await t.test('the etcd JSON API through the tier', async (t) => {
    const key = Buffer.from('json/k').toString('base64');
    const put = await fetch(`${urlOf(a)}/v3/kv/put`, {
      method: 'POST',
      body: JSON.stringify({ key, value: Buffer.from('v').toString('base64') }),
    });
    t.equal(put.status, 200);
    const got = await fetch(`${urlOf(a)}/v3/kv/range`, {
      method: 'POST',
      body: JSON.stringify({ key }),
    });
    const body = (await got.json()) as { kvs: { value: string }[] };
    t.equal(Buffer.from(body.kvs[0]!.value, 'base64').toString(), 'v');
    const bad = await fetch(`${urlOf(a)}/v3/kv/put`, {
      method: 'POST',
      body: JSON.stringify({ key: '', value: 'dg==' }),
    });
    t.equal(bad.status, 400, 'the upstream refusal comes back as the member would answer it');
    t.match(await bad.text(), /key is not provided/);
  });

  await t.test('a write through one tier reaches the watchers of another', async (t) => {
    const seen: string[] = [];
    const w = cb.watch('x/', { prefix: true }, (batch) => {
      for (const e of batch.events) seen.push(`${text(e.kv.key)}=${text(e.kv.value)}`);
    });
    await w.ready;
    for (let i = 0; i < 5; i++) await ca.put(`x/${i}`, String(i));
    await waitFor('five events on the other tier', () => seen.length >= 5);
    t.same(seen, ['x/0=0', 'x/1=1', 'x/2=2', 'x/3=3', 'x/4=4']);
    await w.close();
  });

  await t.test('an upstream compacted past the tier resets its cache', async (t) => {
    const fwd = await forwarder(upstream.url);
    const tier = await tierOver(fwd.url);
    const client = new Client({ endpoints: [urlOf(tier)] });
    t.teardown(async () => {
      client.close();
      await tier.stop();
      await fwd.close();
    });
    const seen: string[] = [];
    let ended: unknown;
    const w = client.watch(
      'r/',
      { prefix: true },
      (b) => {
        for (const e of b.events) seen.push(text(e.kv.key));
      },
      { onError: (e) => (ended = e) },
    );
    await w.ready;
    await direct.put('r/1', 'a');
    await waitFor('the first event', () => seen.length === 1);
    // The tier loses the upstream; meanwhile the events it missed are compacted away.
    fwd.hold();
    await waitFor('the tier notices', () => !tier.member.health().health);
    await direct.put('r/2', 'b');
    const { header } = await direct.put('r/3', 'c');
    await direct.compact(header.revision);
    fwd.release();
    await waitFor('the reset', () => tier.member.watchSource.resets === 1, 10_000);
    await waitFor('the old watcher ends', () => ended !== undefined);
    t.match(String(ended), /compacted/, 'a watcher behind the reset ends with compacted');
    t.same(seen, ['r/1'], 'and never saw a made-up or repeated event');
    t.ok(tier.member.watchSource.currentRevision >= header.revision);
    t.ok(tier.member.watchSource.compactRevision >= header.revision, 'the compaction is known');
    const after: string[] = [];
    const w2 = client.watch('r/', { prefix: true }, (b) => {
      for (const e of b.events) after.push(text(e.kv.key));
    });
    await w2.ready;
    await direct.put('r/4', 'd');
    await waitFor('a new watch works', () => after.length === 1);
    t.same(after, ['r/4']);
    t.equal(tier.member.health().health, true);
    await w2.close();
  });

  const kubectl = findKubectl();
  await t.test(
    'kubectl through the tier',
    { skip: kubectl ? false : 'kubectl is not on PATH' },
    async (t) => {
      const dir = t.testdir();
      const config = writeKubeconfig(dir, urlOf(a));
      const env = { ...process.env, KUBECONFIG: config, HOME: dir };
      const run = (...args: string[]) => exec(kubectl as string, args, { env, timeout: 30_000 });
      const created = await run('create', 'configmap', 'cm1', '--from-literal=a=1');
      t.match(created.stdout, /configmap\/cm1 created/);
      // The object went to the upstream member, and the other tier serves it too.
      const other = await fetch(`${urlOf(b)}/api/v1/namespaces/default/configmaps/cm1`);
      t.equal(other.status, 200);
      t.match(((await other.json()) as { data: { a: string } }).data, { a: '1' });
      const got = await run('get', 'configmap', 'cm1', '-o', 'jsonpath={.data.a}');
      t.equal(got.stdout, '1');
      await run('delete', 'configmap', 'cm1');
      const gone = await run('get', 'configmaps', '-o', 'name');
      t.notMatch(gone.stdout, /cm1/);
    },
  );
});
