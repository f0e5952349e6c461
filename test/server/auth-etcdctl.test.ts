/**
 * etcd authentication through the real etcdctl 3.4: one table of commands run as root, as a
 * user with a limited role and with no user, against an etcetera member (in this process,
 * etcdctl as a child process) and, when it is installed, against the real etcd (a child
 * process on 127.0.0.1 with a temp data dir), asserting the same outcome and error text on
 * both. Rows marked `stricter` are where etcetera refuses what etcd 3.4 allows (cluster and
 * maintenance calls need root, as documented); they run against etcetera only.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { freePorts, startSingle, waitFor } from './helpers.js';

const ETCDCTL = '/usr/bin/etcdctl';
const ETCD = '/usr/bin/etcd';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function ctl(endpoint: string, args: string[], stdin?: string): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      ETCDCTL,
      [`--endpoints=${endpoint}`, '--dial-timeout=20s', '--command-timeout=20s', ...args],
      { env: { ...process.env, ETCDCTL_API: '3' }, timeout: 30_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.end(stdin ?? '');
  });
}

/** What a row expects: the exact stdout of a success, or the error etcdctl reports. */
type Outcome = { out: string } | { err: string };

interface Row {
  who: 'root' | 'alice' | 'nobody' | 'alice:bad' | 'bob';
  args: string[];
  stdin?: string;
  want: Outcome;
  /** etcetera refuses what etcd 3.4 allows: run against etcetera only. */
  stricter?: boolean;
}

const USER: Record<Row['who'], string[]> = {
  root: ['--user', 'root:pw'],
  alice: ['--user', 'alice:pw'],
  nobody: [],
  'alice:bad': ['--user', 'alice:bad'],
  bob: ['--user', 'bob:pw'],
};

const DENIED = { err: 'etcdserver: permission denied' };
const EMPTY = { err: 'etcdserver: user name is empty' };
const FAILED = { err: 'etcdserver: authentication failed, invalid user ID or password' };

/** Setup in steps; the commands of one step run at once. */
const SETUP: string[][][] = [
  [
    ['user', 'add', 'root:pw'],
    ['user', 'add', 'alice:pw'],
    ['role', 'add', 'r1'],
  ],
  [
    ['role', 'grant-permission', 'r1', 'readwrite', '/a', '--prefix=true'],
    ['role', 'grant-permission', 'r1', 'read', 'k'],
    ['role', 'grant-permission', 'r1', 'read', 'z', '--from-key'],
  ],
  [['user', 'grant-role', 'alice', 'r1']],
  [['auth', 'enable']],
];

const TXN = 'value("k") = "v"\n\nput /a/t 1\n\nput k 2\n\n';

/** Rows that change nothing: they run at once, right after setup. */
const AT_ONCE: Row[] = [
  { who: 'nobody', args: ['get', 'k'], want: EMPTY },
  { who: 'nobody', args: ['put', 'k', 'v'], want: EMPTY },
  { who: 'nobody', args: ['user', 'list'], want: EMPTY },
  { who: 'alice', args: ['get', 'k'], want: { out: '' } },
  { who: 'alice', args: ['put', 'k', 'v'], want: DENIED },
  { who: 'alice', args: ['get', '/a', '/c'], want: DENIED },
  { who: 'alice', args: ['get', '', '--prefix'], want: DENIED },
  { who: 'alice', args: ['del', 'k'], want: DENIED },
  { who: 'alice', args: ['txn'], stdin: TXN, want: DENIED },
  { who: 'alice', args: ['get', 'zz', '--from-key'], want: { out: '' } },
  { who: 'alice', args: ['get', 'y', '--from-key'], want: DENIED },
  { who: 'alice:bad', args: ['get', 'k'], want: FAILED },
  { who: 'bob', args: ['get', 'k'], want: FAILED },
  { who: 'alice', args: ['user', 'list'], want: DENIED },
  { who: 'alice', args: ['role', 'list'], want: DENIED },
  { who: 'alice', args: ['user', 'add', 'eve:pw'], want: DENIED },
  { who: 'alice', args: ['user', 'get', 'alice'], want: { out: 'User: alice\nRoles: r1\n' } },
  { who: 'alice', args: ['user', 'get', 'root'], want: DENIED },
  { who: 'alice', args: ['role', 'get', 'root'], want: DENIED },
  {
    who: 'alice',
    args: ['role', 'get', 'r1'],
    want: {
      out: 'Role r1\nKV Read:\n\t[/a, /b) (prefix /a)\n\tk\n\t[z, <open ended>\nKV Write:\n\t[/a, /b) (prefix /a)\n',
    },
  },
  {
    who: 'alice',
    args: ['user', 'passwd', 'alice', '--interactive=false'],
    stdin: 'x\n',
    want: DENIED,
  },
  { who: 'alice', args: ['auth', 'disable'], want: DENIED },
  { who: 'root', args: ['user', 'list'], want: { out: 'alice\nroot\n' } },
  { who: 'root', args: ['role', 'list'], want: { out: 'r1\nroot\n' } },
  {
    who: 'root',
    args: ['user', 'get', 'nobody'],
    want: { err: 'etcdserver: user name not found' },
  },
  {
    who: 'root',
    args: ['role', 'get', 'nobody'],
    want: { err: 'etcdserver: role name not found' },
  },
  {
    who: 'root',
    args: ['user', 'add', 'alice:x'],
    want: { err: 'etcdserver: user name already exists' },
  },
  {
    who: 'root',
    args: ['role', 'add', 'r1'],
    want: { err: 'etcdserver: role name already exists' },
  },
  {
    who: 'root',
    args: ['user', 'delete', 'root'],
    want: { err: 'etcdserver: invalid auth management' },
  },
  {
    who: 'root',
    args: ['role', 'delete', 'root'],
    want: { err: 'etcdserver: invalid auth management' },
  },
  {
    who: 'root',
    args: ['user', 'revoke-role', 'alice', 'nothere'],
    want: { err: 'etcdserver: role is not granted to the user' },
  },
  {
    who: 'root',
    args: ['role', 'revoke-permission', 'r1', 'nothere'],
    want: { err: 'etcdserver: permission is not granted to the role' },
  },
  // A watch on a range alice may not read is cancelled by the server at once.
  {
    who: 'alice',
    args: ['watch', '/a', '/c'],
    want: {
      out: 'watch was canceled (rpc error: code = PermissionDenied desc = etcdserver: permission denied)\n',
    },
  },
  { who: 'alice', args: ['member', 'list'], want: DENIED, stricter: true },
  { who: 'alice', args: ['compact', '1'], want: DENIED, stricter: true },
];

