/**
 * PATCH, by Content-Type:
 *
 *   application/merge-patch+json            RFC 7386, every kind
 *   application/json-patch+json             RFC 6902, every kind
 *   application/strategic-merge-patch+json  built-in kinds only (415 for the others)
 *   application/apply-patch+yaml            server-side apply (src/k8s/apply.ts): create if
 *                                           absent (201), else merge with field ownership
 *                                           in managedFields; 409 on conflicts unless force
 *
 * The patch is applied to the current object inside the update loop, so a concurrent write
 * re-applies it to the newer object; a resourceVersion in the patch is a precondition.
 */

import { type ApplyOptions, serverSideApply } from '../../k8s/apply.js';
import { isJsonObject, type JsonMap } from '../../k8s/json.js';
import { resetFieldsOf } from '../../k8s/managed.js';
import { asKubeObject } from '../../k8s/meta.js';
import type { PatchKind } from '../../k8s/options.js';
import { applyJsonPatch, mergePatchObject } from '../../k8s/patch.js';
import { smpSchemaFor } from '../../k8s/smp-schemas.js';
import {
  badRequest,
  PATCH_TYPES_ACCEPTED,
  StatusError,
  unsupportedMediaType,
} from '../../k8s/status.js';
import { strategicMerge } from '../../k8s/strategic-merge.js';
import { apiVersionOf, type KubeObject, type ResourceInfo } from '../../k8s/types.js';
import { parseApplyBody } from '../../k8s/yaml-body.js';
import { checkDepth, mediaType, parseJsonText, readBody } from './body.js';
import {
  type FieldValidation,
  type Kube,
  type ResourceRequest,
  type WriteParams,
  writeParams,
} from './context.js';
import { applyFieldValidation, checkTypeMeta, decodeWriteObject } from './decode.js';
import { itemKey as itemKeyOf, sendObject } from './handlers.js';
import { createObject, updateObject } from './write.js';

export const PatchType = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;
export type PatchType = (typeof PatchType)[keyof typeof PatchType];

const ALL_TYPES = new Set<string>(Object.values(PatchType));

function patchTypeOf(rr: ResourceRequest): PatchType {
  const t = mediaType(rr.req.headers['content-type']);
  if (!ALL_TYPES.has(t)) {
    throw unsupportedMediaType(
      rr.info.strategicMerge
        ? `${PATCH_TYPES_ACCEPTED}, ${PatchType.strategic}`
        : PATCH_TYPES_ACCEPTED,
    );
  }
  if (t === PatchType.strategic && !rr.info.strategicMerge)
    throw unsupportedMediaType(PATCH_TYPES_ACCEPTED);
  return t as PatchType;
}

/** Applies a parsed (non-apply) patch of `type` to a copy of the current object. */
export function applyPatch(
  info: ResourceInfo,
  type: PatchType,
  current: KubeObject,
  patch: unknown,
): unknown {
  const cur = current as unknown as JsonMap;
  switch (type) {
    case PatchType.merge:
      return mergePatchObject(cur, patch);
    case PatchType.json:
      return applyJsonPatch(cur, patch);
    case PatchType.strategic:
      if (!isJsonObject(patch)) throw badRequest('the strategic merge patch must be a JSON object');
      return strategicMerge(cur, patch, smpSchemaFor(info.group, info.version, info.kind));
    case PatchType.apply:
      throw badRequest('apply patches go through server-side apply');
  }
}

const PATCH_KIND: Record<PatchType, PatchKind> = {
  [PatchType.merge]: 'merge',
  [PatchType.json]: 'json',
  [PatchType.strategic]: 'strategic',
  [PatchType.apply]: 'apply',
};

function applyOptions(
  rr: ResourceRequest,
  w: WriteParams,
  sub: 'status' | undefined,
): ApplyOptions {
  return {
    manager: w.manager,
    force: w.force,
    apiVersion: apiVersionOf(rr.info),
    schema: rr.info.mergeSchema,
    resetFields: resetFieldsOf(rr.info, sub),
    ...(sub ? { subresource: sub } : {}),
  };
}

/** The patched value as an object of the addressed kind, name and namespace. */
function checkPatched(
  kube: Kube,
  rr: ResourceRequest,
  value: unknown,
  mode: FieldValidation,
): KubeObject {
  if (!isJsonObject(value)) {
    throw new StatusError('Invalid', 'the patched object is not a JSON object');
  }
  const obj = asKubeObject(value as Record<string, unknown>);
  checkTypeMeta(kube, rr.info, obj);
  const m = obj.metadata;
  if (m.name !== rr.path.name) {
    throw badRequest(
      `the name of the object (${m.name ?? ''}) does not match the name on the URL (${rr.path.name ?? ''})`,
    );
  }
  if (rr.info.scope === 'Namespaced' && m.namespace !== rr.path.namespace) {
    throw badRequest(
      'the namespace of the provided object does not match the namespace sent on the request',
    );
  }
  applyFieldValidation(rr.info, obj, mode, rr.warnings);
  return obj;
}

function parsePatchBody(type: PatchType, buf: Buffer): unknown {
  const value =
    type === PatchType.apply ? parseApplyBody(buf) : parseJsonText(buf.toString('utf8'));
  checkDepth(value);
  return value;
}

/** Server-side apply: create when absent (201), else merge with field ownership (200). */
async function serverApply(
  kube: Kube,
  rr: ResourceRequest,
  w: WriteParams,
  applied: JsonMap,
  sub: 'status' | undefined,
): Promise<void> {
  const opts = applyOptions(rr, w, sub);
  if (sub === undefined && !(await kube.storage.get(itemKeyOf(rr)))) {
    const obj = decodeWriteObject(kube, rr, structuredClone(applied), w.fieldValidation);
    const result = serverSideApply(undefined, obj, { ...opts, now: new Date(kube.options.now()) });
    const created = await createObject(kube, rr.info, result.object as unknown as KubeObject, {
      dryRun: w.dryRun,
      manager: w.manager,
      tracked: true,
    });
    sendObject(kube, rr, 201, created);
    return;
  }
  const result = await updateObject(kube, {
    info: rr.info,
    namespace: rr.path.namespace ?? '',
    name: rr.path.name ?? '',
    subresource: sub,
    dryRun: w.dryRun,
    manager: w.manager,
    tracked: true,
    transform: (current) => {
      const merged = serverSideApply(current as unknown as JsonMap, applied, {
        ...opts,
        now: new Date(kube.options.now()),
      });
      return checkPatched(kube, rr, merged.object, w.fieldValidation);
    },
  });
  sendObject(kube, rr, 200, result.obj);
}

export async function handlePatch(kube: Kube, rr: ResourceRequest): Promise<void> {
  const type = patchTypeOf(rr);
  const w = writeParams(rr, PATCH_KIND[type]);
  const patch = parsePatchBody(
    type,
    await readBody(rr.req, kube.options.maxBodyBytes, kube.options.readBodyTimeoutMs),
  );
  const sub = rr.path.subresource === 'status' ? 'status' : undefined;
  if (type === PatchType.apply) return serverApply(kube, rr, w, patch as JsonMap, sub);
  const result = await updateObject(kube, {
    info: rr.info,
    namespace: rr.path.namespace ?? '',
    name: rr.path.name ?? '',
    subresource: sub,
    dryRun: w.dryRun,
    manager: w.manager,
    transform: (current) =>
      checkPatched(kube, rr, applyPatch(rr.info, type, current, patch), w.fieldValidation),
  });
  sendObject(kube, rr, 200, result.obj);
}
