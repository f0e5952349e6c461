/**
 * Filter NodeResourcesFit: one more pod must fit in allocatable `pods` (`Too many pods`),
 * and each resource the pod requests must fit in allocatable minus what the node's pods
 * already request (`Insufficient cpu`, `Insufficient memory`, `Insufficient <name>`), every
 * shortfall a reason of its own, in kube-scheduler's order: cpu, memory, ephemeral-storage,
 * then the others by name.
 */
import { podRequests } from '../resources.js';
import type { FilterPlugin, NodeInfo, Pod, Reasons, ResourceList } from '../types.js';

export const ERR_TOO_MANY_PODS = 'Too many pods';

const FIRST = ['cpu', 'memory', 'ephemeral-storage'];

function order(a: string, b: string): number {
  const ia = FIRST.indexOf(a);
  const ib = FIRST.indexOf(b);
  if (ia >= 0 || ib >= 0) return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib);
  return a < b ? -1 : a > b ? 1 : 0;
}

export function resourcesFit(request: ResourceList, node: NodeInfo): Reasons {
  const out: string[] = [];
  if (node.pods.size + 1 > (node.allocatable.get('pods') ?? 0)) out.push(ERR_TOO_MANY_PODS);
  const names = [...request.keys()].filter((n) => n !== 'pods' && (request.get(n) ?? 0) > 0);
  for (const name of names.sort(order)) {
    const want = request.get(name) ?? 0;
    const free = (node.allocatable.get(name) ?? 0) - (node.requested.get(name) ?? 0);
    if (want > free) out.push(`Insufficient ${name}`);
  }
  return out;
}

export const NodeResourcesFit: FilterPlugin<ResourceList> = {
  name: 'NodeResourcesFit',
  prepare: (pod: Pod) => podRequests(pod),
  filter: (pod, node, request) => resourcesFit(request ?? podRequests(pod), node),
};
