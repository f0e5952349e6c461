/**
 * The data structures under the cache: the history ring and its interval cursor, the interval
 * tree and the watcher index (checked against brute force), and the time budget.
 */

import fc from 'fast-check';
import t from 'tap';
import { isEtceteraError } from '../../src/errors.js';
import { type EventBatch, LeaseId, Revision } from '../../src/store/types.js';
import { HistoryRing } from '../../src/watchcache/history-ring.js';
import { WindowInterval } from '../../src/watchcache/interval.js';
import { IntervalTree } from '../../src/watchcache/interval-tree.js';
import { type KeyRangeKind, normalizeRange, rangeContains } from '../../src/watchcache/keys.js';
import { TimeBudget } from '../../src/watchcache/time-budget.js';
import { ByteSize, type WindowEntry } from '../../src/watchcache/types.js';
import { WatcherIndex } from '../../src/watchcache/watcher-index.js';
import { bytesToLatin1 } from '../../src/wire/bytes.js';
import { FakeClock } from './harness.js';
import { b } from './memory-store.js';

function entry(revision: number, events = 1, bytes = 100): WindowEntry {
  const kv = {
    key: b(`k${revision}`),
    value: b('v'),
    createRevision: Revision(revision),
    modRevision: Revision(revision),
    version: 1,
    lease: LeaseId(0),
  };
  const batch: EventBatch = {
    revision: Revision(revision),
    events: Array.from({ length: events }, () => ({ type: 'PUT' as const, kv })),
  };
  return { batch, bytes: ByteSize(bytes), encodings: new Map(), receivedAtMs: 0 };
}

const limits = { initialSlots: 2, maxSlots: 8, maxEvents: 100, maxBytes: 10_000 };

t.test('ring: indices only grow, capacity doubles, invariants hold', async (t) => {
  const ring = new HistoryRing(limits, Revision(2));
  t.equal(ring.capacity, 2);
  for (let r = 2; r < 12; r++) ring.push(entry(r));
  t.equal(ring.capacity, 16, 'doubled from 2 to 16 to hold 10 entries');
  t.equal(ring.length, 10);
  t.ok(ring.overLimits(), '10 entries > 8 slots');
  t.ok(ring.valid());
  ring.evictOldest();
  ring.evictOldest();
  t.equal(ring.startIndex, 2);
  t.equal(ring.endIndex, 10);
  t.equal(ring.coveredFrom, 4);
  t.notOk(ring.overLimits());
  t.ok(ring.valid());
  t.equal(ring.at(2).batch.revision, 4);
  t.throws(() => ring.at(1), RangeError);
  t.throws(() => ring.push(entry(5)), 'revisions must increase');
});

t.test('ring: limits by events and bytes', async (t) => {
  const byEvents = new HistoryRing({ ...limits, maxEvents: 5 }, Revision(1));
  byEvents.push(entry(1, 3));
  t.notOk(byEvents.overLimits());
  byEvents.push(entry(2, 3));
  t.ok(byEvents.overLimits(), '6 events > 5');
  const byBytes = new HistoryRing({ ...limits, maxBytes: 250 }, Revision(1));
  byBytes.push(entry(1, 1, 200));
  byBytes.push(entry(2, 1, 100));
  t.ok(byBytes.overLimits(), '300 bytes > 250');
  t.equal(byBytes.bytes, 300);
  byBytes.evictOldest();
  t.equal(byBytes.bytes, 100);
});

t.test('ring: binary search by revision, and a typed too-old error', async (t) => {
  const ring = new HistoryRing({ ...limits, maxSlots: 64 }, Revision(3));
  for (const r of [3, 5, 6, 9, 12]) ring.push(entry(r));
  t.equal(ring.indexAtOrAfter(3), 0);
  t.equal(ring.indexAtOrAfter(4), 1);
  t.equal(ring.indexAtOrAfter(9), 3);
  t.equal(ring.indexAtOrAfter(10), 4);
  t.equal(ring.indexAtOrAfter(13), 5, 'past the end: endIndex');
  ring.evictOldest();
  let error: unknown;
  try {
    ring.indexAtOrAfter(3);
  } catch (e) {
    error = e;
  }
  t.ok(isEtceteraError(error, 'ERR_WATCH_TOO_OLD'), 'revision 3 was evicted');
  t.equal(ring.indexAtOrAfter(4), 1, 'coveredFrom is 4: nothing was lost at 4');
});

