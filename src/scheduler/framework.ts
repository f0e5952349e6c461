/**
 * One scheduling decision, as kube-scheduler's framework makes it: filter plugins in order
 * on each node (the first plugin that refuses a node gives its reasons), starting where the
 * previous pod's search stopped and ending once enough feasible nodes were found (all of
 * them below 100 nodes; kube-scheduler's adaptive share above); then every score plugin on
 * the feasible nodes, normalised to 0..100 and weighted; the highest total wins, ties
 * broken uniformly at random by the given generator. No feasible node: a FitError whose
 * message is kube-scheduler's (`0/3 nodes are available: 1 node(s) had untolerated taint
 * {k: v}, 2 Insufficient cpu.`: the counts of each reason, sorted as strings).
 */
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import type { RandomGenerator } from 'pure-rand/types/RandomGenerator';
import { BalancedAllocation } from './plugins/balanced-allocation.js';
import { ImageLocality } from './plugins/image-locality.js';
import { InterPodAffinityFilter, InterPodAffinityScore } from './plugins/inter-pod-affinity.js';
import { LeastAllocated } from './plugins/least-allocated.js';
import { NodeAffinityFilter, NodeAffinityScore } from './plugins/node-affinity.js';
import { NodeReady } from './plugins/node-ready.js';
import { NodeUnschedulable } from './plugins/node-unschedulable.js';
import { NodeResourcesFit } from './plugins/resources-fit.js';
import { TaintTolerationFilter, TaintTolerationScore } from './plugins/taint-toleration.js';
import { PodTopologySpreadFilter, PodTopologySpreadScore } from './plugins/topology-spread.js';
import type { ClusterView, FilterPlugin, NodeInfo, Pod, ScorePlugin } from './types.js';

export const FILTER_PLUGINS: readonly FilterPlugin<never>[] = [
  NodeReady,
  NodeUnschedulable,
  TaintTolerationFilter,
  NodeAffinityFilter,
  NodeResourcesFit,
  PodTopologySpreadFilter,
  InterPodAffinityFilter,
] as FilterPlugin<never>[];

export const SCORE_PLUGINS: readonly ScorePlugin<never>[] = [
  TaintTolerationScore,
  NodeAffinityScore,
  PodTopologySpreadScore,
  InterPodAffinityScore,
  LeastAllocated,
  BalancedAllocation,
  ImageLocality,
] as ScorePlugin<never>[];

export const NO_NODES_MESSAGE = 'no nodes available to schedule pods';

const MIN_FEASIBLE_NODES_TO_FIND = 100;
const MIN_FEASIBLE_NODES_PERCENTAGE = 5;
const BASE_PERCENTAGE = 50;

/** How many feasible nodes to look for before scoring (kube-scheduler's adaptive rule). */
export function numFeasibleNodesToFind(all: number, percentage?: number): number {
  if (all < MIN_FEASIBLE_NODES_TO_FIND) return all;
  let p = percentage ?? 0;
  if (p <= 0) {
    p = BASE_PERCENTAGE - Math.trunc(all / 125);
    if (p < MIN_FEASIBLE_NODES_PERCENTAGE) p = MIN_FEASIBLE_NODES_PERCENTAGE;
  }
  if (p >= 100) return all;
  const n = Math.trunc((all * p) / 100);
  return Math.max(n, MIN_FEASIBLE_NODES_TO_FIND);
}

/** kube-scheduler's FitError text from the reasons each refused node gave. */
export function fitErrorMessage(
  numAllNodes: number,
  reasons: ReadonlyMap<string, readonly string[]>,
): string {
  const histogram = new Map<string, number>();
  for (const rs of reasons.values())
    for (const r of rs) histogram.set(r, (histogram.get(r) ?? 0) + 1);
  const parts = [...histogram].map(([r, n]) => `${n} ${r}`);
  // Go's sort.Strings: byte order, which is UTF-16 code unit order for these texts.
  parts.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  let msg = `0/${numAllNodes} nodes are available:`;
  if (parts.length > 0) msg += ` ${parts.join(', ')}.`;
  return msg;
}

export type Decision =
  | { kind: 'bind'; node: string; feasible: number; evaluated: number }
  | { kind: 'unschedulable'; message: string; reasons: Map<string, readonly string[]> };

