/**
 * `etcetera serve --control-plane --nodes 2` as a child process: the simulated Nodes
 * register and are Ready, a ReplicaSet gets its Pods from the controllers, the scheduler
 * (a part like the others) binds them and they run with IPs from --cluster-cidr, SIGTERM
 * stops it all with exit 0; a bad --nodes is refused before anything starts.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { KubeClient } from '../../src/client/k8s/client.js';
import { type KubeObject, Resources } from '../../src/client/k8s/types.js';
import { freePorts } from '../server/helpers.js';
import { compileCli } from '../server/procs/compile.js';
import { type Pod, ready, waitFor } from './helpers.js';

t.test('serve --control-plane', async (t) => {
  const cli = await compileCli();
  const bad = spawn(process.execPath, [cli, 'serve', '--nodes', 'many']);
  let badErr = '';
  bad.stderr.on('data', (b: Buffer) => (badErr += b.toString()));
  const badCode = await new Promise<number | null>((r) => bad.on('close', r));
  t.not(badCode, 0, 'a bad --nodes fails');
  t.match(badErr, /--nodes must be a number/);

  const [client, peer] = await freePorts(2);
  const child = spawn(process.execPath, [
    cli,
    'serve',
    '--name',
    'cp',
    '--data-dir',
    join(t.testdir(), 'data'),
    '--listen-client-urls',
    `http://127.0.0.1:${client}`,
    '--listen-peer-urls',
    `http://127.0.0.1:${peer}`,
    '--control-plane',
    '--nodes',
    '2',
    '--scheduler-seed',
    '1',
    '--cluster-cidr',
    '10.32.0.0/16',
    '--log-level',
    'warn',
  ]);
  const exited = new Promise<number | null>((r) => child.on('close', r));
  t.teardown(() => void child.kill('SIGKILL'));
  const kube = new KubeClient({ baseUrl: `http://127.0.0.1:${client}`, timeoutMs: 10_000 });
  type N = KubeObject & { status?: { conditions?: { type: string; status: string }[] } };
  await waitFor(
    'two Ready nodes',
    async () => {
      try {
        const nodes = (await kube.resource<N>(Resources.nodes).list()).items;
        return (
          nodes.length === 2 &&
          nodes.every((n) =>
            n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
          )
        );
      } catch {
        return false;
      }
    },
    120_000,
  );
  const rs = kube.resource(Resources.replicaSets, 'default');
  await rs.create({
    metadata: { name: 'cli' },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'cli' } },
      template: {
        metadata: { labels: { app: 'cli' } },
        spec: { containers: [{ name: 'c', image: 'busybox' }] },
      },
    },
  });
  const pods = kube.resource<Pod>(Resources.pods, 'default');
  await waitFor(
    '2 pods scheduled and Ready',
    async () => {
      const items = (await pods.list()).items;
      return items.length === 2 && items.every((p) => p.spec.nodeName && ready(p));
    },
    60_000,
  );
  for (const p of (await pods.list()).items) {
    t.match(p.status?.podIP ?? '', /^10\.32\.[01]\.\d+$/, 'an IP from a /24 of --cluster-cidr');
  }
  child.kill('SIGTERM');
  t.equal(await exited, 0, 'SIGTERM: exit 0');
});
