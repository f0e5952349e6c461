/**
 * Peer TLS: three members on https:// peer URLs with --peer-client-cert-auth elect a leader
 * and replicate; a process outside the cluster that tries to open a Raft stream to a
 * member (a forged append's first step) with no certificate, or with one from another CA,
 * is refused at the handshake, and the member's log and revision do not move. The control
 * case, the same dial with a member's certificate, opens, so the refusal is the
 * certificate's. A member whose --peer-cert-file cannot be read stops with ERR_TLS_FILE.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import WebSocket from 'ws';
import { createCa, issue } from '../../src/server/certs.js';
import { resolveConfig } from '../../src/server/config.js';
import { silentLogger } from '../../src/server/logger.js';
import { Member } from '../../src/server/member.js';
import { enc, freePorts, waitFor } from '../server/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'etcetera-peer-tls-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const ca = await createCa('peer CA');
const other = await createCa('another CA');
const names = ['m1', 'm2', 'm3'];
const pems: Record<string, { cert: string; key: string }> = {};
for (const n of names) {
  const p = await issue(ca, { commonName: n, hosts: ['127.0.0.1'], usage: 'server' });
  pems[n] = p;
  writeFileSync(join(dir, `${n}.crt`), p.cert);
  writeFileSync(join(dir, `${n}.key`), p.key);
}
writeFileSync(join(dir, 'ca.crt'), ca.cert);
const stranger = await issue(other, { commonName: 'm1', hosts: ['127.0.0.1'], usage: 'server' });

const ports = await freePorts(6);
const peerUrl = (i: number) => `https://127.0.0.1:${ports[2 * i + 1]}`;
const initialCluster = names.map((n, i) => `${n}=${peerUrl(i)}`).join(',');
const members = await Promise.all(
  names.map((n, i) =>
    Member.start(
      resolveConfig({
        name: n,
        dataDir: join(dir, n),
        listenClientUrls: `http://127.0.0.1:${ports[2 * i]}`,
        listenPeerUrls: peerUrl(i),
        initialCluster,
        heartbeatMs: 50,
        electionMs: 500,
        logLevel: 'silent',
        peerCertFile: join(dir, `${n}.crt`),
        peerKeyFile: join(dir, `${n}.key`),
        peerTrustedCaFile: join(dir, 'ca.crt'),
        peerClientCertAuth: true,
      }),
      { logger: silentLogger() },
    ),
  ),
);
t.teardown(() => Promise.all(members.map((m) => m.stop())));

t.test('a TLS cluster with peer client cert auth elects and replicates', async (t) => {
  await waitFor('a leader', () => members.some((m) => m.driver.status().role === 'leader'), 20_000);
  await members[0]!.write({ op: 'put', key: enc('over-tls'), value: enc('yes'), lease: 0 });
  await waitFor(
    'the put on every member',
    () => members.every((m) => m.store.currentRevision >= 2),
    20_000,
  );
  for (const m of members) {
    const r = await m.store.range({ key: enc('over-tls') });
    t.equal(r.kvs.length, 1, `${m.config.name} has the put`);
  }
});

/** Dials member `i`'s Raft endpoint as member `from` claims; resolves 'open' or the error. */
function dialRaft(
  i: number,
  from: bigint | number,
  tls: { cert?: string; key?: string },
): Promise<string> {
  const target = members[i]!;
  const u = new URL('/raft', peerUrl(i).replace('https', 'wss'));
  u.searchParams.set('from', String(from));
  u.searchParams.set('to', String(target.id));
  u.searchParams.set('cluster', target.registry.clusterId);
  return new Promise((resolve) => {
    const ws = new WebSocket(u, { ca: ca.cert, ...tls, handshakeTimeout: 5000 });
    ws.on('open', () => {
      ws.close();
      resolve('open');
    });
    ws.on('error', (e) => resolve(`error: ${e.message}`));
  });
}

t.test(
  'a Raft stream from outside without a peer certificate is refused; nothing changes',
  async (t) => {
    const target = members.findIndex((m) => m.driver.status().role !== 'leader');
    const leader = members.find((m) => m.driver.status().role === 'leader')!;
    const before = members[target]!.driver.status();
    const revBefore = members[target]!.store.currentRevision;
    const none = await dialRaft(target, leader.id, {});
    t.not(none, 'open', `no certificate: ${none}`);
    const foreign = await dialRaft(target, leader.id, stranger);
    t.not(foreign, 'open', `a certificate of another CA: ${foreign}`);
    const after = members[target]!.driver.status();
    t.equal(after.lastIndex, before.lastIndex, 'the log did not grow');
    t.equal(members[target]!.store.currentRevision, revBefore, 'the revision did not move');
    // The same dial with a member's certificate opens: the refusals were the certificates'.
    const name = names[target === 0 ? 1 : 0]!;
    t.equal(await dialRaft(target, 2 ** 40, pems[name]!), 'open', 'a member certificate may dial');
    t.equal(members[target]!.store.currentRevision, revBefore);
  },
);

t.test('a member whose --peer-cert-file cannot be read stops, naming the file', async (t) => {
  const missing = join(dir, 'no-such.crt');
  await t.rejects(
    Member.start(
      resolveConfig({
        name: 'bad',
        dataDir: join(dir, 'bad'),
        listenClientUrls: 'http://127.0.0.1:0',
        listenPeerUrls: 'https://127.0.0.1:0',
        initialAdvertisePeerUrls: 'https://127.0.0.1:1',
        initialCluster: 'bad=https://127.0.0.1:1',
        logLevel: 'silent',
        peerCertFile: missing,
        peerKeyFile: join(dir, 'm1.key'),
      }),
      { logger: silentLogger() },
    ),
    { code: 'ERR_TLS_FILE', message: /--peer-cert-file .*no-such\.crt: cannot read \(ENOENT\)/ },
  );
});
