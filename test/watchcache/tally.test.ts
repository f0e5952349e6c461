/**
 * The cacher's tally (src/watchcache/tally.ts), against a model: random sequences of streams
 * of two kinds opened and closed, watches created (live or replaying history) and cancelled,
 * writes and event-loop turns. Once the turns have run, each kind's connections and watchers
 * are what the model says is open, and the watchers ended by reason CLIENT are the watches
 * cancelled or left on a closed stream. Then a watcher that stops reading counts as slow while
 * it is over its bound and as ended SLOW once it is cancelled.
 */
import fc from 'fast-check';
import t from 'tap';
import { Cacher } from '../../src/watchcache/cacher.js';
import { type EtcdFrame, EtcdJsonFormat } from '../../src/watchcache/encoders/etcd-json.js';
import { EtcdWatchSession } from '../../src/watchcache/etcd-session.js';
import type { FrameSink } from '../../src/watchcache/types.js';
import { turns } from './harness.js';
import { MemoryStore } from './memory-store.js';

const sink = (): FrameSink<EtcdFrame> => ({
  write() {},
  bufferedBytes: () => 0,
  onceDrain() {},
});

type Cmd =
  | { c: 'open'; kind: 'a' | 'b' }
  | { c: 'close'; stream: number }
  | { c: 'create'; stream: number; replay: boolean }
  | { c: 'cancel'; stream: number; id: number }
  | { c: 'put' }
  | { c: 'turns' };

const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  fc.record({ c: fc.constant('open' as const), kind: fc.constantFrom('a' as const, 'b' as const) }),
  fc.record({ c: fc.constant('close' as const), stream: fc.nat(5) }),
  fc.record({ c: fc.constant('create' as const), stream: fc.nat(5), replay: fc.boolean() }),
  fc.record({ c: fc.constant('cancel' as const), stream: fc.nat(5), id: fc.nat(4) }),
  fc.constant({ c: 'put' as const }),
  fc.constant({ c: 'turns' as const }),
);

interface Stream {
  kind: 'a' | 'b';
  session: EtcdWatchSession;
  open: boolean;
  ids: Set<number>;
  nextId: number;
}

t.test('property: connections and watchers by kind, and CLIENT ends, match a model', async (t) => {
  await t.resolves(
    fc.assert(
      fc.asyncProperty(fc.array(cmd, { minLength: 1, maxLength: 40 }), async (cmds) => {
        const store = new MemoryStore();
        for (let i = 0; i < 3; i++) store.put(`k${i}`, 'seed');
        const cacher = new Cacher(store, { maxDeliveriesPerTurn: 2 });
        const format = new EtcdJsonFormat();
        const streams: Stream[] = [];
        let clientEnds = 0;
        try {
          for (const c of cmds) {
            const s = 'stream' in c ? streams[c.stream] : undefined;
            if (c.c === 'open') {
              const session = new EtcdWatchSession(cacher, format, sink(), { kind: c.kind });
              streams.push({ kind: c.kind, session, open: true, ids: new Set(), nextId: 1 });
            } else if (c.c === 'put') store.put('k0', 'v');
            else if (c.c === 'turns') await turns(2);
            else if (s === undefined || !s.open) continue;
            else if (c.c === 'close') {
              s.session.close();
              s.open = false;
              clientEnds += s.ids.size;
              s.ids.clear();
            } else if (c.c === 'create') {
              const id = s.nextId++;
              s.session.create({
                key: 'k',
                rangeEnd: 'l',
                startRevision: c.replay ? 1 : 0,
                watchId: id,
              });
              s.ids.add(id);
            } else if (s.ids.has(c.id)) {
              s.session.cancel(c.id);
              s.ids.delete(c.id);
              clientEnds++;
            }
          }
          await turns(5);
          for (const kind of ['a', 'b'] as const) {
            const open = streams.filter((s) => s.kind === kind && s.open);
            const want = {
              connections: open.length,
              watchers: open.reduce((n, s) => n + s.ids.size, 0),
            };
            const got = cacher.tally.byKind().find((k) => k.kind === kind) ?? {
              connections: 0,
              watchers: 0,
            };
            if (got.connections !== want.connections || got.watchers !== want.watchers)
              throw new Error(
                `kind ${kind}: ${JSON.stringify(got)}, model ${JSON.stringify(want)}`,
              );
          }
          if (cacher.tally.ended.CLIENT !== clientEnds)
            throw new Error(`CLIENT ends ${cacher.tally.ended.CLIENT}, model ${clientEnds}`);
          if (cacher.tally.slowNow !== 0) throw new Error('a watcher counted as slow');
        } finally {
          cacher.close();
        }
      }),
      { numRuns: 150 },
    ),
  );
});

t.test('a watcher that stops reading is slow, then ended SLOW', async (t) => {
  const store = new MemoryStore();
  const cacher = new Cacher(store, {
    watcherBufferBytes: 4 * 1024,
    watcherHardBufferBytes: 64 * 1024,
    slowBudgetMaxMs: 60_000,
    slowBudgetRefillMsPerSecond: 0,
  });
  t.teardown(() => cacher.close());
  const stalled = cacher.watchIterator({ key: 'k', prefix: true });
  const value = 'x'.repeat(1024);
  for (let i = 0; i < 8; i++) store.put(`k${i}`, value);
  await turns(3);
  t.equal(cacher.tally.slowNow, 1, 'over its soft bound, in its grace: one slow watcher');
  t.equal(cacher.tally.ended.SLOW, 0, 'not cancelled yet');
  for (let i = 0; i < 80; i++) store.put(`k${i}`, value);
  await turns(3);
  t.equal(cacher.tally.ended.SLOW, 1, 'over its hard bound: cancelled, counted as SLOW');
  t.equal(cacher.tally.slowNow, 0, 'and no longer counted as slow');
  await stalled.return?.();
});
