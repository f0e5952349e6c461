/**
 * One client connection carrying many watchers: moves their frames to the sink with one write
 * per flush, and answers the stream's requests in the order they came.
 *
 * Each watcher that has frames marks itself readable; the first mark asks for a flush. Flushes
 * of every connection run in the cacher's fan-out turns, inside their time slice (cacher.ts),
 * so ten thousand connections never hold the event loop for one long turn. The flush takes
 * frames from readable watchers in turn until the sink holds `highWaterBytes`, then writes them
 * all at once (the sink corks around them). A peer that stops reading fills the sink; the
 * connection then stops taking frames, they stay in the watchers' own bounded queues, and the
 * cacher's slow-watcher policy deals with them. So memory per connection is bounded by the
 * high-water mark plus the watchers' bounds.
 *
 * Request order. The answers to a stream's requests (a create's "created", a refused create, a
 * cancel's "canceled", a progress response) leave in request order, whatever each waits for:
 * they go through one queue of slots, written from its head. A watcher whose "created" slot is
 * not written yet is held (none of its frames leave before it). A progress slot waits until
 * every frame of the watchers released before it has been written and none of them is still
 * catching up; the revision it then reports is the cacher's dispatched revision (every event at
 * or below it for those watchers is on the wire), the same O(1) value for a whole run of
 * progress slots, however many watchers the stream has.
 */

import { Revision } from '../store/types.js';
import type { Cacher } from './cacher.js';
import type { KindTally } from './tally.js';
import type { FrameSink, TurnScheduler } from './types.js';
import type { CatchUpGroup, Watcher } from './watcher.js';

export interface ConnectionOptions {
  /** Stop taking frames once the sink buffers this many bytes. Default 256 KiB. */
  highWaterBytes?: number;
  /** Runs the flush in a later turn. Default: the cacher's fan-out turns (time-sliced). */
  scheduler?: TurnScheduler;
  /** Called when a finished watcher's last frame was written (the id can be reused). */
  onWatcherDone?: (w: Watcher<unknown>) => void;
  /** What opened it, for the cacher's tally (`etcd-http`, `grpc`, ...). Default `other`. */
  kind?: string;
}

/** One answer in request order. */
type Slot<F> =
  /** A create's answer: the frame, then the watcher's own frames may follow. */
  | { readonly kind: 'created'; readonly frame: F; readonly watcher: Watcher<F> }
  /** A finished answer (a refusal, a cancel's frames). */
  | { readonly kind: 'frames'; readonly frames: readonly F[] }
  /**
   * `count` progress requests in a row (a flood is coalesced into one slot): one response
   * each, built once from the revision when the slot can be written.
   */
  | { readonly kind: 'progress'; readonly build: (revision: Revision) => F; count: number };

export class Connection<F> {
  private readonly readable = new Set<Watcher<F>>();
  private readonly attached = new Set<Watcher<F>>();
  /** Watchers attached with a "created" slot not written yet. */
  private readonly held = new Set<Watcher<F>>();
  private slots: Slot<F>[] = [];
  private slotHead = 0;
  /**
   * Progress slots before index `capUntil` report at most `cap`: a watch cancelled after them
   * (in request order) left with only its events through `cap` written.
   */
  private cap = Number.POSITIVE_INFINITY;
  private capUntil = 0;
  /** Released watchers that are catching up (a progress slot waits for them). */
  private readonly group: CatchUpGroup = {
    catchingUp: 0,
    onAllSynced: () => {
      if (this.slotHead < this.slots.length) this.scheduleFlush();
    },
  };
  private flushScheduled = false;
  private waitingDrain = false;
  private closed = false;
  private readonly highWaterBytes: number;
  private readonly schedule: TurnScheduler;
  /** Number of sink writes so far (tests check coalescing with it). */
  writes = 0;
  private readonly tally: KindTally;

  constructor(
    private readonly cacher: Cacher,
    private readonly sink: FrameSink<F>,
    private readonly options: ConnectionOptions = {},
  ) {
    this.highWaterBytes = options.highWaterBytes ?? 256 * 1024;
    this.schedule = options.scheduler ?? ((fn) => cacher.requestFlush(fn));
    this.tally = cacher.tally.kind(options.kind ?? 'other');
    this.tally.connections++;
  }

  get watcherCount(): number {
    return this.attached.size;
  }

  /**
   * Moves `w`'s frames to this connection. With `created`, that frame is the answer to the
   * create request: it takes its place in request order, and `w`'s frames follow it.
   */
  attach(w: Watcher<F>, created?: F): void {
    if (this.closed) {
      this.cacher.cancel(w);
      return;
    }
    if (!this.attached.has(w)) this.tally.watchers++;
    this.attached.add(w);
    w.onReadable = () => this.markReadable(w);
    if (created === undefined) {
      this.release(w);
      return;
    }
    this.held.add(w);
    this.pushSlot({ kind: 'created', frame: created, watcher: w });
  }

