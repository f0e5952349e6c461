/**
 * Reading a bbolt database file (format.ts has the layout), read-only, page by page through
 * a file handle, so a database larger than memory can be walked.
 *
 * Everything is checked before it is used: the meta pages' magic, version and checksum (the
 * valid one with the higher txid wins, as bbolt chooses), that every page id is below the
 * high-water mark and inside the file, that a page carries its own id and the expected type,
 * that every element lies inside its page, that the tree is at most 64 levels deep, and that
 * keys come out strictly increasing in each bucket (which also catches a page reached
 * twice). Any fault is ERR_BOLT_CORRUPT naming what was wrong; a file cut short is
 * ERR_BOLT_TRUNCATED.
 *
 * A file saved from etcd's snapshot stream ends with the stream's 32-byte SHA-256 trailer:
 * `trailer` (see {@link openBolt}) says whether to expect, check and skip it.
 */
import { createHash } from 'node:crypto';
import { type FileHandle, open } from 'node:fs/promises';
import { EtceteraError } from '../errors.js';
import {
  BRANCH_PAGE,
  BUCKET_HEADER,
  BUCKET_LEAF,
  decodeMeta,
  ELEMENT,
  LEAF_PAGE,
  type Meta,
  PAGE_HEADER,
} from './format.js';

const MAX_DEPTH = 64;
export const TRAILER = 32;

/** A bucket to read: its root page, or an inline bucket's page bytes. */
export type BucketRef =
  | { readonly kind: 'pages'; readonly root: number }
  | { readonly kind: 'inline'; readonly page: Buffer };

/** One element of a bucket, in key order. */
export type BoltEntry =
  | { readonly key: Buffer; readonly value: Buffer; readonly bucket?: undefined }
  | { readonly key: Buffer; readonly bucket: BucketRef; readonly value?: undefined };

function corrupt(detail: string): EtceteraError {
  return new EtceteraError('ERR_BOLT_CORRUPT', { detail });
}

export interface OpenOptions {
  /**
   * 'auto' (default): a file whose size is 32 bytes past a multiple of 512 carries the
   * trailer, as etcdctl decides; 'yes': it must; 'no': the whole file is the database.
   */
  trailer?: 'auto' | 'yes' | 'no';
}

export class BoltReader {
  private constructor(
    private readonly fh: FileHandle,
    /** Bytes of the database (the file without its trailer). */
    readonly size: number,
    readonly meta: Meta,
    /** Whether the file carried a SHA-256 trailer (checked at open). */
    readonly hadTrailer: boolean,
  ) {}

  static async open(file: string, options: OpenOptions = {}): Promise<BoltReader> {
    const fh = await open(file, 'r');
    try {
      const fileSize = (await fh.stat()).size;
      const mode = options.trailer ?? 'auto';
      const hasTrailer = mode === 'yes' || (mode === 'auto' && fileSize % 512 === TRAILER);
      if (mode === 'yes' && fileSize % 512 !== TRAILER) {
        throw new EtceteraError('ERR_BOLT_TRUNCATED', {
          detail: `${fileSize} bytes is not a database of 512-byte multiples and its 32-byte SHA-256 trailer`,
        });
      }
      const size = hasTrailer ? fileSize - TRAILER : fileSize;
      if (size < 0) throw new EtceteraError('ERR_BOLT_TRUNCATED', { detail: `${fileSize} bytes` });
      if (hasTrailer) await checkTrailer(fh, size);
      const meta = await readMetas(fh, size);
      if (meta.highWater * meta.pageSize > size) {
        throw new EtceteraError('ERR_BOLT_TRUNCATED', {
          detail: `the database has ${meta.highWater} pages of ${meta.pageSize} bytes, the file only ${size} bytes`,
        });
      }
      return new BoltReader(fh, size, meta, hasTrailer);
    } catch (e) {
      await fh.close();
      throw e;
    }
  }

  async close(): Promise<void> {
    await this.fh.close();
  }

  /** The root bucket (whose entries are the top-level buckets). */
  get root(): BucketRef {
    return { kind: 'pages', root: this.meta.root };
  }

