/**
 * Decoded change events of the Kubernetes face, and the window of recent ones that a watch
 * from resourceVersion N replays without reading the store.
 */
import type { CachedObject } from './cache.js';

/** One change of one object, decoded once and shared by every watcher that gets it. */
export interface KubeEvent {
  readonly revision: number;
  /** `group/resource`: which ResourceCache and watcher set it belongs to. */
  readonly ref: string;
  readonly key: string;
  readonly namespace: string;
  readonly name: string;
  /** The object after the change (absent for a delete). */
  readonly obj: CachedObject | undefined;
  /** The object before the change (absent for a create). */
  readonly old: CachedObject | undefined;
  /** Encoded lines, by encoding variant (see encode.ts). Dies with the event. */
  readonly lines: Map<string, string>;
  /** `old` with the event's revision, made on first use (what DELETED events carry). */
  deletedView?: CachedObject;
}

/**
 * The last `capacity` events in revision order. Entries only leave from the front; the
 * oldest revision still replayable is `firstRevision`: a watch from N can be served from
 * here when N + 1 >= firstRevision (every event after N is present).
 */
export class EventWindow {
  private buf: KubeEvent[] = [];
  private head = 0;
  /** Every event with revision >= this one is in the window (once it has been filled). */
  private floor: number;

  constructor(
    private readonly capacity: number,
    startRevision: number,
  ) {
    this.floor = startRevision + 1;
  }

  /** Restarts the window after a reload at `revision` (history before it is not here). */
  reset(revision: number): void {
    this.buf = [];
    this.head = 0;
    this.floor = revision + 1;
  }

  push(e: KubeEvent): void {
    this.buf.push(e);
    if (this.buf.length - this.head > this.capacity) {
      const dropped = this.buf[this.head] as KubeEvent;
      this.head++;
      // Everything up to the dropped revision may now be partly gone.
      this.floor = Math.max(this.floor, dropped.revision + 1);
      if (this.head > 4096 && this.head * 2 > this.buf.length) {
        this.buf = this.buf.slice(this.head);
        this.head = 0;
      }
    }
  }

  /** The lowest revision whose events are all in the window. */
  get firstRevision(): number {
    return this.floor;
  }

  /** Events with revision > `after`, in order; undefined when some may be missing. */
  after(after: number): KubeEvent[] | undefined {
    if (after + 1 < this.floor) return undefined;
    let lo = this.head;
    let hi = this.buf.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.buf[mid] as KubeEvent).revision <= after) lo = mid + 1;
      else hi = mid;
    }
    return this.buf.slice(lo);
  }
}
