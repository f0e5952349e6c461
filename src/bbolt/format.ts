/**
 * bbolt's on-disk layout (the database format of go.etcd.io/bbolt, version 2), as the writer
 * and the reader of this folder share it. All integers are little-endian.
 *
 * Page: a 16-byte header, then its body; a page whose body does not fit spans `overflow`
 * more pages right after it.
 *   id u64 ‖ flags u16 ‖ count u16 ‖ overflow u32
 * Meta page (pages 0 and 1; the valid one with the higher txid wins), body:
 *   magic u32 ‖ version u32 ‖ pageSize u32 ‖ flags u32 ‖ root bucket (root u64, sequence u64)
 *   ‖ freelist pgid u64 ‖ high-water pgid u64 ‖ txid u64 ‖ checksum u64
 *   (checksum: FNV-64a of the 56 bytes before it)
 * Freelist page: `count` pgids of free pages (u64 each; count 0xFFFF: the first u64 is the
 * real count).
 * Branch page: `count` elements (pos u32, ksize u32, pgid u64), each the first key of a child.
 * Leaf page: `count` elements (flags u32, pos u32, ksize u32, vsize u32). In both, `pos` is
 * the distance from the element's own start to its key; the value follows the key.
 * A leaf element with flag 0x01 is a nested bucket: its value is a bucket header (root u64,
 * sequence u64); root 0 means the bucket is inline: its leaf page follows the header inside
 * the value.
 * Keys are sorted byte-wise within each bucket.
 */

export const MAGIC = 0xed0cdaed;
export const VERSION = 2;
export const DEFAULT_PAGE_SIZE = 4096;
export const PAGE_HEADER = 16;
export const ELEMENT = 16;
export const META_SIZE = 64;
export const BUCKET_HEADER = 16;
export const BRANCH_PAGE = 0x01;
export const LEAF_PAGE = 0x02;
export const META_PAGE = 0x04;
export const FREELIST_PAGE = 0x10;
export const BUCKET_LEAF = 0x01;
/** bbolt's limits on keys and values. */
export const MAX_KEY_SIZE = 32768;
export const MAX_VALUE_SIZE = 2 ** 31 - 2;

export interface Meta {
  pageSize: number;
  flags: number;
  root: number;
  sequence: bigint;
  freelist: number;
  /** The high-water mark: the number of pages the database uses. */
  highWater: number;
  txid: bigint;
}

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK64 = (1n << 64n) - 1n;

/** FNV-1a, 64 bits, as Go's hash/fnv New64a. */
export function fnv64a(bytes: Uint8Array): bigint {
  let h = FNV_OFFSET;
  for (const b of bytes) h = ((h ^ BigInt(b)) * FNV_PRIME) & MASK64;
  return h;
}

export function writePageHeader(
  page: Buffer,
  id: number,
  flags: number,
  count: number,
  overflow: number,
): void {
  page.writeBigUInt64LE(BigInt(id), 0);
  page.writeUInt16LE(flags, 8);
  page.writeUInt16LE(count, 10);
  page.writeUInt32LE(overflow, 12);
}

/** A meta page (`pgid` 0 or 1) for `meta`, checksum included. */
export function encodeMetaPage(pgid: number, meta: Meta): Buffer {
  const page = Buffer.alloc(meta.pageSize);
  writePageHeader(page, pgid, META_PAGE, 0, 0);
  const m = page.subarray(PAGE_HEADER, PAGE_HEADER + META_SIZE);
  m.writeUInt32LE(MAGIC, 0);
  m.writeUInt32LE(VERSION, 4);
  m.writeUInt32LE(meta.pageSize, 8);
  m.writeUInt32LE(meta.flags, 12);
  m.writeBigUInt64LE(BigInt(meta.root), 16);
  m.writeBigUInt64LE(meta.sequence, 24);
  m.writeBigUInt64LE(BigInt(meta.freelist), 32);
  m.writeBigUInt64LE(BigInt(meta.highWater), 40);
  m.writeBigUInt64LE(meta.txid, 48);
  m.writeBigUInt64LE(fnv64a(m.subarray(0, 56)), 56);
  return page;
}

export type MetaCheck =
  | { ok: true; meta: Meta }
  | { ok: false; reason: 'short' | 'magic' | 'version' | 'checksum' };

/** Decodes and checks the meta page whose body starts at `at` in `buf`. */
export function decodeMeta(buf: Uint8Array, at: number): MetaCheck {
  if (at + META_SIZE > buf.length) return { ok: false, reason: 'short' };
  const m = Buffer.from(buf.buffer, buf.byteOffset + at, META_SIZE);
  if (m.readUInt32LE(0) !== MAGIC) return { ok: false, reason: 'magic' };
  if (m.readUInt32LE(4) !== VERSION) return { ok: false, reason: 'version' };
  if (m.readBigUInt64LE(56) !== fnv64a(m.subarray(0, 56))) return { ok: false, reason: 'checksum' };
  return {
    ok: true,
    meta: {
      pageSize: m.readUInt32LE(8),
      flags: m.readUInt32LE(12),
      root: Number(m.readBigUInt64LE(16)),
      sequence: m.readBigUInt64LE(24),
      freelist: Number(m.readBigUInt64LE(32)),
      highWater: Number(m.readBigUInt64LE(40)),
      txid: m.readBigUInt64LE(48),
    },
  };
}

/** An empty freelist page. */
export function encodeFreelistPage(pgid: number, pageSize: number): Buffer {
  const page = Buffer.alloc(pageSize);
  writePageHeader(page, pgid, FREELIST_PAGE, 0, 0);
  return page;
}
