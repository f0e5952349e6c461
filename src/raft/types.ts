/**
 * The vocabulary of etcetera's Raft: branded numbers, log entries, messages, the `Ready`
 * bundle and its contract, the configuration, and the narrow storage interface the core
 * reads from.
 *
 * The core (see {@link RawNode}) is a pure, synchronous state machine. Everything that
 * touches time, disk or the network lives in a driver around it. The driver's loop is:
 *
 * ```
 *   on timer:            node.tick()
 *   on peer message:     node.step(message)
 *   on client request:   node.propose(data) / node.readIndex(ctx) / node.proposeConfChange(cc)
 *   whenever node.hasReady():
 *     const rd = node.ready()
 *     1. send rd.messages                 (may go at once, before anything is written)
 *     2. persist rd.snapshot, rd.entries, rd.hardState in ONE write (fsync when rd.mustSync)
 *     3. send rd.messagesAfterPersist     (only now: they promise that step 2 is durable)
 *     4. apply rd.snapshot (if any), then rd.committedEntries in order; answer rd.readStates
 *     5. node.advance()
 * ```
 *
 * `tick`, `step` and the proposal methods may be called between `ready()` and `advance()`
 * (for example while the write of step 2 is in flight); their effects appear in the next
 * `Ready`. `ready()` must not be called again before `advance()`.
 */

// ---------------------------------------------------------------------------------------
// Branded numbers
// ---------------------------------------------------------------------------------------

declare const termBrand: unique symbol;
/** A Raft term. 0 = before any election; terms only grow. */
export type Term = number & { readonly [termBrand]: 'Term' };
export const Term = (n: number): Term => n as Term;

declare const logIndexBrand: unique symbol;
/** A position in the Raft log. The first real entry is 1; 0 = "before the log". */
export type LogIndex = number & { readonly [logIndexBrand]: 'LogIndex' };
export const LogIndex = (n: number): LogIndex => n as LogIndex;

declare const nodeIdBrand: unique symbol;
/** A member's id in the Raft group: a positive safe integer. {@link NONE} (0) = nobody. */
export type NodeId = number & { readonly [nodeIdBrand]: 'NodeId' };
export const NodeId = (n: number): NodeId => n as NodeId;
/** "No member": no vote cast, no leader known. */
export const NONE = NodeId(0);

declare const byteSizeBrand: unique symbol;
/**
 * A size in bytes of entries as they travel in messages (payload plus a fixed per-entry
 * overhead, see `entrySize`). Used for message and in-flight budgets.
 */
export type ByteSize = number & { readonly [byteSizeBrand]: 'ByteSize' };
export const ByteSize = (n: number): ByteSize => n as ByteSize;

declare const payloadSizeBrand: unique symbol;
/**
 * A size in bytes of entry payloads only (`data.length`). Used for the limit on
 * uncommitted proposals, where the fixed overhead of empty entries must not count.
 * Kept apart from {@link ByteSize} so the two cannot be mixed by accident.
 */
export type PayloadSize = number & { readonly [payloadSizeBrand]: 'PayloadSize' };
export const PayloadSize = (n: number): PayloadSize => n as PayloadSize;

// ---------------------------------------------------------------------------------------
// Log entries, membership, snapshots, state
// ---------------------------------------------------------------------------------------

export const EntryType = { Normal: 'normal', ConfChange: 'confChange' } as const;
export type EntryType = (typeof EntryType)[keyof typeof EntryType];

/**
 * One log entry. `data` is opaque to Raft: the application's command for a normal entry
 * (an empty normal entry is a new leader's no-op and must be applied as nothing), or an
 * encoded {@link ConfChange} (see `encodeConfChange`/`decodeConfChange`) for a confChange
 * entry. Entries handed out by the core are shared, never mutate them.
 */
export interface Entry {
  readonly term: Term;
  readonly index: LogIndex;
  readonly type: EntryType;
  readonly data: Uint8Array;
}

/** The members of the group. Voters count for elections and commit; learners only receive. */
export interface ConfState {
  readonly voters: readonly NodeId[];
  readonly learners: readonly NodeId[];
}

export const ConfChangeType = {
  /** Add a new voter, or promote an existing learner to voter. */
  AddVoter: 'addVoter',
  /** Add a new learner (a voter cannot be demoted this way). */
  AddLearner: 'addLearner',
  /** Remove a voter or learner. */
  RemoveNode: 'removeNode',
} as const;
export type ConfChangeType = (typeof ConfChangeType)[keyof typeof ConfChangeType];

