/**
 * What a pod requests and what a node offers, as kube-scheduler adds them up: a pod's
 * request is the sum of its containers' requests, raised to any single init container's
 * request where that is larger, plus the pod overhead; a container that sets only a limit
 * requests its limit (the API server's defaulting). The "non-zero" request, used for
 * scoring only, counts 100m cpu and 200Mi memory for a container that requests none.
 */
import { amountOf } from './quantity.js';
import type { Container, Node, Pod, ResourceList } from './types.js';

export const DEFAULT_MILLI_CPU_REQUEST = 100;
export const DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024;

type Quantities = Record<string, string | number> | undefined;

function add(into: ResourceList, name: string, amount: number): void {
  into.set(name, (into.get(name) ?? 0) + amount);
}

function containerRequests(c: Container): Map<string, number> {
  const out = new Map<string, number>();
  const requests: Quantities = c.resources?.requests;
  const limits: Quantities = c.resources?.limits;
  for (const [name, q] of Object.entries(limits ?? {})) {
    if (requests && name in requests) continue;
    const a = amountOf(name, q);
    if (a !== undefined) out.set(name, a);
  }
  for (const [name, q] of Object.entries(requests ?? {})) {
    const a = amountOf(name, q);
    if (a !== undefined) out.set(name, a);
  }
  return out;
}

function podTotal(pod: Pod, nonZero: boolean): ResourceList {
  const spec = pod.spec ?? {};
  const sum: ResourceList = new Map();
  for (const c of spec.containers ?? []) {
    const r = containerRequests(c);
    if (nonZero) {
      if (!r.has('cpu')) r.set('cpu', DEFAULT_MILLI_CPU_REQUEST);
      if (!r.has('memory')) r.set('memory', DEFAULT_MEMORY_REQUEST);
    }
    for (const [name, a] of r) add(sum, name, a);
  }
  for (const c of spec.initContainers ?? []) {
    const r = containerRequests(c);
    if (nonZero) {
      if (!r.has('cpu')) r.set('cpu', DEFAULT_MILLI_CPU_REQUEST);
      if (!r.has('memory')) r.set('memory', DEFAULT_MEMORY_REQUEST);
    }
    for (const [name, a] of r) if (a > (sum.get(name) ?? 0)) sum.set(name, a);
  }
  for (const [name, q] of Object.entries(spec.overhead ?? {})) {
    const a = amountOf(name, q);
    if (a !== undefined) add(sum, name, a);
  }
  return sum;
}

/** The pod's request per resource (absent resources are not requested). */
export function podRequests(pod: Pod): ResourceList {
  return podTotal(pod, false);
}

/** The request used for scoring: at least 100m cpu and 200Mi memory per container. */
export function podNonZeroRequests(pod: Pod): ResourceList {
  return podTotal(pod, true);
}

/** A node's allocatable resources (absent: nothing of that resource). */
export function nodeAllocatable(node: Node): ResourceList {
  const out: ResourceList = new Map();
  for (const [name, q] of Object.entries(node.status?.allocatable ?? {})) {
    const a = amountOf(name, q);
    if (a !== undefined) out.set(name, a);
  }
  return out;
}

export function addInto(into: ResourceList, r: ResourceList, sign: 1 | -1): void {
  for (const [name, a] of r) add(into, name, sign * a);
}
