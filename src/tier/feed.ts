/**
 * The API tier's watch source: a WatchableStore fed by ONE upstream gRPC watch of the whole
 * keyspace (key "\0", range_end "\0", prev_kv, progress_notify), as kube-apiserver's cacher
 * is fed by one watch of its prefix. The tier's watch cache (src/watchcache) subscribes to it
 * and serves every client watch; so any number of client watches costs the upstream one.
 *
 * What it promises (the WatchableStore contract, src/store/types.ts):
 * - `subscribe` listeners get one batch per revision, in revision order, each revision once.
 *   An upstream response may carry several revisions; it is split by mod_revision.
 * - Failover: when the stream breaks (the endpoint died, the connection reset), the next
 *   endpoint is tried and the one watch resumes from the last revision delivered + 1; a batch
 *   at or below it is dropped, so nothing is lost or repeated across any number of failovers.
 * - Compaction: when the upstream compacted past the resume point, the feed reads the
 *   upstream's revision, reports `onReset` at it (the cache starts its window over; watchers
 *   behind it end with COMPACTED, as on a member whose store was replaced) and watches on
 *   from there. `compactRevision` is the highest compaction the tier has seen (through its
 *   own Compact calls or an upstream answer).
 * - `history(from, range)` for a start below the cache's window: a bounded upstream watch of
 *   the whole keyspace from `from`, filtered to `range`, ending once it reached the revision
 *   the feed was at when called (every upstream revision carries at least one event, so the
 *   end is seen as an event, never guessed from a progress answer); paused while its reader
 *   is behind, so memory stays bounded.
 * - `range` is forwarded (linearizable unless asked otherwise).
 *
 * Progress: the feed sends a progress request every `progressIntervalMs`; the answers tell
 * it the upstream's revision (the lag metric) but never move its own revision, because
 * etcd 3.4 answers a progress request before a resumed watcher caught up.
 */
import type { ClientDuplexStream, ServiceError } from '@grpc/grpc-js';
import { answered, type GrpcTransport } from '../client/grpc-transport.js';
import { etcdMethods } from '../client/proto.js';
import { EtceteraError } from '../errors.js';
import type {
  Event,
  EventBatch,
  KeyRange,
  RangeRequest,
  RangeResult,
  Revision,
  WatchableStore,
} from '../store/types.js';
import { bytesToLatin1 } from '../wire/bytes.js';
import { int64OfJson } from '../wire/etcd-json.js';
import { eventOf, type Json, rangeJson, rangeResultOf, upstreamError } from './codec.js';

const ALL = 'AA=='; // "\0" in base64: key and range_end of the whole keyspace
const BACKOFF_MIN_MS = 50;
const BACKOFF_MAX_MS = 2000;
/** Batches a history reader may have unread before its upstream stream is paused. */
const HISTORY_HIGH_WATER = 256;

const rev = (n: number): Revision => n as Revision;

export interface FeedOptions {
  /** The gRPC transport of src/client: its endpoints, failover and channels. */
  transport: GrpcTransport;
  /** How often to ask the upstream for progress (its revision). Default 1,000 ms. */
  progressIntervalMs?: number;
  /** Told of each (re)connection and failure, for logs. */
  onEvent?: (what: 'connected' | 'lost' | 'reset', detail: Record<string, unknown>) => void;
}

interface Waiter {
  revision: number;
  resolve: () => void;
}

/** One attempt of the feed's upstream watch. */
interface Attempt {
  call: ClientDuplexStream<Json, Json>;
  endpoint: string;
  created: boolean;
  watchId: string | undefined;
  over: boolean;
}

export class UpstreamFeed implements WatchableStore {
  private rev: Revision = rev(0);
  private compact: Revision = rev(0);
  /** The highest upstream revision seen in any answer. */
  private upstream = 0;
  /** When the feed first fell behind `upstream` (0: not behind). */
  private behindSince = 0;
  private readonly listeners = new Set<(b: EventBatch) => void>();
  private readonly resetListeners = new Set<(r: Revision) => void>();
  private waiters: Waiter[] = [];
  private attempt: Attempt | undefined;
  private started = false;
  private closed = false;
  private backoffMs = BACKOFF_MIN_MS;
  private retryTimer: NodeJS.Timeout | undefined;
  private progressTimer: NodeJS.Timeout | undefined;
  private firstCreated: ((ok: true | Error) => void) | undefined;
  private historyWatches = 0;
  private readonly transport: GrpcTransport;
  private readonly progressIntervalMs: number;
  /** Reconnections of the one upstream watch so far. */
  reconnects = 0;
  /** Resets (the upstream compacted past the feed) so far. */
  resets = 0;