/** Rows that build on each other, one after the other. */
const IN_ORDER: Row[] = [
  { who: 'root', args: ['put', 'k', 'v'], want: { out: 'OK\n' } },
  { who: 'alice', args: ['get', 'k'], want: { out: 'k\nv\n' } },
  { who: 'alice', args: ['put', '/a/1', 'one'], want: { out: 'OK\n' } },
  { who: 'alice', args: ['get', '/a', '--prefix'], want: { out: '/a/1\none\n' } },
  { who: 'alice', args: ['del', '/a/1'], want: { out: '1\n' } },
  { who: 'root', args: ['txn'], stdin: TXN, want: { out: 'SUCCESS\n\nOK\n' } },
  // A new password ends the old one; root changes it back.
  {
    who: 'root',
    args: ['user', 'passwd', 'alice', '--interactive=false'],
    stdin: 'pw2\n',
    want: { out: 'Password updated\n' },
  },
  { who: 'alice', args: ['get', 'k'], want: FAILED },
  {
    who: 'root',
    args: ['user', 'passwd', 'alice', '--interactive=false'],
    stdin: 'pw\n',
    want: { out: 'Password updated\n' },
  },
  {
    who: 'root',
    args: ['role', 'revoke-permission', 'r1', 'k'],
    want: { out: 'Permission of key k is revoked from role r1\n' },
  },
  { who: 'alice', args: ['get', 'k'], want: DENIED },
  { who: 'root', args: ['auth', 'disable'], want: { out: 'Authentication Disabled\n' } },
  { who: 'nobody', args: ['get', 'k'], want: { out: 'k\nv\n' } },
];

/** The outcome of a run as a row states it: stdout, or the `Error:` text etcdctl printed. */
function outcome(r: Run): Outcome {
  // A cancelled watch: etcdctl prints the server's reason on a line of its own.
  const cancelled = `${r.stdout}\n${r.stderr}`
    .split('\n')
    .find((l) => l.startsWith('watch was canceled'));
  if (cancelled !== undefined) return { out: `${cancelled}\n` };
  if (r.code === 0) return { out: r.stdout };
  const line = r.stderr.split('\n').find((l) => l.startsWith('Error: '));
  return { err: line === undefined ? `exit ${r.code}: ${r.stderr.trim()}` : line.slice(7) };
}

async function runTable(t: Test, endpoint: string, real: boolean): Promise<void> {
  for (const step of SETUP) {
    const runs = await Promise.all(step.map((args) => ctl(endpoint, args)));
    for (const [i, r] of runs.entries()) t.equal(r.code, 0, `setup: etcdctl ${step[i]!.join(' ')}`);
  }
  const check = async (row: Row) => {
    const r = await ctl(endpoint, [...USER[row.who], ...row.args], row.stdin);
    t.same(outcome(r), row.want, `${row.who}: etcdctl ${row.args.join(' ')}`);
  };
  // A few at a time: each authenticates (a password hash) and the machine may be busy.
  const queue = AT_ONCE.filter((row) => !(real && row.stricter));
  const worker = async () => {
    for (let row = queue.shift(); row !== undefined; row = queue.shift()) await check(row);
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  for (const row of IN_ORDER) await check(row);
}

t.test(
  'etcdctl with --user against etcetera',
  { skip: existsSync(ETCDCTL) ? false : `${ETCDCTL} not installed` },
  async (t) => {
    const m = await startSingle(mkdtempSync(join(tmpdir(), 'auth-etcdctl-')));
    t.teardown(() => m.stop());
    await runTable(t, m.clientUrls[0]!.host, false);
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
    const dir = mkdtempSync(join(tmpdir(), 'auth-etcd-'));
    const c = `http://127.0.0.1:${client}`;
    const p = `http://127.0.0.1:${peer}`;
    const etcd: ChildProcess = spawn(
      ETCD,
      [
        '--data-dir',
        dir,
        '--listen-client-urls',
        c,
        '--advertise-client-urls',
        c,
        '--listen-peer-urls',
        p,
        '--initial-advertise-peer-urls',
        p,
        '--initial-cluster',
        `default=${p}`,
        '--log-level',
        'error',
      ],
      { stdio: 'ignore' },
    );
    t.teardown(() => {
      etcd.kill('SIGKILL');
    });
    const ep = `127.0.0.1:${client}`;
    await waitFor(
      'etcd to serve',
      async () => (await ctl(ep, ['endpoint', 'health'])).code === 0,
      20_000,
      200,
    );
    await runTable(t, ep, true);
  },
);
