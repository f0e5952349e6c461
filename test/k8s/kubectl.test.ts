/**
 * End to end with the real kubectl (when it is on the machine): the flows of issue 6 against
 * the Kubernetes face over a real store. Each kubectl run gets its own HOME (no discovery
 * cache shared with the user) and a kubeconfig pointing at the test server.
 */
import { execFile, spawn } from 'node:child_process';
import { accessSync, constants, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
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

function setup(dir: string, url: string) {
  const config = writeKubeconfig(dir, url);
  const env = { ...process.env, KUBECONFIG: config, HOME: dir };
  const run = (args: string[], input?: string): Promise<Run> =>
    new Promise((resolve) => {
      const child = execFile(
        kubectl as string,
        args,
        { env, cwd: dir, timeout: 30_000 },
        (err, stdout, stderr) => {
          const code = err ? ((err as { code?: number }).code ?? 1) : 0;
          resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr });
        },
      );
      if (input !== undefined) child.stdin?.end(input);
    });
  /** Starts a long-running kubectl (a watch); `stop` ends it and gives its output. */
  const background = (args: string[]) => {
    const child = spawn(kubectl as string, args, { env, cwd: dir });
    let out = '';
    child.stdout.on('data', (b) => {
      out += b;
    });
    child.stderr.on('data', (b) => {
      out += b;
    });
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    return {
      output: () => out,
      async stop() {
        child.kill('SIGTERM');
        await exited;
        return out;
      },
    };
  };
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };
  return { run, background, file };
}

