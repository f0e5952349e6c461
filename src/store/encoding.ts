/**
 * Byte layouts of the store's LevelDB records, all in one place.
 *
 * Sublevels (see store.ts):
 *   kv    user key                          → KV record        (the live version of each key)
 *   hist  esc(user key) ‖ 00 01 ‖ rev(8)    → KV record | ∅    (every version; ∅ = tombstone)
 *   rev   rev(8) ‖ '_' ‖ sub(8)             → change record    (what changed at a revision)
 *   lease id(8)                             → ttl(8)
 *   meta  name                              → number(8)
 *
 * Every integer is an unsigned big-endian 64-bit field holding a safe integer, so that byte
 * order is numeric order. `esc` doubles every 0x00 byte of a user key into 00 FF and the key
 * is closed by 00 01, so that hist keys sort by user key first (a key sorts before every key
 * it is a prefix of) and by revision second.
 */
import { EtceteraError } from '../errors.js';
import type { Bytes, EventType, KeyValue, LeaseId, Revision } from './types.js';

const TWO_32 = 2 ** 32;
const SEPARATOR = 0x5f; // '_'

// Byte by byte rather than through a DataView: this runs several times per key written, and
// a DataView per call is an allocation per call.
export function writeU64(buf: Uint8Array, offset: number, n: number): void {
  const hi = Math.floor(n / TWO_32);
  const lo = n >>> 0;
  buf[offset] = hi >>> 24;
  buf[offset + 1] = (hi >>> 16) & 0xff;
  buf[offset + 2] = (hi >>> 8) & 0xff;
  buf[offset + 3] = hi & 0xff;
  buf[offset + 4] = lo >>> 24;
  buf[offset + 5] = (lo >>> 16) & 0xff;
  buf[offset + 6] = (lo >>> 8) & 0xff;
  buf[offset + 7] = lo & 0xff;
}

export function readU64(buf: Uint8Array, offset: number): number {
  const hi =
    ((buf[offset] as number) << 24) |
    ((buf[offset + 1] as number) << 16) |
    ((buf[offset + 2] as number) << 8) |
    (buf[offset + 3] as number);
  const lo =
    ((buf[offset + 4] as number) << 24) |
    ((buf[offset + 5] as number) << 16) |
    ((buf[offset + 6] as number) << 8) |
    (buf[offset + 7] as number);
  return (hi >>> 0) * TWO_32 + (lo >>> 0);
}

export function u64(n: number): Uint8Array {
  const b = new Uint8Array(8);
  writeU64(b, 0, n);
  return b;
}

// --- revision keys (rev sublevel) -------------------------------------------------------

export const REV_KEY_LENGTH = 17;

export function encodeRevKey(main: number, sub: number): Uint8Array {
  const b = new Uint8Array(REV_KEY_LENGTH);
  writeU64(b, 0, main);
  b[8] = SEPARATOR;
  writeU64(b, 9, sub);
  return b;
}

export function decodeRevKey(b: Uint8Array): { main: Revision; sub: number } {
  if (b.length !== REV_KEY_LENGTH || b[8] !== SEPARATOR) {
    throw new EtceteraError('ERR_CORRUPT', { detail: `bad revision key of ${b.length} bytes` });
  }
  return { main: readU64(b, 0) as Revision, sub: readU64(b, 9) };
}

// --- history keys (hist sublevel) -------------------------------------------------------

/** Order-preserving escape of a user key, closed by the 00 01 terminator. */
export function escapeKey(key: Bytes): Uint8Array {
  let zeros = 0;
  for (const byte of key) if (byte === 0) zeros++;
  const out = new Uint8Array(key.length + zeros + 2);
  let j = 0;
  for (const byte of key) {
    out[j++] = byte;
    if (byte === 0) out[j++] = 0xff;
  }
  out[j++] = 0;
  out[j] = 1;
  return out;
}

/** The escaped form of a range bound (no terminator): every hist key of a user key >= bound sorts >= it. */
export function escapeBound(key: Bytes): Uint8Array {
  const full = escapeKey(key);
  return full.subarray(0, full.length - 2);
}

export function encodeHistKey(key: Bytes, rev: number): Uint8Array {
  const esc = escapeKey(key);
  const b = new Uint8Array(esc.length + 8);
  b.set(esc, 0);
  writeU64(b, esc.length, rev);
  return b;
}

