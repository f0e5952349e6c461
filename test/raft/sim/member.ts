/**
 * SimMember: one member of the simulated group, driving its RawNode the way the real
 * driver must (types.ts, the Ready contract):
 *   1. take a Ready; `messages` go out at once;
 *   2. persist snapshot + entries + hard state in one write; with `mustSync` the write
 *      takes virtual disk time, and input keeps arriving meanwhile (step/tick between
 *      ready() and advance(), as the contract allows);
 *   3. then `messagesAfterPersist` go out, the snapshot and committed entries are applied,
 *      read states are served, and the Ready is advanced.
 * A crash throws away the RawNode and any Ready in flight: only MemoryStorage (the disk)
 * and the applied state machine survive.
 */

import { RawNodeImpl } from '../../../src/raft/raw-node.js';
import type { MemoryStorage } from '../../../src/raft/storage/memory-storage.js';
import {
  type ConfState,
  type Entry,
  LogIndex,
  type Message,
  type NodeId,
  type RaftConfig,
  type Ready,
} from '../../../src/raft/types.js';
import type { SafetyChecker } from './checker.js';
import { KvState, type PutCommand } from './kv.js';

/** What a member needs from the world around it. */
export interface MemberHost {
  readonly now: number;
  readonly checker: SafetyChecker;
  at(delayMs: number, run: () => void): void;
  send(from: SimMember, msgs: readonly Message[]): void;
  diskLatency(): number;
  /** A put took effect on this member (clients waiting here are answered). */
  onPut(m: SimMember, cmd: PutCommand): void;
  /** A read can be served on this member now. */
  onRead(m: SimMember, ctx: string): void;
  /** A conf change was applied on this member (the world may create a joining member). */
  onConf(m: SimMember, e: Entry): void;
  /** Crash `m` now (the nemesis asked for a crash in the middle of a write). */
  crashNow(m: SimMember): void;
  /** Snapshot and compaction policy. */
  readonly snapshotEvery: number;
  readonly keepAfterCompaction: number;
  readonly unsafeVoteTwice: boolean;
}

const decoder = new TextDecoder();

export class SimMember {
  readonly id: NodeId;
  readonly storage: MemoryStorage;
  readonly kv = new KvState();
  node: RawNodeImpl | undefined;
  /** Reads whose read index arrived, waiting for apply to catch up: ctx → index. */
  readonly readsWaiting = new Map<string, LogIndex>();
  private persisting = false;
  /** Set by the nemesis: crash as soon as the next Ready that must be written is taken. */
  crashOnNextWrite = false;
  private incarnation = 0;
  private readonly host: MemberHost;
  private readonly config: Omit<RaftConfig, 'id' | 'storage'>;

  constructor(
    id: NodeId,
    storage: MemoryStorage,
    host: MemberHost,
    config: Omit<RaftConfig, 'id' | 'storage'>,
  ) {
    this.id = id;
    this.storage = storage;
    this.host = host;
    this.config = config;
    this.node = this.start();
  }

  get up(): boolean {
    return this.node !== undefined;
  }

  private start(): RawNodeImpl {
    const node = new RawNodeImpl({
      ...this.config,
      id: this.id,
      storage: this.storage,
      applied: this.kv.applied,
    });
    node.raft.unsafe.voteTwicePerTerm = this.host.unsafeVoteTwice;
    return node;
  }

  conf(): ConfState | undefined {
    return this.node?.raft.tracker.conf;
  }

  /** Run `fn` on the live node, then check roles and handle the Ready. */
  input(fn: (node: RawNodeImpl) => void): void {
    const node = this.node;
    if (node === undefined) return;
    fn(node);
    this.afterInput(node);
  }

  /** The two hot inputs, without a closure each. */
  step(m: Message): void {
    const node = this.node;
    if (node === undefined) return;
    node.step(m);
    this.afterInput(node);
  }

  tick(): void {
    const node = this.node;
    if (node === undefined) return;
    node.tick();
    this.afterInput(node);
  }

  private afterInput(node: RawNodeImpl): void {
    this.host.checker.observeRole(this.id, node.raft);
    this.queueReady();
  }

  /**
   * Handle a Ready now, unless a write is in flight: then input keeps accumulating in the
   * core and goes out as one batch in the Ready after the write (group commit).
   */
  private queueReady(): void {
    this.handleReady();
  }

  private handleReady(): void {
    const node = this.node;
    if (node === undefined || this.persisting || !node.hasReady()) return;
    const rd = node.ready();
    this.host.checker.observeRole(this.id, node.raft);
    this.host.send(this, rd.messages);
    if (!rd.mustSync) {
      this.finishReady(rd, this.incarnation);
      return;
    }
    if (this.crashOnNextWrite) {
      // The nemesis' favourite moment: `messages` are out, nothing is written yet.
      this.crashOnNextWrite = false;
      this.host.crashNow(this);
      return;
    }
    this.persisting = true;
    const inc = this.incarnation;
    this.host.at(this.host.diskLatency(), () => this.finishReady(rd, inc));
  }

  private finishReady(rd: Ready, inc: number): void {
    if (inc !== this.incarnation || this.node === undefined) return; // crashed: Ready lost
    const node = this.node;
    this.persisting = false;
    if (rd.snapshot !== undefined) this.storage.applySnapshot(rd.snapshot);
    if (rd.entries.length > 0) {
      this.storage.append(rd.entries);
      this.host.checker.onPersist(this.id, rd.entries);
    }
    if (rd.hardState !== undefined) this.storage.setHardState(rd.hardState);
    if (rd.messagesAfterPersist.length > 0) this.host.send(this, rd.messagesAfterPersist);
    if (rd.snapshot !== undefined) this.kv.restore(rd.snapshot.data, rd.snapshot.metadata.index);
    for (const e of rd.committedEntries) this.applyEntry(e);
    for (const rs of rd.readStates) this.readsWaiting.set(decoder.decode(rs.context), rs.index);
    node.advance();
    this.host.checker.observeRole(this.id, node.raft);
    this.serveReads();
    this.maybeSnapshot(node);
    this.queueReady();
  }

  private applyEntry(e: Entry): void {
    this.host.checker.onApply(this.id, e);
    const cmd = this.kv.apply(e);
    if (cmd !== undefined) this.host.onPut(this, cmd);
    if (e.type === 'confChange') this.host.onConf(this, e);
  }

  private serveReads(): void {
    for (const [ctx, index] of this.readsWaiting) {
      if (this.kv.applied < index) continue;
      this.readsWaiting.delete(ctx);
      this.host.onRead(this, ctx);
    }
  }

  /** Take an application snapshot every so often and compact the log behind it. */
  private maybeSnapshot(node: RawNodeImpl): void {
    const applied = this.kv.applied;
    const snapIndex = this.storage.snapshot().metadata.index;
    if (applied - snapIndex < this.host.snapshotEvery || applied > this.storage.lastIndex()) return;
    this.storage.createSnapshot(applied, node.raft.tracker.conf, this.kv.encode());
    const compactTo = applied - this.host.keepAfterCompaction;
    if (compactTo >= this.storage.firstIndex()) this.storage.compact(LogIndex(compactTo));
  }

  /** Crash now. Returns whether a Ready's write was in flight (and is lost). */
  crash(): boolean {
    const lost = this.persisting;
    this.crashOnNextWrite = false;
    this.node = undefined;
    this.incarnation++;
    this.persisting = false;
    this.readsWaiting.clear();
    return lost;
  }

  restart(): void {
    if (this.node !== undefined) return;
    this.node = this.start();
    this.host.checker.observeRole(this.id, this.node.raft);
    this.queueReady();
  }
}
