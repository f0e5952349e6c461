/**
 * TaintToleration. Filter: the first NoSchedule or NoExecute taint the pod does not
 * tolerate refuses the node (`node(s) had untolerated taint {key: value}`). Score: the
 * number of PreferNoSchedule taints the pod does not tolerate, normalised in reverse (the
 * node with the most gets 0, a node with none 100).
 */
import { toleratedBy } from '../selectors.js';
import type { FilterPlugin, NodeInfo, Pod, Reasons, ScorePlugin } from '../types.js';
import { defaultNormalize } from './normalize.js';

export function untoleratedTaint(pod: Pod, node: NodeInfo): Reasons {
  const tolerations = pod.spec?.tolerations ?? [];
  for (const taint of node.node.spec?.taints ?? []) {
    if (taint.effect !== 'NoSchedule' && taint.effect !== 'NoExecute') continue;
    if (!toleratedBy(tolerations, taint)) {
      return [`node(s) had untolerated taint {${taint.key}: ${taint.value ?? ''}}`];
    }
  }
  return [];
}

export function intolerablePreferNoSchedule(pod: Pod, node: NodeInfo): number {
  const tolerations = (pod.spec?.tolerations ?? []).filter(
    (t) => !t.effect || t.effect === 'PreferNoSchedule',
  );
  let n = 0;
  for (const taint of node.node.spec?.taints ?? []) {
    if (taint.effect === 'PreferNoSchedule' && !toleratedBy(tolerations, taint)) n++;
  }
  return n;
}

export const TaintTolerationFilter: FilterPlugin = {
  name: 'TaintToleration',
  filter: (pod, node) => untoleratedTaint(pod, node),
};

export const TaintTolerationScore: ScorePlugin = {
  name: 'TaintToleration',
  weight: 3,
  score: (pod, node) => intolerablePreferNoSchedule(pod, node),
  normalize: (scores) => defaultNormalize(scores, true),
};
