/**
 * One Kubernetes watch: its filter, its format, and where its lines go. A watcher starts in
 * `replaying` (initial events or history are being written; live events queue up behind
 * them), turns `live` (events are written as they are dispatched), and ends `closed`.
 *
 * Ordering invariant: every line reaches the sink in revision order, and a bookmark at R is
 * written only when the watcher is live and every event at or below R was dispatched to it.
 */
import type { ObjectFilter } from '../../../k8s/filter.js';
import type { ResourceInfo } from '../../../k8s/types.js';
import {
  bookmarkLine,
  jsonLine,
  tableLine,
  type WatchEventType,
  type WatchFormat,
} from './encode.js';
import type { KubeEvent } from './events.js';

/** Where a watcher's lines go: an HTTP response, a websocket. */
export interface WatchSink {
  write(text: string): void;
  /** Bytes written that the peer has not taken yet. */
  bufferedBytes(): number;
  /** Ends the stream cleanly (terminating chunk, close frame). Idempotent. */
  end(): void;
}

export const WatcherState = { replaying: 'replaying', live: 'live', closed: 'closed' } as const;
export type WatcherState = (typeof WatcherState)[keyof typeof WatcherState];

export interface WatcherOptions {
  bookmarks: boolean;
  /** A watcher with more than this many bytes unread by its peer is ended (it resumes). */
  maxBufferedBytes: number;
  /** When the stream ends on its own (timeoutSeconds, or the server's default). */
  deadlineMs: number;
}

let nextId = 1;

export class KubeWatcher {
  readonly id = nextId++;
  state: WatcherState = WatcherState.replaying;
  /** Live events that arrived while replaying; written once the replay is done. */
  private pending: KubeEvent[] = [];
  /** The revision of the last event written (replay included). */
  lastRevision = 0;
  private columnsSent = false;
  private overflowing = false;
  lastWriteMs: number;
  lastBookmarkMs: number;
  /** Events offered by the hub (a measure of how well the index spares this watcher). */
  offered = 0;
  /** Set by the hub: removes the watcher from its index. */
  onClosed: ((w: KubeWatcher) => void) | undefined;

  constructor(
    readonly info: ResourceInfo,
    readonly filter: ObjectFilter,
    readonly format: WatchFormat,
    private readonly sink: WatchSink,
    readonly options: WatcherOptions,
    private readonly now: () => number,
  ) {
    this.lastWriteMs = now();
    this.lastBookmarkMs = this.lastWriteMs;
  }

  /** Called by the hub for every event of the watcher's resource that may concern it. */
  offer(e: KubeEvent): void {
    this.offered++;
    if (this.state === WatcherState.live) this.deliver(e);
    else if (this.state === WatcherState.replaying) this.pending.push(e);
  }

  /** The event type this watcher sees for `e` (selector transitions included), if any. */
  private typeFor(e: KubeEvent): WatchEventType | undefined {
    const newMatch = e.obj !== undefined && this.filter.matches(e.obj.obj);
    const oldMatch = e.old !== undefined && this.filter.matches(e.old.obj);
    if (newMatch) return oldMatch ? 'MODIFIED' : 'ADDED';
    return oldMatch ? 'DELETED' : undefined;
  }

  /** Writes one event if it concerns this watcher. Used for replay and live events alike. */
  deliver(e: KubeEvent): void {
    if (e.revision <= this.lastRevision && this.state === WatcherState.live) return;
    const type = this.typeFor(e);
    this.lastRevision = Math.max(this.lastRevision, e.revision);
    if (type === undefined) return;
    if (this.format.kind === 'json') this.write(jsonLine(e, type, this.info));
    else {
      const line = tableLine(
        e,
        type,
        this.info,
        this.format.includeObject,
        !this.columnsSent,
        this.now(),
      );
      this.columnsSent = true;
      this.write(line);
    }
  }

  /** Writes a line made outside the event stream (initial events, bookmarks). */
  writeLine(text: string, isTable = false): void {
    if (isTable) this.columnsSent = true;
    this.write(text);
  }

  get tableColumnsSent(): boolean {
    return this.columnsSent;
  }

  /** Ends the replay: writes what queued up meanwhile (only events after the replay). */
  goLive(replayedThrough: number): void {
    if (this.state !== WatcherState.replaying) return;
    this.lastRevision = Math.max(this.lastRevision, replayedThrough);
    this.state = WatcherState.live;
    const queued = this.pending;
    this.pending = [];
    for (const e of queued) {
      if (this.state !== WatcherState.live) return;
      if (e.revision > replayedThrough) this.deliver(e);
    }
  }

  bookmark(revision: number, initialEventsEnd = false): void {
    this.lastBookmarkMs = this.now();
    this.write(bookmarkLine(this.info, revision, initialEventsEnd));
  }

  keepalive(): void {
    this.write('\n');
  }

  private write(text: string): void {
    if (this.state === WatcherState.closed) return;
    this.sink.write(text);
    this.lastWriteMs = this.now();
    if (!this.overflowing && this.sink.bufferedBytes() > this.options.maxBufferedBytes) {
      // End it after the current dispatch turn, so that it never stops inside a revision
      // (a client resuming from the last resourceVersion it saw would miss the rest).
      this.overflowing = true;
      queueMicrotask(() => this.close());
    }
  }

  /** Ends the stream cleanly; the client resumes from the last resourceVersion it saw. */
  close(): void {
    if (this.state === WatcherState.closed) return;
    this.state = WatcherState.closed;
    this.pending = [];
    this.sink.end();
    this.onClosed?.(this);
  }
}
