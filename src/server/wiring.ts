/**
 * The parts of a running member and how they connect: transport ↔ driver ↔ application ↔
 * store, the request paths, the leader's timers, presence, and the peer listeners. Built in
 * one place so member.ts reads as the MemberApi and a lifecycle, not as plumbing.
 *
 * Callbacks (`Hooks`) go back to the member for what it decides: leader changes, membership
 * changes, fatal errors.
 */
import type { Server } from 'node:http';
import { RaftDriver } from '../raft/driver/driver.js';
import { type DroppedMessage, RaftTransport } from '../raft/driver/transport.js';
import type { LeaderChange } from '../raft/driver/types.js';
import type { LevelRaftStorage } from '../raft/storage/level-storage.js';
import { type ConfChange, LogIndex, NONE, type NodeId, Role } from '../raft/types.js';
import { hashKeyspace } from '../store/hash.js';
import type { Store } from '../store/store.js';
import type { LeaseId } from '../store/types.js';
import { Cacher } from '../watchcache/cacher.js';
import { MemberApplication } from './apply.js';
import { AutoCompactor } from './compaction.js';
import { type MemberConfig, parseRetention, requestTimeoutMs } from './config.js';
import { parseMemberId } from './ids.js';
import { LeaseService } from './lease-service.js';
import { LeaseReaper } from './leases.js';
import type { Logger } from './logger.js';
import { type MembershipDeps, promoteStartedLearners } from './membership.js';
import { MemberMetrics } from './metrics.js';
import { createPeerServer } from './peer-http.js';
import { Presence } from './presence.js';
import type { MemberRegistry } from './registry.js';
import { RaftRequests } from './requests.js';
import type { MemberTls } from './tls.js';
import { untilDeadline } from './util.js';
import { ETCD_CLUSTER_VERSION, ETCD_VERSION } from './version.js';

export interface Tuning {
  /** How often the leader looks for expired leases. Default 500 ms. */
  leaseCheckMs?: number;
  /** Revision auto-compaction's check interval. Default 5 minutes, as etcd. */
  revisionCompactionCheckMs?: number;
}

export interface Hooks {
  onLeaderChange(c: LeaderChange): void;
  onConfChange(cc: ConfChange): void;
  onRemoved(): void;
  onFatal(e: Error): void;
  assertServing(): void;
  advertisedClientUrls(): string[];
  onPublished(): void;
}

export interface Base {
  config: MemberConfig;
  tuning: Tuning;
  logger: Logger;
  registry: MemberRegistry;
  storage: LevelRaftStorage;
  store: Store;
  /** The listeners' TLS, loaded at start (tls.ts); absent: plain HTTP. */
  tls: MemberTls;
}

export interface Wired {
  id: NodeId;
  timeoutMs: number;
  metrics: MemberMetrics;
  transport: RaftTransport;
  driver: RaftDriver;
  requests: RaftRequests;
  leases: LeaseService;
  reaper: LeaseReaper;
  compactor: AutoCompactor;
  presence: Presence;
  /** What membership changes need (membership.ts). */
  membership: MembershipDeps;
  /** The watch cache over the store (MemberApi.watchCache). */
  watchCache: Cacher;
  /** One per --listen-peer-urls entry, all serving the same transport. */
  peerServers: Server[];
  syncPeers(): void;
}

