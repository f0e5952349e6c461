import t from 'tap';
import { Cacher, open, WatchIterator } from '../src/index.js';

t.test('README embedding example runs', async (t) => {
  const store = await open({ dir: t.testdir() });
  await store.put('config/a', '1');
  const kv = await store.get('config/a');
  t.equal(Buffer.from(kv!.value).toString(), '1');
  const page = await store.getPrefix('config/', { limit: 10 });
  t.equal(page.count, 1);
  const r = await store.txn({
    compare: [{ key: Buffer.from('config/a'), target: 'VERSION', result: 'EQUAL', version: 1 }],
    success: [{ type: 'put', request: { key: Buffer.from('config/a'), value: Buffer.from('2') } }],
    failure: [],
  });
  t.ok(r.succeeded);
  const cacher = new Cacher(store);
  const watch = new WatchIterator(cacher, { key: 'config/', prefix: true, startRevision: 1 });
  const seen: number[] = [];
  for await (const response of watch) {
    if (response.type === 'events') for (const e of response.events) seen.push(e.kv.modRevision);
    if (seen.length >= 2) break;
  }
  watch.cancel();
  t.same(seen, [2, 3]);
  const lease = await store.leaseGrant(10);
  await store.put('session', 'alive', { lease: lease.id });
  cacher.close();
  await store.close();
});