const DEPLOYMENT = (image: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: ${image}
        ports: [{containerPort: 80}]
      - name: sidecar
        image: busybox
`;

const CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
`;

async function waitFor(check: () => boolean, ms = 5000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

if (!kubectl) {
  t.plan(0, 'kubectl is not on PATH: the kubectl end-to-end test is skipped');
} else {
  t.test('kubectl against the Kubernetes face', async (t) => {
    const dir = t.testdir();
    const s: KubeServer = await startKube(join(dir, 'data'));
    t.teardown(() => s.close());
    const { run, background, file } = setup(dir, s.url);

    await t.test('version and discovery', async (t) => {
      const v = await run(['version']);
      t.equal(v.code, 0, v.stderr);
      t.match(v.stdout, /Server Version: v1\.32/);
      const r = await run(['api-resources']);
      t.match(r.stdout, /deployments\s+deploy\s+apps\/v1\s+true\s+Deployment/);
      t.match(r.stdout, /customresourcedefinitions/);
    });

    await t.test('apply a Deployment twice with a changed image, get -o json', async (t) => {
      const a = await run(['apply', '-f', file('d1.yaml', DEPLOYMENT('nginx:1.26'))]);
      t.equal(a.stdout.trim(), 'deployment.apps/web created', a.stderr);
      const b = await run(['apply', '-f', file('d2.yaml', DEPLOYMENT('nginx:1.27'))]);
      t.equal(b.stdout.trim(), 'deployment.apps/web configured', b.stderr);
      const c = await run(['apply', '-f', join(dir, 'd2.yaml')]);
      t.equal(c.stdout.trim(), 'deployment.apps/web unchanged', c.stderr);
      const g = await run(['get', 'deployment', 'web', '-o', 'json']);
      const obj = JSON.parse(g.stdout);
      t.same(
        obj.spec.template.spec.containers.map((x: { image: string }) => x.image),
        ['nginx:1.27', 'busybox'],
      );
      t.equal(obj.metadata.generation, 2);
      t.match(
        obj.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'],
        /nginx:1\.27/,
      );
    });

    await t.test('pods: selectors, chunks, stale replace, delete', async (t) => {
      for (const i of [1, 2, 3, 4, 5]) {
        const r = await run(['run', `p${i}`, '--image=nginx', `--labels=app=web,idx=${i}`]);
        t.equal(r.code, 0, r.stderr);
      }
      const chunked = await run(['get', 'pods', '--chunk-size=2', '-o', 'name']);
      t.equal(chunked.stdout.trim().split('\n').length, 5);
      const byLabel = await run(['get', 'pods', '-l', 'idx in (1,3),app=web', '-o', 'name']);
      t.same(byLabel.stdout.trim().split('\n'), ['pod/p1', 'pod/p3']);
      const byField = await run([
        'get',
        'pods',
        '--field-selector',
        'metadata.name=p2',
        '-o',
        'name',
      ]);
      t.equal(byField.stdout.trim(), 'pod/p2');
      const badField = await run(['get', 'pods', '--field-selector', 'foo.bar=1']);
      t.not(badField.code, 0);
      t.match(badField.stderr, /field label not supported: foo\.bar/);
      const yaml = await run(['get', 'pod', 'p1', '-o', 'yaml']);
      const p1 = file('p1.yaml', yaml.stdout);
      t.equal((await run(['label', 'pod', 'p1', 'tier=fe'])).code, 0);
      const replaced = await run(['replace', '-f', p1]);
      t.not(replaced.code, 0);
      t.match(replaced.stderr, /Error from server \(Conflict\).*the object has been modified/);
      const del = await run(['delete', 'pod', 'p5']);
      t.equal(del.stdout.trim(), 'pod "p5" deleted', del.stderr);
      const missing = await run(['get', 'pod', 'p5']);
      t.match(missing.stderr, /Error from server \(NotFound\): pods "p5" not found/);
    });

    await t.test('one-line generators (protobuf bodies)', async (t) => {
      const runs = [
        ['create', 'namespace', 'team'],
        ['create', 'configmap', 'cm1', '--from-literal=a=b'],
        ['create', 'secret', 'generic', 's1', '--from-literal=password=hunter2'],
        ['create', 'deployment', 'api', '--image=nginx:1.27', '--replicas=3', '--port=80'],
        ['create', 'service', 'clusterip', 'svc1', '--tcp=80:8080'],
      ];
      for (const args of runs) {
        const r = await run(args);
        t.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      }
      t.equal((await run(['get', 'cm', 'cm1', '-o', 'jsonpath={.data.a}'])).stdout, 'b');
      const secret = await run(['get', 'secret', 's1', '-o', 'jsonpath={.data.password}']);
      t.equal(Buffer.from(secret.stdout, 'base64').toString(), 'hunter2');
      const d = JSON.parse((await run(['get', 'deploy', 'api', '-o', 'json'])).stdout);
      t.equal(d.spec.replicas, 3);
      t.same(d.spec.template.spec.containers[0].ports, [{ containerPort: 80 }]);
      const svc = JSON.parse((await run(['get', 'svc', 'svc1', '-o', 'json'])).stdout);
      t.match(svc.spec.ports[0], { port: 80, targetPort: 8080, protocol: 'TCP' });
      t.equal((await run(['delete', 'namespace', 'team'])).code, 0);
    });

    await t.test('get -w sees ADDED, MODIFIED, DELETED', async (t) => {
      const w = background(['get', 'pods', '-w', '--output-watch-events', '-o', 'json']);
      const events = () =>
        w
          .output()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as { type: string; object: { metadata: { name: string } } })
          .map((e) => `${e.type} ${e.object.metadata.name}`);
      t.ok(await waitFor(() => events().length >= 4), 'initial rows');
      t.same(events().slice(0, 4), ['ADDED p1', 'ADDED p2', 'ADDED p3', 'ADDED p4']);
      t.equal((await run(['run', 'p6', '--image=nginx'])).code, 0);
      t.equal((await run(['label', 'pod', 'p6', 'x=y'])).code, 0);
      t.equal((await run(['delete', 'pod', 'p6'])).code, 0);
      t.ok(await waitFor(() => events().includes('DELETED p6')), 'DELETED seen');
      await w.stop();
      t.same(
        events().filter((e) => e.endsWith(' p6')),
        ['ADDED p6', 'MODIFIED p6', 'DELETED p6'],
      );
    });

    await t.test('apply a CRD, then its objects; server-side apply', async (t) => {
      t.equal((await run(['apply', '-f', file('crd.yaml', CRD)])).code, 0);
      const est = await run([
        'wait',
        '--for=condition=Established',
        'crd/widgets.example.com',
        '--timeout=10s',
      ]);
      t.equal(est.code, 0, est.stderr);
      const widget = (size: number) =>
        `apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: ${size}}\n`;
      const a = await run(['apply', '-f', file('w1.yaml', widget(3))]);
      t.equal(a.stdout.trim(), 'widget.example.com/w1 created', a.stderr);
      const b = await run(['apply', '-f', file('w2.yaml', widget(6))]);
      t.equal(b.stdout.trim(), 'widget.example.com/w1 configured', b.stderr);
      const g = await run(['get', 'wd', 'w1', '-o', 'jsonpath={.spec.size}']);
      t.equal(g.stdout, '6');
      // Taking over the client-side applied Deployment: kubectl migrates the ownership of
      // kubectl-client-side-apply to its own apply manager after the first apply.
      const same = await run(['apply', '--server-side', '-f', join(dir, 'd2.yaml')]);
      t.equal(same.stdout.trim(), 'deployment.apps/web serverside-applied', same.stderr);
      const ssa = await run(['apply', '--server-side', '-f', join(dir, 'd1.yaml')]);
      t.equal(ssa.stdout.trim(), 'deployment.apps/web serverside-applied', ssa.stderr);
      const image = async () =>
        (
          await run([
            'get',
            'deploy',
            'web',
            '-o',
            'jsonpath={.spec.template.spec.containers[0].image}',
          ])
        ).stdout;
      t.equal(await image(), 'nginx:1.26');
      // Another manager changing a field kubectl owns conflicts, unless it forces.
      const other = ['apply', '--server-side', '--field-manager=other', '-f', join(dir, 'd2.yaml')];
      const conflict = await run(other);
      t.not(conflict.code, 0);
      t.match(conflict.stderr, /Apply failed with 1 conflict: conflict with "kubectl"/);
      t.equal(await image(), 'nginx:1.26');
      const forced = await run([...other, '--force-conflicts']);
      t.equal(forced.stdout.trim(), 'deployment.apps/web serverside-applied', forced.stderr);
      t.equal(await image(), 'nginx:1.27');
      const ssaNew = await run([
        'apply',
        '--server-side',
        '-f',
        file('w3.yaml', widget(9).replace('w1', 'w3')),
      ]);
      t.equal(ssaNew.stdout.trim(), 'widget.example.com/w3 serverside-applied', ssaNew.stderr);
    });
  });
}
