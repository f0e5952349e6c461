/**
 * Every tunable of the watch cache, with its default. Nothing in src/watchcache reads a clock,
 * a timer or a limit from anywhere else.
 */

import type { Registry } from 'prom-client';
import { EtceteraError } from '../errors.js';
import type { TurnScheduler, WatchClock } from './types.js';

export interface WatchCacheOptions {
  /** Time source and timers. Default: Date.now and unref'd setTimeout. */
  clock?: WatchClock;
  /** Runs the next dispatch turn. Default: setImmediate. */
  scheduler?: TurnScheduler;
  /** prom-client registry for the metrics. Default: none (metrics kept but not registered). */
  registry?: Registry;
  /** Prefix of metric names. Default 'etcetera_watchcache_'. */
  metricPrefix?: string;

  /** Window: at most this many events in memory. Default 100,000. */
  windowMaxEvents?: number;
  /** Window: at most this many bytes of batches in memory. Default 64 MiB. */
  windowMaxBytes?: number;
  /** Window: slots allocated at start; the ring doubles up to `windowMaxSlots`. Default 1,024. */
  windowInitialSlots?: number;
  /** Window: most batches (revisions) kept. Default 65,536. */
  windowMaxSlots?: number;

  /**
   * Per-watcher buffer bound in bytes (soft). A watcher over it gets a grace period from the
   * shared time budget; still over it after the grace, it is cancelled. Default 1 MiB.
   */
  watcherBufferBytes?: number;
  /** Per-watcher hard bound: over it the watcher is cancelled at once. Default 4 × soft. */
  watcherHardBufferBytes?: number;
  /** Slow-watcher grace: the shared budget's most milliseconds. Default 100. */
  slowBudgetMaxMs?: number;
  /** Slow-watcher grace: milliseconds added to the budget per second. Default 100. */
  slowBudgetRefillMsPerSecond?: number;

  /** Fan-out work per event-loop turn: most (watcher, batch) deliveries. Default 2,000. */
  maxDeliveriesPerTurn?: number;
  /** Catch-up work per event-loop turn: most window entries examined. Default 20,000. */
  maxCatchUpEntriesPerTurn?: number;
  /**
   * Fan-out time per event-loop turn, in milliseconds of `clock`: dispatch, catch-up and the
   * connections' writes stop once a turn has used this much and go on in the next turn, so
   * the I/O of reads and writes is served between slices. Default 5.
   */
  fanoutSliceMs?: number;
  /**
   * Whether the write path has work waiting (for a member: Raft entries persisted but not yet
   * applied, whose callers wait for their answer). While it has, each fan-out turn takes
   * `busyFanoutSliceMs` instead of `fanoutSliceMs`, so a write's next step (a LevelDB
   * callback, its answer) waits at most about that long for the fan-out. Called once per
   * turn. Default: never.
   */
  writesPending?: () => boolean;
  /** Fan-out time per turn while `writesPending()`, in milliseconds of `clock`. Default 1. */
  busyFanoutSliceMs?: number;
  /**
   * Bytes of frames one connection's flush takes while `writesPending()` (the flush that
   * crosses the slice's end finishes, so this bounds how far a busy turn runs over it; the
   * rest goes in later turns). Default 32 KiB.
   */
  busyFlushBytes?: number;

  /** Interval of progress notifications to idle progress_notify watchers. Default 10 min. */
  progressNotifyIntervalMs?: number;
  /** waitUntilFresh's default timeout. Default 3,000 ms. */
  freshTimeoutMs?: number;
}

export type ResolvedOptions = Required<Omit<WatchCacheOptions, 'registry'>> & {
  registry: Registry | undefined;
};

const MiB = 1024 * 1024;

export const realClock: WatchClock = {
  now: () => Date.now(),
  setTimer(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return () => clearTimeout(t);
  },
};

export function resolveOptions(o: WatchCacheOptions = {}): ResolvedOptions {
  const watcherBufferBytes = positive(o.watcherBufferBytes, MiB, 'watcherBufferBytes');
  const resolved: ResolvedOptions = {
    clock: o.clock ?? realClock,
    scheduler: o.scheduler ?? ((fn) => setImmediate(fn)),
    registry: o.registry,
    metricPrefix: o.metricPrefix ?? 'etcetera_watchcache_',
    windowMaxEvents: positive(o.windowMaxEvents, 100_000, 'windowMaxEvents'),
    windowMaxBytes: positive(o.windowMaxBytes, 64 * MiB, 'windowMaxBytes'),
    windowInitialSlots: positive(o.windowInitialSlots, 1024, 'windowInitialSlots'),
    windowMaxSlots: positive(o.windowMaxSlots, 65_536, 'windowMaxSlots'),
    watcherBufferBytes,
    watcherHardBufferBytes: positive(
      o.watcherHardBufferBytes,
      4 * watcherBufferBytes,
      'watcherHardBufferBytes',
    ),
    slowBudgetMaxMs: nonNegative(o.slowBudgetMaxMs, 100, 'slowBudgetMaxMs'),
    slowBudgetRefillMsPerSecond: nonNegative(
      o.slowBudgetRefillMsPerSecond,
      100,
      'slowBudgetRefillMsPerSecond',
    ),
    maxDeliveriesPerTurn: positive(o.maxDeliveriesPerTurn, 2_000, 'maxDeliveriesPerTurn'),
    maxCatchUpEntriesPerTurn: positive(
      o.maxCatchUpEntriesPerTurn,
      20_000,
      'maxCatchUpEntriesPerTurn',
    ),
    fanoutSliceMs: positive(o.fanoutSliceMs, 5, 'fanoutSliceMs'),
    writesPending: o.writesPending ?? (() => false),
    busyFanoutSliceMs: positive(o.busyFanoutSliceMs, 1, 'busyFanoutSliceMs'),
    busyFlushBytes: positive(o.busyFlushBytes, 32 * 1024, 'busyFlushBytes'),
    progressNotifyIntervalMs: positive(
      o.progressNotifyIntervalMs,
      10 * 60_000,
      'progressNotifyIntervalMs',
    ),
    freshTimeoutMs: nonNegative(o.freshTimeoutMs, 3_000, 'freshTimeoutMs'),
  };
  if (resolved.watcherHardBufferBytes < resolved.watcherBufferBytes) {
    throw invalid('watcherHardBufferBytes must be >= watcherBufferBytes');
  }
  if (resolved.windowMaxSlots < resolved.windowInitialSlots) {
    throw invalid('windowMaxSlots must be >= windowInitialSlots');
  }
  return resolved;
}

function positive(v: number | undefined, dflt: number, name: string): number {
  if (v === undefined) return dflt;
  if (!Number.isFinite(v) || v <= 0) throw invalid(`${name} must be a positive number`);
  return v;
}

function nonNegative(v: number | undefined, dflt: number, name: string): number {
  if (v === undefined) return dflt;
  if (!Number.isFinite(v) || v < 0) throw invalid(`${name} must be >= 0`);
  return v;
}

function invalid(detail: string): EtceteraError {
  return new EtceteraError('ERR_INVALID_ARGUMENT', { detail });
}
