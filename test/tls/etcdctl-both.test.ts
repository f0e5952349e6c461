/**
 * One table of etcdctl 3.4 commands with `--cacert --cert --key` run against an etcetera
 * member (in this process) and, when installed, the real etcd (a child process on
 * 127.0.0.1), both with `--client-cert-auth` and the same certificates: the root client
 * certificate puts and gets; with auth enabled the certificate's CN is the user, so alice's
 * certificate reads what her role allows and is refused the rest with etcd's text; no
 * client certificate, one of another CA and an expired one are refused at the handshake.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { createCa, issue } from '../../src/server/certs.js';
import { freePorts, startSingle, waitFor } from '../server/helpers.js';

const ETCDCTL = '/usr/bin/etcdctl';
const ETCD = '/usr/bin/etcd';

const dir = mkdtempSync(join(tmpdir(), 'etcetera-etcdctl-tls-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const ca = await createCa('test CA');
const other = await createCa('another CA');
const write = (name: string, pair: { cert: string; key: string }) => {
  writeFileSync(join(dir, `${name}.crt`), pair.cert);
  writeFileSync(join(dir, `${name}.key`), pair.key, { mode: 0o600 });
};
write('ca', ca);
write('server', await issue(ca, { commonName: 'm1', hosts: ['127.0.0.1'], usage: 'server' }));
write('root', await issue(ca, { commonName: 'root', usage: 'client' }));
write('alice', await issue(ca, { commonName: 'alice', usage: 'client' }));
write('stranger', await issue(other, { commonName: 'root', usage: 'client' }));
const day = 24 * 3600 * 1000;
write(
  'expired',
  await issue(ca, {
    commonName: 'root',
    usage: 'client',
    notBefore: new Date(Date.now() - 3 * day),
    notAfter: new Date(Date.now() - day),
  }),
);

type Who = 'root' | 'alice' | 'stranger' | 'expired' | 'none';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function ctl(endpoint: string, who: Who, args: string[], quick = false): Promise<Run> {
  const certs =
    who === 'none' ? [] : [`--cert=${join(dir, `${who}.crt`)}`, `--key=${join(dir, `${who}.key`)}`];
  const timeouts = quick
    ? ['--dial-timeout=1s', '--command-timeout=1500ms']
    : ['--dial-timeout=5s', '--command-timeout=20s'];
  return new Promise((resolve) => {
    execFile(
      ETCDCTL,
      [
        `--endpoints=${endpoint}`,
        `--cacert=${join(dir, 'ca.crt')}`,
        ...certs,
        ...timeouts,
        ...args,
      ],
      { env: { ...process.env, ETCDCTL_API: '3' }, timeout: 30_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** Stdout of a success, or the text after `Error: ` of a failure. */
function outcome(r: Run): string {
  if (r.code === 0) return r.stdout;
  const line = r.stderr.split('\n').find((l) => l.startsWith('Error: '));
  return line === undefined ? `exit ${r.code}: ${r.stderr.trim()}` : `Error: ${line.slice(7)}`;
}

const DENIED = 'Error: etcdserver: permission denied';
/** etcdctl retries a refused handshake until its deadline, on etcd as here. */
const REFUSED = 'Error: context deadline exceeded';

const SETUP: string[][] = [
  ['user', 'add', 'root:pw'],
  ['user', 'add', 'alice:pw'],
  ['role', 'add', 'r'],
  ['role', 'grant-permission', 'r', 'read', 'k'],
  ['user', 'grant-role', 'alice', 'r'],
];

const TABLE: Array<[Who, string[], string]> = [
  ['root', ['put', 'k', 'v'], 'OK\n'],
  ['root', ['get', 'k'], 'k\nv\n'],
  ['alice', ['get', 'k'], 'k\nv\n'],
  ['root', ['auth', 'enable'], 'Authentication Enabled\n'],
  // From here the certificate's CN is the user.
  ['root', ['put', 'k', 'v2'], 'OK\n'],
  ['alice', ['get', 'k', '--print-value-only'], 'v2\n'],
  ['alice', ['put', 'k', 'x'], DENIED],
  ['alice', ['get', 'other'], DENIED],
  ['alice', ['user', 'list'], DENIED],
  ['root', ['user', 'list'], 'alice\nroot\n'],
];

const REFUSALS: Who[] = ['none', 'stranger', 'expired'];

async function runTable(t: Test, endpoint: string): Promise<void> {
  for (const args of SETUP)
    t.equal(outcome(await ctl(endpoint, 'root', args)).includes('Error'), false, args.join(' '));
  for (const [who, args, want] of TABLE)
    t.equal(outcome(await ctl(endpoint, who, args)), want, `${who}: etcdctl ${args.join(' ')}`);
  const refused = await Promise.all(REFUSALS.map((who) => ctl(endpoint, who, ['get', 'k'], true)));
  for (const [i, r] of refused.entries()) t.equal(outcome(r), REFUSED, `${REFUSALS[i]}: refused`);
  t.equal(
    outcome(await ctl(endpoint, 'root', ['get', 'k', '--print-value-only'])),
    'v2\n',
    'still serving',
  );
}

t.test(
  'etcdctl with --cacert --cert --key against etcetera',
  { skip: existsSync(ETCDCTL) ? false : `${ETCDCTL} not installed` },
  async (t) => {
    const m = await startSingle(join(dir, 'etcetera'), {
      listenClientUrls: 'https://127.0.0.1:0',
      certFile: join(dir, 'server.crt'),
      keyFile: join(dir, 'server.key'),
      trustedCaFile: join(dir, 'ca.crt'),
      clientCertAuth: true,
    });
    t.teardown(() => m.stop());
    await runTable(t, m.clientUrls[0]!.href.replace(/\/$/, ''));
  },
);

t.test(
  'the same table against the real etcd',
  {
    skip: !existsSync(ETCDCTL)
      ? `${ETCDCTL} not installed`
      : !existsSync(ETCD)
        ? `${ETCD} not installed`
        : false,
  },
  async (t) => {
    const [client, peer] = await freePorts(2);
    const c = `https://127.0.0.1:${client}`;
    const p = `http://127.0.0.1:${peer}`;
    const etcd: ChildProcess = spawn(
      ETCD,
      [
        ...[
          '--data-dir',
          join(dir, 'etcd'),
          '--listen-client-urls',
          c,
          '--advertise-client-urls',
          c,
        ],
        ...['--listen-peer-urls', p, '--initial-advertise-peer-urls', p],
        ...['--initial-cluster', `default=${p}`, '--log-level', 'error'],
        ...['--cert-file', join(dir, 'server.crt'), '--key-file', join(dir, 'server.key')],
        ...['--trusted-ca-file', join(dir, 'ca.crt'), '--client-cert-auth'],
      ],
      { stdio: 'ignore' },
    );
    const exited = new Promise<void>((resolve) => etcd.once('exit', () => resolve()));
    t.teardown(async () => {
      etcd.kill('SIGKILL');
      await exited;
    });
    await waitFor(
      'etcd to serve',
      async () => (await ctl(c, 'root', ['endpoint', 'health'])).code === 0,
      20_000,
      200,
    );
    await runTable(t, c);
  },
);
