/**
 * The tier's request encoding (src/tier/codec.ts) against the member's own decoder: any
 * txn (nested ones too), range, put or delete the faces hand the tier, encoded and sent
 * through the gRPC wire form (protobuf, as the upstream receives it) and decoded again by
 * the etcd face's decoder (src/api/etcd/decode.ts), is the request the tier was given
 * (fast-check). An upstream refusal in etcd's words becomes the catalogue's error.
 */
import fc from 'fast-check';
import t from 'tap';
import { decodeRange, decodeTxn } from '../../src/api/etcd/decode.js';
import { ClientError } from '../../src/client/errors.js';
import { etcdMethods } from '../../src/client/proto.js';
import type { Compare, RangeRequest, RequestOp, TxnRequest } from '../../src/store/types.js';
import { type Json, rangeJson, txnJson, upstreamError } from '../../src/tier/codec.js';

const bytes = fc.uint8Array({ maxLength: 6 });
const nonEmpty = fc.uint8Array({ minLength: 1, maxLength: 6 });
const pos = fc.integer({ min: 1, max: 2 ** 40 });
const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });

/** Drops absent fields, as the decoder leaves them out. */
function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

const range: fc.Arbitrary<RangeRequest> = fc
  .record({
    key: bytes,
    rangeEnd: opt(nonEmpty),
    limit: opt(pos),
    revision: opt(pos),
    sortOrder: opt(fc.constantFrom('ASCEND' as const, 'DESCEND' as const)),
    sortTarget: opt(
      fc.constantFrom('VERSION' as const, 'CREATE' as const, 'MOD' as const, 'VALUE' as const),
    ),
    serializable: opt(fc.constant(true)),
    keysOnly: opt(fc.constant(true)),
    countOnly: opt(fc.constant(true)),
    minModRevision: opt(pos),
    maxModRevision: opt(pos),
    minCreateRevision: opt(pos),
    maxCreateRevision: opt(pos),
  })
  .map(compact);

const compare: fc.Arbitrary<Compare> = fc
  .tuple(
    bytes,
    opt(nonEmpty),
    fc.constantFrom('EQUAL' as const, 'GREATER' as const, 'LESS' as const, 'NOT_EQUAL' as const),
    fc.oneof(
      bytes.map((value) => ({ target: 'VALUE' as const, value })),
      fc.nat().map((version) => ({ target: 'VERSION' as const, version })),
      fc.nat().map((createRevision) => ({ target: 'CREATE' as const, createRevision })),
      fc.nat().map((modRevision) => ({ target: 'MOD' as const, modRevision })),
      fc.nat().map((lease) => ({ target: 'LEASE' as const, lease })),
    ),
  )
  .map(([key, rangeEnd, result, operand]) =>
    compact({ key, rangeEnd, result, ...operand } as Compare),
  );

const { txn } = fc.letrec<{ txn: TxnRequest; op: RequestOp }>((tie) => ({
  op: fc.oneof(
    { depthSize: 'small' },
    range.map((request) => ({ type: 'range' as const, request })),
    fc
      .record({
        key: bytes,
        value: bytes,
        lease: opt(pos),
        prevKv: opt(fc.constant(true)),
        ignoreValue: opt(fc.constant(true)),
        ignoreLease: opt(fc.constant(true)),
      })
      .map((r) => ({ type: 'put' as const, request: compact(r) })),
    fc
      .record({ key: bytes, rangeEnd: opt(nonEmpty), prevKv: opt(fc.constant(true)) })
      .map((r) => ({ type: 'deleteRange' as const, request: compact(r) })),
    tie('txn').map((request) => ({ type: 'txn' as const, request: request as TxnRequest })),
  ),
  txn: fc.record({
    compare: fc.array(compare, { maxLength: 3 }),
    success: fc.array(tie('op') as fc.Arbitrary<RequestOp>, { maxLength: 3 }),
    failure: fc.array(tie('op') as fc.Arbitrary<RequestOp>, { maxLength: 3 }),
  }),
}));

/** The body as the upstream receives it: protobuf on the wire, read back in etcd's shapes. */
function overTheWire(rpc: 'KV.Txn' | 'KV.Range', body: Json): unknown {
  const m = etcdMethods().json[rpc];
  const received = (m as unknown as { requestDeserialize(b: Buffer): Json }).requestDeserialize(
    m.requestSerialize(body),
  );
  return received;
}

t.test('any txn the tier forwards arrives as the same txn', async (t) => {
  fc.assert(
    fc.property(txn, (request) => {
      t.same(decodeTxn(overTheWire('KV.Txn', txnJson(request))), request);
    }),
    { numRuns: 300 },
  );
});

t.test('any range the tier forwards arrives as the same range', async (t) => {
  fc.assert(
    fc.property(range, (request) => {
      t.same(decodeRange(overTheWire('KV.Range', rangeJson(request))), request);
    }),
    { numRuns: 300 },
  );
});

t.test("the upstream's refusals become the catalogue's errors", async (t) => {
  const compacted = upstreamError(
    new ClientError('etcdserver: mvcc: required revision has been compacted', 11, 200),
  );
  t.equal(compacted.code, 'ERR_COMPACTED');
  const other = upstreamError(new ClientError('etcdserver: something new', 9, 200));
  t.equal(other.code, 'ERR_UPSTREAM_ERROR');
  t.match(other.message, /something new/);
  const none = upstreamError(new ClientError('connect ECONNREFUSED', 14, 0));
  t.equal(none.code, 'ERR_UPSTREAM_UNAVAILABLE');
});