  /** The elements of `bucket` in key order. */
  async *entries(bucket: BucketRef = this.root): AsyncGenerator<BoltEntry> {
    let last: Buffer | undefined;
    const ordered = (key: Buffer) => {
      if (last !== undefined && Buffer.compare(last, key) >= 0)
        throw corrupt(`keys out of order in a bucket (after ${last.toString('hex')})`);
      last = key;
    };
    if (bucket.kind === 'inline') {
      for (const e of leafEntries(bucket.page, 0)) {
        ordered(e.key);
        yield e;
      }
      return;
    }
    for await (const e of this.walk(bucket.root, 0)) {
      ordered(e.key);
      yield e;
    }
  }

  /** The top-level bucket called `name`, or undefined. */
  async bucket(name: string): Promise<BucketRef | undefined> {
    for await (const e of this.entries()) {
      if (e.bucket !== undefined && e.key.toString('latin1') === name) return e.bucket;
    }
    return undefined;
  }

  private async *walk(pgid: number, depth: number): AsyncGenerator<BoltEntry> {
    if (depth > MAX_DEPTH) throw corrupt(`the tree is more than ${MAX_DEPTH} levels deep`);
    const page = await this.page(pgid);
    const flags = page.readUInt16LE(8);
    if (flags === LEAF_PAGE) {
      yield* leafEntries(page, 0);
    } else if (flags === BRANCH_PAGE) {
      for (const child of branchChildren(page)) yield* this.walk(child, depth + 1);
    } else {
      throw corrupt(`page ${pgid} has type ${flags}, not a branch or leaf page`);
    }
  }

  /** Page `pgid` with its overflow pages. */
  async page(pgid: number): Promise<Buffer> {
    const ps = this.meta.pageSize;
    if (!Number.isSafeInteger(pgid) || pgid < 2 || pgid >= this.meta.highWater)
      throw corrupt(`page id ${pgid} outside 2..${this.meta.highWater - 1}`);
    const head = await readAt(this.fh, pgid * ps, ps);
    const id = head.readBigUInt64LE(0);
    if (id !== BigInt(pgid)) throw corrupt(`page ${pgid} says it is page ${id}`);
    const overflow = head.readUInt32LE(12);
    if (pgid + overflow >= this.meta.highWater)
      throw corrupt(`page ${pgid} overflows past the high-water mark`);
    if (overflow === 0) return head;
    const rest = await readAt(this.fh, (pgid + 1) * ps, overflow * ps);
    return Buffer.concat([head, rest]);
  }
}

async function readAt(fh: FileHandle, position: number, length: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  let got = 0;
  while (got < length) {
    const { bytesRead } = await fh.read(buf, got, length - got, position + got);
    if (bytesRead === 0) {
      throw new EtceteraError('ERR_BOLT_TRUNCATED', {
        detail: `the file ends at byte ${position + got}, ${length - got} bytes short`,
      });
    }
    got += bytesRead;
  }
  return buf;
}

async function checkTrailer(fh: FileHandle, size: number): Promise<void> {
  const hash = createHash('sha256');
  const chunk = 1 << 20;
  for (let at = 0; at < size; at += chunk)
    hash.update(await readAt(fh, at, Math.min(chunk, size - at)));
  const want = await readAt(fh, size, TRAILER);
  const got = hash.digest();
  if (!got.equals(want)) {
    throw corrupt(
      `the SHA-256 of the database is ${got.toString('hex')}, its trailer says ${want.toString('hex')}`,
    );
  }
}

async function readMetas(fh: FileHandle, size: number): Promise<Meta> {
  if (size < PAGE_HEADER + 64)
    throw new EtceteraError('ERR_BOLT_TRUNCATED', { detail: `${size} bytes, no meta page` });
  const first = decodeMeta(await readAt(fh, 0, PAGE_HEADER + 64), PAGE_HEADER);
  if (!first.ok && first.reason === 'magic')
    throw corrupt('not a bbolt database (no bbolt magic in the first page)');
  const candidates: Meta[] = [];
  const reasons: string[] = [];
  if (first.ok) candidates.push(first.meta);
  else reasons.push(`meta page 0: ${first.reason}`);
  const sizes = first.ok ? [first.meta.pageSize] : [4096, 1024, 2048, 8192, 16384, 32768, 65536];
  for (const ps of sizes) {
    if (ps < 1024 || ps > 65536 || !Number.isInteger(Math.log2(ps))) continue;
    if (ps + PAGE_HEADER + 64 > size) continue;
    const second = decodeMeta(await readAt(fh, ps, PAGE_HEADER + 64), PAGE_HEADER);
    if (second.ok && second.meta.pageSize === ps) {
      candidates.push(second.meta);
      break;
    }
    if (first.ok) reasons.push(`meta page 1: ${second.ok ? 'page size' : second.reason}`);
  }
  const valid = candidates.filter(
    (m) =>
      m.pageSize >= 1024 &&
      m.pageSize <= 65536 &&
      Number.isInteger(Math.log2(m.pageSize)) &&
      m.root >= 2 &&
      m.root < m.highWater &&
      (m.freelist < m.highWater || m.freelist === 2 ** 64 - 1),
  );
  const best = valid.sort((a, b) => (a.txid > b.txid ? -1 : a.txid < b.txid ? 1 : 0))[0];
  if (best === undefined) {
    if (size < 4096 * 2)
      throw new EtceteraError('ERR_BOLT_TRUNCATED', {
        detail: `${size} bytes, fewer than two pages`,
      });
    throw corrupt(`no valid meta page (${reasons.join('; ') || 'bad page size or page ids'})`);
  }
  return best;
}

