/**
 * Inflights: the `app` messages sent to one follower in pipelined replication and not yet
 * acknowledged, as (last index, bytes) pairs in a ring. It caps both the count and the
 * total bytes, which is the leader's flow control: a slow follower cannot make the leader
 * buffer an unbounded log tail in the transport.
 *
 * Invariant: indexes in the ring strictly increase from `start` (messages are sent in log
 * order; an ack for index i frees every message ending at or below i).
 */
import type { ByteSize, LogIndex } from './types.js';

export class Inflights {
  private readonly cap: number;
  private readonly maxBytes: number;
  private readonly indexes: number[];
  private readonly sizes: number[];
  private start = 0;
  count = 0;
  bytes = 0;

  /** `maxBytes` 0 = no byte cap. */
  constructor(cap: number, maxBytes: ByteSize) {
    this.cap = cap;
    this.maxBytes = maxBytes;
    this.indexes = new Array<number>(cap).fill(0);
    this.sizes = new Array<number>(cap).fill(0);
  }

  /** Record a message ending at `index`. The caller checked `full()` first. */
  add(index: LogIndex, bytes: ByteSize): void {
    if (this.count === this.cap) throw new Error('raft invariant violated: inflights overflow');
    const slot = (this.start + this.count) % this.cap;
    this.indexes[slot] = index;
    this.sizes[slot] = bytes;
    this.count++;
    this.bytes += bytes;
  }

  /** Free every message ending at or below `index` (an ack up to `index`). */
  freeLE(index: LogIndex): void {
    while (this.count > 0) {
      if (this.indexes[this.start]! > index) break;
      this.bytes -= this.sizes[this.start]!;
      this.start = (this.start + 1) % this.cap;
      this.count--;
    }
    if (this.count === 0) this.start = 0;
  }

  /** Free the oldest message (it was probably lost; let one more go out). */
  freeFirst(): void {
    if (this.count > 0) this.freeLE(this.indexes[this.start]! as LogIndex);
  }

  full(): boolean {
    return this.count === this.cap || (this.maxBytes > 0 && this.bytes >= this.maxBytes);
  }

  reset(): void {
    this.count = 0;
    this.bytes = 0;
    this.start = 0;
  }
}
