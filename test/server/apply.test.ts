/**
 * The apply side of a member: entry and snapshot encodings, and the application — store
 * applied index = Raft index for every kind of entry, one outcome per entry for the
 * proposer, membership mirrored in the registry, replays idempotent.
 */
import { join } from 'node:path';
import { Level } from 'level';
import t from 'tap';
import type { AppliedEntry } from '../../src/raft/driver/types.js';
import { EntryType, LogIndex, NodeId, Term } from '../../src/raft/types.js';
import { confStateOf, MemberApplication } from '../../src/server/apply.js';
import { decodeEntry, EntryKind, encodeEntry } from '../../src/server/entry.js';
import { silentLogger } from '../../src/server/logger.js';
import { MemberMetrics } from '../../src/server/metrics.js';
import { encodeContext, MemberRegistry } from '../../src/server/registry.js';
import { decodeSnapshot, encodeSnapshot } from '../../src/server/snapshot.js';
import { encodeCommand, encodeCommandJson } from '../../src/store/codec.js';
import { Store } from '../../src/store/store.js';
import type { Command } from '../../src/store/types.js';
import { enc } from './helpers.js';

t.test('entry encoding round-trips, reads 0.1 logs and refuses unknown kinds', async (t) => {
  const body = enc('{"op":"noop"}');
  const d = decodeEntry(encodeEntry(EntryKind.COMMAND, body));
  t.equal(d.kind, EntryKind.COMMAND);
  t.same([...d.body], [...body]);
  t.equal(encodeEntry(EntryKind.ATTRIBUTES, body).length, body.length + 1, 'one byte of header');
  // etcetera 0.1 wrote [kind 1|2][request ID: 8 bytes][body].
  const legacy = new Uint8Array([2, 0, 0, 0, 0, 0, 0, 0, 7, ...body]);
  t.same(decodeEntry(legacy), { kind: EntryKind.ATTRIBUTES, body }, 'a 0.1 entry: ID skipped');
  t.throws(() => decodeEntry(new Uint8Array([9, 0, 0, 0, 0, 0, 0, 0, 0])), { code: 'ERR_CORRUPT' });
  t.throws(() => decodeEntry(new Uint8Array([1, 2])), { code: 'ERR_CORRUPT' });
  t.throws(() => decodeEntry(new Uint8Array([])), { code: 'ERR_CORRUPT' });
});

t.test('snapshot encoding carries the registry and the store bytes', async (t) => {
  const cluster = { clusterId: '7', members: [], removed: [NodeId(3)] };
  const d = decodeSnapshot(encodeSnapshot(cluster, new Uint8Array([1, 2, 3])));
  t.same(d.cluster, cluster);
  t.same([...d.store], [1, 2, 3]);
  t.throws(() => decodeSnapshot(new Uint8Array([2, 0, 0, 0, 0])), { code: 'ERR_CORRUPT' });
  t.throws(() => decodeSnapshot(new Uint8Array([1, 0, 0, 0, 99])), { code: 'ERR_CORRUPT' });
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
  const changes: string[] = [];
  const app = new MemberApplication({
    store,
    registry,
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
      onPeerUrlsChanged: (id) => changes.push(`peerUrls ${id}`),
    },
  });
  return { db, registry, store, app, changes };
}

const at = (index: number) => ({ index: LogIndex(index), term: Term(1) });

