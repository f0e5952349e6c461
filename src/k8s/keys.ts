/**
 * Where objects live in the keyspace:
 *
 *   /registry/<group>/<resource>/<namespace>/<name>   namespaced kinds
 *   /registry/<group>/<resource>/<name>               cluster-scoped kinds
 *
 * `<group>` is `core` for the core group. Names and namespaces are validated DNS-1123 names,
 * so they never contain `/` and a key splits back into its parts unambiguously. Every
 * version of a resource (CRDs may serve several) shares one key: the stored object carries
 * the apiVersion it was written with, and reads set the requested one.
 */
import { bytesToUtf8, prefixEnd, utf8ToBytes } from '../wire/bytes.js';
import { storageGroup } from './types.js';

export const REGISTRY_PREFIX = '/registry/';

export interface ResourceRef {
  group: string;
  resource: string;
}

export interface KeyParts extends ResourceRef {
  /** '' for cluster-scoped objects. */
  namespace: string;
  name: string;
}

export function resourcePrefix(r: ResourceRef): string {
  return `${REGISTRY_PREFIX}${storageGroup(r.group)}/${r.resource}/`;
}

/** The prefix of a collection: every object of the resource, or of one namespace. */
export function collectionPrefix(r: ResourceRef, namespace?: string): string {
  return namespace ? `${resourcePrefix(r)}${namespace}/` : resourcePrefix(r);
}

export function objectKey(r: ResourceRef, namespace: string, name: string): string {
  return namespace ? `${resourcePrefix(r)}${namespace}/${name}` : `${resourcePrefix(r)}${name}`;
}

/** The parts of a key written by this face, or undefined for any other key. */
export function parseKey(key: string): KeyParts | undefined {
  if (!key.startsWith(REGISTRY_PREFIX)) return undefined;
  const parts = key.slice(REGISTRY_PREFIX.length).split('/');
  if (parts.length < 3 || parts.length > 4 || parts.some((p) => p === '')) return undefined;
  const group = parts[0] === 'core' ? '' : (parts[0] as string);
  const resource = parts[1] as string;
  if (parts.length === 3) return { group, resource, namespace: '', name: parts[2] as string };
  return { group, resource, namespace: parts[2] as string, name: parts[3] as string };
}

/**
 * Keys this face writes are UTF-8 text (names are DNS-1123, paths ASCII): `utf8ToBytes` and
 * `bytesToUtf8` of src/wire/bytes.ts, re-exported under the names the watch code imports.
 */
export { bytesToUtf8 as bytesKey, utf8ToBytes as keyBytes };

/** The end of the interval of every key starting with `prefix` (etcd's prefix range_end). */
export function prefixEndBytes(prefix: string): Uint8Array {
  return prefixEnd(utf8ToBytes(prefix));
}
