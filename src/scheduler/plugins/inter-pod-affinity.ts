/**
 * InterPodAffinity. A term selects pods by labelSelector in its namespaces (the listed
 * ones, those whose labels match namespaceSelector — `{}` is every namespace — or, with
 * neither, the pod's own) and applies across a topology domain: the nodes sharing the value
 * of topologyKey.
 *
 * Filter, in kube-scheduler's order: (1) no existing pod's required anti-affinity term may
 * match the pod within the node's domain; (2) every required affinity term of the pod must
 * have a matching pod in the node's domain (the node must carry every term's key) — unless
 * no pod anywhere matches and the pod matches its own terms (the first of a group); (3) no
 * required anti-affinity term of the pod may have a matching pod in the node's domain.
 *
 * Score: per domain, + weight for each existing pod matching a preferred affinity term of
 * the pod, − weight for a preferred anti-affinity term, and symmetrically for existing pods'
 * terms that match the pod (their required affinity counts with weight 1); a node sums its
 * domains; min-max normalised to 0..100.
 */
import { matchesSelector } from '../selectors.js';
import {
  type ClusterView,
  type FilterPlugin,
  type Labels,
  MAX_NODE_SCORE,
  type NodeInfo,
  type Pod,
  type PodAffinityTerm,
  type Reasons,
  type ScorePlugin,
} from '../types.js';

export const ERR_EXISTING_ANTI_AFFINITY =
  "node(s) didn't satisfy existing pods anti-affinity rules";
export const ERR_AFFINITY = "node(s) didn't match pod affinity rules";
export const ERR_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules";

const HARD_POD_AFFINITY_WEIGHT = 1;

/** Does `target` fall under a term written on a pod in namespace `ownerNs`? */
export function termMatches(
  term: PodAffinityTerm,
  ownerNs: string,
  target: Pod,
  cluster: ClusterView,
): boolean {
  const ns = target.metadata.namespace ?? '';
  const listed = term.namespaces ?? [];
  let inNs: boolean;
  if (listed.length === 0 && !term.namespaceSelector) inNs = ns === ownerNs;
  else {
    inNs = listed.includes(ns);
    if (!inNs && term.namespaceSelector) {
      const labels: Labels = cluster.namespaceLabels(ns) ?? {};
      inNs = matchesSelector(term.namespaceSelector, labels);
    }
  }
  return inNs && matchesSelector(term.labelSelector, target.metadata.labels ?? {});
}

const pair = (key: string, value: string) => `${key}\u0000${value}`;

function requiredAffinity(p: Pod) {
  return p.spec?.affinity?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [];
}
function requiredAntiAffinity(p: Pod) {
  return p.spec?.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [];
}
function preferredAffinity(p: Pod) {
  return p.spec?.affinity?.podAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
}
function preferredAntiAffinity(p: Pod) {
  return p.spec?.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
}

export interface AffinityFilterState {
  existingAnti: Map<string, number>;
  affinity: Map<string, number>;
  anti: Map<string, number>;
  affinityTerms: PodAffinityTerm[];
  antiTerms: PodAffinityTerm[];
}

function bump(m: Map<string, number>, k: string, by = 1): void {
  m.set(k, (m.get(k) ?? 0) + by);
}

export function prepareAffinityFilter(
  pod: Pod,
  cluster: ClusterView,
): AffinityFilterState | undefined {
  const ns = pod.metadata.namespace ?? '';
  const affinityTerms = requiredAffinity(pod);
  const antiTerms = requiredAntiAffinity(pod);
  const s: AffinityFilterState = {
    existingAnti: new Map(),
    affinity: new Map(),
    anti: new Map(),
    affinityTerms,
    antiTerms,
  };
  const own = affinityTerms.length > 0 || antiTerms.length > 0;
  let existingAny = false;
  for (const node of cluster.nodes) {
    for (const existing of node.podsWithAffinity.values()) {
      const eNs = existing.metadata.namespace ?? '';
      for (const term of requiredAntiAffinity(existing)) {
        existingAny = true;
        const v = node.labels[term.topologyKey];
        if (v !== undefined && termMatches(term, eNs, pod, cluster)) {
          bump(s.existingAnti, pair(term.topologyKey, v));
        }
      }
    }
    if (!own) continue;
    for (const existing of node.pods.values()) {
      for (const term of affinityTerms) {
        const v = node.labels[term.topologyKey];
        if (v !== undefined && termMatches(term, ns, existing, cluster)) {
          bump(s.affinity, pair(term.topologyKey, v));
        }
      }
      for (const term of antiTerms) {
        const v = node.labels[term.topologyKey];
        if (v !== undefined && termMatches(term, ns, existing, cluster)) {
          bump(s.anti, pair(term.topologyKey, v));
        }
      }
    }
  }
  if (!own && !existingAny) return undefined;
  return s;
}

