/**
 * etcdctl 3.4's maintenance commands (endpoint status, hashkv, defrag, snapshot save, alarm)
 * dial `http://host:port` endpoints with that whole URL as the HTTP/2 `:authority`, which
 * nghttp2 (inside node:http2) refuses with PROTOCOL_ERROR before any JavaScript sees the
 * request; etcd's grpc-go server accepts it. This module lets the client listener fix the
 * authority on the bytes, before node:http2 reads them:
 *
 * `H2Preamble` holds a cleartext HTTP/2 connection between its preface and its first header
 * block. grpc-go clients send no request before the server's SETTINGS, so it sends them an
 * empty SETTINGS frame (which they acknowledge; that ACK is taken out of the bytes, as
 * node:http2 never sent those settings) and reads on to the first complete header block. In
 * that block a literal `:authority` of `http(s)://host:port[/]` becomes `host:port`; the
 * rest of the bytes, and the connection from then on, go to node:http2 unchanged.
 *
 * Rewriting the first block is enough for the connection: the client's HPACK encoder stores
 * the authority in its dynamic table there and refers to it by index afterwards, and the
 * server's table holds the same entries in the same order (the rewritten one is shorter,
 * so the server never evicts an entry the client still refers to). A client that evicts
 * it and later sends the URL literally again gets that request refused, as before.
 */
import hpack from 'hpack.js';

