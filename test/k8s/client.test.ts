/**
 * etcetera's own Kubernetes client (src/client/k8s) end to end against the Kubernetes face:
 * CRUD with its Status errors, the four patch types, selectors and pagination, cluster
 * scope and custom resources, watches, and informers that stay equal to the server's list
 * through creates, updates, deletes and a 410 forced by compacting the history while the
 * informer is disconnected.
 */
import t, { type Test } from 'tap';
import {
  type Informer,
  isKubeApiError,
  KubeApiError,
  KubeClient,
  type KubeObject,
  objectKey,
  type ResourceClient,
  Resources,
  type WatchEvent,
} from '../../src/client/k8s/index.js';
import { type KubeServer, startKube } from './harness.js';
import { TcpProxy } from './lib/proxy.js';

// biome-ignore lint/suspicious/noExplicitAny: test documents are navigated by property chains
type Doc = any;

function pod(name: string, labels: Record<string, string> = {}, nodeName?: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels },
    spec: { containers: [{ name: 'c', image: 'nginx:1' }], ...(nodeName ? { nodeName } : {}) },
  };
}

async function rejection(p: Promise<unknown>): Promise<KubeApiError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof KubeApiError) return e;
    throw e;
  }
  throw new Error('expected a KubeApiError');
}

async function eventually(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return check();
}

/** `key@resourceVersion` of every object, sorted: what "equal to the server's list" means. */
function fingerprint(objs: KubeObject[]): string[] {
  return objs.map((o) => `${objectKey(o)}@${o.metadata.resourceVersion}`).sort();
}

async function serve(t: Test, options: Parameters<typeof startKube>[1] = {}): Promise<KubeServer> {
  const s = await startKube(t.testdir(), options);
  t.teardown(() => s.close());
  return s;
}

