/**
 * A watch served straight from the store (history, then subscribe), with no window, no index
 * and no bound: the reference the cache is held to. The conformance suite runs the same tests
 * against it and against the cache; they must never differ.
 *
 * It is correct and simple, and that is all: each watcher costs a subscription (O(watchers)
 * work per event) and its queue is unbounded. Use the cache for anything but a few watchers.
 */

import { isEtceteraError } from '../errors.js';
import { type EventBatch, Revision, type WatchableStore } from '../store/types.js';
import { bytesToLatin1, prefixEnd } from '../wire/bytes.js';
import {
  type KeyRangeKind,
  normalizeRange,
  rangeContains,
  rangeToRequest,
  toBytes,
} from './keys.js';
import type { Cancellation, Event, WatchOptions, WatchResponse } from './types.js';

export class DirectWatch implements AsyncIterableIterator<WatchResponse> {
  private readonly range: KeyRangeKind;
  private readonly prevKv: boolean;
  private readonly noPut: boolean;
  private readonly noDelete: boolean;
  private readonly queue: WatchResponse[] = [];
  private waiter: (() => void) | null = null;
  /** Every revision below it has been examined (see watcher.ts, the same invariant). */
  private nextRevision: Revision;
  private replaying = false;
  private held: EventBatch[] = [];
  private unsubscribe: () => void = () => {};
  private ended = false;

  constructor(
    private readonly store: WatchableStore,
    opts: WatchOptions,
  ) {
    const key = toBytes(opts.key);
    const rangeEnd = opts.prefix
      ? prefixEnd(key)
      : opts.rangeEnd === undefined
        ? undefined
        : toBytes(opts.rangeEnd);
    this.range = normalizeRange(key, rangeEnd);
    this.prevKv = opts.prevKv === true;
    this.noPut = opts.filters?.includes('NOPUT') ?? false;
    this.noDelete = opts.filters?.includes('NODELETE') ?? false;
    const start = opts.startRevision ?? 0;
    const current = store.currentRevision;
    this.nextRevision = Revision(start === 0 ? current + 1 : start);
    if (start > 0 && start < store.compactRevision) {
      this.finish({ reason: 'COMPACTED', compactRevision: store.compactRevision });
      return;
    }
    this.unsubscribe = store.subscribe((b) => (this.replaying ? this.held.push(b) : this.offer(b)));
    if (start !== 0 && start <= current) {
      this.replaying = true;
      void this.replay(current);
    }
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<WatchResponse>> {
    for (;;) {
      const r = this.queue.shift();
      if (r !== undefined) return { done: false, value: r };
      if (this.ended) return { done: true, value: undefined };
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
  }

  async return(): Promise<IteratorResult<WatchResponse>> {
    this.cancel();
    return { done: true, value: undefined };
  }

  cancel(): void {
    this.queue.length = 0;
    this.end();
  }

  /** A progress response at the highest revision all of whose events are queued. */
  requestProgress(): void {
    if (this.ended) return;
    const examined = Math.min(this.nextRevision - 1, this.store.currentRevision);
    const revision = this.replaying ? examined : this.store.currentRevision;
    this.push({ type: 'progress', revision: Revision(Math.max(0, revision)) });
  }

  private async replay(c0: Revision): Promise<void> {
    try {
      for await (const batch of this.store.history(this.nextRevision, rangeToRequest(this.range))) {
        if (this.ended) return;
        this.offer(batch);
      }
      if (this.nextRevision <= c0) this.nextRevision = Revision(c0 + 1);
      for (const b of this.held) this.offer(b);
      this.held = [];
      this.replaying = false;
    } catch (e) {
      if (isEtceteraError(e, 'ERR_COMPACTED')) {
        const at = Revision(e.details.compactRevision ?? this.store.compactRevision);
        this.finish({ reason: 'COMPACTED', compactRevision: at });
      } else {
        const message = e instanceof Error ? e.message : String(e);
        this.finish({ reason: 'FAILED', resumeRevision: this.nextRevision, message });
      }
    }
  }

  private offer(batch: EventBatch): void {
    if (this.ended || batch.revision < this.nextRevision) return;
    this.nextRevision = Revision(batch.revision + 1);
    const events: Event[] = [];
    for (const ev of batch.events) {
      if (ev.type === 'PUT' ? this.noPut : this.noDelete) continue;
      if (!rangeContains(this.range, bytesToLatin1(ev.kv.key))) continue;
      events.push(this.prevKv || ev.prevKv === undefined ? ev : { type: ev.type, kv: ev.kv });
    }
    if (events.length > 0) this.push({ type: 'events', revision: batch.revision, events });
  }

  private finish(cancellation: Cancellation): void {
    this.push({ type: 'canceled', cancellation });
    this.end();
  }

  private push(r: WatchResponse): void {
    this.queue.push(r);
    const wake = this.waiter;
    this.waiter = null;
    wake?.();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.unsubscribe();
    const wake = this.waiter;
    this.waiter = null;
    wake?.();
  }
}