export function wire(b: Base, hooks: Hooks): Wired {
  const id = b.registry.self.id;
  const timeoutMs = requestTimeoutMs(b.config.electionMs);
  // The driver is created below; the closures only run once it exists.
  let driver: RaftDriver | undefined;
  const w = { id, timeoutMs } as Wired;
  w.metrics = new MemberMetrics(metricSources(b, () => w));
  w.transport = new RaftTransport({
    id,
    onMessage: (m) => driver?.receive(m),
    onUnreachable: (peer) => driver?.reportUnreachable(peer),
    onSnapshotStatus: (peer, s) => driver?.reportSnapshot(peer, s),
    clusterToken: b.registry.clusterId,
    // The applied membership, learners included: a member being added may talk once its
    // conf change is applied here; a removed one is dropped from then on.
    isMember: (peer) => b.registry.get(peer) !== undefined,
    onDrop: dropReporter(b.logger, w),
    ...(b.tls.peer !== undefined ? { tls: b.tls.peer.dial } : {}),
  });
  w.syncPeers = () => syncPeers(b.registry, w.transport, id);
  w.syncPeers();
  const retryMs = Math.min(50, b.config.heartbeatMs);
  driver = w.driver = createDriver(b, w, hooks);
  w.membership = {
    registry: b.registry,
    driver,
    token: b.registry.self.token,
    now: () => Date.now(),
    selfId: id,
    isConnected: (peer) => w.transport.isConnected(peer),
    strict: b.config.strictReconfigCheck,
    proposePeerUrls: (body) => w.requests.proposePeerUrls(body),
  };
  w.requests = new RaftRequests({
    driver,
    metrics: w.metrics,
    timeoutMs,
    retryMs,
    assertServing: hooks.assertServing,
  });
  w.leases = new LeaseService({
    store: b.store,
    driver,
    registry: b.registry,
    selfId: id,
    timeoutMs,
    metrics: w.metrics,
    ...(b.tls.peer !== undefined ? { peerTls: b.tls.peer.dial } : {}),
    waitLeader: (deadline) => w.requests.waitLeader(deadline),
  });
  wireTimers(b, w, hooks);
  w.watchCache = new Cacher(b.store, {
    registry: w.metrics.registry,
    // Writes first: while entries wait to be applied, fan-out turns are short.
    writesPending: () => {
      const s = w.driver.status();
      return s.applied < s.lastIndex;
    },
  });
  w.peerServers = b.config.listenPeerUrls.map((u) =>
    createPeerServer(
      w.transport,
      {
        cluster: () => b.registry.toRecord(),
        keepAlive: (lease: LeaseId) =>
          w.leases.isLeader() ? w.leases.leaderKeepAlive(lease) : undefined,
        timeToLive: (lease: LeaseId, keys: boolean) =>
          w.leases.isLeader() ? w.leases.leaderTimeToLive(lease, keys) : undefined,
        version: () => ({ etcdserver: ETCD_VERSION, etcdcluster: ETCD_CLUSTER_VERSION }),
        isMember: (from, cluster) => {
          const peer = parseMemberId(from);
          return (
            cluster === b.registry.clusterId &&
            peer !== undefined &&
            b.registry.get(peer) !== undefined
          );
        },
        hashKV: async (revision) => {
          // A follower may not have applied the asker's revision yet: give it a moment.
          await untilDeadline(Date.now() + 2000, 10, () => b.store.currentRevision >= revision);
          return hashKeyspace(b.store, revision);
        },
      },
      u.protocol === 'https:' ? b.tls.peer?.server : undefined,
      u.protocol === 'https:' ? b.config.peerCertAllowed : undefined,
    ),
  );
  return w;
}

function createDriver(b: Base, w: Wired, hooks: Hooks): RaftDriver {
  const app = new MemberApplication({
    store: b.store,
    registry: b.registry,
    metrics: w.metrics,
    logger: b.logger,
    listener: {
      onConfChange: hooks.onConfChange,
      onRegistryReplaced: () => w.syncPeers(),
      onPeerUrlsChanged: () => w.syncPeers(),
    },
  });
  const driver = new RaftDriver({
    id: w.id,
    storage: b.storage,
    transport: w.transport,
    app,
    appliedIndex: LogIndex(b.store.appliedIndex),
    heartbeatMs: b.config.heartbeatMs,
    electionMs: b.config.electionMs,
    requestTimeoutMs: w.timeoutMs,
    snapshotEntries: b.config.snapshotCount,
    // etcd keeps 5,000 entries below a snapshot; a small --snapshot-count keeps half of it.
    snapshotCatchUpEntries: Math.min(5000, Math.max(1, Math.floor(b.config.snapshotCount / 2))),
    raft: { preVote: true, checkQuorum: true },
  });
  driver.on('leaderChange', hooks.onLeaderChange);
  driver.on('error', hooks.onFatal);
  return driver;
}

