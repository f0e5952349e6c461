/**
 * Hand-written cases of etcd v3 semantics, each one asked of a real etcd 3.4.23 (JSON API)
 * with the same sequence of requests from a fresh member (revision 1): the expected values
 * below are what etcd answered. They pin the corners the property test's model encodes.
 */
import t, { type Test } from 'tap';
import { isEtceteraError } from '../../src/errors.js';
import { type EmbeddedStore, open } from '../../src/store/index.js';
import type {
  EventBatch,
  KeyValue,
  RangeRequest,
  RequestOp,
  TxnRequest,
} from '../../src/store/types.js';
import { collect } from './harness.js';
import { bytes, str } from './model.js';

async function fresh(t: Test, seen: EventBatch[] = []): Promise<EmbeddedStore> {
  const store = await open({
    dir: t.testdir(),
    clock: { now: () => 0 },
    minLeaseTtl: 2,
    leaseCheckIntervalMs: 0,
  });
  collect(store, seen);
  t.teardown(() => store.close());
  return store;
}

const put = (key: string, value: string, o: object = {}): RequestOp => ({
  type: 'put',
  request: { key: bytes(key), value: bytes(value), ...o },
});
const get = (key: string, o: Partial<RangeRequest> = {}): RequestOp => ({
  type: 'range',
  request: { key: bytes(key), ...o },
});
const del = (key: string, end?: string, o: object = {}): RequestOp => ({
  type: 'deleteRange',
  request: { key: bytes(key), rangeEnd: end === undefined ? undefined : bytes(end), ...o },
});
const txn = (success: RequestOp[], failure: RequestOp[] = [], compare = []): TxnRequest => ({
  compare,
  success,
  failure,
});
const nested = (success: RequestOp[], failure: RequestOp[] = []): RequestOp => ({
  type: 'txn',
  request: txn(success, failure),
});
/** range_end "\0": every key >= the key. */
const FROM_KEY: Partial<RangeRequest> = { rangeEnd: Uint8Array.of(0) };

/** key@create/mod/vN=value[~lease], a compact form of a KeyValue. */
const kv = (k: KeyValue | undefined): string =>
  k === undefined
    ? '-'
    : `${str(k.key)}@${k.createRevision}/${k.modRevision}/v${k.version}=${str(k.value)}${k.lease ? `~${k.lease}` : ''}`;

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    if (isEtceteraError(e)) return e.code;
    throw e;
  }
}

t.test('response revisions inside a txn', async (t) => {
  const s = await fresh(t);
  await s.put('a', '1'); // 2
  const r = await s.txn(txn([del('zz'), put('b', '2'), get('a'), nested([get('b')]), del('zz')]));
  t.equal(r.revision, 3);
  const [d0, p, g, n, d1] = r.responses;
  // etcd: a delete that deletes nothing before any write reports the revision before the txn;
  // once anything changed, every response reports the new one; a nested txn's header is empty.
  t.equal(d0?.type === 'deleteRange' && d0.response.revision, 2);
  t.equal(p?.type === 'put' && p.response.revision, 3);
  t.equal(g?.type === 'range' && g.response.revision, 3);
  t.equal(n?.type === 'txn' && n.response.revision, 0);
  const inner = n?.type === 'txn' ? n.response.responses[0] : undefined;
  t.equal(inner?.type === 'range' && inner.response.revision, 3);
  t.equal(inner?.type === 'range' && kv(inner.response.kvs[0]), 'b@3/3/v1=2');
  t.equal(d1?.type === 'deleteRange' && d1.response.revision, 3);
  const ro = await s.txn(txn([get('a')]));
  t.equal(ro.revision, 3, 'a txn without writes keeps the revision');
});

t.test('state checks: which error etcd reports first', async (t) => {
  const s = await fresh(t);
  await s.put('a', '1'); // 2
  const future = get('a', { revision: 99 });
  // Inside a txn, the puts of the whole taken path are checked before any range.
  t.equal(await code(s.txn(txn([future, put('q', '2', { lease: 12345 })]))), 'ERR_LEASE_NOT_FOUND');
  t.equal(
    await code(s.txn(txn([future, put('q', '', { ignoreValue: true })]))),
    'ERR_KEY_NOT_FOUND',
  );
  t.equal(
    await code(s.txn(txn([future, nested([put('q', '', { lease: 5 })])]))),
    'ERR_LEASE_NOT_FOUND',
  );
  // ... and in a txn put, a missing key before an unknown lease; a plain put is the other way.
  const both = { ignoreValue: true, lease: 12345 };
  t.equal(await code(s.txn(txn([put('zz', '', both)]))), 'ERR_KEY_NOT_FOUND');
  t.equal(await code(s.put('zz', '', both)), 'ERR_LEASE_NOT_FOUND');
  t.equal(s.currentRevision, 2, 'nothing changed');
});

