/**
 * Writing a bbolt database as a stream of bytes, page by page, from buckets whose items
 * arrive in key order (format.ts has the layout).
 *
 * Each bucket's B+tree is bulk-loaded bottom-up: leaf elements fill a page until the next
 * would not fit, the full page is written at the next free page id and its first key moves up
 * to the branch level above, which fills and moves up the same way. Only one unfinished page
 * per tree level is held, so memory stays bounded by the tree's depth, whatever the size of
 * the data. An element larger than a page gets a page of its own with overflow pages. A
 * bucket with no nested buckets whose one leaf page fits in a quarter page is written inline
 * in its parent, as bbolt does; every other bucket gets its own pages.
 *
 * The meta pages come first in the file but name the root bucket's page and the page count,
 * which are known only at the end; so the items are laid out twice: a first pass counts pages
 * without building them, the second builds and yields them after the meta pages. `source`
 * must give the same items both times (a LevelDB snapshot does).
 *
 * Layout: pages 0 and 1 meta, 2 an empty freelist (every page is in use), then the trees.
 */
import { EtceteraError } from '../errors.js';
import {
  BRANCH_PAGE,
  BUCKET_HEADER,
  BUCKET_LEAF,
  DEFAULT_PAGE_SIZE,
  ELEMENT,
  encodeFreelistPage,
  encodeMetaPage,
  LEAF_PAGE,
  MAX_KEY_SIZE,
  MAX_VALUE_SIZE,
  PAGE_HEADER,
  writePageHeader,
} from './format.js';

/** One item of a bucket: a key and value, or a nested bucket and its own items. */
export type BoltItem =
  | { readonly key: Uint8Array; readonly value: Uint8Array; readonly bucket?: undefined }
  | { readonly key: Uint8Array; readonly bucket: BoltItems; readonly value?: undefined };
export type BoltItems = Iterable<BoltItem> | AsyncIterable<BoltItem>;

export interface BoltWriteOptions {
  /** 4096 unless given; a power of two from 1024 to 65536. */
  pageSize?: number;
  /** The transaction id of the newer meta page (at least 1; the older one has one less). */
  txid?: bigint;
  /** Yield output in pieces of about this many bytes (default 64 KiB). */
  chunkBytes?: number;
}

const FIRST_DATA_PAGE = 3;
const FREELIST_PGID = 2;

interface Element {
  flags: number;
  key: Uint8Array;
  value: Uint8Array;
}

/** Where a finished bucket lives: its root page, or inline (a whole leaf page as bytes). */
type BucketRef = { root: number } | { inline: Uint8Array };

function misuse(detail: string): EtceteraError {
  return new EtceteraError('ERR_BOLT_WRITE', { detail });
}

class Pages {
  next = FIRST_DATA_PAGE;
  out: Uint8Array[] = [];
  outBytes = 0;

  constructor(
    readonly pageSize: number,
    /** First pass: count pages, build nothing. */
    readonly dry: boolean,
  ) {}

  /** Writes a branch or leaf page of `elements` at the next page id; returns that id. */
  write(flags: number, elements: Element[], bodySize: number): number {
    const pages = Math.ceil((PAGE_HEADER + bodySize) / this.pageSize);
    const id = this.next;
    this.next += pages;
    if (!this.dry) {
      const page = Buffer.alloc(pages * this.pageSize);
      fillPage(page, id, flags, elements, pages - 1);
      this.out.push(page);
      this.outBytes += page.length;
    }
    return id;
  }
}

function fillPage(
  page: Buffer,
  id: number,
  flags: number,
  elements: Element[],
  overflow: number,
): void {
  writePageHeader(page, id, flags, elements.length, overflow);
  let data = PAGE_HEADER + elements.length * ELEMENT;
  for (const [i, e] of elements.entries()) {
    const at = PAGE_HEADER + i * ELEMENT;
    if (flags === BRANCH_PAGE) {
      page.writeUInt32LE(data - at, at);
      page.writeUInt32LE(e.key.length, at + 4);
      page.writeBigUInt64LE(BigInt(pgidOf(e)), at + 8);
      page.set(e.key, data);
      data += e.key.length;
    } else {
      page.writeUInt32LE(e.flags, at);
      page.writeUInt32LE(data - at, at + 4);
      page.writeUInt32LE(e.key.length, at + 8);
      page.writeUInt32LE(e.value.length, at + 12);
      page.set(e.key, data);
      page.set(e.value, data + e.key.length);
      data += e.key.length + e.value.length;
    }
  }
}

