/**
 * Keeps a lease alive: renews it every third of its TTL (etcd's client does the same) until
 * stopped, or until the server says the lease is gone (TTL 0), which is reported once.
 * A failed renewal is retried at the next tick; the lease survives as long as one renewal
 * per TTL gets through.
 */
import type { LeaseKeepAliveResponse } from './types.js';

export interface LeaseKeeperOptions {
  /** Called after each renewal. */
  onRenew?: (r: LeaseKeepAliveResponse) => void;
  /** Called once when the lease no longer exists; renewing stops. */
  onLost?: () => void;
  /** Called when a renewal fails (the keeper keeps trying). */
  onError?: (err: unknown) => void;
  /** Renewal interval in ms. Default: a third of the TTL the server reports (at least 500). */
  intervalMs?: number;
  /** Let the process exit while the keeper runs. Default false. */
  unref?: boolean;
}

interface Renewer {
  leaseKeepAliveOnce(id: string): Promise<LeaseKeepAliveResponse>;
}

export class LeaseKeeper {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Resolves after the first renewal (or failure). */
  readonly first: Promise<LeaseKeepAliveResponse | undefined>;

  constructor(
    private readonly client: Renewer,
    readonly id: string,
    private readonly options: LeaseKeeperOptions,
  ) {
    this.first = this.renew();
  }

  private async renew(): Promise<LeaseKeepAliveResponse | undefined> {
    if (this.stopped) return undefined;
    let next = this.options.intervalMs ?? 1000;
    let answer: LeaseKeepAliveResponse | undefined;
    try {
      answer = await this.client.leaseKeepAliveOnce(this.id);
      if (this.stopped) return answer;
      if (answer.ttl <= 0) {
        this.stopped = true;
        this.options.onLost?.();
        return answer;
      }
      this.options.onRenew?.(answer);
      next = this.options.intervalMs ?? Math.max(500, (answer.ttl * 1000) / 3);
    } catch (e) {
      this.options.onError?.(e);
    }
    if (!this.stopped) {
      this.timer = setTimeout(() => void this.renew(), next);
      if (this.options.unref) this.timer.unref();
    }
    return answer;
  }

  get running(): boolean {
    return !this.stopped;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
