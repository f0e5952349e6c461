/**
 * Keys as the index sees them. A key's bytes become a latin1 string (`bytesToLatin1`, one
 * UTF-16 code unit per byte), so Map lookups hash natively and `<` on two such strings is
 * exactly byte order.
 */

import { EtceteraError } from '../errors.js';
import type { Bytes } from '../store/types.js';
import { bytesToLatin1, latin1ToBytes, prefixEnd, utf8ToBytes } from '../wire/bytes.js';

/** A string argument is UTF-8 text; bytes are taken as they are. */
export function toBytes(v: Bytes | string): Bytes {
  return typeof v === 'string' ? utf8ToBytes(v) : v;
}

/**
 * A watch range in the index's form.
 * - `key`: exactly one key.
 * - `prefix`: every key starting with `prefix` ('' is every key).
 * - `interval`: start <= key < end; `end` null means no upper bound.
 */
export type KeyRangeKind =
  | { readonly kind: 'key'; readonly key: string }
  | { readonly kind: 'prefix'; readonly prefix: string }
  | { readonly kind: 'interval'; readonly start: string; readonly end: string | null };

/**
 * Normalises etcd's (key, range_end) pair. Empty key means [0] (the smallest key). Throws
 * ERR_WATCH_RANGE_EMPTY when the range is empty (range_end <= key).
 */
export function normalizeRange(keyIn: Bytes, rangeEndIn: Bytes | undefined): KeyRangeKind {
  const keyB = keyIn.length === 0 ? Uint8Array.of(0) : keyIn;
  const key = bytesToLatin1(keyB);
  if (rangeEndIn === undefined || rangeEndIn.length === 0) return { kind: 'key', key };
  if (rangeEndIn.length === 1 && rangeEndIn[0] === 0) {
    // every key >= key; from the smallest key that is every key, a prefix of ''.
    return key === '\u0000'
      ? { kind: 'prefix', prefix: '' }
      : { kind: 'interval', start: key, end: null };
  }
  const end = bytesToLatin1(rangeEndIn);
  if (end <= key) {
    throw new EtceteraError('ERR_WATCH_RANGE_EMPTY');
  }
  if (end === bytesToLatin1(prefixEnd(keyB))) return { kind: 'prefix', prefix: key };
  return { kind: 'interval', start: key, end };
}

/** Whether `range` contains `key` (both in index form). */
export function rangeContains(range: KeyRangeKind, key: string): boolean {
  switch (range.kind) {
    case 'key':
      return key === range.key;
    case 'prefix':
      return key.startsWith(range.prefix);
    case 'interval':
      return key >= range.start && (range.end === null || key < range.end);
  }
}

/** The range back in etcd's (key, rangeEnd) form, for store.history and store.range. */
export function rangeToRequest(range: KeyRangeKind): { key: Bytes; rangeEnd?: Bytes } {
  switch (range.kind) {
    case 'key':
      return { key: latin1ToBytes(range.key) };
    case 'prefix':
      return range.prefix === ''
        ? { key: Uint8Array.of(0), rangeEnd: Uint8Array.of(0) }
        : { key: latin1ToBytes(range.prefix), rangeEnd: prefixEnd(latin1ToBytes(range.prefix)) };
    case 'interval':
      return {
        key: latin1ToBytes(range.start),
        rangeEnd: range.end === null ? Uint8Array.of(0) : latin1ToBytes(range.end),
      };
  }
}
