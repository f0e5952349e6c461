/**
 * etcd's watch stream over the cache (src/watchcache/etcd-session.ts, connection.ts), without
 * HTTP: a fast-check property over random request sequences (creates that replay history or
 * start live, explicit and chosen ids, refusals, cancels, progress requests, writes between
 * them, event-loop turns at random points) checks that the answers leave in request order,
 * that every watch gets its events once each and in order, and that every progress answer
 * follows every event at or below its revision; and a count of the work a progress request
 * does, the same with 10 watches as with 2,000.
 */
import fc from 'fast-check';
import t from 'tap';
import { Cacher } from '../../src/watchcache/cacher.js';
import { type EtcdFrame, EtcdJsonFormat } from '../../src/watchcache/encoders/etcd-json.js';
import { type EtcdCreateRequest, EtcdWatchSession } from '../../src/watchcache/etcd-session.js';
import type { FrameSink } from '../../src/watchcache/types.js';
import { Watcher } from '../../src/watchcache/watcher.js';
import { turns } from './harness.js';
import { MemoryStore } from './memory-store.js';

const KEYS = ['k0', 'k1', 'k2'];
const MAX_WATCHES = 4;

interface Response {
  kind: 'created' | 'refused' | 'canceled' | 'progress' | 'events';
  id: number;
  revision: number;
  keys: string[];
}

class Collect implements FrameSink<EtcdFrame> {
  readonly out: Response[] = [];
  write(frames: readonly EtcdFrame[]): void {
    for (const f of frames) {
      const r = JSON.parse(Buffer.concat(f.chunks as Buffer[]).toString()).result;
      const id = Number(r.watch_id ?? 0);
      const revision = Number(r.header.revision ?? 0);
      const keys = (r.events ?? []).map((e: { kv: { key: string } }) =>
        Buffer.from(e.kv.key, 'base64').toString(),
      );
      const kind = r.events
        ? 'events'
        : r.created && r.canceled
          ? 'refused'
          : r.created
            ? 'created'
            : r.canceled
              ? 'canceled'
              : 'progress';
      this.out.push({ kind, id, revision, keys });
    }
  }
  bufferedBytes(): number {
    return 0;
  }
  onceDrain(): void {}
}

type Cmd =
  | { c: 'create'; key: number; id: number; start: 'live' | 'one' | 'mid'; empty: boolean }
  | { c: 'cancel'; id: number }
  | { c: 'progress' }
  | { c: 'put'; key: number }
  | { c: 'turns'; n: number };

const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  fc.record({
    c: fc.constant('create' as const),
    key: fc.nat(2),
    id: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5 })),
    start: fc.constantFrom('live' as const, 'one' as const, 'mid' as const),
    empty: fc.boolean(),
  }),
  fc.record({ c: fc.constant('cancel' as const), id: fc.nat(6) }),
  fc.constant({ c: 'progress' as const }),
  fc.record({ c: fc.constant('put' as const), key: fc.nat(2) }),
  fc.record({ c: fc.constant('turns' as const), n: fc.integer({ min: 1, max: 3 }) }),
);

/** One watch as the model knows it: which revisions it must see, and when it was alive. */
interface Instance {
  id: number;
  key: string;
  from: number;
  /** Index in the expected answers of its created / canceled answer. */
  createdAt: number;
  canceledAt: number | null;
}

