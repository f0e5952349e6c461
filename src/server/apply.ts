/**
 * The member's replicated state machine: what the Raft driver applies committed entries to.
 *
 * Invariant: the store's applied index equals Raft's applied index. Every entry becomes
 * exactly one store command at its log index: a command entry its command, and everything
 * else (a new leader's empty entry, a membership change, a peer URL update, an attribute
 * publish) a `noop`, so
 * a restart replays exactly the entries after the store's applied index.
 *
 * Order within one batch: membership and attribute updates go to the registry first (one
 * fsynced write, idempotent on replay), then the store applies the whole batch in one
 * atomic write; the outcomes (one per entry) go back to the driver, which hands each to
 * the proposal it answers when that proposal was made on this member.
 */
import { EtceteraError, isEtceteraError } from '../errors.js';
import { confChangeProblem } from '../raft/confchange.js';
import type { AppliedEntry, RaftApplication } from '../raft/driver/types.js';
import {
  type ConfChange,
  ConfChangeType,
  type ConfState,
  NodeId,
  type Snapshot,
} from '../raft/types.js';
import { decodeCommand } from '../store/codec.js';
import type { ApplyEntry, ApplyOutcome, Store } from '../store/store.js';
import type { Command } from '../store/types.js';
import { decodeEntry, EntryKind } from './entry.js';
import type { Logger } from './logger.js';
import type { MemberMetrics } from './metrics.js';
import { decodeContext, type MemberRegistry } from './registry.js';
import { decodeSnapshot, encodeSnapshot } from './snapshot.js';

/** A batch slower than this is logged (etcd warns at 100 ms too). */
export const SLOW_APPLY_MS = 100;

export interface MembershipListener {
  /** A membership change was applied (after the registry is saved). */
  onConfChange(cc: ConfChange): void;
  /** The registry was replaced wholesale (snapshot install). */
  onRegistryReplaced(): void;
  /** A member's peer URLs changed (member update), after the registry is saved. */
  onPeerUrlsChanged(id: NodeId): void;
}

export interface ApplicationDeps {
  store: Store;
  registry: MemberRegistry;
  metrics: MemberMetrics;
  logger: Logger;
  listener: MembershipListener;
}

const NOOP: Command = { op: 'noop' };

export class MemberApplication implements RaftApplication {
  constructor(private readonly d: ApplicationDeps) {}

  /** Applies a batch; answers each entry with the store's outcome for it (a no-op's for non-commands). */
  async apply(entries: readonly AppliedEntry[]): Promise<ApplyOutcome[]> {
    const batch: ApplyEntry[] = [];
    const changes: ConfChange[] = [];
    const updated: NodeId[] = [];
    let registryChanged = false;
    for (const e of entries) {
      let command = NOOP;
      if (e.confChange !== undefined) {
        if (this.applyConfChange(e.confChange, e.data)) changes.push(e.confChange);
        registryChanged = true;
      } else if (e.data.length > 0) {
        const decoded = this.decode(e.data);
        if (decoded.kind === 'command') command = decoded.command;
        else registryChanged = true;
        if (decoded.kind === 'peerUrls' && decoded.id !== undefined) updated.push(decoded.id);
      }
      batch.push({ command, index: e.index });
    }
    if (registryChanged) await this.d.registry.save();
    const started = performance.now();
    const outcomes = await this.d.store.applyBatch(batch, this.d.store.clock.now());
    const ms = performance.now() - started;
    this.d.metrics.applyDuration.observe(ms / 1000);
    if (ms > SLOW_APPLY_MS) {
      this.d.metrics.slowApplies.inc();
      this.d.logger.warn({ ms: Math.round(ms), entries: batch.length }, 'slow apply');
    }
    for (const cc of changes) this.d.listener.onConfChange(cc);
    for (const id of updated) this.d.listener.onPeerUrlsChanged(id);
    return outcomes;
  }

