/**
 * The Scale view (autoscaling/v1) of workload kinds: spec.replicas, status.replicas and the
 * label selector as text, and the replicas a client's Scale asks for.
 */
import { isJsonObject } from './json.js';
import { formatLabelSelector, labelSelectorFromObject } from './selectors.js';
import { badRequest } from './status.js';
import type { KubeObject } from './types.js';

type Rec = Record<string, unknown>;

/** The Scale view of a workload object. */
export function scaleOf(obj: KubeObject): Rec {
  const spec = (obj.spec ?? {}) as Rec;
  const status = (obj.status ?? {}) as Rec;
  let selector = '';
  try {
    const sel = spec.selector;
    if (sel && typeof sel === 'object')
      selector = formatLabelSelector(labelSelectorFromObject(sel as never));
  } catch {
    selector = '';
  }
  const m = obj.metadata;
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      creationTimestamp: m.creationTimestamp,
    },
    spec: { replicas: typeof spec.replicas === 'number' ? spec.replicas : 1 },
    status: { replicas: typeof status.replicas === 'number' ? status.replicas : 0, selector },
  };
}

/** The replicas (and resourceVersion precondition) a client's Scale asks for; 400 if bad. */
export function replicasOf(scale: unknown): { replicas: number; rv: string | undefined } {
  if (!isJsonObject(scale)) throw badRequest('the Scale must be a JSON object');
  const spec = scale.spec;
  const replicas = isJsonObject(spec) ? spec.replicas : undefined;
  if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0) {
    throw badRequest('spec.replicas must be a non-negative integer');
  }
  const meta = scale.metadata;
  const rv =
    isJsonObject(meta) && typeof meta.resourceVersion === 'string'
      ? meta.resourceVersion
      : undefined;
  return { replicas, rv };
}
