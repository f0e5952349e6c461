/**
 * Health endpoints of a three-member cluster through leader loss, over real HTTP: etcd's
 * /health, kube-apiserver's /livez, /readyz (?verbose, /readyz/<check>) and /healthz. With
 * two members stopped the survivor has no leader: /health is false with etcd's reason,
 * /readyz answers 500 naming the failed check, /livez still passes; once they are back,
 * everything passes again. An alarm turns /health false too.
 */
import t from 'tap';
import { waitFor } from './helpers.js';
import { LocalCluster } from './local-cluster.js';

async function get(base: string, path: string) {
  const res = await fetch(`${base}${path}`);
  return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
}

t.test('health, livez, readyz and healthz through leader loss', async (t) => {
  const c = await LocalCluster.start(t.testdir(), ['a', 'b', 'c']);
  t.teardown(() => c.close());
  const leader = await c.waitLeader();
  const survivor = c.running().find((m) => m !== leader)!;
  const others = [...c.nodes.values()].filter((n) => n.member !== survivor).map((n) => n.name);
  const base = survivor.clientUrls[0]!.href.replace(/\/$/, '');
  await survivor.write({ op: 'put', key: Buffer.from('k'), value: Buffer.from('v') });

  t.same(await get(base, '/health'), {
    status: 200,
    type: 'application/json',
    body: '{"health":"true"}',
  });
  t.same(await get(base, '/livez'), { status: 200, type: 'text/plain; charset=utf-8', body: 'ok' });
  t.same((await get(base, '/readyz')).body, 'ok');
  t.same((await get(base, '/healthz')).body, 'ok');
  t.equal(
    (await get(base, '/readyz?verbose')).body,
    '[+]ping ok\n[+]store ok\n[+]shutdown ok\n[+]leader ok\n[+]applied ok\n[+]watch-cache ok\nreadyz check passed\n',
  );
  t.equal(
    (await get(base, '/livez?verbose')).body,
    '[+]ping ok\n[+]store ok\nlivez check passed\n',
  );
  t.same(await get(base, '/readyz/leader'), {
    status: 200,
    type: 'text/plain; charset=utf-8',
    body: 'ok',
  });
  t.equal((await get(base, '/readyz/nonesuch')).status, 404);

  for (const n of others) await c.stopNode(n);
  await waitFor(
    'the survivor to lose its leader',
    async () => (await get(base, '/health')).status === 503,
    10_000,
  );
  t.same(await get(base, '/health'), {
    status: 503,
    type: 'application/json',
    body: '{"health":"false","reason":"RAFT NO LEADER"}',
  });
  t.same(
    (await get(base, '/health?serializable=true')).body,
    '{"health":"true"}',
    'serializable skips the leader',
  );
  const ready = await get(base, '/readyz');
  t.equal(ready.status, 500);
  t.match(
    ready.body,
    /^\[\+\]ping ok\n[\s\S]*\[-\]leader failed: reason withheld\n[\s\S]*readyz check failed\n$/,
  );
  t.same(await get(base, '/readyz/leader'), {
    status: 500,
    type: 'text/plain; charset=utf-8',
    body: 'internal server error: no Raft leader is known\n',
  });
  t.equal((await get(base, '/healthz')).status, 500);
  t.equal((await get(base, '/readyz?exclude=leader')).status, 200, '?exclude leaves a check out');
  t.same((await get(base, '/livez')).body, 'ok', 'alive without a leader');

  for (const n of others) await c.startNode(n);
  await c.waitLeader(10_000);
  await waitFor('health again', async () => (await get(base, '/health')).status === 200, 10_000);
  t.same((await get(base, '/health')).body, '{"health":"true"}');
  t.same(await get(base, '/readyz'), {
    status: 200,
    type: 'text/plain; charset=utf-8',
    body: 'ok',
  });

  await survivor.maintenance.alarm({
    action: 'ACTIVATE',
    memberId: String(survivor.id),
    alarm: 'NOSPACE',
  });
  await c.waitConverged();
  for (const m of c.running()) {
    const url = m.clientUrls[0]!.href.replace(/\/$/, '');
    t.same((await get(url, '/health')).body, '{"health":"false","reason":"ALARM NOSPACE"}');
    t.same((await get(url, '/health?exclude=NOSPACE')).body, '{"health":"true"}');
  }
});
