/**
 * The driver's contracts with the member that embeds it: the application it applies
 * entries to, the durable storage it persists through, the transport it sends with, and
 * its options.
 */
import type { LevelRaftStorage } from '../storage/level-storage.js';
import type {
  ConfChange,
  EntryType,
  LogIndex,
  Message,
  NodeId,
  RaftConfig,
  RawNode,
  Role,
  Snapshot,
  Term,
} from '../types.js';
import type { Clock } from './clock.js';

/** What `RaftApplication.apply` answers: one outcome per entry, or nothing. */
// biome-ignore lint/suspicious/noConfusingVoidType: an application with no outcomes returns nothing.
export type ApplyOutcomes = readonly unknown[] | undefined | void;

/** One committed entry as the application sees it (envelope removed). */
export interface AppliedEntry {
  readonly index: LogIndex;
  readonly term: Term;
  readonly type: EntryType;
  /**
   * The command exactly as proposed. Empty for a new leader's no-op entry (apply nothing,
   * but count the index as applied). For a confChange entry: the change's context.
   * A read-only view that may share memory with the network frame it arrived in: copy
   * the bytes if the application keeps them after apply (decoding them is enough).
   */
  readonly data: Uint8Array;
  /** For a confChange entry: the change (already applied inside Raft on its own). */
  readonly confChange?: ConfChange;
}

/**
 * The replicated state machine. The driver calls these one at a time, never concurrently,
 * from its loop, in log order.
 */
export interface RaftApplication {
  /**
   * Apply committed entries, in order. Resolve once they are applied; a member that
   * persists its state should write the last applied index in the same atomic batch and
   * pass it back as `appliedIndex` on restart. Throwing is fatal: the driver stops.
   *
   * Resolve with one outcome per entry, in the order given (or nothing): the outcome of an
   * entry this driver proposed is what its `propose()` resolves with, so the proposer gets
   * the application's answer with no bookkeeping of its own. Outcomes of other members'
   * entries are dropped.
   */
  apply(entries: readonly AppliedEntry[]): Promise<ApplyOutcomes> | ApplyOutcomes;
  /**
   * The application's state as of the last applied entry, for log compaction. Without it
   * the driver never compacts the log.
   */
  snapshot?(): Promise<Uint8Array> | Uint8Array;
  /** Replace the whole state with a snapshot from the leader (or from disk at start). */
  restore?(snapshot: Snapshot): Promise<void> | void;
}

/** What the driver needs of storage: the core's reads plus a group-committing write. */
export type DurableStorage = Pick<
  LevelRaftStorage,
  | 'initialState'
  | 'entries'
  | 'term'
  | 'firstIndex'
  | 'lastIndex'
  | 'snapshot'
  | 'persist'
  | 'createSnapshot'
  | 'compact'
  | 'flush'
>;

/** What the driver needs of a transport (RaftTransport, or a fake in tests). */
export interface DriverTransport {
  /** Queue messages; must never block or throw for an unknown peer. */
  send(messages: readonly Message[]): void;
  /** A member was added (its peer URL from the conf change context). */
  setPeer?(id: NodeId, url: string): void;
  removePeer?(id: NodeId): void;
}

export interface RaftDriverOptions {
  readonly id: NodeId;
  readonly storage: DurableStorage;
  readonly transport: DriverTransport;
  readonly app: RaftApplication;
  /** The last index the application has durably applied (on restart). Default 0. */
  readonly appliedIndex?: LogIndex;
  /** Heartbeat interval, which is also the tick. Default 100 ms. */
  readonly heartbeatMs?: number;
  /** Base election timeout; the core randomises in [1x, 2x). Default 1000 ms. */
  readonly electionMs?: number;
  /** How long a proposal, read barrier or leader transfer may wait. Default 7000 ms. */
  readonly requestTimeoutMs?: number;
  /** Take an application snapshot every this many applied entries. Default 10,000. */
  readonly snapshotEntries?: number;
  /** Entries kept below a snapshot so slow followers catch up without one. Default 5,000. */
  readonly snapshotCatchUpEntries?: number;
  readonly clock?: Clock;
  /** Randomness for election timeouts. Default Math.random. */
  readonly random?: () => number;
  /** Further core settings (flow control, pre-vote, check-quorum). */
  readonly raft?: Partial<
    Omit<RaftConfig, 'id' | 'storage' | 'electionTick' | 'heartbeatTick' | 'random' | 'applied'>
  >;
  /** The core's factory (tests may wrap it). Default: createRawNode of src/raft. */
  readonly createRawNode?: (config: RaftConfig) => RawNode;
}

export interface DriverStatus {
  readonly id: NodeId;
  readonly leader: NodeId;
  readonly role: Role;
  readonly term: Term;
  readonly commit: LogIndex;
  readonly applied: LogIndex;
  readonly lastIndex: LogIndex;
  readonly snapshotIndex: LogIndex;
  readonly stopped: boolean;
}

export interface LeaderChange {
  readonly leader: NodeId;
  readonly term: Term;
  readonly role: Role;
}
