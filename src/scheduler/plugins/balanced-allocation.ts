/**
 * Score NodeResourcesBalancedAllocation: the fractions requested/allocatable of cpu and
 * memory after placing the pod (each capped at 1); the closer they are, the better:
 * (1 - standard deviation) * 100. With two resources the deviation is |f1 - f2| / 2.
 */
import { podRequests } from '../resources.js';
import { MAX_NODE_SCORE, type NodeInfo, type ResourceList, type ScorePlugin } from '../types.js';
import { SCORED_RESOURCES } from './least-allocated.js';

export function balancedAllocation(request: ResourceList, node: NodeInfo): number {
  const fractions: number[] = [];
  for (const r of SCORED_RESOURCES) {
    const alloc = node.allocatable.get(r) ?? 0;
    if (alloc === 0) continue;
    const requested = (node.requested.get(r) ?? 0) + (request.get(r) ?? 0);
    fractions.push(Math.min(requested / alloc, 1));
  }
  let std = 0;
  if (fractions.length === 2)
    std = Math.abs(((fractions[0] as number) - (fractions[1] as number)) / 2);
  else if (fractions.length > 2) {
    const mean = fractions.reduce((a, b) => a + b, 0) / fractions.length;
    std = Math.sqrt(fractions.reduce((a, f) => a + (f - mean) ** 2, 0) / fractions.length);
  }
  return Math.trunc((1 - std) * MAX_NODE_SCORE);
}

export const BalancedAllocation: ScorePlugin<ResourceList> = {
  name: 'NodeResourcesBalancedAllocation',
  weight: 1,
  prepare: (pod) => podRequests(pod),
  score: (pod, node, request) => balancedAllocation(request ?? podRequests(pod), node),
};
