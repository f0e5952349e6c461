/**
 * The informer and the object cache against a scripted fake API server: the answers a real
 * server rarely gives (HTTP 410 on a watch, a non-410 ERROR event, a line that is not JSON,
 * a failing list, handlers that throw) and the cache's index invariant.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import {
  KubeClient,
  type KubeObject,
  ObjectCache,
  objectKey,
  Resources,
} from '../../src/client/k8s/index.js';

type WatchScript = (res: ServerResponse, url: URL) => void;

interface FakeApi {
  url: string;
  /** Objects the next list answers with, and its resourceVersion. */
  state: { items: KubeObject[]; rv: string; listStatus?: number };
  lists: number;
  watchUrls: URL[];
  /** Each watch request takes the next script; with none left it hangs until closed. */
  scripts: WatchScript[];
  open: Set<ServerResponse>;
}

async function fakeApi(t: Test): Promise<FakeApi> {
  const api: FakeApi = {
    url: '',
    state: { items: [], rv: '1' },
    lists: 0,
    watchUrls: [],
    scripts: [],
    open: new Set(),
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.searchParams.get('watch') === 'true') {
      api.watchUrls.push(url);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.flushHeaders();
      api.open.add(res);
      res.on('close', () => api.open.delete(res));
      api.scripts.shift()?.(res, url);
      return;
    }
    api.lists++;
    if (api.state.listStatus) {
      res.writeHead(api.state.listStatus, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          reason: 'ServiceUnavailable',
          code: api.state.listStatus,
        }),
      );
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(
      JSON.stringify({
        kind: 'PodList',
        apiVersion: 'v1',
        metadata: { resourceVersion: api.state.rv },
        items: api.state.items,
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  api.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const r of api.open) r.end();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return api;
}

function pod(name: string, rv: string, node = 'n1'): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', resourceVersion: rv },
    spec: { nodeName: node },
  };
}

const line = (type: string, object: unknown) => `${JSON.stringify({ type, object })}\n`;

async function eventually(check: () => boolean, ms = 5000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return check();
}

function informerOn(api: FakeApi, errors: unknown[] = []) {
  const client = new KubeClient({ baseUrl: api.url }).resource(Resources.pods, 'default');
  const inf = new KubeClient({ baseUrl: api.url }).informer(client, {
    pageSize: 0,
    backoff: { initialMs: 10, maxMs: 40 },
    watchTimeoutSeconds: 30,
    onError: (e) => errors.push(e),
  });
  const log: string[] = [];
  inf.addHandlers({
    onAdd: (o) => log.push(`add ${o.metadata.name}@${o.metadata.resourceVersion}`),
    onUpdate: (a, b) =>
      log.push(
        `update ${b.metadata.name}@${a.metadata.resourceVersion}->${b.metadata.resourceVersion}`,
      ),
    onDelete: (o) => log.push(`delete ${o.metadata.name}`),
  });
  return { inf, log };
}

t.test(
  'list, watch from its resourceVersion, events and bookmarks move the resume point',
  async (t) => {
    const api = await fakeApi(t);
    api.state = { items: [pod('a', '5'), pod('b', '6')], rv: '7' };
    api.scripts.push((res) => {
      res.write(line('ADDED', pod('c', '8')));
      res.write('\n');
      res.write(line('MODIFIED', pod('a', '9')));
      res.write(line('DELETED', pod('b', '10')));
      res.write(
        line('BOOKMARK', { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: '12' } }),
      );
      res.end();
    });
    const { inf, log } = informerOn(api);
    inf.start();
    t.teardown(() => inf.stop());
    await inf.waitForSync();
    t.ok(
      await eventually(() => api.watchUrls.length >= 2),
      'a clean end is followed by a new watch',
    );
    const [first, second] = api.watchUrls;
    t.equal(first?.searchParams.get('resourceVersion'), '7', 'the first watch starts at the list');
    t.equal(first?.searchParams.get('allowWatchBookmarks'), 'true');
    t.equal(second?.searchParams.get('resourceVersion'), '12', 'the next one at the bookmark');
    t.equal(api.lists, 1, 'no re-list after a clean end');
    t.same(log, ['add a@5', 'add b@6', 'add c@8', 'update a@5->9', 'delete b']);
    t.same(inf.list().map(objectKey).sort(), ['default/a', 'default/c']);
    t.equal(inf.lastResourceVersion, '12');
  },
);

