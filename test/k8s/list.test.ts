/**
 * List semantics of the Kubernetes face: the list's
 * resourceVersion, consistent reads, resourceVersion/resourceVersionMatch, limit and continue
 * (a consistent snapshot across pages, 410 once compacted), selectors and Tables.
 */
import t, { type Test } from 'tap';
import { call, type KubeServer, pod, startKube } from './harness.js';

const PODS = '/api/v1/namespaces/default/pods';
const mergePatch = { 'content-type': 'application/merge-patch+json' };

async function withServer(t: Test, options = {}): Promise<KubeServer> {
  const s = await startKube(t.testdir(), options);
  t.teardown(() => s.close());
  return s;
}

async function seed(s: KubeServer, n: number, node = (i: number) => `n${i % 3}`) {
  for (let i = 0; i < n; i++) {
    const p = pod(
      `p${String(i).padStart(2, '0')}`,
      {},
      { idx: String(i), parity: i % 2 ? 'odd' : 'even' },
    ) as {
      spec: Record<string, unknown>;
    };
    p.spec.nodeName = node(i);
    const r = await call(s.url, 'POST', PODS, p);
    if (r.status !== 201) throw new Error(r.text);
  }
}

const names = (body: { items: { metadata: { name: string } }[] }) =>
  body.items.map((i) => i.metadata.name);

t.test('a list carries the revision it was read at, and is consistent', async (t) => {
  const s = await withServer(t);
  await seed(s, 3);
  const l = await call(s.url, 'GET', PODS);
  t.equal(l.body.kind, 'PodList');
  t.equal(l.body.apiVersion, 'v1');
  t.equal(l.body.metadata.resourceVersion, String(s.member.store.currentRevision));
  t.same(names(l.body), ['p00', 'p01', 'p02']);
  const created = await call(s.url, 'POST', PODS, pod('late'));
  const after = await call(s.url, 'GET', PODS);
  t.ok(names(after.body).includes('late'), 'a consistent list sees the write before it');
  t.ok(
    Number(after.body.metadata.resourceVersion) >= Number(created.body.metadata.resourceVersion),
  );
  const any = await call(s.url, 'GET', `${PODS}?resourceVersion=0`);
  t.equal(any.status, 200);
  const all = await call(s.url, 'GET', '/api/v1/pods');
  t.equal(all.body.items.length, 4, 'all namespaces');
});

t.test('limit and continue page through one snapshot; 410 once compacted', async (t) => {
  const s = await withServer(t);
  await seed(s, 7);
  const p1 = await call(s.url, 'GET', `${PODS}?limit=3`);
  t.same(names(p1.body), ['p00', 'p01', 'p02']);
  const token = p1.body.metadata.continue;
  t.type(token, 'string');
  // Changes after the first page are not seen by the next pages.
  await call(s.url, 'DELETE', `${PODS}/p04`);
  await call(s.url, 'POST', PODS, pod('p99'));
  const p2 = await call(s.url, 'GET', `${PODS}?limit=3&continue=${encodeURIComponent(token)}`);
  t.same(names(p2.body), ['p03', 'p04', 'p05']);
  t.equal(p2.body.metadata.resourceVersion, p1.body.metadata.resourceVersion);
  const p3 = await call(
    s.url,
    'GET',
    `${PODS}?limit=3&continue=${encodeURIComponent(p2.body.metadata.continue)}`,
  );
  t.same(names(p3.body), ['p06']);
  t.equal(p3.body.metadata.continue, undefined, 'no continue on the last page');
  const exact = await call(s.url, 'GET', `${PODS}?limit=2`);
  await call(s.url, 'PATCH', `${PODS}/p00`, { metadata: { labels: { x: 'y' } } }, mergePatch);
  await s.member.store.compact(s.member.store.currentRevision);
  const gone = await call(
    s.url,
    'GET',
    `${PODS}?limit=2&continue=${encodeURIComponent(exact.body.metadata.continue)}`,
  );
  t.equal(gone.status, 410);
  t.equal(gone.body.reason, 'Expired');
  const garbage = await call(s.url, 'GET', `${PODS}?continue=not-a-token`);
  t.equal(garbage.status, 400);
});

t.test('paging with a selector fills pages with matches only', async (t) => {
  const s = await withServer(t);
  await seed(s, 9);
  const seen: string[] = [];
  let cont = '';
  let pages = 0;
  do {
    const r = await call(
      s.url,
      'GET',
      `${PODS}?limit=2&labelSelector=parity%3Dodd${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`,
    );
    seen.push(...names(r.body));
    cont = r.body.metadata.continue ?? '';
    pages++;
  } while (cont && pages < 10);
  t.same(seen, ['p01', 'p03', 'p05', 'p07']);
});