t.test('interval: follows the ring and reports when eviction overtook it', async (t) => {
  const ring = new HistoryRing({ ...limits, maxSlots: 64 }, Revision(1));
  for (let r = 1; r <= 4; r++) ring.push(entry(r));
  const it = new WindowInterval(ring, 2);
  const step = it.next();
  t.equal(step.kind === 'entry' && step.entry.batch.revision, 2);
  ring.push(entry(5));
  ring.evictOldest();
  ring.evictOldest();
  t.equal(it.next().kind, 'entry', 'index 2 (revision 3) is still there');
  ring.evictOldest();
  ring.evictOldest();
  t.equal(it.next().kind, 'wrapped', 'index 3 was evicted under the cursor');
  const tail = new WindowInterval(ring, 5);
  t.equal(tail.next().kind, 'entry');
  t.equal(tail.next().kind, 'end');
  ring.push(entry(6));
  const six = tail.next();
  t.equal(six.kind === 'entry' && six.entry.batch.revision, 6, 'sees entries appended later');
});

const keyArb = fc
  .array(fc.constantFrom(0x00, 0x2f, 0x61, 0x62, 0x63, 0xff), { minLength: 1, maxLength: 4 })
  .map((xs) => Uint8Array.from(xs));

const rangeArb: fc.Arbitrary<KeyRangeKind> = fc
  .tuple(keyArb, fc.option(keyArb), fc.constantFrom('key', 'range', 'prefix', 'all-from'))
  .map(([k, e, kind]) => {
    try {
      if (kind === 'key') return normalizeRange(k, undefined);
      if (kind === 'all-from') return normalizeRange(k, Uint8Array.of(0));
      if (kind === 'prefix') {
        const end = k.slice();
        let i = end.length - 1;
        while (i >= 0 && end[i] === 0xff) i--;
        if (i < 0) return normalizeRange(k, Uint8Array.of(0));
        end[i] = end[i]! + 1;
        return normalizeRange(k, end.slice(0, i + 1));
      }
      return normalizeRange(k, e ?? undefined);
    } catch {
      return normalizeRange(k, undefined);
    }
  });

t.test('index and interval tree: match exactly what brute force matches', async (t) => {
  t.doesNotThrow(
    () =>
      fc.assert(
        fc.property(
          fc.array(rangeArb, { maxLength: 40 }),
          fc.array(fc.nat(), { maxLength: 10 }),
          fc.array(keyArb, { maxLength: 20 }),
          (ranges, removals, keys) => {
            const index = new WatcherIndex<{ range: KeyRangeKind; id: number }>();
            const live = ranges.map((range, id) => ({ range, id }));
            for (const w of live) index.add(w);
            for (const r of removals) {
              const i = r % Math.max(1, live.length);
              const w = live[i];
              if (w === undefined) continue;
              index.remove(w);
              live.splice(i, 1);
            }
            if (index.size !== live.length) return false;
            for (const k of keys) {
              const key = bytesToLatin1(k);
              const got: number[] = [];
              index.forEachMatch(key, (w) => got.push(w.id));
              const want = live.filter((w) => rangeContains(w.range, key)).map((w) => w.id);
              if (got.sort((x, y) => x - y).join() !== want.sort((x, y) => x - y).join())
                return false;
            }
            return true;
          },
        ),
        { numRuns: 300 },
      ),
    '300 random index states agree with brute force',
  );
});

t.test('interval tree: stabbing work stays logarithmic for disjoint intervals', async (t) => {
  const tree = new IntervalTree<number>();
  const n = 10_000;
  const k = (i: number) => `k${String(i).padStart(6, '0')}`;
  for (let i = 0; i < n; i++) tree.add(k(i), `${k(i)}~`, i);
  let total = 0;
  let maxWork = 0;
  for (let i = 0; i < n; i += 97) {
    const hits: number[] = [];
    const work = tree.stab(`${k(i)}x`, (m) => hits.push(m));
    t.same(hits, [i]);
    total++;
    maxWork = Math.max(maxWork, work);
  }
  t.ok(maxWork < 120, `at most ${maxWork} nodes per query over ${total} queries (n=${n})`);
  t.ok(tree.remove(k(5), `${k(5)}~`, 5));
  t.notOk(tree.remove(k(5), `${k(5)}~`, 5), 'already gone');
  t.equal(tree.size, n - 1);
});

t.test('time budget: take all, refill per second up to the max, return unused', async (t) => {
  const clock = new FakeClock();
  const budget = new TimeBudget(clock, 100, 50);
  t.equal(budget.takeAvailable(), 100);
  t.equal(budget.takeAvailable(), 0, 'empty until it refills');
  clock.advance(1000);
  t.equal(budget.takeAvailable(), 50, 'refilled 50 ms in a second');
  budget.returnUnused(30);
  t.equal(budget.available(), 30);
  clock.advance(10_000);
  t.equal(budget.available(), 100, 'never above the max');
  budget.returnUnused(500);
  t.equal(budget.available(), 100);
});
