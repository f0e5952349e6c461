/**
 * The corruption check, as etcd's `--experimental-initial-corrupt-check` and
 * `--experimental-corrupt-check-time`: members compare their keyspace hashes (HashKV,
 * src/store/hash.ts) at one revision, asking each other over the peer port (GET /hashkv on
 * src/server/peer-http.ts, answered to current members only).
 *
 *   at start   before the member joins Raft, its own hash at its applied revision against
 *              every reachable peer's hash at that revision: any mismatch refuses the start
 *              (ERR_PEER_HASH_MISMATCH); a peer that is unreachable, behind or compacted
 *              past it is logged and skipped, as etcd does.
 *   periodic   on the leader, every interval: its hash at its current revision against the
 *              followers'; each follower that disagrees gets a CORRUPT alarm raised for it
 *              through Raft, which stops every write in the cluster until `alarm disarm`.
 *
 * The hash covers the live keys at the revision only, so two members that compacted to
 * different revisions still compare equal when their data agrees (etcd needs equal
 * compaction revisions to compare).
 */
import { EtceteraError, isEtceteraError } from '../errors.js';
import type { NodeId } from '../raft/types.js';
import type { KeyspaceHash } from '../store/hash.js';
import type { Logger } from './logger.js';
import { fetchPeerHash, type PeerHash } from './peer-http.js';
import type { MemberRegistry } from './registry.js';
import type { DialTls } from './tls.js';

export interface CorruptCheckDeps {
  /** TLS for https:// peers (the member's peer certificate). */
  peerTls?: DialTls;
  selfId: NodeId;
  registry: MemberRegistry;
  /** This member's hash at `revision` (0: current). */
  hash(revision: number): Promise<KeyspaceHash>;
  /** Proposes a CORRUPT alarm for `memberId` (decimal). */
  raiseCorrupt(memberId: string): Promise<unknown>;
  /** Whether CORRUPT is raised for `memberId` already (as applied here). */
  corruptRaised(memberId: string): boolean;
  isLeader(): boolean;
  logger: Logger;
  /** The periodic check's interval; 0: none. */
  intervalMs: number;
}

export interface PeerAnswer {
  id: string;
  answer: PeerHash | undefined;
}

/** Asks every other member for its hash at `revision`. */
async function peerHashes(d: CorruptCheckDeps, revision: number): Promise<PeerAnswer[]> {
  const peers = d.registry.list().filter((m) => m.id !== d.selfId && m.peerURLs.length > 0);
  return Promise.all(
    peers.map(async (m) => {
      for (const url of m.peerURLs) {
        const answer = await fetchPeerHash(
          url,
          revision,
          d.selfId,
          d.registry.clusterId,
          d.peerTls,
        );
        if (answer !== undefined) return { id: String(m.id), answer };
      }
      return { id: String(m.id), answer: undefined };
    }),
  );
}

/** The start-up check: throws ERR_PEER_HASH_MISMATCH when a peer disagrees at our revision. */
export async function initialCorruptCheck(d: CorruptCheckDeps): Promise<void> {
  const own = await d.hash(0);
  d.logger.info({ revision: own.revision, hash: own.hash }, 'initial corruption check');
  const mismatched: string[] = [];
  for (const p of await peerHashes(d, own.revision)) {
    const a = p.answer;
    if (a === undefined) {
      d.logger.warn({ peer: p.id }, 'initial corruption check: peer did not answer');
    } else if (a.kind === 'error') {
      d.logger.warn(
        { peer: p.id, revision: own.revision, error: a.code },
        'initial corruption check: cannot compare with peer',
      );
    } else if (a.hash !== own.hash) {
      d.logger.error(
        { peer: p.id, revision: own.revision, hash: own.hash, peerHash: a.hash },
        "this member's hash differs from a peer's",
      );
      mismatched.push(p.id);
    }
  }
  if (mismatched.length > 0) {
    throw new EtceteraError('ERR_PEER_HASH_MISMATCH', {
      detail: `member ${String(d.selfId)} at revision ${own.revision}: hash ${own.hash} differs from peer(s) ${mismatched.join(', ')}`,
    });
  }
}

/** The leader's periodic check. */
export class CorruptChecker {
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(private readonly d: CorruptCheckDeps) {}

  start(): void {
    if (this.d.intervalMs <= 0 || this.timer !== undefined) return;
    this.timer = setInterval(() => void this.tick(), this.d.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async tick(): Promise<void> {
    if (this.running || !this.d.isLeader()) return;
    this.running = true;
    try {
      await this.checkOnce();
    } catch (e) {
      this.d.logger.warn({ err: String(e) }, 'corruption check failed to run');
    } finally {
      this.running = false;
    }
  }

  /** One round; returns the members found to disagree (their CORRUPT alarms are raised). */
  async checkOnce(): Promise<string[]> {
    const own = await this.d.hash(0);
    const bad: string[] = [];
    for (const p of await peerHashes(this.d, own.revision)) {
      const a = p.answer;
      if (a === undefined || a.kind === 'error' || a.hash === own.hash) continue;
      this.d.logger.error(
        { peer: p.id, revision: own.revision, hash: own.hash, peerHash: a.hash },
        'corruption check: a member disagrees with the leader; raising CORRUPT',
      );
      bad.push(p.id);
    }
    for (const id of bad) {
      if (this.d.corruptRaised(id)) continue;
      await this.d.raiseCorrupt(id).catch((e: unknown) => {
        if (!isEtceteraError(e)) throw e;
        this.d.logger.warn({ peer: id, err: e.message }, 'could not raise the CORRUPT alarm');
      });
    }
    return bad;
  }
}
