/**
 * Just enough protobuf to talk to etcd's gRPC Watch and Put, written by hand from the field
 * numbers of etcd's API (no .proto files, no generated code), for a lean load generator.
 *
 * Encoded: WatchRequest{create_request(1){key(1), range_end(2), start_revision(3)}} and
 * PutRequest{key(1), value(2)}.
 * Decoded, without building objects per event: WatchResponse{header(1){revision(3)},
 * watch_id(2), created(3), canceled(4), compact_revision(5), cancel_reason(6), events(11)
 * {kv(2){mod_revision(3), value(5)}}} and PutResponse{header(1){revision(3)}}.
 *
 * Wire rules used: a tag is (field << 3) | wireType; wire type 0 is a varint, 2 is
 * length-delimited (varint length, then bytes); int64 is a plain varint (negative numbers take
 * ten bytes, two's complement).
 */

const VARINT = 0;
const LEN = 2;
const FIXED64 = 1;
const FIXED32 = 5;

function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

function putVarint(out: Buffer, at: number, n: number): number {
  while (n >= 0x80) {
    out[at++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  out[at++] = n;
  return at;
}

/** A length-delimited field: tag, length, bytes. */
function lenField(field: number, body: Uint8Array): Buffer {
  const tag = (field << 3) | LEN;
  const out = Buffer.allocUnsafe(varintSize(tag) + varintSize(body.length) + body.length);
  let at = putVarint(out, 0, tag);
  at = putVarint(out, at, body.length);
  out.set(body, at);
  return out;
}

function varintField(field: number, n: number): Buffer {
  const tag = (field << 3) | VARINT;
  const out = Buffer.allocUnsafe(varintSize(tag) + varintSize(n));
  putVarint(out, putVarint(out, 0, tag), n);
  return out;
}

/** WatchRequest with a create_request for [key, rangeEnd) from startRevision (0 = now). */
export function encodeWatchCreate(
  key: Uint8Array,
  rangeEnd: Uint8Array,
  startRevision: number,
): Buffer {
  const parts = [lenField(1, key)];
  if (rangeEnd.length > 0) parts.push(lenField(2, rangeEnd));
  if (startRevision > 0) parts.push(varintField(3, startRevision));
  return lenField(1, Buffer.concat(parts));
}

/** PutRequest{key, value}. */
export function encodePut(key: Uint8Array, value: Uint8Array): Buffer {
  return Buffer.concat([lenField(1, key), lenField(2, value)]);
}

/** A cursor over one message; `end` bounds the current (sub)message. */
class Reader {
  at = 0;
  constructor(
    readonly buf: Buffer,
    public end: number,
  ) {}

  varint(): number {
    const start = this.at;
    let n = 0;
    let mul = 1;
    for (;;) {
      const b = this.buf[this.at++]!;
      n += (b & 0x7f) * mul;
      if (b < 0x80) return n > Number.MAX_SAFE_INTEGER ? this.bigVarint(start) : n;
      mul *= 128;
    }
  }

  /** Rare: an int64 beyond 2^53, or negative (ten bytes, two's complement; etcd's -1). */
  private bigVarint(start: number): number {
    let n = 0n;
    let shift = 0n;
    for (let i = start; i < this.at; i++) {
      n |= BigInt(this.buf[i]! & 0x7f) << shift;
      shift += 7n;
    }
    return Number(BigInt.asIntN(64, n));
  }

  skip(wireType: number): void {
    if (wireType === VARINT) this.varint();
    else if (wireType === LEN) {
      const len = this.varint(); // before reading `at`: `at += varint()` would use the old `at`
      this.at += len;
    } else if (wireType === FIXED64) this.at += 8;
    else if (wireType === FIXED32) this.at += 4;
    else throw new Error(`protobuf: wire type ${wireType} not supported`);
  }
}

/** ResponseHeader.revision inside [r.at, end). */
function headerRevision(r: Reader, end: number): number {
  let revision = 0;
  while (r.at < end) {
    const tag = r.varint();
    if (tag === ((3 << 3) | VARINT)) revision = r.varint();
    else r.skip(tag & 7);
  }
  return revision;
}

/** What a watch response says besides its events. */
export interface WatchResponseInfo {
  watchId: number;
  headerRevision: number;
  created: boolean;
  canceled: boolean;
  compactRevision: number;
  cancelReason: string;
  events: number;
}

/**
 * Called once per event with its kv's mod_revision and the first 8 bytes of its value read as
 * a big-endian double (the writer's send stamp), or NaN when the value is shorter.
 */
export type EventVisitor = (modRevision: number, stamp: number) => void;

/**
 * Walks a WatchResponse. Events are handed to `visit` as they are read, before `info` is
 * complete (watch_id precedes events on etcd's wire, field order, so `info.watchId` is set).
 */
export function scanWatchResponse(buf: Buffer, info: WatchResponseInfo, visit: EventVisitor): void {
  info.watchId = 0;
  info.headerRevision = 0;
  info.created = false;
  info.canceled = false;
  info.compactRevision = 0;
  info.cancelReason = '';
  info.events = 0;
  const r = new Reader(buf, buf.length);
  while (r.at < r.end) {
    const tag = r.varint();
    const field = tag >>> 3;
    if ((tag & 7) === LEN) {
      const len = r.varint();
      const end = r.at + len;
      if (field === 1) headerRevision(r, end);
      else if (field === 11) {
        scanEvent(r, end, visit);
        info.events++;
      } else if (field === 6) info.cancelReason = buf.toString('utf8', r.at, end);
      r.at = end;
    } else if ((tag & 7) === VARINT) {
      const v = r.varint();
      if (field === 2) info.watchId = v;
      else if (field === 3) info.created = v !== 0;
      else if (field === 4) info.canceled = v !== 0;
      else if (field === 5) info.compactRevision = v;
    } else r.skip(tag & 7);
  }
}

/** Event{kv(2){mod_revision(3), value(5)}} inside [r.at, end). */
function scanEvent(r: Reader, end: number, visit: EventVisitor): void {
  let modRevision = 0;
  let stamp = Number.NaN;
  while (r.at < end) {
    const tag = r.varint();
    if (tag !== ((2 << 3) | LEN)) {
      r.skip(tag & 7);
      continue;
    }
    const kvEnd = r.varint() + r.at;
    while (r.at < kvEnd) {
      const t = r.varint();
      if (t === ((3 << 3) | VARINT)) modRevision = r.varint();
      else if (t === ((5 << 3) | LEN)) {
        const len = r.varint();
        if (len >= 8) stamp = r.buf.readDoubleBE(r.at);
        r.at += len;
      } else r.skip(t & 7);
    }
  }
  visit(modRevision, stamp);
}

/** PutResponse.header.revision. */
export function decodePutRevision(buf: Buffer): number {
  const r = new Reader(buf, buf.length);
  while (r.at < r.end) {
    const tag = r.varint();
    if (tag === ((1 << 3) | LEN)) {
      const end = r.varint() + r.at;
      return headerRevision(r, end);
    }
    r.skip(tag & 7);
  }
  return 0;
}
