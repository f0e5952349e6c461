/**
 * etcd's reading of a (key, range_end) pair, in one place.
 *
 *   range_end absent or empty → the single key `key`
 *   range_end = "\0"          → every key >= key
 *   otherwise                 → [key, range_end); empty when range_end <= key
 */
import { bytesToLatin1 } from '../wire/bytes.js';
import type { Bytes } from './types.js';

export type Interval =
  | { kind: 'single'; key: Bytes }
  | { kind: 'range'; start: Bytes; end: Bytes | undefined };

export function toInterval(key: Bytes, rangeEnd: Bytes | undefined): Interval {
  if (rangeEnd === undefined || rangeEnd.length === 0) return { kind: 'single', key };
  if (rangeEnd.length === 1 && rangeEnd[0] === 0)
    return { kind: 'range', start: key, end: undefined };
  return { kind: 'range', start: key, end: rangeEnd };
}

/** The interval as latin1 strings: [start, end), end undefined = unbounded. */
export function intervalStrings(iv: Interval): {
  start: string;
  end: string | undefined;
  single: boolean;
} {
  if (iv.kind === 'single') return { start: bytesToLatin1(iv.key), end: undefined, single: true };
  return { start: bytesToLatin1(iv.start), end: iv.end && bytesToLatin1(iv.end), single: false };
}

export function intervalContains(iv: Interval, key: Bytes): boolean {
  if (iv.kind === 'single') return Buffer.compare(iv.key, key) === 0;
  if (Buffer.compare(key, iv.start) < 0) return false;
  return iv.end === undefined || Buffer.compare(key, iv.end) < 0;
}
