/**
 * The namespaces every Kubernetes server has (kubectl works in `default`). Created at start
 * when absent, through the same compare-and-swap as any create, so several members racing
 * to do it create each one once.
 */

import { objectKey } from '../../k8s/keys.js';
import { prepareCreate } from '../../k8s/meta.js';
import type { KubeObject, ResourceInfo } from '../../k8s/types.js';
import type { Kube } from './context.js';

export const DEFAULT_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

export async function ensureDefaultNamespaces(kube: Kube): Promise<void> {
  const info = kube.registry.get('', 'v1', 'namespaces') as ResourceInfo;
  for (const name of DEFAULT_NAMESPACES) {
    const key = objectKey(info, '', name);
    if (await kube.storage.get(key)) continue;
    const obj: KubeObject = {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, labels: { 'kubernetes.io/metadata.name': name } },
      spec: { finalizers: ['kubernetes'] },
    };
    prepareCreate(info, obj, kube.options.now());
    await kube.storage.create(key, obj);
  }
}
