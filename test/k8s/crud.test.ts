/**
 * The Kubernetes face's verbs over HTTP, checked against what Kubernetes answers: create,
 * get, update, patch, delete, their compare-and-swap conflicts and Status errors, metadata
 * the server owns, subresources, dry run, field validation and namespace deletion.
 */
import t, { type Test } from 'tap';
import { call, type KubeServer, pod, startKube } from './harness.js';

const PODS = '/api/v1/namespaces/default/pods';

async function withServer(t: Test): Promise<KubeServer> {
  const s = await startKube(t.testdir());
  t.teardown(() => s.close());
  return s;
}

t.test('create sets server metadata; get returns it; 409 AlreadyExists', async (t) => {
  const s = await withServer(t);
  const c = await call(s.url, 'POST', PODS, pod('web-1'));
  t.equal(c.status, 201);
  t.equal(c.body.kind, 'Pod');
  t.equal(c.body.apiVersion, 'v1');
  t.match(c.body.metadata.uid, /^[0-9a-f-]{36}$/);
  t.match(c.body.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  t.match(c.body.metadata.resourceVersion, /^\d+$/);
  t.equal(c.body.metadata.namespace, 'default');
  t.equal(c.body.status.phase, 'Pending');
  const g = await call(s.url, 'GET', `${PODS}/web-1`);
  t.same(g.body, c.body);
  const again = await call(s.url, 'POST', PODS, pod('web-1'));
  t.equal(again.status, 409);
  t.same(again.body, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'pods "web-1" already exists',
    reason: 'AlreadyExists',
    details: { name: 'web-1', group: '', kind: 'pods' },
    code: 409,
  });
  const missing = await call(s.url, 'GET', '/apis/apps/v1/namespaces/default/deployments/nope');
  t.equal(missing.status, 404);
  t.equal(missing.body.message, 'deployments.apps "nope" not found');
  t.same(missing.body.details, { name: 'nope', group: 'apps', kind: 'deployments' });
});

t.test('typed clients may leave out apiVersion, kind and namespace', async (t) => {
  const s = await withServer(t);
  const c = await call(s.url, 'POST', PODS, {
    metadata: { name: 'bare' },
    spec: { containers: [{ name: 'c', image: 'x' }] },
  });
  t.equal(c.status, 201);
  t.equal(c.body.kind, 'Pod');
  t.equal(c.body.metadata.namespace, 'default');
  const gen = await call(s.url, 'POST', PODS, { ...pod(''), metadata: { generateName: 'gen-' } });
  t.equal(gen.status, 201);
  t.match(gen.body.metadata.name, /^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  const ns = await call(s.url, 'POST', PODS, {
    ...pod('x'),
    metadata: { name: 'x', namespace: 'other' },
  });
  t.equal(ns.status, 400);
  t.equal(
    ns.body.message,
    'the namespace of the provided object does not match the namespace sent on the request',
  );
});

t.test('update is a compare-and-swap on resourceVersion; generation follows spec', async (t) => {
  const s = await withServer(t);
  const d = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'c', image: 'nginx:1' }] },
      },
    },
  };
  const path = '/apis/apps/v1/namespaces/default/deployments';
  const c = await call(s.url, 'POST', path, d);
  t.equal(c.body.metadata.generation, 1);
  const labelled = structuredClone(c.body);
  labelled.metadata.labels = { a: 'b' };
  const u1 = await call(s.url, 'PUT', `${path}/web`, labelled);
  t.equal(u1.status, 200);
  t.equal(u1.body.metadata.generation, 1, 'metadata changes keep generation');
  t.equal(u1.body.metadata.uid, c.body.metadata.uid);
  t.ok(Number(u1.body.metadata.resourceVersion) > Number(c.body.metadata.resourceVersion));
  const stale = structuredClone(c.body);
  stale.spec.replicas = 5;
  const conflict = await call(s.url, 'PUT', `${path}/web`, stale);
  t.equal(conflict.status, 409);
  t.equal(conflict.body.reason, 'Conflict');
  t.equal(
    conflict.body.message,
    'Operation cannot be fulfilled on deployments.apps "web": the object has been modified; please apply your changes to the latest version and try again',
  );
  const fresh = structuredClone(u1.body);
  fresh.spec.replicas = 5;
  const u2 = await call(s.url, 'PUT', `${path}/web`, fresh);
  t.equal(u2.body.metadata.generation, 2, 'spec changes bump generation');
  const unconditional = structuredClone(u2.body);
  delete unconditional.metadata.resourceVersion;
  unconditional.spec.replicas = 6;
  const u3 = await call(s.url, 'PUT', `${path}/web`, unconditional);
  t.equal(u3.status, 200, 'no resourceVersion: unconditional');
  const same = await call(s.url, 'PUT', `${path}/web`, u3.body);
  t.equal(
    same.body.metadata.resourceVersion,
    u3.body.metadata.resourceVersion,
    'no-op writes nothing',
  );
  const renamed = await call(s.url, 'PUT', `${path}/web`, {
    ...u3.body,
    metadata: { ...u3.body.metadata, name: 'x' },
  });
  t.equal(renamed.status, 400);
  t.match(renamed.body.message, /does not match the name on the URL/);
});

