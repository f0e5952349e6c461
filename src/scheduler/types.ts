/**
 * The scheduler's vocabulary: the parts of core/v1 Pod and Node it reads (plain JSON, as
 * the client hands them over), the resource vectors it adds up, and the plugin contract.
 *
 * A plugin is a pure function of the pod and a read-only snapshot of the cluster: an
 * optional `prepare` computes what is shared by every node for this pod (kube-scheduler's
 * PreFilter/PreScore), `filter` answers the reasons a node does not fit (none: it fits),
 * `score` gives each feasible node a raw number and `normalize` maps the raw numbers of all
 * feasible nodes to 0..100.
 */
import type { KubeObject } from '../client/k8s/index.js';

export type Labels = Readonly<Record<string, string>>;

/** Label selectors are the client's (src/client/k8s/selector.ts). */
import type { LabelSelector } from '../client/k8s/selector.js';

export type { LabelSelector, LabelSelectorRequirement } from '../client/k8s/selector.js';

export interface NodeSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';
  values?: string[];
}

export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

export interface PodAffinityTerm {
  labelSelector?: LabelSelector | null;
  namespaces?: string[];
  namespaceSelector?: LabelSelector | null;
  topologyKey: string;
}

export interface WeightedPodAffinityTerm {
  weight: number;
  podAffinityTerm: PodAffinityTerm;
}

export interface Affinity {
  nodeAffinity?: {
    requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: NodeSelectorTerm[] };
    preferredDuringSchedulingIgnoredDuringExecution?: {
      weight: number;
      preference: NodeSelectorTerm;
    }[];
  };
  podAffinity?: {
    requiredDuringSchedulingIgnoredDuringExecution?: PodAffinityTerm[];
    preferredDuringSchedulingIgnoredDuringExecution?: WeightedPodAffinityTerm[];
  };
  podAntiAffinity?: {
    requiredDuringSchedulingIgnoredDuringExecution?: PodAffinityTerm[];
    preferredDuringSchedulingIgnoredDuringExecution?: WeightedPodAffinityTerm[];
  };
}

export interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: '' | 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  tolerationSeconds?: number;
}

export interface Taint {
  key: string;
  value?: string;
  effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
}

export interface TopologySpreadConstraint {
  maxSkew: number;
  topologyKey: string;
  whenUnsatisfiable: 'DoNotSchedule' | 'ScheduleAnyway';
  labelSelector?: LabelSelector | null;
  minDomains?: number;
}

export interface Container {
  name?: string;
  image?: string;
  resources?: {
    requests?: Record<string, string | number>;
    limits?: Record<string, string | number>;
  };
}

export interface PodSpec {
  nodeName?: string;
  schedulerName?: string;
  nodeSelector?: Record<string, string>;
  affinity?: Affinity;
  tolerations?: Toleration[];
  topologySpreadConstraints?: TopologySpreadConstraint[];
  containers?: Container[];
  initContainers?: Container[];
  overhead?: Record<string, string | number>;
  priority?: number;
}

export interface Pod extends KubeObject {
  spec?: PodSpec;
  status?: { phase?: string; conditions?: Record<string, unknown>[]; [k: string]: unknown };
}

export interface Node extends KubeObject {
  spec?: { unschedulable?: boolean; taints?: Taint[] };
  status?: {
    allocatable?: Record<string, string | number>;
    capacity?: Record<string, string | number>;
    conditions?: { type: string; status: string }[];
    images?: { names?: string[]; sizeBytes?: number }[];
  };
}

/** Amounts by resource name: cpu in millicores, memory and the rest in their units. */
export type ResourceList = Map<string, number>;

/** A node as the scheduler sees it: its object, its pods and what they request. */
export interface NodeInfo {
  readonly name: string;
  readonly node: Node;
  readonly labels: Labels;
  readonly allocatable: ResourceList;
  /** Pods bound (or assumed) to this node, by `namespace/name`. */
  readonly pods: ReadonlyMap<string, Pod>;
  /** The pods among them with any pod affinity or anti-affinity term. */
  readonly podsWithAffinity: ReadonlyMap<string, Pod>;
  /** Sum of the pods' requests. */
  readonly requested: ResourceList;
  /** The same with kube-scheduler's defaults for pods that request no cpu or memory. */
  readonly nonZeroRequested: ResourceList;
  /** The images the node reports, by normalised name (`:latest` added when untagged). */
  readonly images: ReadonlyMap<string, number>;
}

/** A read-only view of the cluster for one scheduling cycle. */
export interface ClusterView {
  readonly nodes: readonly NodeInfo[];
  /** Namespace labels, for namespaceSelector in pod affinity terms. */
  namespaceLabels(namespace: string): Labels | undefined;
  /** How many nodes have each image (normalised name), and its size. */
  imageSpread(image: string): { nodes: number; sizeBytes: number } | undefined;
}

/** Reasons a node does not fit, as kube-scheduler words them; empty: it fits. */
export type Reasons = readonly string[];

export interface FilterPlugin<S = unknown> {
  readonly name: string;
  /** Per-pod state shared by every node; `undefined` when the plugin has nothing to do. */
  prepare?(pod: Pod, cluster: ClusterView): S | undefined;
  filter(pod: Pod, node: NodeInfo, state: S | undefined, cluster: ClusterView): Reasons;
}

export interface ScorePlugin<S = unknown> {
  readonly name: string;
  /** kube-scheduler's default weight for the plugin. */
  readonly weight: number;
  /** Per-pod state; `undefined` skips the plugin for this pod (every node scores 0). */
  prepare?(pod: Pod, nodes: readonly NodeInfo[], cluster: ClusterView): S | undefined;
  score(pod: Pod, node: NodeInfo, state: S | undefined, cluster: ClusterView): number;
  /** Maps raw scores (one per node, same order) to 0..100. Absent: raw scores are 0..100. */
  normalize?(scores: number[], nodes: readonly NodeInfo[], state: S | undefined): number[];
}

export const MAX_NODE_SCORE = 100;