t.test('resource client against the server', async (t) => {
  const s = await serve(t);
  const kube = new KubeClient({ baseUrl: s.url });
  const pods = kube.resource(Resources.pods, 'default');

  await t.test('create, get, update with compare-and-swap, delete', async (t) => {
    const created = await pods.create({
      metadata: { name: 'web-1' },
      spec: { containers: [{ name: 'c', image: 'x' }] },
    });
    t.equal(created.kind, 'Pod', 'apiVersion and kind filled in by the server');
    t.equal(created.metadata.namespace, 'default');
    const got = await pods.get('web-1');
    t.same(got, created);
    const exists = await rejection(pods.create(pod('web-1')));
    t.equal(exists.statusCode, 409);
    t.equal(exists.reason, 'AlreadyExists');
    t.equal(exists.code, 'ERR_KUBE_ALREADY_EXISTS');
    t.equal(exists.status.message, 'pods "web-1" already exists');
    const updated = await pods.update({
      ...got,
      metadata: { ...got.metadata, labels: { v: '2' } },
    });
    t.not(updated.metadata.resourceVersion, got.metadata.resourceVersion);
    const stale = await rejection(
      pods.update({ ...got, metadata: { ...got.metadata, labels: { v: '3' } } }),
    );
    t.equal(stale.statusCode, 409);
    t.equal(stale.reason, 'Conflict');
    t.match(
      stale.status.message,
      /^Operation cannot be fulfilled on pods "web-1": the object has been modified/,
    );
    const dry = await pods.delete('web-1', { dryRun: true });
    t.equal((dry as Doc).metadata.name, 'web-1');
    t.ok(await pods.get('web-1'), 'a dry run deletes nothing');
    await pods.delete('web-1', { propagationPolicy: 'Background' });
    const gone = await rejection(pods.get('web-1'));
    t.equal(gone.statusCode, 404);
    t.ok(isKubeApiError(gone, 404));
    t.equal(gone.code, 'ERR_KUBE_NOT_FOUND');
    const precondition = await pods.create(pod('web-2'));
    const refused = await rejection(
      pods.delete('web-2', { preconditions: { uid: 'not-the-uid' } }),
    );
    t.equal(refused.statusCode, 409);
    await pods.delete('web-2', { preconditions: { uid: precondition.metadata.uid as string } });
  });

  await t.test('patch: merge, JSON, strategic, apply (with conflicts and force)', async (t) => {
    await pods.create(pod('p', { app: 'a' }));
    const merged = (await pods.patch(
      'p',
      { metadata: { labels: { tier: 'fe' } } },
      'merge',
    )) as Doc;
    t.same(merged.metadata.labels, { app: 'a', tier: 'fe' });
    const json = (await pods.patch(
      'p',
      [{ op: 'replace', path: '/spec/containers/0/image', value: 'nginx:2' }],
      'json',
    )) as Doc;
    t.equal(json.spec.containers[0].image, 'nginx:2');
    const failedTest = await rejection(
      pods.patch('p', [{ op: 'test', path: '/metadata/name', value: 'q' }], 'json'),
    );
    t.equal(failedTest.statusCode, 422);
    const smp = (await pods.patch(
      'p',
      { spec: { containers: [{ name: 'sidecar', image: 'busybox' }] } },
      'strategic',
    )) as Doc;
    t.same(
      smp.spec.containers.map((c: Doc) => c.name).sort(),
      ['c', 'sidecar'],
      'strategic merge adds by name',
    );
    const deployments = kube.resource(Resources.deployments, 'default');
    const config = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: { containers: [{ name: 'nginx', image: 'nginx:1' }] },
        },
      },
    };
    const created = (await deployments.apply(config, { fieldManager: 'me' })) as Doc;
    t.equal(created.spec.replicas, 2, 'apply creates');
    // Applied again (the update path), the manager's Apply entry must be there.
    const applied = (await deployments.apply(config, { fieldManager: 'me' })) as Doc;
    t.equal(
      applied.metadata.generation,
      created.metadata.generation,
      'an identical apply changes nothing',
    );
    t.equal(applied.metadata.managedFields?.[0]?.manager, 'me');
    t.equal(applied.metadata.managedFields?.[0]?.operation, 'Apply');
    const conflict = await rejection(
      deployments.apply(
        { ...config, spec: { ...config.spec, replicas: 5 } },
        { fieldManager: 'other' },
      ),
    );
    t.equal(conflict.statusCode, 409);
    t.equal(conflict.status.details?.causes?.[0]?.reason, 'FieldManagerConflict');
    const forced = (await deployments.apply(
      { ...config, spec: { ...config.spec, replicas: 5 } },
      { fieldManager: 'other', force: true },
    )) as Doc;
    t.equal(forced.spec.replicas, 5);
  });

  await t.test('list: label and field selectors, pagination, bad selectors', async (t) => {
    const ns = kube.resource(Resources.pods, 'sel');
    await kube.resource(Resources.namespaces).create({ metadata: { name: 'sel' } });
    for (let i = 0; i < 7; i++) {
      await ns.create(
        pod(`p${i}`, { app: i % 2 === 0 ? 'web' : 'db', idx: String(i) }, i < 3 ? 'n1' : 'n2'),
      );
    }
    const web = await ns.list({ labelSelector: 'app=web' });
    t.same(web.items.map((p) => p.metadata.name).sort(), ['p0', 'p2', 'p4', 'p6']);
    const set = await ns.list({ labelSelector: 'app in (web,db),idx notin (0,1,2)' });
    t.equal(set.items.length, 4);
    const onN1 = await ns.list({ fieldSelector: 'spec.nodeName=n1' });
    t.same(onN1.items.map((p) => p.metadata.name).sort(), ['p0', 'p1', 'p2']);
    const page = await ns.list({ limit: 3 });
    t.equal(page.items.length, 3);
    t.ok(page.metadata.continue, 'a continue token');
    const all = await ns.listAll({ pageSize: 2 });
    t.equal(all.items.length, 7);
    t.equal(all.metadata.continue, undefined);
    t.equal(
      all.metadata.resourceVersion,
      (await ns.listAll({ pageSize: 2 })).metadata.resourceVersion,
    );
    const badField = await rejection(ns.list({ fieldSelector: 'foo.bar=1' }));
    t.equal(badField.statusCode, 400);
    t.equal(badField.status.message, 'field label not supported: foo.bar');
    const badLabel = await rejection(ns.list({ labelSelector: 'app in web' }));
    t.equal(badLabel.statusCode, 400);
    t.match(badLabel.status.message, /^unable to parse requirement: /);
    const everywhere = await kube.resource(Resources.pods).list({ labelSelector: 'idx' });
    t.equal(everywhere.items.length, 7, 'across namespaces');
    const removed = (await ns.deleteCollection({ labelSelector: 'app=db' })) as Doc;
    t.ok(removed);
    t.equal((await ns.list()).items.length, 4, 'deletecollection honours the selector');
  });

  await t.test('cluster scope and custom resources', async (t) => {
    const nodes = kube.resource(Resources.nodes);
    await nodes.create({ metadata: { name: 'n1' } });
    t.equal((await nodes.get('n1')).metadata.namespace, undefined);
    t.throws(() => kube.resource(Resources.nodes, 'default'), TypeError);
    const crds = kube.resource(Resources.customResourceDefinitions);
    await crds.create({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com',
        scope: 'Namespaced',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: {
                  spec: { type: 'object', properties: { size: { type: 'integer', minimum: 1 } } },
                },
              },
            },
          },
        ],
      },
    });
    t.ok(
      await eventually(async () => {
        const crd = (await crds.get('widgets.example.com')) as Doc;
        return (crd.status?.conditions ?? []).some(
          (c: Doc) => c.type === 'Established' && c.status === 'True',
        );
      }),
      'the CRD becomes Established',
    );
    const widgets = kube.resource(
      { group: 'example.com', version: 'v1', resource: 'widgets', namespaced: true },
      'default',
    );
    const w = await widgets.create({
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: { name: 'w1' },
      spec: { size: 2 },
    });
    t.equal(w.kind, 'Widget');
    const invalid = await rejection(
      widgets.create({
        apiVersion: 'example.com/v1',
        kind: 'Widget',
        metadata: { name: 'w2' },
        spec: { size: 0 },
      }),
    );
    t.equal(invalid.statusCode, 422);
    t.equal(invalid.status.details?.causes?.[0]?.field, 'spec.size');
    const smp = await rejection(widgets.patch('w1', { spec: { size: 3 } }, 'strategic'));
    t.equal(smp.statusCode, 415, 'no strategic merge patch for custom kinds');
    t.equal(((await widgets.patch('w1', { spec: { size: 3 } }, 'merge')) as Doc).spec.size, 3);
  });

  await t.test('watch: events from a list resourceVersion, bookmarks, close', async (t) => {
    const ns = kube.resource(Resources.pods, 'default');
    const list = await ns.list();
    const stream = await ns.watch({
      resourceVersion: list.metadata.resourceVersion,
      allowWatchBookmarks: true,
    });
    const seen: WatchEvent[] = [];
    const reading = (async () => {
      for await (const ev of stream) seen.push(ev);
    })();
    await ns.create(pod('w-1'));
    await ns.patch('w-1', { metadata: { labels: { x: '1' } } });
    await ns.delete('w-1');
    t.ok(await eventually(() => seen.filter((e) => e.type !== 'BOOKMARK').length >= 3));
    t.same(
      seen
        .filter((e) => e.type !== 'BOOKMARK')
        .map((e) => `${e.type} ${(e.object as KubeObject).metadata.name}`),
      ['ADDED w-1', 'MODIFIED w-1', 'DELETED w-1'],
    );
    stream.close();
    await reading;
    t.ok(stream.closed, 'closing ends the iteration without an error');
    const fresh = await ns.watch({ resourceVersion: '0' });
    const first = await fresh[Symbol.asyncIterator]().next();
    t.equal(
      (first.value as WatchEvent).type,
      'ADDED',
      'resourceVersion 0 starts with synthetic ADDED events',
    );
    fresh.close();
  });
});