  /** An entry's meaning. A body that does not decode is applied as a no-op on every member. */
  private decode(
    data: Uint8Array,
  ):
    | { kind: 'command'; command: Command }
    | { kind: 'attributes' }
    | { kind: 'peerUrls'; id: NodeId | undefined } {
    try {
      const entry = decodeEntry(data);
      if (entry.kind === EntryKind.COMMAND)
        return { kind: 'command', command: decodeCommand(entry.body) };
      if (entry.kind === EntryKind.PEER_URLS) return this.applyPeerUrls(entry.body);
      const a = JSON.parse(Buffer.from(entry.body).toString('utf8')) as {
        id: number;
        name: string;
        clientURLs: string[];
      };
      this.d.registry.publish(NodeId(a.id), String(a.name), a.clientURLs.map(String));
      return { kind: 'attributes' };
    } catch (e) {
      if (!isEtceteraError(e) && !(e instanceof SyntaxError) && !(e instanceof TypeError)) throw e;
      this.d.logger.error({ err: String(e) }, 'undecodable entry applied as a no-op');
      return { kind: 'command', command: NOOP };
    }
  }

  /**
   * A member update: the member's new peer URLs go into the registry (nothing when the
   * member was removed meanwhile). `id` is the member changed, if any was.
   */
  private applyPeerUrls(body: Uint8Array): { kind: 'peerUrls'; id: NodeId | undefined } {
    const u = JSON.parse(Buffer.from(body).toString('utf8')) as { id: unknown; peerURLs: unknown };
    if (
      typeof u.id !== 'number' ||
      !Array.isArray(u.peerURLs) ||
      u.peerURLs.length === 0 ||
      !u.peerURLs.every((x) => typeof x === 'string')
    )
      throw new TypeError('a peer URL update needs an id and peer URLs');
    const id = NodeId(u.id);
    const changed = this.d.registry.updatePeerUrls(id, u.peerURLs as string[]);
    if (changed) this.d.logger.info({ id: String(id), peerURLs: u.peerURLs }, 'member updated');
    return { kind: 'peerUrls', id: changed ? id : undefined };
  }

  /**
   * Mirrors a membership change in the registry, under the same rule Raft applied it with
   * (an invalid change is ignored everywhere). Returns whether it changed anything.
   */
  private applyConfChange(cc: ConfChange, context: Uint8Array): boolean {
    const { registry, logger } = this.d;
    const problem = confChangeProblem(confStateOf(registry), cc);
    if (problem !== undefined) {
      logger.debug(
        { change: cc.type, id: String(cc.nodeId), problem },
        'membership change ignored',
      );
      return false;
    }
    const id = String(cc.nodeId);
    switch (cc.type) {
      case ConfChangeType.AddVoter: {
        const promoted = registry.get(cc.nodeId)?.isLearner === true;
        registry.upsert(cc.nodeId, false, decodeContext(context));
        logger.info({ id }, promoted ? 'member promoted' : 'member added');
        break;
      }
      case ConfChangeType.AddLearner:
        registry.upsert(cc.nodeId, true, decodeContext(context));
        logger.info({ id, learner: true }, 'member added');
        break;
      case ConfChangeType.RemoveNode:
        registry.remove(cc.nodeId);
        logger.info({ id }, 'member removed');
        break;
    }
    return true;
  }

  /** Raft snapshot: the registry and the store, as of the last applied entry. */
  async snapshot(): Promise<Uint8Array> {
    // Both are read between two applied batches: the driver never applies while it snapshots.
    const cluster = this.d.registry.toRecord();
    return encodeSnapshot(cluster, await this.d.store.exportSnapshot());
  }

  /** Installs a leader's snapshot: registry first (idempotent), then the store. */
  async restore(s: Snapshot): Promise<void> {
    if (s.data.length === 0) return; // the bootstrap snapshot at index 0: nothing to restore
    const { cluster, store } = decodeSnapshot(s.data);
    this.d.registry.replace(cluster);
    await this.d.registry.save();
    await this.d.store.restoreSnapshot(store);
    if (Number(this.d.store.appliedIndex) !== Number(s.metadata.index)) {
      throw new EtceteraError('ERR_CORRUPT', {
        detail: `snapshot at index ${s.metadata.index} holds a store applied to ${this.d.store.appliedIndex}`,
      });
    }
    this.d.logger.info({ index: s.metadata.index }, 'restored from snapshot');
    this.d.listener.onRegistryReplaced();
  }
}

export function confStateOf(registry: MemberRegistry): ConfState {
  const voters: NodeId[] = [];
  const learners: NodeId[] = [];
  for (const m of registry.list()) (m.isLearner ? learners : voters).push(m.id);
  return { voters, learners };
}
