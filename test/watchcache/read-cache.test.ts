/**
 * The read cache for the Kubernetes face (current objects by prefix, list at a revision in the
 * window), waitUntilFresh, progress_notify ticks, metrics, and a store reset.
 */
import { Registry } from 'prom-client';
import t from 'tap';
import { isEtceteraError } from '../../src/errors.js';
import type { KeyValue } from '../../src/store/types.js';
import { Cacher } from '../../src/watchcache/cacher.js';
import { objectEncoder } from '../../src/watchcache/encoders/object.js';
import {
  eventStrings,
  FakeClock,
  levelStore,
  memoryStore,
  readUntil,
  type StoreFactory,
  turns,
} from './harness.js';
import { b, MemoryStore } from './memory-store.js';

const show = (kvs: KeyValue[]) =>
  kvs.map((kv) => `${Buffer.from(kv.key)}=${Buffer.from(kv.value)}@${kv.modRevision}`);

async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (e) {
    return isEtceteraError(e) ? e.code : String(e);
  }
}

for (const [name, factory] of [
  ['memory', memoryStore],
  ['level', levelStore],
] as [string, StoreFactory][]) {
  t.test(
    `${name}: list by prefix now and at revisions in the window equals the store's range`,
    async (t) => {
      const ts = await factory(t);
      const cacher = new Cacher(ts.store, { windowMaxEvents: 10 });
      t.teardown(async () => {
        cacher.close();
        await ts.close();
      });
      await ts.put('/r/pods/a', '1');
      await ts.put('/r/pods/b', '1');
      await ts.put('/r/svc/a', '1');
      const first = await cacher.list('/r/pods/');
      t.same(show(first.kvs), ['/r/pods/a=1@2', '/r/pods/b=1@3']);
      t.equal(first.revision, 4);
      for (let i = 0; i < 6; i++) {
        await ts.put(`/r/pods/${'abc'[i % 3]}`, `v${i}`);
        if (i === 3) await ts.del('/r/pods/b');
      }
      await ts.txn([
        { op: 'put', key: '/r/pods/z', value: 'z' },
        { op: 'delete', key: '/r/pods/a' },
      ]);
      await turns(2);
      const current = ts.store.currentRevision;
      for (let rev = current - 8; rev <= current; rev++) {
        const fromCache = await cacher.list('/r/pods/', rev);
        const fromStore = await ts.store.range({
          key: b('/r/pods/'),
          rangeEnd: b('/r/pods0'),
          revision: rev,
        });
        t.same(show(fromCache.kvs), show(fromStore.kvs), `at ${rev}`);
        t.equal(fromCache.revision, rev);
      }
      t.same(show((await cacher.list('/r/')).kvs).length, 4, 'a wider prefix loads on demand');
      t.same(
        show((await cacher.list('/r/svc/')).kvs),
        ['/r/svc/a=1@4'],
        'a narrower one is served from it',
      );
      t.equal(await codeOf(cacher.list('/r/pods/', current + 1)), 'ERR_FUTURE_REV');
      t.equal(
        await codeOf(cacher.list('/r/pods/', 2)),
        'ERR_WATCH_TOO_OLD',
        'older than the window: 410',
      );
      await ts.compact(current - 2);
      t.equal(await codeOf(cacher.list('/r/pods/', current - 3)), 'ERR_COMPACTED');
    },
  );
}

t.test('waitUntilFresh resolves at the revision and times out with a clear error', async (t) => {
  const clock = new FakeClock();
  const store = new MemoryStore();
  const cacher = new Cacher(store, { clock, freshTimeoutMs: 500 });
  t.teardown(() => cacher.close());
  await cacher.waitUntilFresh(1);
  let resolved = false;
  const p = cacher.waitUntilFresh(3).then(() => {
    resolved = true;
  });
  store.put('/a', '1');
  await turns(1);
  t.notOk(resolved, 'not at 2');
  store.put('/a', '2');
  await p;
  t.ok(resolved, 'resolved at 3');
  const late = cacher.waitUntilFresh(10);
  clock.advance(499);
  store.put('/a', '3');
  clock.advance(1);
  t.equal(await codeOf(late), 'ERR_CACHE_NOT_FRESH');
  const closing = cacher.waitUntilFresh(100, 60_000);
  cacher.close();
  t.equal(await codeOf(closing), 'ERR_CLOSED');
});

