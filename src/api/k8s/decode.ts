/**
 * From a request body to the object a write works on: apiVersion and kind checked against
 * the path (or filled in, as Kubernetes does for typed clients that leave them out), the
 * namespace and name reconciled with the path, and unknown fields handled as the request's
 * fieldValidation says (Strict: 400, Warn: warning and drop, Ignore: drop).
 */

import { OBJECT_META_FIELDS } from '../../k8s/crd-schema-walk.js';
import { asKubeObject } from '../../k8s/meta.js';
import { badRequest } from '../../k8s/status.js';
import { apiVersionOf, type KubeObject, type ResourceInfo } from '../../k8s/types.js';
import type { FieldValidation, Kube, ResourceRequest } from './context.js';

/** metav1.ObjectMeta's JSON fields (one list, kept with the CRD schema walk). */
const KNOWN_METADATA = OBJECT_META_FIELDS;

/** Checks the body's apiVersion/kind against the addressed resource, filling them when absent. */
export function checkTypeMeta(kube: Kube, info: ResourceInfo, obj: KubeObject): void {
  const want = apiVersionOf(info);
  if (obj.apiVersion === undefined || obj.apiVersion === '') obj.apiVersion = want;
  if (obj.kind === undefined || obj.kind === '') obj.kind = info.kind;
  if (obj.apiVersion !== want) {
    // Another served version of the same kind is fine (all versions share storage).
    const [g, v] = obj.apiVersion.includes('/') ? obj.apiVersion.split('/') : ['', obj.apiVersion];
    const other = kube.registry.get(g ?? '', v ?? '', info.resource);
    if (!other || other.group !== info.group || other.kind !== obj.kind) {
      throw badRequest(
        `the API version in the data (${obj.apiVersion}) does not match the expected API version (${want})`,
      );
    }
    obj.apiVersion = want;
  }
  if (obj.kind !== info.kind) {
    throw badRequest(
      `the kind in the data (${obj.kind}) does not match the expected kind (${info.kind})`,
    );
  }
}

/** The namespace rule of BeforeCreate/BeforeUpdate: fill, match, or clear (cluster scope). */
export function reconcileNamespace(
  info: ResourceInfo,
  obj: KubeObject,
  pathNs: string | undefined,
): void {
  const m = obj.metadata;
  if (info.scope === 'Cluster') {
    delete m.namespace;
    return;
  }
  if (m.namespace === undefined || m.namespace === '') m.namespace = pathNs ?? '';
  else if (m.namespace !== pathNs) {
    throw badRequest(
      'the namespace of the provided object does not match the namespace sent on the request',
    );
  }
}

/** The dotted paths of fields the kind does not know (built-ins: top level and metadata). */
export function unknownFields(info: ResourceInfo, obj: KubeObject): string[] {
  const out: string[] = [];
  if (info.schema) out.push(...info.schema.unknownFields(obj));
  else if (info.topLevelFields) {
    for (const k of Object.keys(obj)) if (!info.topLevelFields.includes(k)) out.push(k);
  }
  for (const k of Object.keys(obj.metadata)) if (!KNOWN_METADATA.has(k)) out.push(`metadata.${k}`);
  return [...new Set(out)];
}

function dropUnknown(info: ResourceInfo, obj: KubeObject, fields: string[]): void {
  if (info.schema) info.schema.prune(obj);
  for (const f of fields) {
    if (f.startsWith('metadata.')) delete (obj.metadata as Record<string, unknown>)[f.slice(9)];
    else if (!f.includes('.')) delete obj[f];
  }
}

export function applyFieldValidation(
  info: ResourceInfo,
  obj: KubeObject,
  mode: FieldValidation,
  warnings: string[],
): void {
  const unknown = unknownFields(info, obj);
  if (unknown.length === 0) return;
  if (mode === 'Strict') {
    const list = unknown.map((f) => `unknown field "${f}"`).join(', ');
    throw badRequest(
      `${info.kind} in version "${info.version}" cannot be handled as a ${info.kind}: strict decoding error: ${list}`,
    );
  }
  if (mode === 'Warn') for (const f of unknown) warnings.push(`unknown field "${f}"`);
  dropUnknown(info, obj, unknown);
}

/** The object of a create or update body, checked against the request. */
export function decodeWriteObject(
  kube: Kube,
  rr: ResourceRequest,
  body: Record<string, unknown>,
  mode: FieldValidation,
): KubeObject {
  const obj = asKubeObject(body);
  checkTypeMeta(kube, rr.info, obj);
  reconcileNamespace(rr.info, obj, rr.path.namespace);
  if (rr.path.name !== undefined) {
    const name = obj.metadata.name;
    if (name === undefined || name === '') obj.metadata.name = rr.path.name;
    else if (name !== rr.path.name) {
      throw badRequest(
        `the name of the object (${name}) does not match the name on the URL (${rr.path.name})`,
      );
    }
  }
  applyFieldValidation(rr.info, obj, mode, rr.warnings);
  return obj;
}
