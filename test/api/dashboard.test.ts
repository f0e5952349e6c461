/**
 * The dashboard's routes on a real member (src/api/dashboard): three members in this process
 * with real client listeners. The page and its assets are served from the package (uPlot
 * included) and only to the member's own origin; /dashboard/stats shows the three members
 * with the leader marked, the watchers of an open watch stream by kind, and writes/s and
 * events/s from the sampler once a writer runs; a stopped member is shown as unhealthy while
 * the view still answers.
 */
import http from 'node:http';
import t from 'tap';
import { waitFor } from '../server/helpers.js';
import { LocalCluster } from '../server/local-cluster.js';

interface Stats {
  self: string;
  members: {
    id: string;
    name: string;
    self: boolean;
    leader: boolean;
    healthy: boolean;
    reachable: boolean;
    reason: string;
    term: number | null;
  }[];
  store: { revision: number; compactRevision: number; dbSize: number | null };
  writesPerS: number | null;
  watch: {
    watchers: number;
    byKind: { kind: string; connections: number; watchers: number }[];
    ended: Record<string, number>;
  };
  series: { t: number[]; writesPerS: number[]; eventsPerS: number[]; p99Ms: (number | null)[] };
}

const root = t.testdir();
const cluster = await LocalCluster.start(root, ['a', 'b', 'c']);
t.teardown(() => cluster.close());
const leader = await cluster.waitLeader(20_000);
const a = cluster.member('a');
const url = String(a.clientUrls[0]).replace(/\/$/, '');

async function stats(): Promise<Stats> {
  const res = await fetch(`${url}/dashboard/stats`);
  if (res.status !== 200) throw new Error(`stats: HTTP ${res.status}`);
  return (await res.json()) as Stats;
}

t.test('the page and its assets come from the member, for its own origin only', async (t) => {
  const page = await fetch(`${url}/dashboard`);
  t.equal(page.status, 200);
  t.match(page.headers.get('content-type'), /^text\/html/);
  t.match(page.headers.get('content-security-policy'), /script-src 'self'/);
  const html = await page.text();
  for (const src of html.matchAll(/(?:src|href)="(\/dashboard\/assets\/[^"]+)"/g)) {
    const res = await fetch(`${url}${src[1]}`);
    t.equal(res.status, 200, `${src[1]} is served`);
    t.ok((await res.arrayBuffer()).byteLength > 100, `${src[1]} has content`);
  }
  t.ok(html.includes('uPlot.iife.min.js'), 'the page loads uPlot from the member');
  const uplot = await (await fetch(`${url}/dashboard/assets/uPlot.iife.min.js`)).text();
  t.match(uplot, /uPlot/, "uPlot's browser build");
  t.equal((await fetch(`${url}/dashboard/assets/..%2Fmembers.ts`)).status, 404, 'no other file');
  t.equal((await fetch(`${url}/dashboard/assets/nope.js`)).status, 404);
  t.equal((await fetch(`${url}/dashboard/stats`, { method: 'POST' })).status, 405, 'GET only');
  const foreign = await fetch(`${url}/dashboard/stats`, {
    headers: { origin: 'http://evil.example' },
  });
  t.equal(foreign.status, 403, 'a page elsewhere may not read the stats');
  // fetch will not send a Host of our choosing: a raw request does.
  const rebound = await new Promise<number>((resolve, reject) => {
    const req = http.get(`${url}/dashboard`, { headers: { host: 'rebound.example:2379' } }, (r) => {
      r.resume();
      resolve(r.statusCode ?? 0);
    });
    req.on('error', reject);
  });
  t.equal(rebound, 403, 'a rebound DNS name gets no page');
});

t.test('stats: three members, the leader, watchers by kind, rates while writing', async (t) => {
  const s = await stats();
  t.equal(s.members.length, 3, 'three members');
  t.same(
    s.members.map((m) => m.name),
    ['a', 'b', 'c'],
  );
  t.same(
    s.members.filter((m) => m.leader).map((m) => m.id),
    [String(leader.id)],
    'the leader marked',
  );
  t.ok(
    s.members.every((m) => m.healthy && m.reachable && m.term !== null && m.term > 0),
    'all healthy with a term',
  );
  t.equal(s.members.find((m) => m.self)?.name, 'a');

  // An etcd watch stream over HTTP with one watch: counted under its kind.
  const ac = new AbortController();
  const watch = await fetch(`${url}/v3/watch`, {
    method: 'POST',
    body: JSON.stringify({
      create_request: {
        key: Buffer.from('d/').toString('base64'),
        range_end: Buffer.from('d0').toString('base64'),
      },
    }),
    signal: ac.signal,
  });
  t.teardown(() => ac.abort());
  const reader = watch.body!.getReader();
  void (async () => {
    try {
      while (!(await reader.read()).done) {}
    } catch {}
  })();
  await waitFor(
    'the watch counted',
    async () => {
      const k = (await stats()).watch.byKind.find((x) => x.kind === 'etcd-http');
      return k?.connections === 1 && k.watchers === 1;
    },
    20_000,
    50,
  );
  t.pass('one etcd-http connection with one watcher');

  let stop = false;
  const writer = (async () => {
    for (let i = 0; !stop; i++)
      await fetch(`${url}/v3/kv/put`, {
        method: 'POST',
        body: JSON.stringify({
          key: Buffer.from(`d/${i % 5}`).toString('base64'),
          value: Buffer.from('v').toString('base64'),
        }),
      });
  })();
  let last: Stats | undefined;
  await waitFor(
    'writes/s and events/s in the series',
    async () => {
      last = await stats();
      const n = last.series.t.length;
      return n > 0 && (last.writesPerS ?? 0) > 0 && last.series.eventsPerS[n - 1]! > 0;
    },
    30_000,
    200,
  );
  stop = true;
  await writer;
  t.ok(last!.writesPerS! > 0, `writes/s ${last!.writesPerS}`);
  t.ok(
    last!.series.p99Ms.some((v) => v !== null && v >= 0),
    'a dispatch latency p99 in the series',
  );
  t.ok(last!.store.revision > 1 && last!.store.dbSize! > 0, 'revision and DB size');
  ac.abort();
  await waitFor(
    'the stream gone',
    async () =>
      ((await stats()).watch.byKind.find((x) => x.kind === 'etcd-http')?.connections ?? 0) === 0,
    20_000,
    50,
  );
  t.pass('the closed stream is no longer counted');
});

t.test('a stopped member is unhealthy in the view, which still answers', async (t) => {
  const victim = [...cluster.nodes.values()].find(
    (n) => n.member !== undefined && n.member !== leader && n.name !== 'a',
  )!.name;
  await cluster.stopNode(victim);
  await waitFor(
    `${victim} unhealthy`,
    async () => {
      const m = (await stats()).members.find((x) => x.name === victim);
      return m !== undefined && !m.healthy && !m.reachable;
    },
    20_000,
    100,
  );
  const m = (await stats()).members.find((x) => x.name === victim)!;
  t.match(m.reason, /^unreachable: /, `reason: ${m.reason}`);
  t.equal(m.term, null);
});
