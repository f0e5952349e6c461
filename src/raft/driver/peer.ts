/**
 * PeerSender: the outbound half of the link to one peer. It keeps one long-lived websocket
 * to the peer's /raft endpoint, reconnecting with exponential backoff and jitter, and
 * sends each turn's queued messages as one batch frame.
 *
 * It never blocks the driver and never grows without bound:
 *   - the queue is capped in messages and bytes; past the cap a message is dropped (Raft
 *     tolerates loss: the leader retries, elections time out);
 *   - while the socket's own buffer is above `maxBufferedBytes` nothing more is written;
 *     queued messages wait (and then drop at the cap) rather than pile up in the kernel;
 *   - while disconnected, messages are dropped and Raft is told the peer is unreachable,
 *     so a leader stops pipelining to it and probes instead.
 * Snapshots are encoded once and sent a chunk per flush, interleaved with the batches, and
 * reported 'finish' once the last chunk is written, 'failure' if the link drops first.
 */
import type { ConnectionOptions } from 'node:tls';
import WebSocket from 'ws';
import type { Message, NodeId, SnapshotStatus } from '../types.js';
import type { Clock, TimerHandle } from './clock.js';
import { encodeMessage } from './codec.js';
import { chunkSnapshot, encodeBatch } from './frames.js';

export interface PeerLimits {
  /** Messages queued for one peer before new ones are dropped. */
  readonly maxQueueMessages: number;
  /** Estimated bytes queued for one peer before new messages are dropped. */
  readonly maxQueueBytes: number;
  /** Socket send buffer above which nothing more is written this turn. */
  readonly maxBufferedBytes: number;
  /** Upper bound of one batch frame (a single larger message still goes alone). */
  readonly maxFrameBytes: number;
  readonly snapshotChunkBytes: number;
  readonly backoffMinMs: number;
  readonly backoffMaxMs: number;
}

export interface PeerContext {
  readonly selfId: NodeId;
  readonly clusterToken: string;
  readonly path: string;
  readonly clock: Clock;
  readonly limits: PeerLimits;
  readonly random: () => number;
  readonly onUnreachable: (id: NodeId) => void;
  readonly onSnapshotStatus: (id: NodeId, status: SnapshotStatus) => void;
  /** TLS options for wss:// peers (https:// peer URLs): CA, client certificate and key. */
  readonly tls?: PeerTls;
}

/** What dialling an https:// peer needs: node:tls's options, as ws passes them on. */
export type PeerTls = Pick<
  ConnectionOptions,
  'ca' | 'cert' | 'key' | 'rejectUnauthorized' | 'minVersion'
>;

export interface PeerStats {
  sent: number;
  /** Batch frames written (each carries every message queued in one turn, up to a cap). */
  frames: number;
  dropped: number;
  connects: number;
  snapshotsSent: number;
}

/** Bytes a message roughly occupies on the wire, for the queue budget. */
function estimateBytes(m: Message): number {
  let n = 24;
  if (m.type === 'app' || m.type === 'prop') for (const e of m.entries) n += e.data.length + 12;
  return n;
}

let snapshotIds = 0;

export class PeerSender {
  private ws: WebSocket | undefined;
  private open = false;
  private closed = false;
  private queue: Message[] = [];
  private queuedBytes = 0;
  private snaps: { frames: Uint8Array[]; next: number }[] = [];
  private backoffMs: number;
  private retry: TimerHandle | undefined;
  private reconnect: TimerHandle | undefined;
  private reportedUnreachable = false;
  readonly stats: PeerStats = { sent: 0, frames: 0, dropped: 0, connects: 0, snapshotsSent: 0 };

  constructor(
    readonly id: NodeId,
    private url: string,
    private readonly ctx: PeerContext,
  ) {
    this.backoffMs = ctx.limits.backoffMinMs;
    this.connect();
  }

  get connected(): boolean {
    return this.open;
  }

  /** Points the sender at a new URL (membership change); reconnects if it differs. */
  setUrl(url: string): void {
    if (url === this.url) return;
    this.url = url;
    this.ws?.terminate();
  }

  /**
   * The peer just dialled us, so it is up: if we are waiting out a backoff to reach it,
   * reconnect now (a restarted member is then reachable at once, not after up to
   * `backoffMaxMs`).
   */
  nudge(): void {
    if (this.closed || this.ws !== undefined || this.reconnect === undefined) return;
    this.reconnect.cancel();
    this.reconnect = undefined;
    this.backoffMs = this.ctx.limits.backoffMinMs;
    this.connect();
  }

