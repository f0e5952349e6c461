/**
 * Watch semantics, written once and run against every (store, watch implementation) pair:
 * the store directly (DirectWatch) and through the cache. The cache must never differ.
 *
 * Each guarantee etcd documents has its own test: ordered by revision, each event exactly once,
 * one revision's events in one response, resumable from any revision in history, and progress
 * at R only after every event at or below R.
 */

import type { Test } from 'tap';
import { isEtceteraError } from '../../src/errors.js';
import type { EventBatch } from '../../src/store/types.js';
import { normalizeRange, rangeContains } from '../../src/watchcache/keys.js';
import type { WatchOptions } from '../../src/watchcache/types.js';
import { bytesToLatin1 } from '../../src/wire/bytes.js';
import {
  countEvents,
  eventString,
  eventStrings,
  type ImplFactory,
  readFor,
  readUntil,
  type StoreFactory,
  type TestStore,
  type WatchEnv,
} from './harness.js';
import { b } from './memory-store.js';

/**
 * What a watch of `opts` from `from` must deliver, from the model log: events in range at
 * revisions >= from, and at the compaction revision C (when from = C) only what survives
 * compaction (no DELETE, no prevKv), as etcd.
 */
export function expected(
  log: readonly EventBatch[],
  opts: WatchOptions,
  from: number,
  compact = 0,
): string[] {
  const key = typeof opts.key === 'string' ? b(opts.key) : opts.key;
  const end =
    opts.rangeEnd === undefined
      ? undefined
      : typeof opts.rangeEnd === 'string'
        ? b(opts.rangeEnd)
        : opts.rangeEnd;
  const range = normalizeRange(key, end);
  const out: string[] = [];
  for (const batch of log) {
    if (batch.revision < from) continue;
    const atCompact = batch.revision === compact;
    for (const ev of batch.events) {
      if (!rangeContains(range, bytesToLatin1(ev.kv.key))) continue;
      if (opts.filters?.includes(ev.type === 'PUT' ? 'NOPUT' : 'NODELETE')) continue;
      if (atCompact && ev.type === 'DELETE') continue;
      const withPrev = opts.prevKv && !atCompact ? ev : { type: ev.type, kv: ev.kv };
      out.push(eventString(batch.revision, withPrev));
    }
  }
  return out;
}

const P = { key: '/c/', rangeEnd: '/c0' }; // the prefix /c/

