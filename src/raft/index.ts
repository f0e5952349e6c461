/**
 * etcetera's Raft: a pure core (`createRawNode`) driven through the `Ready`/`advance`
 * contract documented on {@link Ready} in ./types.ts, plus `MemoryStorage`.
 *
 * Usage, in short (see the module comment of ./types.ts for the full loop):
 *
 * ```ts
 * const storage = MemoryStorage.bootstrap({ voters: [NodeId(1), NodeId(2), NodeId(3)], learners: [] });
 * const node = createRawNode({ id: NodeId(1), storage, electionTick: 10, heartbeatTick: 1, random });
 * // timer: node.tick(); network: node.step(msg); then while (node.hasReady()) handle(node.ready()), node.advance();
 * ```
 */

export { applyConfChange, decodeConfChange, encodeConfChange } from './confchange.js';
export { createRawNode } from './raw-node.js';
export { MemoryStorage } from './storage/memory-storage.js';
export type {
  ConfChange,
  ConfState,
  Entry,
  HardState,
  Message,
  MessageType,
  MsgApp,
  MsgAppResp,
  MsgHeartbeat,
  MsgHeartbeatResp,
  MsgProp,
  MsgReadIndex,
  MsgReadIndexResp,
  MsgSnap,
  MsgTimeoutNow,
  MsgTransferLeader,
  MsgVote,
  MsgVoteResp,
  ProgressStatus,
  RaftConfig,
  RaftStorage,
  RawNode,
  ReadState,
  Ready,
  Snapshot,
  SnapshotMetadata,
  SnapshotStatus,
  SoftState,
  Status,
} from './types.js';
export {
  ByteSize,
  ConfChangeType,
  EntryType,
  LogIndex,
  NONE,
  NodeId,
  PayloadSize,
  ProgressState,
  Role,
  Term,
} from './types.js';
export { entrySize } from './util.js';
