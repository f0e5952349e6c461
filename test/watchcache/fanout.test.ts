/**
 * Fan-out properties: the index does O(1) work per event however many watchers there are;
 * work per event-loop turn is capped (a setImmediate runs in the middle of a large fan-out),
 * in deliveries and in time, connection writes included; each event is encoded once per format
 * and the bytes are shared; writes to one connection are coalesced to one per turn.
 */
import t, { type Test } from 'tap';
import { Cacher } from '../../src/watchcache/cacher.js';
import { Connection } from '../../src/watchcache/connection.js';
import { type EtcdFrame, EtcdJsonFormat } from '../../src/watchcache/encoders/etcd-json.js';
import { objectEncoder } from '../../src/watchcache/encoders/object.js';
import type { FrameSink } from '../../src/watchcache/types.js';
import { FakeClock, turns } from './harness.js';
import { MemoryStore } from './memory-store.js';

const key = (i: number) => `/k/${String(i).padStart(5, '0')}`;

t.test('10,000 watchers on distinct keys: O(1) match work per event', async (t) => {
  const store = new MemoryStore();
  const cacher = new Cacher(store, { clock: new FakeClock() });
  t.teardown(() => cacher.close());
  const ws = Array.from({ length: 10_000 }, (_, i) =>
    cacher.addWatcher({ key: key(i) }, objectEncoder),
  );
  const before = cacher.stats().matchWork;
  for (let i = 0; i < 100; i++) store.put(key((i * 7919) % 10_000), `v${i}`);
  await turns(3);
  const perEvent = (cacher.stats().matchWork - before) / 100;
  t.ok(perEvent <= 1, `${perEvent} units of match work per event with 10,000 exact-key watchers`);
  const got = ws.filter((w) => w.queuedFrames > 0).length;
  t.equal(got, 100, 'each put reached exactly its one watcher');

  // A few prefix lengths and intervals add a bounded amount, still not O(watchers).
  for (let i = 0; i < 1000; i++)
    cacher.addWatcher({ key: `/k/${String(i).padStart(3, '0')}`, prefix: true }, objectEncoder);
  for (let i = 0; i < 1000; i++) {
    cacher.addWatcher({ key: key(i * 10), rangeEnd: `${key(i * 10)}~` }, objectEncoder);
  }
  const before2 = cacher.stats().matchWork;
  for (let i = 0; i < 100; i++) store.put(key((i * 31) % 10_000), `w${i}`);
  await turns(3);
  const perEvent2 = (cacher.stats().matchWork - before2) / 100;
  t.ok(perEvent2 < 60, `${perEvent2} units per event with 12,000 watchers of three kinds`);
});

t.test('a setImmediate runs during a large fan-out (work per turn is capped)', async (t) => {
  // The clock stands still here, so the delivery cap alone ends each turn.
  const store = new MemoryStore();
  const cacher = new Cacher(store, { maxDeliveriesPerTurn: 500, clock: new FakeClock() });
  t.teardown(() => cacher.close());
  const ws = Array.from({ length: 10_000 }, () =>
    cacher.addWatcher({ key: '/p/', prefix: true }, objectEncoder),
  );
  store.put('/p/x', 'v');
  const seen = await new Promise<number>((resolve) => {
    setImmediate(() => resolve(ws.filter((w) => w.queuedFrames > 0).length));
  });
  t.ok(seen > 0 && seen < 10_000, `the other callback ran with ${seen} of 10,000 watchers served`);
  await turns(25);
  t.equal(ws.filter((w) => w.queuedFrames > 0).length, 10_000, 'then everyone got it');
});

