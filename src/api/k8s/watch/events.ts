/**
 * Decoded change events of the Kubernetes face, as one more encoding of the watch cache's
 * window entries: the first Kubernetes reader of an entry (a watcher's encoder, the field
 * index, the face's object cache) decodes each of its events once and caches the result on
 * the entry; every other reader of that entry shares the same objects and the same encoded
 * lines (`lines`, see encode.ts). The cache dies with the entry's encodings.
 */

import { bytesKey, parseKey } from '../../../k8s/keys.js';
import type { KubeObject } from '../../../k8s/types.js';
import type { Event } from '../../../store/types.js';
import type { WindowEntry } from '../../../watchcache/index.js';
import { CachedObject } from './cache.js';

/** One change of one object, decoded once and shared by every watcher that gets it. */
export interface KubeEvent {
  readonly revision: number;
  /** `group/resource`: which ResourceCache and watcher set it belongs to. */
  readonly ref: string;
  readonly key: string;
  readonly namespace: string;
  readonly name: string;
  /** The object after the change (absent for a delete). */
  readonly obj: CachedObject | undefined;
  /** The object before the change (absent for a create). */
  readonly old: CachedObject | undefined;
  /** Encoded lines, by encoding variant (see encode.ts). Dies with the event. */
  readonly lines: Map<string, string>;
  /** `old` with the event's revision, made on first use (what DELETED events carry). */
  deletedView?: CachedObject;
}

export const refOf = (r: { group: string; resource: string }): string => `${r.group}/${r.resource}`;

const decoder = new TextDecoder();

/** Decodes a stored object; undefined for bytes this face did not write (not an object). */
export function decodeValue(value: Uint8Array, rv: number): CachedObject | undefined {
  let obj: unknown;
  try {
    obj = JSON.parse(decoder.decode(value));
  } catch {
    return undefined;
  }
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return undefined;
  const o = obj as KubeObject;
  if (!o.metadata || typeof o.metadata !== 'object' || Array.isArray(o.metadata)) return undefined;
  o.metadata.resourceVersion = String(rv);
  return new CachedObject(o, rv);
}

/** Counts of decoding and encoding work, so tests can show each event is done once. */
export const kubeWatchStats = { decoded: 0, lines: 0 };

/** One store event as a Kubernetes change; null when it is not one (a foreign key or value). */
export function decodeEvent(revision: number, ev: Event): KubeEvent | null {
  kubeWatchStats.decoded++;
  const key = bytesKey(ev.kv.key);
  const parts = parseKey(key);
  if (!parts) return null;
  const obj = ev.type === 'PUT' ? decodeValue(ev.kv.value, revision) : undefined;
  const old = ev.prevKv ? decodeValue(ev.prevKv.value, ev.prevKv.modRevision) : undefined;
  if (!obj && !old) return null;
  return {
    revision,
    ref: refOf(parts),
    key,
    namespace: parts.namespace,
    name: parts.name,
    obj,
    old,
    lines: new Map(),
  };
}

const EVENTS_KEY = 'k8s:events';

/** Event `index` of `entry`, decoded on first use and cached on the entry. */
export function kubeEventAt(entry: WindowEntry, index: number): KubeEvent | null {
  let decoded = entry.encodings.get(EVENTS_KEY) as (KubeEvent | null | undefined)[] | undefined;
  if (decoded === undefined) {
    decoded = new Array(entry.batch.events.length);
    entry.encodings.set(EVENTS_KEY, decoded);
  }
  let e = decoded[index];
  if (e === undefined) {
    e = decodeEvent(entry.batch.revision, entry.batch.events[index]!);
    decoded[index] = e;
  }
  return e;
}
