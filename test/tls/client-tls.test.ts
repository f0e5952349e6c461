/**
 * TLS on the client port, over real sockets and real handshakes: etcdctl 3.4 with
 * --cacert/--cert/--key (put, get, watch) against an https:// member with
 * --client-cert-auth, the JSON API through node:https, and the refusals: a plaintext
 * client, no client certificate, a certificate of another CA and an expired one, each
 * with the member still serving afterwards. One member serves every subtest.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, createServer as createTlsServer } from 'node:tls';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import { Client } from '../../src/client/index.js';
import { createCa, issue } from '../../src/server/certs.js';
import type { Member } from '../../src/server/member.js';
import {
  certIdentity,
  clientCertCommonName,
  loadTls,
  recordCertIdentity,
} from '../../src/server/tls.js';
import { startTlsMember } from './member.js';

const ETCDCTL = '/usr/bin/etcdctl';
const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'etcetera-tls-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const ca = await createCa('test CA');
const other = await createCa('another CA');
/** PEM text by name (`root.crt`), and each is also written to `dir` for etcdctl. */
const pem: Record<string, string> = {};
function writePair(name: string, pair: { cert: string; key: string }): void {
  pem[`${name}.crt`] = pair.cert;
  pem[`${name}.key`] = pair.key;
  writeFileSync(join(dir, `${name}.crt`), pair.cert);
  writeFileSync(join(dir, `${name}.key`), pair.key);
}
writePair('ca', ca);
writePair('m1', await issue(ca, { commonName: 'm1', hosts: ['127.0.0.1'], usage: 'server' }));
writePair('root', await issue(ca, { commonName: 'root', usage: 'client' }));
writePair('stranger', await issue(other, { commonName: 'root', usage: 'client' }));
const day = 24 * 3600 * 1000;
writePair(
  'expired',
  await issue(ca, {
    commonName: 'root',
    usage: 'client',
    notBefore: new Date(Date.now() - 3 * day),
    notAfter: new Date(Date.now() - day),
  }),
);

const member: Member = await startTlsMember(dir);
t.teardown(() => member.stop());
const endpoint = member.clientUrls[0]!.href.replace(/\/$/, '');
const port = Number(member.clientUrls[0]!.port);

/** POST a JSON body over https with the given client certificate (or none). */
function post(
  path: string,
  body: unknown,
  who: 'root' | 'stranger' | 'expired' | undefined,
): Promise<{ status: number; json: Record<string, unknown>; cn?: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        ca: ca.cert,
        ...(who !== undefined ? { cert: pem[`${who}.crt`], key: pem[`${who}.key`] } : {}),
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            json: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
const b64 = (s: string) => Buffer.from(s).toString('base64');

async function stillServing(t: Test): Promise<void> {
  const r = await post('/v3/kv/range', { key: b64('probe') }, 'root');
  t.equal(r.status, 200, 'the member still serves a client with a good certificate');
}

t.test('the JSON API over https with a client certificate', async (t) => {
  const put = await post('/v3/kv/put', { key: b64('json'), value: b64('v1') }, 'root');
  t.equal(put.status, 200);
  const got = await post('/v3/kv/range', { key: b64('json') }, 'root');
  const kvs = got.json.kvs as Array<{ value: string }>;
  t.equal(Buffer.from(kvs[0]!.value, 'base64').toString(), 'v1');
});

t.test('refused: no client certificate, another CA, an expired certificate', async (t) => {
  for (const who of [undefined, 'stranger', 'expired'] as const) {
    await t.rejects(
      post('/v3/kv/put', { key: b64('x'), value: b64('no') }, who),
      `${who ?? 'no certificate'} is refused`,
    );
  }
  const r = await post('/v3/kv/range', { key: b64('x') }, 'root');
  t.equal(r.json.count ?? '0', '0', 'none of them wrote anything');
  await stillServing(t);
});

t.test(
  'a plaintext client on the TLS port gets a clear 400, and the member stays up',
  async (t) => {
    const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port, path: '/v3/kv/range', method: 'POST' },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }),
          );
        },
      );
      req.on('error', reject);
      req.end('{}');
    });
    t.equal(answer.status, 400);
    t.match(answer.text, /Client sent an HTTP request to an HTTPS server/);
    await stillServing(t);
  },
);

const haveEtcdctl = existsSync(ETCDCTL);
const env = { ...process.env, ETCDCTL_API: '3' };
const tlsArgs = () => [
  `--endpoints=${endpoint}`,
  '--dial-timeout=5s',
  `--cacert=${join(dir, 'ca.crt')}`,
  `--cert=${join(dir, 'root.crt')}`,
  `--key=${join(dir, 'root.key')}`,
];

t.test(
  'etcdctl 3.4 with --cacert --cert --key: put, get, watch',
  { skip: haveEtcdctl ? false : `${ETCDCTL} is not installed` },
  async (t) => {
    const watcher = spawn(ETCDCTL, [...tlsArgs(), 'watch', 'w'], { env });
    let seen = '';
    const sawPut = new Promise<void>((resolve) =>
      watcher.stdout.on('data', (c: Buffer) => {
        seen += c.toString();
        if (seen.includes('PUT\nw\nhello')) resolve();
      }),
    );
    t.teardown(() => void watcher.kill());
    const put = await run(ETCDCTL, [...tlsArgs(), 'put', 'k', 'v'], { env });
    t.equal(put.stdout.trim(), 'OK');
    const get = await run(ETCDCTL, [...tlsArgs(), 'get', 'k'], { env });
    t.equal(get.stdout, 'k\nv\n');
    // The watch is open once a put made after it shows up; put until it does (bounded).
    for (let i = 0; i < 50 && !seen.includes('hello'); i++) {
      await run(ETCDCTL, [...tlsArgs(), 'put', 'w', 'hello'], { env });
      await Promise.race([sawPut, new Promise((r) => setTimeout(r, 200))]);
    }
    t.match(seen, /PUT\nw\nhello/, 'the watch over TLS saw the put');
  },
);

