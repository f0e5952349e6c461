/**
 * Filter NodeReady: a node whose Ready condition is not True takes no pods, unless the pod
 * tolerates the taint the node lifecycle puts on such a node (`node.kubernetes.io/not-ready`
 * when Ready is False, `node.kubernetes.io/unreachable` when it is Unknown or missing), as
 * DaemonSet pods do.
 */
import { toleratedBy } from '../selectors.js';
import type { FilterPlugin, NodeInfo, Pod, Reasons } from '../types.js';

export const ERR_NODE_NOT_READY = 'node(s) were not ready';

export function nodeReady(pod: Pod, node: NodeInfo): Reasons {
  const ready = node.node.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status === 'True') return [];
  const key =
    ready?.status === 'False' ? 'node.kubernetes.io/not-ready' : 'node.kubernetes.io/unreachable';
  if (toleratedBy(pod.spec?.tolerations ?? [], { key, effect: 'NoSchedule' })) return [];
  return [ERR_NODE_NOT_READY];
}

export const NodeReady: FilterPlugin = {
  name: 'NodeReady',
  filter: (pod, node) => nodeReady(pod, node),
};