t.test('status subresource: main updates keep status, /status updates only status', async (t) => {
  const s = await withServer(t);
  const c = await call(s.url, 'POST', PODS, pod('p'));
  const running = structuredClone(c.body);
  running.status = { phase: 'Running' };
  running.spec.containers[0].image = 'changed';
  const st = await call(s.url, 'PUT', `${PODS}/p/status`, running);
  t.equal(st.status, 200);
  t.equal(st.body.status.phase, 'Running');
  t.equal(st.body.spec.containers[0].image, 'nginx', 'spec unchanged through /status');
  const main = structuredClone(st.body);
  main.status = { phase: 'Failed' };
  main.metadata.labels = { x: 'y' };
  const m = await call(s.url, 'PUT', `${PODS}/p`, main);
  t.equal(m.body.status.phase, 'Running', 'status unchanged through the main resource');
  t.same(m.body.metadata.labels, { x: 'y' });
  const sp = await call(
    s.url,
    'PATCH',
    `${PODS}/p/status`,
    { status: { phase: 'Succeeded' } },
    {
      'content-type': 'application/merge-patch+json',
    },
  );
  t.equal(sp.body.status.phase, 'Succeeded');
  const gs = await call(s.url, 'GET', `${PODS}/p/status`);
  t.equal(gs.body.status.phase, 'Succeeded');
  const none = await call(s.url, 'GET', '/api/v1/namespaces/default/configmaps/x/status');
  t.equal(none.status, 404, 'no status subresource on configmaps');
});

