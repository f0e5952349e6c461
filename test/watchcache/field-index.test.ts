/**
 * The field index: watchers found by a field of the value (spec.nodeName-style), not by key.
 * 10,000 watchers of one prefix, each with its own value, cost O(1) match work per event and
 * each event reaches only the watchers of its old and new value; and for random writes a
 * field-selected watcher gets exactly the revisions whose old or new value is its own, whether
 * it follows live or catches up from the window or the store's history.
 */
import fc from 'fast-check';
import t from 'tap';
import type { EventBatch } from '../../src/store/types.js';
import { Cacher } from '../../src/watchcache/cacher.js';
import { type ObjectFrame, objectEncoder } from '../../src/watchcache/encoders/object.js';
import type { IndexedField } from '../../src/watchcache/field-index.js';
import type { WindowEntry } from '../../src/watchcache/types.js';
import type { Watcher } from '../../src/watchcache/watcher.js';
import { FakeClock, turns } from './harness.js';
import { MemoryStore } from './memory-store.js';

const dec = new TextDecoder();

/** Values look like `<node>|<payload>`: the field is the part before the bar. */
function nodeOf(v: Uint8Array | undefined): string | undefined {
  if (v === undefined || v.length === 0) return undefined;
  const s = dec.decode(v);
  const bar = s.indexOf('|');
  return bar < 0 ? undefined : s.slice(0, bar);
}

let decodes = 0;
const nodeField: IndexedField = {
  prefix: '/pods/',
  valueOf(entry: WindowEntry, index: number, before: boolean) {
    decodes++;
    const ev = entry.batch.events[index]!;
    if (before) return nodeOf(ev.prevKv?.value);
    return ev.type === 'PUT' ? nodeOf(ev.kv.value) : undefined;
  },
};

const revisionsOf = (w: Watcher<ObjectFrame>): number[] => {
  const out: number[] = [];
  for (const f of w.take(Number.POSITIVE_INFINITY).frames) {
    if (f.response.type === 'events') out.push(f.response.revision);
  }
  return out;
};

t.test('10,000 watchers of one prefix by node: O(1) match work, own node only', async (t) => {
  const store = new MemoryStore();
  const cacher = new Cacher(store, { clock: new FakeClock() });
  t.teardown(() => cacher.close());
  const ws = Array.from({ length: 10_000 }, (_, i) =>
    cacher.addWatcher({ key: '/pods/', prefix: true, prevKv: true }, objectEncoder, {
      field: { field: nodeField, value: `n${i}` },
    }),
  );
  const before = cacher.stats().matchWork;
  for (let i = 0; i < 100; i++) store.put(`/pods/p${i}`, `n${(i * 7919) % 10_000}|v`);
  await turns(3);
  const perEvent = (cacher.stats().matchWork - before) / 100;
  t.ok(perEvent <= 2, `${perEvent} units of match work per event with 10,000 node watchers`);
  t.equal(ws.filter((w) => w.queuedFrames > 0).length, 100, 'each create reached one watcher');
  for (const w of ws) w.take(Number.POSITIVE_INFINITY);

  // Moving a pod from one node to another reaches both: the old node sees it leave.
  const moved = store.put('/pods/p1', 'n42|v');
  const deleted = store.delete('/pods/p2');
  await turns(3);
  t.same(revisionsOf(ws[7919]!), [moved], 'the old node gets the move');
  t.same(revisionsOf(ws[42]!), [moved], 'the new node gets the move');
  t.same(revisionsOf(ws[(2 * 7919) % 10_000]!), [deleted], 'a delete reaches its node by prevKv');
  t.equal(ws.filter((w) => w.queuedFrames > 0).length, 0, 'nobody else got anything');
  // Keys outside the field's prefix are not looked up at all.
  const decodesBefore = decodes;
  store.put('/other/x', 'n1|v');
  await turns(3);
  t.equal(decodes, decodesBefore, 'an event outside the prefix is not read for the field');
});

t.test('a field-selected watcher gets exactly its revisions, live or caught up', async (t) => {
  const op = fc.record({
    pod: fc.integer({ min: 0, max: 4 }),
    node: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
  });
  await fc.assert(
    fc.asyncProperty(
      fc.array(op, { minLength: 1, maxLength: 40 }),
      fc.integer({ min: 0, max: 3 }),
      fc.integer({ min: 0, max: 40 }),
      fc.integer({ min: 2, max: 8 }),
      async (ops, node, startAt, windowMaxEvents) => {
        const store = new MemoryStore();
        const log: EventBatch[] = [];
        store.subscribe((batch) => log.push(batch));
        const cacher = new Cacher(store, { clock: new FakeClock(), windowMaxEvents });
        try {
          const value = `n${node}`;
          const sel = { field: { field: nodeField, value } };
          const opts = { key: '/pods/', prefix: true, prevKv: true };
          const live = cacher.addWatcher(opts, objectEncoder, sel);
          const wanted: number[] = [];
          for (const o of ops) {
            const key = `/pods/p${o.pod}`;
            const logged = log.length;
            const rev =
              o.node === undefined ? store.delete(key) : store.put(key, `n${o.node}|${o.pod}`);
            const batch = log[logged];
            if (batch === undefined) continue; // a delete of nothing
            const ev = batch.events[0]!;
            const after = ev.type === 'PUT' ? nodeOf(ev.kv.value) : undefined;
            if (after === value || nodeOf(ev.prevKv?.value) === value) wanted.push(rev);
          }
          store.put('/other/x', 'n0|x'); // outside the prefix: never selected
          // A second watcher starts in the past: window or store history, then live.
          const from = Math.min(startAt + 1, store.currentRevision);
          const late = cacher.addWatcher({ ...opts, startRevision: from }, objectEncoder, sel);
          for (let i = 0; i < 20 && late.state !== 'SYNCED'; i++) await turns(2);
          await turns(3);
          t.same(revisionsOf(live), wanted);
          t.same(
            revisionsOf(late),
            wanted.filter((r) => r >= from),
          );
        } finally {
          cacher.close();
        }
      },
    ),
    { numRuns: 100 },
  );
});