t.test(
  'each event is encoded once per format; framing is spliced around shared bytes',
  async (t) => {
    const store = new MemoryStore();
    const cacher = new Cacher(store, { clock: new FakeClock() });
    t.teardown(() => cacher.close());
    const encoded = { events: 0, heads: 0, tails: 0 };
    const format = new EtcdJsonFormat({
      header: () => ({
        clusterId: '14841639068965178418',
        memberId: '10276657743932975437',
        raftTerm: '2',
      }),
      onEncode: (part) => {
        if (part === 'event') encoded.events++;
        else if (part === 'head') encoded.heads++;
        else encoded.tails++;
      },
    });
    store.put('/p/a', 'old');
    const plain = Array.from({ length: 500 }, (_, i) =>
      cacher.addWatcher({ key: '/p/', prefix: true }, format, { watchId: i + 1 }),
    );
    const withPrev = Array.from({ length: 500 }, (_, i) =>
      cacher.addWatcher({ key: '/p/', prefix: true, prevKv: true }, format, { watchId: i + 1 }),
    );
    const start = { ...encoded };
    store.put('/p/a', 'new');
    await turns(3);
    t.equal(encoded.events - start.events, 2, 'one encoding per prevKv variant');
    t.equal(encoded.heads - start.heads, 1, 'one header');
    t.equal(encoded.tails - start.tails, 2, 'one events tail per variant');
    const frames = [...plain, ...withPrev].map((w) => w.take(Number.POSITIVE_INFINITY).frames[0]!);
    const heads = new Set(frames.map((f) => f.chunks[0]));
    const tails = new Set(frames.map((f) => f.chunks[f.chunks.length - 1]));
    t.equal(heads.size, 1, 'every frame shares the same head bytes');
    t.equal(tails.size, 2, 'and one of two tails');
    const text = Buffer.concat(frames[41]!.chunks).toString();
    t.equal(
      text,
      '{"result":{"header":{"cluster_id":"14841639068965178418","member_id":"10276657743932975437","revision":"3","raft_term":"2"},"watch_id":"42","events":[{"kv":{"key":"L3AvYQ==","create_revision":"2","mod_revision":"3","version":"2","value":"bmV3"}}]}}',
    );
    t.ok(
      JSON.parse(Buffer.concat(frames[600]!.chunks).toString()).result.events[0].prev_kv,
      'prev_kv variant',
    );

    // A txn touching several keys: watchers with the same selection share its tail too.
    const one = Array.from({ length: 100 }, (_, i) =>
      cacher.addWatcher({ key: '/q/1' }, format, { watchId: i }),
    );
    const before = { ...encoded };
    store.txn([
      { op: 'put', key: '/q/0', value: 'a' },
      { op: 'put', key: '/q/1', value: 'b' },
      { op: 'put', key: '/q/2', value: 'c' },
    ]);
    await turns(3);
    t.equal(encoded.tails - before.tails, 1, 'one tail for the /q/1 selection');
    t.equal(encoded.events - before.events, 1, 'only the selected event was encoded');
    t.equal(new Set(one.map((w) => w.take(1e9).frames[0]!.chunks.at(-1))).size, 1);
  },
);

class CountingSink implements FrameSink<EtcdFrame> {
  writes: EtcdFrame[][] = [];
  write(frames: readonly EtcdFrame[]): void {
    this.writes.push([...frames]);
  }
  bufferedBytes(): number {
    return 0;
  }
  onceDrain(): void {}
}

t.test('writes to one connection are coalesced: one write per event-loop turn', async (t) => {
  const store = new MemoryStore();
  // A clock that stands still: the time slice never ends, so the turn does all the work.
  const cacher = new Cacher(store, { clock: new FakeClock() });
  t.teardown(() => cacher.close());
  const format = new EtcdJsonFormat();
  const sink = new CountingSink();
  const conn = new Connection(cacher, sink);
  for (let i = 0; i < 100; i++) {
    conn.attach(cacher.addWatcher({ key: '/p/', prefix: true }, format, { watchId: i + 1 }));
  }
  for (let i = 0; i < 10; i++) store.put('/p/x', `v${i}`);
  await turns(5);
  t.equal(sink.writes.length, 1, 'one write');
  t.equal(sink.writes[0]!.length, 1000, 'carrying 10 events for 100 watchers');
  store.put('/p/x', 'again');
  await turns(5);
  t.equal(sink.writes.length, 2, 'a later turn, a second write');
});

/** A sink whose every write costs `msPerWrite` on the fake clock (a socket write's syscall). */
class CostlySink extends CountingSink {
  constructor(
    private readonly clock: FakeClock,
    private readonly msPerWrite: number,
    private readonly onWrite: () => void,
  ) {
    super();
  }
  override write(frames: readonly EtcdFrame[]): void {
    super.write(frames);
    this.clock.advance(this.msPerWrite);
    this.onWrite();
  }
}

t.test(
  'writes are served under fan-out: 2,000 connections share a time slice per turn',
  async (t) => {
    // The starvation this guards against: each of 2,000 connections wrote in its own
    // setImmediate, all in one event-loop turn, so a put's next step (queued as any other
    // callback) waited for 2,000 socket writes per event. Now connection writes run in the
    // cacher's turns, at most `fanoutSliceMs` of clock per turn (plus the write that crosses it).
    const clock = new FakeClock();
    const store = new MemoryStore();
    const cacher = new Cacher(store, { clock, fanoutSliceMs: 5 });
    t.teardown(() => cacher.close());
    const format = new EtcdJsonFormat();
    let written = 0;
    let seenByOther: number | undefined;
    const sinks = Array.from({ length: 2_000 }, () => {
      const sink = new CostlySink(clock, 1, () => {
        written++;
        // The first write of the fan-out queues a callback, as the write path's next step would.
        if (written === 1) setImmediate(() => (seenByOther = written));
      });
      const conn = new Connection(cacher, sink);
      conn.attach(cacher.addWatcher({ key: '/p/', prefix: true }, format));
      return sink;
    });
    store.put('/p/x', 'v');
    await turns(3);
    t.ok(seenByOther !== undefined, 'the other callback ran');
    // At most two slices go before it: the rest of the first turn and the turn already
    // queued before the callback (5 ms each, a write costing 1 ms).
    t.ok(
      seenByOther! <= 12,
      `it ran after ${seenByOther} of 2,000 connection writes (two slices), not after all of them`,
    );
    for (let i = 0; i < 1_000 && written < 2_000; i++) await turns(1);
    t.equal(written, 2_000, 'then every connection got its write');
    t.equal(
      sinks.every((s) => s.writes.length === 1 && s.writes[0]!.length === 1),
      true,
      'one write each, with the one event',
    );
  },
);