/**
 * One membership change. Changes are single-member and one at a time: the leader refuses a
 * new one while an earlier one is not yet applied. A change takes effect on each member when
 * its entry is handed out in `committedEntries` and the `Ready` is advanced. A change that
 * is invalid for the configuration at that point (remove an absent member, add a voter as a
 * learner) is applied as nothing, identically on every member.
 * `context` is opaque to Raft (for example the new member's peer URLs).
 */
export interface ConfChange {
  readonly type: ConfChangeType;
  readonly nodeId: NodeId;
  readonly context?: Uint8Array;
}

export interface SnapshotMetadata {
  /** The last log index the snapshot covers. */
  readonly index: LogIndex;
  /** The term of the entry at `index`. */
  readonly term: Term;
  /** The membership as of `index`. */
  readonly confState: ConfState;
}

/** A point-in-time image of the application's state. `data` is opaque to Raft. */
export interface Snapshot {
  readonly metadata: SnapshotMetadata;
  readonly data: Uint8Array;
}

/** What must survive a crash, besides the log. */
export interface HardState {
  readonly term: Term;
  /** Whom this member voted for in `term`, or NONE. */
  readonly vote: NodeId;
  /** The highest index known committed (persisting it is an optimisation, not a rule). */
  readonly commit: LogIndex;
}

export const Role = {
  Follower: 'follower',
  PreCandidate: 'preCandidate',
  Candidate: 'candidate',
  Leader: 'leader',
} as const;
export type Role = (typeof Role)[keyof typeof Role];

/** Volatile state the driver may want to show or act on; never persisted. */
export interface SoftState {
  /** The leader this member currently follows (itself when leader), or NONE. */
  readonly leader: NodeId;
  readonly role: Role;
}

/**
 * The answer to `readIndex(context)`: once this member has applied up to `index`, a read
 * of its state machine is linearizable with respect to the moment of the request.
 */
export interface ReadState {
  readonly index: LogIndex;
  readonly context: Uint8Array;
}

// ---------------------------------------------------------------------------------------
// Messages (the wire protocol between members)
// ---------------------------------------------------------------------------------------

/** Fields every message carries. */
interface MessageBase {
  readonly from: NodeId;
  readonly to: NodeId;
  /**
   * The sender's term. `prop` and `readIndex` (requests forwarded by a follower to its
   * leader) carry 0: they are treated as local input and never move terms.
   */
  readonly term: Term;
}

/** Leader → follower: append `entries` after (index, logTerm); learn `commit`. */
export interface MsgApp extends MessageBase {
  readonly type: 'app';
  /** Index of the entry just before `entries`. */
  readonly index: LogIndex;
  /** Term of the entry at `index`. */
  readonly logTerm: Term;
  readonly entries: readonly Entry[];
  readonly commit: LogIndex;
}

/**
 * Follower → leader: the answer to `app` or `snap`. Accepted: `index` is the last index now
 * known to match. Rejected: `index` is the probed `app.index`, and (`rejectHint`, `logTerm`)
 * is a hint of where the logs may match, so the leader can skip a whole term at a time.
 */
export interface MsgAppResp extends MessageBase {
  readonly type: 'appResp';
  readonly index: LogIndex;
  readonly reject: boolean;
  readonly rejectHint: LogIndex;
  readonly logTerm: Term;
}

/** Candidate → voters. `pre`: a pre-vote, which changes nobody's term or vote. */
export interface MsgVote extends MessageBase {
  readonly type: 'vote' | 'preVote';
  /** The candidate's last log index and its term (the "up to date" check). */
  readonly index: LogIndex;
  readonly logTerm: Term;
  /** Set when campaigning on a leader's `timeoutNow`: voters ignore their leader lease. */
  readonly transfer: boolean;
}

export interface MsgVoteResp extends MessageBase {
  readonly type: 'voteResp' | 'preVoteResp';
  readonly reject: boolean;
}

/** Leader → follower: "I am alive". `context` non-empty when confirming a ReadIndex. */
export interface MsgHeartbeat extends MessageBase {
  readonly type: 'heartbeat';
  /** min(follower's match, leader's commit): never past what the follower has. */
  readonly commit: LogIndex;
  readonly context: Uint8Array;
}