t.test('410: as an ERROR event and as the HTTP status of the watch, both re-list', async (t) => {
  const api = await fakeApi(t);
  api.state = { items: [pod('a', '5'), pod('b', '6')], rv: '7' };
  api.scripts.push((res) => {
    res.write(
      line('ERROR', {
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        reason: 'Expired',
        code: 410,
        message: 'too old resource version: 7 (20)',
      }),
    );
    res.end();
  });
  const { inf, log } = informerOn(api);
  inf.start();
  t.teardown(() => inf.stop());
  await inf.waitForSync();
  api.state = { items: [pod('a', '21'), pod('c', '22')], rv: '23' };
  t.ok(await eventually(() => api.lists === 2));
  t.ok(await eventually(() => api.watchUrls.length === 2));
  t.equal(
    api.watchUrls[1]?.searchParams.get('resourceVersion'),
    '23',
    'the new watch starts at the new list',
  );
  t.same(
    log,
    ['add a@5', 'add b@6', 'update a@5->21', 'add c@22', 'delete b'],
    'the re-list dispatches the difference',
  );

  // Now the server answers the watch request itself with 410.
  const api2 = await fakeApi(t);
  api2.state = { items: [pod('x', '1')], rv: '2' };
  const client = new KubeClient({ baseUrl: api2.url });
  let watchCalls = 0;
  const gone = new KubeClient({
    baseUrl: api2.url,
    fetch: async (input, init) => {
      if (String(input).includes('watch=true') && watchCalls++ === 0) {
        return new Response(
          JSON.stringify({
            kind: 'Status',
            apiVersion: 'v1',
            status: 'Failure',
            reason: 'Gone',
            code: 410,
          }),
          { status: 410, headers: { 'Content-Type': 'application/json' } },
        );
      }
      return fetch(input, init);
    },
  });
  const inf2 = client.informer(gone.resource(Resources.pods, 'default'), {
    pageSize: 0,
    backoff: { initialMs: 10, maxMs: 20 },
  });
  inf2.start();
  t.teardown(() => inf2.stop());
  t.ok(await eventually(() => api2.lists === 2), 'HTTP 410 on the watch: a re-list');
  t.equal(inf2.stats.failures, 0, 'not counted as a failure');
});

t.test(
  'other ERROR events re-list; broken lines and failing lists back off and retry',
  async (t) => {
    const api = await fakeApi(t);
    api.state = { items: [pod('a', '5')], rv: '7' };
    api.scripts.push(
      (res) => {
        res.write(
          line('ERROR', {
            kind: 'Status',
            apiVersion: 'v1',
            status: 'Failure',
            reason: 'InternalError',
            code: 500,
          }),
        );
        res.end();
      },
      (res) => {
        res.write(line('ADDED', pod('b', '8')));
        res.write('{"type": "MODIFIED", "object": \n');
        res.end();
      },
    );
    const errors: unknown[] = [];
    const { inf } = informerOn(api, errors);
    inf.start();
    t.teardown(() => inf.stop());
    await inf.waitForSync();
    t.ok(await eventually(() => api.watchUrls.length >= 3));
    t.equal(api.lists, 2, 'the ERROR event made a re-list');
    t.equal(
      api.watchUrls[2]?.searchParams.get('resourceVersion'),
      '8',
      'after a broken line: resume, no re-list',
    );
    t.ok(inf.stats.failures >= 1);
    t.ok(
      errors.some((e) => String(e).includes('not JSON')),
      'the broken line is reported',
    );

    const api2 = await fakeApi(t);
    api2.state = { items: [], rv: '1', listStatus: 503 };
    const { inf: inf2 } = informerOn(api2);
    inf2.start();
    t.teardown(() => inf2.stop());
    t.ok(await eventually(() => api2.lists >= 3), 'a failing list is retried');
    t.notOk(inf2.hasSynced());
    api2.state = { items: [pod('z', '1')], rv: '2' };
    await inf2.waitForSync();
    t.equal(inf2.list().length, 1);
  },
);