/**
 * 500 connections of one watcher each, every connection write costing 1 ms of the fake
 * clock; a put's next step is queued at the first write. Returns how many writes went before
 * that step ran.
 */
async function writesBeforeOtherCallback(
  t: Test,
  options: { writesPending: () => boolean },
): Promise<number> {
  const clock = new FakeClock();
  const store = new MemoryStore();
  const cacher = new Cacher(store, { clock, fanoutSliceMs: 5, busyFanoutSliceMs: 1, ...options });
  t.teardown(() => cacher.close());
  const format = new EtcdJsonFormat();
  let written = 0;
  let seenByOther: number | undefined;
  for (let i = 0; i < 500; i++) {
    const sink = new CostlySink(clock, 1, () => {
      written++;
      if (written === 1) setImmediate(() => (seenByOther = written));
    });
    new Connection(cacher, sink).attach(cacher.addWatcher({ key: '/p/', prefix: true }, format));
  }
  store.put('/p/x', 'v');
  await turns(3);
  for (let i = 0; i < 500 && written < 500; i++) await turns(1);
  t.equal(written, 500, 'every connection got its write');
  t.ok(seenByOther !== undefined, 'the other callback ran');
  return seenByOther!;
}

t.test(
  'writes first: while writes are pending, each fan-out turn takes the busy slice',
  async (t) => {
    // The write path's steps (a LevelDB callback, an apply, the answer) each wait for the
    // fan-out turn in front of them; with writes pending that turn is 1 ms, not 5.
    const busy = await writesBeforeOtherCallback(t, { writesPending: () => true });
    t.ok(busy <= 4, `with writes pending it ran after ${busy} connection writes (two 1 ms slices)`);
    const idle = await writesBeforeOtherCallback(t, { writesPending: () => false });
    t.ok(idle > 4, `with none pending the fan-out kept its 5 ms slices (${idle} writes first)`);
  },
);

t.test('writes first: a busy turn bounds the bytes one connection flush takes', async (t) => {
  const clock = new FakeClock();
  const store = new MemoryStore();
  let pending = true;
  const cacher = new Cacher(store, {
    clock,
    busyFlushBytes: 4096,
    writesPending: () => pending,
  });
  t.teardown(() => cacher.close());
  const format = new EtcdJsonFormat();
  const sink = new CountingSink();
  const conn = new Connection(cacher, sink);
  const watchers = 20;
  for (let i = 0; i < watchers; i++)
    conn.attach(cacher.addWatcher({ key: '/p/', prefix: true }, format, { watchId: i + 1 }));
  await turns(3);
  sink.writes = [];
  const value = 'x'.repeat(200);
  for (let i = 0; i < 50; i++) store.put(`/p/k${i}`, value);
  for (let i = 0; i < 200 && sink.writes.length < 2; i++) await turns(1);
  // The clock stands still, so only the byte bound ends a busy flush.
  const sizes = () => sink.writes.map((w) => w.reduce((n, f) => n + f.bytes, 0));
  const largestFrame = Math.max(...sink.writes.flat().map((f) => f.bytes));
  t.ok(sink.writes.length >= 2, 'the queued frames left in more than one flush');
  t.ok(
    sizes().every((s) => s <= 4096 + largestFrame),
    `busy flushes of ${sizes().slice(0, 5).join(', ')}... bytes, each within 4 KiB plus a frame`,
  );
  pending = false;
  for (let i = 0; i < 200; i++) await turns(1);
  // Every watcher got all 50 events, once each, in order (revisions rise by one per put).
  const revisions = new Map<number, number[]>();
  for (const f of sink.writes.flat()) {
    const r = JSON.parse(Buffer.concat(f.chunks).toString('utf8')).result as {
      watch_id?: string;
      events?: { kv: { mod_revision: string } }[];
    };
    const id = Number(r.watch_id ?? 0);
    const list = revisions.get(id) ?? [];
    for (const e of r.events ?? []) list.push(Number(e.kv.mod_revision));
    revisions.set(id, list);
  }
  const first = revisions.get(1)?.[0] ?? 0;
  const expected = Array.from({ length: 50 }, (_, i) => first + i);
  t.equal(revisions.size, watchers, 'every watcher got events');
  t.ok(
    [...revisions.values()].every((l) => l.length === 50 && l.every((r, i) => r === expected[i])),
    'each got the 50 revisions exactly once, in order',
  );
});
