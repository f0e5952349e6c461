/**
 * The etcd .proto files and their loader: every etcd service and method is there, and a few
 * fields whose numbers etcd clients depend on encode to the bytes etcd's wire format has.
 */
import protoLoader from '@grpc/proto-loader';
import t from 'tap';
import {
  ETCD_SERVICES,
  etcdProto,
  grpcPath,
  int64ToNumber,
  PROTO_DIR,
  PROTO_FILES,
} from '../../src/wire/proto/index.js';

t.test('every etcd service method is loaded with its streaming shape', async (t) => {
  const p = etcdProto();
  const count = (s: string) => [...p.methods.values()].filter((m) => m.service === s).length;
  t.same(
    ETCD_SERVICES.map((s) => [s, count(s)]),
    [
      ['KV', 5],
      ['Watch', 1],
      ['Lease', 5],
      ['Cluster', 5],
      ['Maintenance', 8],
      ['Auth', 17],
    ],
  );
  const watch = p.methods.get(grpcPath('Watch', 'Watch'))!;
  t.ok(watch.requestStream && watch.responseStream);
  const snap = p.methods.get('/etcdserverpb.Maintenance/Snapshot')!;
  t.same([snap.requestStream, snap.responseStream], [false, true]);
  t.equal(p.methods.get('/etcdserverpb.Lease/LeaseKeepAlive')!.requestStream, true);
  t.equal(
    p.methods.get('/etcdserverpb.KV/Range')!.responseType.fullName,
    '.etcdserverpb.RangeResponse',
  );
});

t.test('field numbers match etcd on the wire', async (t) => {
  const p = etcdProto();
  const hex = (type: string, obj: object) => {
    const T = p.type(type);
    return Buffer.from(T.encode(T.fromObject(obj)).finish()).toString('hex');
  };
  // WatchResponse.events is field 11 (tag 0x5a), Event.kv field 2, KeyValue.key field 1.
  t.equal(
    hex('etcdserverpb.WatchResponse', { events: [{ kv: { key: Buffer.from('k') } }] }),
    '5a0512030a016b',
  );
  // Compare.range_end is field 64 (tag 0x82 0x04).
  t.equal(hex('etcdserverpb.Compare', { range_end: Buffer.from('z') }), '8204017a');
  // WatchCreateRequest.watch_id is 7, fragment 8, inside WatchRequest.create_request 1.
  t.equal(
    hex('etcdserverpb.WatchRequest', { create_request: { watch_id: 5, fragment: true } }),
    '0a0438054001',
  );
  // StatusResponse.isLearner is 10, dbSizeInUse 9.
  t.equal(hex('etcdserverpb.StatusResponse', { dbSizeInUse: 1, isLearner: true }), '48015001');
  const T = p.type('etcdserverpb.RangeRequest');
  const decoded = T.decode(Buffer.from('2080808080808040', 'hex')) as unknown as {
    revision: unknown;
  };
  t.equal(int64ToNumber(decoded.revision), 2 ** 48, 'int64 beyond 32 bits reads exactly');
});

t.test('@grpc/proto-loader reads the same files', async (t) => {
  const def = await protoLoader.load(PROTO_FILES.slice(), { includeDirs: [PROTO_DIR] });
  t.ok(def['etcdserverpb.KV'], 'KV service');
  t.ok(def['mvccpb.KeyValue'], 'mvccpb.KeyValue');
  t.ok(def['authpb.Permission'], 'authpb.Permission');
});