/** An informer plus a mirror built only from its handlers, to check both stay right. */
function mirrored<T extends KubeObject>(inf: Informer<T>) {
  const mirror = new Map<string, T>();
  const log: string[] = [];
  inf.addHandlers({
    onAdd: (o) => {
      mirror.set(objectKey(o), o);
      log.push(`add ${objectKey(o)}`);
    },
    onUpdate: (_old, o) => {
      mirror.set(objectKey(o), o);
      log.push(`update ${objectKey(o)}`);
    },
    onDelete: (o) => {
      mirror.delete(objectKey(o));
      log.push(`delete ${objectKey(o)}`);
    },
  });
  return { mirror, log };
}

async function equalToServer<T extends KubeObject>(
  inf: Informer<T>,
  mirror: Map<string, T>,
  client: ResourceClient<T>,
  options: { labelSelector?: string } = {},
): Promise<boolean> {
  return eventually(async () => {
    const server = fingerprint((await client.listAll(options)).items);
    return (
      JSON.stringify(fingerprint(inf.list())) === JSON.stringify(server) &&
      JSON.stringify(fingerprint([...mirror.values()])) === JSON.stringify(server)
    );
  });
}

t.test(
  'informer stays equal to the server through changes and a forced 410 (connection reset)',
  async (t) => {
    const s = await serve(t, { windowMaxEvents: 4 });
    const proxy = await TcpProxy.start(s.port);
    t.teardown(() => proxy.close());
    const direct = new KubeClient({ baseUrl: s.url }).resource(Resources.pods, 'default');
    const viaProxy = new KubeClient({ baseUrl: proxy.url }).resource(Resources.pods, 'default');
    for (let i = 0; i < 5; i++)
      await direct.create(pod(`pre-${i}`, { app: 'web' }, i % 2 ? 'n1' : 'n2'));
    const errors: unknown[] = [];
    const inf = new KubeClient({ baseUrl: proxy.url }).informer(viaProxy, {
      indexers: { node: (p) => [((p as Doc).spec?.nodeName as string) ?? ''] },
      pageSize: 2,
      backoff: { initialMs: 50, maxMs: 400 },
      onError: (e) => errors.push(e),
    });
    const { mirror, log } = mirrored(inf);
    inf.start();
    t.teardown(() => inf.stop());
    await inf.waitForSync();
    t.ok(inf.hasSynced());
    t.equal(inf.list().length, 5, 'the first list (paged)');
    t.equal(log.filter((l) => l.startsWith('add')).length, 5);

    await direct.create(pod('a', {}, 'n1'));
    await direct.patch('pre-0', { metadata: { labels: { app: 'db' } } });
    await direct.delete('pre-1');
    t.ok(await equalToServer(inf, mirror, direct), 'equal after create, update, delete');
    t.same(
      inf.cache
        .byIndex('node', 'n1')
        .map((p) => p.metadata.name)
        .sort(),
      ['a', 'pre-3'],
      'the custom index follows',
    );
    t.same(inf.cache.byIndex('namespace', 'default').length, 5);

    // Take the network away, change more than the watch window holds, compact the history.
    const relistsBefore = inf.stats.relists;
    proxy.refuse(true);
    proxy.cut();
    await direct.create(pod('during-1'));
    await direct.delete('pre-2');
    for (let i = 0; i < 6; i++) await direct.patch('a', { metadata: { labels: { i: String(i) } } });
    await s.member.store.compact(s.member.store.currentRevision);
    proxy.refuse(false);

    t.ok(await equalToServer(inf, mirror, direct), 'equal again after the 410');
    t.ok(inf.stats.relists > relistsBefore, 'the informer re-listed');
    t.ok(
      log.includes('delete default/pre-2'),
      'an object deleted while away gets its delete handler',
    );
    t.ok(inf.stats.failures > 0, 'the reset was reported');
    t.ok(errors.length > 0);

    await direct.create(pod('after'));
    t.ok(await equalToServer(inf, mirror, direct), 'and keeps following');
    await inf.stop();
    t.notOk(inf.stats.watches === 0);
  },
);