t.test('compaction and the revisions around it', async (t) => {
  const s = await fresh(t);
  t.equal(await code(s.txn(txn([get('a', { revision: -1 })]))), 'ok');
  t.equal(await code(s.txn(txn([get('a', { revision: -2 })]))), 'ERR_COMPACTED');
  t.equal(await code(s.compact(0)), 'ok', 'a never-compacted store compacts at 0');
  t.equal(await code(s.compact(0)), 'ERR_COMPACTED');
  t.equal(await code(s.compact(-3)), 'ERR_COMPACTED');
  for (const v of ['1', '2', '3']) await s.put('a', v); // 2, 3, 4
  t.equal(await code(s.compact(5)), 'ERR_FUTURE_REV');
  t.same(await s.compact(3), { revision: 4 });
  t.equal(s.compactRevision, 3);
  t.equal(kv((await s.range({ key: bytes('a'), revision: 3 })).kvs[0]), 'a@2/3/v2=2');
  t.equal((await s.range({ key: bytes('a'), revision: 3 })).revision, 4);
  t.equal(await code(s.range({ key: bytes('a'), revision: 2 })), 'ERR_COMPACTED');
  t.equal(await code(s.compact(3)), 'ERR_COMPACTED');
  t.equal(await code(s.txn(txn([get('a', { revision: 3 })]))), 'ok');
  t.equal(await code(s.txn(txn([get('a', { revision: 2 })]))), 'ERR_COMPACTED');
  t.equal(await code(s.txn(txn([get('a', { revision: -1 })]))), 'ERR_COMPACTED');
  t.equal(kv((await s.range({ key: bytes('a'), revision: -1 })).kvs[0]), 'a@2/4/v3=3');
});

t.test('sort, limit, count and filters', async (t) => {
  const s = await fresh(t);
  await s.put('a', '1'); // 2
  await s.put('b', '2'); // 3
  for (const k of ['c', 'd', 'e', 'f']) await s.put(k, 'v'); // 4..7
  await s.put('d', 'w'); // 8
  const all = { key: bytes('a'), ...FROM_KEY };
  const keys = (kvs: KeyValue[]) => kvs.map((k) => str(k.key)).join('');
  // Ties keep key order, descending too.
  const byVersion = await s.range({ ...all, sortOrder: 'DESCEND', sortTarget: 'VERSION' });
  t.equal(keys(byVersion.kvs), 'dabcef');
  const byValue = await s.range({
    ...all,
    sortOrder: 'DESCEND',
    sortTarget: 'VALUE',
    limit: 3,
    minModRevision: 4,
  });
  t.same([keys(byValue.kvs), byValue.more, byValue.count], ['dce', true, 6]);
  const counted = await s.range({ ...all, countOnly: true, limit: 1 });
  t.same([counted.kvs.length, counted.more, counted.count], [0, false, 6]);
  const old = await s.range({ ...all, limit: 2, maxCreateRevision: 4 });
  t.same([keys(old.kvs), old.more, old.count], ['ab', true, 6]);
  const unlimited = await s.range({ key: bytes('a'), limit: -1 });
  t.equal(unlimited.kvs.length, 1, 'a negative limit is no limit');
});

t.test('keys_only sorted by value inside a txn sorts on the values', async (t) => {
  const s = await fresh(t);
  await s.put('a', 'xy');
  await s.put('b', '');
  await s.put('c', 'm');
  const all = { key: bytes('a'), ...FROM_KEY, keysOnly: true, sortTarget: 'VALUE' as const };
  const r = await s.txn(
    txn([put('d', 'a'), get('a', all), get('a', { ...all, sortOrder: 'DESCEND', limit: 2 })]),
  );
  const [, asc, desc] = r.responses;
  const keys = (o: typeof asc) =>
    o?.type === 'range' ? o.response.kvs.map((k) => str(k.key) + str(k.value)).join(',') : '';
  t.equal(keys(asc), 'b,d,c,a');
  t.equal(keys(desc), 'a,c');
  t.equal(desc?.type === 'range' && desc.response.more, true);
});

