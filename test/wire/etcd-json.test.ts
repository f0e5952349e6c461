/**
 * etcd's JSON wire forms (src/wire/etcd-json.ts): what the server prints the client reads
 * back unchanged, zero fields are left out as etcd leaves them out, int64s are decimal
 * strings (numbers are read too), and the watch cache's encoder prints the same key-value.
 */
import fc from 'fast-check';
import t from 'tap';
import { kvToJson } from '../../src/watchcache/encoders/etcd-json.js';
import {
  decodeEvent,
  decodeHeader,
  decodeKeyValue,
  encodeHeader,
  encodeKeyValue,
  type KeyValue,
  type KeyValueJson,
  type ResponseHeader,
  type ResponseHeaderJson,
} from '../../src/wire/etcd-json.js';

const count = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }));
const uint64Id = fc.oneof(
  fc.constant('0'),
  fc.bigInt({ min: 1n, max: 2n ** 64n - 1n }).map(String),
);
const header: fc.Arbitrary<ResponseHeader> = fc.record({
  clusterId: uint64Id,
  memberId: uint64Id,
  revision: count,
  raftTerm: count,
});
const kv: fc.Arbitrary<KeyValue> = fc.record({
  key: fc.uint8Array({ maxLength: 16 }),
  createRevision: count,
  modRevision: count,
  version: count,
  value: fc.uint8Array({ maxLength: 16 }),
  lease: uint64Id,
});
const throughJson = <T>(v: T): unknown => JSON.parse(JSON.stringify(v));

t.test('a header and a key-value read back as they were written', async (t) => {
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(header, kv, (h, k) => {
        const h2 = decodeHeader(throughJson(encodeHeader(h)) as ResponseHeaderJson);
        if (JSON.stringify(h2) !== JSON.stringify(h)) throw new Error('header');
        const k2 = decodeKeyValue(throughJson(encodeKeyValue(k)) as KeyValueJson);
        if (
          Buffer.compare(k2.key, k.key) !== 0 ||
          Buffer.compare(k2.value, k.value) !== 0 ||
          JSON.stringify({ ...k2, key: 0, value: 0 }) !== JSON.stringify({ ...k, key: 0, value: 0 })
        ) {
          throw new Error('key-value');
        }
      }),
    ),
  );
});

t.test(
  'zero values are left out and int64s are decimal strings, as etcd prints them',
  async (t) => {
    t.same(
      JSON.stringify(encodeHeader({ clusterId: '0', memberId: '', revision: 0, raftTerm: 0 })),
      '{}',
    );
    t.same(
      JSON.stringify(
        encodeHeader({
          clusterId: '14841639068965178418',
          memberId: '7',
          revision: 5,
          raftTerm: 2,
        }),
      ),
      '{"cluster_id":"14841639068965178418","member_id":"7","revision":"5","raft_term":"2"}',
    );
    t.same(
      JSON.stringify(
        encodeHeader({ clusterId: '1', memberId: '2', revision: 5, raftTerm: 2 }, false),
      ),
      '{"cluster_id":"1","member_id":"2","raft_term":"2"}',
      'the cluster calls print no revision',
    );
    const del = {
      key: Buffer.from('foo'),
      createRevision: 0,
      modRevision: 9,
      version: 0,
      value: new Uint8Array(0),
      lease: 0,
    };
    t.equal(JSON.stringify(encodeKeyValue(del)), '{"key":"Zm9v","mod_revision":"9"}');
    t.same(
      decodeHeader(undefined),
      { clusterId: '0', memberId: '0', revision: 0, raftTerm: 0 },
      'absent is zero',
    );
    t.same(decodeHeader({ revision: 12, raft_term: '3' }).revision, 12, 'a number is read too');
  },
);

t.test('the watch cache prints a key-value exactly as the JSON face does', async (t) => {
  const storeKv = kv.map((k) => ({ ...k, lease: Number(BigInt(k.lease) % 2n ** 53n) }));
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(storeKv, (k) => {
        if (kvToJson(k as Parameters<typeof kvToJson>[0]) !== JSON.stringify(encodeKeyValue(k)))
          throw new Error('differs');
      }),
    ),
  );
});

t.test('events: PUT is the absent type, DELETE by name or number', async (t) => {
  const kvJson = { key: 'YQ==', mod_revision: '4' };
  t.equal(decodeEvent({ kv: kvJson }).type, 'PUT');
  t.equal(decodeEvent({ type: 'DELETE', kv: kvJson }).type, 'DELETE');
  t.equal(decodeEvent({ type: 1, kv: kvJson }).type, 'DELETE');
  const withPrev = decodeEvent({ kv: kvJson, prev_kv: { key: 'YQ==', value: 'Yg==' } });
  t.equal(Buffer.from(withPrev.prevKv!.value).toString(), 'b');
  t.notOk('prevKv' in decodeEvent({ kv: kvJson }), 'no prev_kv, no prevKv');
});
