/**
 * The apply side of a member: entry and snapshot encodings, the waiter table, and the
 * application — store applied index = Raft index for every kind of entry, outcomes handed
 * to the proposer, membership mirrored in the registry, replays idempotent.
 */
import { join } from 'node:path';
import { Level } from 'level';
import t from 'tap';
import type { AppliedEntry } from '../../src/raft/driver/types.js';
import { EntryType, LogIndex, NodeId, Term } from '../../src/raft/types.js';
import { confStateOf, MemberApplication } from '../../src/server/apply.js';
import {
  decodeEntry,
  EntryKind,
  encodeEntry,
  RequestIds,
  Waiters,
} from '../../src/server/entry.js';
import { silentLogger } from '../../src/server/logger.js';
import { MemberMetrics } from '../../src/server/metrics.js';
import { encodeContext, MemberRegistry } from '../../src/server/registry.js';
import { decodeSnapshot, encodeSnapshot } from '../../src/server/snapshot.js';
import { encodeCommand } from '../../src/store/codec.js';
import { type ApplyOutcome, Store } from '../../src/store/store.js';
import { enc } from './helpers.js';

t.test('entry encoding round-trips 53-bit request IDs and refuses unknown kinds', async (t) => {
  const ids = new RequestIds();
  const a = ids.next();
  t.ok(Number.isSafeInteger(a) && ids.next() === a + 1);
  const body = enc('{"op":"noop"}');
  const d = decodeEntry(encodeEntry(EntryKind.COMMAND, 2 ** 53 - 1, body));
  t.equal(d.requestId, 2 ** 53 - 1);
  t.equal(d.kind, EntryKind.COMMAND);
  t.same([...d.body], [...body]);
  t.throws(() => decodeEntry(new Uint8Array([9, 0, 0, 0, 0, 0, 0, 0, 0])), { code: 'ERR_CORRUPT' });
  t.throws(() => decodeEntry(new Uint8Array([1, 2])), { code: 'ERR_CORRUPT' });
});

t.test('snapshot encoding carries the registry and the store bytes', async (t) => {
  const cluster = { clusterId: '7', members: [], removed: [NodeId(3)] };
  const d = decodeSnapshot(encodeSnapshot(cluster, new Uint8Array([1, 2, 3])));
  t.same(d.cluster, cluster);
  t.same([...d.store], [1, 2, 3]);
  t.throws(() => decodeSnapshot(new Uint8Array([2, 0, 0, 0, 0])), { code: 'ERR_CORRUPT' });
  t.throws(() => decodeSnapshot(new Uint8Array([1, 0, 0, 0, 99])), { code: 'ERR_CORRUPT' });
});

t.test('waiters: only begun IDs keep outcomes, every exit removes them', async (t) => {
  const w = new Waiters<number>();
  w.deliver(1, 10);
  t.equal(w.size, 0, 'an entry proposed elsewhere leaves nothing');
  w.begin(2);
  w.deliver(2, 20);
  t.equal(w.take(2), 20);
  w.begin(3);
  w.cancel(3);
  w.deliver(3, 30);
  t.equal(w.take(3), undefined);
  t.equal(w.size, 0);
});

async function setup(dir: string) {
  const db = new Level(join(dir, 'db'));
  await db.open();
  const self = { id: NodeId(1), name: 'a', token: 't' };
  const member = {
    id: NodeId(1),
    name: 'a',
    peerURLs: ['http://h:1'],
    clientURLs: [],
    isLearner: false,
  };
  const registry = await MemberRegistry.create(db, self, {
    clusterId: '9',
    members: [member],
    removed: [],
  });
  const store = await Store.open({ db, sync: false });
  const waiters = new Waiters<ApplyOutcome>();
  const changes: string[] = [];
  const app = new MemberApplication({
    store,
    registry,
    waiters,
    metrics: new MemberMetrics({
      hasLeader: () => true,
      isLeader: () => true,
      keys: () => 0,
      revision: () => 0,
      compactRevision: () => 0,
      leases: () => 0,
      pendingProposals: () => 0,
      appliedIndex: () => 0,
      term: () => 0,
    }),
    logger: silentLogger(),
    listener: {
      onConfChange: (cc) => changes.push(`${cc.type} ${cc.nodeId}`),
      onRegistryReplaced: () => {},
    },
  });
  return { db, registry, store, waiters, app, changes };
}

const at = (index: number) => ({ index: LogIndex(index), term: Term(1) });

t.test('every entry advances the store to its index; outcomes reach the proposer', async (t) => {
  const { db, registry, store, waiters, app, changes } = await setup(t.testdir());
  t.teardown(async () => {
    await store.close();
    await db.close();
  });
  waiters.begin(42);
  const put = encodeEntry(
    EntryKind.COMMAND,
    42,
    encodeCommand({ op: 'put', key: enc('k'), value: enc('v') }),
  );
  const attrs = encodeEntry(
    EntryKind.ATTRIBUTES,
    7,
    enc(JSON.stringify({ id: 1, name: 'a', clientURLs: ['http://h:2'] })),
  );
  const entries: AppliedEntry[] = [
    { ...at(1), type: EntryType.Normal, data: new Uint8Array(0) },
    { ...at(2), type: EntryType.Normal, data: put },
    { ...at(3), type: EntryType.Normal, data: attrs },
    {
      ...at(4),
      type: EntryType.ConfChange,
      data: encodeContext({ peerURLs: ['http://h:3'] }),
      confChange: {
        type: 'addLearner',
        nodeId: NodeId(2),
        context: encodeContext({ peerURLs: ['http://h:3'] }),
      },
    },
    { ...at(5), type: EntryType.Normal, data: new Uint8Array([1, 2, 3]) },
  ];
  await app.apply(entries);
  t.equal(store.appliedIndex, 5, 'no-op, command, publish, conf change and garbage: all counted');
  t.equal(store.currentRevision, 2, 'only the put wrote');
  const outcome = waiters.take(42);
  t.ok(outcome?.ok && outcome.result.op === 'put');
  t.same(registry.get(NodeId(1))?.clientURLs, ['http://h:2']);
  t.same(confStateOf(registry), { voters: [1], learners: [2] });
  t.same(changes, ['addLearner 2']);

  // A restart hands the same entries again (the store skips them; the registry is idempotent).
  const before = registry.toRecord();
  await app.apply(entries);
  t.same(registry.toRecord(), before);
  t.equal(store.currentRevision, 2);
  t.same(changes, ['addLearner 2'], 'an invalid (repeated) change is ignored, as Raft ignores it');
  const reloaded = await MemberRegistry.load(db);
  t.same(reloaded?.toRecord(), before, 'the registry is durable');

  // Promote, then remove: mirrored in the registry.
  await app.apply([
    {
      ...at(6),
      type: EntryType.ConfChange,
      data: new Uint8Array(0),
      confChange: { type: 'addVoter', nodeId: NodeId(2) },
    },
    {
      ...at(7),
      type: EntryType.ConfChange,
      data: new Uint8Array(0),
      confChange: { type: 'removeNode', nodeId: NodeId(1) },
    },
  ]);
  t.same(confStateOf(registry), { voters: [2], learners: [] });
  t.same(registry.get(NodeId(2))?.peerURLs, ['http://h:3'], 'a promotion keeps the URLs');
  t.ok(registry.isRemoved(NodeId(1)));
  t.equal(store.appliedIndex, 7);
});
