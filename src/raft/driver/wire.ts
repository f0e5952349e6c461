/**
 * Byte-level primitives for the peer wire format and the on-disk encodings: a growable
 * writer and a bounds-checked reader.
 *
 * Integers are unsigned LEB128 varints, exact up to Number.MAX_SAFE_INTEGER (2^53 - 1);
 * terms, indices and member ids never get near that. Byte strings and text are length
 * prefixed. The reader never trusts its input: every read checks the remaining length and
 * a malformed buffer raises {@link WireError}, never a silent truncation.
 */

export class WireError extends Error {
  override readonly name = 'WireError';
}

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder('utf-8', { fatal: true });
const TWO_POW_32 = 2 ** 32;

export class Writer {
  private buf: Uint8Array;
  private pos = 0;

  /** `initialBytes`: a good estimate avoids regrowth (the buffer doubles when full). */
  constructor(initialBytes = 256) {
    this.buf = new Uint8Array(Math.max(16, initialBytes));
  }

  get length(): number {
    return this.pos;
  }

  private ensure(extra: number): void {
    if (this.pos + extra <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + extra) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
  }

  u8(v: number): this {
    this.ensure(1);
    this.buf[this.pos++] = v & 0xff;
    return this;
  }

  /** Unsigned varint; throws on negative, fractional or unsafe values. */
  uvarint(v: number): this {
    if (!Number.isSafeInteger(v) || v < 0) throw new WireError(`not a uvarint: ${v}`);
    this.ensure(8);
    while (v >= 0x80) {
      this.buf[this.pos++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.pos++] = v;
    return this;
  }

  /** Fixed-width big-endian 64-bit unsigned (for sortable keys), exact to 2^53 - 1. */
  u64be(v: number): this {
    if (!Number.isSafeInteger(v) || v < 0) throw new WireError(`not a u64: ${v}`);
    this.ensure(8);
    const view = new DataView(this.buf.buffer, this.buf.byteOffset);
    view.setUint32(this.pos, Math.floor(v / TWO_POW_32));
    view.setUint32(this.pos + 4, v % TWO_POW_32);
    this.pos += 8;
    return this;
  }

  bool(v: boolean): this {
    return this.u8(v ? 1 : 0);
  }

  bytes(v: Uint8Array): this {
    this.uvarint(v.length);
    this.ensure(v.length);
    this.buf.set(v, this.pos);
    this.pos += v.length;
    return this;
  }

  /** Raw bytes with no length prefix (the reader must know where they end). */
  raw(v: Uint8Array): this {
    this.ensure(v.length);
    this.buf.set(v, this.pos);
    this.pos += v.length;
    return this;
  }

  string(v: string): this {
    return this.bytes(textEncoder.encode(v));
  }

  /** The bytes written so far (a view; the writer must not be reused after this). */
  finish(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }
}

/**
 * Reads a buffer. Byte strings come out as views into it, not copies: a small typed array
 * with its own backing store costs an allocation the garbage collector must track, and
 * the transport decodes thousands of entries a second. So the input must never be
 * mutated once read (frames from the socket and values from LevelDB never are); the
 * price is that a view keeps its whole frame alive as long as the entry is held.
 */
export class Reader {
  private pos = 0;
  private readonly buf: Uint8Array;

  constructor(input: Uint8Array) {
    // A plain Uint8Array view even over a Node Buffer, so views handed out are plain too.
    this.buf =
      input.constructor === Uint8Array
        ? input
        : new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  }

  get remaining(): number {
    return this.buf.length - this.pos;
  }

  private need(n: number): void {
    if (this.pos + n > this.buf.length) {
      throw new WireError(`truncated: need ${n} bytes at offset ${this.pos} of ${this.buf.length}`);
    }
  }

  u8(): number {
    this.need(1);
    return this.buf[this.pos++]!;
  }

  uvarint(): number {
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      const b = this.u8();
      result += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) {
        if (!Number.isSafeInteger(result)) break;
        if (i > 0 && b === 0) throw new WireError('non-minimal varint');
        return result;
      }
      scale *= 0x80;
    }
    throw new WireError('varint out of range');
  }

  u64be(): number {
    this.need(8);
    const view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
    const hi = view.getUint32(this.pos);
    const lo = view.getUint32(this.pos + 4);
    this.pos += 8;
    const v = hi * TWO_POW_32 + lo;
    if (!Number.isSafeInteger(v)) throw new WireError('u64 beyond 2^53');
    return v;
  }

  bool(): boolean {
    const b = this.u8();
    if (b > 1) throw new WireError(`bad bool ${b}`);
    return b === 1;
  }

  /** A length-prefixed byte string (a view into the input, see the class comment). */
  bytes(): Uint8Array {
    const n = this.uvarint();
    this.need(n);
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /** `n` raw bytes (a view into the input). */
  raw(n: number): Uint8Array {
    this.need(n);
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  string(): string {
    try {
      return textDecoder.decode(this.bytes());
    } catch (e) {
      if (e instanceof WireError) throw e;
      throw new WireError('invalid utf-8');
    }
  }

  /** Asserts the whole buffer was consumed: trailing bytes mean a framing bug. */
  end(): void {
    if (this.pos !== this.buf.length) {
      throw new WireError(`${this.buf.length - this.pos} trailing bytes`);
    }
  }
}
