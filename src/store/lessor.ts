/**
 * Leases: the replicated part (which leases exist, their granted TTL, which keys they hold)
 * and the local part (when each one expires on this member).
 *
 * The replicated part changes only through applied commands (grant, revoke, put with a
 * lease, delete), so it is the same on every member. Expiry is local, as in etcd: it is
 * computed from the time the caller passes in (apply never reads a clock), refreshed by
 * keepalive, and reset for every lease by `refreshAll` when a member becomes leader or
 * reopens. Only the leader acts on `expired()`, by proposing revokes.
 */
import type { LeaseId } from './types.js';

/** etcd's upper bound on a lease TTL, in seconds. */
export const MAX_LEASE_TTL = 9_000_000_000;

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

  /** @param minTtl the smallest TTL a lease gets, in seconds (etcd derives it from the election timeout). */
  constructor(private readonly minTtl: number) {}

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

  /** Renews a lease; returns its TTL, or undefined when it does not exist. */
  keepAlive(id: number, nowMs: number): number | undefined {
    const lease = this.leases.get(id);
    if (!lease) return undefined;
    this.expiresAt.set(id, nowMs + lease.ttl * 1000);
    return lease.ttl;
  }

  /** Remaining whole seconds (truncated, never below 0), or undefined when absent. */
  remainingSeconds(id: number, nowMs: number): number | undefined {
    const at = this.expiresAt.get(id);
    if (at === undefined) return undefined;
    return Math.max(0, Math.trunc((at - nowMs) / 1000));
  }

  /** IDs of leases whose expiry is at or before `nowMs`, oldest expiry first. */
  expired(nowMs: number): LeaseId[] {
    const out: Array<[number, number]> = [];
    for (const [id, at] of this.expiresAt) if (at <= nowMs) out.push([id, at]);
    out.sort((a, b) => a[1] - b[1] || a[0] - b[0]);
    return out.map(([id]) => id as LeaseId);
  }

  /** Restarts every lease's TTL from `nowMs` (on open and when this member becomes leader). */
  refreshAll(nowMs: number): void {
    for (const lease of this.leases.values())
      this.expiresAt.set(lease.id, nowMs + lease.ttl * 1000);
  }

  clear(): void {
    this.leases.clear();
    this.expiresAt.clear();
  }

  ids(): LeaseId[] {
    return [...this.leases.keys()].sort((a, b) => a - b) as LeaseId[];
  }
}