function leafEntries(page: Buffer, base: number): BoltEntry[] {
  const flags = page.readUInt16LE(base + 8);
  if (flags !== LEAF_PAGE) throw corrupt(`an inline bucket page of type ${flags}`);
  const count = page.readUInt16LE(base + 10);
  if (base + PAGE_HEADER + count * ELEMENT > page.length)
    throw corrupt('leaf elements past the end of their page');
  const out: BoltEntry[] = [];
  for (let i = 0; i < count; i++) {
    const at = base + PAGE_HEADER + i * ELEMENT;
    const eflags = page.readUInt32LE(at);
    const pos = at + page.readUInt32LE(at + 4);
    const ksize = page.readUInt32LE(at + 8);
    const vsize = page.readUInt32LE(at + 12);
    if (pos + ksize + vsize > page.length) throw corrupt('a leaf element past the end of its page');
    const key = Buffer.from(page.subarray(pos, pos + ksize));
    const value = page.subarray(pos + ksize, pos + ksize + vsize);
    if (eflags & BUCKET_LEAF) out.push({ key, bucket: bucketRef(value) });
    else out.push({ key, value: Buffer.from(value) });
  }
  return out;
}

function bucketRef(value: Buffer): BucketRef {
  if (value.length < BUCKET_HEADER) throw corrupt('a bucket header shorter than 16 bytes');
  const root = value.readBigUInt64LE(0);
  if (root !== 0n) {
    if (root > BigInt(Number.MAX_SAFE_INTEGER)) throw corrupt(`bucket root page ${root}`);
    return { kind: 'pages', root: Number(root) };
  }
  if (value.length < BUCKET_HEADER + PAGE_HEADER) throw corrupt('an inline bucket too short');
  const page = Buffer.from(value.subarray(BUCKET_HEADER));
  return { kind: 'inline', page };
}

function branchChildren(page: Buffer): number[] {
  const count = page.readUInt16LE(10);
  if (count === 0) throw corrupt('a branch page without elements');
  if (PAGE_HEADER + count * ELEMENT > page.length)
    throw corrupt('branch elements past the end of their page');
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const at = PAGE_HEADER + i * ELEMENT;
    const pos = at + page.readUInt32LE(at);
    const ksize = page.readUInt32LE(at + 4);
    if (pos + ksize > page.length) throw corrupt('a branch key past the end of its page');
    const child = page.readBigUInt64LE(at + 8);
    out.push(child > BigInt(Number.MAX_SAFE_INTEGER) ? -1 : Number(child));
  }
  return out;
}

export interface BoltBucketDump {
  name: Buffer;
  entries: Array<[Buffer, Buffer]>;
  buckets: BoltBucketDump[];
}

/** Every bucket of `reader`, nested, in key order (for tests and small databases). */
export async function dumpBolt(reader: BoltReader): Promise<BoltBucketDump[]> {
  const dump = async (ref: BucketRef, name: Buffer): Promise<BoltBucketDump> => {
    const d: BoltBucketDump = { name, entries: [], buckets: [] };
    for await (const e of reader.entries(ref)) {
      if (e.bucket !== undefined) d.buckets.push(await dump(e.bucket, e.key));
      else d.entries.push([e.key, e.value]);
    }
    return d;
  };
  const root = await dump(reader.root, Buffer.alloc(0));
  if (root.entries.length > 0) throw corrupt('a key outside any bucket');
  return root.buckets;
}
