/**
 * Deployment progressDeadlineSeconds: a rollout whose Pods never become Ready (a
 * nodeSelector no node matches, so they stay Pending) turns Progressing False with reason
 * ProgressDeadlineExceeded once the deadline passes without progress; a fixed template then
 * progresses again and completes (NewReplicaSetAvailable).
 */
import t from 'tap';
import { type KubeObject, Resources } from '../../src/client/k8s/types.js';
import { startControlPlane } from '../../src/controlplane/embedded.js';
import { waitFor } from './helpers.js';

type D = KubeObject & {
  status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
};
const progressing = (d: D) => d.status?.conditions?.find((c) => c.type === 'Progressing');

t.test('progressDeadlineSeconds', async (t) => {
  const cp = await startControlPlane({ nodes: 1, nodeOptions: { readinessDelayMs: 20 } });
  t.teardown(() => cp.stop());
  const deployments = cp.client.resource<D>(Resources.deployments, 'default');
  const spec = (nodeSelector?: Record<string, string>) => ({
    replicas: 2,
    progressDeadlineSeconds: 2,
    selector: { matchLabels: { app: 'stuck' } },
    template: {
      metadata: { labels: { app: 'stuck' } },
      spec: {
        ...(nodeSelector ? { nodeSelector } : {}),
        containers: [{ name: 'c', image: 'busybox' }],
      },
    },
  });
  await deployments.create({ metadata: { name: 'stuck' }, spec: spec({ nowhere: 'true' }) });
  await waitFor(
    'ProgressDeadlineExceeded',
    async () => progressing(await deployments.get('stuck'))?.reason === 'ProgressDeadlineExceeded',
    60_000,
  );
  const c = progressing(await deployments.get('stuck'));
  t.equal(c?.status, 'False');
  t.match(c?.message, /^ReplicaSet "stuck-[a-z0-9]+" has timed out progressing\.$/);

  await deployments.patch('stuck', { spec: spec() }, 'merge');
  await deployments.patch(
    'stuck',
    { spec: { template: { spec: { nodeSelector: null } } } },
    'merge',
  );
  await waitFor(
    'the fixed rollout completes',
    async () => progressing(await deployments.get('stuck'))?.reason === 'NewReplicaSetAvailable',
    60_000,
  );
  t.equal(progressing(await deployments.get('stuck'))?.status, 'True');
});
