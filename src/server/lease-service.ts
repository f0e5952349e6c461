/**
 * A member's lease requests that depend on time: keepalive and time-to-live. They are
 * answered by the leader's lessor, the only one whose expiry clocks count; a follower
 * forwards them to the leader's peer URL and retries through leader changes until the
 * request timeout. (Grant and revoke are ordinary replicated writes; see member.ts.)
 */
import { EtceteraError } from '../errors.js';
import type { RaftDriver } from '../raft/driver/driver.js';
import { type NodeId, Role } from '../raft/types.js';
import type { Store } from '../store/store.js';
import type { LeaseId, LeaseTimeToLive } from '../store/types.js';
import type { MemberMetrics } from './metrics.js';
import { forwardLease } from './peer-http.js';
import type { MemberRegistry } from './registry.js';
import type { DialTls } from './tls.js';
import { sleep } from './util.js';

export interface LeaseServiceDeps {
  /** TLS for https:// peers (the member's peer certificate). */
  peerTls?: DialTls;
  store: Store;
  driver: RaftDriver;
  registry: MemberRegistry;
  selfId: NodeId;
  timeoutMs: number;
  metrics: MemberMetrics;
  /** Resolves once a leader is known, or rejects with ERR_NO_LEADER at the deadline. */
  waitLeader(deadline: number): Promise<void>;
}

export class LeaseService {
  constructor(private readonly d: LeaseServiceDeps) {}

  isLeader(): boolean {
    const st = this.d.driver.status();
    return st.role === Role.Leader && st.leader === this.d.selfId;
  }

  keepAlive(id: LeaseId): Promise<number> {
    return this.onLeader(
      () => this.leaderKeepAlive(id),
      async (url) => {
        const r = await forwardLease(
          url,
          '/leases/keepalive',
          { id: String(id) },
          this.d.timeoutMs,
          this.d.peerTls,
        );
        return r === undefined ? undefined : Number(r.ttl);
      },
    );
  }

  timeToLive(id: LeaseId, keys: boolean): Promise<LeaseTimeToLive> {
    return this.onLeader(
      () => this.leaderTimeToLive(id, keys),
      async (url) => {
        const body = { id: String(id), keys };
        const r = await forwardLease(
          url,
          '/leases/timetolive',
          body,
          this.d.timeoutMs,
          this.d.peerTls,
        );
        if (r === undefined) return undefined;
        const k = (r.keys as string[]).map((s) => new Uint8Array(Buffer.from(s, 'base64')));
        return { id, ttl: Number(r.ttl), grantedTtl: Number(r.grantedTtl), keys: k };
      },
    );
  }

  /**
   * The leader's keepalive. A lease it does not know may be granted in an entry it has
   * committed but not yet applied (it just became leader): wait for a read barrier once.
   */
  async leaderKeepAlive(id: LeaseId): Promise<number> {
    if (this.d.store.lessor.get(id) === undefined) await this.d.driver.readIndex();
    return this.d.store.lessor.keepAlive(id) ?? 0;
  }

  async leaderTimeToLive(id: LeaseId, keys: boolean): Promise<LeaseTimeToLive> {
    if (this.d.store.lessor.get(id) === undefined) await this.d.driver.readIndex();
    return this.d.store.lessor.timeToLive(id, keys);
  }

  /** Runs `local` if this member leads, else `forward` to the leader's peer URL; retries. */
  private async onLeader<T>(
    local: () => Promise<T>,
    forward: (peerUrl: string) => Promise<T | undefined>,
  ): Promise<T> {
    const deadline = Date.now() + this.d.timeoutMs;
    for (;;) {
      await this.d.waitLeader(deadline);
      if (this.isLeader()) return local();
      const leader = this.d.registry.get(this.d.driver.status().leader);
      const url = leader?.peerURLs[0];
      if (url !== undefined) {
        const r = await forward(url);
        if (r !== undefined) {
          this.d.metrics.leaseForwards.inc();
          return r;
        }
      }
      if (Date.now() >= deadline)
        throw new EtceteraError('ERR_TIMEOUT', { detail: 'the leader did not answer' });
      await sleep(50);
    }
  }
}
