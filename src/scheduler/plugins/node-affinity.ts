/**
 * NodeAffinity. Filter: the pod's nodeSelector and its required node affinity terms (ORed;
 * expressions in a term ANDed; In, NotIn, Exists, DoesNotExist, Gt, Lt) hold on the node.
 * Score: the sum of the weights of the preferred terms that match, scaled so the best node
 * gets 100.
 */
import { matchesNodeSelectorTerm, podMatchesNodeSelectorAndAffinity } from '../selectors.js';
import type { FilterPlugin, NodeInfo, Pod, Reasons, ScorePlugin } from '../types.js';
import { defaultNormalize } from './normalize.js';

export const ERR_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector";

export function nodeAffinityFilter(pod: Pod, node: NodeInfo): Reasons {
  return podMatchesNodeSelectorAndAffinity(pod, node) ? [] : [ERR_NODE_AFFINITY];
}

export function preferredNodeAffinity(pod: Pod, node: NodeInfo): number {
  const preferred =
    pod.spec?.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
  let sum = 0;
  for (const p of preferred) {
    if (p.weight !== 0 && matchesNodeSelectorTerm(p.preference, node)) sum += p.weight;
  }
  return sum;
}

export const NodeAffinityFilter: FilterPlugin = {
  name: 'NodeAffinity',
  filter: (pod, node) => nodeAffinityFilter(pod, node),
};

export const NodeAffinityScore: ScorePlugin<true> = {
  name: 'NodeAffinity',
  weight: 2,
  prepare: (pod) =>
    (pod.spec?.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [])
      .length > 0
      ? true
      : undefined,
  score: (pod, node) => preferredNodeAffinity(pod, node),
  normalize: (scores) => defaultNormalize(scores, false),
};
