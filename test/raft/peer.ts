/**
 * TestPeer: one member for tests, with MemoryStorage as its disk and an in-memory list as
 * its state machine. `handleReady` follows the Ready contract exactly as a driver must:
 * persist snapshot/entries/hard state, then release both message lists, then apply, then
 * advance.
 */

import { RawNodeImpl } from '../../src/raft/raw-node.js';
import { MemoryStorage } from '../../src/raft/storage/memory-storage.js';
import {
  type ConfState,
  type Entry,
  type Message,
  NodeId,
  type RaftConfig,
  type Ready,
} from '../../src/raft/types.js';

export interface PeerOptions extends Partial<Omit<RaftConfig, 'id' | 'storage'>> {}

export class TestPeer {
  readonly id: NodeId;
  readonly storage: MemoryStorage;
  node: RawNodeImpl;
  /** Every entry this member applied, in order (the state machine). */
  readonly applied: Entry[] = [];
  private readonly options: PeerOptions;

  constructor(id: number, storage: MemoryStorage, options: PeerOptions = {}) {
    this.id = NodeId(id);
    this.storage = storage;
    this.options = options;
    this.node = this.makeNode();
  }

  static bootstrap(id: number, conf: ConfState, options: PeerOptions = {}): TestPeer {
    return new TestPeer(id, MemoryStorage.bootstrap(conf), options);
  }

  private makeNode(): RawNodeImpl {
    const lastApplied = this.applied[this.applied.length - 1]?.index;
    return new RawNodeImpl({
      electionTick: 10,
      heartbeatTick: 1,
      random: () => 0,
      ...this.options,
      id: this.id,
      storage: this.storage,
      ...(lastApplied !== undefined ? { applied: lastApplied } : {}),
    });
  }

  get raft() {
    return this.node.raft;
  }

  /** Handle one Ready if there is one. Returns it with the messages to put on the wire. */
  handleReady(): { rd: Ready; out: Message[] } | undefined {
    if (!this.node.hasReady()) return undefined;
    const rd = this.node.ready();
    if (rd.snapshot !== undefined) this.storage.applySnapshot(rd.snapshot);
    this.storage.append(rd.entries);
    if (rd.hardState !== undefined) this.storage.setHardState(rd.hardState);
    if (rd.snapshot !== undefined) {
      // The state machine is replaced by the snapshot: forget entries it covers.
      const at = rd.snapshot.metadata.index;
      while (this.applied.length > 0 && this.applied[this.applied.length - 1]!.index > at) {
        this.applied.pop();
      }
    }
    for (const e of rd.committedEntries) this.applied.push(e);
    this.node.advance();
    return { rd, out: [...rd.messages, ...rd.messagesAfterPersist] };
  }

  /** Crash and restart: unpersisted state is lost; the state machine is kept (durable apply). */
  restart(): void {
    this.node = this.makeNode();
  }
}
