/**
 * The scheduler end to end: a real member started as `etcetera serve --scheduler` in a
 * child process, Nodes created by the test (plain objects with allocatable and a Ready
 * condition), pods created through the API. Pods are bound to nodes where they fit (the
 * cache counts what earlier pods took); a pod that fits nowhere gets PodScheduled=False and
 * a FailedScheduling Event with kube-scheduler's text (shown by `kubectl describe pod`),
 * and is bound once a node that fits it appears.
 */
import { execFile, spawn } from 'node:child_process';
import { accessSync, constants, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { KubeClient, type KubeObject, Resources } from '../../src/client/k8s/index.js';
import type { Pod } from '../../src/scheduler/types.js';
import { freePorts, waitFor } from '../server/helpers.js';
import { compileCli } from '../server/procs/compile.js';
import { node, pod } from './fixtures.js';

function findKubectl(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    try {
      accessSync(join(dir, 'kubectl'), constants.X_OK);
      return join(dir, 'kubectl');
    } catch {}
  }
  return undefined;
}

t.test('serve --scheduler binds pods, explains an unschedulable one, retries it', async (t) => {
  const cli = await compileCli();
  const dir = t.testdir();
  const [client, peer] = await freePorts(2);
  const url = `http://127.0.0.1:${client}`;
  const child = spawn(
    process.execPath,
    [
      cli,
      'serve',
      '--name',
      'sched',
      '--data-dir',
      join(dir, 'data'),
      '--listen-client-urls',
      url,
      '--listen-peer-urls',
      `http://127.0.0.1:${peer}`,
      '--scheduler',
      '--scheduler-seed',
      '42',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const lines: string[] = [];
  child.stdout.on('data', (b: Buffer) => lines.push(...b.toString().split('\n').filter(Boolean)));
  child.stderr.on('data', (b: Buffer) => lines.push(b.toString()));
  const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  t.teardown(() => void child.kill('SIGKILL'));
  const startedLine = (l: string) =>
    l.includes('"control plane started"') && l.includes('"scheduler"');
  await waitFor('the scheduler to start', () => lines.some(startedLine), 60_000, 50);
  const started = JSON.parse(lines.find(startedLine) as string);
  t.equal(started.schedulerSeed, 42, '--scheduler-seed reached the scheduler');

  const kube = new KubeClient({ baseUrl: url });
  const nodes = kube.resource(Resources.nodes);
  const pods = kube.resource<Pod>(Resources.pods, 'default');
  const events = kube.resource(Resources.events, 'default');
  const createNode = async (n: KubeObject) => {
    const created = await nodes.create(n);
    // A status given on create is kept or not depending on the server; set it to be sure.
    await nodes.updateStatus({ ...created, status: n.status });
  };
  await createNode(node('n1', { cpu: '2' }));
  await createNode(node('n2', { cpu: '2' }));
  await createNode(
    node('n3', { cpu: '8', taints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }] }),
  );

  for (let i = 1; i <= 4; i++) await pods.create(pod(`p${i}`, { cpu: '1' }));
  const boundTo = async (name: string) => (await pods.get(name)).spec?.nodeName;
  await waitFor(
    'four pods bound',
    async () => (await Promise.all([1, 2, 3, 4].map((i) => boundTo(`p${i}`)))).every(Boolean),
    30_000,
    100,
  );
  const placed = await Promise.all([1, 2, 3, 4].map((i) => boundTo(`p${i}`)));
  t.same(
    [...placed].sort(),
    ['n1', 'n1', 'n2', 'n2'],
    'two 1-cpu pods on each 2-cpu node, none on the tainted one',
  );
  const p1 = await pods.get('p1');
  t.match(
    p1.status?.conditions?.find((c) => c.type === 'PodScheduled'),
    { status: 'True' },
  );

  const big = await pods.create(pod('big', { cpu: '1' }));
  const want =
    '0/3 nodes are available: 1 node(s) had untolerated taint {k: v}, 2 Insufficient cpu.';
  await waitFor(
    'the FailedScheduling condition',
    async () => {
      const c = (await pods.get('big')).status?.conditions?.find((x) => x.type === 'PodScheduled');
      return c?.status === 'False';
    },
    30_000,
    100,
  );
  const cond = (await pods.get('big')).status?.conditions?.find((x) => x.type === 'PodScheduled');
  t.match(cond, { status: 'False', reason: 'Unschedulable', message: want });
  let warning: KubeObject | undefined;
  await waitFor(
    'the FailedScheduling event',
    async () => {
      const list = await events.list({
        fieldSelector: 'involvedObject.name=big,reason=FailedScheduling',
      });
      warning = list.items[0];
      return warning !== undefined;
    },
    30_000,
    100,
  );
  t.match(warning, {
    type: 'Warning',
    reason: 'FailedScheduling',
    message: want,
    involvedObject: { kind: 'Pod', name: 'big', namespace: 'default', uid: big.metadata.uid },
    source: { component: 'default-scheduler' },
  });

  const kubectl = findKubectl();
  if (!kubectl) t.skip('kubectl describe pod: kubectl is not on PATH', () => {});
  else {
    const config = join(dir, 'kubeconfig');
    writeFileSync(
      config,
      `apiVersion: v1\nkind: Config\nclusters:\n- cluster: {server: "${url}"}\n  name: t\ncontexts:\n- context: {cluster: t, user: u, namespace: default}\n  name: t\ncurrent-context: t\nusers:\n- name: u\n  user: {}\n`,
    );
    const out = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(
        kubectl,
        ['describe', 'pod', 'big'],
        { env: { ...process.env, KUBECONFIG: config, HOME: dir }, timeout: 60_000 },
        (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr }),
      ),
    );
    t.equal(out.code, 0, out.stderr);
    t.match(
      out.stdout,
      /Warning\s+FailedScheduling\s+.*default-scheduler\s+0\/3 nodes are available: 1 node\(s\) had untolerated taint \{k: v\}, 2 Insufficient cpu\./,
    );
    t.match(out.stdout, /PodScheduled\s+False/);
  }

  // A node that fits: the unschedulable pod is retried and bound to it.
  await createNode(node('n4', { cpu: '4' }));
  await waitFor('big bound to n4', async () => (await boundTo('big')) === 'n4', 30_000, 100);
  const after = await pods.get('big');
  t.match(
    after.status?.conditions?.find((c) => c.type === 'PodScheduled'),
    { status: 'True' },
  );
  await waitFor(
    'the Scheduled event',
    async () =>
      (await events.list({ fieldSelector: 'involvedObject.name=big,reason=Scheduled' })).items
        .length === 1,
    30_000,
    100,
  );
  const scheduled = (
    await events.list({ fieldSelector: 'involvedObject.name=big,reason=Scheduled' })
  ).items[0];
  t.equal(scheduled?.message, 'Successfully assigned default/big to n4');

  child.kill('SIGTERM');
  t.equal(await exited, 0, 'SIGTERM stops the scheduler and the member');
});
