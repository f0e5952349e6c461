/**
 * kube-scheduler's default score normalisation: scale so the largest raw score is 100 (or,
 * reversed, 100 minus that), integer arithmetic as in Go.
 */
import { MAX_NODE_SCORE } from '../types.js';

export function defaultNormalize(scores: readonly number[], reverse: boolean): number[] {
  const max = scores.reduce((m, s) => Math.max(s, m), 0);
  if (max === 0) return scores.map(() => (reverse ? MAX_NODE_SCORE : 0));
  return scores.map((s) => {
    const v = Math.trunc((MAX_NODE_SCORE * s) / max);
    return reverse ? MAX_NODE_SCORE - v : v;
  });
}
