/**
 * Builders for scheduler tests: Nodes and Pods as the API holds them, and a cluster view
 * made by the scheduler's own cache from them.
 */
import { SchedulerCache } from '../../src/scheduler/cache.js';
import type { ClusterView, Node, Pod, PodSpec, Taint } from '../../src/scheduler/types.js';

export interface NodeOpts {
  cpu?: string;
  memory?: string;
  pods?: string;
  labels?: Record<string, string>;
  taints?: Taint[];
  unschedulable?: boolean;
  ready?: 'True' | 'False' | 'Unknown' | 'missing';
  images?: { names: string[]; sizeBytes: number }[];
  extra?: Record<string, string>;
}

export function node(name: string, o: NodeOpts = {}): Node {
  const conditions = o.ready === 'missing' ? [] : [{ type: 'Ready', status: o.ready ?? 'True' }];
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...o.labels } },
    spec: {
      ...(o.taints ? { taints: o.taints } : {}),
      ...(o.unschedulable ? { unschedulable: true } : {}),
    },
    status: {
      allocatable: {
        cpu: o.cpu ?? '4',
        memory: o.memory ?? '8Gi',
        pods: o.pods ?? '110',
        ...o.extra,
      },
      conditions,
      ...(o.images ? { images: o.images } : {}),
    },
  };
}

export function pod(
  name: string,
  o: {
    cpu?: string;
    memory?: string;
    labels?: Record<string, string>;
    namespace?: string;
    nodeName?: string;
    image?: string;
    spec?: Partial<PodSpec>;
    deleting?: boolean;
  } = {},
): Pod {
  const requests: Record<string, string> = {};
  if (o.cpu) requests.cpu = o.cpu;
  if (o.memory) requests.memory = o.memory;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: o.namespace ?? 'default',
      labels: o.labels ?? {},
      ...(o.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
    spec: {
      containers: [
        {
          name: 'c',
          image: o.image ?? 'nginx:1.27',
          ...(o.cpu || o.memory ? { resources: { requests } } : {}),
        },
      ],
      ...(o.nodeName ? { nodeName: o.nodeName } : {}),
      ...o.spec,
    },
  };
}

export function clusterOf(
  nodes: Node[],
  pods: Pod[] = [],
  namespaces: Record<string, Record<string, string>> = {},
): { cache: SchedulerCache; view: ClusterView } {
  const cache = new SchedulerCache();
  for (const n of nodes) cache.upsertNode(n);
  for (const p of pods) cache.upsertPod(p);
  for (const [name, labels] of Object.entries(namespaces)) {
    cache.upsertNamespace({ metadata: { name, labels } });
  }
  return { cache, view: cache.view() };
}

export function nodeInfo(view: ClusterView, name: string) {
  const n = view.nodes.find((x) => x.name === name);
  if (!n) throw new Error(`no node ${name}`);
  return n;
}
