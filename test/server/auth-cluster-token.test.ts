/**
 * A token from one member works on every member, as in etcd, where Authenticate goes
 * through Raft: a client that balances its requests over several endpoints (etcdctl
 * --endpoints A,B,C) must not meet `invalid auth token` on the member that did not answer
 * its Authenticate. Simple tokens are learnt by every member when the Authenticate entry
 * applies; JWTs are checked with the public key each member has. A password change ends a
 * simple token on every member. Over the JSON face, on real sockets.
 */
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { Member } from '../../src/server/member.js';
import type { Caller } from '../../src/server/types.js';
import { LocalCluster } from './local-cluster.js';

const NOBODY: Caller = { user: undefined, revision: 0 };
const b64 = (s: string) => Buffer.from(s).toString('base64');

function url(m: Member): string {
  return m.clientUrls[0]!.href.replace(/\/$/, '');
}

async function call(m: Member, path: string, body: unknown, token?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== undefined) headers.authorization = token;
  const res = await fetch(`${url(m)}${path}`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function enableAuth(leader: Member): Promise<void> {
  const a = leader.auth;
  await a.userAdd(NOBODY, 'root', 'rootpw', false);
  await a.userGrantRole(NOBODY, 'root', 'root');
  await a.userAdd(NOBODY, 'alice', 'secret', false);
  await a.roleAdd(NOBODY, 'r');
  await a.roleGrantPermission(NOBODY, 'r', {
    permType: 'READWRITE',
    key: new Uint8Array(Buffer.from('a/')),
    rangeEnd: new Uint8Array(Buffer.from('a0')),
  });
  await a.userGrantRole(NOBODY, 'alice', 'r');
  await a.enable(NOBODY);
}

/** Authenticates on `from`, then uses the token on every member. */
async function tokenEverywhere(t: Test, c: LocalCluster, from: Member): Promise<string> {
  const auth = await call(from, '/v3/auth/authenticate', { name: 'alice', password: 'secret' });
  t.equal(auth.status, 200, 'alice authenticates');
  const token = String(auth.body.token);
  for (const m of c.running()) {
    const put = await call(
      m,
      '/v3/kv/put',
      { key: b64(`a/${m.config.name}`), value: b64('v') },
      token,
    );
    t.equal(put.status, 200, `a put with the token is served by ${m.config.name}`);
    const got = await call(m, '/v3/kv/range', { key: b64('a/'), range_end: b64('a0') }, token);
    t.equal(got.status, 200, `a range with the token is served by ${m.config.name}`);
    const denied = await call(m, '/v3/kv/range', { key: b64('b') }, token);
    t.match(
      denied.body,
      { message: /permission denied/ },
      `${m.config.name} still checks the grant`,
    );
  }
  return token;
}

t.test('simple tokens are known to every member', async (t) => {
  const c = await LocalCluster.start(t.testdir(), ['a', 'b', 'c']);
  t.teardown(() => c.close());
  const leader = await c.waitLeader();
  await enableAuth(leader);
  const follower = c.running().find((m) => m !== leader)!;
  await tokenEverywhere(t, c, leader);
  const token = await tokenEverywhere(t, c, follower);

  const bogus = await call(follower, '/v3/kv/range', { key: b64('a/') }, `${token}x`);
  t.match(bogus.body, { message: 'etcdserver: invalid auth token' }, 'a forged token is refused');

  await leader.auth.userChangePassword({ user: 'root', revision: 0 }, 'alice', 'other');
  await c.waitConverged(10_000);
  for (const m of c.running()) {
    const r = await call(m, '/v3/kv/range', { key: b64('a/') }, token);
    t.match(
      r.body,
      { message: 'etcdserver: invalid auth token' },
      `the password change ended the token on ${m.config.name}`,
    );
  }
  const wrong = await call(follower, '/v3/auth/authenticate', {
    name: 'alice',
    password: 'secret',
  });
  t.match(wrong.body, { message: /authentication failed/ }, 'the old password no longer works');
});

t.test('JWTs are known to every member with the key', async (t) => {
  const dir = t.testdir();
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pub = join(dir, 'jwt.pub');
  const priv = join(dir, 'jwt.key');
  writeFileSync(pub, publicKey.export({ type: 'spki', format: 'pem' }));
  writeFileSync(priv, privateKey.export({ type: 'pkcs8', format: 'pem' }));
  const c = await LocalCluster.start(join(dir, 'cluster'), ['a', 'b'], {
    authToken: `jwt,pub-key=${pub},priv-key=${priv},sign-method=ES256`,
  });
  t.teardown(() => c.close());
  const leader = await c.waitLeader();
  await enableAuth(leader);
  await tokenEverywhere(t, c, c.running().find((m) => m !== leader)!);
});