// A branch element's child id travels in its value slot as 8 bytes.
function pgidOf(e: Element): number {
  return Number(Buffer.from(e.value.buffer, e.value.byteOffset, 8).readBigUInt64LE(0));
}

function childElement(key: Uint8Array, pgid: number): Element {
  const v = Buffer.alloc(8);
  v.writeBigUInt64LE(BigInt(pgid));
  return { flags: 0, key, value: v };
}

interface Level {
  elements: Element[];
  /** Body bytes of `elements` (element headers, keys and, on leaves, values). */
  size: number;
  /** Pages already written at this level. */
  written: number;
}

/** One bucket's tree under construction. */
class TreeBuilder {
  private readonly levels: Level[] = [{ elements: [], size: 0, written: 0 }];
  private hasBucket = false;
  private last: Uint8Array | undefined;

  constructor(private readonly pages: Pages) {}

  add(e: Element): void {
    if (e.key.length === 0 || e.key.length > MAX_KEY_SIZE)
      throw misuse(`a key of ${e.key.length} bytes (1 to ${MAX_KEY_SIZE})`);
    if (e.value.length > MAX_VALUE_SIZE) throw misuse(`a value of ${e.value.length} bytes`);
    if (this.last !== undefined && Buffer.compare(this.last, e.key) >= 0)
      throw misuse('keys out of order (each bucket needs strictly increasing keys)');
    this.last = e.key;
    if (e.flags & BUCKET_LEAF) this.hasBucket = true;
    this.push(0, e);
  }

  private push(depth: number, e: Element): void {
    const level = this.levels[depth] as Level;
    const size = ELEMENT + e.key.length + (depth === 0 ? e.value.length : 0);
    if (level.elements.length > 0 && PAGE_HEADER + level.size + size > this.pages.pageSize)
      this.flush(depth);
    level.elements.push(e);
    level.size += size;
  }

  private flush(depth: number): void {
    const level = this.levels[depth] as Level;
    const first = level.elements[0];
    if (first === undefined) return;
    const id = this.pages.write(depth === 0 ? LEAF_PAGE : BRANCH_PAGE, level.elements, level.size);
    level.elements = [];
    level.size = 0;
    level.written++;
    if (this.levels[depth + 1] === undefined)
      this.levels.push({ elements: [], size: 0, written: 0 });
    this.push(depth + 1, childElement(first.key, id));
  }

  /** Writes what is left; `inlineOk`: a small enough bucket may go inline. */
  finish(inlineOk: boolean): BucketRef {
    const leaf = this.levels[0] as Level;
    if (
      inlineOk &&
      this.levels.length === 1 &&
      leaf.written === 0 &&
      !this.hasBucket &&
      PAGE_HEADER + leaf.size <= this.pages.pageSize / 4
    ) {
      const page = Buffer.alloc(PAGE_HEADER + leaf.size);
      fillPage(page, 0, LEAF_PAGE, leaf.elements, 0);
      return { inline: page };
    }
    for (let depth = 0; ; depth++) {
      const level = this.levels[depth] as Level;
      if (depth === this.levels.length - 1 && level.written === 0) {
        return {
          root: this.pages.write(depth === 0 ? LEAF_PAGE : BRANCH_PAGE, level.elements, level.size),
        };
      }
      this.flush(depth);
    }
  }
}

function bucketValue(ref: BucketRef): Uint8Array {
  if ('root' in ref) {
    const v = Buffer.alloc(BUCKET_HEADER);
    v.writeBigUInt64LE(BigInt(ref.root), 0);
    return v;
  }
  const v = Buffer.alloc(BUCKET_HEADER + ref.inline.length);
  v.set(ref.inline, BUCKET_HEADER);
  return v;
}

