/**
 * @kubernetes/client-node 1.x end to end against the Kubernetes face: typed CRUD with its
 * ApiException errors, patches, lists with selectors and pagination, optimistic-concurrency
 * conflicts, and makeInformer staying equal to the server's list through creates, updates,
 * deletes and a 410: the server ends the informer's watch, its reconnect is held while
 * the history is compacted past its resourceVersion, and it must re-list.
 */
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
} from '@kubernetes/client-node';
import t, { type Test } from 'tap';
import { KubeClient, type KubeObject, objectKey, Resources } from '../../src/client/k8s/index.js';
import { type KubeServer, startKube } from './harness.js';
import { TcpProxy } from './lib/proxy.js';

function kubeConfig(server: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'etcetera', server, skipTLSVerify: true }],
    users: [{ name: 'test', token: 'not-checked' }],
    contexts: [{ name: 'test', cluster: 'etcetera', user: 'test' }],
    currentContext: 'test',
  });
  return kc;
}

function pod(name: string, labels: Record<string, string> = {}, nodeName?: string): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels },
    spec: { containers: [{ name: 'c', image: 'nginx:1' }], ...(nodeName ? { nodeName } : {}) },
  };
}

async function apiError(p: Promise<unknown>): Promise<ApiException<string>> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ApiException) return e as ApiException<string>;
    throw e;
  }
  throw new Error('expected an ApiException');
}

async function eventually(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return check();
}

function fingerprint(
  objs: readonly { metadata?: { namespace?: string; name?: string; resourceVersion?: string } }[],
): string[] {
  return objs
    .map(
      (o) =>
        `${objectKey({ metadata: { ...o.metadata } } as KubeObject)}@${o.metadata?.resourceVersion}`,
    )
    .sort();
}

async function serve(t: Test, options: Parameters<typeof startKube>[1] = {}): Promise<KubeServer> {
  const s = await startKube(t.testdir(), options);
  t.teardown(() => s.close());
  return s;
}

