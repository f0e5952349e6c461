/**
 * One client connection carrying many watchers: moves their frames to the sink with one write
 * per event-loop turn.
 *
 * Each watcher that has frames marks itself readable; the first mark schedules a flush. The
 * flush takes frames from readable watchers in turn until the sink holds `highWaterBytes`,
 * then writes them all at once (the sink corks around them). A peer that stops reading fills
 * the sink; the connection then stops taking frames, they stay in the watchers' own bounded
 * queues, and the cacher's slow-watcher policy deals with them. So memory per connection is
 * bounded by the high-water mark plus the watchers' bounds.
 *
 * Connection-level frames (etcd's progress response to a progress_request) are built only once
 * every frame queued before them has been written, so whatever revision they report, all events
 * up to it are already on the wire.
 */

import type { Cacher } from './cacher.js';
import type { FrameSink, TurnScheduler } from './types.js';
import type { Watcher } from './watcher.js';

export interface ConnectionOptions {
  /** Stop taking frames once the sink buffers this many bytes. Default 256 KiB. */
  highWaterBytes?: number;
  /** Runs the flush in a later turn. Default: the cacher's scheduler. */
  scheduler?: TurnScheduler;
  /** Called when a finished watcher's last frame was written (the id can be reused). */
  onWatcherDone?: (w: Watcher<unknown>) => void;
}

export class Connection<F> {
  private readonly readable = new Set<Watcher<F>>();
  private readonly attached = new Set<Watcher<F>>();
  private control: (() => F | null)[] = [];
  private flushScheduled = false;
  private waitingDrain = false;
  private closed = false;
  private readonly highWaterBytes: number;
  private readonly schedule: TurnScheduler;
  /** Number of sink writes so far (tests check coalescing with it). */
  writes = 0;

  constructor(
    private readonly cacher: Cacher,
    private readonly sink: FrameSink<F>,
    private readonly options: ConnectionOptions = {},
  ) {
    this.highWaterBytes = options.highWaterBytes ?? 256 * 1024;
    this.schedule = options.scheduler ?? cacher.options.scheduler;
  }

  get watcherCount(): number {
    return this.attached.size;
  }

  attach(w: Watcher<F>): void {
    if (this.closed) {
      this.cacher.cancel(w);
      return;
    }
    this.attached.add(w);
    w.onReadable = () => this.markReadable(w);
    if (w.queuedFrames > 0) this.markReadable(w);
  }

  /** Queues a connection-level frame, built when everything queued before it is written. */
  enqueueControl(build: () => F | null): void {
    if (this.closed) return;
    this.control.push(build);
    this.scheduleFlush();
  }

  /** The peer went away: every watcher on it is cancelled, nothing more is written. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.attached) {
      w.onReadable = null;
      this.cacher.cancel(w);
    }
    this.attached.clear();
    this.readable.clear();
    this.control = [];
  }

  private markReadable(w: Watcher<F>): void {
    if (this.closed) return;
    this.readable.add(w);
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled || this.waitingDrain) return;
    this.flushScheduled = true;
    this.schedule(() => this.flush());
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.closed) return;
    const out: F[] = [];
    let room = this.highWaterBytes - this.sink.bufferedBytes();
    for (const w of this.readable) {
      if (room <= 0) break;
      room -= this.cacher.take(w, room, out).bytes;
      if (w.queuedFrames === 0) {
        this.readable.delete(w);
        if (w.done) this.forget(w);
      }
    }
    if (this.readable.size === 0 && this.control.length > 0) {
      const builders = this.control;
      this.control = [];
      for (const build of builders) {
        const f = build();
        if (f !== null) out.push(f);
      }
    }
    if (out.length > 0) {
      this.writes++;
      this.sink.write(out);
    }
    if (this.readable.size > 0 || this.control.length > 0) this.continueLater();
  }

  /** More to write: wait for the sink to drain if it is full, else go on next turn. */
  private continueLater(): void {
    if (this.sink.bufferedBytes() < this.highWaterBytes) {
      this.scheduleFlush();
      return;
    }
    this.waitingDrain = true;
    this.sink.onceDrain(() => {
      this.waitingDrain = false;
      this.scheduleFlush();
    });
  }

  private forget(w: Watcher<F>): void {
    this.attached.delete(w);
    w.onReadable = null;
    this.options.onWatcherDone?.(w as Watcher<unknown>);
  }
}
