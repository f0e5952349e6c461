/**
 * Lease time on a member. Which leases exist is replicated (grant and revoke go through
 * Raft); when they expire is the leader's business alone, as in etcd:
 *
 *   - only the leader's lessor counts: keepalive and time-to-live are answered by the leader
 *     (a follower forwards them to the leader's peer URL, as etcd forwards LeaseRenew);
 *   - only the leader looks for expired leases, and it revokes them by proposing
 *     `leaseRevoke`, so every member deletes the same keys at the same revision;
 *   - a new leader restarts every lease's TTL (it cannot know how long the old leader had
 *     been counting).
 */
import { isEtceteraError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { LeaseId } from '../store/types.js';
import type { Logger } from './logger.js';

export interface ReaperOptions {
  store: Store;
  logger: Logger;
  /** Proposes the revoke of one lease; resolves when applied. */
  revoke(id: LeaseId): Promise<void>;
  /** How often to look. Default 500 ms (etcd checks every 500 ms too). */
  intervalMs?: number;
  /** Revokes proposed per look, at most (etcd limits to 1000 per second). Default 500. */
  maxPerRound?: number;
}

/** The leader's expiry loop. `start` on becoming leader, `stop` on losing leadership. */
export class LeaseReaper {
  private timer: NodeJS.Timeout | undefined;
  /** Revokes proposed and not yet answered: never proposed twice at once. */
  private readonly inFlight = new Set<number>();

  constructor(private readonly o: ReaperOptions) {}

  get running(): boolean {
    return this.timer !== undefined;
  }

  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.round(), this.o.intervalMs ?? 500);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One look: propose revokes for the leases whose TTL ran out. */
  round(): void {
    const max = this.o.maxPerRound ?? 500;
    const expired = this.o.store.lessor.expired().filter((id) => !this.inFlight.has(id));
    for (const id of expired.slice(0, max)) {
      this.inFlight.add(id);
      this.o
        .revoke(id)
        .then(() => this.o.logger.debug({ lease: String(id) }, 'lease expired and revoked'))
        .catch((e: unknown) => {
          if (!isEtceteraError(e, 'ERR_LEASE_NOT_FOUND'))
            this.o.logger.warn({ lease: String(id), err: String(e) }, 'lease revoke failed');
        })
        .finally(() => this.inFlight.delete(id));
    }
  }
}
