/**
 * An independent check of a LevelDB directory's files, run before the member opens it.
 * classic-level does not expose LevelDB's `paranoid_checks` or `verify_checksums`, so LevelDB
 * itself would read a damaged table block without noticing (an uncompressed block is used
 * as it is) or only fail on the read that reaches it. This module reads LevelDB's own
 * checksums instead, from LevelDB's documented file formats (log_format.md, table_format.md):
 *
 *   - CURRENT names the MANIFEST; the MANIFEST (a log of version edits, each record with a
 *     masked CRC-32C) lists the live table files with their sizes;
 *   - every live table must exist with that size, end with the table magic, and every block
 *     (data, index, meta-index, filter) must match the CRC-32C in its trailer.
 *
 * The cost is one read of every table at start (see the README for the measured rate). The
 * `.log` files are not checked here: LevelDB reads them at open, and its report of skipped
 * records is read from its info LOG (data-dir.ts).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32c } from '@node-rs/crc32';
import { uncompress } from 'snappyjs';

const BLOCK = 32768;
const HEADER = 7;
const FOOTER = 48;
const MAGIC = 0xdb4775248b80fb57n;
const MASK_DELTA = 0xa282ead8;

/** LevelDB's stored form of a CRC: rotated and offset so CRCs of CRCs do not collide. */
export function unmask(masked: number): number {
  const rot = (masked - MASK_DELTA) >>> 0;
  return ((rot >>> 17) | (rot << 15)) >>> 0;
}

class Cursor {
  constructor(
    private readonly b: Uint8Array,
    public pos = 0,
    private readonly end = b.length,
  ) {}
  get done(): boolean {
    return this.pos >= this.end;
  }
  varint(): number {
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new Error('truncated varint');
      const byte = this.b[this.pos++]!;
      result += (byte & 0x7f) * mul;
      if (byte < 0x80) return result;
      mul *= 128;
    }
    throw new Error('varint too long');
  }
  bytes(n: number): Uint8Array {
    if (this.pos + n > this.end) throw new Error('truncated field');
    const out = this.b.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
}

/**
 * The records of a LevelDB log-format file. A record whose checksum or framing is wrong
 * throws; a record cut short at the very end is a torn final write and ends the file.
 */
export function logRecords(file: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  let pending: Uint8Array[] | undefined;
  let pos = 0;
  while (pos < file.length) {
    const left = BLOCK - (pos % BLOCK);
    if (left < HEADER) {
      pos += left;
      continue;
    }
    if (pos + HEADER > file.length) break; // torn header at the end
    const crc = view.getUint32(pos, true);
    const len = view.getUint16(pos + 4, true);
    const type = file[pos + 6]!;
    if (type === 0 && len === 0 && crc === 0) {
      pos += left; // zeroed rest of a block (preallocated space)
      continue;
    }
    if (HEADER + len > left) throw new Error(`bad record length at offset ${pos}`);
    if (pos + HEADER + len > file.length) break; // torn final record
    const body = file.subarray(pos + 6, pos + HEADER + len);
    if (unmask(crc) !== crc32c(body)) throw new Error(`checksum mismatch at offset ${pos}`);
    const data = file.subarray(pos + HEADER, pos + HEADER + len);
    pos += HEADER + len;
    if (type === 1) out.push(data);
    else if (type === 2) pending = [data];
    else if (type === 3 && pending !== undefined) pending.push(data);
    else if (type === 4 && pending !== undefined) {
      pending.push(data);
      out.push(Buffer.concat(pending));
      pending = undefined;
    } else throw new Error(`unexpected record type ${type} at offset ${pos}`);
  }
  return out;
}

const SECTOR = 512;

/**
 * Whether a log file ends in a torn write, etcd's rule for its WAL: the first record that
 * fails its checksum is the file's last one (only zeros follow it), and one whole 512-byte
 * sector of it is zeros, as when a power cut stops a write part-way. Such a record was
 * never acknowledged (acknowledgement waits for the fsync that did not finish).
 */
export function tornTail(file: Uint8Array): boolean {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  let pos = 0;
  while (pos < file.length) {
    const left = BLOCK - (pos % BLOCK);
    if (left < HEADER) {
      pos += left;
      continue;
    }
    if (pos + HEADER > file.length) return false;
    const crc = view.getUint32(pos, true);
    const len = view.getUint16(pos + 4, true);
    if (crc === 0 && len === 0 && file[pos + 6] === 0) {
      pos += left;
      continue;
    }
    const end = Math.min(pos + HEADER + len, file.length);
    if (HEADER + len <= left && unmask(crc) === crc32c(file.subarray(pos + 6, end))) {
      pos = end;
      continue;
    }
    // The first bad record: torn only if nothing but zeros follows and a sector is zeros.
    for (let k = end; k < file.length; k++) if (file[k] !== 0) return false;
    for (let at = Math.ceil(pos / SECTOR) * SECTOR; at + SECTOR <= end; at += SECTOR) {
      if (file.subarray(at, at + SECTOR).every((b) => b === 0)) return true;
    }
    return false;
  }
  return false;
}