/** Lays out one bucket; yields the pages it wrote; returns where it is. */
async function* layOutBucket(
  items: BoltItems,
  pages: Pages,
  inlineOk: boolean,
  chunkBytes: number,
  depth: number,
): AsyncGenerator<Uint8Array, BucketRef> {
  if (depth > 32) throw misuse('buckets nested more than 32 deep');
  const tree = new TreeBuilder(pages);
  for await (const item of items) {
    if (item.bucket !== undefined) {
      const ref = yield* layOutBucket(item.bucket, pages, true, chunkBytes, depth + 1);
      tree.add({ flags: BUCKET_LEAF, key: item.key, value: bucketValue(ref) });
    } else {
      tree.add({ flags: 0, key: item.key, value: item.value });
    }
    if (pages.outBytes >= chunkBytes) yield drain(pages);
  }
  return tree.finish(inlineOk);
}

function drain(pages: Pages): Uint8Array {
  const out = pages.out.length === 1 ? (pages.out[0] as Uint8Array) : Buffer.concat(pages.out);
  pages.out = [];
  pages.outBytes = 0;
  return out;
}

/** A laid-out database: its size is known before its bytes stream. */
export interface BoltStream {
  /** Bytes the database will have (high-water mark × page size). */
  readonly size: number;
  /** The bytes, meta pages first; to be iterated once. */
  readonly chunks: AsyncGenerator<Uint8Array, void>;
}

/**
 * Lays out a bbolt database holding the top-level buckets `source()` yields (every
 * top-level item must be a bucket, as in bbolt): runs the first pass, then hands back the
 * size and the second pass as a stream. `source` is called twice (see above).
 */
export async function planBolt(
  source: () => BoltItems,
  options: BoltWriteOptions = {},
): Promise<BoltStream> {
  const pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(Math.log2(pageSize)) || pageSize < 1024 || pageSize > 65536)
    throw misuse(`page size ${pageSize}`);
  const txid = options.txid ?? 1n;
  if (txid < 1n) throw misuse('txid below 1');
  const chunkBytes = options.chunkBytes ?? 64 * 1024;

  const plan = new Pages(pageSize, true);
  const planned = layOutBucket(topLevel(source()), plan, false, Number.POSITIVE_INFINITY, 0);
  let step = await planned.next();
  while (!step.done) step = await planned.next();
  const rootRef = step.value;
  if (!('root' in rootRef)) throw misuse('the root bucket came out inline');
  const root = rootRef;

  const meta = (id: number, tx: bigint) =>
    encodeMetaPage(id, {
      pageSize,
      flags: 0,
      root: root.root,
      sequence: 0n,
      freelist: FREELIST_PGID,
      highWater: plan.next,
      txid: tx,
    });
  async function* chunks(): AsyncGenerator<Uint8Array, void> {
    // bbolt writes the meta of transaction t to page t % 2.
    const newer = Number(txid % 2n);
    const pages = new Pages(pageSize, false);
    pages.out.push(
      meta(0, newer === 0 ? txid : txid - 1n),
      meta(1, newer === 1 ? txid : txid - 1n),
      encodeFreelistPage(FREELIST_PGID, pageSize),
    );
    pages.outBytes = 3 * pageSize;
    const built = yield* layOutBucket(topLevel(source()), pages, false, chunkBytes, 0);
    if (!('root' in built) || built.root !== root.root || pages.next !== plan.next)
      throw misuse('the source gave different items on its second pass');
    if (pages.out.length > 0) yield drain(pages);
  }
  return { size: plan.next * pageSize, chunks: chunks() };
}

function topLevel(items: BoltItems): BoltItems {
  return {
    async *[Symbol.asyncIterator]() {
      for await (const item of items) {
        if (item.bucket === undefined) throw misuse('a top-level item that is not a bucket');
        yield item;
      }
    },
  };
}

/** The bytes of the database of `source` (see planBolt), as they are built. */
export async function* writeBolt(
  source: () => BoltItems,
  options: BoltWriteOptions = {},
): AsyncGenerator<Uint8Array, void> {
  yield* (await planBolt(source, options)).chunks;
}

/** The whole database in one buffer (for tests and small databases). */
export async function boltBytes(
  source: () => BoltItems,
  options: BoltWriteOptions = {},
): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const chunk of writeBolt(source, options)) parts.push(chunk);
  return Buffer.concat(parts);
}
