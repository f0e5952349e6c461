/**
 * The durable high-water mark: a small file beside the member's LevelDB that records, with
 * its own fsync, how far the Raft log is known to be durable AND committed (index and term
 * of that entry) and the highest term written in the hard state. LevelDB's recovery skips
 * a damaged or truncated log record instead of failing, so without an independent witness
 * a member could come back at an older state and forget entries it acknowledged. At start,
 * LevelRaftStorage compares what LevelDB still holds with the mark and refuses to go on
 * when anything below it is missing or has another term (ERR_DATA_CORRUPT).
 *
 * Why committed entries only: they are never truncated or replaced (Raft safety), so the
 * mark only moves forward and never has to be lowered before a conflicting append or a
 * leader's snapshot.
 *
 * Why asynchronous: the mark is written after the LevelDB batch it covers is on disk,
 * coalesced (one write in flight; a newer value replaces a waiting one), and never delays a
 * Ready. A mark that lags is safe: it can only miss damage in the entries written since the
 * last mark write. A mark written before its data would be unsafe the other way (a torn,
 * never-acknowledged LevelDB write after a crash would look like lost data), so it is never
 * ahead of what LevelDB reported durable.
 *
 * Why spaced: each mark write ends in its own fdatasync, a second device flush beside the
 * Raft log's. Written after every synced batch, it doubled the flushes of a one-client
 * load, and the Raft log's next fsync and the store's (unsynced) write waited behind it.
 * So two writes start at least `spacingMs` apart (MARK_SPACING_MS by default): the first
 * after a quiet spell goes at once, a steady load writes the mark about every `spacingMs`,
 * and the mark lags the durable log by at most that plus one write. `flush()` (a graceful
 * stop) writes at once.
 *
 * Each write is one positioned write on a descriptor opened once with O_DSYNC (the write
 * returns once its data is on disk, as a write and an fdatasync would): one trip to the
 * thread pool per mark instead of four (open, write, fdatasync, close). `close()` closes it.
 *
 * File format: two 64-byte slots; a write goes to the slot of its sequence number's parity,
 * so a torn write leaves the other, older slot intact. Slot: magic "ETCM", sequence (u32),
 * index, term, hard-state term (u64 each), CRC-32C of the preceding 32 bytes (u32).
 */
import { randomBytes } from 'node:crypto';
import { close as closeFd, constants, open as openFd, write as writeFd } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { crc32c } from '@node-rs/crc32';
import { EtceteraError } from '../../errors.js';

export interface MarkValue {
  /** Highest log index known durable and committed here (0: none yet). */
  readonly index: number;
  /** The term of the entry at `index`. */
  readonly term: number;
  /** Highest term durably written in the hard state. */
  readonly hardTerm: number;
}

const SLOT = 64;
const BODY = 32;
const MAGIC = 0x4554434d; // "ETCM"
const ZERO: MarkValue = { index: 0, term: 0, hardTerm: 0 };

/** Least time between the starts of two mark writes, in ms (see "Why spaced"). */
export const MARK_SPACING_MS = 25;

export interface MarkOptions {
  /** Least time between the starts of two mark writes, in ms (MARK_SPACING_MS). */
  spacingMs?: number;
}

export function encodeSlot(seq: number, v: MarkValue): Buffer {
  const b = Buffer.alloc(SLOT);
  b.writeUInt32BE(MAGIC, 0);
  b.writeUInt32BE(seq >>> 0, 4);
  b.writeBigUInt64BE(BigInt(v.index), 8);
  b.writeBigUInt64BE(BigInt(v.term), 16);
  b.writeBigUInt64BE(BigInt(v.hardTerm), 24);
  b.writeUInt32BE(crc32c(b.subarray(0, BODY)), BODY);
  return b;
}

function decodeSlot(b: Buffer): { seq: number; value: MarkValue } | undefined {
  if (b.length < BODY + 4 || b.readUInt32BE(0) !== MAGIC) return undefined;
  if (crc32c(b.subarray(0, BODY)) !== b.readUInt32BE(BODY)) return undefined;
  return {
    seq: b.readUInt32BE(4),
    value: {
      index: Number(b.readBigUInt64BE(8)),
      term: Number(b.readBigUInt64BE(16)),
      hardTerm: Number(b.readBigUInt64BE(24)),
    },
  };
}

/** Reads a mark file's newest valid value (undefined: the file does not exist). */
export async function readMark(path: string): Promise<MarkValue | undefined> {
  return (await readNewest(path))?.value;
}

async function readNewest(path: string): Promise<{ seq: number; value: MarkValue } | undefined> {
  const fh = await open(path, 'r').catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return undefined;
    throw e;
  });
  if (fh === undefined) return undefined;
  try {
    const buf = Buffer.alloc(2 * SLOT);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    const slots = [decodeSlot(buf.subarray(0, Math.min(SLOT, bytesRead)))];
    if (bytesRead > SLOT) slots.push(decodeSlot(buf.subarray(SLOT, bytesRead)));
    const valid = slots.filter((s) => s !== undefined);
    if (valid.length === 0) {
      throw new EtceteraError('ERR_DATA_CORRUPT', {
        detail: `${path}: the durable high-water mark has no valid record`,
      });
    }
    // Sequence numbers are consecutive: with both valid, the newer is one past the older
    // (modulo 2^32).
    const [a, b] = valid;
    if (b === undefined) return a;
    return (b.seq - a!.seq) >>> 0 === 1 ? b : a;
  } finally {
    await fh.close();
  }
}