t.test('patch types: merge, json, strategic, apply; 415 otherwise', async (t) => {
  const s = await withServer(t);
  await call(s.url, 'POST', PODS, pod('p', {}, { a: '1' }));
  const merge = await call(
    s.url,
    'PATCH',
    `${PODS}/p`,
    { metadata: { labels: { b: '2', a: null } } },
    {
      'content-type': 'application/merge-patch+json',
    },
  );
  t.same(merge.body.metadata.labels, { b: '2' });
  const json = await call(
    s.url,
    'PATCH',
    `${PODS}/p`,
    [{ op: 'add', path: '/metadata/labels/c', value: '3' }],
    { 'content-type': 'application/json-patch+json' },
  );
  t.same(json.body.metadata.labels, { b: '2', c: '3' });
  const smp = await call(
    s.url,
    'PATCH',
    `${PODS}/p`,
    {
      spec: {
        containers: [
          { name: 'c', image: 'nginx:2' },
          { name: 'd', image: 'busybox' },
        ],
      },
    },
    { 'content-type': 'application/strategic-merge-patch+json' },
  );
  t.same(
    smp.body.spec.containers.map((c: { name: string; image: string }) => `${c.name}=${c.image}`),
    ['c=nginx:2', 'd=busybox'],
    'containers merged by name',
  );
  const stale = await call(
    s.url,
    'PATCH',
    `${PODS}/p`,
    { metadata: { resourceVersion: '1', labels: { z: '1' } } },
    { 'content-type': 'application/merge-patch+json' },
  );
  t.equal(stale.status, 409, 'a resourceVersion in a patch is a precondition');
  const bad = await call(s.url, 'PATCH', `${PODS}/p`, {}, { 'content-type': 'text/plain' });
  t.equal(bad.status, 415);
  t.equal(bad.body.reason, 'UnsupportedMediaType');
  const failing = await call(
    s.url,
    'PATCH',
    `${PODS}/p`,
    [{ op: 'test', path: '/metadata/name', value: 'other' }],
    { 'content-type': 'application/json-patch+json' },
  );
  t.equal(failing.status, 422);
  const noManager = await call(s.url, 'PATCH', `${PODS}/q`, pod('q'), {
    'content-type': 'application/apply-patch+yaml',
  });
  t.equal(noManager.status, 422);
  t.equal(
    noManager.body.message,
    'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
  );
  const apply = `apiVersion: v1\nkind: Pod\nmetadata:\n  name: q\nspec:\n  containers:\n  - name: c\n    image: a\n`;
  const created = await call(s.url, 'PATCH', `${PODS}/q?fieldManager=me`, apply, {
    'content-type': 'application/apply-patch+yaml',
  });
  t.equal(created.status, 201, 'apply creates');
  const applied = await call(
    s.url,
    'PATCH',
    `${PODS}/q?fieldManager=me`,
    apply.replace('image: a', 'image: b'),
    {
      'content-type': 'application/apply-patch+yaml',
    },
  );
  t.equal(applied.status, 200, 'apply merges');
  t.equal(applied.body.spec.containers[0].image, 'b');
});

t.test('dryRun=All validates and answers without storing', async (t) => {
  const s = await withServer(t);
  const before = await s.raw();
  const c = await call(s.url, 'POST', `${PODS}?dryRun=All`, pod('dry'));
  t.equal(c.status, 201);
  t.equal(c.body.metadata.name, 'dry');
  t.same(await s.raw(), before);
  const bad = await call(s.url, 'POST', `${PODS}?dryRun=Some`, pod('dry'));
  t.equal(bad.status, 422);
  t.equal(bad.body.details.kind, 'CreateOptions');
  await call(s.url, 'POST', PODS, pod('real'));
  const snapshot = await s.raw();
  const del = await call(s.url, 'DELETE', `${PODS}/real?dryRun=All`);
  t.equal(del.status, 200);
  const patched = await call(
    s.url,
    'PATCH',
    `${PODS}/real?dryRun=All`,
    { metadata: { labels: { x: 'y' } } },
    {
      'content-type': 'application/merge-patch+json',
    },
  );
  t.same(patched.body.metadata.labels, { x: 'y' });
  t.same(await s.raw(), snapshot);
});

t.test('fieldValidation: Strict rejects, Warn warns and drops, Ignore drops', async (t) => {
  const s = await withServer(t);
  const obj = { ...pod('f1'), bogus: 1 };
  const strict = await call(s.url, 'POST', `${PODS}?fieldValidation=Strict`, obj);
  t.equal(strict.status, 400);
  t.equal(
    strict.body.message,
    'Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "bogus"',
  );
  const warn = await call(s.url, 'POST', `${PODS}?fieldValidation=Warn`, obj);
  t.equal(warn.status, 201);
  t.equal(warn.headers.get('warning'), '299 - "unknown field \\"bogus\\""');
  t.equal(warn.body.bogus, undefined);
  const ignore = await call(s.url, 'POST', `${PODS}?fieldValidation=Ignore`, {
    ...obj,
    metadata: { name: 'f2' },
  });
  t.equal(ignore.status, 201);
  t.equal(ignore.headers.get('warning'), null);
});

