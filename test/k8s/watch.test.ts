/**
 * Watch semantics of the Kubernetes face: synthetic ADDED only for
 * resourceVersion ""/"0", strictly-after-N replay, selector transitions, 410 as an ERROR
 * event then a clean end, bookmarks only when asked, sendInitialEvents, timeoutSeconds,
 * keepalives, Tables, websockets, and the index that keeps one node's watcher away from
 * other nodes' events.
 */
import { connect } from 'node:net';
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { kubeWatchStats } from '../../src/api/k8s/watch/events.js';
import { call, type KubeServer, pod, startKube } from './harness.js';
import { openWatch, summary } from './watch-client.js';

const PODS = '/api/v1/namespaces/default/pods';

async function withServer(t: Test, options = {}): Promise<KubeServer> {
  const s = await startKube(t.testdir(), options);
  t.teardown(() => s.close());
  return s;
}

async function createOn(
  s: KubeServer,
  name: string,
  node: string,
  labels: Record<string, string> = {},
) {
  const p = pod(name, {}, labels) as ReturnType<typeof pod> & { spec: Record<string, unknown> };
  p.spec.nodeName = node;
  const r = await call(s.url, 'POST', PODS, p);
  if (r.status !== 201) throw new Error(r.text);
  return r.body;
}

const mergePatch = { 'content-type': 'application/merge-patch+json' };

t.test('resourceVersion 0: synthetic ADDED, then live events; N: only after N', async (t) => {
  const s = await withServer(t);
  await createOn(s, 'a', 'n1');
  const b = await createOn(s, 'b', 'n1');
  const w0 = await openWatch(s.url, `${PODS}?watch=1&resourceVersion=0`);
  t.equal(w0.status, 200);
  t.match(w0.headers['content-type'], /^application\/json/);
  t.ok(await w0.waitFor((e) => e.length >= 2));
  t.same(summary(w0.events), ['ADDED a', 'ADDED b']);
  const wn = await openWatch(
    s.url,
    `${PODS}?watch=true&resourceVersion=${b.metadata.resourceVersion}`,
  );
  await call(s.url, 'PATCH', `${PODS}/a`, { metadata: { labels: { x: '1' } } }, mergePatch);
  const del = await call(s.url, 'DELETE', `${PODS}/b`);
  t.ok(await wn.waitFor((e) => e.length >= 2));
  t.same(summary(wn.events), ['MODIFIED a', 'DELETED b'], 'no synthetic events for N');
  t.ok(await w0.waitFor((e) => e.length >= 4));
  t.same(summary(w0.events), ['ADDED a', 'ADDED b', 'MODIFIED a', 'DELETED b']);
  const deleted = wn.events[1];
  t.ok(
    Number(deleted?.object.metadata.resourceVersion) > Number(del.body.metadata.resourceVersion),
    'DELETED carries the delete revision',
  );
  t.equal(deleted?.object.kind, 'Pod');
  t.equal(deleted?.object.apiVersion, 'v1');
  // A replay from an older N gives every change after it, in order.
  const wOld = await openWatch(
    s.url,
    `${PODS}?watch=1&resourceVersion=${b.metadata.resourceVersion}`,
  );
  t.ok(await wOld.waitFor((e) => e.length >= 2));
  t.same(summary(wOld.events), ['MODIFIED a', 'DELETED b']);
  for (const w of [w0, wn, wOld]) w.close();
});

t.test('label selector transitions: leaving is DELETED, entering is ADDED', async (t) => {
  const s = await withServer(t);
  await createOn(s, 'p', 'n1', { app: 'web' });
  const w = await openWatch(s.url, `${PODS}?watch=1&labelSelector=app%3Dweb`);
  t.ok(await w.waitFor((e) => e.length >= 1));
  await call(s.url, 'PATCH', `${PODS}/p`, { metadata: { labels: { app: 'db' } } }, mergePatch);
  await call(s.url, 'PATCH', `${PODS}/p`, { metadata: { labels: { tier: 'x' } } }, mergePatch);
  await call(s.url, 'PATCH', `${PODS}/p`, { metadata: { labels: { app: 'web' } } }, mergePatch);
  t.ok(await w.waitFor((e) => e.length >= 3));
  t.same(summary(w.events), ['ADDED p', 'DELETED p', 'ADDED p']);
  t.equal(
    w.events[1]?.object.metadata.labels.app,
    'web',
    'DELETED carries the last matching state',
  );
  w.close();
});

