/**
 * PodTopologySpread, for the pod's own constraints (cluster default constraints are not
 * applied).
 *
 * Filter (whenUnsatisfiable DoNotSchedule): pods matching the constraint's labelSelector in
 * the pod's namespace (not being deleted) are counted per domain (value of topologyKey)
 * over the nodes that have every constraint's key and match the pod's nodeSelector and
 * required node affinity. Placing the pod on a node must keep
 * `count(node's domain) + (1 if the pod matches its own selector) - min(count)` within
 * maxSkew, where min is 0 when fewer domains than minDomains exist. A node without the key
 * fails with "(missing required label)".
 *
 * Score (ScheduleAnyway): per constraint, count(node's domain) × log(domains + 2) +
 * (maxSkew - 1), summed and rounded; fewer matching pods is better, normalised as
 * `100 × (max + min - score) / max`; nodes without the keys score 0.
 */
import { matchesSelector, podMatchesNodeSelectorAndAffinity } from '../selectors.js';
import type {
  FilterPlugin,
  NodeInfo,
  Pod,
  Reasons,
  ScorePlugin,
  TopologySpreadConstraint,
} from '../types.js';
import { MAX_NODE_SCORE } from '../types.js';

export const ERR_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints";
export const ERR_NODE_LABEL_NOT_MATCH = `${ERR_CONSTRAINTS_NOT_MATCH} (missing required label)`;

const HOSTNAME = 'kubernetes.io/hostname';

function constraintsOf(pod: Pod, when: TopologySpreadConstraint['whenUnsatisfiable']) {
  return (pod.spec?.topologySpreadConstraints ?? []).filter((c) => c.whenUnsatisfiable === when);
}

function hasAllKeys(node: NodeInfo, constraints: readonly TopologySpreadConstraint[]): boolean {
  return constraints.every((c) => Object.hasOwn(node.labels, c.topologyKey));
}

/** Pods on the node matching the selector in the namespace, not being deleted. */
export function countMatching(
  node: NodeInfo,
  c: TopologySpreadConstraint,
  namespace: string,
): number {
  let n = 0;
  for (const p of node.pods.values()) {
    if (p.metadata.deletionTimestamp) continue;
    if ((p.metadata.namespace ?? '') !== namespace) continue;
    if (matchesSelector(c.labelSelector, p.metadata.labels ?? {})) n++;
  }
  return n;
}

export interface SpreadFilterState {
  constraints: TopologySpreadConstraint[];
  /** Per constraint: count per domain value. */
  counts: Map<string, number>[];
  selfMatch: number[];
}

export function prepareSpreadFilter(
  pod: Pod,
  nodes: readonly NodeInfo[],
): SpreadFilterState | undefined {
  const constraints = constraintsOf(pod, 'DoNotSchedule');
  if (constraints.length === 0) return undefined;
  const ns = pod.metadata.namespace ?? '';
  const counts = constraints.map(() => new Map<string, number>());
  for (const node of nodes) {
    if (!hasAllKeys(node, constraints) || !podMatchesNodeSelectorAndAffinity(pod, node)) continue;
    constraints.forEach((c, i) => {
      const v = node.labels[c.topologyKey] as string;
      const m = counts[i] as Map<string, number>;
      m.set(v, (m.get(v) ?? 0) + countMatching(node, c, ns));
    });
  }
  const labels = pod.metadata.labels ?? {};
  const selfMatch = constraints.map((c) => (matchesSelector(c.labelSelector, labels) ? 1 : 0));
  return { constraints, counts, selfMatch };
}

export function spreadFilter(node: NodeInfo, s: SpreadFilterState): Reasons {
  for (let i = 0; i < s.constraints.length; i++) {
    const c = s.constraints[i] as TopologySpreadConstraint;
    const value = node.labels[c.topologyKey];
    if (value === undefined) return [ERR_NODE_LABEL_NOT_MATCH];
    const counts = s.counts[i] as Map<string, number>;
    let min = Number.POSITIVE_INFINITY;
    for (const n of counts.values()) if (n < min) min = n;
    if (counts.size === 0 || (c.minDomains !== undefined && counts.size < c.minDomains)) min = 0;
    const skew = (counts.get(value) ?? 0) + (s.selfMatch[i] as number) - min;
    if (skew > c.maxSkew) return [ERR_CONSTRAINTS_NOT_MATCH];
  }
  return [];
}

