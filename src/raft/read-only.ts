/**
 * ReadOnly: the leader's queue of ReadIndex requests waiting for a heartbeat round to
 * confirm that it is still the leader.
 *
 * Each request records the commit index at the time it arrived. A heartbeat carrying the
 * request's context goes to every member; once a quorum of voters has answered it, that
 * request — and every request queued before it, whose rounds started earlier — is
 * answered with its recorded index. Reads are safe at that index: no other leader could
 * have committed anything newer when this one was still confirmed by a quorum.
 */
import type { LogIndex, NodeId } from './types.js';
import { contextKey } from './util.js';

export interface ReadRequest {
  readonly index: LogIndex;
  readonly context: Uint8Array;
  /** Who asked: the leader itself (answer as a ReadState) or a follower (send a resp). */
  readonly from: NodeId;
  readonly acks: Set<NodeId>;
}

export class ReadOnly {
  private readonly pending = new Map<string, ReadRequest>();
  private readonly queue: string[] = [];

  /** Queue a request; a duplicate context joins the earlier request instead. */
  add(index: LogIndex, context: Uint8Array, from: NodeId): void {
    const key = contextKey(context);
    if (this.pending.has(key)) return;
    this.pending.set(key, { index, context, from, acks: new Set() });
    this.queue.push(key);
  }

  /** Record that `id` confirmed the round of `context`; returns who has confirmed it. */
  recvAck(id: NodeId, context: Uint8Array): ReadonlySet<NodeId> | undefined {
    const rs = this.pending.get(contextKey(context));
    if (rs === undefined) return undefined;
    rs.acks.add(id);
    return rs.acks;
  }

  /** Dequeue and return every request up to and including the one for `context`. */
  advance(context: Uint8Array): ReadRequest[] {
    const key = contextKey(context);
    const at = this.queue.indexOf(key);
    if (at < 0) return [];
    const done = this.queue.splice(0, at + 1);
    return done.map((k) => {
      const rs = this.pending.get(k)!;
      this.pending.delete(k);
      return rs;
    });
  }

  /** The context of the newest pending request (piggy-backed on regular heartbeats). */
  lastPendingContext(): Uint8Array | undefined {
    const k = this.queue[this.queue.length - 1];
    return k === undefined ? undefined : this.pending.get(k)!.context;
  }

  get size(): number {
    return this.queue.length;
  }
}
