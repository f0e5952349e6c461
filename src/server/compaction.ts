/**
 * Auto-compaction, run by the leader only (a compaction is a replicated command; followers
 * apply it when it commits). Two modes, as etcd's --auto-compaction-mode:
 *
 *   periodic (retention = a time window W): every W/10 the compactor notes the current
 *     revision; every min(W, 1 h) it compacts to the newest noted revision that is at least
 *     W old. So history older than W (give or take a sampling step) is dropped.
 *   revision (retention = N revisions): every `checkMs` (etcd: 5 minutes) it compacts to
 *     current revision − N when that moved.
 *
 * Physical deletion after the compact command is the store's (batched, so writers are never
 * held up for long). A leader that loses leadership stops; the next one starts afresh.
 */
import { isEtceteraError } from '../errors.js';
import type { Retention } from './config.js';
import type { Logger } from './logger.js';

export interface CompactorOptions {
  retention: Retention;
  now(): number;
  currentRevision(): number;
  compactRevision(): number;
  /** Proposes `compact(revision)`; resolves when applied. */
  compact(revision: number): Promise<void>;
  logger: Logger;
  /** Revision mode's check interval. Default 5 minutes, as etcd. */
  revisionCheckMs?: number;
}

const HOUR_MS = 3_600_000;

export class AutoCompactor {
  private timer: NodeJS.Timeout | undefined;
  /** Periodic mode: (time, revision) samples, oldest first. */
  private samples: Array<{ at: number; revision: number }> = [];
  private lastCompactAt = 0;
  private busy = false;

  constructor(private readonly o: CompactorOptions) {}

  get running(): boolean {
    return this.timer !== undefined;
  }

  start(): void {
    const r = this.o.retention;
    if (this.timer !== undefined || r.kind === 'off') return;
    this.samples = [];
    this.lastCompactAt = this.o.now();
    const every =
      r.kind === 'periodic'
        ? Math.max(1, Math.floor(Math.min(r.ms, HOUR_MS) / 10))
        : (this.o.revisionCheckMs ?? 5 * 60_000);
    this.sample();
    this.timer = setInterval(() => void this.step(), every);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One timer step (exposed for tests). */
  async step(): Promise<void> {
    if (this.busy) return;
    const r = this.o.retention;
    const target =
      r.kind === 'periodic'
        ? this.periodicTarget(r.ms)
        : r.kind === 'revision'
          ? this.o.currentRevision() - r.revisions
          : 0;
    if (target <= 0 || target <= this.o.compactRevision()) return;
    this.busy = true;
    try {
      await this.o.compact(target);
      this.o.logger.info({ revision: target, mode: r.kind }, 'compaction');
    } catch (e) {
      if (!isEtceteraError(e, 'ERR_COMPACTED'))
        this.o.logger.warn({ revision: target, err: String(e) }, 'compaction failed');
    } finally {
      this.busy = false;
    }
  }

  private sample(): void {
    this.samples.push({ at: this.o.now(), revision: this.o.currentRevision() });
  }

  /** The revision to compact to now in periodic mode, or 0 for "not yet". */
  private periodicTarget(windowMs: number): number {
    this.sample();
    const now = this.o.now();
    const cutoff = now - windowMs;
    let target = 0;
    while (this.samples.length > 0 && this.samples[0]!.at <= cutoff) {
      target = this.samples.shift()!.revision;
    }
    if (target === 0) return 0;
    if (now - this.lastCompactAt < Math.min(windowMs, HOUR_MS)) {
      // Not time yet: keep the newest old-enough sample for the next step.
      this.samples.unshift({ at: cutoff, revision: target });
      return 0;
    }
    this.lastCompactAt = now;
    return target;
  }
}