t.test(
  'etcdctl without a client certificate, or in plaintext, is refused',
  { skip: haveEtcdctl ? false : `${ETCDCTL} is not installed` },
  async (t) => {
    const noCert = run(
      ETCDCTL,
      [
        `--endpoints=${endpoint}`,
        '--dial-timeout=1s',
        '--command-timeout=2s',
        `--cacert=${join(dir, 'ca.crt')}`,
        'put',
        'nc',
        'x',
      ],
      { env },
    );
    await t.rejects(noCert, 'no client certificate');
    const plain = run(
      ETCDCTL,
      [
        `--endpoints=${endpoint.replace('https:', 'http:')}`,
        '--dial-timeout=1s',
        '--command-timeout=2s',
        'put',
        'nc',
        'x',
      ],
      { env },
    );
    await t.rejects(plain, 'plaintext');
    const r = await post('/v3/kv/range', { key: b64('nc') }, 'root');
    t.equal(r.json.count ?? '0', '0', 'neither wrote');
    await stillServing(t);
  },
);

t.test("clientCertCommonName: the verified certificate's CN, else nothing", async (t) => {
  const seen: Array<string | undefined> = [];
  const loaded = await loadTls(
    '',
    {
      certFile: join(dir, 'm1.crt'),
      keyFile: join(dir, 'm1.key'),
      trustedCaFile: join(dir, 'ca.crt'),
      clientCertAuth: true,
      autoTls: false,
    },
    ['127.0.0.1'],
    'm1',
  );
  // Handshakes that fail verification still complete here, to see that they name nobody.
  const server = createTlsServer({ ...loaded.server, rejectUnauthorized: false }, (s) => {
    recordCertIdentity(s, loaded);
    seen.push(clientCertCommonName(s));
    s.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => server.close());
  const p = (server.address() as AddressInfo).port;
  for (const who of ['root', 'stranger', undefined] as const) {
    await new Promise<void>((resolve, reject) => {
      const c = connect({
        host: '127.0.0.1',
        port: p,
        ca: ca.cert,
        ...(who !== undefined ? { cert: pem[`${who}.crt`], key: pem[`${who}.key`] } : {}),
      });
      c.on('error', reject);
      c.on('close', () => resolve());
      c.resume();
    });
  }
  t.same(seen, ['root', undefined, undefined], 'only a certificate signed by the CA names a user');
  t.equal(clientCertCommonName(undefined), undefined);
});

t.test('with --client-cert-auth and --client-ca-file, each face trusts its own CA', async (t) => {
  writeFileSync(join(dir, 'other-ca.crt'), other.cert);
  const loaded = await loadTls(
    '',
    {
      certFile: join(dir, 'm1.crt'),
      keyFile: join(dir, 'm1.key'),
      trustedCaFile: join(dir, 'ca.crt'),
      clientCertAuth: true,
      autoTls: false,
      clientCaFile: join(dir, 'other-ca.crt'),
    },
    ['127.0.0.1'],
    'm1',
  );
  const seen: Array<ReturnType<typeof certIdentity>> = [];
  const server = createTlsServer(loaded.server, (s) => {
    recordCertIdentity(s, loaded);
    seen.push(certIdentity(s));
    s.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => server.close());
  const p = (server.address() as AddressInfo).port;
  for (const who of ['root', 'stranger'] as const) {
    await new Promise<void>((resolve, reject) => {
      const c = connect({
        host: '127.0.0.1',
        port: p,
        ca: ca.cert,
        cert: pem[`${who}.crt`],
        key: pem[`${who}.key`],
      });
      c.on('error', reject);
      c.on('close', () => resolve());
      c.resume();
    });
  }
  t.same(seen, [
    // root.crt is signed by --trusted-ca-file: the etcd user root, nobody on Kubernetes.
    { etcdUser: 'root', kubeRefused: 'the client certificate is not signed by the client CA' },
    // stranger.crt (CN=root) is signed by --client-ca-file: a Kubernetes user, not an etcd one.
    { kube: { username: 'root', groups: [] } },
  ]);
});

t.test('src/client over TLS with { ca, cert, key }: gRPC and the JSON API', async (t) => {
  for (const transport of ['grpc', 'json'] as const) {
    const client = new Client({
      endpoints: [endpoint],
      transport,
      timeoutMs: 10_000,
      tls: { ca: ca.cert, cert: pem['root.crt'], key: pem['root.key'] },
    });
    t.teardown(() => client.close());
    await client.put(`client-${transport}`, 'tls');
    const got = await client.get(`client-${transport}`);
    t.equal(Buffer.from(got.kvs[0]!.value).toString(), 'tls', `${transport} put and get`);
  }
  const noCert = new Client({
    endpoints: [endpoint],
    transport: 'json',
    timeoutMs: 3000,
    tls: { ca: ca.cert },
  });
  t.teardown(() => noCert.close());
  await t.rejects(
    noCert.put('client-nocert', 'x'),
    'the JSON client without a certificate is refused',
  );
});
