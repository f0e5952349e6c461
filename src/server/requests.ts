/**
 * How a member's requests go through Raft: proposals answered with their outcome once
 * applied on this member, and read barriers. Both wait for a leader first (up to the request
 * timeout, as etcd does) instead of failing at once during an election.
 *
 * A proposal's outcome is what the application (apply.ts) answered for its entry; the driver
 * hands it to the proposal's own promise, so there is no second table of waiters here.
 */
import { EtceteraError, isEtceteraError } from '../errors.js';
import type { RaftDriver } from '../raft/driver/driver.js';
import type { Applied } from '../raft/driver/pending.js';
import { NONE } from '../raft/types.js';
import { encodeCommand } from '../store/codec.js';
import type { ApplyOutcome } from '../store/store.js';
import type { Command, CommandResult } from '../store/types.js';
import { EntryKind, encodeEntry } from './entry.js';
import type { MemberMetrics } from './metrics.js';
import { sleep, untilDeadline } from './util.js';

export interface RequestDeps {
  driver: RaftDriver;
  metrics: MemberMetrics;
  timeoutMs: number;
  /** Poll step while waiting for a leader or retrying a dropped proposal. */
  retryMs: number;
  /** Throws when the member no longer serves (stopping, failed). */
  assertServing(): void;
}

export class RaftRequests {
  /** Proposals under way (for the pending-proposals gauge). */
  private inFlight = 0;

  constructor(private readonly d: RequestDeps) {}

  get pending(): number {
    return this.inFlight;
  }

  /** Proposes one command; resolves with its result once applied here, or rejects with its error. */
  async propose(command: Command): Promise<CommandResult> {
    const data = encodeEntry(EntryKind.COMMAND, encodeCommand(command));
    let outcome: unknown;
    this.inFlight++;
    try {
      outcome = (await this.proposeWithRetry(data)).outcome;
    } catch (e) {
      this.d.metrics.proposalsFailed.inc();
      throw e;
    } finally {
      this.inFlight--;
    }
    this.d.metrics.proposalsCommitted.inc();
    // The application answers every command entry with its ApplyOutcome (apply.ts).
    const o = outcome as ApplyOutcome | undefined;
    if (o === undefined) throw new Error('a command entry was applied without an outcome');
    if (!o.ok) throw o.error;
    return o.result;
  }

  /** Proposes a member attribute update (publish); resolves once applied here. */
  async proposeAttributes(body: Uint8Array): Promise<void> {
    await this.proposeWithRetry(encodeEntry(EntryKind.ATTRIBUTES, body));
  }

  /** Proposes a member's new peer URLs (member update); resolves once applied here. */
  async proposePeerUrls(body: Uint8Array): Promise<void> {
    await this.proposeWithRetry(encodeEntry(EntryKind.PEER_URLS, body));
  }

  /**
   * A proposal that Raft dropped (no leader, a transfer under way) never entered the log,
   * so it is safe to propose again; do so until a leader takes it or the time is up.
   */
  private async proposeWithRetry(data: Uint8Array): Promise<Applied> {
    const deadline = Date.now() + this.d.timeoutMs;
    for (;;) {
      await this.waitLeader(deadline);
      try {
        return await this.d.driver.propose(data);
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
