/**
 * Matching as kube-scheduler does it: label selectors (matchLabels and matchExpressions
 * with In, NotIn, Exists, DoesNotExist), node selector terms (the same plus Gt and Lt on
 * integer label values, and matchFields on metadata.name), and tolerations against taints.
 */
import { selectorMatches } from '../client/k8s/selector.js';
import type {
  LabelSelector,
  Labels,
  NodeInfo,
  NodeSelectorRequirement,
  NodeSelectorTerm,
  Pod,
  Taint,
  Toleration,
} from './types.js';

/** A null or absent selector matches nothing; an empty one `{}` matches everything. */
export function matchesSelector(
  selector: LabelSelector | null | undefined,
  labels: Labels,
): boolean {
  return selectorMatches(selector ?? undefined, labels);
}

/** A base-10 integer as Kubernetes parses label values for Gt/Lt; undefined otherwise. */
function integer(s: string | undefined): bigint | undefined {
  if (s === undefined || !/^[+-]?\d+$/.test(s)) return undefined;
  return BigInt(s);
}

function matchRequirement(r: NodeSelectorRequirement, labels: Labels): boolean {
  const has = Object.hasOwn(labels, r.key);
  const v = labels[r.key];
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return has && values.includes(v as string);
    case 'NotIn':
      return !has || !values.includes(v as string);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    case 'Gt':
    case 'Lt': {
      if (!has || values.length !== 1) return false;
      const a = integer(v);
      const b = integer(values[0]);
      if (a === undefined || b === undefined) return false;
      return r.operator === 'Gt' ? a > b : a < b;
    }
    default:
      return false;
  }
}

/** One term: all its expressions and fields hold; a term with neither matches nothing. */
export function matchesNodeSelectorTerm(term: NodeSelectorTerm, node: NodeInfo): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  for (const r of exprs) if (!matchRequirement(r, node.labels)) return false;
  for (const r of fields) {
    if (r.key !== 'metadata.name') return false;
    if (!matchRequirement(r, { 'metadata.name': node.name })) return false;
  }
  return true;
}

/** The terms are ORed. */
export function matchesNodeSelectorTerms(
  terms: readonly NodeSelectorTerm[],
  node: NodeInfo,
): boolean {
  return terms.some((t) => matchesNodeSelectorTerm(t, node));
}

/** The pod's nodeSelector and required node affinity both hold on the node. */
export function podMatchesNodeSelectorAndAffinity(pod: Pod, node: NodeInfo): boolean {
  const spec = pod.spec ?? {};
  for (const [k, v] of Object.entries(spec.nodeSelector ?? {}))
    if (node.labels[k] !== v) return false;
  const required = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (required) return matchesNodeSelectorTerms(required.nodeSelectorTerms ?? [], node);
  return true;
}

export function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if ((t.key ?? '') !== '' && t.key !== taint.key) return false;
  const op = t.operator ?? 'Equal';
  if (op === 'Exists') return true;
  if (op !== 'Equal') return false;
  return (t.value ?? '') === (taint.value ?? '');
}

export function toleratedBy(tolerations: readonly Toleration[], taint: Taint): boolean {
  return tolerations.some((t) => tolerates(t, taint));
}