  constructor(private readonly options: FeedOptions) {
    this.transport = options.transport;
    this.progressIntervalMs = options.progressIntervalMs ?? 1000;
  }

  /** Opens the upstream watch; resolves once it is created (the feed's start revision). */
  start(): Promise<void> {
    if (this.started) return Promise.resolve();
    this.started = true;
    const done = new Promise<void>((resolve, reject) => {
      this.firstCreated = (ok) => (ok === true ? resolve() : reject(ok));
    });
    this.connect();
    this.progressTimer = setInterval(() => this.requestProgress(), this.progressIntervalMs);
    this.progressTimer.unref();
    return done;
  }

  // --- WatchableStore ------------------------------------------------------------------

  get currentRevision(): Revision {
    return this.rev;
  }

  get compactRevision(): Revision {
    return this.compact;
  }

  async range(request: RangeRequest): Promise<RangeResult> {
    try {
      const r = await this.transport.unary('KV.Range', rangeJson(request), true);
      const result = rangeResultOf(r);
      this.observe(result.revision);
      return result;
    } catch (e) {
      throw upstreamError(e);
    }
  }

  history(from: Revision, range: KeyRange): AsyncIterable<EventBatch> {
    // The bounds are checked when the read starts, as the store's history does.
    if (from < this.compact && from > 0)
      return failing(
        new EtceteraError('ERR_COMPACTED', {
          compactRevision: this.compact,
          currentRevision: this.rev,
        }),
      );
    if (from > this.rev + 1)
      return failing(new EtceteraError('ERR_FUTURE_REV', { currentRevision: this.rev }));
    return this.historyFrom(from, this.rev, range);
  }