export interface FrameworkOptions {
  /** Share of nodes to find feasible before scoring, 1..100; absent or 0: adaptive. */
  percentageOfNodesToScore?: number;
  filters?: readonly FilterPlugin<never>[];
  scores?: readonly ScorePlugin<never>[];
}

export class Framework {
  private nextStartNodeIndex = 0;
  private readonly filters: readonly FilterPlugin<unknown>[];
  private readonly scores: readonly ScorePlugin<unknown>[];

  constructor(
    private readonly rng: RandomGenerator,
    private readonly options: FrameworkOptions = {},
  ) {
    this.filters = (options.filters ?? FILTER_PLUGINS) as readonly FilterPlugin<unknown>[];
    this.scores = (options.scores ?? SCORE_PLUGINS) as readonly ScorePlugin<unknown>[];
  }

  /** The feasible nodes for the pod and the reasons of those refused. */
  findFeasible(
    pod: Pod,
    cluster: ClusterView,
  ): { feasible: NodeInfo[]; reasons: Map<string, readonly string[]>; evaluated: number } {
    const nodes = cluster.nodes;
    const reasons = new Map<string, readonly string[]>();
    const feasible: NodeInfo[] = [];
    if (nodes.length === 0) return { feasible, reasons, evaluated: 0 };
    const states = this.filters.map((f) => f.prepare?.(pod, cluster));
    const want = numFeasibleNodesToFind(nodes.length, this.options.percentageOfNodesToScore);
    const start = this.nextStartNodeIndex % nodes.length;
    let evaluated = 0;
    for (let k = 0; k < nodes.length && feasible.length < want; k++) {
      const node = nodes[(start + k) % nodes.length] as NodeInfo;
      evaluated++;
      let refused: readonly string[] | undefined;
      for (let i = 0; i < this.filters.length; i++) {
        const f = this.filters[i] as FilterPlugin<unknown>;
        const r = f.filter(pod, node, states[i], cluster);
        if (r.length > 0) {
          refused = r;
          break;
        }
      }
      if (refused) reasons.set(node.name, refused);
      else feasible.push(node);
    }
    this.nextStartNodeIndex = (start + evaluated) % nodes.length;
    return { feasible, reasons, evaluated };
  }

  /** Weighted sums of the normalised plugin scores, one per feasible node. */
  scoreNodes(pod: Pod, feasible: readonly NodeInfo[], cluster: ClusterView): number[] {
    const totals = feasible.map(() => 0);
    for (const p of this.scores) {
      const state = p.prepare ? p.prepare(pod, feasible, cluster) : null;
      if (state === undefined) continue;
      const raw = feasible.map((n) => p.score(pod, n, state ?? undefined, cluster));
      const norm = p.normalize ? p.normalize(raw, feasible, state ?? undefined) : raw;
      for (let i = 0; i < totals.length; i++)
        totals[i] = (totals[i] as number) + (norm[i] as number) * p.weight;
    }
    return totals;
  }

  /** The highest total; among equals each is equally likely (reservoir sampling). */
  selectHost(feasible: readonly NodeInfo[], totals: readonly number[]): NodeInfo {
    let best = 0;
    let count = 0;
    for (let i = 0; i < feasible.length; i++) {
      const t = totals[i] as number;
      if (count === 0 || t > (totals[best] as number)) {
        best = i;
        count = 1;
      } else if (t === totals[best]) {
        count++;
        if (uniformInt(this.rng, 0, count - 1) === 0) best = i;
      }
    }
    return feasible[best] as NodeInfo;
  }

  schedule(pod: Pod, cluster: ClusterView): Decision {
    const all = cluster.nodes.length;
    if (all === 0) return { kind: 'unschedulable', message: NO_NODES_MESSAGE, reasons: new Map() };
    const { feasible, reasons, evaluated } = this.findFeasible(pod, cluster);
    if (feasible.length === 0) {
      return { kind: 'unschedulable', message: fitErrorMessage(all, reasons), reasons };
    }
    if (feasible.length === 1) {
      return { kind: 'bind', node: (feasible[0] as NodeInfo).name, feasible: 1, evaluated };
    }
    const totals = this.scoreNodes(pod, feasible, cluster);
    const node = this.selectHost(feasible, totals);
    return { kind: 'bind', node: node.name, feasible: feasible.length, evaluated };
  }
}
