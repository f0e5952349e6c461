/**
 * Helpers for writes that race: `retryOnConflict` runs a read-modify-write until it does
 * not end in 409 Conflict (client-go's RetryOnConflict), `ignoreNotFound` turns a 404 into
 * undefined, and `ownerReference` / `controllerOf` build and read the controller reference.
 */
import { isKubeApiError } from './errors.js';
import type { KubeObject } from './types.js';

export async function retryOnConflict<R>(fn: () => Promise<R>, attempts = 5): Promise<R> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (i >= attempts || !isKubeApiError(e, 409)) throw e;
      await new Promise((r) => setTimeout(r, Math.min(200, 5 * 2 ** i)));
    }
  }
}

export async function ignoreNotFound<R>(p: Promise<R>): Promise<R | undefined> {
  try {
    return await p;
  } catch (e) {
    if (isKubeApiError(e, 404)) return undefined;
    throw e;
  }
}

export type OwnerReference = {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
};

/** The controller reference to `owner` a dependant carries. */
export function ownerReference(
  owner: KubeObject,
  apiVersion: string,
  kind: string,
): OwnerReference {
  return {
    apiVersion,
    kind,
    name: owner.metadata.name ?? '',
    uid: owner.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

export function ownerReferences(obj: KubeObject): OwnerReference[] {
  return (obj.metadata.ownerReferences ?? []) as unknown as OwnerReference[];
}

/** The reference with controller=true, if any. */
export function controllerOf(obj: KubeObject): OwnerReference | undefined {
  return ownerReferences(obj).find((r) => r.controller === true);
}
