/**
 * etcd's --peer-cert-allowed-cn and --peer-cert-allowed-hostname: with --peer-client-cert-auth
 * a certificate signed by the peer CA is not enough, its CN must be the allowed one (or it
 * must be valid for the allowed host name). A process holding a certificate of the right CA
 * with another CN can neither open a Raft stream (a forged append's first step, claiming the
 * leader's member ID) nor ask the peer endpoints (/hashkv claiming a member ID, /members,
 * the lease forwards), and the member's log and revision do not move. The control case,
 * the same requests with an allowed certificate, is served. Bad flag combinations stop the
 * start with a clear message.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import WebSocket from 'ws';
import { createCa, issue } from '../../src/server/certs.js';
import { type MemberConfigInput, resolveConfig } from '../../src/server/config.js';
import { parseServeArgs } from '../../src/server/flags.js';
import { silentLogger } from '../../src/server/logger.js';
import { Member } from '../../src/server/member.js';
import { guardDial } from '../../src/server/peer-cert.js';
import { fetchCluster } from '../../src/server/peer-http.js';
import { enc, freePorts, waitFor } from '../server/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'etcetera-peer-cn-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const ca = await createCa('peer CA');
const names = ['m1', 'm2'];
const file = (name: string, text: string) => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};
const caFile = file('ca.crt', ca.cert);
// Every member's certificate has the CN `etcd-peer` and is valid for 127.0.0.1 and peer.test.
const member = await issue(ca, {
  commonName: 'etcd-peer',
  hosts: ['127.0.0.1', 'peer.test'],
  usage: 'server',
});
// Signed by the same CA, but another CN and another host name.
const intruder = await issue(ca, {
  commonName: 'intruder',
  hosts: ['127.0.0.1', 'intruder.test'],
  usage: 'server',
});
const certFile = file('peer.crt', member.cert);
const keyFile = file('peer.key', member.key);

const ports = await freePorts(6);
const peerUrl = (i: number) => `https://127.0.0.1:${ports[2 * i + 1]}`;
const pair = names.map((n, i) => `${n}=${peerUrl(i)}`).join(',');

/** Slot `i`'s member (slots 0 and 1 are the pair; slot 2 a member of its own). */
function config(i: number, extra: MemberConfigInput): MemberConfigInput {
  const name = i < 2 ? names[i]! : 'solo';
  return {
    name,
    dataDir: join(dir, name),
    listenClientUrls: `http://127.0.0.1:${ports[2 * i]}`,
    listenPeerUrls: peerUrl(i),
    initialCluster: i < 2 ? pair : `${name}=${peerUrl(i)}`,
    heartbeatMs: 50,
    electionMs: 500,
    logLevel: 'silent',
    peerCertFile: certFile,
    peerKeyFile: keyFile,
    peerTrustedCaFile: caFile,
    peerClientCertAuth: true,
    ...extra,
  };
}

const members = await Promise.all(
  names.map((_, i) =>
    Member.start(resolveConfig(config(i, { peerCertAllowedCn: 'etcd-peer' })), {
      logger: silentLogger(),
    }),
  ),
);
t.teardown(() => Promise.all(members.map((m) => m.stop())));

function dialRaft(port: string, target: Member, from: unknown, pem: { cert: string; key: string }) {
  const u = new URL('/raft', port.replace('https', 'wss'));
  u.searchParams.set('from', String(from));
  u.searchParams.set('to', String(target.id));
  u.searchParams.set('cluster', target.registry.clusterId);
  return new Promise<string>((resolve) => {
    const ws = new WebSocket(u, { ca: ca.cert, ...pem, handshakeTimeout: 5000 });
    ws.on('open', () => {
      ws.close();
      resolve('open');
    });
    ws.on('unexpected-response', (_req, res) => {
      res.resume();
      resolve(`status ${res.statusCode}`);
    });
    ws.on('error', (e) => resolve(`error: ${e.message}`));
  });
}

function ask(
  base: string,
  path: string,
  pem: { cert: string; key: string },
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, base),
      { method: init.method ?? 'GET', headers: init.headers, ca: ca.cert, ...pem },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }),
        );
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

t.test('members with the allowed CN elect and replicate', async (t) => {
  await waitFor('a leader', () => members.some((m) => m.driver.status().role === 'leader'), 20_000);
  await members[0]!.write({ op: 'put', key: enc('cn'), value: enc('ok'), lease: 0 });
  await waitFor(
    'the put everywhere',
    () => members.every((m) => m.store.currentRevision >= 2),
    20_000,
  );
  t.pass('both members have the put');
});