export function affinityFilter(
  pod: Pod,
  node: NodeInfo,
  s: AffinityFilterState,
  cluster: ClusterView,
): Reasons {
  if (s.existingAnti.size > 0) {
    for (const [k, v] of Object.entries(node.labels)) {
      if ((s.existingAnti.get(pair(k, v)) ?? 0) > 0) return [ERR_EXISTING_ANTI_AFFINITY];
    }
  }
  if (s.affinityTerms.length > 0) {
    let podsExist = true;
    for (const term of s.affinityTerms) {
      const v = node.labels[term.topologyKey];
      if (v === undefined) return [ERR_AFFINITY];
      if ((s.affinity.get(pair(term.topologyKey, v)) ?? 0) <= 0) podsExist = false;
    }
    if (!podsExist) {
      const ns = pod.metadata.namespace ?? '';
      const self = s.affinityTerms.every((t) => termMatches(t, ns, pod, cluster));
      if (!(s.affinity.size === 0 && self)) return [ERR_AFFINITY];
    }
  }
  for (const term of s.antiTerms) {
    const v = node.labels[term.topologyKey];
    if (v !== undefined && (s.anti.get(pair(term.topologyKey, v)) ?? 0) > 0) {
      return [ERR_ANTI_AFFINITY];
    }
  }
  return [];
}

export const InterPodAffinityFilter: FilterPlugin<AffinityFilterState> = {
  name: 'InterPodAffinity',
  prepare: (pod, cluster) => prepareAffinityFilter(pod, cluster),
  filter: (pod, node, state, cluster) => (state ? affinityFilter(pod, node, state, cluster) : []),
};

/** Score per `key\0value` domain. */
export type AffinityScoreState = Map<string, number>;

export function prepareAffinityScore(
  pod: Pod,
  cluster: ClusterView,
): AffinityScoreState | undefined {
  const ns = pod.metadata.namespace ?? '';
  const prefAff = preferredAffinity(pod);
  const prefAnti = preferredAntiAffinity(pod);
  const scores: AffinityScoreState = new Map();
  let any = prefAff.length > 0 || prefAnti.length > 0;
  const own = any;
  for (const node of cluster.nodes) {
    const add = (term: PodAffinityTerm, weight: number) => {
      const v = node.labels[term.topologyKey];
      if (v !== undefined) bump(scores, pair(term.topologyKey, v), weight);
    };
    if (own) {
      for (const existing of node.pods.values()) {
        for (const w of prefAff) {
          if (termMatches(w.podAffinityTerm, ns, existing, cluster))
            add(w.podAffinityTerm, w.weight);
        }
        for (const w of prefAnti) {
          if (termMatches(w.podAffinityTerm, ns, existing, cluster)) {
            add(w.podAffinityTerm, -w.weight);
          }
        }
      }
    }
    for (const existing of node.podsWithAffinity.values()) {
      const eNs = existing.metadata.namespace ?? '';
      for (const term of requiredAffinity(existing)) {
        any = true;
        if (termMatches(term, eNs, pod, cluster)) add(term, HARD_POD_AFFINITY_WEIGHT);
      }
      for (const w of preferredAffinity(existing)) {
        any = true;
        if (termMatches(w.podAffinityTerm, eNs, pod, cluster)) add(w.podAffinityTerm, w.weight);
      }
      for (const w of preferredAntiAffinity(existing)) {
        any = true;
        if (termMatches(w.podAffinityTerm, eNs, pod, cluster)) add(w.podAffinityTerm, -w.weight);
      }
    }
  }
  return any ? scores : undefined;
}

export function affinityScore(node: NodeInfo, s: AffinityScoreState): number {
  let sum = 0;
  for (const [k, v] of Object.entries(node.labels)) sum += s.get(pair(k, v)) ?? 0;
  return sum;
}

export function minMaxNormalize(scores: readonly number[]): number[] {
  if (scores.length === 0) return [];
  const min = Math.min(...scores);
  const max = Math.max(...scores);
  const diff = max - min;
  return scores.map((s) => (diff > 0 ? Math.trunc(MAX_NODE_SCORE * ((s - min) / diff)) : 0));
}

export const InterPodAffinityScore: ScorePlugin<AffinityScoreState> = {
  name: 'InterPodAffinity',
  weight: 2,
  prepare: (pod, _feasible, cluster) => prepareAffinityScore(pod, cluster),
  score: (_pod, node, state) => (state ? affinityScore(node, state) : 0),
  normalize: (scores) => minMaxNormalize(scores),
};
