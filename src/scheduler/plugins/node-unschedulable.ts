/**
 * Filter NodeUnschedulable: a cordoned node (spec.unschedulable) takes only pods that
 * tolerate the `node.kubernetes.io/unschedulable:NoSchedule` taint.
 */
import { toleratedBy } from '../selectors.js';
import type { FilterPlugin, NodeInfo, Pod, Reasons } from '../types.js';

export const ERR_UNSCHEDULABLE = 'node(s) were unschedulable';

export function nodeUnschedulable(pod: Pod, node: NodeInfo): Reasons {
  if (!node.node.spec?.unschedulable) return [];
  const taint = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' } as const;
  return toleratedBy(pod.spec?.tolerations ?? [], taint) ? [] : [ERR_UNSCHEDULABLE];
}

export const NodeUnschedulable: FilterPlugin = {
  name: 'NodeUnschedulable',
  filter: (pod, node) => nodeUnschedulable(pod, node),
};
