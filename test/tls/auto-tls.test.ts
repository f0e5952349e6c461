/**
 * --auto-tls and --peer-auto-tls over real handshakes. One table of etcdctl 3.4 commands
 * runs against an etcetera member started with `--auto-tls --client-cert-auth` (in this
 * process) and, when installed, against the real etcd started the same way (a child process
 * on 127.0.0.1): with --insecure-skip-tls-verify the calls work, the self-signed certificate
 * the member keeps in `<data-dir>/fixtures/client/cert.pem` verifies it as --cacert, and a
 * client that checks the certificate against the system roots or another CA is refused.
 * A restart on the same data dir serves the same certificate. Two members on https:// peer
 * URLs with --peer-auto-tls elect a leader and replicate, each presenting the certificate in
 * its `fixtures/peer/`.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import t, { type Test } from 'tap';
import { createCa } from '../../src/server/certs.js';
import { resolveConfig } from '../../src/server/config.js';
import { silentLogger } from '../../src/server/logger.js';
import { Member } from '../../src/server/member.js';
import { enc, freePorts, startSingle, waitFor } from '../server/helpers.js';

const ETCDCTL = '/usr/bin/etcdctl';
const ETCD = '/usr/bin/etcd';

const dir = mkdtempSync(join(tmpdir(), 'etcetera-auto-tls-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const otherCa = join(dir, 'other-ca.crt');
writeFileSync(otherCa, (await createCa('another CA')).cert);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** etcdctl against https://endpoint; `quick` for a call expected to fail (it retries until then). */
function ctl(endpoint: string, args: string[], quick = false): Promise<Run> {
  const timeouts = quick
    ? ['--dial-timeout=1s', '--command-timeout=1500ms']
    : ['--dial-timeout=5s', '--command-timeout=20s'];
  return new Promise((resolve) => {
    execFile(
      ETCDCTL,
      [`--endpoints=https://${endpoint}`, ...timeouts, ...args],
      { env: { ...process.env, ETCDCTL_API: '3' }, timeout: 30_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** The certificate a TLS server at host:port presents, as a SHA-256 fingerprint. */
function presented(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const fp = s.getPeerCertificate().fingerprint256;
      s.end();
      resolve(fp);
    });
    s.on('error', reject);
  });
}

/** The error of a handshake that verifies the server against `ca` (undefined: it verified). */
function refusedWith(port: number, ca: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port, ca: readFileSync(ca) }, () => {
      s.end();
      resolve(undefined);
    });
    s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
}

const fingerprint = (file: string) => new X509Certificate(readFileSync(file)).fingerprint256;

/** A member under test: where it serves, and how to stop it. */
interface Running {
  endpoint: string;
  stop(): Promise<void>;
}

const SKIP = ['--insecure-transport=false', '--insecure-skip-tls-verify'];

/**
 * The shared table. `data` is the member's data dir. etcdctl 3.4 retries a failed handshake
 * until its deadline and then prints only `context deadline exceeded`, on etcd as here; why
 * the handshake failed is checked with node:tls by `refusedWith` below.
 */
type Want = { out: string } | { refused: RegExp };
function table(data: string): Array<{ what: string; args: string[]; want: Want }> {
  const self = join(data, 'fixtures', 'client', 'cert.pem');
  return [
    { what: 'put, skipping verification', args: [...SKIP, 'put', 'k', 'v'], want: { out: 'OK\n' } },
    { what: 'get, skipping verification', args: [...SKIP, 'get', 'k'], want: { out: 'k\nv\n' } },
    {
      what: 'get, pinned to the self-signed cert',
      args: ['--cacert', self, 'get', 'k'],
      want: { out: 'k\nv\n' },
    },
    {
      what: 'no client certificate is asked for (--client-cert-auth is dropped)',
      args: [...SKIP, 'get', 'k', '--print-value-only'],
      want: { out: 'v\n' },
    },
    {
      what: 'get, verified against another CA',
      args: ['--cacert', otherCa, 'get', 'k'],
      want: { refused: /context deadline exceeded/ },
    },
    {
      what: 'get, verified against the system roots',
      args: ['--insecure-transport=false', 'get', 'k'],
      want: { refused: /context deadline exceeded/ },
    },
  ];
}

async function runTable(t: Test, m: Running, data: string): Promise<void> {
  // The rows in order, but the refusals (each waits out etcdctl's deadline) at once.
  const rows = table(data);
  const refusals = new Map(
    rows
      .filter((row) => 'refused' in row.want)
      .map((row) => [row, ctl(m.endpoint, row.args, true)] as const),
  );
  for (const row of rows) {
    const r = await (refusals.get(row) ?? ctl(m.endpoint, row.args));
    if ('out' in row.want) {
      t.same({ code: r.code, out: r.stdout }, { code: 0, out: row.want.out }, row.what);
    } else {
      t.not(r.code, 0, `${row.what}: refused`);
      t.match(r.stderr, row.want.refused, `${row.what}: ${r.stderr.trim().split('\n').pop()}`);
    }
  }
}

