/**
 * A verified client certificate names its user, on both faces, as in etcd and kube-apiserver:
 * with --client-cert-auth, a request without a token is the certificate's CN for etcd's
 * authentication (JSON API, gRPC unary calls and the gRPC Watch stream), and on the
 * Kubernetes face the CN is the user and the O entries its groups. One https member with
 * etcd authentication enabled serves every subtest; real TLS sockets throughout.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { Client } from '../../src/client/index.js';
import { createCa, issue } from '../../src/server/certs.js';
import type { Member } from '../../src/server/member.js';
import { startTlsMember } from './member.js';

const dir = mkdtempSync(join(tmpdir(), 'etcetera-cert-id-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const ca = await createCa('test CA');
const server = await issue(ca, { commonName: 'm1', hosts: ['127.0.0.1'], usage: 'server' });
const certs = {
  root: await issue(ca, { commonName: 'root', usage: 'client' }),
  alice: await issue(ca, { commonName: 'alice', organizations: ['devs'], usage: 'client' }),
};
writeFileSync(join(dir, 'ca.crt'), ca.cert);
writeFileSync(join(dir, 'm1.crt'), server.cert);
writeFileSync(join(dir, 'm1.key'), server.key);

const member: Member = await startTlsMember(dir);
t.teardown(() => member.stop());
const endpoint = member.clientUrls[0]!.href.replace(/\/$/, '');
const port = Number(member.clientUrls[0]!.port);

type Who = keyof typeof certs;

/** An https request as `who` (its certificate, no token); the status and the JSON answer. */
function call(
  who: Who,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method,
        ca: ca.cert,
        cert: certs[who].cert,
        key: certs[who].key,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : {} }),
        );
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

const b64 = (s: string) => Buffer.from(s).toString('base64');

function client(who: Who, transport: 'grpc' | 'json'): Client {
  const c = new Client({
    endpoints: [endpoint],
    transport,
    timeoutMs: 10_000,
    tls: { ca: ca.cert, cert: certs[who].cert, key: certs[who].key },
  });
  t.teardown(() => c.close());
  return c;
}

// Set up as root over the JSON API before auth is on: users root and alice, alice may read a/.
for (const [path, body] of [
  ['/v3/auth/user/add', { name: 'root', password: 'pw-root' }],
  ['/v3/auth/user/grant', { user: 'root', role: 'root' }],
  ['/v3/auth/role/add', { name: 'reader' }],
  [
    '/v3/auth/role/grant',
    { name: 'reader', perm: { permType: 'READ', key: b64('a/'), range_end: b64('a0') } },
  ],
  ['/v3/auth/user/add', { name: 'alice', password: 'pw-alice' }],
  ['/v3/auth/user/grant', { user: 'alice', role: 'reader' }],
  ['/v3/kv/put', { key: b64('a/x'), value: b64('1') }],
  ['/v3/kv/put', { key: b64('z'), value: b64('2') }],
  ['/v3/auth/enable', {}],
] as const) {
  const r = await call('root', 'POST', path, body);
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.json)}`);
}

t.test('etcd JSON API: the certificate CN is the user when no token is sent', async (t) => {
  const read = await call('alice', 'POST', '/v3/kv/range', { key: b64('a/x') });
  t.equal(read.status, 200, 'alice reads a/x');
  const denied = await call('alice', 'POST', '/v3/kv/put', { key: b64('a/y'), value: b64('3') });
  t.not(denied.status, 200, 'alice may not write');
  t.match(String(denied.json.message ?? denied.json.error), /permission denied/);
  const other = await call('alice', 'POST', '/v3/kv/range', { key: b64('z') });
  t.match(String(other.json.message ?? other.json.error), /permission denied/, 'nor read z');
  const rootPut = await call('root', 'POST', '/v3/kv/put', { key: b64('a/y'), value: b64('4') });
  t.equal(rootPut.status, 200, 'root (by certificate) writes');
});

t.test('gRPC: unary calls and the Watch stream identify the certificate CN', async (t) => {
  const alice = client('alice', 'grpc');
  const got = await alice.get('a/x');
  t.equal(Buffer.from(got.kvs[0]!.value).toString(), '1', 'alice reads a/x over gRPC');
  await t.rejects(alice.put('a/z', 'no'), /permission denied/, 'and may not write');
  await t.rejects(alice.get('z'), /permission denied/, 'nor read z');
  const root = client('root', 'grpc');
  await root.put('a/w', 'root');
  t.equal(
    Buffer.from((await root.get('a/w')).kvs[0]!.value).toString(),
    'root',
    'root writes over gRPC',
  );

  // A watch alice may not hold is refused; one she may hold sees a put by root.
  const refused = await new Promise<string>((resolve) => {
    const w = alice.watch('z', {}, () => resolve('events'), {
      onError: (e) => resolve(`ended: ${e.message}`),
      onReconnect: (_r, cause) => resolve(`reconnect: ${String(cause)}`),
    });
    t.teardown(() => w.close());
  });
  t.equal(
    refused,
    'ended: etcdserver: permission denied',
    'a watch on z is refused for alice, for good',
  );
  let created: Promise<unknown> = Promise.resolve();
  const seen = new Promise<string>((resolve) => {
    const w = alice.watch(
      'a/',
      { prefix: true },
      (batch) => resolve(Buffer.from(batch.events[0]!.kv.key).toString()),
      { onError: (e) => resolve(`error: ${e.message}`) },
    );
    created = w.ready;
    t.teardown(() => w.close());
  });
  await created;
  await root.put('a/seen', 'x');
  t.equal(await seen, 'a/seen', "alice's watch on a/ sees root's put");
});

t.test('Kubernetes face: CN is the user and O the groups', async (t) => {
  const r = await call('alice', 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'SelfSubjectReview',
  });
  t.equal(r.status, 201, JSON.stringify(r.json));
  const info = (r.json.status as { userInfo?: { username?: string; groups?: string[] } })?.userInfo;
  t.equal(info?.username, 'alice');
  t.ok(info?.groups?.includes('devs'), 'the O entry is a group');
  t.ok(info?.groups?.includes('system:authenticated'));
});
