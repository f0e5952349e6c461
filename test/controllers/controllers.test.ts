/**
 * Controllers and simulated nodes against a real in-process member (startControlPlane):
 * garbage collection (background, foreground with blockOwnerDeletion, orphan), graceful
 * Pod deletion through the kubelet, restarts per restartPolicy, ReplicaSet adoption, and
 * the node lifecycle (unreachable taint, eviction after tolerationSeconds; a user's
 * NoExecute taint evicts too). Pods are bound by the test-only binder (binder.ts) with the
 * scheduler off, so a Pod lands on the node the test expects, Ready or not.
 */
import t from 'tap';
import type { KubeObject } from '../../src/client/k8s/types.js';
import { Resources } from '../../src/client/k8s/types.js';
import { startControlPlane } from '../../src/controlplane/embedded.js';
import { startBinder } from './binder.js';
import { type Pod, ready, waitFor } from './helpers.js';

const rsBody = (name: string, replicas: number, extra: Record<string, unknown> = {}) => ({
  metadata: { name },
  spec: {
    replicas,
    selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: { app: name }, ...extra },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
    },
  },
});

t.test('control plane against a member', async (t) => {
  const cp = await startControlPlane({
    nodes: 2,
    scheduler: false,
    nodeOptions: { readinessDelayMs: 50, heartbeatMs: 500 },
    controllerSettings: { nodeMonitorGracePeriodMs: 4000 },
  });
  t.teardown(() => cp.stop());
  const binder = await startBinder(cp.client);
  t.teardown(() => binder.stop());
  const rs = cp.client.resource(Resources.replicaSets, 'default');
  const pods = cp.client.resource<Pod>(Resources.pods, 'default');
  const podsOf = async (app: string) =>
    (await pods.list({ labelSelector: `app=${app}` })).items as Pod[];

  await t.test('a ReplicaSet adopts a matching orphan and creates the rest', async (t) => {
    await pods.create({
      metadata: { name: 'orphan', labels: { app: 'adopt' } },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
    });
    await rs.create(rsBody('adopt', 2));
    await waitFor('2 ready', async () => (await podsOf('adopt')).filter(ready).length === 2);
    const orphan = await pods.get('orphan');
    const ref = (orphan.metadata.ownerReferences ?? [])[0] as {
      kind?: string;
      controller?: boolean;
    };
    t.equal(ref?.kind, 'ReplicaSet');
    t.equal(ref?.controller, true);
    const r = (await rs.get('adopt')) as KubeObject & { status?: Record<string, number> };
    await waitFor('status', async () => {
      const s = ((await rs.get('adopt')) as typeof r).status ?? {};
      return s.replicas === 2 && s.readyReplicas === 2 && s.availableReplicas === 2;
    });
    t.equal(r.metadata.name, 'adopt');
  });

  await t.test('Endpoints and EndpointSlices follow the ready Pods of a Service', async (t) => {
    const svc = cp.client.resource(Resources.services, 'default');
    await svc.create({
      metadata: { name: 'adopt' },
      spec: { selector: { app: 'adopt' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    });
    type Ep = KubeObject & {
      subsets?: { addresses?: { ip: string }[]; ports?: { port: number }[] }[];
    };
    type Slice = KubeObject & {
      endpoints?: { addresses: string[]; conditions: { ready: boolean } }[];
    };
    const eps = cp.client.resource<Ep>(Resources.endpoints, 'default');
    const slices = cp.client.resource<Slice>(Resources.endpointSlices, 'default');
    const ips = async () =>
      (await podsOf('adopt'))
        .filter(ready)
        .map((p) => p.status?.podIP)
        .sort();
    await waitFor('endpoints', async () => {
      const e = await eps.get('adopt').catch(() => undefined);
      return (
        (e?.subsets?.[0]?.addresses ?? [])
          .map((a) => a.ip)
          .sort()
          .join() === (await ips()).join()
      );
    });
    const e = await eps.get('adopt');
    t.equal(e.subsets?.[0]?.ports?.[0]?.port, 8080, 'the target port');
    const s = await slices.get('adopt');
    t.equal(s.metadata.labels?.['kubernetes.io/service-name'], 'adopt');
    t.same(
      (s.endpoints ?? [])
        .filter((x) => x.conditions.ready)
        .flatMap((x) => x.addresses)
        .sort(),
      await ips(),
      'the slice lists the ready Pods',
    );
    await rs.patch('adopt', { spec: { replicas: 1 } }, 'merge');
    await waitFor(
      'one address left',
      async () => ((await eps.get('adopt')).subsets?.[0]?.addresses ?? []).length === 1,
    );
    await svc.delete('adopt');
    await waitFor(
      'owned endpoints collected',
      async () => (await slices.list()).items.length === 0,
    );
    t.same((await slices.list()).items, [], 'the slice went with its Service');
  });

  await t.test('background: deleting the owner takes its dependants', async (t) => {
    await rs.delete('adopt');
    await waitFor('pods gone', async () => (await podsOf('adopt')).length === 0);
    t.same(await podsOf('adopt'), [], 'the Pods were collected');
  });

  await t.test('orphan: dependants stay, without the reference', async (t) => {
    await rs.create(rsBody('orph', 2));
    await waitFor('2 pods', async () => (await podsOf('orph')).length === 2);
    await rs.delete('orph', { propagationPolicy: 'Orphan' });
    await waitFor('rs gone', async () =>
      (await rs.list()).items.every((i) => i.metadata.name !== 'orph'),
    );
    const left = await podsOf('orph');
    t.equal(left.length, 2, 'Pods stay');
    t.ok(
      left.every((p) => (p.metadata.ownerReferences ?? []).length === 0),
      'references removed',
    );
    for (const p of left) await pods.delete(p.metadata.name as string, { gracePeriodSeconds: 0 });
  });

  await t.test(
    'foreground: the owner waits for blocking dependants, Pods end gracefully',
    async (t) => {
      await rs.create(
        rsBody('fg', 2, { annotations: { 'sim.etcetera.dev/stop-delay-ms': '3000' } }),
      );
      await waitFor('2 ready', async () => (await podsOf('fg')).filter(ready).length === 2);
      await rs.delete('fg', { propagationPolicy: 'Foreground' });
      const marked = (await rs.get('fg')) as KubeObject;
      t.ok(marked.metadata.deletionTimestamp, 'owner marked deleted');
      t.ok(
        marked.metadata.finalizers?.includes('foregroundDeletion'),
        'with the foreground finalizer',
      );
      await waitFor('pods terminating', async () =>
        (await podsOf('fg')).every((p) => p.metadata.deletionTimestamp !== undefined),
      );
      const terminating = await podsOf('fg');
      t.equal(terminating.length, 2, 'Pods stay while their containers stop');
      t.ok(
        terminating.every((p) => !ready(p)),
        'and are not ready',
      );
      t.ok(
        (await rs.list()).items.some((i) => i.metadata.name === 'fg'),
        'the owner is still there while blocking Pods exist',
      );
      await waitFor(
        'all gone',
        async () =>
          (await podsOf('fg')).length === 0 &&
          (await rs.list()).items.every((i) => i.metadata.name !== 'fg'),
      );
      t.same(await podsOf('fg'), [], 'Pods deleted by their kubelet');
      t.notOk(
        (await rs.list()).items.some((i) => i.metadata.name === 'fg'),
        'then the owner',
      );
    },
  );

  await t.test(
    'restartPolicy: Always restarts a failing container, Never fails the Pod',
    async (t) => {
      const body = (name: string, policy: string) => ({
        metadata: { name, annotations: { 'sim.etcetera.dev/fail-after-ms': '150' } },
        spec: { restartPolicy: policy, containers: [{ name: 'c', image: 'busybox' }] },
      });
      await pods.create(body('always', 'Always'));
      await pods.create(body('never', 'Never'));
      await waitFor('restarted twice', async () => {
        const p = (await pods.get('always')) as Pod & {
          status?: { containerStatuses?: { restartCount: number }[] };
        };
        return (p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 2;
      });
      await waitFor(
        'never: Failed',
        async () => (await pods.get('never')).status?.phase === 'Failed',
      );
      const always = await pods.get('always');
      t.not(always.status?.phase, 'Failed', 'Always keeps it running');
      for (const n of ['always', 'never']) await pods.delete(n, { gracePeriodSeconds: 0 });
    },
  );

  await t.test(
    'an unreachable node is tainted and its Pods evicted after tolerationSeconds',
    async (t) => {
      const sim = cp.nodes;
      if (!sim) throw new Error('no simulator');
      const victim = sim.nodeNames[0] as string;
      await pods.create({
        metadata: { name: 'intolerant' },
        spec: { nodeName: victim, containers: [{ name: 'c', image: 'busybox' }] },
      });
      await pods.create({
        metadata: { name: 'patient' },
        spec: {
          nodeName: victim,
          containers: [{ name: 'c', image: 'busybox' }],
          tolerations: [
            {
              key: 'node.kubernetes.io/unreachable',
              operator: 'Exists',
              effect: 'NoExecute',
              tolerationSeconds: 2,
            },
          ],
        },
      });
      await pods.create({
        metadata: { name: 'forever' },
        spec: {
          nodeName: victim,
          containers: [{ name: 'c', image: 'busybox' }],
          tolerations: [
            { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
          ],
        },
      });
      await waitFor('running', async () =>
        (await pods.list()).items
          .filter((p) => ['intolerant', 'patient', 'forever'].includes(p.metadata.name as string))
          .every(ready),
      );
      sim.pauseNode(victim);
      const nodes = cp.client.resource(Resources.nodes);
      type N = KubeObject & {
        spec?: { taints?: { key: string; effect: string }[] };
        status?: { conditions?: { type: string; status: string }[] };
      };
      await waitFor('tainted', async () => {
        const n = (await nodes.get(victim)) as N;
        return (n.spec?.taints ?? []).some(
          (x) => x.key === 'node.kubernetes.io/unreachable' && x.effect === 'NoExecute',
        );
      });
      const n = (await nodes.get(victim)) as N;
      t.equal(
        n.status?.conditions?.find((c) => c.type === 'Ready')?.status,
        'Unknown',
        'Ready is Unknown',
      );
      await waitFor(
        'intolerant evicted',
        async () => (await pods.get('intolerant')).metadata.deletionTimestamp !== undefined,
      );
      t.notOk(
        (await pods.get('patient')).metadata.deletionTimestamp,
        'the tolerating Pod is not evicted at once',
      );
      await waitFor(
        'patient evicted',
        async () => (await pods.get('patient')).metadata.deletionTimestamp !== undefined,
        20_000,
      );
      t.notOk(
        (await pods.get('forever')).metadata.deletionTimestamp,
        'a toleration without seconds keeps it',
      );
      sim.resumeNode(victim);
      await waitFor(
        'untainted',
        async () => ((await nodes.get(victim)) as N).spec?.taints?.length === 0,
      );
      await waitFor('kubelet ends the evicted Pods', async () => {
        const names = (await pods.list()).items.map((p) => p.metadata.name);
        return !names.includes('intolerant') && !names.includes('patient');
      });
      const left = (await pods.list()).items.map((p) => p.metadata.name);
      t.notOk(
        left.includes('intolerant') || left.includes('patient'),
        'the node came back and its kubelet finished the evictions',
      );
    },
  );

  await t.test(
    "a user's NoExecute taint evicts the Pods that do not tolerate it, the others after their tolerationSeconds",
    async (t) => {
      const sim = cp.nodes;
      if (!sim) throw new Error('no simulator');
      const node = sim.nodeNames[0] as string;
      const tol = (tolerationSeconds?: number) => [
        {
          key: 'maintenance',
          operator: 'Equal',
          value: 'now',
          effect: 'NoExecute',
          ...(tolerationSeconds === undefined ? {} : { tolerationSeconds }),
        },
      ];
      const mk = (name: string, tolerations: unknown[]) =>
        pods.create({
          metadata: { name },
          spec: { nodeName: node, containers: [{ name: 'c', image: 'busybox' }], tolerations },
        });
      await mk('t-intolerant', []);
      await mk('t-patient', tol(2));
      await mk('t-forever', tol());
      const names = ['t-intolerant', 't-patient', 't-forever'];
      await waitFor('running', async () =>
        (await pods.list()).items
          .filter((p) => names.includes(p.metadata.name as string))
          .every(ready),
      );
      const nodes = cp.client.resource(Resources.nodes);
      // As `kubectl taint node N maintenance=now:NoExecute` sends it: no timeAdded.
      await nodes.patch(
        node,
        { spec: { taints: [{ key: 'maintenance', value: 'now', effect: 'NoExecute' }] } },
        'merge',
      );
      const deleting = async (n: string) =>
        (await pods.list()).items.find((p) => p.metadata.name === n)?.metadata.deletionTimestamp !==
          undefined || !(await pods.list()).items.some((p) => p.metadata.name === n);
      await waitFor('intolerant evicted', () => deleting('t-intolerant'));
      t.notOk(await deleting('t-patient'), 'the Pod tolerating it for 2 s is not evicted at once');
      await waitFor('patient evicted', () => deleting('t-patient'), 20_000);
      t.notOk(await deleting('t-forever'), 'a toleration without seconds keeps it');
      await nodes.patch(node, { spec: { taints: null } }, 'merge');
      await pods.delete('t-forever', { gracePeriodSeconds: 0 });
      await waitFor('evicted Pods ended by the kubelet', async () =>
        (await pods.list()).items.every((p) => !names.includes(p.metadata.name as string)),
      );
    },
  );

  await t.test('Pods of a deleted Node are removed', async (t) => {
    const sim = cp.nodes;
    if (!sim) throw new Error('no simulator');
    const name = sim.nodeNames[1] as string;
    await pods.create({
      metadata: { name: 'stranded' },
      spec: { nodeName: name, containers: [{ name: 'c', image: 'busybox' }] },
    });
    await waitFor('running', async () => ready(await pods.get('stranded')));
    await sim.removeNode(name);
    await waitFor('gone', async () =>
      (await pods.list()).items.every((p) => p.metadata.name !== 'stranded'),
    );
    t.notOk(
      (await pods.list()).items.some((p) => p.metadata.name === 'stranded'),
      'removed with its Node',
    );
  });
});
