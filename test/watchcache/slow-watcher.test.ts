/**
 * Backpressure: watchers that stop reading are cancelled (with the revision to resume from)
 * while everyone else keeps getting every event in order, and memory stays bounded.
 */
import t from 'tap';
import { Cacher } from '../../src/watchcache/cacher.js';
import { objectEncoder } from '../../src/watchcache/encoders/object.js';
import type { WatchIterator } from '../../src/watchcache/in-process.js';
import type { WatchResponse } from '../../src/watchcache/types.js';
import { eventStrings, FakeClock, readUntil, turns } from './harness.js';
import { MemoryStore } from './memory-store.js';

t.test('10 stalled watchers among 1,000 readers under load', async (t) => {
  const store = new MemoryStore();
  const soft = 64 * 1024;
  const hard = 256 * 1024;
  const cacher = new Cacher(store, { watcherBufferBytes: soft, watcherHardBufferBytes: hard });
  t.teardown(() => cacher.close());
  const writes = 1500;
  const lastRevision = 1 + writes;
  const value = 'x'.repeat(512);

  // Readers use the callback form: tap's async hooks make a promise per event per reader
  // (the iterator form) needlessly slow here; the iterator is what the stalled ones use.
  const received = Array.from({ length: 1000 }, () => {
    const revisions: number[] = [];
    const done = new Promise<number[]>((resolve) => {
      cacher.watch({ key: '/load/', prefix: true }, (r) => {
        if (r.type !== 'events') return;
        revisions.push(r.revision);
        if (r.revision === lastRevision) resolve(revisions);
      });
    });
    return done;
  });
  const stalled = Array.from({ length: 10 }, () =>
    cacher.watchIterator({ key: '/load/', prefix: true }),
  );

  let maxStalledBytes = 0;
  let maxTotalBytes = 0;
  const heapBefore = process.memoryUsage().heapUsed;
  for (let i = 0; i < writes; i++) {
    store.put(`/load/${i % 50}`, value);
    if (i % 10 === 9) {
      await turns(1);
      for (const s of stalled) maxStalledBytes = Math.max(maxStalledBytes, s.queuedBytes);
      maxTotalBytes = Math.max(maxTotalBytes, cacher.stats().queuedBytes);
    }
  }
  const results = await Promise.all(received);
  const want = Array.from({ length: writes }, (_, i) => i + 2);
  t.ok(
    results.every((r) => r.length === writes && r.every((rev, i) => rev === want[i])),
    'all 1,000 readers got every event, in order, once',
  );
  t.ok(
    maxStalledBytes <= hard,
    `a stalled watcher held at most ${maxStalledBytes} bytes (hard bound ${hard})`,
  );
  t.ok(
    maxTotalBytes <= 10 * hard + 1000 * soft,
    `all queues together held at most ${maxTotalBytes} bytes`,
  );
  const heapGrowth = process.memoryUsage().heapUsed - heapBefore;
  t.ok(heapGrowth < 200 * 1024 * 1024, `heap grew ${Math.round(heapGrowth / 1024 / 1024)} MiB`);

  for (const s of stalled) {
    const first = (await s.next()).value as WatchResponse;
    t.equal(first.type, 'canceled', 'a stalled watcher was cancelled');
    if (first.type !== 'canceled' || first.cancellation.reason !== 'SLOW') {
      t.fail(`not a SLOW cancellation: ${JSON.stringify(first)}`);
      continue;
    }
    t.equal(
      first.cancellation.resumeRevision,
      2,
      'it read nothing, so it resumes from the first write',
    );
    t.match(first.cancellation.message, /resume from revision 2/);
    t.equal(s.queuedBytes, 0, 'its memory is released');
  }
  t.equal(await cacher.metrics.slowCancelled.get().then((m) => m.values[0]?.value), 10);

  // Resuming from the given revision gives exactly the rest.
  const resumed = cacher.watchIterator({ key: '/load/', prefix: true, startRevision: 2 });
  const rs = await readUntil(resumed, (all) =>
    all.some((r) => r.type === 'events' && r.revision === lastRevision),
  );
  t.equal(eventStrings(rs).length, writes, 'the resumed watch replays every event');
  resumed.cancel();
});

