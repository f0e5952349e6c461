/**
 * kube-apiserver's authentication, authorization and audit flags on `etcetera serve`: both
 * flag forms, their defaults and checks, files refused at start before anything is opened,
 * and a real member with --anonymous-auth=false --authorization-mode RBAC on a socket.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { isEtceteraError } from '../../src/errors.js';
import { resolveConfig } from '../../src/server/config.js';
import { parseServeArgs } from '../../src/server/flags.js';
import { silentLogger } from '../../src/server/logger.js';
import { Member } from '../../src/server/member.js';

const kubeAuth = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  resolveConfig(parseServeArgs(args, env)).kubeAuth;

t.test('flags: both forms, bare switch, environment, defaults', async (t) => {
  t.same(kubeAuth([]), {
    tokenAuthFile: undefined,
    serviceAccountKeyFile: undefined,
    anonymousAuth: true,
    authorizationMode: 'AlwaysAllow',
    auditLogPath: undefined,
  });
  t.equal(kubeAuth(['--anonymous-auth=false']).anonymousAuth, false);
  t.equal(kubeAuth(['--anonymous-auth', 'false']).anonymousAuth, false);
  t.equal(kubeAuth(['--anonymous-auth', '--authorization-mode=RBAC']).anonymousAuth, true);
  t.equal(kubeAuth(['--anonymous-auth=false', '--anonymous-auth=true']).anonymousAuth, true);
  t.equal(kubeAuth([], { ETCETERA_ANONYMOUS_AUTH: 'false' }).anonymousAuth, false);
  t.equal(kubeAuth(['--authorization-mode', 'RBAC']).authorizationMode, 'RBAC');
  t.same(
    kubeAuth([
      '--token-auth-file=t.csv',
      '--service-account-key-file',
      'sa.pem',
      '--audit-log-path',
      'audit.log',
    ]),
    {
      tokenAuthFile: 't.csv',
      serviceAccountKeyFile: 'sa.pem',
      anonymousAuth: true,
      authorizationMode: 'AlwaysAllow',
      auditLogPath: 'audit.log',
    },
  );
  t.throws(() => kubeAuth(['--authorization-mode', 'ABAC']), {
    message: /--authorization-mode must be one of AlwaysAllow, RBAC/,
  });
  t.throws(() => kubeAuth(['--anonymous-auth=maybe']), {
    message: /--anonymous-auth must be true or false/,
  });
});

function config(dir: string, extra: Record<string, string>) {
  return resolveConfig({
    name: 'default',
    dataDir: join(dir, 'data'),
    listenClientUrls: 'http://127.0.0.1:0',
    listenPeerUrls: 'http://127.0.0.1:0',
    initialAdvertisePeerUrls: 'http://127.0.0.1:1',
    initialCluster: 'default=http://127.0.0.1:1',
    heartbeatMs: 20,
    electionMs: 1000,
    logLevel: 'silent',
    ...extra,
  });
}

t.test('bad files stop the start with a clear error, before the data dir is made', async (t) => {
  const dir = t.testdir({
    'short.csv': 'tok,user\n',
    'bad.pem': '-----BEGIN PUBLIC KEY-----\nnot base64 at all\n-----END PUBLIC KEY-----\n',
    'empty.pem': 'nothing here\n',
  });
  const cases: [Record<string, string>, RegExp][] = [
    [
      { tokenAuthFile: join(dir, 'missing.csv') },
      /--token-auth-file: cannot read .*missing\.csv: ENOENT/,
    ],
    [{ tokenAuthFile: join(dir, 'short.csv') }, /line 1 must have at least 3 columns/],
    [
      { serviceAccountKeyFile: join(dir, 'bad.pem') },
      /--service-account-key-file .*bad\.pem: not a key/,
    ],
    [{ serviceAccountKeyFile: join(dir, 'empty.pem') }, /no PEM key in the file/],
    [
      { auditLogPath: join(dir, 'no', 'such', 'dir', 'audit.log') },
      /--audit-log-path: cannot open .*: ENOENT/,
    ],
  ];
  for (const [extra, message] of cases) {
    const err = await Member.start(config(dir, extra), { logger: silentLogger() }).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(isEtceteraError(err, 'ERR_INVALID_ARGUMENT'), JSON.stringify(extra));
    t.match((err as Error).message, message);
    t.notOk(existsSync(join(dir, 'data')), 'no data dir was created');
  }
});

t.test('a --client-ca-file that cannot be used stops the start, naming it', async (t) => {
  const dir = t.testdir({
    'key.pem': '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n',
  });
  for (const [file, message] of [
    [join(dir, 'missing.crt'), /--client-ca-file .*missing\.crt: cannot read \(ENOENT\)/],
    [join(dir, 'key.pem'), /--client-ca-file .*key\.pem: no certificate in it/],
  ] as const) {
    const err = await Member.start(
      config(dir, { listenClientUrls: 'https://127.0.0.1:0', autoTls: 'true', clientCaFile: file }),
      { logger: silentLogger() },
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(isEtceteraError(err, 'ERR_TLS_FILE'), file);
    t.match((err as Error).message, message);
    t.notOk(existsSync(join(dir, 'data')), 'no data dir was created');
  }
});

t.test(
  'a member with --anonymous-auth=false and RBAC: 401, 403 and 200 on its socket',
  async (t) => {
    const dir = t.testdir();
    const tokens = join(dir, 'tokens.csv');
    writeFileSync(tokens, 'root-token,root,0,"system:masters"\nbob-token,bob,1\n');
    const member = await Member.start(
      config(dir, {
        tokenAuthFile: tokens,
        anonymousAuth: 'false',
        authorizationMode: 'RBAC',
        auditLogPath: join(dir, 'audit.log'),
      }),
      { logger: silentLogger() },
    );
    t.teardown(() => member.stop());
    const url = String(member.clientUrls[0]).replace(/\/$/, '');
    const get = async (path: string, token?: string) => {
      const r = await fetch(
        url + path,
        token ? { headers: { authorization: `Bearer ${token}` } } : {},
      );
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    };
    const anon = await get('/api/v1/namespaces/default/pods');
    t.equal(anon.status, 401);
    t.same(anon.body, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Unauthorized',
      reason: 'Unauthorized',
      code: 401,
    });
    t.equal((await get('/version')).status, 401, 'anonymous access is off everywhere');
    t.equal((await get('/api/v1/namespaces/default/pods', 'root-token')).status, 200);
    const bob = await get('/api/v1/namespaces/default/pods', 'bob-token');
    t.equal(bob.status, 403);
    t.equal(
      bob.body.message,
      'pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "default"',
    );
    t.equal((await get('/api', 'bob-token')).status, 200, 'discovery for every authenticated user');
    t.ok(member.loopbackToken, 'the control plane has a token of its own');
    t.equal((await get('/api/v1/nodes', member.loopbackToken)).status, 200);
  },
);