export interface MsgHeartbeatResp extends MessageBase {
  readonly type: 'heartbeatResp';
  readonly context: Uint8Array;
}

/** Leader → follower: install this snapshot (the follower needs compacted entries). */
export interface MsgSnap extends MessageBase {
  readonly type: 'snap';
  readonly snapshot: Snapshot;
}

/** Leader → transferee: campaign at once (leader transfer). */
export interface MsgTimeoutNow extends MessageBase {
  readonly type: 'timeoutNow';
}

/** Follower → leader: a forwarded `transferLeader(transferee)`. */
export interface MsgTransferLeader extends MessageBase {
  readonly type: 'transferLeader';
  readonly transferee: NodeId;
}

/** Follower → leader: forwarded proposals (term 0). */
export interface MsgProp extends MessageBase {
  readonly type: 'prop';
  readonly entries: readonly Entry[];
}

/** Follower → leader: a forwarded ReadIndex request (term 0). */
export interface MsgReadIndex extends MessageBase {
  readonly type: 'readIndex';
  readonly context: Uint8Array;
}

/** Leader → follower: the read index for a forwarded request. */
export interface MsgReadIndexResp extends MessageBase {
  readonly type: 'readIndexResp';
  readonly index: LogIndex;
  readonly context: Uint8Array;
}

/** Every message members exchange, discriminated on `type`. */
export type Message =
  | MsgApp
  | MsgAppResp
  | MsgVote
  | MsgVoteResp
  | MsgHeartbeat
  | MsgHeartbeatResp
  | MsgSnap
  | MsgTimeoutNow
  | MsgTransferLeader
  | MsgProp
  | MsgReadIndex
  | MsgReadIndexResp;

export type MessageType = Message['type'];

// ---------------------------------------------------------------------------------------
// Ready: what the core hands to its driver
// ---------------------------------------------------------------------------------------

/**
 * One batch of work for the driver. Handle it in the order the fields are listed, then call
 * `advance()`. The core never touches a Ready's arrays again, so the driver may keep them;
 * they are read-only (empty ones are shared), and the entries and snapshots inside are
 * shared with the core: never mutate them.
 */
export interface Ready {
  /**
   * Present when leader or role changed since the last `Ready`. Informational: never
   * persisted. A driver uses it to route client requests to the leader.
   */
  readonly softState?: SoftState;

  /**
   * Present when term, vote or commit changed. Persist it in the same atomic write as
   * `entries` and `snapshot`, before sending `messagesAfterPersist`.
   */
  readonly hardState?: HardState;

  /**
   * Entries to append to stable storage. `entries[0].index` may be at or below the stored
   * last index: then the stored entries from that index on are replaced (a new leader
   * overrode an uncommitted suffix). Persist before sending `messagesAfterPersist`.
   */
  readonly entries: readonly Entry[];

  /**
   * A snapshot received from the leader. Persist it (storage then starts after
   * `metadata.index`, dropping older entries) in the same write as `entries`/`hardState`,
   * and install `data` into the state machine before applying any later entry.
   */
  readonly snapshot?: Snapshot;

  /**
   * Messages that may leave at once, before (or while) this Ready is persisted: the
   * leader's appends and heartbeats, snapshot sends, read-index traffic. Deliver them
   * best-effort; Raft tolerates loss, delay, duplication and reordering.
   */
  readonly messages: readonly Message[];

  /**
   * Messages that may only leave AFTER `hardState`, `entries` and `snapshot` of this Ready
   * are durable: vote requests (the candidate's own vote), vote grants, and append acks.
   * Sending them earlier breaks election safety or loses committed entries on a crash.
   */
  readonly messagesAfterPersist: readonly Message[];

  /**
   * Committed entries to apply to the state machine, in order, after the `snapshot` (if
   * any). They are always already in stable storage (from an earlier Ready). Conf-change
   * entries take effect inside Raft on `advance()`; the application decodes them with
   * `decodeConfChange` if it tracks membership itself.
   */
  readonly committedEntries: readonly Entry[];

  /** Answers to `readIndex` calls: serve each read once `index` is applied. */
  readonly readStates: readonly ReadState[];

  /**
   * Present when the membership changed (a conf change took effect on the last `advance`,
   * or a snapshot was installed): the driver updates its peer set for transport.
   */
  readonly confState?: ConfState;