export class DurableMark {
  private latest: MarkValue;
  private seq: number;
  private pending: MarkValue | undefined;
  private running: Promise<void> | undefined;
  private failure: EtceteraError | undefined;
  private readonly spacingMs: number;
  /** When the last write started (performance.now()). */
  private lastStart = Number.NEGATIVE_INFINITY;
  /** Ends the spacing wait now (flush). */
  private wake: (() => void) | undefined;
  private hurry = false;
  /** The mark file, opened for O_DSYNC writes at the first write. */
  private fd: number | undefined;

  private constructor(
    readonly path: string,
    /** The mark as found at open: what LevelDB must still hold. */
    readonly loaded: MarkValue,
    seq: number,
    options: MarkOptions,
  ) {
    this.latest = loaded;
    this.seq = seq;
    this.spacingMs = options.spacingMs ?? MARK_SPACING_MS;
  }

  /** Creates a new mark file at 0 (temp file, fsync, rename, fsync of the directory). */
  static async create(path: string, options: MarkOptions = {}): Promise<DurableMark> {
    const tmp = `${path}.${randomBytes(4).toString('hex')}.tmp`;
    const fh = await open(tmp, 'w');
    try {
      await fh.write(Buffer.concat([encodeSlot(0, ZERO), Buffer.alloc(SLOT)]), 0, 2 * SLOT, 0);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path).catch(async (e) => {
      await rm(tmp, { force: true });
      throw e;
    });
    await syncDir(dirname(path));
    return new DurableMark(path, ZERO, 0, options);
  }

  /** Opens an existing mark file (ERR_DATA_CORRUPT if no slot is valid). */
  static async open(path: string, options: MarkOptions = {}): Promise<DurableMark | undefined> {
    const newest = await readNewest(path);
    if (newest === undefined) return undefined;
    return new DurableMark(path, newest.value, newest.seq, options);
  }

  /** The last value written or being written. */
  get value(): MarkValue {
    return this.pending ?? this.latest;
  }

  /** A failed mark write (the storage treats it as a failed disk write). */
  get error(): EtceteraError | undefined {
    return this.failure;
  }

  /**
   * Records that `v` is durable in LevelDB. Never moves backwards; written asynchronously,
   * one write in flight, two writes at least `spacingMs` apart.
   */
  advance(v: MarkValue): void {
    const cur = this.value;
    if (v.index <= cur.index && v.hardTerm <= cur.hardTerm) return;
    this.pending = {
      index: Math.max(v.index, cur.index),
      term: v.index >= cur.index ? v.term : cur.term,
      hardTerm: Math.max(v.hardTerm, cur.hardTerm),
    };
    this.running ??= this.drain();
  }

  /** Resolves when every value passed to advance() so far is on disk. */
  async flush(): Promise<void> {
    this.hurry = true;
    this.wake?.();
    while (this.running !== undefined) await this.running;
    if (this.failure !== undefined) throw this.failure;
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending !== undefined && this.failure === undefined) {
        await this.spacing();
        const v = this.pending;
        this.pending = undefined;
        this.seq = (this.seq + 1) >>> 0;
        this.lastStart = performance.now();
        await this.writeSlot(this.seq, v);
        this.latest = v;
      }
    } catch (cause) {
      this.failure = new EtceteraError(
        'ERR_STORAGE',
        { detail: `durable high-water mark ${this.path}` },
        { cause },
      );
    } finally {
      this.running = undefined;
      this.hurry = false;
    }
  }

  /** Waits until `spacingMs` after the last write's start, or until flush() asks for haste. */
  private spacing(): Promise<void> {
    const wait = this.lastStart + this.spacingMs - performance.now();
    if (wait <= 0 || this.hurry) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, wait);
      const self = this;
      function done(): void {
        clearTimeout(timer);
        self.wake = undefined;
        resolve();
      }
      this.wake = done;
    });
  }

  /** Writes what is waiting, then closes the file; a later advance() opens it again. */
  async close(): Promise<void> {
    try {
      await this.flush();
    } finally {
      const fd = this.fd;
      this.fd = undefined;
      if (fd !== undefined) await closeAsync(fd);
    }
  }

  private async writeSlot(seq: number, v: MarkValue): Promise<void> {
    this.fd ??= await openAsync(this.path, constants.O_WRONLY | constants.O_DSYNC);
    await writeAsync(this.fd, encodeSlot(seq, v), 0, SLOT, (seq % 2) * SLOT);
  }
}

const openAsync = promisify(openFd);
const writeAsync = promisify(writeFd);
const closeAsync = promisify(closeFd);

/** fsync of a directory, so a rename in it is durable. */
export async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