  /**
   * The answer to a cancel request: `w` leaves the connection now (it must already be
   * cancelled), and what is left in its queue (its final frame) is written in request order.
   * `through`: the revision through which its events were written (progress answers still
   * waiting before this one report no more than that).
   */
  detachInOrder(w: Watcher<F>, through: Revision): void {
    if (this.closed || !this.attached.has(w)) return;
    if (this.slotHead < this.slots.length) {
      this.cap = Math.min(this.cap, through);
      this.capUntil = this.slots.length;
    }
    this.forget(w);
    const frames = w.take(Number.POSITIVE_INFINITY).frames;
    this.pushSlot({ kind: 'frames', frames });
  }

  /** A frame that answers a request and no watcher owns (a refused create), in request order. */
  enqueueAnswer(frame: F): void {
    if (this.closed) return;
    this.pushSlot({ kind: 'frames', frames: [frame] });
  }

  /**
   * A progress response in request order, built once every frame queued for the watchers
   * before it is written; `build` gets a revision through which all their events are out.
   */
  enqueueProgress(build: (revision: Revision) => F): void {
    if (this.closed) return;
    const last = this.slotHead < this.slots.length ? this.slots[this.slots.length - 1]! : null;
    if (last?.kind === 'progress') {
      last.count++;
      return;
    }
    this.pushSlot({ kind: 'progress', build, count: 1 });
  }

  /** The peer went away: every watcher on it is cancelled, nothing more is written. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.tally.connections--;
    this.tally.watchers -= this.attached.size;
    for (const w of this.attached) {
      w.onReadable = null;
      w.leaveGroup();
      this.cacher.cancel(w);
    }
    this.attached.clear();
    this.readable.clear();
    this.held.clear();
    this.slots = [];
    this.slotHead = 0;
  }

  private pushSlot(slot: Slot<F>): void {
    this.slots.push(slot);
    this.scheduleFlush();
  }

  private release(w: Watcher<F>): void {
    this.held.delete(w);
    w.joinGroup(this.group);
    if (w.queuedFrames > 0) this.markReadable(w);
  }

  private markReadable(w: Watcher<F>): void {
    if (this.closed || this.held.has(w)) return;
    this.readable.add(w);
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled || this.waitingDrain || this.closed) return;
    this.flushScheduled = true;
    this.schedule(() => this.flush());
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.closed) return;
    const out: F[] = [];
    let room = Math.min(
      this.highWaterBytes - this.sink.bufferedBytes(),
      this.cacher.flushRoomBytes,
    );
    room = this.takeEvents(out, room);
    // Answers from the head; a created slot releases its watcher, whose frames go next.
    while (this.writeSlots(out)) room = this.takeEvents(out, room);
    if (this.slotHead > 0 && this.slotHead === this.slots.length) {
      this.slots = [];
      this.slotHead = 0;
      this.cap = Number.POSITIVE_INFINITY;
      this.capUntil = 0;
    }
    if (out.length > 0) {
      this.writes++;
      this.sink.write(out);
    }
    if (this.readable.size > 0 || this.slotReady()) this.continueLater();
  }

  /** Frames of readable (released) watchers, until `room` bytes are taken. Returns the room left. */
  private takeEvents(out: F[], room: number): number {
    for (const w of this.readable) {
      if (room <= 0) break;
      room -= this.cacher.take(w, room, out).bytes;
      if (w.queuedFrames === 0) {
        this.readable.delete(w);
        if (w.done) this.forget(w);
      }
    }
    return room;
  }

  /**
   * Writes slots from the head until one must wait. Returns whether a watcher was released
   * (its frames can now be taken, and a progress slot behind may then become writable).
   */
  private writeSlots(out: F[]): boolean {
    let released = false;
    let progressRevision: Revision | undefined;
    while (this.slotHead < this.slots.length) {
      const slot = this.slots[this.slotHead]!;
      if (slot.kind === 'progress') {
        if (this.readable.size > 0 || this.group.catchingUp > 0) return released;
        progressRevision ??= this.progressRevision();
        const capped = this.slotHead < this.capUntil && this.cap < progressRevision;
        const frame = slot.build(capped ? Revision(this.cap) : progressRevision);
        for (let i = 0; i < slot.count; i++) out.push(frame);
      } else if (slot.kind === 'frames') {
        for (const f of slot.frames) out.push(f);
      } else {
        out.push(slot.frame);
        if (this.attached.has(slot.watcher)) {
          this.release(slot.watcher);
          released = true;
        }
      }
      this.slots[this.slotHead] = undefined as unknown as Slot<F>;
      this.slotHead++;
      if (released) return true;
    }
    return released;
  }

  /** Whether the head slot could be written now (else a release or a sync wakes the flush). */
  private slotReady(): boolean {
    if (this.slotHead >= this.slots.length) return false;
    const slot = this.slots[this.slotHead]!;
    return slot.kind !== 'progress' || (this.readable.size === 0 && this.group.catchingUp === 0);
  }

  /**
   * Every frame of every released watcher is written and none is catching up: each synced one
   * has every event through the dispatched revision on the wire. With no watchers at all, the
   * cache's revision (as etcd reports its store's).
   */
  private progressRevision(): Revision {
    return this.attached.size === this.held.size
      ? this.cacher.revision
      : this.cacher.dispatchedRevision;
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
    if (this.attached.delete(w)) this.tally.watchers--;
    this.readable.delete(w);
    this.held.delete(w);
    w.onReadable = null;
    w.leaveGroup();
    this.options.onWatcherDone?.(w as Watcher<unknown>);
  }
}