t.test('client-node typed API: CRUD, patches, conflicts, lists', async (t) => {
  const s = await serve(t);
  const core = kubeConfig(s.url).makeApiClient(CoreV1Api);
  const namespace = 'default';

  const created = await core.createNamespacedPod({ namespace, body: pod('web-1', { app: 'web' }) });
  t.equal(created.kind, 'Pod');
  t.equal(created.metadata?.namespace, 'default');
  t.ok(created.metadata?.uid);
  const read = await core.readNamespacedPod({ name: 'web-1', namespace });
  t.equal(read.metadata?.resourceVersion, created.metadata?.resourceVersion);

  const exists = await apiError(core.createNamespacedPod({ namespace, body: pod('web-1') }));
  t.equal(exists.code, 409);
  t.match(JSON.parse(exists.body), {
    kind: 'Status',
    reason: 'AlreadyExists',
    message: 'pods "web-1" already exists',
  });

  const replaced = await core.replaceNamespacedPod({
    name: 'web-1',
    namespace,
    body: { ...read, metadata: { ...read.metadata, labels: { app: 'web', v: '2' } } },
  });
  t.not(replaced.metadata?.resourceVersion, read.metadata?.resourceVersion);
  const stale = await apiError(
    core.replaceNamespacedPod({
      name: 'web-1',
      namespace,
      body: { ...read, metadata: { ...read.metadata, labels: {} } },
    }),
  );
  t.equal(stale.code, 409);
  t.equal(JSON.parse(stale.body).reason, 'Conflict');

  const jsonPatched = await core.patchNamespacedPod({
    name: 'web-1',
    namespace,
    body: [{ op: 'replace', path: '/spec/containers/0/image', value: 'nginx:2' }],
  });
  t.equal(
    jsonPatched.spec?.containers[0]?.image,
    'nginx:2',
    'the default patch type is JSON patch',
  );
  const merged = await core.patchNamespacedPod(
    { name: 'web-1', namespace, body: { metadata: { labels: { tier: 'fe' } } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  t.same(merged.metadata?.labels, { app: 'web', v: '2', tier: 'fe' });
  const strategic = await core.patchNamespacedPod(
    { name: 'web-1', namespace, body: { spec: { containers: [{ name: 'c', image: 'nginx:3' }] } } },
    setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
  );
  t.same(
    strategic.spec?.containers.map((c) => `${c.name}=${c.image}`),
    ['c=nginx:3'],
  );

  for (let i = 0; i < 6; i++) {
    await core.createNamespacedPod({
      namespace,
      body: pod(`p${i}`, { app: i % 2 ? 'db' : 'web' }, i < 2 ? 'n1' : 'n2'),
    });
  }
  const web = await core.listNamespacedPod({ namespace, labelSelector: 'app=web,v notin (9)' });
  t.same(web.items.map((p) => p.metadata?.name).sort(), ['p0', 'p2', 'p4', 'web-1']);
  const onN1 = await core.listNamespacedPod({ namespace, fieldSelector: 'spec.nodeName=n1' });
  t.same(onN1.items.map((p) => p.metadata?.name).sort(), ['p0', 'p1']);
  const names: string[] = [];
  let token: string | undefined;
  let pages = 0;
  do {
    const page = await core.listNamespacedPod({
      namespace,
      limit: 3,
      ...(token ? { _continue: token } : {}),
    });
    names.push(...page.items.map((p) => p.metadata?.name ?? ''));
    token = page.metadata?._continue;
    pages++;
  } while (token);
  t.equal(pages, 3, 'seven pods in pages of three');
  t.same(names.sort(), ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'web-1']);
  const bad = await apiError(core.listNamespacedPod({ namespace, fieldSelector: 'foo.bar=1' }));
  t.equal(bad.code, 400);
  t.equal(JSON.parse(bad.body).message, 'field label not supported: foo.bar');

  const all = await core.listPodForAllNamespaces({ labelSelector: 'app' });
  t.equal(all.items.length, 7);
  await core.deleteNamespacedPod({ name: 'web-1', namespace });
  const gone = await apiError(core.readNamespacedPod({ name: 'web-1', namespace }));
  t.equal(gone.code, 404);
  t.equal(JSON.parse(gone.body).message, 'pods "web-1" not found');
  const ns = await core.createNamespace({ body: { metadata: { name: 'team-a' } } });
  t.equal(ns.metadata?.name, 'team-a');
  t.ok(
    (await core.listNamespace()).items.some((n) => n.metadata?.name === 'team-a'),
    'cluster-scoped list',
  );
});

t.test(
  'client-node makeInformer stays equal to the server through changes and a forced 410',
  async (t) => {
    // A short server-side watch timeout: client-node sends none, and must see its watch end.
    const s = await serve(t, { windowMaxEvents: 4, minWatchTimeoutMs: 400 });
    const proxy = await TcpProxy.start(s.port);
    t.teardown(() => proxy.close());
    const direct = new KubeClient({ baseUrl: s.url }).resource(Resources.pods, 'default');
    const kc = kubeConfig(proxy.url);
    const core = kc.makeApiClient(CoreV1Api);
    for (let i = 0; i < 4; i++) await direct.create(pod(`pre-${i}`, { app: 'web' }) as KubeObject);

    let lists = 0;
    const informer = makeInformer(kc, '/api/v1/namespaces/default/pods', () => {
      lists++;
      return core.listNamespacedPod({ namespace: 'default' });
    });
    const mirror = new Map<string, V1Pod>();
    const errors: unknown[] = [];
    let connects = 0;
    const key = (p: V1Pod) => `${p.metadata?.namespace}/${p.metadata?.name}`;
    informer.on('add', (p) => mirror.set(key(p), p));
    informer.on('update', (p) => mirror.set(key(p), p));
    informer.on('delete', (p) => mirror.delete(key(p)));
    informer.on('error', (e) => errors.push(e));
    informer.on('connect', () => connects++);
    await informer.start();
    t.teardown(() => informer.stop());

    const equal = () =>
      eventually(async () => {
        const server = fingerprint((await direct.listAll()).items);
        return (
          JSON.stringify(fingerprint(informer.list())) === JSON.stringify(server) &&
          JSON.stringify(fingerprint([...mirror.values()])) === JSON.stringify(server)
        );
      });
    t.ok(await equal(), 'equal after the first list');
    await direct.create(pod('a') as KubeObject);
    await direct.patch('pre-0', { metadata: { labels: { app: 'db' } } });
    await direct.delete('pre-1');
    t.ok(await equal(), 'equal after create, update, delete');
    t.ok(
      await eventually(() => connects >= 2),
      'the server ended a watch and the informer reconnected',
    );

    proxy.freeze();
    t.ok(await proxy.waitForHeld(5000), 'the reconnecting watch is held');
    await direct.delete('pre-2');
    await direct.create(pod('during') as KubeObject);
    for (let i = 0; i < 6; i++) await direct.patch('a', { metadata: { labels: { i: String(i) } } });
    await s.member.store.compact(s.member.store.currentRevision);
    const listsBefore = lists;
    proxy.thaw();

    t.ok(await equal(), 'equal after the 410 and the re-list');
    t.ok(lists > listsBefore, 'the 410 made it re-list');
    t.notOk(mirror.has('default/pre-2'), 'the object deleted while away got its delete callback');
    await direct.create(pod('after') as KubeObject);
    t.ok(await equal(), 'and keeps following');
    t.same(errors, [], 'no error callback: the informer never stopped');
  },
);