t.test(
  'property: answers in request order, events once each, progress after its events',
  async (t) => {
    await t.resolves(
      fc.assert(
        fc.asyncProperty(fc.array(cmd, { minLength: 1, maxLength: 40 }), async (cmds) => {
          const store = new MemoryStore();
          for (let i = 0; i < 4; i++) store.put(KEYS[i % 3]!, `seed${i}`); // history to replay
          const cacher = new Cacher(store, { maxDeliveriesPerTurn: 3 }); // small turns: more interleaving
          const sink = new Collect();
          const session = new EtcdWatchSession(cacher, new EtcdJsonFormat(), sink, {
            maxWatches: MAX_WATCHES,
          });
          // The model of etcd's stream rules and the expected answers, in request order.
          const expected: string[] = [];
          const live = new Map<number, Instance>();
          const instances: Instance[] = [];
          const puts: { revision: number; key: string }[] = [];
          let nextAuto = 0;
          try {
            for (const c of cmds) {
              if (c.c === 'put') {
                puts.push({ revision: store.put(KEYS[c.key]!, 'v'), key: KEYS[c.key]! });
              } else if (c.c === 'turns') {
                await turns(c.n);
              } else if (c.c === 'progress') {
                session.progress();
                expected.push('progress -1');
              } else if (c.c === 'cancel') {
                session.cancel(c.id);
                const w = live.get(c.id);
                if (w !== undefined) {
                  live.delete(c.id);
                  w.canceledAt = expected.length;
                  expected.push(`canceled ${c.id}`);
                }
              } else {
                const current = cacher.revision as number;
                const startRevision = c.start === 'live' ? 0 : c.start === 'one' ? 1 : 3;
                const key = KEYS[c.key]!;
                const req: EtcdCreateRequest = {
                  key,
                  rangeEnd: c.empty ? 'k' : undefined,
                  startRevision,
                  watchId: c.id,
                };
                session.create(req);
                let id = c.id;
                if (live.size >= MAX_WATCHES || c.empty || (id !== 0 && live.has(id))) {
                  expected.push('refused -1');
                  continue;
                }
                if (id === 0) {
                  while (live.has(nextAuto)) nextAuto++;
                  id = nextAuto++;
                }
                const w: Instance = {
                  id,
                  key,
                  from: startRevision === 0 ? current + 1 : startRevision,
                  createdAt: expected.length,
                  canceledAt: null,
                };
                live.set(id, w);
                instances.push(w);
                expected.push(`created ${id}`);
              }
            }
            for (let i = 0; i < 200 && answers(sink.out).length < expected.length; i++)
              await turns(1);
            await turns(10);
            const out = sink.out;
            const got = answers(out).map((r) => `${r.kind} ${r.id}`);
            if (JSON.stringify(got) !== JSON.stringify(expected))
              throw new Error(
                `answers ${JSON.stringify(got)}, expected ${JSON.stringify(expected)}`,
              );
            // Where each answer is in the output.
            const answerPos: number[] = [];
            out.forEach((r, i) => {
              if (r.kind !== 'events') answerPos.push(i);
            });
            const all = [
              { revision: 2, key: 'k0' },
              { revision: 3, key: 'k1' },
              { revision: 4, key: 'k2' },
              { revision: 5, key: 'k0' },
              ...puts,
            ];
            for (const w of instances) {
              const start = answerPos[w.createdAt]!;
              const end = w.canceledAt === null ? out.length : answerPos[w.canceledAt]!;
              const revs = out
                .slice(start + 1, end)
                .filter((r) => r.kind === 'events' && r.id === w.id)
                .map((r) => r.revision);
              const want = all
                .filter((p) => p.key === w.key && p.revision >= w.from)
                .map((p) => p.revision);
              const prefix = want.slice(0, revs.length);
              if (JSON.stringify(revs) !== JSON.stringify(prefix))
                throw new Error(`watch ${w.id}: got ${revs}, expected (a prefix of) ${want}`);
              if (w.canceledAt === null && revs.length !== want.length)
                throw new Error(`watch ${w.id}: got ${revs}, expected ${want}`);
              // Every progress answer while it was alive follows its events at or below R.
              expected.forEach((e, j) => {
                if (e !== 'progress -1' || j < w.createdAt) return;
                if (w.canceledAt !== null && j > w.canceledAt) return;
                const at = answerPos[j]!;
                const r = out[at]!.revision;
                const before = out
                  .slice(start + 1, at)
                  .filter((x) => x.kind === 'events' && x.id === w.id).length;
                const due = want.filter((rev) => rev <= r).length;
                if (before < due)
                  throw new Error(`progress at ${r} came before watch ${w.id} had ${due} events`);
              });
            }
          } finally {
            session.close();
            cacher.close();
          }
        }),
        { numRuns: 150 },
      ),
      '150 random streams checked',
    );
  },
);

function answers(out: Response[]): Response[] {
  return out.filter((r) => r.kind !== 'events');
}

/**
 * Counts the work a run of progress requests does on the watches: reads of a watcher's state
 * (what a walk over the stream's watches does for each) and the cacher's per-watcher revision.
 */
async function progressWork(watches: number, requests: number): Promise<number> {
  const store = new MemoryStore();
  const cacher = new Cacher(store);
  const sink = new Collect();
  const session = new EtcdWatchSession(cacher, new EtcdJsonFormat(), sink, { maxWatches: 1e6 });
  for (let i = 0; i < watches; i++) session.create({ key: 'p/', rangeEnd: 'p0', watchId: 0 });
  store.put('p/x', 'v');
  while (sink.out.length < 2 * watches) await turns(1);
  let work = 0;
  const proto = Watcher.prototype;
  const getters = (['state', 'done'] as const)
    .map((name) => [name, Object.getOwnPropertyDescriptor(proto, name)] as const)
    .filter(([, d]) => d?.get !== undefined);
  for (const [name, d] of getters) {
    Object.defineProperty(proto, name, {
      ...d,
      get() {
        work++;
        return d!.get!.call(this);
      },
    });
  }
  const covered = cacher.coveredRevision;
  cacher.coveredRevision = (w) => {
    work++;
    return covered.call(cacher, w);
  };
  try {
    for (let i = 0; i < requests; i++) session.progress();
    while (sink.out.length < 2 * watches + requests) await turns(1);
  } finally {
    for (const [name, d] of getters) Object.defineProperty(proto, name, d!);
    session.close();
    cacher.close();
  }
  const last = sink.out.at(-1)!;
  if (last.kind !== 'progress' || last.revision !== 2) throw new Error('wrong progress answer');
  return work;
}

t.test('a progress request costs the same with 10 watches as with 2,000', async (t) => {
  const small = await progressWork(10, 500);
  const large = await progressWork(2_000, 500);
  t.equal(large, small, `${small} units of watcher work for 500 requests either way`);
  t.ok(small <= 500, 'and at most one unit per request');
});
