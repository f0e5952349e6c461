/**
 * Property: whatever sequence of Deployment edits (scale, new image, strategy switch) and
 * Pod failures (a Pod deleted at once, a node removed and added back) hits a Deployment,
 * once the sequence ends the control plane converges to the desired state: exactly
 * `replicas` Pods, all ready, all with the current image, owned by one ReplicaSet whose
 * template is the Deployment's, and the Deployment's status saying so. Pods are placed by
 * the control plane's scheduler.
 */
import fc from 'fast-check';
import t from 'tap';
import { type KubeObject, Resources } from '../../src/client/k8s/types.js';
import { startControlPlane } from '../../src/controlplane/embedded.js';
import { type Pod, ready, waitFor } from './helpers.js';

type Op =
  | { op: 'scale'; replicas: number }
  | { op: 'image'; tag: number }
  | { op: 'strategy'; recreate: boolean }
  | { op: 'killPod'; index: number }
  | { op: 'bounceNode'; index: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.integer({ min: 0, max: 5 }).map((replicas) => ({ op: 'scale' as const, replicas })),
  fc.integer({ min: 1, max: 3 }).map((tag) => ({ op: 'image' as const, tag })),
  fc.boolean().map((recreate) => ({ op: 'strategy' as const, recreate })),
  fc.nat(9).map((index) => ({ op: 'killPod' as const, index })),
  fc.nat(2).map((index) => ({ op: 'bounceNode' as const, index })),
);

t.test('deployments converge after random edits and failures', async (t) => {
  const cp = await startControlPlane({ nodes: 3, nodeOptions: { readinessDelayMs: 30 } });
  t.teardown(() => cp.stop());
  const sim = cp.nodes;
  if (!sim) throw new Error('no simulator');
  const deployments = cp.client.resource(Resources.deployments, 'default');
  const pods = cp.client.resource<Pod>(Resources.pods, 'default');
  let run = 0;
  await t.resolves(
    fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 6 }), async (ops) => {
        const name = `p${run++}`;
        let replicas = 2;
        let tag = 0;
        await deployments.create({
          metadata: { name },
          spec: {
            replicas,
            selector: { matchLabels: { app: name } },
            template: {
              metadata: { labels: { app: name } },
              spec: { containers: [{ name: 'c', image: 'img:0' }] },
            },
          },
        });
        for (const o of ops) {
          if (o.op === 'scale') {
            replicas = o.replicas;
            await deployments.patch(name, { spec: { replicas } }, 'merge');
          } else if (o.op === 'image') {
            tag = o.tag;
            await deployments.patch(
              name,
              {
                spec: { template: { spec: { containers: [{ name: 'c', image: `img:${tag}` }] } } },
              },
              'strategic',
            );
          } else if (o.op === 'strategy') {
            await deployments.patch(
              name,
              {
                spec: {
                  strategy: o.recreate
                    ? { type: 'Recreate', rollingUpdate: null }
                    : { type: 'RollingUpdate' },
                },
              },
              'merge',
            );
          } else if (o.op === 'killPod') {
            const list = (await pods.list({ labelSelector: `app=${name}` })).items;
            const victim = list[o.index % Math.max(1, list.length)];
            if (victim)
              await pods
                .delete(victim.metadata.name as string, { gracePeriodSeconds: 0 })
                .catch(() => undefined);
          } else {
            const node = sim.nodeNames[o.index % sim.nodeNames.length] as string;
            await sim.removeNode(node);
            await sim.addNode(node);
          }
        }
        const image = `img:${tag}`;
        await waitFor(
          `${name} converged (${JSON.stringify(ops)})`,
          async () => {
            const list = (await pods.list({ labelSelector: `app=${name}` })).items;
            if (list.length !== replicas) return false;
            if (!list.every((p) => ready(p) && p.spec.containers[0]?.image === image)) return false;
            const d = (await deployments.get(name)) as KubeObject & {
              status?: {
                updatedReplicas?: number;
                availableReplicas?: number;
                replicas?: number;
                observedGeneration?: number;
              };
            };
            const s = d.status ?? {};
            return (
              s.observedGeneration === d.metadata.generation &&
              (s.updatedReplicas ?? 0) === replicas &&
              (s.availableReplicas ?? 0) === replicas &&
              (s.replicas ?? 0) === replicas
            );
          },
          90_000,
        );
        const owners = new Set(
          (await pods.list({ labelSelector: `app=${name}` })).items.map(
            (p) => ((p.metadata.ownerReferences ?? [])[0] as { name?: string } | undefined)?.name,
          ),
        );
        await deployments.delete(name);
        return owners.size <= 1;
      }),
      { numRuns: 4, endOnFailure: true },
    ),
    'every sequence converged',
  );
});
