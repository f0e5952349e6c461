/**
 * How a member's requests go through Raft: proposals answered with their outcome once
 * applied on this member, and read barriers. Both wait for a leader first (up to the request
 * timeout, as etcd does) instead of failing at once during an election.
 *
 * Proposal bookkeeping: each proposal carries a request ID (entry.ts); `Waiters` holds the
 * ID from before the proposal until its promise settles, and apply drops the outcome there.
 * Every exit path removes the ID, so a lost or failed proposal leaves nothing behind.
 */
import { EtceteraError, isEtceteraError } from '../errors.js';
import type { RaftDriver } from '../raft/driver/driver.js';
import { NONE } from '../raft/types.js';
import { encodeCommand } from '../store/codec.js';
import type { ApplyOutcome } from '../store/store.js';
import type { Command, CommandResult } from '../store/types.js';
import { EntryKind, encodeEntry, RequestIds, type Waiters } from './entry.js';
import type { MemberMetrics } from './metrics.js';
import { sleep, untilDeadline } from './util.js';

export interface RequestDeps {
  driver: RaftDriver;
  /** Shared with apply, which delivers outcomes into it. */
  waiters: Waiters<ApplyOutcome>;
  metrics: MemberMetrics;
  timeoutMs: number;
  /** Poll step while waiting for a leader or retrying a dropped proposal. */
  retryMs: number;
  /** Throws when the member no longer serves (stopping, failed). */
  assertServing(): void;
}

export class RaftRequests {
  private readonly ids = new RequestIds();
  private readonly waiters: Waiters<ApplyOutcome>;

  constructor(private readonly d: RequestDeps) {
    this.waiters = d.waiters;
  }

  /** Proposes one command; resolves with its result once applied here, or rejects with its error. */
  async propose(command: Command): Promise<CommandResult> {
    const requestId = this.ids.next();
    const data = encodeEntry(EntryKind.COMMAND, requestId, encodeCommand(command));
    this.waiters.begin(requestId);
    try {
      await this.proposeWithRetry(data);
    } catch (e) {
      this.waiters.cancel(requestId);
      this.d.metrics.proposalsFailed.inc();
      throw e;
    }
    const outcome = this.waiters.take(requestId);
    if (outcome === undefined)
      throw new EtceteraError('ERR_TIMEOUT', { detail: 'applied, but the outcome was lost' });
    this.d.metrics.proposalsCommitted.inc();
    if (!outcome.ok) throw outcome.error;
    return outcome.result;
  }

  /** Proposes a member attribute update (publish); resolves once applied here. */
  async proposeAttributes(body: Uint8Array): Promise<void> {
    await this.proposeWithRetry(encodeEntry(EntryKind.ATTRIBUTES, this.ids.next(), body));
  }

  /**
   * A proposal that Raft dropped (no leader, a transfer under way) never entered the log,
   * so it is safe to propose again; do so until a leader takes it or the time is up.
   */
  private async proposeWithRetry(data: Uint8Array): Promise<void> {
    const deadline = Date.now() + this.d.timeoutMs;
    for (;;) {
      await this.waitLeader(deadline);
      try {
        await this.d.driver.propose(data);
        return;
      } catch (e) {
        if (!isEtceteraError(e, 'ERR_RAFT_PROPOSAL_DROPPED') || Date.now() >= deadline) throw e;
        await sleep(this.d.retryMs);
      }
    }
  }

  /** A linearizable read barrier: resolves once this member has applied the read index. */
  async readBarrier(): Promise<void> {
    const deadline = Date.now() + this.d.timeoutMs;
    for (;;) {
      await this.waitLeader(deadline);
      try {
        await this.d.driver.readIndex();
        return;
      } catch (e) {
        const retry =
          isEtceteraError(e, 'ERR_NO_LEADER') || isEtceteraError(e, 'ERR_RAFT_PROPOSAL_DROPPED');
        if (!retry || Date.now() >= deadline) throw e;
        await sleep(this.d.retryMs);
      }
    }
  }

  /** Resolves when a leader is known; ERR_NO_LEADER at the deadline (epoch ms). */
  async waitLeader(deadline: number): Promise<void> {
    const known = () => this.d.driver.status().leader !== NONE;
    if (known()) return;
    await untilDeadline(deadline, this.d.retryMs, () => {
      this.d.assertServing();
      return known();
    });
    if (!known()) throw new EtceteraError('ERR_NO_LEADER');
  }
}
