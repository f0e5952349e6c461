/**
 * The real kubectl (when it is on the machine) with `--token` against the face in RBAC
 * mode: an admin (system:masters) sets up a namespace and binds a viewer to the bootstrap
 * ClusterRole `view` there with `kubectl create rolebinding`; then what the viewer may and
 * may not do, `kubectl auth can-i` for both, and `kubectl auth whoami`.
 */
import { execFile, spawnSync } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parseTokenFile } from '../../src/api/k8s/auth.js';
import { type KubeServer, startKube } from './harness.js';
import { writeKubeconfig } from './kubeconfig.js';

function findKubectl(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const p = join(dir, 'kubectl');
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {}
  }
  return undefined;
}

const kubectl = findKubectl();

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

const openssl = spawnSync('openssl', ['version']).status === 0;

if (!kubectl || !openssl) {
  t.plan(
    0,
    `${kubectl ? 'openssl' : 'kubectl'} is not on PATH: the kubectl RBAC flows are skipped`,
  );
} else {
  let s: KubeServer;
  let dir: string;
  const run = (token: string, args: string[], input?: string): Promise<Run> =>
    new Promise((resolve) => {
      const child = execFile(
        kubectl,
        ['--token', token, ...args],
        {
          env: { ...process.env, KUBECONFIG: join(dir, 'kubeconfig'), HOME: dir },
          timeout: 60_000,
        },
        (err, stdout, stderr) => {
          const code = err ? ((err as { code?: number }).code ?? 1) : 0;
          resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr });
        },
      );
      if (input !== undefined) child.stdin?.end(input);
    });
  const admin = (args: string[], input?: string) => run('admin-token', args, input);
  const viewer = (args: string[]) => run('viewer-token', args);

  t.before(async () => {
    dir = t.testdir();
    // kubectl sends a bearer token only over TLS: a throwaway self-signed certificate.
    const made = spawnSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { encoding: 'utf8' },
    );
    if (made.status !== 0) throw new Error(`openssl: ${made.stderr}`);
    s = await startKube(dir, {
      tls: {
        key: readFileSync(join(dir, 'key.pem'), 'utf8'),
        cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
      },
      authorizationMode: 'RBAC',
      authentication: {
        tokens: parseTokenFile(
          'admin-token,admin,1,"system:masters"\nviewer-token,viewer,2\n',
          'tokens.csv',
        ),
      },
    });
    writeKubeconfig(dir, s.url, { 'insecure-skip-tls-verify': true });
  });
  t.teardown(() => s.close());

  t.test('admin sets up, viewer reads only its namespace, can-i agrees', async (t) => {
    t.equal((await admin(['create', 'namespace', 'team'])).code, 0);
    const rb = await admin([
      'create',
      'rolebinding',
      'viewer-view',
      '--clusterrole=view',
      '--user=viewer',
      '-n',
      'team',
    ]);
    t.equal(rb.code, 0, rb.stderr);
    const applied = await admin(
      ['apply', '-f', '-'],
      `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: team}
data: {a: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: other, namespace: default}
`,
    );
    t.equal(applied.code, 0, applied.stderr);
    const roles = await admin(['get', 'clusterroles', '-o', 'name']);
    t.match(roles.stdout, /clusterrole\.rbac\.authorization\.k8s\.io\/view/);
    t.match(roles.stdout, /clusterrole\.rbac\.authorization\.k8s\.io\/cluster-admin/);
    const bound = await admin([
      'get',
      'rolebinding',
      'viewer-view',
      '-n',
      'team',
      '-o',
      'jsonpath={.roleRef.kind}/{.roleRef.name} {.subjects[0].kind}/{.subjects[0].name}',
    ]);
    t.equal(bound.stdout, 'ClusterRole/view User/viewer', 'kubectl create rolebinding (protobuf)');

    // The binding reaches the cache that decisions read: wait for it as kubectl users would.
    let ok: Run = { code: 1, stdout: '', stderr: '' };
    for (let i = 0; i < 50 && ok.code !== 0; i++)
      ok = await viewer(['get', 'configmaps', '-n', 'team']);
    t.equal(ok.code, 0, ok.stderr);
    t.match(ok.stdout, /settings/);

    const denied = await viewer(['get', 'configmaps', '-n', 'default']);
    t.not(denied.code, 0);
    t.match(
      denied.stderr,
      'Error from server (Forbidden): configmaps is forbidden: User "viewer" cannot list resource "configmaps" in API group "" in the namespace "default"',
    );
    const write = await viewer(['delete', 'configmap', 'settings', '-n', 'team']);
    t.not(write.code, 0);
    t.match(
      write.stderr,
      'configmaps "settings" is forbidden: User "viewer" cannot delete resource "configmaps" in API group "" in the namespace "team"',
    );
    const all = await viewer(['get', 'pods', '-A']);
    t.match(all.stderr, 'cannot list resource "pods" in API group "" at the cluster scope');
    t.equal((await admin(['get', 'configmap', 'settings', '-n', 'team'])).code, 0, 'still there');

    const canI: [typeof viewer, string[], string][] = [
      [viewer, ['list', 'pods', '-n', 'team'], 'yes'],
      [viewer, ['watch', 'deployments.apps', '-n', 'team'], 'yes'],
      [viewer, ['create', 'pods', '-n', 'team'], 'no'],
      [viewer, ['get', 'secrets', '-n', 'team'], 'no'],
      [viewer, ['list', 'pods', '-n', 'default'], 'no'],
      [viewer, ['list', 'nodes'], 'no'],
      [admin, ['delete', 'nodes'], 'yes'],
      [admin, ['create', 'clusterroles'], 'yes'],
      // --as impersonates: system:masters may, and the viewer's grants then decide.
      [admin, ['list', 'pods', '-n', 'team', '--as=viewer'], 'yes'],
      [admin, ['create', 'pods', '-n', 'team', '--as=viewer'], 'no'],
      [admin, ['list', 'pods', '-n', 'default', '--as=viewer'], 'no'],
    ];
    for (const [who, args, want] of canI) {
      const r = await who(['auth', 'can-i', ...args]);
      t.equal(
        r.stdout.trim(),
        want,
        `${who === admin ? 'admin' : 'viewer'} can-i ${args.join(' ')}`,
      );
      t.equal(r.code, want === 'yes' ? 0 : 1);
    }
    const as = await viewer(['get', 'pods', '-n', 'team', '--as=admin']);
    t.not(as.code, 0);
    t.match(
      as.stderr,
      'users "admin" is forbidden: User "viewer" cannot impersonate resource "users" in API group "" at the cluster scope',
    );
    const whoami = await viewer(['auth', 'whoami', '-o', 'json']);
    t.equal(whoami.code, 0, whoami.stderr);
    t.same(JSON.parse(whoami.stdout).status.userInfo, {
      username: 'viewer',
      uid: '2',
      groups: ['system:authenticated'],
    });
    const wrong = await run('wrong-token', ['get', 'pods']);
    t.match(wrong.stderr, /Unauthorized|You must be logged in/);
  });
}
