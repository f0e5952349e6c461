/**
 * Merged responses (etcd's protobuf format): the revisions a watcher has not received yet leave
 * as one WatchResponse when they are taken together. A property over random bursts of
 * transactions, merge limits and take sizes: every event arrives exactly once and in order,
 * no response splits a revision, a response with more than one revision stays within the
 * limit, and its header carries the last revision in it. A fragmenting watcher's split
 * revision is never merged with others.
 */
import fc from 'fast-check';
import t from 'tap';
import { Cacher } from '../../src/watchcache/cacher.js';
import type { EtcdFrame } from '../../src/watchcache/encoders/etcd-json.js';
import { EtcdProtobufFormat } from '../../src/watchcache/encoders/etcd-protobuf.js';
import type { Watcher } from '../../src/watchcache/watcher.js';
import { etcdProto } from '../../src/wire/proto/index.js';
import { FakeClock, turns } from './harness.js';
import { MemoryStore } from './memory-store.js';

const WatchResponse = etcdProto().type('etcdserverpb.WatchResponse');

interface Decoded {
  bytes: number;
  headerRevision: number;
  watchId: number;
  fragment: boolean;
  events: { key: string; value: string; rev: number }[];
}

function decode(f: EtcdFrame): Decoded {
  const m = WatchResponse.toObject(WatchResponse.decode(Buffer.concat(f.chunks)), {
    longs: Number,
    defaults: true,
  }) as {
    header: { revision: number };
    watch_id: number;
    fragment: boolean;
    events: { kv: { key: Uint8Array; value: Uint8Array; mod_revision: number } }[];
  };
  return {
    bytes: f.bytes,
    headerRevision: m.header.revision,
    watchId: m.watch_id,
    fragment: m.fragment,
    events: m.events.map((e) => ({
      key: Buffer.from(e.kv.key).toString(),
      value: Buffer.from(e.kv.value).toString(),
      rev: e.kv.mod_revision,
    })),
  };
}

/** Takes everything queued for `w` in takes of at most `room` bytes each. */
function drain(cacher: Cacher, w: Watcher<EtcdFrame>, room: number): Decoded[] {
  const out: Decoded[] = [];
  while (w.queuedFrames > 0) for (const f of cacher.take(w, room).frames) out.push(decode(f));
  return out;
}

const burstArb = fc.array(
  fc.array(fc.record({ size: fc.integer({ min: 1, max: 300 }) }), {
    minLength: 1,
    maxLength: 4,
  }),
  { minLength: 1, maxLength: 30 },
);

t.test('merged responses: exactly once, in order, whole revisions, within the limit', async (t) => {
  let merged = 0;
  let responses = 0;
  await fc.assert(
    fc.asyncProperty(
      burstArb,
      fc.integer({ min: 64, max: 4096 }),
      fc.integer({ min: 1, max: 8192 }),
      async (burst, mergeMaxBytes, room) => {
        const store = new MemoryStore();
        const cacher = new Cacher(store, { clock: new FakeClock() });
        try {
          const format = new EtcdProtobufFormat({ mergeMaxBytes });
          const w = cacher.addWatcher({ key: '/m/', prefix: true }, format, { watchId: 7 });
          const sizes = new Map<number, number>();
          const want: { key: string; value: string; rev: number }[] = [];
          for (const [i, ops] of burst.entries()) {
            const rev = store.txn(
              ops.map((o, j) => ({
                op: 'put' as const,
                key: `/m/${j}`,
                value: `${i}.${j}.`.padEnd(o.size, 'x'),
              })),
            );
            sizes.set(rev, ops.length);
            for (const [j, o] of ops.entries())
              want.push({ key: `/m/${j}`, value: `${i}.${j}.`.padEnd(o.size, 'x'), rev });
          }
          await turns(3);
          const got = drain(cacher, w, room);
          if (JSON.stringify(got.flatMap((r) => r.events)) !== JSON.stringify(want))
            throw new Error('events differ from the writes (lost, duplicated or reordered)');
          for (const r of got) {
            const revs = new Map<number, number>();
            for (const e of r.events) revs.set(e.rev, (revs.get(e.rev) ?? 0) + 1);
            for (const [rev, n] of revs)
              if (n !== sizes.get(rev)) throw new Error(`revision ${rev} split: ${n} events`);
            if (revs.size > 1 && r.bytes > mergeMaxBytes)
              throw new Error(`merged response of ${r.bytes} bytes over ${mergeMaxBytes}`);
            if (r.headerRevision !== r.events[r.events.length - 1]!.rev)
              throw new Error('the header is not the last revision of the response');
            if (r.watchId !== 7) throw new Error('watch_id lost in the merge');
            responses++;
            if (revs.size > 1) merged++;
          }
        } finally {
          cacher.close();
        }
      },
    ),
    { numRuns: 150 },
  );
  t.ok(merged > 0, `${merged} of ${responses} responses carried several revisions`);
});

t.test('a burst a watcher has not read leaves as few responses', async (t) => {
  const store = new MemoryStore();
  const cacher = new Cacher(store, { clock: new FakeClock() });
  t.teardown(() => cacher.close());
  const format = new EtcdProtobufFormat({ mergeMaxBytes: 64 * 1024 });
  const w = cacher.addWatcher({ key: '/b/', prefix: true }, format, { watchId: 1 });
  for (let i = 0; i < 100; i++) store.put(`/b/${i % 7}`, `v${i}`);
  await turns(3);
  t.equal(w.queuedFrames, 100, 'one frame queued per revision');
  const got = drain(cacher, w, Number.POSITIVE_INFINITY);
  t.equal(got.length, 1, 'one response for the hundred revisions');
  t.same(
    got[0]!.events.map((e) => e.value),
    Array.from({ length: 100 }, (_, i) => `v${i}`),
  );
});

t.test('a fragmented revision is not merged with its neighbours', async (t) => {
  const store = new MemoryStore();
  const cacher = new Cacher(store, { clock: new FakeClock() });
  t.teardown(() => cacher.close());
  const format = new EtcdProtobufFormat({ fragmentMaxBytes: 1000, mergeMaxBytes: 64 * 1024 });
  const w = cacher.addWatcher({ key: '/f/', prefix: true, fragment: true }, format, {
    watchId: 3,
  });
  store.put('/f/a', 'before');
  store.txn(
    Array.from({ length: 6 }, (_, i) => ({
      op: 'put' as const,
      key: `/f/${i}`,
      value: 'y'.repeat(400),
    })),
  );
  store.put('/f/b', 'after');
  await turns(3);
  const got = drain(cacher, w, Number.POSITIVE_INFINITY);
  const revs = got.map((r) => [...new Set(r.events.map((e) => e.rev))]);
  t.ok(got.length >= 4, `${got.length} responses: before, the fragments, after`);
  t.ok(
    revs.every((rs) => rs.length === 1),
    'each response holds one revision',
  );
  t.same(
    got.map((r) => r.fragment),
    [false, ...Array.from({ length: got.length - 3 }, () => true), false, false],
    'fragment set on every part of the split revision but its last',
  );
});
