/**
 * metadata.managedFields: who set which field (apply.ts keeps the field sets). Server-side
 * apply records its Apply entry itself; every other write (create, update, patch) records an
 * Update entry for its manager here, so that a later apply conflicts with it as in Kubernetes.
 * A write that sets managedFields itself (kubectl's ownership migration patch) is taken as
 * given; an update that leaves them out keeps the stored ones.
 */
import { isDeepStrictEqual } from 'node:util';
import { recordUpdate } from './apply.js';
import type { JsonMap } from './json.js';
import { apiVersionOf, type KubeObject, type ResourceInfo } from './types.js';

/** Top-level fields a write through (or around) the status subresource may not set. */
export function resetFieldsOf(info: ResourceInfo, sub: string | undefined): string[] {
  if (sub === 'status') return ['spec'];
  return info.statusSubresource ? ['status'] : [];
}

/** Records an Update entry for `manager` unless the request set managedFields itself. */
export function trackUpdate(
  info: ResourceInfo,
  prev: KubeObject | undefined,
  next: KubeObject,
  manager: string,
  sub: string | undefined,
  nowMs: number,
): KubeObject {
  if (prev && !isDeepStrictEqual(next.metadata.managedFields, prev.metadata.managedFields)) {
    return next;
  }
  return recordUpdate(prev as unknown as JsonMap | undefined, next as unknown as JsonMap, {
    manager,
    apiVersion: apiVersionOf(info),
    schema: info.mergeSchema,
    resetFields: resetFieldsOf(info, sub),
    now: new Date(nowMs),
    ...(sub ? { subresource: sub } : {}),
  }) as unknown as KubeObject;
}