t.test('a watch on one node is not offered other nodes events (index)', async (t) => {
  const s = await withServer(t);
  const w = await openWatch(s.url, '/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dn1');
  const others = await openWatch(s.url, '/api/v1/namespaces/other/pods?watch=1');
  await createOn(s, 'mine', 'n1');
  for (let i = 0; i < 20; i++) await createOn(s, `theirs-${i}`, 'n2');
  await call(s.url, 'PATCH', `${PODS}/mine`, { metadata: { labels: { a: 'b' } } }, mergePatch);
  t.ok(await w.waitFor((e) => e.length >= 2));
  t.same(summary(w.events), ['ADDED mine', 'MODIFIED mine']);
  const watchers = [...s.kube.hub.watchers.values()];
  const nodeWatcher = watchers.find((x) => x.filter.hint?.value === 'n1');
  const nsWatcher = watchers.find((x) => x.filter.namespace === 'other');
  t.equal(nodeWatcher?.offered, 2, 'only its own node events were offered');
  t.equal(nsWatcher?.offered, 0, 'a namespace watcher sees nothing of other namespaces');
  w.close();
  others.close();
});

t.test('one decode and one encoded line per event, however many watchers', async (t) => {
  const s = await withServer(t);
  const ws = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      openWatch(s.url, i % 2 === 0 ? `${PODS}?watch=1` : '/api/v1/pods?watch=1'),
    ),
  );
  t.ok(await waitUntil(() => s.kube.hub.watchers.size === 20), 'all watching');
  const before = { ...kubeWatchStats };
  await createOn(s, 'shared', 'n1');
  for (const w of ws) t.ok(await w.waitFor((e) => e.length >= 1));
  t.equal(kubeWatchStats.decoded - before.decoded, 1, 'decoded once (object cache included)');
  t.equal(kubeWatchStats.lines - before.lines, 1, 'one ADDED line for all 20 watchers');
  for (const w of ws) w.close();
});

t.test('too old resourceVersion: ERROR 410 event, then a clean end', async (t) => {
  const s = await withServer(t, { windowMaxEvents: 2 });
  const first = await createOn(s, 'a', 'n1');
  for (let i = 0; i < 5; i++) {
    await call(s.url, 'PATCH', `${PODS}/a`, { metadata: { labels: { i: String(i) } } }, mergePatch);
  }
  await s.member.store.compact(s.member.store.currentRevision);
  const w = await openWatch(
    s.url,
    `${PODS}?watch=1&resourceVersion=${first.metadata.resourceVersion}`,
  );
  t.equal(w.status, 200);
  await w.ended;
  t.equal(w.events.length, 1);
  t.equal(w.events[0]?.type, 'ERROR');
  t.match(w.events[0]?.object, { kind: 'Status', code: 410, reason: 'Expired' });
  t.match(w.events[0]?.object.message, /^too old resource version: \d+ \(\d+\)$/);
});

t.test(
  'bookmarks only with allowWatchBookmarks; sendInitialEvents ends with a marked bookmark',
  async (t) => {
    const s = await withServer(t, { bookmarkIntervalMs: 100, keepaliveMs: 60_000 });
    await createOn(s, 'a', 'n1');
    const plain = await openWatch(s.url, `${PODS}?watch=1`);
    const marked = await openWatch(s.url, `${PODS}?watch=1&allowWatchBookmarks=true`);
    const initial = await openWatch(
      s.url,
      `${PODS}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan`,
    );
    t.ok(await marked.waitFor((e) => e.filter((x) => x.type === 'BOOKMARK').length >= 2));
    t.same(
      plain.events.map((e) => e.type),
      ['ADDED'],
      'no bookmark without allowWatchBookmarks',
    );
    const bm = marked.events.find((e) => e.type === 'BOOKMARK');
    t.same(Object.keys(bm?.object.metadata), ['resourceVersion']);
    t.equal(bm?.object.kind, 'Pod');
    t.ok(await initial.waitFor((e) => e.length >= 2));
    t.equal(initial.events[0]?.type, 'ADDED');
    t.equal(initial.events[1]?.type, 'BOOKMARK');
    t.same(initial.events[1]?.object.metadata.annotations, { 'k8s.io/initial-events-end': 'true' });
    const invalid = await call(s.url, 'GET', `${PODS}?watch=1&sendInitialEvents=true`);
    t.equal(invalid.status, 422, 'sendInitialEvents needs resourceVersionMatch=NotOlderThan');
    for (const w of [plain, marked, initial]) w.close();
  },
);

