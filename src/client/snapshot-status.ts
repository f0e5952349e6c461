/**
 * `snapshot status` of a snapshot file saved from etcd: etcd's snapshot is its bbolt
 * database (plus the SHA-256 trailer), and etcdctl reports the CRC-32C (Castagnoli) of every
 * bucket name, key and value in key order, the revision of the last key in the "key" bucket,
 * the number of keys and the database size. This reads the bbolt file format (meta pages,
 * branch and leaf pages, inline buckets) just far enough to walk those, read-only, with
 * every offset checked, so a file that is not a bbolt database gets etcd's "invalid
 * database" rather than nonsense. etcetera's own snapshots are not bbolt files.
 */
import { readFile } from 'node:fs/promises';
import { crc32c } from '@node-rs/crc32';
import { EtceteraError } from '../errors.js';

export interface SnapshotStatus {
  hash: number;
  revision: number;
  totalKey: number;
  totalSize: number;
}

const MAGIC = 0xed0cdaed;
const VERSION = 2;
const HEADER = 16; // page id u64, flags u16, count u16, overflow u32
const ELEMENT = 16; // branch: pos, ksize, pgid; leaf: flags, pos, ksize, vsize
const BRANCH_PAGE = 0x01;
const LEAF_PAGE = 0x02;
const BUCKET_LEAF = 0x01;
const MAX_DEPTH = 64;

function invalid(detail: string): EtceteraError {
  return new EtceteraError('ERR_SNAPSHOT_INTEGRITY', { detail: `invalid database (${detail})` });
}

interface Meta {
  pageSize: number;
  root: bigint;
  highWater: bigint;
  txid: bigint;
}

function readMeta(buf: Buffer, off: number): Meta | undefined {
  const at = off + HEADER;
  if (at + 64 > buf.length) return undefined;
  if (buf.readUInt32LE(at) !== MAGIC || buf.readUInt32LE(at + 4) !== VERSION) return undefined;
  return {
    pageSize: buf.readUInt32LE(at + 8),
    root: buf.readBigUInt64LE(at + 16),
    highWater: buf.readBigUInt64LE(at + 40),
    txid: buf.readBigUInt64LE(at + 48),
  };
}

type Visit = (key: Buffer, value: Buffer, flags: number) => void;

class Db {
  /** Pages walked so far: in a sound tree each appears once (a damaged one may loop). */
  private readonly seen = new Set<bigint>();

  constructor(
    private readonly buf: Buffer,
    private readonly pageSize: number,
  ) {}

  /** Every leaf element under page `pgid`, in key order. */
  walk(pgid: bigint, visit: Visit, depth = 0): void {
    if (this.seen.has(pgid)) throw invalid(`page ${pgid} reached twice`);
    this.seen.add(pgid);
    const off = Number(pgid) * this.pageSize;
    if (!Number.isSafeInteger(off) || off + HEADER > this.buf.length)
      throw invalid('page out of range');
    this.walkPage(this.buf, off, visit, depth);
  }

  /** The page whose header is at `off` in `buf` (the file, or an inline bucket's value). */
  walkPage(buf: Buffer, off: number, visit: Visit, depth: number): void {
    if (depth > MAX_DEPTH) throw invalid('tree too deep');
    const flags = buf.readUInt16LE(off + 8);
    const count = buf.readUInt16LE(off + 10);
    if (off + HEADER + count * ELEMENT > buf.length) throw invalid('page elements out of range');
    for (let i = 0; i < count; i++) {
      const e = off + HEADER + i * ELEMENT;
      if (flags & BRANCH_PAGE) {
        this.walk(buf.readBigUInt64LE(e + 8), visit, depth + 1);
      } else if (flags & LEAF_PAGE) {
        const pos = e + buf.readUInt32LE(e + 4);
        const ksize = buf.readUInt32LE(e + 8);
        const vsize = buf.readUInt32LE(e + 12);
        if (pos + ksize + vsize > buf.length) throw invalid('leaf element out of range');
        visit(
          buf.subarray(pos, pos + ksize),
          buf.subarray(pos + ksize, pos + ksize + vsize),
          buf.readUInt32LE(e),
        );
      } else {
        throw invalid(`unexpected page flags ${flags}`);
      }
    }
  }

  /** Every key and value of the bucket whose header is `value`. */
  bucket(value: Buffer, visit: Visit): void {
    if (value.length < 16) throw invalid('short bucket header');
    const root = value.readBigUInt64LE(0);
    if (root === 0n) {
      if (value.length < 16 + HEADER) throw invalid('short inline bucket');
      this.walkPage(value, 16, visit, 0);
    } else {
      this.walk(root, visit);
    }
  }
}

/** The status of the etcd snapshot (bbolt database) in `file`. */
export async function snapshotStatus(file: string): Promise<SnapshotStatus> {
  const buf = await readFile(file);
  const first = readMeta(buf, 0);
  if (!first || first.pageSize < 512 || first.pageSize > 1 << 20) throw invalid('no meta page');
  const second = readMeta(buf, first.pageSize);
  const meta = second && second.txid > first.txid ? second : first;
  const db = new Db(buf, meta.pageSize);
  let crc = 0;
  let revision = 0;
  let totalKey = 0;
  db.walk(meta.root, (name, header, flags) => {
    if (!(flags & BUCKET_LEAF)) throw invalid('a key outside any bucket');
    crc = crc32c(name, crc);
    const isKey = name.toString('latin1') === 'key';
    db.bucket(header, (k, v) => {
      crc = crc32c(v, crc32c(k, crc));
      // etcd's "key" bucket is keyed by revision: 8 bytes of main revision, big-endian.
      if (isKey && k.length >= 8) revision = Number(k.readBigUInt64BE(0));
      totalKey++;
    });
  });
  return {
    hash: crc >>> 0,
    revision,
    totalKey,
    totalSize: Number(meta.highWater) * meta.pageSize,
  };
}
