/**
 * With auth enabled, every KV, Watch, Lease, Maintenance, Cluster and Auth route of both
 * etcd faces (JSON and gRPC) is tried without a token and as a user whose only grant is READ on one
 * unrelated key: zero successes. Lease grant, keepalive and the lease list are served to
 * any authenticated user, so only the no-token half applies to them. The same requests as
 * root succeed where they change nothing lasting, so the refusals are the permission checks,
 * not bad requests.
 */
import grpc from '@grpc/grpc-js';
import t from 'tap';
import type { Caller } from '../../src/server/types.js';
import { LeaseId } from '../../src/store/types.js';
import { etcdProto } from '../../src/wire/proto/index.js';
import { enc, startSingle } from './helpers.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const NOBODY: Caller = { user: undefined, revision: 0 };
const LEASE = 4242;

interface RouteCase {
  /** The JSON path and the gRPC method asking the same. */
  path: string;
  method: string;
  body: Record<string, unknown>;
  /** Served to any authenticated user (etcd's lease calls). */
  anyUser?: boolean;
  /**
   * Harmless as root: run as root to show the request itself is good (a compaction to 1 is
   * good once only, so it is left out).
   */
  rootOk?: boolean;
}

const CASES: RouteCase[] = [
  { path: '/v3/kv/range', method: 'KV/Range', body: { key: b64('a') }, rootOk: true },
  { path: '/v3/kv/range', method: 'KV/Range', body: { key: b64('zz'), range_end: b64('zzzz') } },
  { path: '/v3/kv/put', method: 'KV/Put', body: { key: b64('a'), value: b64('1') }, rootOk: true },
  { path: '/v3/kv/put', method: 'KV/Put', body: { key: b64('zzz'), value: b64('1') } },
  { path: '/v3/kv/deleterange', method: 'KV/DeleteRange', body: { key: b64('a') }, rootOk: true },
  {
    path: '/v3/kv/txn',
    method: 'KV/Txn',
    body: { success: [{ request_put: { key: b64('a'), value: b64('2') } }] },
    rootOk: true,
  },
  {
    // READ on zzz is granted, but the failure branch writes
    path: '/v3/kv/txn',
    method: 'KV/Txn',
    body: {
      compare: [{ key: b64('zzz'), target: 'VERSION', result: 'EQUAL', version: '0' }],
      success: [{ request_range: { key: b64('zzz') } }],
      failure: [{ request_put: { key: b64('zzz'), value: b64('x') } }],
    },
  },
  { path: '/v3/kv/compaction', method: 'KV/Compact', body: { revision: '1' }, rootOk: false },
  {
    path: '/v3/lease/grant',
    method: 'Lease/LeaseGrant',
    body: { TTL: '60' },
    anyUser: true,
    rootOk: true,
  },
  { path: '/v3/lease/leases', method: 'Lease/LeaseLeases', body: {}, anyUser: true, rootOk: true },
  {
    path: '/v3/lease/timetolive',
    method: 'Lease/LeaseTimeToLive',
    body: { ID: String(LEASE), keys: true },
    rootOk: true,
  },
  { path: '/v3/lease/revoke', method: 'Lease/LeaseRevoke', body: { ID: String(LEASE) } },
  { path: '/v3/cluster/member/list', method: 'Cluster/MemberList', body: {}, rootOk: true },
  {
    path: '/v3/cluster/member/add',
    method: 'Cluster/MemberAdd',
    body: { peerURLs: ['http://127.0.0.1:1'], isLearner: true },
  },
  { path: '/v3/cluster/member/remove', method: 'Cluster/MemberRemove', body: { ID: '1' } },
  {
    path: '/v3/cluster/member/update',
    method: 'Cluster/MemberUpdate',
    body: { ID: '1', peerURLs: ['http://127.0.0.1:1'] },
  },
  { path: '/v3/cluster/member/promote', method: 'Cluster/MemberPromote', body: { ID: '1' } },
  { path: '/v3/maintenance/status', method: 'Maintenance/Status', body: {}, rootOk: true },
  {
    path: '/v3/maintenance/alarm',
    method: 'Maintenance/Alarm',
    body: { action: 'GET' },
    rootOk: true,
  },
  { path: '/v3/maintenance/defragment', method: 'Maintenance/Defragment', body: {}, rootOk: true },
  { path: '/v3/maintenance/hash', method: 'Maintenance/HashKV', body: {}, rootOk: true },
  // The Auth service: everything but Authenticate (a password, not a permission) needs
  // root, except a user reading its own user and roles (alice reads others here).
  { path: '/v3/auth/enable', method: 'Auth/AuthEnable', body: {} },
  { path: '/v3/auth/disable', method: 'Auth/AuthDisable', body: {} },
  { path: '/v3/auth/user/add', method: 'Auth/UserAdd', body: { name: 'eve', password: 'x' } },
  { path: '/v3/auth/user/get', method: 'Auth/UserGet', body: { name: 'root' }, rootOk: true },
  { path: '/v3/auth/user/list', method: 'Auth/UserList', body: {}, rootOk: true },
  { path: '/v3/auth/user/delete', method: 'Auth/UserDelete', body: { name: 'alice' } },
  {
    path: '/v3/auth/user/changepw',
    method: 'Auth/UserChangePassword',
    body: { name: 'alice', password: 'y' },
  },
  {
    path: '/v3/auth/user/grant',
    method: 'Auth/UserGrantRole',
    body: { user: 'alice', role: 'root' },
  },
  {
    path: '/v3/auth/user/revoke',
    method: 'Auth/UserRevokeRole',
    body: { name: 'alice', role: 'zzz-reader' },
  },
  { path: '/v3/auth/role/add', method: 'Auth/RoleAdd', body: { name: 'r2' } },
  { path: '/v3/auth/role/get', method: 'Auth/RoleGet', body: { role: 'other' }, rootOk: true },
  { path: '/v3/auth/role/list', method: 'Auth/RoleList', body: {}, rootOk: true },
  { path: '/v3/auth/role/delete', method: 'Auth/RoleDelete', body: { role: 'zzz-reader' } },
  {
    path: '/v3/auth/role/grant',
    method: 'Auth/RoleGrantPermission',
    body: { name: 'zzz-reader', perm: { permType: 'READWRITE', key: b64('a') } },
  },
  {
    path: '/v3/auth/role/revoke',
    method: 'Auth/RoleRevokePermission',
    body: { role: 'zzz-reader', key: b64('zzz') },
  },
];