/** Live table files (number → size) after replaying a MANIFEST's version edits. */
export function liveTables(manifest: Uint8Array): Map<number, number> {
  const live = new Map<number, number>();
  for (const rec of logRecords(manifest)) {
    const c = new Cursor(rec);
    while (!c.done) {
      const tag = c.varint();
      switch (tag) {
        case 1: // comparator name
          c.bytes(c.varint());
          break;
        case 2: // log number
        case 3: // next file number
        case 4: // last sequence
        case 9: // previous log number
          c.varint();
          break;
        case 5: // compaction pointer: level, internal key
          c.varint();
          c.bytes(c.varint());
          break;
        case 6: // deleted file: level, number
          c.varint();
          live.delete(c.varint());
          break;
        case 7: {
          // new file: level, number, size, smallest key, largest key
          c.varint();
          const number = c.varint();
          const size = c.varint();
          c.bytes(c.varint());
          c.bytes(c.varint());
          live.set(number, size);
          break;
        }
        default:
          throw new Error(`unknown version edit tag ${tag}`);
      }
    }
  }
  return live;
}

interface Handle {
  offset: number;
  size: number;
}

/**
 * Verifies a block's trailer checksum; returns its contents (Snappy undone) when `decode`
 * (index blocks: their entries are needed; a data block's checksum is enough).
 */
function readBlock(table: Uint8Array, h: Handle, what: string, decode = true): Uint8Array {
  if (h.offset + h.size + 5 > table.length) throw new Error(`${what} block lies past the end`);
  const raw = table.subarray(h.offset, h.offset + h.size + 1); // contents + type byte
  const view = new DataView(table.buffer, table.byteOffset, table.byteLength);
  const stored = view.getUint32(h.offset + h.size + 1, true);
  if (unmask(stored) !== crc32c(raw)) {
    throw new Error(`${what} block at offset ${h.offset} fails its checksum`);
  }
  const type = raw[h.size]!;
  const contents = raw.subarray(0, h.size);
  if (type === 0 || !decode) return contents;
  if (type === 1) return uncompress(contents);
  throw new Error(`${what} block at offset ${h.offset} has compression type ${type}`);
}

/** The values of a block's entries (keys are prefix-compressed; only values are needed). */
function blockValues(block: Uint8Array): Uint8Array[] {
  if (block.length < 4) throw new Error('block too short');
  const view = new DataView(block.buffer, block.byteOffset, block.byteLength);
  const restarts = view.getUint32(block.length - 4, true);
  const end = block.length - 4 - 4 * restarts;
  if (end < 0) throw new Error('bad restart count');
  const c = new Cursor(block, 0, end);
  const out: Uint8Array[] = [];
  while (!c.done) {
    c.varint(); // shared key bytes
    const unshared = c.varint();
    const valueLength = c.varint();
    c.bytes(unshared);
    out.push(c.bytes(valueLength));
  }
  return out;
}

function handle(value: Uint8Array): Handle {
  const c = new Cursor(value);
  return { offset: c.varint(), size: c.varint() };
}

/** Checks one table file's footer and every block's checksum; throws on the first fault. */
export function verifyTable(table: Uint8Array): void {
  if (table.length < FOOTER) throw new Error(`${table.length} bytes, shorter than a footer`);
  const footer = table.subarray(table.length - FOOTER);
  const magic = new DataView(footer.buffer, footer.byteOffset + 40, 8).getBigUint64(0, true);
  if (magic !== MAGIC) throw new Error('no table magic at the end');
  const c = new Cursor(footer, 0, 40);
  const metaIndex = { offset: c.varint(), size: c.varint() };
  const index = { offset: c.varint(), size: c.varint() };
  for (const v of blockValues(readBlock(table, metaIndex, 'meta-index'))) {
    readBlock(table, handle(v), 'filter', false);
  }
  for (const v of blockValues(readBlock(table, index, 'index'))) {
    readBlock(table, handle(v), 'data', false);
  }
}

/**
 * Checks a LevelDB directory's MANIFEST and live tables. Returns a description of each
 * fault found (empty: none). A directory without CURRENT is for LevelDB to judge.
 */
export async function checkLevelDbFiles(dir: string): Promise<string[]> {
  const current = await readFile(join(dir, 'CURRENT'), 'utf8').catch(() => undefined);
  if (current === undefined) return [];
  const name = current.trim();
  if (!/^MANIFEST-\d+$/.test(name)) return [`CURRENT names ${JSON.stringify(name)}`];
  const manifest = await readFile(join(dir, name)).catch(() => undefined);
  if (manifest === undefined) return [`${name} (named by CURRENT) is missing`];
  let live: Map<number, number>;
  try {
    live = liveTables(manifest);
  } catch (e) {
    return [`${name}: ${(e as Error).message}`];
  }
  const faults: string[] = [];
  for (const [number, size] of [...live].sort((a, b) => a[0] - b[0])) {
    const file = `${String(number).padStart(6, '0')}.ldb`;
    const bytes =
      (await readFile(join(dir, file)).catch(() => undefined)) ??
      (await readFile(join(dir, file.replace(/\.ldb$/, '.sst'))).catch(() => undefined));
    if (bytes === undefined) {
      faults.push(`table ${file} is missing`);
      continue;
    }
    if (bytes.length !== size) {
      faults.push(`table ${file} has ${bytes.length} bytes where ${size} were written`);
      continue;
    }
    try {
      verifyTable(bytes);
    } catch (e) {
      faults.push(`table ${file}: ${(e as Error).message}`);
    }
  }
  return faults;
}