  /** Queues a message; returns false when it was dropped. */
  enqueue(m: Message): boolean {
    if (this.closed || (this.ws === undefined && !this.open)) {
      // A leader waits in snapshot state until told: a dropped snapshot must say so.
      if (m.type === 'snap') this.ctx.onSnapshotStatus(this.id, 'failure');
      return this.drop();
    }
    if (m.type === 'snap') {
      const encoded = encodeMessage(m).finish();
      const frames = chunkSnapshot(++snapshotIds, encoded, this.ctx.limits.snapshotChunkBytes);
      this.snaps.push({ frames, next: 0 });
      return true;
    }
    const size = estimateBytes(m);
    const { maxQueueMessages, maxQueueBytes } = this.ctx.limits;
    if (this.queue.length >= maxQueueMessages || this.queuedBytes + size > maxQueueBytes) {
      return this.drop();
    }
    this.queue.push(m);
    this.queuedBytes += size;
    return true;
  }

  /** Writes what is queued, within the socket buffer limit. */
  flush(): void {
    const ws = this.ws;
    if (!this.open || ws === undefined) return;
    if (ws.bufferedAmount > this.ctx.limits.maxBufferedBytes) return this.retryLater(5);
    this.sendSnapshotChunk(ws);
    while (this.queue.length > 0) {
      const batch = this.takeBatch();
      this.stats.sent += batch.length;
      this.stats.frames++;
      ws.send(encodeBatch(batch));
    }
    if (this.snaps.length > 0) this.retryLater(0);
  }

  close(): void {
    this.closed = true;
    this.retry?.cancel();
    this.reconnect?.cancel();
    this.failSnapshots();
    this.queue = [];
    this.ws?.terminate();
  }

  private takeBatch(): Message[] {
    let bytes = 0;
    let n = 0;
    while (n < this.queue.length) {
      bytes += estimateBytes(this.queue[n]!);
      if (n > 0 && bytes > this.ctx.limits.maxFrameBytes) break;
      n++;
    }
    const batch = this.queue.splice(0, n);
    for (const m of batch) this.queuedBytes -= estimateBytes(m);
    return batch;
  }

  private sendSnapshotChunk(ws: WebSocket): void {
    const snap = this.snaps[0];
    if (snap === undefined) return;
    const frame = snap.frames[snap.next++]!;
    const last = snap.next === snap.frames.length;
    if (last) this.snaps.shift();
    ws.send(frame, (err) => {
      if (!last) return;
      if (err === undefined || err === null) {
        this.stats.snapshotsSent++;
        this.ctx.onSnapshotStatus(this.id, 'finish');
      } else {
        this.ctx.onSnapshotStatus(this.id, 'failure');
      }
    });
  }

  private retryLater(ms: number): void {
    if (this.retry !== undefined || this.closed) return;
    this.retry = this.ctx.clock.setTimeout(() => {
      this.retry = undefined;
      this.flush();
    }, ms);
  }

  private drop(): false {
    this.stats.dropped++;
    if (!this.reportedUnreachable) {
      this.reportedUnreachable = true;
      this.ctx.onUnreachable(this.id);
    }
    return false;
  }

  private connect(): void {
    if (this.closed) return;
    const u = new URL(this.ctx.path, this.url.replace(/^http/, 'ws'));
    u.searchParams.set('from', String(this.ctx.selfId));
    u.searchParams.set('to', String(this.id));
    u.searchParams.set('cluster', this.ctx.clusterToken);
    const ws = new WebSocket(u, {
      perMessageDeflate: false,
      handshakeTimeout: 3000,
      // Masking defends browsers' proxies from cache poisoning; between members it only
      // costs an XOR pass over every frame. An all-zero mask lets ws skip it.
      generateMask: (mask) => mask.fill(0),
      ...(u.protocol === 'wss:' ? (this.ctx.tls ?? {}) : {}),
    });
    this.ws = ws;
    ws.on('open', () => {
      if (this.ws !== ws) return;
      this.open = true;
      this.reportedUnreachable = false;
      this.backoffMs = this.ctx.limits.backoffMinMs;
      this.stats.connects++;
      this.flush();
    });
    ws.on('error', () => {}); // 'close' follows and does the work
    ws.on('close', () => this.onClose(ws));
  }

  private onClose(ws: WebSocket): void {
    if (this.ws !== ws) return;
    this.ws = undefined;
    this.open = false;
    this.failSnapshots();
    for (let k = this.queue.length; k > 0; k--) this.drop();
    this.queue = [];
    this.queuedBytes = 0;
    if (this.closed) return;
    const { backoffMaxMs } = this.ctx.limits;
    const delay = this.backoffMs * (0.5 + this.ctx.random());
    this.backoffMs = Math.min(backoffMaxMs, this.backoffMs * 2);
    this.reconnect = this.ctx.clock.setTimeout(() => {
      this.reconnect = undefined;
      this.connect();
    }, delay);
  }

  private failSnapshots(): void {
    for (const _ of this.snaps) this.ctx.onSnapshotStatus(this.id, 'failure');
    this.snaps = [];
  }
}
