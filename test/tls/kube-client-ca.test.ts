/**
 * kube-apiserver's --client-ca-file on a member's https:// client port, with the real
 * kubectl (skipped when it is not on PATH) and certificates written by `etcetera certs`:
 * a certificate is asked for but optional. One signed by the client CA names the user (CN)
 * and groups (O, from `--clients name/group`), and RBAC decides: an admin in system:masters
 * binds alice to `view` and the group dev to `edit`; alice reads and is refused writes with
 * Kubernetes' 403 text, `auth can-i` agrees, a dev member writes. Without a certificate a
 * token still authenticates and no credentials at all are system:anonymous; a certificate
 * of another CA or an expired one is 401 on its own (a valid token beside it still counts).
 * etcdctl reaches the etcd face on the same port without a client certificate.
 */
import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { webcrypto } from 'node:crypto';
import { accessSync, constants, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';
import t from 'tap';
import { runCerts } from '../../src/cli/certs.js';
import { type CertAuthority, createCa, issue } from '../../src/server/certs.js';
import { writeKubeconfig } from '../k8s/kubeconfig.js';
import { startSingle } from '../server/helpers.js';

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const p = join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {}
  }
  return undefined;
}

const kubectl = onPath('kubectl');
const ETCDCTL = '/usr/bin/etcdctl';