/** Runs the table, restarts on the same data dir, and checks the certificate was kept. */
async function scenario(t: Test, start: () => Promise<Running>, data: string): Promise<void> {
  const first = await start();
  const certFile = join(data, 'fixtures', 'client', 'cert.pem');
  try {
    await runTable(t, first, data);
    t.equal(
      statSync(join(data, 'fixtures', 'client', 'key.pem')).mode & 0o777,
      0o600,
      'key is 0600',
    );
    t.equal(
      await presented(Number(first.endpoint.split(':')[1])),
      fingerprint(certFile),
      'the member presents the certificate in fixtures/client',
    );
    const port = Number(first.endpoint.split(':')[1]);
    t.equal(await refusedWith(port, certFile), undefined, 'the self-signed cert verifies it');
    t.equal(
      await refusedWith(port, otherCa),
      'DEPTH_ZERO_SELF_SIGNED_CERT',
      'another CA does not: the certificate is self-signed',
    );
  } finally {
    await first.stop();
  }
  const before = readFileSync(certFile, 'utf8');
  const second = await start();
  try {
    t.equal(readFileSync(certFile, 'utf8'), before, 'a restart keeps the certificate file');
    t.equal(
      await presented(Number(second.endpoint.split(':')[1])),
      fingerprint(certFile),
      'and serves it',
    );
    const r = await ctl(second.endpoint, ['--cacert', certFile, 'get', 'k', '--print-value-only']);
    t.same(
      { code: r.code, out: r.stdout },
      { code: 0, out: 'v\n' },
      'the pinned client still reads',
    );
  } finally {
    await second.stop();
  }
}

t.test(
  'etcdctl against an etcetera member with --auto-tls',
  { skip: existsSync(ETCDCTL) ? false : `${ETCDCTL} not installed` },
  async (t) => {
    const data = join(dir, 'etcetera');
    await scenario(
      t,
      async () => {
        const m = await startSingle(data, {
          listenClientUrls: 'https://127.0.0.1:0',
          autoTls: true,
          clientCertAuth: true,
        });
        return { endpoint: m.clientUrls[0]!.host, stop: () => m.stop() };
      },
      data,
    );
  },
);

t.test(
  'the same table against the real etcd with --auto-tls',
  {
    skip: !existsSync(ETCDCTL)
      ? `${ETCDCTL} not installed`
      : !existsSync(ETCD)
        ? `${ETCD} not installed`
        : false,
  },
  async (t) => {
    const data = join(dir, 'etcd');
    const [client, peer] = await freePorts(2);
    const c = `https://127.0.0.1:${client}`;
    const p = `http://127.0.0.1:${peer}`;
    await scenario(
      t,
      async () => {
        const etcd: ChildProcess = spawn(
          ETCD,
          [
            ...['--data-dir', data, '--listen-client-urls', c, '--advertise-client-urls', c],
            ...['--listen-peer-urls', p, '--initial-advertise-peer-urls', p],
            ...['--initial-cluster', `default=${p}`, '--log-level', 'error'],
            ...['--auto-tls', '--client-cert-auth'],
          ],
          { stdio: 'ignore' },
        );
        const exited = new Promise<void>((resolve) => etcd.once('exit', () => resolve()));
        const endpoint = `127.0.0.1:${client}`;
        await waitFor(
          'etcd to serve',
          async () => (await ctl(endpoint, [...SKIP, 'endpoint', 'health'])).code === 0,
          20_000,
          200,
        );
        return {
          endpoint,
          stop: async () => {
            etcd.kill('SIGTERM');
            await exited;
          },
        };
      },
      data,
    );
  },
);

t.test('two members with --peer-auto-tls elect and replicate over https', async (t) => {
  const ports = await freePorts(4);
  const peerUrl = (i: number) => `https://127.0.0.1:${ports[2 * i + 1]}`;
  const names = ['p1', 'p2'];
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
          peerAutoTls: true,
        }),
        { logger: silentLogger() },
      ),
    ),
  );
  t.teardown(() => Promise.all(members.map((m) => m.stop())));
  await waitFor('a leader', () => members.some((m) => m.driver.status().role === 'leader'), 20_000);
  await members[0]!.write({ op: 'put', key: enc('over-auto-tls'), value: enc('yes'), lease: 0 });
  await waitFor(
    'the put on both',
    () => members.every((m) => m.store.currentRevision >= 2),
    20_000,
  );
  for (const [i, m] of members.entries()) {
    t.equal(
      (await m.store.range({ key: enc('over-auto-tls') })).kvs.length,
      1,
      `${m.config.name} has it`,
    );
    t.equal(
      await presented(ports[2 * i + 1]!),
      fingerprint(join(dir, m.config.name, 'fixtures', 'peer', 'cert.pem')),
      `${m.config.name} presents the certificate in its fixtures/peer`,
    );
  }
});
