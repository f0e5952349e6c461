/**
 * The /scale subresource of workload kinds: an autoscaling/v1 Scale
 * over spec.replicas. `kubectl scale` sends a merge patch of {"spec":{"replicas":N}}.
 */

import { isJsonObject, type JsonMap } from '../../k8s/json.js';
import { managerOf } from '../../k8s/managed.js';
import { applyJsonPatch, mergePatchObject } from '../../k8s/patch.js';
import { formatLabelSelector, labelSelectorFromObject } from '../../k8s/selectors.js';
import { badRequest, methodNotAllowed, notFound, unsupportedMediaType } from '../../k8s/status.js';
import type { KubeObject } from '../../k8s/types.js';
import { asObject, mediaType, parseJsonText, readBody } from './body.js';
import { type Kube, parseDryRun, type ResourceRequest } from './context.js';
import { itemKey } from './handlers.js';
import { sendJson } from './respond.js';
import { updateObject } from './write.js';

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

function replicasOf(scale: unknown): { replicas: number; rv: string | undefined } {
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

export async function handleScale(kube: Kube, rr: ResourceRequest): Promise<void> {
  const method = rr.req.method;
  if (method === 'GET') {
    const stored = await kube.storage.get(itemKey(rr));
    if (!stored)
      throw notFound({ group: rr.info.group, resource: rr.info.resource, name: rr.path.name });
    sendJson(rr.res, 200, scaleOf(stored.obj));
    return;
  }
  if (method !== 'PUT' && method !== 'PATCH') throw methodNotAllowed();
  const dryRun = parseDryRun(rr.query);
  const body = parseJsonText((await readBody(rr.req, kube.options.maxBodyBytes)).toString('utf8'));
  const type = mediaType(rr.req.headers['content-type']);
  if (
    method === 'PATCH' &&
    type !== 'application/merge-patch+json' &&
    type !== 'application/json-patch+json'
  ) {
    throw unsupportedMediaType('application/json-patch+json, application/merge-patch+json');
  }
  const result = await updateObject(kube, {
    info: rr.info,
    namespace: rr.path.namespace ?? '',
    name: rr.path.name ?? '',
    subresource: undefined,
    dryRun,
    manager: managerOf(rr.req, rr.query),
    transform: (cur) => {
      const scale = scaleOf(cur) as JsonMap;
      const next =
        method === 'PUT'
          ? asObject(body)
          : type === 'application/json-patch+json'
            ? applyJsonPatch(scale, body)
            : mergePatchObject(scale, body);
      const { replicas, rv } = replicasOf(next);
      cur.spec = { ...((cur.spec ?? {}) as Rec), replicas };
      if (rv !== undefined) cur.metadata.resourceVersion = rv;
      return cur;
    },
  });
  sendJson(rr.res, 200, scaleOf(result.obj));
}
