/**
 * Watchers for embedded users: a callback form and an async-iterator form. Both sit on the
 * same watcher queue as network watchers, so they have the same guarantees and the same
 * backpressure: a callback that returns a promise is not called again until it settles, an
 * iterator that is not read falls behind; either way, over the buffer bound it is cancelled
 * with reason SLOW and a resume revision (its last message is the `canceled` response).
 */

import type { Cacher } from './cacher.js';
import { type ObjectFrame, objectEncoder } from './encoders/object.js';
import type { Revision, TurnScheduler, WatcherId, WatchOptions, WatchResponse } from './types.js';
import type { Watcher } from './watcher.js';

export interface WatchSubscription {
  readonly id: WatcherId;
  /** Whether the watcher has ended (its `canceled` message may still be pending). */
  readonly done: boolean;
  /** Stops the watch. No further message is delivered, not even `canceled`. */
  cancel(): void;
  /** Asks for a progress message (it follows every event at or below its revision). */
  requestProgress(): void;
}

export type WatchCallback = (response: WatchResponse) => void | Promise<void>;

/** Calls `onResponse` with each response, in order, never concurrently. */
export function watchCallback(
  cacher: Cacher,
  opts: WatchOptions,
  onResponse: WatchCallback,
  schedule: TurnScheduler = cacher.options.scheduler,
): WatchSubscription {
  const w = cacher.addWatcher(opts, objectEncoder);
  let stopped = false;
  let pumping = false;
  const pump = async (): Promise<void> => {
    while (!stopped && w.queuedFrames > 0) {
      const { frames } = cacher.take(w, 1);
      const response = frames[0]!.response;
      try {
        const r = onResponse(response);
        if (r !== undefined) await r;
      } catch (e) {
        const message = `etcetera: watch callback failed: ${e instanceof Error ? e.message : String(e)}`;
        cacher.cancel(w, {
          reason: 'FAILED',
          resumeRevision: nextAfter(cacher, w, response),
          message,
        });
      }
    }
    pumping = false;
  };
  w.onReadable = () => {
    if (pumping || stopped) return;
    pumping = true;
    schedule(() => void pump());
  };
  if (w.queuedFrames > 0) w.onReadable();
  return {
    id: w.id,
    get done() {
      return w.done;
    },
    cancel() {
      stopped = true;
      cacher.cancel(w);
    },
    requestProgress: () => cacher.requestProgress(w),
  };
}

/** The revision after the response that failed (it was delivered, even if the callback threw). */
function nextAfter(cacher: Cacher, w: Watcher<ObjectFrame>, r: WatchResponse): Revision {
  if (r.type === 'events') return (r.revision + 1) as Revision;
  return (cacher.coveredRevision(w) + 1) as Revision;
}

/** An async iterator of responses; `return()` (a `break` out of `for await`) cancels. */
export class WatchIterator implements AsyncIterableIterator<WatchResponse>, WatchSubscription {
  private readonly w: Watcher<ObjectFrame>;
  private waiter: (() => void) | null = null;
  private ended = false;

  constructor(
    private readonly cacher: Cacher,
    opts: WatchOptions,
  ) {
    this.w = cacher.addWatcher(opts, objectEncoder);
    this.w.onReadable = () => {
      const wake = this.waiter;
      this.waiter = null;
      wake?.();
    };
  }

  get id(): WatcherId {
    return this.w.id;
  }
  get done(): boolean {
    return this.w.done;
  }
  /** Bytes queued and not yet read (for tests and diagnostics). */
  get queuedBytes(): number {
    return this.w.queuedBytes;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<WatchResponse>> {
    while (!this.ended) {
      if (this.w.queuedFrames > 0) {
        const response = this.cacher.take(this.w, 1).frames[0]!.response;
        if (response.type === 'canceled') this.ended = true;
        return { done: false, value: response };
      }
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
    return { done: true, value: undefined };
  }

  async return(): Promise<IteratorResult<WatchResponse>> {
    this.cancel();
    return { done: true, value: undefined };
  }

  cancel(): void {
    if (this.ended) return;
    this.ended = true;
    this.cacher.cancel(this.w);
    const wake = this.waiter;
    this.waiter = null;
    wake?.();
  }

  requestProgress(): void {
    this.cacher.requestProgress(this.w);
  }
}
