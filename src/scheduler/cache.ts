/**
 * The scheduler's picture of the cluster, fed by informers: nodes, the pods bound to each
 * (and those the scheduler assumed onto a node while their binding is in flight), the sums
 * of their requests, the images per node, and namespace labels. `view()` hands plugins a
 * read-only ClusterView; nothing in it changes during a scheduling cycle, which runs
 * synchronously.
 *
 * Invariant: for every node, `requested` and `nonZeroRequested` equal the sums over its
 * `pods`; a pod key is filed under at most one node.
 */
import { objectKey } from '../client/k8s/index.js';
import { nodeImages, normalizedImageName } from './plugins/image-locality.js';
import { addInto, nodeAllocatable, podNonZeroRequests, podRequests } from './resources.js';
import type { ClusterView, Labels, Node, NodeInfo, Pod, ResourceList } from './types.js';

interface MutableNodeInfo {
  name: string;
  node: Node | undefined;
  labels: Labels;
  allocatable: ResourceList;
  pods: Map<string, Pod>;
  podsWithAffinity: Map<string, Pod>;
  requested: ResourceList;
  nonZeroRequested: ResourceList;
  images: Map<string, number>;
}

function hasAffinity(p: Pod): boolean {
  const a = p.spec?.affinity;
  return a?.podAffinity !== undefined || a?.podAntiAffinity !== undefined;
}

export class SchedulerCache {
  private readonly infos = new Map<string, MutableNodeInfo>();
  private readonly podNode = new Map<string, string>();
  private readonly assumed = new Set<string>();
  private readonly images = new Map<string, { nodes: number; sizeBytes: number }>();
  private readonly namespaces = new Map<string, Labels>();
  private nodeList: NodeInfo[] | undefined;

  private info(name: string): MutableNodeInfo {
    let i = this.infos.get(name);
    if (!i) {
      i = {
        name,
        node: undefined,
        labels: {},
        allocatable: new Map(),
        pods: new Map(),
        podsWithAffinity: new Map(),
        requested: new Map(),
        nonZeroRequested: new Map(),
        images: new Map(),
      };
      this.infos.set(name, i);
    }
    return i;
  }

  private dropIfEmpty(i: MutableNodeInfo): void {
    if (!i.node && i.pods.size === 0) this.infos.delete(i.name);
  }

  private fileImages(i: MutableNodeInfo, sign: 1 | -1): void {
    for (const [name, size] of i.images) {
      const cur = this.images.get(name) ?? { nodes: 0, sizeBytes: size };
      cur.nodes += sign;
      if (sign > 0) cur.sizeBytes = size;
      if (cur.nodes <= 0) this.images.delete(name);
      else this.images.set(name, cur);
    }
  }

  upsertNode(node: Node): void {
    const name = node.metadata.name ?? '';
    const i = this.info(name);
    if (i.node) this.fileImages(i, -1);
    else this.nodeList = undefined;
    i.node = node;
    i.labels = node.metadata.labels ?? {};
    i.allocatable = nodeAllocatable(node);
    i.images = nodeImages(node);
    this.fileImages(i, 1);
    // The list holds the NodeInfo objects themselves, so field changes are seen.
  }

  removeNode(name: string): void {
    const i = this.infos.get(name);
    if (!i?.node) return;
    this.fileImages(i, -1);
    i.node = undefined;
    i.labels = {};
    i.allocatable = new Map();
    i.images = new Map();
    this.nodeList = undefined;
    this.dropIfEmpty(i);
  }

  /** Files a bound pod (from the informer); confirms an assumption of the same pod. */
  upsertPod(pod: Pod): void {
    const nodeName = pod.spec?.nodeName;
    if (!nodeName) return;
    const key = objectKey(pod);
    this.assumed.delete(key);
    this.removePodKey(key);
    this.place(key, pod, nodeName);
  }

  removePod(pod: Pod): void {
    const key = objectKey(pod);
    this.assumed.delete(key);
    this.removePodKey(key);
  }

  /** Places a pod on a node before its binding is confirmed. */
  assume(pod: Pod, nodeName: string): void {
    const key = objectKey(pod);
    this.removePodKey(key);
    const placed: Pod = { ...pod, spec: { ...pod.spec, nodeName } };
    this.place(key, placed, nodeName);
    this.assumed.add(key);
  }

  /** Takes back an assumption (the binding failed); a confirmed pod stays. */
  forget(pod: Pod): void {
    const key = objectKey(pod);
    if (!this.assumed.delete(key)) return;
    this.removePodKey(key);
  }

  isAssumed(pod: Pod): boolean {
    return this.assumed.has(objectKey(pod));
  }

  /** The node a pod is filed under (bound or assumed). */
  nodeOf(pod: Pod): string | undefined {
    return this.podNode.get(objectKey(pod));
  }

  upsertNamespace(ns: { metadata: { name?: string; labels?: Record<string, string> } }): void {
    this.namespaces.set(ns.metadata.name ?? '', ns.metadata.labels ?? {});
  }

  removeNamespace(name: string): void {
    this.namespaces.delete(name);
  }

  private place(key: string, pod: Pod, nodeName: string): void {
    const i = this.info(nodeName);
    i.pods.set(key, pod);
    if (hasAffinity(pod)) i.podsWithAffinity.set(key, pod);
    addInto(i.requested, podRequests(pod), 1);
    addInto(i.nonZeroRequested, podNonZeroRequests(pod), 1);
    this.podNode.set(key, nodeName);
  }

  private removePodKey(key: string): void {
    const nodeName = this.podNode.get(key);
    if (nodeName === undefined) return;
    this.podNode.delete(key);
    const i = this.infos.get(nodeName);
    const pod = i?.pods.get(key);
    if (!i || !pod) return;
    i.pods.delete(key);
    i.podsWithAffinity.delete(key);
    addInto(i.requested, podRequests(pod), -1);
    addInto(i.nonZeroRequested, podNonZeroRequests(pod), -1);
    this.dropIfEmpty(i);
  }

  /** The nodes (sorted by name) and what plugins may ask about the cluster. */
  view(): ClusterView {
    if (!this.nodeList) {
      this.nodeList = [...this.infos.values()]
        .filter((i) => i.node !== undefined)
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) as NodeInfo[];
    }
    const nodes = this.nodeList;
    return {
      nodes,
      namespaceLabels: (ns) => this.namespaces.get(ns),
      imageSpread: (image) => this.images.get(normalizedImageName(image)),
    };
  }

  get nodeCount(): number {
    return this.view().nodes.length;
  }
}
