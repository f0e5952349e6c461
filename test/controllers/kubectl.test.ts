/**
 * kubectl end to end against a control plane (controllers + 3 simulated nodes): create a
 * Deployment and see its Pods Running on 3 nodes, scale, `set image` with a watch checking
 * that ready Pods never drop below replicas − maxUnavailable, `rollout status`, `rollout
 * undo`, `rollout pause/resume`, and delete taking everything owned with it. Pods are
 * placed by the control plane's own scheduler.
 */
import t from 'tap';
import { Informer } from '../../src/client/k8s/informer.js';
import { type KubeObject, Resources } from '../../src/client/k8s/types.js';
import { startControlPlane } from '../../src/controlplane/embedded.js';
import { findKubectl, kubectlRunner, type Pod, ready, waitFor } from './helpers.js';

const kubectl = findKubectl();

if (!kubectl) {
  t.plan(0, 'kubectl is not on PATH: the control-plane kubectl test is skipped');
} else {
  t.test('kubectl drives a Deployment through the control plane', async (t) => {
    const dir = t.testdir();
    const cp = await startControlPlane({ nodes: 3, nodeOptions: { readinessDelayMs: 100 } });
    t.teardown(() => cp.stop());
    const run = kubectlRunner(kubectl, dir, cp.kubeconfig);
    const pods = new Informer<Pod>(cp.client.resource<Pod>(Resources.pods, 'default'), {
      labelSelector: 'app=web',
    }).start();
    t.teardown(() => pods.stop());
    await pods.waitForSync();
    const webPods = () => pods.list();

    const created = Date.now();
    const c = await run(['create', 'deployment', 'web', '--image=nginx:1.27', '--replicas=3']);
    t.equal(c.code, 0, c.stderr);
    await waitFor(
      '3 pods running',
      () => webPods().filter((p) => p.status?.phase === 'Running').length === 3,
    );
    t.comment(`3 pods Running ${Date.now() - created} ms after create`);
    const nodes = new Set(webPods().map((p) => p.spec.nodeName));
    t.equal(nodes.size, 3, 'one pod on each node');
    t.ok(
      webPods().every((p) => /^10\.244\.\d+\.\d+$/.test(p.status?.podIP ?? '')),
      'pod IPs from the cluster CIDR',
    );
    const rs1 = await run(['rollout', 'status', 'deployment/web', '--timeout=90s']);
    t.equal(rs1.code, 0, rs1.stderr);
    t.match(rs1.stdout, /successfully rolled out/);

    const sc = await run(['scale', 'deployment', 'web', '--replicas=10']);
    t.equal(sc.code, 0, sc.stderr);
    await waitFor('10 ready pods', () => webPods().filter(ready).length === 10);

    // From here on, every change of the Pods is checked: ready ≥ 10 − maxUnavailable (2).
    let minReady = Number.POSITIVE_INFINITY;
    let maxTotal = 0;
    const check = () => {
      const list = webPods();
      minReady = Math.min(minReady, list.filter(ready).length);
      maxTotal = Math.max(maxTotal, list.filter((p) => !p.metadata.deletionTimestamp).length);
    };
    const off = pods.addHandlers({ onAdd: check, onUpdate: check, onDelete: check });
    const si = await run(['set', 'image', 'deployment/web', 'nginx=nginx:1.28']);
    t.equal(si.code, 0, si.stderr);
    const rs2 = await run(['rollout', 'status', 'deployment/web', '--timeout=120s']);
    t.equal(rs2.code, 0, rs2.stderr);
    await waitFor('all pods on 1.28', () => {
      const l = webPods();
      return (
        l.length === 10 && l.every((p) => p.spec.containers[0]?.image === 'nginx:1.28' && ready(p))
      );
    });
    off();
    t.ok(minReady >= 8, `ready pods never below 8 during the rollout (lowest ${minReady})`);
    t.ok(maxTotal <= 13, `pods never above 10 + maxSurge 3 (highest ${maxTotal})`);

    const rsList = await cp.client.resource(Resources.replicaSets, 'default').list();
    t.equal(rsList.items.length, 2, 'two ReplicaSets, one per template');
    const rsNames = rsList.items.map((r) => r.metadata.name).sort();
    const d2 = (await cp.client
      .resource(Resources.deployments, 'default')
      .get('web')) as KubeObject;
    t.equal(d2.metadata.annotations?.['deployment.kubernetes.io/revision'], '2');

    const hist = await run(['rollout', 'history', 'deployment/web']);
    t.equal(hist.code, 0, hist.stderr);
    t.match(hist.stdout, /1\s.*\n2\s/);

    const undo = await run(['rollout', 'undo', 'deployment/web']);
    t.equal(undo.code, 0, undo.stderr);
    const rs3 = await run(['rollout', 'status', 'deployment/web', '--timeout=120s']);
    t.equal(rs3.code, 0, rs3.stderr);
    await waitFor('all pods back on 1.27', () => {
      const l = webPods();
      return (
        l.length === 10 && l.every((p) => p.spec.containers[0]?.image === 'nginx:1.27' && ready(p))
      );
    });
    const afterUndo = await cp.client.resource(Resources.replicaSets, 'default').list();
    t.same(
      afterUndo.items.map((r) => r.metadata.name).sort(),
      rsNames,
      'undo reuses the old ReplicaSet',
    );
    const d3 = (await cp.client
      .resource(Resources.deployments, 'default')
      .get('web')) as KubeObject;
    t.equal(
      d3.metadata.annotations?.['deployment.kubernetes.io/revision'],
      '3',
      'undo makes revision 3',
    );

    // Paused: the template changes, nothing rolls until resume.
    t.equal((await run(['rollout', 'pause', 'deployment/web'])).code, 0);
    t.equal((await run(['set', 'image', 'deployment/web', 'nginx=nginx:1.29'])).code, 0);
    await waitFor('paused spec observed', async () => {
      const d = (await cp.client
        .resource(Resources.deployments, 'default')
        .get('web')) as KubeObject & {
        status?: { observedGeneration?: number };
      };
      return d.status?.observedGeneration === d.metadata.generation;
    });
    const whilePaused = await cp.client.resource(Resources.replicaSets, 'default').list();
    t.equal(whilePaused.items.length, 2, 'no new ReplicaSet while paused');
    t.ok(
      webPods().every((p) => p.spec.containers[0]?.image === 'nginx:1.27'),
      'pods unchanged while paused',
    );
    t.equal((await run(['rollout', 'resume', 'deployment/web'])).code, 0);
    const rs4 = await run(['rollout', 'status', 'deployment/web', '--timeout=120s']);
    t.equal(rs4.code, 0, rs4.stderr);
    await waitFor('all pods on 1.29', () =>
      webPods().every((p) => p.spec.containers[0]?.image === 'nginx:1.29'),
    );

    const del = await run(['delete', 'deployment', 'web']);
    t.equal(del.code, 0, del.stderr);
    await waitFor('owned objects gone', async () => {
      const rs = await cp.client.resource(Resources.replicaSets, 'default').list();
      const ps = await cp.client.resource(Resources.pods, 'default').list();
      return rs.items.length === 0 && ps.items.length === 0;
    });
    const rsLeft = await cp.client.resource(Resources.replicaSets, 'default').list();
    const podsLeft = await cp.client.resource(Resources.pods, 'default').list();
    t.same(
      [...rsLeft.items, ...podsLeft.items],
      [],
      'the ReplicaSets and Pods went with the Deployment',
    );
  });
}
