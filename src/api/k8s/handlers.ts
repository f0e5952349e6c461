/**
 * The verbs on one object or collection: get, create (POST), update (PUT) and the /status
 * subresource's get and put. Patch is in patch.ts, delete in delete.ts, list in list.ts,
 * watch in watch/http.ts.
 */

import { objectKey } from '../../k8s/keys.js';
import { asVersion } from '../../k8s/meta.js';
import { methodNotAllowed, notFound } from '../../k8s/status.js';
import { parseIncludeObject, tableJson, tableRow, wantsTable } from '../../k8s/table.js';
import type { KubeObject } from '../../k8s/types.js';
import { noteRequestObjectName } from './audit.js';
import { parseObjectBody, readBody } from './body.js';
import { type Kube, type ResourceRequest, writeParams } from './context.js';
import { decodeWriteObject } from './decode.js';
import { sendText } from './respond.js';
import { CachedObject } from './watch/cache.js';
import { createObject, updateObject } from './write.js';

/** Sends one object in the request's version, as JSON or (Accept: Table) a one-row Table. */
export function sendObject(kube: Kube, rr: ResourceRequest, code: number, obj: KubeObject): void {
  asVersion(obj, rr.info);
  if (wantsTable(rr.req.headers.accept)) {
    const entry = new CachedObject(obj, Number(obj.metadata.resourceVersion ?? 0));
    const row = tableRow(
      rr.info,
      entry,
      parseIncludeObject(rr.query.get('includeObject')),
      kube.options.now(),
    );
    const text = tableJson(rr.info, [row], { resourceVersion: obj.metadata.resourceVersion ?? '' });
    sendText(rr.res, code, text, undefined, rr.warnings);
    return;
  }
  sendText(rr.res, code, JSON.stringify(obj), undefined, rr.warnings);
}

export function itemKey(rr: ResourceRequest): string {
  const ns = rr.info.scope === 'Namespaced' ? (rr.path.namespace ?? '') : '';
  return objectKey(rr.info, ns, rr.path.name ?? '');
}

function subject(rr: ResourceRequest) {
  return { group: rr.info.group, resource: rr.info.resource, name: rr.path.name ?? '' };
}

export async function handleGet(kube: Kube, rr: ResourceRequest): Promise<void> {
  const stored = await kube.storage.get(itemKey(rr));
  if (!stored) throw notFound(subject(rr));
  sendObject(kube, rr, 200, stored.obj);
}

export async function readObjectBody(
  kube: Kube,
  rr: ResourceRequest,
): Promise<Record<string, unknown>> {
  const buf = await readBody(rr.req, kube.options.maxBodyBytes, kube.options.readBodyTimeoutMs);
  return parseObjectBody(buf, rr.req.headers['content-type']);
}

export async function handleCreate(kube: Kube, rr: ResourceRequest): Promise<void> {
  if (rr.info.scope === 'Namespaced' && rr.path.namespace === undefined) {
    throw methodNotAllowed(`${rr.info.resource} can only be created in a namespace`);
  }
  const w = writeParams(rr, 'create');
  const body = await readObjectBody(kube, rr);
  const obj = decodeWriteObject(kube, rr, body, w.fieldValidation);
  noteRequestObjectName(rr.req, obj.metadata.name);
  const created = await createObject(kube, rr.info, obj, { dryRun: w.dryRun, manager: w.manager });
  sendObject(kube, rr, 201, created);
}

export async function handleUpdate(kube: Kube, rr: ResourceRequest): Promise<void> {
  const w = writeParams(rr, 'update');
  const body = await readObjectBody(kube, rr);
  const obj = decodeWriteObject(kube, rr, body, w.fieldValidation);
  const result = await updateObject(kube, {
    info: rr.info,
    namespace: rr.path.namespace ?? '',
    name: rr.path.name ?? '',
    subresource: rr.path.subresource === 'status' ? 'status' : undefined,
    dryRun: w.dryRun,
    manager: w.manager,
    transform: () => structuredClone(obj),
  });
  sendObject(kube, rr, 200, result.obj);
}