export function decodeHistKey(b: Uint8Array): { key: Uint8Array; rev: Revision } {
  const out: number[] = [];
  let i = 0;
  for (;;) {
    if (i + 1 >= b.length) throw new EtceteraError('ERR_CORRUPT', { detail: 'bad history key' });
    const byte = b[i] as number;
    if (byte !== 0) {
      out.push(byte);
      i++;
      continue;
    }
    const next = b[i + 1];
    if (next === 0xff) {
      out.push(0);
      i += 2;
      continue;
    }
    if (next !== 1 || b.length !== i + 2 + 8) {
      throw new EtceteraError('ERR_CORRUPT', { detail: 'bad history key terminator' });
    }
    return { key: Uint8Array.from(out), rev: readU64(b, i + 2) as Revision };
  }
}

/** The escaped user-key part of a hist key (terminator included), for grouping by key. */
export function histKeyPrefix(b: Uint8Array): Uint8Array {
  return b.subarray(0, b.length - 8);
}

// --- KV records (kv and hist sublevels) --------------------------------------------------

const KV_HEADER = 32;

export function encodeKv(kv: KeyValue): Uint8Array {
  const b = new Uint8Array(KV_HEADER + kv.value.length);
  writeU64(b, 0, kv.createRevision);
  writeU64(b, 8, kv.modRevision);
  writeU64(b, 16, kv.version);
  writeU64(b, 24, kv.lease);
  b.set(kv.value, KV_HEADER);
  return b;
}

export function decodeKv(key: Bytes, b: Uint8Array): KeyValue {
  if (b.length < KV_HEADER) throw new EtceteraError('ERR_CORRUPT', { detail: 'short KV record' });
  return {
    key,
    createRevision: readU64(b, 0) as Revision,
    modRevision: readU64(b, 8) as Revision,
    version: readU64(b, 16),
    lease: readU64(b, 24) as LeaseId,
    // Copy: level may reuse or pool the record's buffer.
    value: b.slice(KV_HEADER),
  };
}

/** The metadata of a KV record without copying its value (for rebuilding the index). */
export function decodeKvMeta(b: Uint8Array): {
  createRevision: Revision;
  modRevision: Revision;
  version: number;
  lease: LeaseId;
} {
  if (b.length < KV_HEADER) throw new EtceteraError('ERR_CORRUPT', { detail: 'short KV record' });
  return {
    createRevision: readU64(b, 0) as Revision,
    modRevision: readU64(b, 8) as Revision,
    version: readU64(b, 16),
    lease: readU64(b, 24) as LeaseId,
  };
}

/** A hist record of length 0 marks a deletion. */
export const TOMBSTONE = new Uint8Array(0);

// --- change records (rev sublevel) -------------------------------------------------------

/**
 * What changed at one (revision, sub-revision). A PUT carries its whole KV record, so that
 * replaying history never depends on hist (which keeps one record per key and revision:
 * the key's state at the end of that revision, and a txn may put a key and then delete it).
 */
export interface ChangeRecord {
  type: EventType;
  /** The key's modRevision before the change's txn (0: it did not exist). */
  prevMod: number;
  key: Uint8Array;
  /** For PUT: the KV record written. */
  record?: Uint8Array;
}

export function encodeChange(c: ChangeRecord): Uint8Array {
  const record = c.record ?? TOMBSTONE;
  const b = new Uint8Array(13 + c.key.length + record.length);
  b[0] = c.type === 'PUT' ? 0 : 1;
  writeU64(b, 1, c.prevMod);
  writeU32(b, 9, c.key.length);
  b.set(c.key, 13);
  b.set(record, 13 + c.key.length);
  return b;
}

export function decodeChange(b: Uint8Array): ChangeRecord {
  const keyLength = b.length >= 13 ? readU32(b, 9) : -1;
  if (keyLength < 1 || 13 + keyLength > b.length || (b[0] !== 0 && b[0] !== 1)) {
    throw new EtceteraError('ERR_CORRUPT', { detail: 'bad change record' });
  }
  const key = b.slice(13, 13 + keyLength);
  const prevMod = readU64(b, 1);
  if (b[0] === 1) return { type: 'DELETE', prevMod, key };
  return { type: 'PUT', prevMod, key, record: b.subarray(13 + keyLength) };
}

function writeU32(buf: Uint8Array, offset: number, n: number): void {
  buf[offset] = n >>> 24;
  buf[offset + 1] = (n >>> 16) & 0xff;
  buf[offset + 2] = (n >>> 8) & 0xff;
  buf[offset + 3] = n & 0xff;
}

function readU32(buf: Uint8Array, offset: number): number {
  return (
    (((buf[offset] as number) << 24) |
      ((buf[offset + 1] as number) << 16) |
      ((buf[offset + 2] as number) << 8) |
      (buf[offset + 3] as number)) >>>
    0
  );
}