export const PodTopologySpreadFilter: FilterPlugin<SpreadFilterState> = {
  name: 'PodTopologySpread',
  prepare: (pod, cluster) => prepareSpreadFilter(pod, cluster.nodes),
  filter: (_pod, node, state) => (state ? spreadFilter(node, state) : []),
};

export interface SpreadScoreState {
  constraints: TopologySpreadConstraint[];
  weights: number[];
  /** Per constraint (not hostname): count per domain value, over all eligible nodes. */
  counts: Map<string, number>[];
  ignored: Set<string>;
}

export function prepareSpreadScore(
  pod: Pod,
  feasible: readonly NodeInfo[],
  all: readonly NodeInfo[],
): SpreadScoreState | undefined {
  const constraints = constraintsOf(pod, 'ScheduleAnyway');
  if (constraints.length === 0) return undefined;
  const ns = pod.metadata.namespace ?? '';
  const ignored = new Set<string>();
  const domains = constraints.map(() => new Set<string>());
  const counts = constraints.map(() => new Map<string, number>());
  for (const node of feasible) {
    if (!hasAllKeys(node, constraints)) {
      ignored.add(node.name);
      continue;
    }
    constraints.forEach((c, i) => {
      const v = node.labels[c.topologyKey] as string;
      domains[i]?.add(v);
      if (c.topologyKey !== HOSTNAME) counts[i]?.set(v, 0);
    });
  }
  for (const node of all) {
    if (!hasAllKeys(node, constraints) || !podMatchesNodeSelectorAndAffinity(pod, node)) continue;
    constraints.forEach((c, i) => {
      if (c.topologyKey === HOSTNAME) return;
      const v = node.labels[c.topologyKey] as string;
      const m = counts[i] as Map<string, number>;
      if (!m.has(v)) return;
      m.set(v, (m.get(v) ?? 0) + countMatching(node, c, ns));
    });
  }
  const weights = constraints.map((c, i) => {
    const size =
      c.topologyKey === HOSTNAME ? feasible.length - ignored.size : (domains[i]?.size ?? 0);
    return Math.log(size + 2);
  });
  return { constraints, weights, counts, ignored };
}

export function spreadScore(pod: Pod, node: NodeInfo, s: SpreadScoreState): number {
  if (s.ignored.has(node.name)) return 0;
  const ns = pod.metadata.namespace ?? '';
  let score = 0;
  s.constraints.forEach((c, i) => {
    const v = node.labels[c.topologyKey];
    if (v === undefined) return;
    const cnt =
      c.topologyKey === HOSTNAME ? countMatching(node, c, ns) : (s.counts[i]?.get(v) ?? 0);
    score += cnt * (s.weights[i] as number) + (c.maxSkew - 1);
  });
  return Math.round(score);
}

export function normalizeSpread(
  scores: readonly number[],
  nodes: readonly NodeInfo[],
  s: SpreadScoreState | undefined,
): number[] {
  if (!s) return scores.map(() => 0);
  let min = Number.POSITIVE_INFINITY;
  let max = 0;
  scores.forEach((v, i) => {
    if (s.ignored.has((nodes[i] as NodeInfo).name)) return;
    if (v < min) min = v;
    if (v > max) max = v;
  });
  return scores.map((v, i) => {
    if (s.ignored.has((nodes[i] as NodeInfo).name)) return 0;
    if (max === 0) return MAX_NODE_SCORE;
    return Math.trunc((MAX_NODE_SCORE * (max + min - v)) / max);
  });
}

export const PodTopologySpreadScore: ScorePlugin<SpreadScoreState> = {
  name: 'PodTopologySpread',
  weight: 2,
  prepare: (pod, feasible, cluster) => prepareSpreadScore(pod, feasible, cluster.nodes),
  score: (pod, node, state) => (state ? spreadScore(pod, node, state) : 0),
  normalize: normalizeSpread,
};