t.test('delete: preconditions, finalizers, Status', async (t) => {
  const s = await withServer(t);
  const c = await call(s.url, 'POST', PODS, pod('d1'));
  const wrongUid = await call(s.url, 'DELETE', `${PODS}/d1`, { preconditions: { uid: 'nope' } });
  t.equal(wrongUid.status, 409);
  t.match(wrongUid.body.message, /Precondition failed: UID in precondition: nope/);
  const ok = await call(s.url, 'DELETE', `${PODS}/d1`, {
    propagationPolicy: 'Background',
    preconditions: { uid: c.body.metadata.uid, resourceVersion: c.body.metadata.resourceVersion },
  });
  t.equal(ok.status, 200);
  t.equal(ok.body.metadata.name, 'd1');
  t.equal((await call(s.url, 'DELETE', `${PODS}/d1`)).status, 404);
  const f = await call(s.url, 'POST', PODS, {
    ...pod('fin'),
    metadata: { name: 'fin', finalizers: ['example.com/x'] },
  });
  t.equal(f.status, 201);
  const marked = await call(s.url, 'DELETE', `${PODS}/fin`);
  t.equal(marked.status, 200);
  t.ok(marked.body.metadata.deletionTimestamp, 'deletionTimestamp set');
  t.equal((await call(s.url, 'GET', `${PODS}/fin`)).status, 200, 'still there');
  const released = await call(
    s.url,
    'PATCH',
    `${PODS}/fin`,
    { metadata: { finalizers: null } },
    {
      'content-type': 'application/merge-patch+json',
    },
  );
  t.equal(released.status, 200);
  t.equal((await call(s.url, 'GET', `${PODS}/fin`)).status, 404, 'gone with its last finalizer');
});

t.test('deleting a namespace deletes what is in it; creating there is refused', async (t) => {
  const s = await withServer(t);
  const ns = await call(s.url, 'POST', '/api/v1/namespaces', { metadata: { name: 'team' } });
  t.equal(ns.status, 201);
  t.same(ns.body.spec, { finalizers: ['kubernetes'] });
  t.same(ns.body.metadata.labels, { 'kubernetes.io/metadata.name': 'team' });
  t.same(ns.body.status, { phase: 'Active' });
  t.equal((await call(s.url, 'POST', '/api/v1/namespaces/team/pods', pod('a'))).status, 201);
  t.equal(
    (
      await call(s.url, 'POST', '/api/v1/namespaces/team/configmaps', {
        metadata: { name: 'c' },
        data: { k: 'v' },
      })
    ).status,
    201,
  );
  const nowhere = await call(s.url, 'POST', '/api/v1/namespaces/nowhere/pods', pod('a'));
  t.equal(nowhere.status, 404);
  t.equal(nowhere.body.message, 'namespaces "nowhere" not found');
  const del = await call(s.url, 'DELETE', '/api/v1/namespaces/team');
  t.equal(del.status, 200);
  t.equal(del.body.status.phase, 'Terminating');
  t.equal((await call(s.url, 'GET', '/api/v1/namespaces/team')).status, 404);
  t.equal((await call(s.url, 'GET', '/api/v1/namespaces/team/pods/a')).status, 404);
  const keys = (await s.raw()).filter((k) => k.includes('/team'));
  t.same(keys, [], 'nothing left under the namespace');
});

t.test('names are DNS-1123: 422 Invalid with causes', async (t) => {
  const s = await withServer(t);
  const bad = await call(s.url, 'POST', PODS, pod('Bad_Name'));
  t.equal(bad.status, 422);
  t.equal(bad.body.reason, 'Invalid');
  t.equal(bad.body.details.kind, 'Pod');
  t.equal(bad.body.details.causes[0].field, 'metadata.name');
  t.match(
    bad.body.message,
    /^Pod "Bad_Name" is invalid: metadata\.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/,
  );
  const noContainers = await call(s.url, 'POST', PODS, { metadata: { name: 'x' }, spec: {} });
  t.equal(noContainers.status, 422);
  t.same(noContainers.body.details.causes, [
    { reason: 'FieldValueRequired', message: 'Required value', field: 'spec.containers' },
  ]);
  const svc = await call(s.url, 'POST', '/api/v1/namespaces/default/services', {
    metadata: { name: '1svc' },
  });
  t.equal(svc.status, 422, 'services need DNS-1035 labels');
});