t.test(
  'informer: clean watch ends resume from the last resourceVersion; held reconnect meets a 410',
  async (t) => {
    const s = await serve(t, { windowMaxEvents: 4, bookmarkIntervalMs: 100 });
    const proxy = await TcpProxy.start(s.port);
    t.teardown(() => proxy.close());
    const direct = new KubeClient({ baseUrl: s.url }).resource(Resources.pods, 'default');
    const viaProxy = new KubeClient({ baseUrl: proxy.url }).resource(Resources.pods, 'default');
    await direct.create(pod('x', { app: 'web' }));
    await direct.create(pod('y', { app: 'db' }));
    const inf = new KubeClient({ baseUrl: proxy.url }).informer(viaProxy, {
      labelSelector: 'app=web',
      watchTimeoutSeconds: 1,
      resyncPeriodMs: 150,
      pageSize: 0,
    });
    const { mirror } = mirrored(inf);
    let resyncs = 0;
    inf.addHandlers({ onUpdate: (a, b) => void (a === b && resyncs++) });
    inf.start();
    t.teardown(() => inf.stop());
    await inf.waitForSync();
    t.ok(
      await equalToServer(inf, mirror, direct, { labelSelector: 'app=web' }),
      'selector applied',
    );
    t.ok(
      await eventually(() => inf.stats.watches >= 2, 5000),
      'the server ended a watch; the informer watched again',
    );
    t.equal(inf.stats.lists, 1, 'without re-listing');
    t.ok(await eventually(() => inf.stats.bookmarks > 0, 5000), 'bookmarks move the resume point');
    t.ok(await eventually(() => resyncs > 0, 5000), 'resync dispatches updates');

    proxy.freeze();
    t.ok(await proxy.waitForHeld(5000), 'the next watch request is held');
    await direct.patch('y', { metadata: { labels: { app: 'web' } } });
    await direct.delete('x');
    for (let i = 0; i < 6; i++) await direct.create(pod(`n${i}`, { app: i % 2 ? 'web' : 'db' }));
    await s.member.store.compact(s.member.store.currentRevision);
    proxy.thaw();
    t.ok(
      await equalToServer(inf, mirror, direct, { labelSelector: 'app=web' }),
      'equal after the 410 ERROR event',
    );
    t.ok(inf.stats.relists >= 1);
    t.equal(inf.stats.failures, 0, 'a clean end and a 410 are not failures');
  },
);
