/**
 * What every controller is built from: the client, the shared informers, a logger, and the
 * small readings of Pods and ReplicaSets several controllers share (active, ready,
 * available since, the keys to enqueue for an object's owner).
 */
import type { KubeClient } from '../../client/k8s/client.js';
import { controllerOf } from '../../client/k8s/conflict.js';
import type { SharedInformers } from '../../client/k8s/shared-informers.js';
import type { KubeObject } from '../../client/k8s/types.js';
import type { ControllerLogger } from '../runtime/controller.js';

export interface ControllerContext {
  kube: KubeClient;
  informers: SharedInformers;
  logger?: ControllerLogger;
  /** Clock (ms); Date.now by default. */
  now?: () => number;
}

export interface PodCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export interface PodLike extends KubeObject {
  spec?: {
    nodeName?: string;
    restartPolicy?: string;
    terminationGracePeriodSeconds?: number;
    containers?: {
      name: string;
      image?: string;
      ports?: { containerPort: number; name?: string; protocol?: string }[];
    }[];
    tolerations?: {
      key?: string;
      operator?: string;
      effect?: string;
      tolerationSeconds?: number;
    }[];
    [k: string]: unknown;
  };
  status?: {
    phase?: string;
    podIP?: string;
    conditions?: PodCondition[];
    [k: string]: unknown;
  };
}

/** Not finished and not being deleted (Kubernetes' FilterActivePods). */
export function isPodActive(p: PodLike): boolean {
  const phase = p.status?.phase;
  return phase !== 'Succeeded' && phase !== 'Failed' && p.metadata.deletionTimestamp === undefined;
}

export function podCondition(p: PodLike, type: string): PodCondition | undefined {
  return p.status?.conditions?.find((c) => c.type === type);
}

export function isPodReady(p: PodLike): boolean {
  return podCondition(p, 'Ready')?.status === 'True';
}

/** Ready for at least minReadySeconds (at `now`). */
export function isPodAvailable(p: PodLike, minReadySeconds: number, now: number): boolean {
  const c = podCondition(p, 'Ready');
  if (c?.status !== 'True') return false;
  if (minReadySeconds <= 0) return true;
  const since = c.lastTransitionTime ? Date.parse(c.lastTransitionTime) : now;
  return now - since >= minReadySeconds * 1000;
}

/** `namespace/name` of the object's controller of the given kind, if it has one. */
export function controllerKey(obj: KubeObject, kind: string): string | undefined {
  const ref = controllerOf(obj);
  if (!ref || ref.kind !== kind) return undefined;
  const ns = obj.metadata.namespace;
  return ns ? `${ns}/${ref.name}` : ref.name;
}

export function splitKey(key: string): { namespace: string; name: string } {
  const i = key.indexOf('/');
  return i < 0
    ? { namespace: '', name: key }
    : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

/** RFC 3339 with seconds, as Kubernetes writes metav1.Time. */
export function rfc3339(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)}Z`;
}

/** metav1.MicroTime. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