t.test('grace comes from the shared time budget; the hard bound cancels at once', async (t) => {
  const clock = new FakeClock();
  const store = new MemoryStore();
  const cacher = new Cacher(store, {
    clock,
    watcherBufferBytes: 1000,
    watcherHardBufferBytes: 50_000,
    slowBudgetMaxMs: 100,
    slowBudgetRefillMsPerSecond: 100,
  });
  t.teardown(() => cacher.close());
  const a = cacher.addWatcher({ key: '/s/', prefix: true }, objectEncoder);
  const b = cacher.addWatcher({ key: '/s/', prefix: true }, objectEncoder);
  const big = 'y'.repeat(1200);
  store.put('/s/1', big);
  await turns(2);
  t.notOk(a.done, 'the first slow watcher got the 100 ms budget as grace');
  t.equal(a.graceMs, 100);
  t.ok(b.done, 'the second found the budget empty and was cancelled');
  t.same(b.cancellation && { ...b.cancellation, message: '' }, {
    reason: 'SLOW',
    resumeRevision: 2,
    message: '',
  });

  clock.advance(50);
  store.put('/s/2', big);
  await turns(2);
  t.notOk(a.done, 'still inside its grace');
  clock.advance(60);
  store.put('/s/3', big);
  await turns(2);
  t.ok(a.done, 'grace over, still over the bound: cancelled');
  t.equal(a.cancellation?.reason === 'SLOW' && a.cancellation.resumeRevision, 2);

  // A watcher that drains in time returns the unused grace.
  clock.advance(1000);
  const c = cacher.addWatcher({ key: '/s/', prefix: true }, objectEncoder);
  store.put('/s/4', big);
  await turns(2);
  t.equal(cacher.stats().slowBudgetMs, 0, 'c took the whole budget');
  clock.advance(30);
  c.take(Number.POSITIVE_INFINITY);
  t.equal(cacher.stats().slowBudgetMs, 70 + 3, 'c gave back 70 ms (plus 3 ms refill)');
  t.notOk(c.done);

  // Over the hard bound: no grace at all.
  const d = cacher.addWatcher({ key: '/s/', prefix: true }, objectEncoder);
  store.put('/s/5', 'z'.repeat(60_000));
  await turns(2);
  t.ok(d.done, 'cancelled at once over the hard bound');
  t.ok(c.done, 'c too (it had not read)');
});

t.test(
  'in-process callback form: a slow async callback falls behind and is cancelled',
  async (t) => {
    const store = new MemoryStore();
    const cacher = new Cacher(store, { watcherBufferBytes: 2000, watcherHardBufferBytes: 4000 });
    t.teardown(() => cacher.close());
    const fast: WatchResponse[] = [];
    const slow: WatchResponse[] = [];
    cacher.watch({ key: '/cb/', prefix: true }, (r) => {
      fast.push(r);
    });
    const sub = cacher.watch({ key: '/cb/', prefix: true }, async (r) => {
      slow.push(r);
      await new Promise((res) => setTimeout(res, 50));
    });
    for (let i = 0; i < 40; i++) {
      store.put('/cb/k', 'v'.repeat(200));
      await turns(1);
    }
    await new Promise((res) => setTimeout(res, 200));
    t.equal(fast.filter((r) => r.type === 'events').length, 40, 'the plain callback got all 40');
    t.ok(sub.done, 'the slow one was cancelled');
    const last = slow.at(-1);
    t.equal(last?.type, 'canceled', 'and was told so, last');
    const delivered = slow.filter((r) => r.type === 'events').length;
    t.equal(
      last?.type === 'canceled' &&
        last.cancellation.reason === 'SLOW' &&
        last.cancellation.resumeRevision,
      2 + delivered,
      `resume right after the ${delivered} it got`,
    );
  },
);

export type { WatchIterator };
