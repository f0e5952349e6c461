/**
 * Transport frames: what one websocket binary message carries between two members.
 *
 *   batch:     [1][count: uvarint][message]...        every small message of one turn
 *   snapChunk: [2][id][total][offset][chunk bytes]   one slice of an encoded `snap` message
 *
 * Snapshots travel in chunks so a large one neither needs one huge websocket message nor
 * holds up heartbeats and appends, which are interleaved between its chunks. Chunks of one
 * snapshot arrive in order on one connection (websocket keeps order); the receiver
 * reassembles them and decodes the whole message when the last chunk lands.
 */
import type { Message } from '../types.js';
import { decodeMessage, encodeMessage, estimateSize, readMessage } from './codec.js';
import { Reader, WireError, Writer } from './wire.js';

export const FrameKind = { Batch: 1, SnapChunk: 2 } as const;

export function encodeBatch(messages: readonly Message[]): Uint8Array {
  let size = 16;
  for (const m of messages) size += estimateSize(m);
  const w = new Writer(size).u8(FrameKind.Batch).uvarint(messages.length);
  for (const m of messages) encodeMessage(m, w);
  return w.finish();
}

export interface SnapChunk {
  id: number;
  total: number;
  offset: number;
  chunk: Uint8Array;
}

export function encodeSnapChunk(c: SnapChunk): Uint8Array {
  return new Writer(c.chunk.length + 32)
    .u8(FrameKind.SnapChunk)
    .uvarint(c.id)
    .uvarint(c.total)
    .uvarint(c.offset)
    .bytes(c.chunk)
    .finish();
}

/** Splits an encoded snapshot message into chunk frames of at most `chunkBytes` payload. */
export function chunkSnapshot(id: number, encoded: Uint8Array, chunkBytes: number): Uint8Array[] {
  const frames: Uint8Array[] = [];
  for (let offset = 0; offset < encoded.length; offset += chunkBytes) {
    const chunk = encoded.subarray(offset, Math.min(encoded.length, offset + chunkBytes));
    frames.push(encodeSnapChunk({ id, total: encoded.length, offset, chunk }));
  }
  return frames;
}

export type Frame =
  | { kind: typeof FrameKind.Batch; messages: Message[] }
  | ({ kind: typeof FrameKind.SnapChunk } & SnapChunk);

export function decodeFrame(bytes: Uint8Array): Frame {
  const r = new Reader(bytes);
  const kind = r.u8();
  if (kind === FrameKind.Batch) {
    const n = r.uvarint();
    if (n > r.remaining) throw new WireError(`message count ${n} exceeds frame`);
    const messages: Message[] = [];
    for (let i = 0; i < n; i++) messages.push(readMessage(r));
    r.end();
    return { kind, messages };
  }
  if (kind === FrameKind.SnapChunk) {
    const id = r.uvarint();
    const total = r.uvarint();
    const offset = r.uvarint();
    const chunk = r.bytes();
    r.end();
    if (offset + chunk.length > total) throw new WireError('snapshot chunk past its total');
    return { kind, id, total, offset, chunk };
  }
  throw new WireError(`unknown frame kind ${kind}`);
}

/**
 * Reassembles snapshot chunks from one connection. Invariant: `parts` hold bytes
 * [0, received) of snapshot `id`, in order. A chunk that does not continue that exactly
 * (new id, wrong offset) restarts or abandons the assembly: the leader will resend.
 */
export class SnapshotAssembler {
  private id = -1;
  private total = 0;
  private received = 0;
  private parts: Uint8Array[] = [];

  constructor(private readonly maxBytes: number) {}

  /** Adds a chunk; returns the decoded `snap` message when it completes one. */
  add(c: SnapChunk): Message | undefined {
    if (c.total > this.maxBytes) throw new WireError(`snapshot of ${c.total} bytes is too large`);
    if (c.offset === 0) this.reset(c.id, c.total);
    if (c.id !== this.id || c.offset !== this.received || c.total !== this.total) {
      this.reset(-1, 0);
      throw new WireError(`snapshot chunk out of order (id ${c.id}, offset ${c.offset})`);
    }
    this.parts.push(c.chunk);
    this.received += c.chunk.length;
    if (this.received < this.total) return undefined;
    const whole = Buffer.concat(this.parts);
    this.reset(-1, 0);
    const m = decodeMessage(whole);
    if (m.type !== 'snap') throw new WireError(`chunked message is a ${m.type}, not a snap`);
    return m;
  }

  private reset(id: number, total: number): void {
    this.id = id;
    this.total = total;
    this.received = 0;
    this.parts = [];
  }
}