t.test(
  'a certificate of the peer CA with another CN is refused everywhere; nothing changes',
  async (t) => {
    const leader = members.find((m) => m.driver.status().role === 'leader')!;
    const i = members.findIndex((m) => m !== leader);
    const target = members[i]!;
    const base = peerUrl(i);
    const before = target.driver.status();
    const rev = target.store.currentRevision;

    const raft = await dialRaft(base, target, leader.id, intruder);
    t.not(raft, 'open', `a Raft stream claiming the leader's ID: ${raft}`);
    const hash = await ask(base, '/hashkv?revision=1', intruder, {
      headers: {
        'x-etcetera-member-id': String(leader.id),
        'x-etcetera-cluster-id': target.registry.clusterId,
      },
    });
    t.equal(hash.status, 403, '/hashkv claiming a member ID');
    t.match(
      (JSON.parse(hash.text) as { error: string }).error,
      /CN "intruder" is not the allowed "etcd-peer"/,
      'the refusal says why',
    );
    t.equal((await ask(base, '/members', intruder)).status, 403, '/members');
    const keepalive = await ask(base, '/leases/keepalive', intruder, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"id":"1"}',
    });
    t.equal(keepalive.status, 403, 'a lease forward');
    const after = target.driver.status();
    t.equal(after.lastIndex, before.lastIndex, 'the log did not grow');
    t.equal(after.term, before.term, 'the term did not move');
    t.equal(target.store.currentRevision, rev, 'the revision did not move');

    // The same requests with the members' certificate are served: the refusals were the CN's.
    t.equal(await dialRaft(base, target, 2 ** 40, member), 'open', 'an allowed CN may dial');
    t.equal((await ask(base, '/members', member)).status, 200);
    t.equal(target.store.currentRevision, rev);
  },
);

t.test('--peer-cert-allowed-hostname checks the certificate against the host name', async (t) => {
  const solo = await Member.start(
    resolveConfig(config(2, { peerCertAllowedHostname: 'peer.test' })),
    { logger: silentLogger() },
  );
  t.teardown(() => solo.stop());
  const base = peerUrl(2);
  const refused = await ask(base, '/members', intruder);
  t.equal(refused.status, 403, 'a certificate not valid for peer.test is refused');
  t.match(refused.text, /peer\.test/);
  t.equal((await ask(base, '/members', member)).status, 200, 'one valid for peer.test is served');
});

t.test(
  'a member dialling a peer refuses a server certificate the rule does not allow',
  async (t) => {
    const fake = createServer({ cert: intruder.cert, key: intruder.key }, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ clusterId: '1', members: [] }));
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    t.teardown(() => fake.close());
    const url = `https://127.0.0.1:${(fake.address() as AddressInfo).port}`;
    const dial = { ca: ca.cert, cert: member.cert, key: member.key, rejectUnauthorized: true };
    const rule = { kind: 'cn', cn: 'etcd-peer' } as const;
    t.equal(
      await fetchCluster(url, guardDial(dial, rule)),
      undefined,
      'with the rule, the CN must match',
    );
    // Asked second: the agent would otherwise reuse the connection the first answer came on.
    t.ok(await fetchCluster(url, dial), 'without the rule the CA is enough');
  },
);

t.test('bad flag combinations stop the start with a clear message', async (t) => {
  const parsed = resolveConfig(
    parseServeArgs(
      [
        '--listen-peer-urls=https://127.0.0.1:2380',
        '--peer-auto-tls',
        '--peer-client-cert-auth',
        '--peer-trusted-ca-file',
        caFile,
        '--peer-cert-allowed-cn',
        'etcd-peer',
      ],
      {},
    ),
  );
  t.same(parsed.peerCertAllowed, { kind: 'cn', cn: 'etcd-peer' }, "the flag under etcd's name");
  const env = resolveConfig(
    parseServeArgs(['--peer-client-cert-auth', '--peer-trusted-ca-file', caFile], {
      ETCETERA_PEER_CERT_ALLOWED_HOSTNAME: 'peer.test',
    }),
  );
  t.same(env.peerCertAllowed, { kind: 'hostname', hostname: 'peer.test' }, 'and as a variable');
  t.throws(
    () => resolveConfig(config(0, { peerCertAllowedCn: 'a', peerCertAllowedHostname: 'b' })),
    /--peer-cert-allowed-cn and --peer-cert-allowed-hostname are mutually exclusive/,
  );
  t.throws(
    () => resolveConfig(config(0, { peerCertAllowedCn: 'a', peerClientCertAuth: false })),
    /--peer-cert-allowed-cn needs --peer-client-cert-auth/,
  );
  t.throws(() => resolveConfig(config(0, { peerCertAllowedCn: ' ' })), /must not be empty/);
});
