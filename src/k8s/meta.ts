/**
 * Object metadata across an object's life: what the server sets on create (uid,
 * creationTimestamp, generation), what an update may not change, when generation grows,
 * and the stored form (resourceVersion is never stored: it is the key's mod_revision).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { KeyValue } from '../store/types.js';
import { badRequest } from './status.js';
import { apiVersionOf, type KubeObject, type ResourceInfo } from './types.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The stored bytes of an object: JSON without resourceVersion. */
export function encodeStored(obj: KubeObject): Uint8Array {
  const { resourceVersion: _rv, ...meta } = obj.metadata;
  return encoder.encode(JSON.stringify({ ...obj, metadata: meta }));
}

/** The object of a stored key-value, with resourceVersion = its mod revision. */
export function decodeStored(kv: KeyValue, rv: number = kv.modRevision): KubeObject {
  const obj = JSON.parse(decoder.decode(kv.value)) as KubeObject;
  obj.metadata.resourceVersion = String(rv);
  return obj;
}

/** Sets apiVersion and kind for the version a request addressed (all versions share storage). */
export function asVersion(obj: KubeObject, info: ResourceInfo): KubeObject {
  obj.apiVersion = apiVersionOf(info);
  obj.kind = info.kind;
  return obj;
}

/** RFC 3339 UTC with whole seconds, as Kubernetes writes timestamps. */
export function timestamp(ms: number): string {
  return `${new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19)}Z`;
}

const NAME_SUFFIX_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** generateName: the prefix (cut to leave room) and five random characters. */
export function generatedName(prefix: string): string {
  const bytes = randomBytes(5);
  let suffix = '';
  for (const b of bytes) suffix += NAME_SUFFIX_ALPHABET[b % NAME_SUFFIX_ALPHABET.length];
  return `${prefix.slice(0, 63 - 5)}${suffix}`;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

function checkStringMap(meta: Record<string, unknown>, field: string): void {
  const v = meta[field];
  if (v === undefined || v === null) {
    delete meta[field];
    return;
  }
  if (!isRecord(v) || Object.values(v).some((x) => typeof x !== 'string')) {
    throw badRequest(`metadata.${field} must be a map of string keys to string values`);
  }
}

/**
 * Checks the shape of a body's apiVersion, kind and metadata (types only; names and values are
 * validated later with causes) and returns it as a KubeObject.
 */
export function asKubeObject(body: Record<string, unknown>): KubeObject {
  if (body.apiVersion !== undefined && typeof body.apiVersion !== 'string') {
    throw badRequest('apiVersion must be a string');
  }
  if (body.kind !== undefined && typeof body.kind !== 'string') {
    throw badRequest('kind must be a string');
  }
  if (body.metadata === undefined || body.metadata === null) body.metadata = {};
  const meta = body.metadata;
  if (!isRecord(meta)) throw badRequest('metadata must be an object');
  for (const f of ['name', 'generateName', 'namespace', 'uid', 'resourceVersion'] as const) {
    if (meta[f] === null) delete meta[f];
    if (meta[f] !== undefined && typeof meta[f] !== 'string') {
      throw badRequest(`metadata.${f} must be a string`);
    }
  }
  checkStringMap(meta, 'labels');
  checkStringMap(meta, 'annotations');
  if (meta.finalizers === null) delete meta.finalizers;
  if (
    meta.finalizers !== undefined &&
    (!Array.isArray(meta.finalizers) || meta.finalizers.some((f) => typeof f !== 'string'))
  ) {
    throw badRequest('metadata.finalizers must be a list of strings');
  }
  if (meta.generation !== undefined && typeof meta.generation !== 'number') delete meta.generation;
  return body as KubeObject;
}

/** What the server owns in metadata on create. */
export function prepareCreate(info: ResourceInfo, obj: KubeObject, nowMs: number): void {
  const m = obj.metadata;
  m.uid = randomUUID();
  m.creationTimestamp = timestamp(nowMs);
  delete m.resourceVersion;
  delete m.deletionTimestamp;
  delete m.deletionGracePeriodSeconds;
  delete m.managedFields;
  if (info.generation) m.generation = 1;
  else delete m.generation;
  if (info.scope === 'Cluster') delete m.namespace;
  if (info.statusSubresource && info.resource !== 'customresourcedefinitions') {
    delete obj.status;
    if (info.group === '' && info.resource === 'pods') obj.status = { phase: 'Pending' };
    if (info.group === '' && info.resource === 'namespaces') obj.status = { phase: 'Active' };
  }
  if (info.group === '' && info.resource === 'namespaces' && m.name) {
    // Kubernetes labels every namespace with its own name (for namespace selectors).
    m.labels = { ...m.labels, 'kubernetes.io/metadata.name': m.name };
    // ...and gives it the `kubernetes` finalizer of its content cleanup.
    const spec =
      obj.spec && typeof obj.spec === 'object' ? (obj.spec as Record<string, unknown>) : {};
    const finalizers = Array.isArray(spec.finalizers) ? spec.finalizers : [];
    obj.spec = {
      ...spec,
      finalizers: finalizers.includes('kubernetes') ? finalizers : [...finalizers, 'kubernetes'],
    };
  }
}

/** The fields whose change bumps generation: everything but metadata and status. */
function specPart(obj: KubeObject): Record<string, unknown> {
  const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = obj;
  return rest;
}

/**
 * Carries what an update may not change from the old object to the new one, keeps status
 * (main resource) or everything but status (status subresource), and bumps generation.
 */
export function prepareUpdate(
  info: ResourceInfo,
  obj: KubeObject,
  old: KubeObject,
  subresource: 'status' | undefined,
): KubeObject {
  let next: KubeObject = obj;
  if (subresource === 'status') {
    next = { ...old, metadata: { ...old.metadata } };
    if (obj.status === undefined) delete next.status;
    else next.status = obj.status;
  } else if (info.statusSubresource) {
    if (old.status === undefined) delete next.status;
    else next.status = old.status;
  }
  const m = next.metadata;
  const o = old.metadata;
  m.uid = o.uid as string;
  m.creationTimestamp = o.creationTimestamp as string;
  if (info.scope === 'Namespaced') m.namespace = o.namespace as string;
  else delete m.namespace;
  m.name = o.name as string;
  delete m.generateName;
  if (o.generateName !== undefined) m.generateName = o.generateName;
  if (o.deletionTimestamp !== undefined) m.deletionTimestamp = o.deletionTimestamp;
  else delete m.deletionTimestamp;
  if (o.deletionGracePeriodSeconds !== undefined) {
    m.deletionGracePeriodSeconds = o.deletionGracePeriodSeconds;
  } else delete m.deletionGracePeriodSeconds;
  // Left out, managedFields stay as stored; given (even []), the request's are used.
  if (m.managedFields === undefined && o.managedFields !== undefined) {
    m.managedFields = o.managedFields;
  }
  if (info.generation) {
    const gen = o.generation ?? 1;
    m.generation = isDeepStrictEqual(specPart(next), specPart(old)) ? gen : gen + 1;
  } else delete m.generation;
  return next;
}

/** True when two objects would be stored the same (a no-op update writes nothing). */
export function sameStored(a: KubeObject, b: KubeObject): boolean {
  const strip = (o: KubeObject) => ({
    ...o,
    metadata: { ...o.metadata, resourceVersion: undefined },
  });
  return isDeepStrictEqual(strip(a), strip(b));
}
