/**
 * The payload of a normal Raft entry as this member writes it:
 *
 *   [kind: u8][request ID: u64 big-endian][body]
 *
 * kind 1 (command): body = a store command (src/store/codec.ts); applied to the store.
 * kind 2 (attributes): body = JSON {id, name, clientURLs}: a member announcing itself after
 *   it starts (etcd's "publish"); applied to the member registry.
 *
 * The request ID lets the member that proposed an entry find the waiting client when the
 * entry is applied, whichever member's log it passed through; on every other member it is
 * ignored. It never reaches the store, so apply stays deterministic.
 */
import { randomBytes } from 'node:crypto';
import { EtceteraError } from '../errors.js';

export const EntryKind = { COMMAND: 1, ATTRIBUTES: 2 } as const;
export type EntryKind = (typeof EntryKind)[keyof typeof EntryKind];

const HEADER = 9;

export interface DecodedEntry {
  kind: EntryKind;
  requestId: number;
  body: Uint8Array;
}

export function encodeEntry(kind: EntryKind, requestId: number, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(HEADER + body.length);
  const view = new DataView(out.buffer);
  out[0] = kind;
  view.setUint32(1, Math.floor(requestId / 2 ** 32));
  view.setUint32(5, requestId >>> 0);
  out.set(body, HEADER);
  return out;
}

export function decodeEntry(data: Uint8Array): DecodedEntry {
  const kind = data[0];
  if (data.length < HEADER || (kind !== EntryKind.COMMAND && kind !== EntryKind.ATTRIBUTES))
    throw new EtceteraError('ERR_CORRUPT', { detail: 'unknown entry kind' });
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const requestId = view.getUint32(1) * 2 ** 32 + view.getUint32(5);
  return { kind, requestId, body: data.subarray(HEADER) };
}

/**
 * Request IDs: a random 21-bit prefix per process and a 32-bit counter, so IDs from
 * different members (or a restarted one) practically never meet in one waiter table.
 */
export class RequestIds {
  private readonly prefix = randomBytes(4).readUInt32BE(0) >>> 11;
  private counter = 0;

  next(): number {
    this.counter = (this.counter + 1) >>> 0;
    return this.prefix * 2 ** 32 + this.counter;
  }
}

/**
 * Outcomes waiting for the proposer. `begin` before proposing; apply calls `deliver`
 * (ignored for IDs not begun here); the proposer calls `take` once its proposal resolved,
 * or `cancel` when it failed. Every path removes the ID, so nothing stays behind.
 */
export class Waiters<T> {
  private readonly open = new Map<number, { outcome?: T }>();

  get size(): number {
    return this.open.size;
  }

  begin(id: number): void {
    this.open.set(id, {});
  }

  deliver(id: number, outcome: T): void {
    const w = this.open.get(id);
    if (w !== undefined) w.outcome = outcome;
  }

  take(id: number): T | undefined {
    const w = this.open.get(id);
    this.open.delete(id);
    return w?.outcome;
  }

  cancel(id: number): void {
    this.open.delete(id);
  }
}