/** gRPC calls with no JSON route of their own. */
const GRPC_ONLY: Array<Pick<RouteCase, 'method' | 'body' | 'rootOk'>> = [
  { method: 'Maintenance/Hash', body: {}, rootOk: true },
  { method: 'Maintenance/MoveLeader', body: { targetID: '1' } },
];

t.test('with auth enabled, no route serves a caller without the permission', async (t) => {
  const m = await startSingle(t.testdir());
  t.teardown(() => m.stop());
  const a = m.auth;
  await a.userAdd(NOBODY, 'root', 'pw', false);
  await a.userGrantRole(NOBODY, 'root', 'root');
  await a.userAdd(NOBODY, 'alice', 'pw', false);
  await a.roleAdd(NOBODY, 'zzz-reader');
  await a.roleGrantPermission(NOBODY, 'zzz-reader', {
    permType: 'READ',
    key: enc('zzz'),
    rangeEnd: new Uint8Array(0),
  });
  await a.userGrantRole(NOBODY, 'alice', 'zzz-reader');
  await a.roleAdd(NOBODY, 'other');
  await m.write({ op: 'leaseGrant', id: LeaseId(LEASE), ttl: 600 });
  await m.write({ op: 'put', key: enc('secret'), value: enc('s'), lease: LEASE });
  await a.enable({ user: 'root', revision: 0 });
  const root = (await a.authenticate('root', 'pw')).token;
  const alice = (await a.authenticate('alice', 'pw')).token;
  const url = m.clientUrls[0]!.href.replace(/\/$/, '');

  const post = async (path: string, body: unknown, token?: string) => {
    const res = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: token === undefined ? {} : { Authorization: token },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: await res.text() };
  };

  const client = new grpc.Client(m.clientUrls[0]!.host, grpc.credentials.createInsecure());
  t.teardown(() => client.close());
  const proto = etcdProto();
  const unary = (method: string, body: unknown, token?: string) =>
    new Promise<boolean>((resolve) => {
      const info = proto.methods.get(`/etcdserverpb.${method}`)!;
      const bytes = Buffer.from(
        info.requestType.encode(info.requestType.fromObject(body as object)).finish(),
      );
      const md = new grpc.Metadata();
      if (token !== undefined) md.set('token', token);
      client.makeUnaryRequest(
        info.path,
        (x: Buffer) => x,
        (x: Buffer) => x,
        bytes,
        md,
        (err) => resolve(err === null || err === undefined),
      );
    });

  const watchJson = async (token?: string) => {
    const res = await fetch(`${url}/v3/watch`, {
      method: 'POST',
      headers: token === undefined ? {} : { Authorization: token },
      body: JSON.stringify({ create_request: { key: b64('a'), range_end: b64('b') } }),
    });
    if (res.status !== 200) return false;
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    return !JSON.parse(first).result.canceled;
  };
  const watchGrpc = (token?: string) =>
    new Promise<boolean>((resolve) => {
      const info = proto.methods.get('/etcdserverpb.Watch/Watch')!;
      const md = new grpc.Metadata();
      if (token !== undefined) md.set('token', token);
      const call = client.makeBidiStreamRequest(
        info.path,
        (x: Buffer) => x,
        (x: Buffer) => x,
        md,
      );
      call.on('data', (bytes: Buffer) => {
        const r = info.responseType.toObject(info.responseType.decode(bytes)) as {
          canceled?: boolean;
        };
        call.cancel();
        resolve(r.canceled !== true);
      });
      call.on('error', () => resolve(false));
      const req = info.requestType.fromObject({
        create_request: { key: b64('a'), range_end: b64('b') },
      });
      call.write(Buffer.from(info.requestType.encode(req).finish()));
    });
  const keepAlive = (token?: string) =>
    new Promise<boolean>((resolve) => {
      const info = proto.methods.get('/etcdserverpb.Lease/LeaseKeepAlive')!;
      const md = new grpc.Metadata();
      if (token !== undefined) md.set('token', token);
      const call = client.makeBidiStreamRequest(
        info.path,
        (x: Buffer) => x,
        (x: Buffer) => x,
        md,
      );
      call.on('data', () => {
        call.cancel();
        resolve(true);
      });
      call.on('error', () => resolve(false));
      call.write(
        Buffer.from(
          info.requestType.encode(info.requestType.fromObject({ ID: String(LEASE) })).finish(),
        ),
      );
    });
  const snapshot = (token?: string) =>
    new Promise<boolean>((resolve) => {
      const info = proto.methods.get('/etcdserverpb.Maintenance/Snapshot')!;
      const md = new grpc.Metadata();
      if (token !== undefined) md.set('token', token);
      const call = client.makeServerStreamRequest(
        info.path,
        (x: Buffer) => x,
        (x: Buffer) => x,
        Buffer.alloc(0),
        md,
      );
      call.on('data', () => {
        call.cancel();
        resolve(true);
      });
      call.on('error', () => resolve(false));
      call.on('end', () => resolve(false));
    });
  const snapshotJson = async (token?: string) =>
    (await post('/v3/maintenance/snapshot', {}, token)).status === 200;

  const callers: Array<[string, string | undefined, boolean]> = [
    ['no token', undefined, false],
    ['alice', alice, true],
  ];
  for (const [who, token, isUser] of callers) {
    const successes: string[] = [];
    for (const c of CASES) {
      if (isUser && c.anyUser) continue;
      const r = await post(c.path, c.body, token);
      if (r.status === 200) successes.push(`JSON ${c.path} ${r.body}`);
      if (await unary(c.method, c.body, token)) successes.push(`gRPC ${c.method}`);
    }
    for (const c of GRPC_ONLY)
      if (await unary(c.method, c.body, token)) successes.push(`gRPC ${c.method}`);
    if (await watchJson(token)) successes.push('JSON /v3/watch');
    if (await watchGrpc(token)) successes.push('gRPC Watch');
    if (await snapshotJson(token)) successes.push('JSON /v3/maintenance/snapshot');
    if (await snapshot(token)) successes.push('gRPC Maintenance/Snapshot');
    if (!isUser && (await keepAlive(token))) successes.push('gRPC LeaseKeepAlive');
    if (!isUser && (await post('/v3/lease/keepalive', { ID: String(LEASE) }, token)).status === 200)
      successes.push('JSON /v3/lease/keepalive');
    t.same(successes, [], `${who}: zero successes`);
  }

  // A token that this member never issued is refused on both faces.
  t.equal((await post('/v3/kv/range', { key: b64('a') }, 'forged.1')).status, 401);
  t.notOk(await unary('KV/Range', { key: b64('a') }, 'forged.1'));

  // The same requests succeed as root: the refusals above were permission checks.
  const failures: string[] = [];
  for (const c of CASES.filter((x) => x.rootOk)) {
    const r = await post(c.path, c.body, root);
    if (r.status !== 200) failures.push(`JSON ${c.path} ${r.body}`);
    if (!(await unary(c.method, c.body, root))) failures.push(`gRPC ${c.method}`);
  }
  for (const c of GRPC_ONLY.filter((x) => x.rootOk))
    if (!(await unary(c.method, c.body, root))) failures.push(`gRPC ${c.method}`);
  if (!(await watchJson(root))) failures.push('JSON /v3/watch');
  if (!(await watchGrpc(root))) failures.push('gRPC Watch');
  if (!(await snapshot(root))) failures.push('gRPC Maintenance/Snapshot');
  if (!(await keepAlive(alice))) failures.push('gRPC LeaseKeepAlive as alice');
  t.same(failures, [], 'root is served on every route');
});