t.test('leases', async (t) => {
  const seen: EventBatch[] = [];
  const s = await fresh(t, seen);
  t.same(await s.leaseGrant(1, 77), { revision: 1, id: 77, ttl: 2 }, 'TTL raised to the minimum');
  t.equal(await code(s.leaseGrant(100, 77)), 'ERR_LEASE_EXIST');
  t.equal(await code(s.leaseGrant(9_000_000_001, 77)), 'ERR_LEASE_TTL_TOO_LARGE', 'TTL first');
  t.equal((await s.leaseGrant(-5, 79)).ttl, 2);
  t.same(await s.leaseRevoke(79), { revision: 1 }, 'no keys, no revision');
  t.equal(await code(s.leaseRevoke(79)), 'ERR_LEASE_NOT_FOUND');
  await s.leaseGrant(100, 80);
  await s.put('y', '1', { lease: 80 }); // 2
  await s.put('x', '1', { lease: 80 }); // 3
  await s.put('x', '2'); // 4: detached
  await s.put('x', '3', { lease: 80 }); // 5
  const p = await s.put('x', '', { ignoreValue: true, ignoreLease: true, prevKv: true }); // 6
  t.equal(kv(p.prevKv), 'x@3/5/v3=3~80');
  t.equal(kv(await s.get('x')), 'x@3/6/v4=3~80', 'value and lease kept');
  t.same(await s.leaseRevoke(80), { revision: 7 });
  const last = seen.at(-1);
  t.equal(last?.revision, 7);
  t.same(
    last?.events.map((e) => `${e.type} ${str(e.kv.key)}@${e.kv.modRevision} ${kv(e.prevKv)}`),
    ['DELETE x@7 x@3/6/v4=3~80', 'DELETE y@7 y@2/2/v1=1~80'],
    'attached keys deleted in key order, in one revision',
  );
});

t.test('duplicate keys in a txn, as etcd 3.4 decides them', async (t) => {
  const s = await fresh(t);
  const b = put('b', '1');
  const cases: Array<[string, TxnRequest, string]> = [
    ['put twice', txn([b, put('b', '2')]), 'ERR_DUPLICATE_KEY'],
    ['put inside a deleted range', txn([del('a', 'c'), b]), 'ERR_DUPLICATE_KEY'],
    ['delete, then put', txn([del('b'), b]), 'ERR_DUPLICATE_KEY'],
    ['put, then delete', txn([b, del('b')]), 'ERR_DUPLICATE_KEY'],
    ['put, and put in a nested txn', txn([b, nested([b])]), 'ERR_DUPLICATE_KEY'],
    [
      'delete in a nested txn, put in a later one',
      txn([nested([], [del('b')]), nested([b])]),
      'ERR_DUPLICATE_KEY',
    ],
    ['put in both branches of a nested txn', txn([nested([b], [b])]), 'ok'],
    [
      'put in a nested txn, delete in a later one',
      txn([nested([b]), nested([], [del('b')])]),
      'ok',
    ],
    ['an empty (inverted) delete range', txn([del('c', 'a'), b]), 'ok'],
    ['put in success, put in failure', txn([b], [b]), 'ok'],
  ];
  for (const [what, request, expected] of cases)
    t.equal(await code(s.txn(request)), expected, what);
});

t.test('a key put and deleted in one txn: events carry the version before it', async (t) => {
  const seen: EventBatch[] = [];
  const s = await fresh(t, seen);
  await s.put('x', '1'); // 2
  const both = (v: string) =>
    txn([nested([put('x', v, { prevKv: true })]), nested([del('x', undefined, { prevKv: true })])]);
  const r = await s.txn(both('2')); // 3
  const deleted = r.responses[1];
  const d = deleted?.type === 'txn' ? deleted.response.responses[0] : undefined;
  t.equal(
    d?.type === 'deleteRange' && kv(d.response.prevKvs[0]),
    'x@2/3/v2=2',
    'response: the put',
  );
  await s.txn(both('3')); // 4
  t.same(await s.get('x'), undefined);
  // etcd's watch with prev_kv reads the version at revision - 1 for every event.
  t.same(
    seen.map((b) => b.events.map((e) => `${e.type} ${kv(e.kv)} prev ${kv(e.prevKv)}`)),
    [
      ['PUT x@2/2/v1=1 prev -'],
      ['PUT x@2/3/v2=2 prev x@2/2/v1=1', 'DELETE x@0/3/v0= prev x@2/2/v1=1'],
      ['PUT x@4/4/v1=3 prev -', 'DELETE x@0/4/v0= prev -'],
    ],
  );
});

t.test('writes that change nothing take no revision and publish nothing', async (t) => {
  const seen: EventBatch[] = [];
  const s = await fresh(t, seen);
  await s.put('a', '1'); // 2
  t.same(await s.delete('zz'), { revision: 2, deleted: 0, prevKvs: [] });
  t.equal((await s.txn(txn([get('a'), del('q', 'r')]))).revision, 2);
  t.equal(s.currentRevision, 2);
  t.equal(seen.length, 1);
});
