/**
 * The Raft driver: what a member (src/server) needs to run the core for real.
 *
 * ```ts
 * const storage = await LevelRaftStorage.open(db, { bootstrap: { voters, learners: [] } });
 * let driver: RaftDriver;
 * const transport = new RaftTransport({
 *   id, peers, onMessage: (m) => driver.receive(m),
 *   onUnreachable: (p) => driver.reportUnreachable(p),
 *   onSnapshotStatus: (p, s) => driver.reportSnapshot(p, s),
 * });
 * transport.attach(peerHttpServer); // or: await transport.listen(port)
 * driver = new RaftDriver({ id, storage, transport, app, appliedIndex });
 * await driver.start();
 * const { index, outcome } = await driver.propose(command); // applied here: what apply answered
 * await driver.readIndex(); // then read local state linearizably
 * ```
 */

export { LevelRaftStorage } from '../storage/level-storage.js';
export type { Clock, TimerHandle } from './clock.js';
export { systemClock } from './clock.js';
export { RaftDriver } from './driver.js';
export type { PeerLimits, PeerStats } from './peer.js';
export type { Applied, Committed } from './pending.js';
export type { DroppedMessage, RaftTransportOptions, TransportStats } from './transport.js';
export { DEFAULT_PEER_LIMITS, RaftTransport } from './transport.js';
export type {
  AppliedEntry,
  ApplyOutcomes,
  DriverStatus,
  DriverTransport,
  DurableStorage,
  LeaderChange,
  RaftApplication,
  RaftDriverOptions,
} from './types.js';