t.test('progress_notify: idle synced watchers get progress each interval', async (t) => {
  const clock = new FakeClock();
  const store = new MemoryStore();
  const cacher = new Cacher(store, { clock, progressNotifyIntervalMs: 1000 });
  t.teardown(() => cacher.close());
  const idle = cacher.watchIterator({ key: '/idle', progressNotify: true });
  const busy = cacher.watchIterator({ key: '/busy', progressNotify: true });
  const plain = cacher.watchIterator({ key: '/idle' });
  clock.advance(1000);
  store.put('/busy', 'x');
  await turns(2);
  clock.advance(1000);
  const rs = await readUntil(idle, (all) => all.length >= 2);
  t.same(rs, [
    { type: 'progress', revision: 1 },
    { type: 'progress', revision: 2 },
  ]);
  const bs = await readUntil(busy, (all) => all.length >= 2);
  t.same(
    bs.map((r) => r.type),
    ['progress', 'events'],
    'progress while idle; none in the interval it got an event',
  );
  t.equal(plain.queuedBytes, 0, 'no progress unless asked');
});

t.test('metrics go to the injected registry', async (t) => {
  const registry = new Registry();
  const store = new MemoryStore();
  const cacher = new Cacher(store, { registry });
  t.teardown(() => cacher.close());
  const it = cacher.watchIterator({ key: '/m', prevKv: true });
  const other = cacher.addWatcher({ key: '/m' }, objectEncoder);
  store.put('/m', 'v');
  await readUntil(it, (all) => all.length >= 1);
  const text = await registry.metrics();
  t.match(text, /etcetera_watchcache_watchers 2/);
  t.match(text, /etcetera_watchcache_events_sent_total 1/);
  t.match(text, /etcetera_watchcache_bytes_sent_total \d+/);
  t.match(text, /etcetera_watchcache_slow_watchers_cancelled_total 0/);
  t.match(text, /etcetera_watchcache_dispatch_latency_seconds_count 1/);
  cacher.cancel(other);
  t.match(await registry.metrics(), /etcetera_watchcache_watchers 1/);
  t.doesNotThrow(() => {
    const second = new Cacher(new MemoryStore());
    t.teardown(() => second.close());
  }, 'a second cache without a registry does not collide');
});

t.test('a store reset: watchers replay the jump from the store, exactly once', async (t) => {
  const store = new MemoryStore();
  const cacher = new Cacher(store);
  t.teardown(() => cacher.close());
  const live = cacher.watchIterator({ key: '/z/', prefix: true });
  store.put('/z/1', 'a');
  await readUntil(live, (all) => all.length >= 1);
  // A snapshot install: revisions 3 and 4 arrive in the store without passing subscribe.
  store.silently(() => {
    store.put('/z/2', 'b');
    store.put('/z/3', 'c');
  });
  store.resetTo(store.currentRevision);
  t.equal(cacher.stats().windowFrom, 5, 'the window starts over after the reset');
  store.put('/z/4', 'd');
  const rs = await readUntil(live, (all) => all.length >= 3);
  t.same(eventStrings(rs), ['3:PUT:/z/2=b', '4:PUT:/z/3=c', '5:PUT:/z/4=d']);
  live.cancel();
});

t.test(
  'a prefix watch whose key is a Buffer watches that prefix and leaves the Buffer alone',
  async (t) => {
    const store = new MemoryStore();
    const cacher = new Cacher(store);
    t.teardown(() => cacher.close());
    const key = Buffer.from('/buf/');
    const live = cacher.watchIterator({ key, prefix: true });
    t.equal(key.toString(), '/buf/', "the caller's key is unchanged");
    store.put('/buf/1', 'a');
    store.put('/bug', 'not in the prefix');
    store.put('/buf/2', 'b');
    const rs = await readUntil(live, (all) => all.length >= 2);
    t.same(eventStrings(rs), ['2:PUT:/buf/1=a', '4:PUT:/buf/2=b']);
    live.cancel();
  },
);
