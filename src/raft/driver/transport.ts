/**
 * RaftTransport: message passing between the members of one group over websockets.
 *
 * Each member dials every peer once (a {@link PeerSender} per peer: its outbound stream)
 * and accepts the peers' streams on `path` (default /raft) as its inbound ones, so each
 * pair of members shares two long-lived connections, one per direction, as etcd's stream
 * transport does. This avoids any dial race or tie-break, and a restarted member simply
 * replaces its old inbound stream at the other end.
 *
 * `send()` only queues; one flush per event-loop turn (setImmediate) writes every peer's
 * queue as one batch frame. Inbound frames are decoded and handed to `onMessage`
 * synchronously; a malformed frame is dropped whole and counted.
 *
 * Who may speak: with `isMember`, every inbound message whose sender is not a current
 * member (asked per message, so the set follows membership changes as they are applied,
 * learners included) is dropped before Raft sees it, counted, and reported through
 * `onDrop` with the remote address and the claimed id. Without peer TLS the claimed id is
 * not authenticated; this keeps strangers (an unknown id) out, not a forger of a member's id.
 * With https:// peer URLs the dialler presents `tls` (the member's peer certificate), and
 * the peer listener (src/server/peer-http.ts) with --peer-client-cert-auth refuses the
 * handshake of anyone without a certificate signed by the peer CA.
 *
 * Mounting: `handleUpgrade(req, socket, head)` serves an upgrade on an existing HTTP server
 * (the member's peer listener) and returns false for other paths; `attach(server)` wires it
 * as an 'upgrade' listener; `listen()` runs a standalone server on 127.0.0.1.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { Message, NodeId, SnapshotStatus } from '../types.js';
import { type Clock, systemClock } from './clock.js';
import { decodeFrame, FrameKind, SnapshotAssembler } from './frames.js';
import { type PeerLimits, PeerSender, type PeerStats, type PeerTls } from './peer.js';

export interface RaftTransportOptions {
  readonly id: NodeId;
  /** Delivery of every valid inbound message addressed to this member. */
  readonly onMessage: (m: Message) => void;
  readonly onUnreachable?: (id: NodeId) => void;
  readonly onSnapshotStatus?: (id: NodeId, status: SnapshotStatus) => void;
  /** Peers' base URLs (http://host:port), by id. Default none; see `setPeer`. */
  readonly peers?: ReadonlyMap<NodeId, string>;
  /** Both ends must agree, so members of different clusters never talk. Default ''. */
  readonly clusterToken?: string;
  readonly path?: string;
  readonly clock?: Clock;
  readonly limits?: Partial<PeerLimits> & { readonly maxSnapshotBytes?: number };
  readonly random?: () => number;
  /** Whether `id` is a current member (voter or learner). Absent: everyone is accepted. */
  readonly isMember?: (id: NodeId) => boolean;
  /** Called for each inbound message dropped because its sender is not a member. */
  readonly onDrop?: (d: DroppedMessage) => void;
  /** TLS for dialling https:// peers (the member's peer certificate and the peer CA). */
  readonly tls?: PeerTls;
}

export interface DroppedMessage {
  /** The remote address of the stream (ip:port). */
  readonly remote: string;
  /** The sender id the stream claimed. */
  readonly claimed: NodeId;
  readonly type: Message['type'];
  readonly reason: 'not a member';
}

export const DEFAULT_PEER_LIMITS: PeerLimits = {
  maxQueueMessages: 8192,
  maxQueueBytes: 64 * 1024 * 1024,
  maxBufferedBytes: 16 * 1024 * 1024,
  maxFrameBytes: 4 * 1024 * 1024,
  snapshotChunkBytes: 512 * 1024,
  backoffMinMs: 50,
  backoffMaxMs: 2000,
};
const DEFAULT_MAX_SNAPSHOT_BYTES = 1024 * 1024 * 1024;

export interface TransportStats {
  received: number;
  badFrames: number;
  /** Messages dropped because their sender is not a member. */
  dropped: number;
  peers: Record<number, PeerStats & { connected: boolean }>;
}