  subscribe(listener: (batch: EventBatch) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  onReset(listener: (revision: Revision) => void): () => void {
    this.resetListeners.add(listener);
    return () => this.resetListeners.delete(listener);
  }

  // --- what the tier reads of the feed -------------------------------------------------

  /** Whether the upstream watch is created on a live stream now. */
  get connected(): boolean {
    return this.attempt?.created === true && !this.attempt.over;
  }

  /** The endpoint (host:port) the upstream watch runs on now. */
  get endpoint(): string {
    return this.attempt?.endpoint ?? this.transport.endpoint.target;
  }

  /** Upstream watches open: the feed's one, plus history reads in flight. */
  get upstreamWatches(): number {
    return (this.connected ? 1 : 0) + this.historyWatches;
  }

  /** The highest revision the upstream reported (answers and progress). */
  get upstreamRevision(): number {
    return Math.max(this.upstream, this.rev);
  }

  /** How far behind the upstream's known revision the feed is. */
  get lagRevisions(): number {
    return Math.max(0, this.upstream - this.rev);
  }

  /** For how long the feed has been behind the upstream's known revision, in seconds. */
  lagSeconds(now = Date.now()): number {
    return this.behindSince === 0 ? 0 : (now - this.behindSince) / 1000;
  }

  /** Notes an upstream revision seen in an answer (the feed should reach it). */
  observe(revision: number): void {
    if (revision <= this.upstream) return;
    this.upstream = revision;
    if (revision > this.rev && this.behindSince === 0) this.behindSince = Date.now();
  }

  /** Notes a compaction the tier made or was told of. */
  observeCompaction(revision: number): void {
    if (revision > this.compact) this.compact = rev(revision);
  }

  /**
   * Resolves true once the feed delivered `revision` (every event at or below it is in the
   * cache), false when `timeoutMs` passed first.
   */
  waitFor(revision: number, timeoutMs: number): Promise<boolean> {
    this.observe(revision);
    if (revision <= this.rev) return Promise.resolve(true);
    if (this.closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const w: Waiter = {
        revision,
        resolve: () => {
          clearTimeout(timer);
          resolve(true);
        },
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        resolve(false);
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  /** Asks the upstream for a progress answer (its revision) on the feed's stream. */
  requestProgress(): void {
    const a = this.attempt;
    if (a === undefined || !a.created || a.over) return;
    a.call.write({ progress_request: {} });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.progressTimer);
    this.endAttempt();
    for (const w of this.waiters) w.resolve();
    this.waiters = [];
    this.firstCreated?.(new EtceteraError('ERR_CLOSED'));
    this.firstCreated = undefined;
  }

  // --- the one upstream watch ----------------------------------------------------------

  private connect(): void {
    if (this.closed) return;
    const endpoint = this.transport.endpoint.target;
    const call = this.transport.bidi(etcdMethods().json['Watch.Watch']);
    const a: Attempt = { call, endpoint, created: false, watchId: undefined, over: false };
    this.attempt = a;
    call.on('data', (r: Json) => {
      if (!a.over) this.onMessage(a, r);
    });
    call.on('error', (e: ServiceError) => this.onLost(a, e, !answered(e)));
    call.on('end', () => this.onLost(a, new Error('upstream watch stream ended'), true));
    call.write({
      create_request: {
        key: ALL,
        range_end: ALL,
        start_revision: this.rev > 0 ? String(this.rev + 1) : undefined,
        prev_kv: true,
        progress_notify: true,
      },
    });
  }

  private onMessage(a: Attempt, r: Json): void {
    const header = int64OfJson((r.header as Json | undefined)?.revision);
    if (r.created === true && !a.created) {
      a.created = true;
      a.watchId = String(r.watch_id ?? '0');
      this.backoffMs = BACKOFF_MIN_MS;
      if (this.rev === 0) this.rev = rev(header);
      this.observe(header);
      this.options.onEvent?.('connected', { endpoint: a.endpoint, fromRevision: this.rev + 1 });
      if (this.firstCreated !== undefined) {
        this.firstCreated(true);
        this.firstCreated = undefined;
      }
    }
    if (r.canceled === true) {
      const compacted = int64OfJson(r.compact_revision);
      this.endAttempt();
      if (compacted > 0) void this.resync(compacted);
      else this.retryLater(false);
      return;
    }
    const events = (r.events as unknown[] | undefined) ?? [];
    if (events.length > 0) this.deliver(events.map(eventOf));
    else if (header > 0) this.observe(header);
  }

  /** Splits a response's events by revision and publishes each new revision once. */
  private deliver(events: Event[]): void {
    let start = 0;
    while (start < events.length) {
      const revision = events[start]!.kv.modRevision;
      let end = start + 1;
      while (end < events.length && events[end]!.kv.modRevision === revision) end++;
      if (revision > this.rev) this.publish({ revision, events: events.slice(start, end) });
      start = end;
    }
  }

  private publish(batch: EventBatch): void {
    this.rev = batch.revision;
    if (this.rev >= this.upstream) {
      this.upstream = this.rev;
      this.behindSince = 0;
    }
    for (const l of this.listeners) l(batch);
    if (this.waiters.length > 0) {
      const ready = this.waiters.filter((w) => w.revision <= this.rev);
      if (ready.length > 0) {
        this.waiters = this.waiters.filter((w) => w.revision > this.rev);
        for (const w of ready) w.resolve();
      }
    }
  }

  private onLost(a: Attempt, cause: unknown, transportFailed: boolean): void {
    if (a.over || this.attempt !== a) return;
    this.endAttempt();
    this.options.onEvent?.('lost', { endpoint: a.endpoint, err: String(cause) });
    if (!a.created && this.firstCreated !== undefined && this.reconnects >= 3 * this.size()) {
      this.firstCreated(upstreamError(cause));
      this.firstCreated = undefined;
      this.closed = true;
      return;
    }
    this.retryLater(transportFailed);
  }

  private size(): number {
    return this.transport.endpoints.length;
  }

  private endAttempt(): void {
    const a = this.attempt;
    if (a === undefined || a.over) return;
    a.over = true;
    a.call.cancel();
  }

  private retryLater(failover: boolean): void {
    if (this.closed) return;
    if (failover) this.transport.failover();
    this.reconnects++;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(BACKOFF_MAX_MS, this.backoffMs * 2);
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }

  /** The upstream compacted past the feed: start over at its revision and tell the cache. */
  private async resync(compacted: number): Promise<void> {
    this.observeCompaction(compacted);
    let at: RangeResult;
    try {
      at = await this.range({ key: new Uint8Array([0]) });
    } catch {
      this.retryLater(true);
      return;
    }
    if (this.closed) return;
    this.resets++;
    this.rev = rev(Math.max(this.rev, at.revision));
    this.behindSince = 0;
    this.options.onEvent?.('reset', { revision: this.rev, compactRevision: compacted });
    for (const l of this.resetListeners) l(this.rev);
    const ready = this.waiters.filter((w) => w.revision <= this.rev);
    this.waiters = this.waiters.filter((w) => w.revision > this.rev);
    for (const w of ready) w.resolve();
    this.connect();
  }

  // --- history reads -------------------------------------------------------------------

  private async *historyFrom(
    from: Revision,
    until: Revision,
    range: KeyRange,
  ): AsyncGenerator<EventBatch> {
    // Revision 1 is the empty keyspace: no event has it, so there is nothing to read below 2.
    if (from > until || until < 2) return;
    const contains = rangeTest(range);
    let next = Math.max(1, from);
    let failures = 0;
    this.historyWatches++;
    try {
      while (next <= until) {
        const reader = new HistoryStream(this.transport, next, until);
        try {
          for await (const batch of reader) {
            next = batch.revision + 1;
            failures = 0;
            const events = batch.events.filter((e) => contains(e.kv.key));
            if (events.length > 0) yield { revision: batch.revision, events };
          }
        } catch (e) {
          if (e instanceof EtceteraError) {
            if (e.code === 'ERR_COMPACTED') this.observeCompaction(e.details.compactRevision ?? 0);
            throw e;
          }
          if (++failures > this.size()) throw upstreamError(e);
          this.transport.failover();
        } finally {
          reader.close();
        }
      }
    } finally {
      this.historyWatches--;
    }
  }
}

/** A history read that fails with `e` as soon as it is iterated. */
function failing(e: Error): AsyncIterable<EventBatch> {
  return {
    [Symbol.asyncIterator]: () => ({
      next: () => Promise.reject(e),
    }),
  };
}

/** Whether a key lies in a store KeyRange (rangeEnd absent: the key; [0]: every key >= key). */
function rangeTest(range: KeyRange): (key: Uint8Array) => boolean {
  const start = bytesToLatin1(range.key);
  const end = range.rangeEnd;
  if (end === undefined || end.length === 0) return (k) => bytesToLatin1(k) === start;
  if (end.length === 1 && end[0] === 0) return (k) => bytesToLatin1(k) >= start;
  const stop = bytesToLatin1(end);
  return (k) => {
    const s = bytesToLatin1(k);
    return s >= start && s < stop;
  };
}

/**
 * One upstream watch of the whole keyspace from `from`, read as batches (one per revision)
 * up to `until`, then cancelled. The stream is paused while `HISTORY_HIGH_WATER` batches
 * wait for the reader. Iterating throws ERR_COMPACTED when the upstream compacted past
 * `from`, and the transport's error when the stream breaks.
 */
class HistoryStream implements AsyncIterable<EventBatch> {
  private readonly call: ClientDuplexStream<Json, Json>;
  private readonly queue: EventBatch[] = [];
  private ended = false;
  private failure: unknown;
  private wake: (() => void) | undefined;
  private paused = false;
  private last = 0;

  constructor(
    transport: GrpcTransport,
    from: number,
    private readonly until: number,
  ) {
    this.last = from - 1;
    this.call = transport.bidi(etcdMethods().json['Watch.Watch']);
    this.call.on('data', (r: Json) => this.onMessage(r));
    this.call.on('error', (e: ServiceError) => this.finish(e));
    this.call.on('end', () => this.finish(new Error('history stream ended')));
    this.call.write({
      create_request: { key: ALL, range_end: ALL, start_revision: String(from), prev_kv: true },
    });
  }

  private onMessage(r: Json): void {
    if (this.ended) return;
    if (r.canceled === true) {
      const compacted = int64OfJson(r.compact_revision);
      this.finish(
        compacted > 0
          ? new EtceteraError('ERR_COMPACTED', { compactRevision: compacted })
          : new Error(String(r.cancel_reason ?? 'history watch canceled')),
      );
      return;
    }
    const events = ((r.events as unknown[] | undefined) ?? []).map(eventOf);
    let start = 0;
    while (start < events.length) {
      const revision = events[start]!.kv.modRevision;
      let end = start + 1;
      while (end < events.length && events[end]!.kv.modRevision === revision) end++;
      if (revision > this.last && revision <= this.until) {
        this.queue.push({ revision, events: events.slice(start, end) });
        this.last = revision;
      }
      start = end;
      if (revision >= this.until) {
        this.finish(undefined);
        return;
      }
    }
    if (this.queue.length >= HISTORY_HIGH_WATER && !this.paused) {
      this.paused = true;
      this.call.pause();
    }
    this.signal();
  }

  private finish(failure: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = failure;
    this.call.cancel();
    this.signal();
  }

  private signal(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  close(): void {
    this.ended = true;
    this.call.cancel();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<EventBatch> {
    for (;;) {
      const b = this.queue.shift();
      if (b !== undefined) {
        if (this.paused && this.queue.length < HISTORY_HIGH_WATER / 2) {
          this.paused = false;
          this.call.resume();
        }
        yield b;
        continue;
      }
      if (this.ended) {
        if (this.failure !== undefined) throw this.failure;
        return;
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }
}