t.test(
  'a watch that goes silent is dropped and resumed from the same resourceVersion',
  async (t) => {
    const api = await fakeApi(t);
    api.state = { items: [pod('a', '5')], rv: '7' };
    // The first watch says nothing and never ends (a half-open connection looks like this).
    api.scripts.push(() => undefined);
    const client = new KubeClient({ baseUrl: api.url }).resource(Resources.pods, 'default');
    const errors: unknown[] = [];
    const inf = new KubeClient({ baseUrl: api.url }).informer(client, {
      pageSize: 0,
      watchIdleTimeoutMs: 150,
      backoff: { initialMs: 10, maxMs: 20 },
      onError: (e) => errors.push(e),
    });
    inf.start();
    t.teardown(() => inf.stop());
    await inf.waitForSync();
    t.ok(await eventually(() => api.watchUrls.length >= 2), 'a second watch');
    t.equal(api.watchUrls[1]?.searchParams.get('resourceVersion'), '7', 'from the same point');
    t.equal(api.lists, 1, 'no re-list');
    t.ok(
      errors.some((e) => String(e).includes('idle')),
      'reported as idle',
    );
    // Keepalive newlines count as activity.
    const api2 = await fakeApi(t);
    api2.scripts.push((res) => {
      const timer = setInterval(() => res.write('\n'), 40);
      res.on('close', () => clearInterval(timer));
    });
    const stream = await new KubeClient({ baseUrl: api2.url })
      .resource(Resources.pods, 'default')
      .watch({ idleTimeoutMs: 150 });
    const reading = (async () => {
      for await (const _ of stream) {
        // nothing comes but newlines
      }
    })();
    await new Promise((r) => setTimeout(r, 500));
    t.notOk(stream.closed, 'still open after several idle periods with keepalives');
    stream.close();
    await reading;
  },
);

t.test('handlers that throw are reported; stop ends everything', async (t) => {
  const api = await fakeApi(t);
  api.state = { items: [pod('a', '1'), pod('b', '2')], rv: '3' };
  const errors: unknown[] = [];
  const { inf, log } = informerOn(api, errors);
  inf.addHandlers({
    onAdd: () => {
      throw new Error('handler bug');
    },
  });
  inf.start();
  await inf.waitForSync();
  t.same(log, ['add a@1', 'add b@2'], 'other handlers still ran');
  t.equal(errors.filter((e) => String(e).includes('handler bug')).length, 2);
  t.ok(await eventually(() => api.open.size === 1), 'a watch is open');
  await inf.stop();
  t.ok(await eventually(() => api.open.size === 0), 'stop closed it');
  await t.resolves(inf.waitForSync(), 'a synced informer stays synced after stop');
  const fresh = informerOn(api).inf;
  const waiting = fresh.waitForSync();
  await fresh.stop();
  await t.rejects(waiting, /stopped/, 'waiters are released by stop');
});

t.test('property: the cache indexes always agree with its objects', async (t) => {
  const op = fc.oneof(
    fc.record({
      kind: fc.constant('upsert' as const),
      name: fc.constantFrom('a', 'b', 'c', 'd'),
      ns: fc.constantFrom('x', 'y'),
      node: fc.constantFrom('n1', 'n2', ''),
    }),
    fc.record({
      kind: fc.constant('remove' as const),
      name: fc.constantFrom('a', 'b', 'c', 'd'),
      ns: fc.constantFrom('x', 'y'),
    }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 30 }), (ops) => {
      const cache = new ObjectCache<KubeObject>({
        node: (o) =>
          (o.spec as { nodeName?: string })?.nodeName
            ? [(o.spec as { nodeName: string }).nodeName]
            : [],
      });
      const model = new Map<string, KubeObject>();
      for (const o of ops) {
        if (o.kind === 'upsert') {
          const obj = { metadata: { name: o.name, namespace: o.ns }, spec: { nodeName: o.node } };
          cache.upsert(obj);
          model.set(`${o.ns}/${o.name}`, obj);
        } else {
          cache.remove(`${o.ns}/${o.name}`);
          model.delete(`${o.ns}/${o.name}`);
        }
      }
      t.same(cache.keys().sort(), [...model.keys()].sort());
      for (const node of ['n1', 'n2', '']) {
        const want = [...model.entries()]
          .filter(([, o]) => node !== '' && (o.spec as { nodeName: string }).nodeName === node)
          .map(([k]) => k)
          .sort();
        t.same(cache.byIndex('node', node).map(objectKey).sort(), want);
      }
      for (const ns of ['x', 'y']) {
        t.same(
          cache.byIndex('namespace', ns).map(objectKey).sort(),
          [...model.keys()].filter((k) => k.startsWith(`${ns}/`)).sort(),
        );
      }
      t.same(
        cache.indexValues('namespace').sort(),
        [...new Set([...model.values()].map((o) => o.metadata.namespace as string))].sort(),
      );
      return true;
    }),
    { numRuns: 200 },
  );
  const late = new ObjectCache<KubeObject>();
  late.upsert({ metadata: { name: 'a', labels: { app: 'web' } } });
  late.addIndex('app', (o) => [o.metadata.labels?.app ?? '']);
  t.same(late.byIndex('app', 'web').map(objectKey), ['a'], 'an index added later is filled');
  t.throws(() => late.addIndex('app', () => []), TypeError);
  t.throws(() => late.byIndex('nope', 'x'), TypeError);
});