t.test(
  'resourceVersion N with Exact reads the past; NotOlderThan waits; 504 when it cannot',
  async (t) => {
    const s = await withServer(t, { freshTimeoutMs: 200 });
    await seed(s, 2);
    const at = s.member.store.currentRevision;
    await call(s.url, 'DELETE', `${PODS}/p00`);
    await call(s.url, 'POST', PODS, pod('new'));
    const past = await call(
      s.url,
      'GET',
      `${PODS}?resourceVersion=${at}&resourceVersionMatch=Exact`,
    );
    t.equal(past.status, 200);
    t.same(names(past.body), ['p00', 'p01']);
    t.equal(past.body.metadata.resourceVersion, String(at));
    const notOlder = await call(s.url, 'GET', `${PODS}?resourceVersion=${at}`);
    t.same(names(notOlder.body), ['new', 'p01']);
    const future = await call(s.url, 'GET', `${PODS}?resourceVersion=${at + 1000}`);
    t.equal(future.status, 504);
    t.equal(future.body.details.causes[0].reason, 'ResourceVersionTooLarge');
    const bad = await call(s.url, 'GET', `${PODS}?resourceVersionMatch=Exact`);
    t.equal(bad.status, 422);
    t.match(
      bad.body.message,
      /resourceVersionMatch is forbidden unless resourceVersion is provided/,
    );
    const exact0 = await call(s.url, 'GET', `${PODS}?resourceVersion=0&resourceVersionMatch=Exact`);
    t.equal(exact0.status, 422);
    const notNumber = await call(s.url, 'GET', `${PODS}?resourceVersion=abc`);
    t.equal(notNumber.status, 400);
  },
);

t.test('label and field selectors', async (t) => {
  const s = await withServer(t);
  await seed(s, 6);
  const q = async (sel: string) => names((await call(s.url, 'GET', `${PODS}?${sel}`)).body);
  t.same(await q('labelSelector=idx+in+%281%2C3%29'), ['p01', 'p03']);
  t.same(await q('labelSelector=parity%3Deven%2Cidx%21%3D0'), ['p02', 'p04']);
  t.same(await q('labelSelector=%21nothing%2Cidx+notin+%280%2C1%2C2%2C3%29'), ['p04', 'p05']);
  t.same(await q('fieldSelector=spec.nodeName%3Dn1'), ['p01', 'p04']);
  t.same(await q('fieldSelector=spec.nodeName%3Dn1%2Cmetadata.name%21%3Dp01'), ['p04']);
  t.same(await q('fieldSelector=status.phase%3DPending&labelSelector=idx%3D5'), ['p05']);
  const ns = await call(
    s.url,
    'GET',
    '/api/v1/pods?fieldSelector=metadata.namespace%3Ddefault&limit=1',
  );
  t.same(names(ns.body), ['p00']);
  const bad = await call(s.url, 'GET', `${PODS}?fieldSelector=spec.bogus%3D1`);
  t.equal(bad.status, 400);
  t.equal(bad.body.message, 'field label not supported: spec.bogus');
  const badLabel = await call(s.url, 'GET', `${PODS}?labelSelector=a+in+b`);
  t.equal(badLabel.status, 400);
});

t.test('Tables: column sets, PartialObjectMetadata rows, includeObject', async (t) => {
  const s = await withServer(t);
  await seed(s, 2);
  const accept =
    'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
  const r = await call(s.url, 'GET', `${PODS}?limit=500`, undefined, { accept });
  t.equal(r.body.kind, 'Table');
  t.equal(r.body.apiVersion, 'meta.k8s.io/v1');
  t.same(
    r.body.columnDefinitions.map((c: { name: string }) => c.name),
    [
      'Name',
      'Ready',
      'Status',
      'Restarts',
      'Age',
      'IP',
      'Node',
      'Nominated Node',
      'Readiness Gates',
    ],
  );
  t.same(r.body.rows[0].cells.slice(0, 4), ['p00', '0/1', 'Pending', '0']);
  t.equal(r.body.rows[0].object.kind, 'PartialObjectMetadata');
  t.equal(r.body.rows[0].object.metadata.name, 'p00');
  const full = await call(s.url, 'GET', `${PODS}?includeObject=Object`, undefined, { accept });
  t.equal(full.body.rows[0].object.kind, 'Pod');
  const none = await call(s.url, 'GET', `${PODS}?includeObject=None`, undefined, { accept });
  t.equal(none.body.rows[0].object, undefined);
  const one = await call(s.url, 'GET', `${PODS}/p01`, undefined, { accept });
  t.equal(one.body.kind, 'Table');
  t.equal(one.body.rows.length, 1);
});

t.test('deletecollection deletes what the selectors match', async (t) => {
  const s = await withServer(t);
  await seed(s, 4);
  const r = await call(s.url, 'DELETE', `${PODS}?labelSelector=parity%3Deven`);
  t.equal(r.status, 200);
  t.equal(r.body.kind, 'PodList');
  t.same(names(r.body), ['p00', 'p02']);
  t.same(names((await call(s.url, 'GET', PODS)).body), ['p01', 'p03']);
  const ns = await call(s.url, 'DELETE', '/api/v1/namespaces');
  t.equal(ns.status, 405, 'namespaces do not serve deletecollection');
});