t.test('version, discovery (aggregated and legacy) and OpenAPI', async (t) => {
  const s = await withServer(t);
  const v = await call(s.url, 'GET', '/version');
  t.match(v.body, { major: '1', minor: '32', gitVersion: 'v1.32.0' });
  const agg =
    'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';
  const apis = await call(s.url, 'GET', '/apis', undefined, { accept: agg });
  t.equal(
    apis.headers.get('content-type'),
    'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
  );
  t.equal(apis.body.kind, 'APIGroupDiscoveryList');
  const apps = apis.body.items.find(
    (i: { metadata: { name: string } }) => i.metadata.name === 'apps',
  );
  const deploy = apps.versions[0].resources.find(
    (r: { resource: string }) => r.resource === 'deployments',
  );
  t.match(deploy, {
    responseKind: { group: 'apps', version: 'v1', kind: 'Deployment' },
    scope: 'Namespaced',
    shortNames: ['deploy'],
  });
  const core = await call(s.url, 'GET', '/api', undefined, { accept: agg });
  t.same(
    core.body.items.map((i: { metadata: { name: string } }) => i.metadata.name),
    [''],
  );
  const legacy = await call(s.url, 'GET', '/apis');
  t.equal(legacy.headers.get('content-type'), 'application/json');
  t.equal(legacy.body.kind, 'APIGroupList');
  const v1 = await call(s.url, 'GET', '/api/v1');
  t.equal(v1.body.kind, 'APIResourceList');
  t.ok(v1.body.resources.some((r: { name: string }) => r.name === 'pods/status'));
  const root = await call(s.url, 'GET', '/openapi/v3');
  const url = root.body.paths['apis/apps/v1'].serverRelativeURL;
  t.match(url, /^\/openapi\/v3\/apis\/apps\/v1\?hash=[0-9A-F]+$/);
  const doc = await call(s.url, 'GET', url);
  const patch = doc.body.paths['/apis/apps/v1/namespaces/{namespace}/deployments/{name}'].patch;
  t.same(patch['x-kubernetes-group-version-kind'], {
    group: 'apps',
    version: 'v1',
    kind: 'Deployment',
  });
  t.ok(patch.parameters.some((p: { name: string }) => p.name === 'fieldValidation'));
  t.equal((await call(s.url, 'GET', '/openapi/v2')).status, 404);
});

t.test('scale subresource', async (t) => {
  const s = await withServer(t);
  const path = '/apis/apps/v1/namespaces/default/deployments';
  await call(s.url, 'POST', path, {
    metadata: { name: 'w' },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'w' } },
      template: {
        metadata: { labels: { app: 'w' } },
        spec: { containers: [{ name: 'c', image: 'i' }] },
      },
    },
  });
  const get = await call(s.url, 'GET', `${path}/w/scale`);
  t.match(get.body, {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    spec: { replicas: 2 },
    status: { selector: 'app=w' },
  });
  const p = await call(
    s.url,
    'PATCH',
    `${path}/w/scale`,
    { spec: { replicas: 4 } },
    {
      'content-type': 'application/merge-patch+json',
    },
  );
  t.equal(p.body.spec.replicas, 4);
  t.equal((await call(s.url, 'GET', `${path}/w`)).body.spec.replicas, 4);
});

t.test('secrets: stringData is stored as base64 data', async (t) => {
  const s = await withServer(t);
  const c = await call(s.url, 'POST', '/api/v1/namespaces/default/secrets', {
    metadata: { name: 's' },
    stringData: { password: 'hunter2' },
  });
  t.equal(c.status, 201);
  t.same(c.body.data, { password: Buffer.from('hunter2').toString('base64') });
  t.equal(c.body.stringData, undefined);
});