  /**
   * True when the write of `hardState`/`entries`/`snapshot` must be fsynced before
   * `messagesAfterPersist` go out: a new term or vote, or new entries. A commit-only change
   * needs no fsync (a lost commit index is relearned from the leader).
   */
  readonly mustSync: boolean;
}

// ---------------------------------------------------------------------------------------
// Storage: what the core reads
// ---------------------------------------------------------------------------------------

/**
 * The stable log and state, as the core sees them. Synchronous on purpose: the core never
 * waits. A durable implementation keeps in memory what the core may read (at least the
 * uncompacted log tail and the latest snapshot's metadata) and writes through to disk when
 * the driver persists a `Ready`.
 *
 * The driver, not the core, writes to storage: append `Ready.entries`, set `Ready.hardState`,
 * apply `Ready.snapshot`, and compact after taking application snapshots.
 *
 * Errors are {@link EtceteraError}s with these codes:
 *   - `ERR_RAFT_COMPACTED`: the index is at or below the snapshot (compacted away).
 *   - `ERR_RAFT_UNAVAILABLE`: the index is past the last stored entry.
 *   - `ERR_RAFT_SNAPSHOT_TEMPORARILY_UNAVAILABLE`: `snapshot()` is not ready yet; the core
 *     retries later.
 */
export interface RaftStorage {
  /** The persisted hard state and the membership of the latest snapshot/bootstrap. */
  initialState(): { hardState: HardState; confState: ConfState };
  /**
   * Entries in the half-open range [lo, hi), cut after the total `entrySize` first exceeds
   * `maxBytes` (always at least one entry). Requires firstIndex() <= lo <= hi <=
   * lastIndex() + 1. The returned array is the caller's; its entries must not be mutated.
   */
  entries(lo: LogIndex, hi: LogIndex, maxBytes?: ByteSize): Entry[];
  /** The term of entry i, for firstIndex() - 1 <= i <= lastIndex() (i = snapshot index ok). */
  term(i: LogIndex): Term;
  /** The first index still stored as an entry (snapshot index + 1). */
  firstIndex(): LogIndex;
  /** The last stored index (the snapshot index when no entry follows it). */
  lastIndex(): LogIndex;
  /** The most recent snapshot (data and metadata). */
  snapshot(): Snapshot;
}

// ---------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------

/** Options of one Raft member. Times are in ticks: the driver decides what a tick lasts. */
export interface RaftConfig {
  /** This member's id; must be non-zero. */
  readonly id: NodeId;
  readonly storage: RaftStorage;
  /**
   * Base election timeout in ticks (the member uses 10 ticks of 100 ms). A follower that hears no
   * leader for a random number of ticks in [electionTick, 2 * electionTick) campaigns.
   * Must be greater than heartbeatTick.
   */
  readonly electionTick: number;
  /** The leader sends heartbeats every heartbeatTick ticks (the member uses 1). */
  readonly heartbeatTick: number;
  /**
   * Source of randomness for election timeouts, returning [0, 1). Injected so tests and the
   * simulator are deterministic; a driver passes Math.random or a seeded generator.
   */
  readonly random: () => number;
  /**
   * The last index the application has applied (on restart). Committed entries up to it are
   * not handed out again. Default: 0 (or the snapshot index, whichever is larger).
   */
  readonly applied?: LogIndex;
  /** Cap on the entries of one `app` message. Default 1 MiB. Always at least one entry. */
  readonly maxSizePerMsg?: ByteSize;
  /** Cap on un-acked `app` messages to one follower in pipelined replication. Default 256. */
  readonly maxInflightMsgs?: number;
  /** Cap on un-acked bytes to one follower. 0 = unlimited. Default 0. */
  readonly maxInflightBytes?: ByteSize;
  /** Leader refuses proposals once this many uncommitted payload bytes are in its log. 0 = unlimited. */
  readonly maxUncommittedEntriesSize?: PayloadSize;
  /** Cap on the bytes of `committedEntries` in one Ready (at least one entry). Default 64 MiB. */
  readonly maxCommittedSizePerReady?: ByteSize;
  /** Pre-vote phase before a real election (prevents term inflation). Default true. */
  readonly preVote?: boolean;
  /**
   * A leader that has not heard from a quorum for an election timeout steps down, and a
   * follower that heard from a leader within the timeout ignores vote requests. Default true.
   */
  readonly checkQuorum?: boolean;
  /** Followers refuse proposals instead of forwarding them to the leader. Default false. */
  readonly disableProposalForwarding?: boolean;
}