export class RaftTransport {
  private readonly peers = new Map<NodeId, PeerSender>();
  private readonly inbound = new Map<NodeId, WebSocket>();
  private readonly wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: 128 * 1024 * 1024,
  });
  private readonly path: string;
  private readonly token: string;
  private readonly limits: PeerLimits;
  private readonly maxSnapshotBytes: number;
  private flushScheduled = false;
  private server: Server | undefined;
  private closed = false;
  private received = 0;
  private badFrames = 0;
  private dropped = 0;

  constructor(private readonly opts: RaftTransportOptions) {
    this.path = opts.path ?? '/raft';
    this.token = opts.clusterToken ?? '';
    this.limits = { ...DEFAULT_PEER_LIMITS, ...opts.limits };
    this.maxSnapshotBytes = opts.limits?.maxSnapshotBytes ?? DEFAULT_MAX_SNAPSHOT_BYTES;
    for (const [id, url] of opts.peers ?? []) this.setPeer(id, url);
  }

  /** Adds a peer, or changes its URL. */
  setPeer(id: NodeId, url: string): void {
    if (id === this.opts.id || this.closed) return;
    const existing = this.peers.get(id);
    if (existing !== undefined) return existing.setUrl(url);
    this.peers.set(id, new PeerSender(id, url, this.peerContext()));
  }

  removePeer(id: NodeId): void {
    this.peers.get(id)?.close();
    this.peers.delete(id);
    this.inbound.get(id)?.close();
    this.inbound.delete(id);
  }

  /** Whether the outbound stream to `id` is open now. */
  isConnected(id: NodeId): boolean {
    return this.peers.get(id)?.connected === true;
  }

  peerIds(): NodeId[] {
    return [...this.peers.keys()];
  }

  /** Queues messages for their peers; they leave in this turn's flush. Never blocks. */
  send(messages: readonly Message[]): void {
    for (const m of messages) {
      const peer = this.peers.get(m.to);
      if (peer === undefined) {
        if (m.type === 'snap') this.opts.onSnapshotStatus?.(m.to, 'failure');
        this.opts.onUnreachable?.(m.to);
        continue;
      }
      peer.enqueue(m);
    }
    if (!this.flushScheduled && messages.length > 0) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Serves a websocket upgrade for `path`; returns false (touching nothing) otherwise. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== this.path) return false;
    const from = Number(url.searchParams.get('from'));
    const to = Number(url.searchParams.get('to'));
    const problem = this.closed
      ? '503 Service Unavailable'
      : !Number.isSafeInteger(from) || from <= 0
        ? '400 Bad Request'
        : to !== this.opts.id
          ? '404 Not Found'
          : url.searchParams.get('cluster') !== this.token
            ? '412 Precondition Failed'
            : undefined;
    if (problem !== undefined) {
      socket.end(`HTTP/1.1 ${problem}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      return true;
    }
    const remote = `${req.socket.remoteAddress ?? '?'}:${req.socket.remotePort ?? '?'}`;
    this.wss.handleUpgrade(req, socket, head, (ws) =>
      this.acceptInbound(from as NodeId, ws, remote),
    );
    return true;
  }

  /** Serves upgrades for `path` on an existing server. Returns a function that detaches. */
  attach(server: Server): () => void {
    const listener = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.handleUpgrade(req, socket, head);
    };
    server.on('upgrade', listener);
    return () => server.off('upgrade', listener);
  }

  /** Runs a standalone peer listener (port 0 = any free port). */
  async listen(port = 0, host = '127.0.0.1'): Promise<AddressInfo> {
    const server = createServer((_req, res) => res.writeHead(404).end());
    this.attach(server);
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    return server.address() as AddressInfo;
  }

  stats(): TransportStats {
    const peers: TransportStats['peers'] = {};
    for (const [id, p] of this.peers) peers[id] = { ...p.stats, connected: p.connected };
    return { received: this.received, badFrames: this.badFrames, dropped: this.dropped, peers };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.peers.values()) p.close();
    this.peers.clear();
    for (const ws of this.inbound.values()) ws.terminate();
    this.inbound.clear();
    this.wss.close();
    const server = this.server;
    if (server !== undefined) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    for (const p of this.peers.values()) p.flush();
  }

  private acceptInbound(from: NodeId, ws: WebSocket, remote: string): void {
    // A newer stream from the same peer (it restarted or reconnected) replaces the old one.
    this.inbound.get(from)?.terminate();
    this.inbound.set(from, ws);
    this.peers.get(from)?.nudge();
    const assembler = new SnapshotAssembler(this.maxSnapshotBytes);
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (!isBinary) return void this.badFrames++;
      this.receive(from, remote, data, assembler);
    });
    ws.on('error', () => {});
    ws.on('close', () => {
      if (this.inbound.get(from) === ws) this.inbound.delete(from);
    });
  }

  private receive(
    from: NodeId,
    remote: string,
    data: Uint8Array,
    assembler: SnapshotAssembler,
  ): void {
    let messages: Message[];
    try {
      const frame = decodeFrame(data);
      if (frame.kind === FrameKind.Batch) messages = frame.messages;
      else if (this.opts.isMember !== undefined && !this.opts.isMember(from)) {
        // Never buffer a stranger's snapshot: drop each chunk as it comes.
        this.drop(from, remote, 'snap');
        return;
      } else {
        const snap = assembler.add(frame);
        messages = snap === undefined ? [] : [snap];
      }
    } catch {
      this.badFrames++;
      return;
    }
    for (const m of messages) {
      // Defence in depth: a stream speaks only for the peer that opened it, to us.
      if (m.from !== from || m.to !== this.opts.id) {
        this.badFrames++;
        continue;
      }
      if (this.opts.isMember !== undefined && !this.opts.isMember(from)) {
        this.drop(from, remote, m.type);
        continue;
      }
      this.received++;
      this.opts.onMessage(m);
    }
  }

  private drop(from: NodeId, remote: string, type: Message['type']): void {
    this.dropped++;
    this.opts.onDrop?.({ remote, claimed: from, type, reason: 'not a member' });
  }

  private peerContext() {
    return {
      selfId: this.opts.id,
      clusterToken: this.token,
      path: this.path,
      clock: this.opts.clock ?? systemClock,
      limits: this.limits,
      random: this.opts.random ?? Math.random,
      onUnreachable: (id: NodeId) => this.opts.onUnreachable?.(id),
      onSnapshotStatus: (id: NodeId, s: SnapshotStatus) => this.opts.onSnapshotStatus?.(id, s),
      ...(this.opts.tls !== undefined ? { tls: this.opts.tls } : {}),
    };
  }
}