/** The CA `etcetera certs` wrote, able to sign again (for a certificate already expired). */
async function caFrom(dir: string): Promise<CertAuthority> {
  const cert = readFileSync(join(dir, 'ca.crt'), 'utf8');
  const key = readFileSync(join(dir, 'ca.key'), 'utf8');
  const signerCert = new x509.X509Certificate(cert);
  const der = Buffer.from(key.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  const alg = { name: 'ECDSA', namedCurve: 'P-256' };
  const privateKey = await webcrypto.subtle.importKey('pkcs8', der, alg, true, ['sign']);
  const publicKey = await signerCert.publicKey.export(alg, ['verify'], webcrypto);
  return { cert, key, signer: { keys: { privateKey, publicKey }, cert: signerCert } };
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

if (kubectl === undefined) {
  t.plan(0, 'kubectl is not on PATH: the --client-ca-file flows are skipped');
} else {
  const dir = t.testdir();
  await runCerts([
    '--dir',
    dir,
    '--hosts',
    '127.0.0.1',
    '--members',
    'm1',
    '--clients',
    'admin/system:masters,alice,carol/dev/ops',
  ]);
  const other = await createCa('another CA');
  const write = (name: string, pair: { cert: string; key: string }) => {
    writeFileSync(join(dir, `${name}.crt`), pair.cert);
    writeFileSync(join(dir, `${name}.key`), pair.key, { mode: 0o600 });
  };
  const masters = { usage: 'client', organizations: ['system:masters'] } as const;
  write('stranger', await issue(other, { commonName: 'admin', ...masters }));
  const day = 24 * 3600 * 1000;
  write(
    'expired',
    await issue(await caFrom(dir), {
      commonName: 'admin',
      ...masters,
      notBefore: new Date(Date.now() - 3 * day),
      notAfter: new Date(Date.now() - day),
    }),
  );
  writeFileSync(join(dir, 'tokens.csv'), 'tok-1,tokuser,7\n');

  const member = await startSingle(join(dir, 'data'), {
    listenClientUrls: 'https://127.0.0.1:0',
    certFile: join(dir, 'm1.crt'),
    keyFile: join(dir, 'm1.key'),
    clientCaFile: join(dir, 'ca.crt'),
    tokenAuthFile: join(dir, 'tokens.csv'),
    authorizationMode: 'RBAC',
  });
  t.teardown(() => member.stop());
  const url = String(member.clientUrls[0]).replace(/\/$/, '');
  writeKubeconfig(dir, url, { 'certificate-authority': join(dir, 'ca.crt') });

  type Who = 'admin' | 'alice' | 'carol' | 'stranger' | 'expired' | 'token' | 'stranger+token';
  const credentials = (who: Who): string[] => {
    const cert = (n: string) => [
      `--client-certificate=${join(dir, `${n}.crt`)}`,
      `--client-key=${join(dir, `${n}.key`)}`,
    ];
    if (who === 'token') return ['--token=tok-1'];
    if (who === 'stranger+token') return [...cert('stranger'), '--token=tok-1'];
    return cert(who);
  };
  const k = (who: Who, args: string[]): Promise<Run> =>
    new Promise((resolve) => {
      const child = execFile(
        kubectl,
        [...credentials(who), ...args],
        {
          env: { ...process.env, KUBECONFIG: join(dir, 'kubeconfig'), HOME: dir },
          timeout: 60_000,
        },
        (err, stdout, stderr) => {
          const code = err ? ((err as { code?: number }).code ?? 1) : 0;
          resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr });
        },
      );
      child.stdin?.end();
    });
  const whoami = async (who: Who) => {
    const r = await k(who, ['auth', 'whoami', '-o', 'json']);
    if (r.code !== 0) return r.stderr.trim();
    return (JSON.parse(r.stdout) as { status: { userInfo: unknown } }).status.userInfo;
  };

  t.test('a client CA certificate is a user with groups, and RBAC decides', async (t) => {
    t.same(await whoami('admin'), {
      username: 'admin',
      groups: ['system:masters', 'system:authenticated'],
    });
    t.same(await whoami('carol'), {
      username: 'carol',
      groups: ['dev', 'ops', 'system:authenticated'],
    });
    for (const args of [
      ['create', 'rolebinding', 'alice-view', '--clusterrole=view', '--user=alice'],
      ['create', 'rolebinding', 'dev-edit', '--clusterrole=edit', '--group=dev'],
      ['create', 'configmap', 'c1', '--from-literal=a=1'],
    ]) {
      const r = await k('admin', args);
      t.equal(r.code, 0, `admin: kubectl ${args.join(' ')} ${r.stderr}`);
    }
    // The bindings reach the cache that decisions read: wait for it as a user would.
    let seen: Run = { code: 1, stdout: '', stderr: '' };
    for (let i = 0; i < 50 && seen.code !== 0; i++) seen = await k('alice', ['get', 'configmaps']);
    t.equal(seen.code, 0, seen.stderr);
    t.match(seen.stdout, /c1/, 'alice lists with view');
    const del = await k('alice', ['delete', 'configmap', 'c1']);
    t.not(del.code, 0);
    t.match(
      del.stderr,
      'Error from server (Forbidden): configmaps "c1" is forbidden: User "alice" cannot delete resource "configmaps" in API group "" in the namespace "default"',
    );
    for (const [who, args, want] of [
      ['alice', ['list', 'configmaps'], 'yes'],
      ['alice', ['create', 'configmaps'], 'no'],
      ['alice', ['list', 'secrets'], 'no'],
      ['carol', ['create', 'configmaps'], 'yes'],
    ] as const) {
      const r = await k(who, ['auth', 'can-i', ...args]);
      t.equal(r.stdout.trim(), want, `${who} can-i ${args.join(' ')}`);
    }
    let made: Run = { code: 1, stdout: '', stderr: '' };
    for (let i = 0; i < 50 && made.code !== 0; i++)
      made = await k('carol', ['create', 'configmap', 'c2', '--from-literal=b=2']);
    t.equal(made.code, 0, `carol (group dev) creates with edit: ${made.stderr}`);
  });

  t.test('the certificate is optional: a token, or nothing at all', async (t) => {
    t.same(await whoami('token'), {
      username: 'tokuser',
      uid: '7',
      groups: ['system:authenticated'],
    });
    // kubectl with no credentials at all asks for a user name; node:https sends none.
    const anon = await new Promise<{ status: number; body: { message?: string } }>(
      (resolve, reject) => {
        const req = request(
          `${url}/api/v1/namespaces/default/configmaps`,
          { ca: readFileSync(join(dir, 'ca.crt')) },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              resolve({
                status: res.statusCode ?? 0,
                body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
              }),
            );
          },
        );
        req.on('error', reject);
        req.end();
      },
    );
    t.equal(anon.status, 403);
    t.equal(
      anon.body.message,
      'configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" in the namespace "default"',
    );
  });

  t.test('a certificate of another CA, or expired, is 401 unless a token is valid', async (t) => {
    for (const who of ['stranger', 'expired'] as const) {
      const r = await k(who, ['get', 'configmaps']);
      t.not(r.code, 0);
      t.match(r.stderr, 'error: You must be logged in to the server (Unauthorized)', who);
    }
    t.same(await whoami('stranger+token'), {
      username: 'tokuser',
      uid: '7',
      groups: ['system:authenticated'],
    });
    t.same(
      await whoami('admin'),
      {
        username: 'admin',
        groups: ['system:masters', 'system:authenticated'],
      },
      'the member still serves',
    );
  });

  t.test(
    'etcdctl on the same port needs no client certificate',
    { skip: existsSync(ETCDCTL) ? false : `${ETCDCTL} not installed` },
    async (t) => {
      const r = await new Promise<Run>((resolve) =>
        execFile(
          ETCDCTL,
          [`--endpoints=${url}`, `--cacert=${join(dir, 'ca.crt')}`, 'put', 'k', 'v'],
          { env: { ...process.env, ETCDCTL_API: '3' }, timeout: 30_000 },
          (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr }),
        ),
      );
      t.same({ code: r.code, out: r.stdout }, { code: 0, out: 'OK\n' }, r.stderr);
    },
  );
}
