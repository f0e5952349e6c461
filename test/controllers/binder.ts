/**
 * A test-only binder standing in for the scheduler: every Pod without spec.nodeName is bound
 * round robin to the Nodes that exist, through the `pods/binding` subresource when the
 * server has it, else by a patch of spec.nodeName. Not part of src: the scheduler is.
 */

import type { KubeClient } from '../../src/client/k8s/client.js';
import { Informer } from '../../src/client/k8s/informer.js';
import { type KubeObject, Resources } from '../../src/client/k8s/types.js';

export interface Binder {
  stop(): Promise<void>;
}

export async function startBinder(kube: KubeClient): Promise<Binder> {
  const pods = new Informer<KubeObject>(kube.resource(Resources.pods));
  const nodes = new Informer<KubeObject>(kube.resource(Resources.nodes));
  let i = 0;
  let stopped = false;
  const inflight = new Set<string>();
  const bind = async (p: KubeObject) => {
    const spec = p.spec as { nodeName?: string } | undefined;
    const key = `${p.metadata.namespace}/${p.metadata.name}`;
    if (stopped || spec?.nodeName || p.metadata.deletionTimestamp || inflight.has(key)) return;
    const names = nodes
      .list()
      .map((n) => n.metadata.name as string)
      .sort();
    if (names.length === 0) return;
    const node = names[i++ % names.length] as string;
    inflight.add(key);
    try {
      const client = kube.resource(Resources.pods, p.metadata.namespace);
      await client.patch(p.metadata.name as string, { spec: { nodeName: node } }, 'merge');
    } catch {
      // Gone, or bound meanwhile.
    } finally {
      inflight.delete(key);
    }
  };
  pods.addHandlers({ onAdd: (p) => void bind(p), onUpdate: (_o, p) => void bind(p) });
  nodes.addHandlers({
    onAdd: () => {
      for (const p of pods.list()) void bind(p);
    },
  });
  nodes.start();
  pods.start();
  await Promise.all([pods.waitForSync(), nodes.waitForSync()]);
  return {
    async stop() {
      stopped = true;
      await pods.stop();
      await nodes.stop();
    },
  };
}