const FRAME_HEADER = 9;
const TYPE = {
  HEADERS: 0x1,
  PRIORITY: 0x2,
  SETTINGS: 0x4,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;
/** Frames a client sends while opening a connection, before its first request. */
const OPENING = new Set<number>([TYPE.SETTINGS, TYPE.WINDOW_UPDATE, TYPE.PRIORITY]);
const FLAG = { ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 } as const;
/** HPACK's static-table index of `:authority`. */
const AUTHORITY_INDEX = 1;
/** The largest frame a peer may send before it has read other settings (RFC 9113 §4.2). */
const MAX_FRAME = 16_384;
/** An empty SETTINGS frame: the server's preface as far as the client must wait for one. */
export const EMPTY_SETTINGS = Buffer.from([0, 0, 0, TYPE.SETTINGS, 0, 0, 0, 0, 0]);

/** `http://host:port/` → `host:port`; undefined when `v` is not such a URL. */
export function authorityOfUrl(v: string): string | undefined {
  const m = /^https?:\/\/([^/?#@\s]+)\/?$/i.exec(v);
  return m?.[1];
}

function encodeInt(value: number, prefixBits: number, high: number): Buffer {
  const max = (1 << prefixBits) - 1;
  if (value < max) return Buffer.from([high | value]);
  const out = [high | max];
  let rest = value - max;
  while (rest >= 128) {
    out.push((rest & 127) | 128);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return Buffer.from(out);
}

const plainString = (s: Buffer) => Buffer.concat([encodeInt(s.length, 7, 0), s]);
const asBuffer = (s: Buffer | number[]) => (Buffer.isBuffer(s) ? s : Buffer.from(s));

/**
 * The header block with every literal `:authority` that is a URL replaced by its host:port,
 * or undefined when there is none (or the block does not parse: node:http2 will say so).
 */
export function rewriteAuthority(block: Buffer): Buffer | undefined {
  const d = hpack.decoder.create();
  d.push(block);
  const at = () => block.length - d.buffer.size;
  const out: Buffer[] = [];
  let changed = false;
  try {
    while (!d.isEmpty()) {
      const start = at();
      const first = d.buffer.peekUInt8();
      let prefixBits: number;
      let high: number;
      if (first & 0x80) {
        d.decodeBit();
        d.decodeInt();
        out.push(block.subarray(start, at()));
        continue;
      }
      if ((first & 0xe0) === 0x20) {
        for (let i = 0; i < 3; i++) d.decodeBit();
        d.decodeInt(); // dynamic table size update
        out.push(block.subarray(start, at()));
        continue;
      }
      if ((first & 0xc0) === 0x40) {
        prefixBits = 6; // literal with incremental indexing
        high = 0x40;
      } else {
        prefixBits = 4; // literal without indexing (0000) or never indexed (0001)
        high = first & 0xf0;
      }
      for (let i = 0; i < 8 - prefixBits; i++) d.decodeBit();
      const nameIndex = d.decodeInt();
      const name = nameIndex === 0 ? asBuffer(d.decodeStr()) : undefined;
      const value = asBuffer(d.decodeStr());
      const isAuthority =
        nameIndex === AUTHORITY_INDEX || name?.toString('latin1') === ':authority';
      const fixed = isAuthority ? authorityOfUrl(value.toString('latin1')) : undefined;
      if (fixed === undefined) {
        out.push(block.subarray(start, at()));
        continue;
      }
      changed = true;
      out.push(encodeInt(nameIndex, prefixBits, high));
      if (name !== undefined) out.push(plainString(name));
      out.push(plainString(Buffer.from(fixed, 'latin1')));
    }
  } catch {
    return undefined;
  }
  return changed ? Buffer.concat(out) : undefined;
}

interface Frame {
  type: number;
  flags: number;
  stream: number;
  payload: Buffer;
  raw: Buffer;
}

function frameBytes(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(FRAME_HEADER);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream, 5);
  return Buffer.concat([h, payload]);
}

/** A HEADERS frame's header block fragment (padding and priority taken off). */
function headersFragment(f: Frame): { prefix: Buffer; fragment: Buffer } | undefined {
  let p = f.payload;
  let pad = 0;
  if (f.flags & FLAG.PADDED) {
    if (p.length < 1) return undefined;
    pad = p[0]!;
    p = p.subarray(1);
  }
  const prioLen = f.flags & FLAG.PRIORITY ? 5 : 0;
  if (p.length < prioLen + pad) return undefined;
  return { prefix: p.subarray(0, prioLen), fragment: p.subarray(prioLen, p.length - pad) };
}

export type PreambleStep =
  /** Keep reading (and the bytes to write to the client now, if any). */
  | { kind: 'more'; reply?: Buffer }
  /** Hand the connection over with these bytes first (everything read, as rewritten). */
  | { kind: 'done'; bytes: Buffer };

/**
 * Reads a connection's bytes from its preface on (`push`) until it can be handed over. The
 * caller writes `reply` to the client and, at `done`, gives node:http2 `bytes` then the
 * socket. `giveUp()` hands over what was read as it was (for a client that stays silent).
 */
export class H2Preamble {
  private buf: Buffer = Buffer.alloc(0);
  private readonly passed: Buffer[] = [];
  private preface = false;
  private sentSettings = false;
  private ackRemoved = false;
  private blockFrames: Frame[] | undefined;
  /** Whether the first header block was read (it is in `passed`, in its place). */
  private blockSeen = false;
  private readonly raw: Buffer[] = [];

  constructor(private readonly prefaceLength: number) {}

  push(chunk: Buffer): PreambleStep {
    this.raw.push(chunk);
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    if (!this.preface) {
      if (this.buf.length < this.prefaceLength) return { kind: 'more' };
      this.passed.push(this.buf.subarray(0, this.prefaceLength));
      this.buf = this.buf.subarray(this.prefaceLength);
      this.preface = true;
    }
    let reply: Buffer | undefined;
    if (!this.sentSettings) {
      this.sentSettings = true;
      reply = EMPTY_SETTINGS;
    }
    for (;;) {
      // Bytes that cannot open a connection go to node:http2 at once (it ends the
      // connection with a GOAWAY), instead of being held for the preamble's timeout.
      if (this.hopeless()) return { kind: 'done', bytes: this.giveUp() };
      const f = this.nextFrame();
      if (f === undefined) break;
      if (!this.ackRemoved && f.type === TYPE.SETTINGS && f.flags & FLAG.ACK && f.stream === 0) {
        this.ackRemoved = true; // the answer to our SETTINGS: node:http2 must not see it
      } else if (!this.blockSeen && (f.type === TYPE.HEADERS || this.blockFrames)) {
        this.collect(f);
      } else {
        this.passed.push(f.raw);
        // After the answer, a frame other than the opening ones (a PING, say) means the
        // client is not about to send a request: hand over now.
        if (this.ackRemoved && !OPENING.has(f.type) && this.blockFrames === undefined)
          return this.done();
      }
      // Done once our SETTINGS was answered and the first header block is whole.
      if (this.ackRemoved && this.blockSeen) return this.done();
    }
    return reply === undefined ? { kind: 'more' } : { kind: 'more', reply };
  }

  /**
   * Whether the bytes after the preface can no longer be a connection's opening: the first
   * frame is not a SETTINGS frame on stream 0 (RFC 9113 §3.4), or the next frame claims more
   * than the 16 KiB a client may send before it has the server's settings (§4.2).
   */
  private hopeless(): boolean {
    if (this.buf.length < FRAME_HEADER) return false;
    if (this.buf.readUIntBE(0, 3) > MAX_FRAME) return true;
    const first = this.passed.length === 1 && !this.ackRemoved;
    return (
      first && (this.buf[3] !== TYPE.SETTINGS || (this.buf.readUInt32BE(5) & 0x7fffffff) !== 0)
    );
  }

  /** Hands over everything read so far, unchanged (but for the answer to our SETTINGS). */
  giveUp(): Buffer {
    if (this.ackRemoved) {
      if (this.blockFrames !== undefined) for (const f of this.blockFrames) this.passed.push(f.raw);
      this.passed.push(this.buf);
      return Buffer.concat(this.passed);
    }
    return Buffer.concat(this.raw);
  }

  /** Whether our SETTINGS was answered (the bytes can then never be handed over raw). */
  get answered(): boolean {
    return this.ackRemoved;
  }

  private done(): PreambleStep {
    if (this.blockFrames !== undefined) for (const f of this.blockFrames) this.passed.push(f.raw);
    this.passed.push(this.buf);
    return { kind: 'done', bytes: Buffer.concat(this.passed) };
  }

  private nextFrame(): Frame | undefined {
    if (this.buf.length < FRAME_HEADER) return undefined;
    const len = this.buf.readUIntBE(0, 3);
    if (this.buf.length < FRAME_HEADER + len) return undefined;
    const raw = this.buf.subarray(0, FRAME_HEADER + len);
    this.buf = this.buf.subarray(FRAME_HEADER + len);
    return {
      type: raw[3]!,
      flags: raw[4]!,
      stream: raw.readUInt32BE(5) & 0x7fffffff,
      payload: raw.subarray(FRAME_HEADER),
      raw,
    };
  }

  /** HEADERS and its CONTINUATIONs; at END_HEADERS, the block as node:http2 will get it. */
  private collect(f: Frame): void {
    const frames = (this.blockFrames ??= []);
    frames.push(f);
    if (!(f.flags & FLAG.END_HEADERS)) return;
    this.blockFrames = undefined;
    this.blockSeen = true;
    this.passed.push(this.rewritten(frames));
  }

  /** The header block's frames as node:http2 will get them: its :authority fixed. */
  private rewritten(frames: Frame[]): Buffer {
    const first = frames[0]!;
    const head = first.type === TYPE.HEADERS ? headersFragment(first) : undefined;
    const unchanged = Buffer.concat(frames.map((x) => x.raw));
    if (head === undefined || frames.slice(1).some((x) => x.type !== TYPE.CONTINUATION))
      return unchanged;
    const whole = Buffer.concat([head.fragment, ...frames.slice(1).map((x) => x.payload)]);
    const fixed = rewriteAuthority(whole);
    if (fixed === undefined) return unchanged;
    // One HEADERS frame, without padding, when it fits node:http2's default maximum frame
    // size (16 KiB); otherwise the block goes as it came.
    const flags = (first.flags & ~(FLAG.PADDED | FLAG.END_HEADERS)) | FLAG.END_HEADERS;
    const payload = Buffer.concat([head.prefix, fixed]);
    return payload.length <= 16_384
      ? frameBytes(TYPE.HEADERS, flags, first.stream, payload)
      : unchanged;
  }
}