export function watchConformance(
  t: Test,
  storeFactory: StoreFactory,
  implFactory: ImplFactory,
): void {
  const setup = async (tt: Test): Promise<{ ts: TestStore; w: WatchEnv }> => {
    const ts = await storeFactory(tt);
    const w = implFactory(ts.store);
    tt.teardown(async () => {
      w.close();
      await ts.close();
    });
    return { ts, w };
  };

  t.test('ordered by revision, one revision per response', async (tt) => {
    const { ts, w } = await setup(tt);
    const h = w.watch({ ...P });
    await Promise.all(Array.from({ length: 30 }, (_, i) => ts.put(`/c/${i % 3}`, `v${i}`)));
    const rs = await readUntil(h, (all) => countEvents(all) >= 30);
    let last = 0;
    for (const r of rs) {
      if (r.type !== 'events') continue;
      tt.ok(r.revision > last, `revision ${r.revision} after ${last}`);
      tt.ok(
        r.events.every((e) => e.kv.modRevision === r.revision),
        'events carry the response revision',
      );
      last = r.revision;
    }
    tt.same(eventStrings(rs), expected(ts.log, P, 2));
    h.cancel();
  });

  t.test('each event exactly once across replay and live', async (tt) => {
    const { ts, w } = await setup(tt);
    for (let i = 0; i < 20; i++) await ts.put(`/c/${i % 4}`, `a${i}`);
    const h = w.watch({ ...P, startRevision: 2 });
    const writes = (async () => {
      for (let i = 0; i < 20; i++) await ts.put(`/c/${i % 5}`, `b${i}`);
    })();
    const rs = await readUntil(h, (all) => countEvents(all) >= 40);
    await writes;
    tt.same(eventStrings(rs), expected(ts.log, P, 2));
    tt.same(await readFor(h, 30), [], 'nothing more');
    h.cancel();
  });

  t.test('all events of one revision in one response', async (tt) => {
    const { ts, w } = await setup(tt);
    const all = w.watch({ ...P });
    const narrow = w.watch({ key: '/c/1', rangeEnd: '/c/3' });
    const rev = await ts.txn([
      ...[0, 1, 2, 3, 4].map((i) => ({ op: 'put' as const, key: `/c/${i}`, value: `t${i}` })),
      { op: 'put', key: '/other', value: 'x' },
    ]);
    const [r] = await readUntil(all, (xs) => xs.length >= 1);
    tt.equal(r?.type === 'events' && r.revision, rev);
    tt.equal(r?.type === 'events' && r.events.length, 5, 'five events in one response');
    const [n] = await readUntil(narrow, (xs) => xs.length >= 1);
    tt.same(n?.type === 'events' && n.events.map((e) => Buffer.from(e.kv.key).toString()), [
      '/c/1',
      '/c/2',
    ]);
    all.cancel();
    narrow.cancel();
  });

  t.test('resumable from any revision in history', async (tt) => {
    const { ts, w } = await setup(tt);
    for (let i = 0; i < 6; i++) await ts.put(`/c/${i % 3}`, `p${i}`);
    await ts.del('/c/1');
    await ts.txn([
      { op: 'put', key: '/c/9', value: 'x' },
      { op: 'delete', key: '/c/0' },
    ]);
    await ts.put('/d', 'outside');
    await ts.put('/c/2', 'last');
    const current = ts.store.currentRevision;
    for (let from = 1; from <= current + 1; from++) {
      const want = expected(ts.log, { ...P, prevKv: true }, from);
      const h = w.watch({ ...P, startRevision: from, prevKv: true });
      const rs = await readUntil(h, (all) => countEvents(all) >= want.length);
      tt.same(eventStrings(rs), want, `from ${from}`);
      tt.same(await readFor(h, 5), [], `from ${from}: nothing more`);
      h.cancel();
    }
  });

  t.test('progress at R only after every event at or below R', async (tt) => {
    const { ts, w } = await setup(tt);
    for (let i = 0; i < 40; i++) await ts.put(`/c/${i % 7}`, `x${i}`);
    const h = w.watch({ ...P, startRevision: 1 });
    h.requestProgress();
    const writes = (async () => {
      for (let i = 0; i < 20; i++) {
        await ts.put(`/c/${i % 7}`, `y${i}`);
        h.requestProgress();
      }
    })();
    const rs = await readUntil(h, (all) => countEvents(all) >= 60);
    await writes;
    h.requestProgress();
    rs.push(...(await readUntil(h, (all) => all.some((r) => r.type === 'progress'))));
    const progress = rs.filter((r) => r.type === 'progress');
    tt.ok(progress.length >= 2, `${progress.length} progress responses`);
    const wanted = expected(ts.log, P, 1);
    let seen = 0;
    for (const r of rs) {
      if (r.type === 'events') seen += r.events.length;
      if (r.type !== 'progress') continue;
      const due = wanted.filter((e) => Number(e.split(':')[0]) <= r.revision).length;
      tt.ok(seen >= due, `progress@${r.revision} after ${seen} events (${due} due)`);
    }
    const lastProgress = progress[progress.length - 1];
    tt.equal(lastProgress?.type === 'progress' && lastProgress.revision, ts.store.currentRevision);
    h.cancel();
  });

  t.test(
    'compaction: below is cancelled with the compact revision, at it is served',
    async (tt) => {
      const { ts, w } = await setup(tt);
      for (let i = 0; i < 4; i++) await ts.put(`/c/${i}`, `v${i}`);
      await ts.del('/c/0'); // rev 6
      await ts.put('/c/1', 'w'); // rev 7
      await ts.txn([
        { op: 'delete', key: '/c/2' },
        { op: 'put', key: '/c/5', value: 'new' },
      ]); // rev 8
      await ts.put('/c/3', 'z'); // rev 9
      await ts.compact(8);
      const below = w.watch({ ...P, startRevision: 7, prevKv: true });
      const [c] = await readUntil(below, (all) => all.length >= 1);
      tt.same(c, { type: 'canceled', cancellation: { reason: 'COMPACTED', compactRevision: 8 } });
      const at = w.watch({ ...P, startRevision: 8, prevKv: true });
      await ts.put('/c/1', 'after'); // rev 10
      const rs = await readUntil(at, (all) =>
        all.some((r) => r.type === 'events' && r.revision === 10),
      );
      // Above the compaction revision: exactly the history. At it: what the store still has; the
      // PUT surely (it is the newest version of its key), the tombstone and prevKvs as the store
      // keeps them (etcd itself may or may not, depending on its background compaction).
      const after = eventStrings(rs).filter((e) => !e.startsWith('8:'));
      tt.same(after, expected(ts.log, { ...P, prevKv: true }, 9));
      const at8 = eventStrings(rs).filter((e) => e.startsWith('8:'));
      tt.ok(
        at8.some((e) => e.startsWith('8:PUT:/c/5=new')),
        `the PUT at the compaction revision: ${at8}`,
      );
      at.cancel();
    },
  );

  t.test('start 0 is from now; a future start waits for its revision', async (tt) => {
    const { ts, w } = await setup(tt);
    await ts.put('/c/a', '1');
    await ts.put('/c/a', '2');
    const now = w.watch({ ...P });
    const future = w.watch({ ...P, startRevision: ts.store.currentRevision + 3 });
    for (let i = 0; i < 5; i++) await ts.put('/c/a', `n${i}`);
    const rs = await readUntil(now, (all) => countEvents(all) >= 5);
    tt.same(eventStrings(rs), expected(ts.log, P, 4));
    const fs = await readUntil(future, (all) => countEvents(all) >= 3);
    tt.same(eventStrings(fs), expected(ts.log, P, 6));
    now.cancel();
    future.cancel();
  });

  t.test('filters and prevKv', async (tt) => {
    const { ts, w } = await setup(tt);
    const noPut = w.watch({ ...P, filters: ['NOPUT'] });
    const noDel = w.watch({ ...P, filters: ['NODELETE'], prevKv: true });
    const plain = w.watch({ ...P });
    await ts.put('/c/k', '1');
    await ts.put('/c/k', '2');
    await ts.del('/c/k');
    await ts.put('/c/k', '3');
    tt.same(
      eventStrings(await readUntil(noPut, (a) => countEvents(a) >= 1)),
      expected(ts.log, { ...P, filters: ['NOPUT'] }, 2),
    );
    tt.same(
      eventStrings(await readUntil(noDel, (a) => countEvents(a) >= 3)),
      expected(ts.log, { ...P, filters: ['NODELETE'], prevKv: true }, 2),
    );
    const ps = await readUntil(plain, (a) => countEvents(a) >= 4);
    tt.ok(
      ps.every((r) => r.type !== 'events' || r.events.every((e) => e.prevKv === undefined)),
      'no prevKv unless asked',
    );
    for (const h of [noPut, noDel, plain]) h.cancel();
  });

  t.test('key, prefix, interval and every key', async (tt) => {
    const { ts, w } = await setup(tt);
    const specs: WatchOptions[] = [
      { key: '/c/a' },
      { key: '/c/', prefix: true },
      { key: '/c/b', rangeEnd: '/c/d' },
      { key: '/c/b', rangeEnd: Uint8Array.of(0) },
      { key: Uint8Array.of(0), rangeEnd: Uint8Array.of(0) },
      { key: '', prefix: true },
    ];
    const hs = specs.map((o) => w.watch(o));
    for (const k of ['/c/a', '/c/ab', '/c/b', '/c/c', '/c/d', '/d', '/b']) await ts.put(k, 'v');
    const want = (o: WatchOptions) => {
      const e = o.prefix ? prefixOf(o.key) : o.rangeEnd;
      return expected(
        ts.log,
        { ...o, key: o.key === '' ? Uint8Array.of(0) : o.key, rangeEnd: e },
        2,
      );
    };
    for (let i = 0; i < specs.length; i++) {
      const wants = want(specs[i]!);
      const rs = await readUntil(hs[i]!, (a) => countEvents(a) >= wants.length);
      tt.same(eventStrings(rs), wants, JSON.stringify(specs[i]));
      tt.same(await readFor(hs[i]!, 5), [], 'nothing more');
    }
    for (const h of hs) h.cancel();
  });

  t.test('an empty range is refused', async (tt) => {
    const { w } = await setup(tt);
    let error: unknown;
    try {
      w.watch({ key: '/c/b', rangeEnd: '/c/a' });
    } catch (e) {
      error = e;
    }
    tt.ok(isEtceteraError(error, 'ERR_WATCH_RANGE_EMPTY'), `refused: ${error}`);
  });

  t.test('cancel ends the stream', async (tt) => {
    const { ts, w } = await setup(tt);
    const h = w.watch({ ...P });
    await ts.put('/c/x', '1');
    await readUntil(h, (a) => countEvents(a) >= 1);
    h.cancel();
    await ts.put('/c/x', '2');
    const r = await h.next();
    tt.equal(r.done, true, 'done after cancel');
  });
}

function prefixOf(key: WatchOptions['key']): Uint8Array {
  const k = typeof key === 'string' ? b(key) : key;
  if (k.length === 0) return Uint8Array.of(0);
  const end = k.slice();
  end[end.length - 1] = end[end.length - 1]! + 1;
  return end;
}
