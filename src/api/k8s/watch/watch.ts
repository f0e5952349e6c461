/**
 * One Kubernetes watch and the set of them. A watch is a watcher of the watch cache (its
 * encoder is encoder.ts) on a Connection of its own that moves the watcher's frames to the
 * stream with the connection's backpressure: a peer that stops reading fills its socket up
 * to `maxBufferedBytes`, then the watcher's own bounded queue, and then the cache's
 * slow-watcher policy cancels it and the stream ends (the client resumes from the last
 * resourceVersion it saw, as with kube-apiserver).
 *
 * The set runs the periodic duties: the deadline (timeoutSeconds), BOOKMARKs for watches
 * that allow them (a progress request to the cache: the bookmark follows every event at or
 * below its revision), and a newline on quiet streams so that idle timeouts keep them open.
 */

import type { ObjectFilter } from '../../../k8s/filter.js';
import { expired } from '../../../k8s/status.js';
import type { ResourceInfo } from '../../../k8s/types.js';
import {
  type Cacher,
  type Cancellation,
  Connection,
  type FieldSelection,
  type FrameSink,
  type Watcher,
} from '../../../watchcache/index.js';
import { errorLine, type WatchFormat } from './encode.js';
import { KubeWatchEncoder } from './encoder.js';

/** Where a watch's text goes: an HTTP response, a websocket. */
export interface WatchSink {
  write(text: string): void;
  /** Bytes written that the peer has not taken yet. */
  bufferedBytes(): number;
  /** Calls `listener` once, the next time the buffer drains. */
  onceDrain(listener: () => void): void;
  /** Ends the stream cleanly (terminating chunk, close frame). Idempotent. */
  end(): void;
}

export interface WatchSettings {
  info: ResourceInfo;
  filter: ObjectFilter;
  format: WatchFormat;
  bookmarks: boolean;
  /** When the stream ends on its own (timeoutSeconds, or the server's default). */
  deadlineMs: number;
  /** The connection stops taking frames while the peer has this many bytes unread. */
  maxBufferedBytes: number;
}

/** Where the cache watcher starts: its key range, field selection and first revision. */
export interface WatchFrom {
  key: string;
  prefix: boolean;
  field: FieldSelection | undefined;
  startRevision: number;
}

let nextId = 1;

export class KubeWatch {
  readonly id = nextId++;
  closed = false;
  lastWriteMs: number;
  lastBookmarkMs: number;
  private readonly encoder: KubeWatchEncoder;
  private readonly connection: Connection<string>;
  private watcher: Watcher<string> | undefined;
  private startRevision = 0;

  constructor(
    private readonly cacher: Cacher,
    readonly settings: WatchSettings,
    private readonly sink: WatchSink,
    private readonly now: () => number,
    private readonly onClosed: (w: KubeWatch) => void,
  ) {
    this.lastWriteMs = now();
    this.lastBookmarkMs = this.lastWriteMs;
    this.encoder = new KubeWatchEncoder(
      settings.info,
      settings.filter,
      settings.format,
      false,
      now,
      (c) => this.onEnd(c),
    );
    const frames: FrameSink<string> = {
      write: (out) => this.writeNow(out.length === 1 ? out[0]! : out.join('')),
      bufferedBytes: () => sink.bufferedBytes(),
      onceDrain: (listener) => sink.onceDrain(listener),
    };
    this.connection = new Connection(cacher, frames, {
      highWaterBytes: settings.maxBufferedBytes,
      kind: 'kubernetes',
    });
  }

  get filter(): ObjectFilter {
    return this.settings.filter;
  }

  /** Events of its resource the cache's index let through to this watch. */
  get offered(): number {
    return this.encoder.offered;
  }

  /** A Table's column definitions went out (they come with the first row only). */
  markColumnsSent(): void {
    this.encoder.markColumnsSent();
  }

  get columnsSent(): boolean {
    return this.encoder.columnsSent;
  }

  /** Writes text outside the event stream (initial events, bookmarks, keepalives). */
  writeNow(text: string): void {
    if (this.closed || text === '') return;
    this.sink.write(text);
    this.lastWriteMs = this.now();
  }

  /** Starts the cache watcher: events from `from.startRevision` on follow what was written. */
  follow(from: WatchFrom): void {
    if (this.closed) return;
    this.startRevision = from.startRevision;
    this.watcher = this.cacher.addWatcher(
      { key: from.key, prefix: from.prefix, startRevision: from.startRevision, prevKv: true },
      this.encoder,
      from.field ? { field: from.field } : {},
    );
    this.connection.attach(this.watcher);
  }

  /** The periodic duties (see the file comment). */
  tick(nowMs: number, o: { keepaliveMs: number; bookmarkIntervalMs: number }): void {
    if (this.closed) return;
    if (nowMs >= this.settings.deadlineMs) {
      this.close();
      return;
    }
    if (
      this.settings.bookmarks &&
      this.watcher !== undefined &&
      nowMs - this.lastBookmarkMs >= o.bookmarkIntervalMs
    ) {
      this.lastBookmarkMs = nowMs;
      this.cacher.requestProgress(this.watcher);
    } else if (nowMs - this.lastWriteMs >= o.keepaliveMs) this.writeNow('\n');
  }

  /** Ends the stream cleanly; the client resumes from the last resourceVersion it saw. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.connection.close();
    this.sink.end();
    this.onClosed(this);
  }

  /** The cache ended the watcher: a compacted start is a 410 ERROR event, then the end. */
  private onEnd(c: Cancellation): void {
    if (this.closed) return;
    if (c.reason === 'COMPACTED') {
      const n = this.startRevision - 1;
      const oldest = Math.max(0, c.compactRevision - 1);
      this.writeNow(errorLine(expired(`too old resource version: ${n} (${oldest})`).status));
    }
    this.close();
  }
}

/** Every open watch of the face. */
export class KubeWatches {
  private readonly all = new Set<KubeWatch>();

  get size(): number {
    return this.all.size;
  }

  values(): IterableIterator<KubeWatch> {
    return this.all.values();
  }

  /** A new watch, in the set until it closes. */
  open(cacher: Cacher, settings: WatchSettings, sink: WatchSink, now: () => number): KubeWatch {
    const w = new KubeWatch(cacher, settings, sink, now, (x) => this.all.delete(x));
    this.all.add(w);
    return w;
  }

  /** Ends every watch cleanly (server stopping, store replaced). */
  closeAll(): void {
    for (const w of [...this.all]) w.close();
  }

  tick(nowMs: number, o: { keepaliveMs: number; bookmarkIntervalMs: number }): void {
    for (const w of [...this.all]) w.tick(nowMs, o);
  }
}
