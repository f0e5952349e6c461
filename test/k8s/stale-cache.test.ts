/**
 * Writes read the current object from the decoded cache first (no read barrier). A stale copy
 * must never decide the answer: a pinned resourceVersion newer than the cache's, an update
 * that looks like a no-op against the stale copy, and delete preconditions are all settled on
 * a fresh read. The cache is held back here with a watch cache whose turns the test runs.
 */
import t from 'tap';
import { Cacher } from '../../src/watchcache/index.js';
import { call, pod, startKube } from './harness.js';

const PODS = '/api/v1/namespaces/default/pods';
const enc = new TextEncoder();

t.test('a stale cache never decides an answer', async (t) => {
  const turns: Array<() => void> = [];
  const runTurns = () => {
    for (let i = 0; i < 1000 && turns.length > 0; i++) (turns.shift() as () => void)();
  };
  const s = await startKube(t.testdir(), {
    makeCacher: (m) => new Cacher(m.store, { scheduler: (fn) => void turns.push(fn) }),
  });
  t.teardown(() => s.close());
  const v1 = (await call(s.url, 'POST', PODS, pod('p'))).body;
  runTurns();
  t.equal(
    s.kube.hub.get('/pods', '/registry/core/pods/default/p')?.rv,
    Number(v1.metadata.resourceVersion),
  );
  // A second version written behind the cache's back.
  const changed = { ...v1, metadata: { ...v1.metadata, labels: { v: '2' } } };
  delete changed.metadata.resourceVersion;
  const r2 = await s.member.store.put(
    enc.encode('/registry/core/pods/default/p'),
    enc.encode(JSON.stringify(changed)),
  );
  const v2rv = String(r2.revision);
  t.equal(
    s.kube.hub.get('/pods', '/registry/core/pods/default/p')?.rv,
    Number(v1.metadata.resourceVersion),
    'stale',
  );

  const pinned = {
    ...changed,
    metadata: { ...changed.metadata, resourceVersion: v2rv, labels: { v: '3' } },
  };
  const put = await call(s.url, 'PUT', `${PODS}/p`, pinned);
  t.equal(put.status, 200, 'a resourceVersion newer than the cache is not a conflict');
  t.same(put.body.metadata.labels, { v: '3' });

  const back = await s.member.store.put(
    enc.encode('/registry/core/pods/default/p'),
    enc.encode(JSON.stringify(changed)),
  );
  const noop = { ...v1, metadata: { ...v1.metadata, resourceVersion: undefined } };
  const same = await call(s.url, 'PUT', `${PODS}/p`, noop);
  t.equal(same.status, 200);
  t.ok(
    Number(same.body.metadata.resourceVersion) > back.revision,
    'a no-op against the stale copy is still written',
  );
  t.same(same.body.metadata.labels, {}, 'the requested state, not the one behind the cache');

  const now = (await call(s.url, 'GET', `${PODS}/p`)).body.metadata.resourceVersion;
  const del = await call(s.url, 'DELETE', `${PODS}/p`, { preconditions: { resourceVersion: now } });
  t.equal(del.status, 200, 'delete preconditions are checked on a fresh read');
  t.equal((await call(s.url, 'GET', `${PODS}/p`)).status, 404);
  runTurns();
});