t.test('every entry advances the store to its index; one outcome per entry', async (t) => {
  const { db, registry, store, app, changes } = await setup(t.testdir());
  t.teardown(async () => {
    await store.close();
    await db.close();
  });
  const put = encodeEntry(
    EntryKind.COMMAND,
    encodeCommand({ op: 'put', key: enc('k'), value: enc('v') }),
  );
  const attrs = encodeEntry(
    EntryKind.ATTRIBUTES,
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
  const outcomes = await app.apply(entries);
  t.equal(store.appliedIndex, 5, 'no-op, command, publish, conf change and garbage: all counted');
  t.equal(store.currentRevision, 2, 'only the put wrote');
  t.equal(outcomes.length, entries.length, 'one outcome per entry');
  const outcome = outcomes[1];
  t.ok(outcome?.ok && outcome.result.op === 'put', "the put's outcome is the second");
  t.same(
    outcomes.map((o) => o.ok && o.result.op),
    ['noop', 'put', 'noop', 'noop', 'noop'],
  );
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

t.test(
  'a peer URL update changes the registry durably; an unknown member changes nothing',
  async (t) => {
    const { db, registry, store, app, changes } = await setup(t.testdir());
    t.teardown(async () => {
      await store.close();
      await db.close();
    });
    const update = (id: number, peerURLs: unknown) =>
      encodeEntry(EntryKind.PEER_URLS, enc(JSON.stringify({ id, peerURLs })));
    const outcomes = await app.apply([
      { ...at(1), type: EntryType.Normal, data: update(1, ['http://h:9', 'http://h:10']) },
      { ...at(2), type: EntryType.Normal, data: update(77, ['http://h:11']) },
      { ...at(3), type: EntryType.Normal, data: update(1, 'not a list') },
    ]);
    t.same(
      outcomes.map((o) => o.ok && o.result.op),
      ['noop', 'noop', 'noop'],
    );
    t.equal(store.appliedIndex, 3, 'every entry counted');
    t.same(registry.get(NodeId(1))?.peerURLs, ['http://h:9', 'http://h:10']);
    t.equal(registry.get(NodeId(77)), undefined, 'an update does not add a member');
    t.same(changes, ['peerUrls 1'], 'the listener hears of the one real change');
    t.same((await MemberRegistry.load(db))?.get(NodeId(1))?.peerURLs, [
      'http://h:9',
      'http://h:10',
    ]);
  },
);

t.test('a log written in the JSON command form applies as the binary form does', async (t) => {
  // Data dirs written before the binary form hold JSON commands in their Raft logs; a restart
  // replays them, and a leader of that version sends them. Same entries, both forms, two
  // stores on real LevelDB files: the same outcomes and the same keyspace.
  const commands: Command[] = [
    { op: 'put', key: enc('a'), value: enc('1') },
    { op: 'put', key: enc('b'), value: enc('2'), prevKv: true },
    {
      op: 'txn',
      compare: [{ key: enc('a'), result: 'EQUAL', target: 'VERSION', version: 1 }],
      success: [
        { type: 'put', request: { key: enc('c'), value: enc('3') } },
        { type: 'deleteRange', request: { key: enc('b'), prevKv: true } },
        { type: 'range', request: { key: enc('a'), rangeEnd: enc('z') } },
      ],
      failure: [],
    },
    { op: 'put', key: enc('a'), value: enc('4'), prevKv: true },
    { op: 'deleteRange', key: enc('c'), rangeEnd: enc('d') },
    { op: 'leaseGrant', id: 7, ttl: 60 },
    { op: 'put', key: enc('l'), value: enc('5'), lease: 7 },
  ];
  const run = async (name: string, encode: (c: Command) => Uint8Array) => {
    const { db, store, app } = await setup(join(t.testdir(), name));
    const entries: AppliedEntry[] = commands.map((c, i) => ({
      ...at(i + 1),
      type: EntryType.Normal,
      data: encodeEntry(EntryKind.COMMAND, encode(c)),
    }));
    const outcomes = await app.apply(entries);
    const kvs = (await store.range({ key: enc('\0'), rangeEnd: new Uint8Array([0]) })).kvs;
    const state = { outcomes, kvs, revision: store.currentRevision, applied: store.appliedIndex };
    await store.close();
    await db.close();
    return JSON.parse(
      JSON.stringify(state, function (this: Record<string, unknown>, k, v) {
        const own = this[k];
        return own instanceof Uint8Array ? Buffer.from(own).toString() : v;
      }),
    );
  };
  const json = await run('json', encodeCommandJson);
  const binary = await run('binary', encodeCommand);
  t.same(binary, json);
  t.equal(json.revision, 7, 'every write applied (a fresh store is at revision 1)');
  t.ok(
    json.outcomes.every((o: { ok: boolean }) => o.ok),
    'no command refused',
  );
  t.same(
    json.kvs.map((kv: { key: string; value: string }) => `${kv.key}=${kv.value}`),
    ['a=4', 'l=5'],
  );
});
