/**
 * Score ImageLocality: nodes that already have the pod's images score higher, by the
 * images' sizes scaled by the share of nodes that have them (so an image everywhere does
 * not pull pods onto one node). The sum is clamped to [23 MiB, 1000 MiB × containers] and
 * mapped linearly to 0..100. Image names are compared with `:latest` added when untagged.
 */
import {
  type ClusterView,
  MAX_NODE_SCORE,
  type Node,
  type NodeInfo,
  type Pod,
  type ScorePlugin,
} from '../types.js';

const MB = 1024 * 1024;
const MIN_THRESHOLD = 23 * MB;
const MAX_CONTAINER_THRESHOLD = 1000 * MB;

export function normalizedImageName(name: string): string {
  return name.lastIndexOf(':') <= name.lastIndexOf('/') ? `${name}:latest` : name;
}

/** The images a node reports, by normalised name, with their sizes. */
export function nodeImages(node: Node): Map<string, number> {
  const out = new Map<string, number>();
  for (const img of node.status?.images ?? []) {
    for (const n of img.names ?? []) out.set(normalizedImageName(n), img.sizeBytes ?? 0);
  }
  return out;
}

export function imageLocality(pod: Pod, node: NodeInfo, cluster: ClusterView): number {
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  if (containers.length === 0) return 0;
  const total = cluster.nodes.length;
  const here = node.images;
  let sum = 0;
  for (const c of containers) {
    if (!c.image) continue;
    const name = normalizedImageName(c.image);
    if (!here.has(name)) continue;
    const spread = cluster.imageSpread(name);
    if (!spread || total === 0) continue;
    sum += Math.trunc(spread.sizeBytes * (spread.nodes / total));
  }
  const max = MAX_CONTAINER_THRESHOLD * containers.length;
  const clamped = Math.min(Math.max(sum, MIN_THRESHOLD), max);
  return Math.trunc((MAX_NODE_SCORE * (clamped - MIN_THRESHOLD)) / (max - MIN_THRESHOLD));
}

export const ImageLocality: ScorePlugin = {
  name: 'ImageLocality',
  weight: 1,
  score: (pod, node, _state, cluster) => imageLocality(pod, node, cluster),
};
