/**
 * Score NodeResourcesFit (LeastAllocated, kube-scheduler's default strategy): for cpu and
 * memory (weight 1 each), (allocatable - requested) * 100 / allocatable with the pod's
 * request included and the non-zero defaults counted; 0 when it would not fit; the
 * weighted mean, integer arithmetic as in Go.
 */
import { podNonZeroRequests } from '../resources.js';
import { MAX_NODE_SCORE, type NodeInfo, type ResourceList, type ScorePlugin } from '../types.js';

export const SCORED_RESOURCES = ['cpu', 'memory'] as const;

function leastRequested(requested: number, capacity: number): number {
  if (capacity === 0 || requested > capacity) return 0;
  return Math.trunc(((capacity - requested) * MAX_NODE_SCORE) / capacity);
}

export function leastAllocated(request: ResourceList, node: NodeInfo): number {
  let score = 0;
  let weights = 0;
  for (const r of SCORED_RESOURCES) {
    const alloc = node.allocatable.get(r) ?? 0;
    if (alloc === 0) continue;
    const requested = (node.nonZeroRequested.get(r) ?? 0) + (request.get(r) ?? 0);
    score += leastRequested(requested, alloc);
    weights += 1;
  }
  return weights === 0 ? 0 : Math.trunc(score / weights);
}

export const LeastAllocated: ScorePlugin<ResourceList> = {
  name: 'NodeResourcesFit',
  weight: 1,
  prepare: (pod) => podNonZeroRequests(pod),
  score: (pod, node, request) => leastAllocated(request ?? podNonZeroRequests(pod), node),
};