// ---------------------------------------------------------------------------------------
// The node
// ---------------------------------------------------------------------------------------

/** Outcome of sending a snapshot, reported by the transport. */
export type SnapshotStatus = 'finish' | 'failure';

/** How the leader is replicating to one follower. */
export const ProgressState = {
  /** Unknown match: one `app` at a time until the follower acks. */
  Probe: 'probe',
  /** Known match: pipelined `app` messages within the in-flight caps. */
  Replicate: 'replicate',
  /** A snapshot is in flight; nothing else is sent until it is reported. */
  Snapshot: 'snapshot',
} as const;
export type ProgressState = (typeof ProgressState)[keyof typeof ProgressState];

export interface ProgressStatus {
  readonly match: LogIndex;
  readonly next: LogIndex;
  readonly state: ProgressState;
  readonly learner: boolean;
  readonly recentActive: boolean;
}

export interface Status {
  readonly id: NodeId;
  readonly hardState: HardState;
  readonly softState: SoftState;
  readonly applied: LogIndex;
  readonly lastIndex: LogIndex;
  readonly confState: ConfState;
  /** Leader only: per-member replication progress (itself included). */
  readonly progress?: ReadonlyMap<NodeId, ProgressStatus>;
  /** Leader only: the member a transfer is under way to, or NONE. */
  readonly leadTransferee: NodeId;
}

/**
 * One Raft member's core. Create with `createRawNode(config)` (src/raft/index.ts).
 * Every method is synchronous and does no I/O; results come out through `ready()`.
 * Methods that start something throw an EtceteraError when they cannot:
 *   - `ERR_RAFT_PROPOSAL_DROPPED`: no leader known, a leader transfer is under way, this
 *     member was removed, proposal forwarding is disabled, or the uncommitted-size cap hit.
 *   - `ERR_RAFT_CONF_CHANGE_PENDING`: (leader) an earlier conf change is not applied yet.
 *   - `ERR_RAFT_INVALID_CONF_CHANGE`: the change makes no sense for the current members.
 * A call that does not throw is NOT a promise of commit: proposals may still be lost (a
 * leader change); the application matches applied entries to its requests (by an id in
 * `data`) and times out the rest.
 */
export interface RawNode {
  /** Advance logical time by one tick (election and heartbeat timers). */
  tick(): void;
  /**
   * Feed a message received from a peer. Messages for another member, from unknown
   * members, or with stale terms are ignored as Raft requires; never throws for bad input
   * from the network.
   */
  step(message: Message): void;
  /** Start an election now (pre-vote first when enabled). Ignored by learners and leaders. */
  campaign(): void;
  /** Propose an application command (forwarded to the leader from a follower). */
  propose(data: Uint8Array): void;
  /** Propose a membership change (forwarded to the leader from a follower). */
  proposeConfChange(change: ConfChange): void;
  /**
   * Ask for a linearizable read point. The answer arrives as a `ReadState` carrying the same
   * `context` in a later Ready (after a heartbeat round confirms leadership). Contexts should
   * be unique per request. Lost silently on a leader change: time out and retry.
   */
  readIndex(context: Uint8Array): void;
  /** Ask the leader to hand leadership to `to` (forwarded from a follower). */
  transferLeader(to: NodeId): void;
  /** The transport could not reach `id`: the leader falls back to probing it. */
  reportUnreachable(id: NodeId): void;
  /** The transport finished (or failed) sending a snapshot to `id`. */
  reportSnapshot(id: NodeId, status: SnapshotStatus): void;
  /** Whether `ready()` would return anything to do. */
  hasReady(): boolean;
  /** Collect the pending work. Must be followed by `advance()` before the next `ready()`. */
  ready(): Ready;
  /**
   * Acknowledge the last `Ready`: its entries/hard state/snapshot are durable, its messages
   * handed to the transport, and its committed entries applied (or queued for applying in
   * order). Conf-change entries among them take effect now.
   */
  advance(): void;
  /** A snapshot of the member's state, for tests, metrics and debugging. */
  status(): Status;
}