t.test('timeoutSeconds ends the stream cleanly; keepalive newlines', async (t) => {
  const s = await withServer(t, { keepaliveMs: 100 });
  const started = Date.now();
  const w = await openWatch(s.url, `${PODS}?watch=1&timeoutSeconds=1`);
  await w.ended;
  const took = Date.now() - started;
  t.ok(took >= 900 && took < 3000, `ended after ${took} ms`);
  t.match(w.raw(), /^\n+$/, 'only keepalive newlines on a quiet stream');
});

t.test('Table watch: columns in the first event only', async (t) => {
  const s = await withServer(t);
  await createOn(s, 'a', 'n1');
  const accept = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';
  const w = await openWatch(s.url, `${PODS}?watch=1`, { accept });
  await call(s.url, 'PATCH', `${PODS}/a`, { metadata: { labels: { x: 'y' } } }, mergePatch);
  t.ok(await w.waitFor((e) => e.length >= 2));
  t.equal(w.events[0]?.object.kind, 'Table');
  t.ok(w.events[0]?.object.columnDefinitions.length > 2);
  t.equal(w.events[1]?.object.columnDefinitions, undefined);
  t.equal(w.events[1]?.object.rows[0].cells[0], 'a');
  t.equal(w.events[1]?.object.rows[0].object.kind, 'PartialObjectMetadata');
  w.close();
});

t.test('the same stream over websockets', async (t) => {
  const s = await withServer(t);
  await createOn(s, 'a', 'n1');
  const ws = new WebSocket(`ws://127.0.0.1:${s.port}${PODS}?watch=1&resourceVersion=0`);
  const messages: string[] = [];
  ws.on('message', (m) => messages.push(String(m)));
  await new Promise((r) => ws.on('open', r));
  await call(s.url, 'DELETE', `${PODS}/a`);
  const until = Date.now() + 5000;
  while (messages.length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  t.same(
    messages.map((m) => JSON.parse(m).type),
    ['ADDED', 'DELETED'],
  );
  ws.close();
  const refused = new WebSocket(`ws://127.0.0.1:${s.port}${PODS}`);
  const status = await new Promise<number>((r) =>
    refused.on('unexpected-response', (_q, res) => r(res.statusCode ?? 0)),
  );
  t.equal(status, 400, 'a websocket that is not a watch is refused with a Status');
});

t.test('closing the face ends watches cleanly', async (t) => {
  const s = await startKube(t.testdir());
  const w = await openWatch(s.url, `${PODS}?watch=1`);
  await s.kube.close();
  await t.resolves(w.ended, 'terminating chunk, not a reset');
  await s.close();
});

t.test('a watcher that does not read is ended; the others keep up', async (t) => {
  const s = await withServer(t, { watchMaxBufferedBytes: 64 * 1024 });
  const fast = await openWatch(s.url, `${PODS}?watch=1`);
  // A client that sends its request and then never reads.
  const slow = connect(s.port, '127.0.0.1');
  await new Promise((r) => slow.on('connect', r));
  slow.write(`GET ${PODS}?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n`);
  slow.pause();
  t.ok(await waitUntil(() => s.kube.hub.watchers.size === 2), 'both watching');
  // More than the kernel's socket buffers take, so that the server's own buffer fills.
  const big = 'x'.repeat(60 * 1024);
  for (let i = 0; i < 250; i++) {
    const p = pod(`big-${i}`) as ReturnType<typeof pod> & {
      metadata: { annotations?: Record<string, string> };
    };
    p.metadata.annotations = { big };
    await call(s.url, 'POST', PODS, p);
  }
  t.ok(await fast.waitFor((e) => e.length >= 250), 'the reading watcher got every event');
  t.ok(await waitUntil(() => s.kube.hub.watchers.size === 1), 'the stuck one was ended');
  fast.close();
  slow.destroy();
});

async function waitUntil(check: () => boolean, ms = 5000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return check();
}
