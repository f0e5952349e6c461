/**
 * The /scale subresource of workload kinds over HTTP: GET answers the object's Scale
 * (src/k8s/scale.ts), PUT takes a Scale and PATCH a merge or JSON patch of it. `kubectl
 * scale` sends a merge patch of {"spec":{"replicas":N}}.
 */

import type { JsonMap } from '../../k8s/json.js';
import { applyJsonPatch, mergePatchObject } from '../../k8s/patch.js';
import { replicasOf, scaleOf } from '../../k8s/scale.js';
import { methodNotAllowed, notFound, unsupportedMediaType } from '../../k8s/status.js';
import { asObject, mediaType, parseJsonText, readBody } from './body.js';
import { type Kube, parseDryRun, type ResourceRequest } from './context.js';
import { managerOf } from './field-manager.js';
import { itemKey } from './handlers.js';
import { sendJson } from './respond.js';
import { updateObject } from './write.js';

type Rec = Record<string, unknown>;

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
  const body = parseJsonText(
    (await readBody(rr.req, kube.options.maxBodyBytes, kube.options.readBodyTimeoutMs)).toString(
      'utf8',
    ),
  );
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