function wireTimers(b: Base, w: Wired, hooks: Hooks): void {
  w.reaper = new LeaseReaper({
    store: b.store,
    logger: b.logger,
    intervalMs: b.tuning.leaseCheckMs,
    revoke: async (id) => void (await w.requests.propose({ op: 'leaseRevoke', id })),
  });
  w.compactor = new AutoCompactor({
    retention: parseRetention(b.config.autoCompactionMode, b.config.autoCompactionRetention),
    now: () => Date.now(),
    currentRevision: () => b.store.currentRevision,
    compactRevision: () => b.store.compactRevision,
    compact: async (revision) => void (await w.requests.propose({ op: 'compact', revision })),
    logger: b.logger,
    revisionCheckMs: b.tuning.revisionCompactionCheckMs,
  });
  w.presence = new Presence({
    ...(b.tls.peer !== undefined ? { peerTls: b.tls.peer.dial } : {}),
    selfId: w.id,
    name: b.config.name,
    registry: b.registry,
    logger: b.logger,
    electionMs: b.config.electionMs,
    hasLeader: () => w.driver.status().leader !== NONE,
    advertisedClientUrls: hooks.advertisedClientUrls,
    proposeAttributes: (body) => w.requests.proposeAttributes(body),
    onRemoved: hooks.onRemoved,
    onPublished: hooks.onPublished,
    isLeader: () => w.driver.status().role === Role.Leader,
    promoteStarted: () => promoteStartedLearners(w.membership),
  });
}

/** Makes the transport's peers match the registry (adds, URL changes, removals). */
function syncPeers(registry: MemberRegistry, transport: RaftTransport, self: NodeId): void {
  const wanted = new Map<NodeId, string>();
  for (const m of registry.list()) {
    const url = m.peerURLs[0];
    if (m.id !== self && url !== undefined) wanted.set(m.id, url);
  }
  for (const id of transport.peerIds()) if (!wanted.has(id)) transport.removePeer(id);
  for (const [id, url] of wanted) transport.setPeer(id, url);
}

/** How often at most a dropped peer message is logged; the lines between are counted. */
export const DROP_LOG_INTERVAL_MS = 10_000;

/**
 * Counts every message the transport dropped from a non-member, and logs who tried: the
 * first drop at once, then at most one line per interval carrying how many were not logged.
 */
function dropReporter(logger: Logger, w: Wired): (d: DroppedMessage) => void {
  let lastLog = Number.NEGATIVE_INFINITY;
  let unlogged = 0;
  return (d) => {
    w.metrics.peerDropped.inc({ reason: 'not_member' });
    const now = Date.now();
    if (now - lastLog < DROP_LOG_INTERVAL_MS) return void unlogged++;
    lastLog = now;
    logger.warn(
      { remote: d.remote, claimedId: String(d.claimed), type: d.type, reason: d.reason, unlogged },
      'dropped a peer message from a non-member',
    );
    unlogged = 0;
  };
}

function metricSources(b: Base, w: () => Wired) {
  return {
    hasLeader: () => w().driver.status().leader !== NONE,
    isLeader: () => w().leases.isLeader(),
    keys: () => b.store.keyCount,
    revision: () => b.store.currentRevision,
    compactRevision: () => b.store.compactRevision,
    leases: () => b.store.lessor.size,
    pendingProposals: () => w().requests.pending,
    appliedIndex: () => w().driver.status().applied,
    term: () => w().driver.status().term,
  };
}
