/**
 * A Node created by the user with the marker label `etcetera.dev/simulated=true` gets a
 * simulated kubelet when the simulated nodes run: it turns Ready, its Lease is renewed in
 * kube-node-lease, a Pod bound to it runs with an IP from its podCIDR; a Node without the
 * label is left alone; deleting the labelled Node ends its kubelet.
 */
import t from 'tap';
import { type KubeObject, Resources } from '../../src/client/k8s/types.js';
import { startControlPlane } from '../../src/controlplane/embedded.js';
import { type Pod, ready, waitFor } from './helpers.js';

type N = KubeObject & { status?: { conditions?: { type: string; status: string }[] } };
const isReady = (n: N | undefined) =>
  n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

t.test('user-created Nodes with the marker label are simulated', async (t) => {
  const cp = await startControlPlane({
    nodes: 1,
    controllers: false,
    scheduler: false,
    nodeOptions: { readinessDelayMs: 20 },
  });
  t.teardown(() => cp.stop());
  const nodes = cp.client.resource<N>(Resources.nodes);
  const leases = cp.client.resource(Resources.leases, 'kube-node-lease');
  const pods = cp.client.resource<Pod>(Resources.pods, 'default');
  const get = async (name: string) => {
    try {
      return await nodes.get(name);
    } catch {
      return undefined;
    }
  };

  await nodes.create({ metadata: { name: 'plain' } });
  await nodes.create({
    metadata: { name: 'mine', labels: { 'etcetera.dev/simulated': 'true', team: 'a' } },
    spec: { podCIDR: '10.244.200.0/24' },
  });
  await waitFor('the labelled Node is Ready', async () => isReady(await get('mine')));
  t.ok(cp.nodes?.nodeNames.includes('mine'), 'the simulator runs its kubelet');
  const mine = (await nodes.get('mine')) as N & { spec?: { podCIDR?: string } };
  t.equal(mine.metadata.labels?.team, 'a', "the user's labels stay");
  t.equal(mine.metadata.labels?.['kubernetes.io/hostname'], 'mine', 'the usual labels added');
  t.equal(mine.spec?.podCIDR, '10.244.200.0/24', 'its podCIDR kept');
  t.ok(await leases.get('mine'), 'its Lease is in kube-node-lease');

  await pods.create({
    metadata: { name: 'on-mine' },
    spec: { nodeName: 'mine', containers: [{ name: 'c', image: 'busybox' }] },
  });
  await waitFor('the Pod on it is Ready', async () => ready(await pods.get('on-mine')));
  t.match((await pods.get('on-mine')).status?.podIP ?? '', /^10\.244\.200\.\d+$/);

  t.notOk(cp.nodes?.nodeNames.includes('plain'), 'a Node without the label is not simulated');
  t.notOk(isReady(await get('plain')), 'and gets no Ready status');

  await pods.delete('on-mine', { gracePeriodSeconds: 0 });
  await nodes.delete('mine');
  await waitFor('its kubelet ended', async () => !cp.nodes?.nodeNames.includes('mine'));
  t.equal(await get('mine'), undefined, 'not registered again');
});
