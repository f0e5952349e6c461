/**
 * Leases, owned here alone: the replicated part (which leases exist, their granted TTL,
 * which keys they hold), the local part (when each one expires on this member), and the
 * policy around them (the ID range a member or embedded store picks from, the minimum TTL,
 * time-to-live answers, renewal).
 *
 * The replicated part changes only through applied commands (grant, revoke, put with a
 * lease, delete), so it is the same on every member; apply passes the batch's time in and
 * never reads a clock itself. Expiry is local, as in etcd: counted on the injected clock,
 * refreshed by keepalive, and reset for every lease by `refreshAll` when a member becomes
 * leader or reopens. Only the leader (or a standalone store) acts on `expired()`, by
 * proposing revokes. A lease whose TTL ran out is not renewed by keepalive (etcd waits for
 * its revoke and then answers "not found"; here it answers "not found" at once).
 */
import type { Clock, LeaseId, LeaseTimeToLive } from './types.js';

/** etcd's upper bound on a lease TTL, in seconds. */
export const MAX_LEASE_TTL = 9_000_000_000;

/**
 * IDs chosen for a grant with ID 0 are drawn from [1, 2^52): positive, exact as JavaScript
 * numbers, and printed by etcdctl as hex like etcd's own.
 */
export const LEASE_ID_LIMIT = 2 ** 52;

export interface Lease {
  readonly id: LeaseId;
  /** Granted TTL in seconds (after raising to the minimum). */
  readonly ttl: number;
  /** Attached keys, as latin1 strings. */
  readonly keys: Set<string>;
}

export class Lessor {
  private readonly leases = new Map<number, Lease>();
  /** Local expiry time in ms, per lease. Not replicated, not persisted. */
  private readonly expiresAt = new Map<number, number>();

  /**
   * @param minTtl the smallest TTL a lease gets, in seconds (etcd derives it from the
   *   election timeout).
   * @param clock the time source expiry is counted on.
   */
  constructor(
    private readonly minTtl: number,
    private readonly clock: Clock,
  ) {}

  /**
   * An ID for a grant that asked for none: random in [1, LEASE_ID_LIMIT) and not in use here
   * (a concurrent grant may still take it first; apply then refuses with ERR_LEASE_EXIST).
   */
  chooseId(random: () => number = Math.random): LeaseId {
    for (;;) {
      const id = Math.floor(random() * LEASE_ID_LIMIT);
      if (id > 0 && !this.leases.has(id)) return id as LeaseId;
    }
  }

  get size(): number {
    return this.leases.size;
  }

  has(id: number): boolean {
    return this.leases.has(id);
  }

  get(id: number): Lease | undefined {
    return this.leases.get(id);
  }

  effectiveTtl(ttl: number): number {
    return Math.max(ttl, this.minTtl);
  }

  /** Adds a lease (the caller checked it does not exist). */
  grantUnsafe(id: LeaseId, ttl: number, nowMs: number): Lease {
    const lease: Lease = { id, ttl, keys: new Set() };
    this.leases.set(id, lease);
    this.expiresAt.set(id, nowMs + ttl * 1000);
    return lease;
  }

  /** Removes a lease and returns its keys in key order (the caller deletes them). */
  remove(id: number): string[] {
    const lease = this.leases.get(id);
    if (!lease) return [];
    this.leases.delete(id);
    this.expiresAt.delete(id);
    return [...lease.keys].sort();
  }

  attach(id: number, key: string): void {
    this.leases.get(id)?.keys.add(key);
  }

  detach(id: number, key: string): void {
    this.leases.get(id)?.keys.delete(key);
  }

  /**
   * Renews a lease; returns its TTL, or undefined when it does not exist or its TTL already
   * ran out (it is about to be revoked: renewing it would race the revoke).
   */
  keepAlive(id: number): number | undefined {
    const lease = this.leases.get(id);
    if (!lease) return undefined;
    const now = this.clock.now();
    const at = this.expiresAt.get(id);
    if (at !== undefined && at <= now) return undefined;
    this.expiresAt.set(id, now + lease.ttl * 1000);
    return lease.ttl;
  }

  /** Remaining whole seconds (truncated, never below 0), or undefined when absent. */
  remainingSeconds(id: number): number | undefined {
    const at = this.expiresAt.get(id);
    if (at === undefined) return undefined;
    return Math.max(0, Math.trunc((at - this.clock.now()) / 1000));
  }

  /** etcd's LeaseTimeToLive answer: TTL -1 when the lease does not exist. */
  timeToLive(id: number, withKeys: boolean): LeaseTimeToLive {
    const lease = this.leases.get(id);
    if (!lease) return { id: id as LeaseId, ttl: -1, grantedTtl: 0, keys: [] };
    return {
      id: id as LeaseId,
      ttl: this.remainingSeconds(id) ?? 0,
      grantedTtl: lease.ttl,
      keys: withKeys
        ? [...lease.keys].sort().map((k) => new Uint8Array(Buffer.from(k, 'latin1')))
        : [],
    };
  }

  /** IDs of leases whose TTL ran out, oldest expiry first. */
  expired(): LeaseId[] {
    const now = this.clock.now();
    const out: Array<[number, number]> = [];
    for (const [id, at] of this.expiresAt) if (at <= now) out.push([id, at]);
    out.sort((a, b) => a[1] - b[1] || a[0] - b[0]);
    return out.map(([id]) => id as LeaseId);
  }

  /** Restarts every lease's TTL from now (on open and when this member becomes leader). */
  refreshAll(): void {
    const now = this.clock.now();
    for (const lease of this.leases.values()) this.expiresAt.set(lease.id, now + lease.ttl * 1000);
  }

  clear(): void {
    this.leases.clear();
    this.expiresAt.clear();
  }

  ids(): LeaseId[] {
    return [...this.leases.keys()].sort((a, b) => a - b) as LeaseId[];
  }
}
