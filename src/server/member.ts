/**
 * One member: its LevelDB (Raft log, store and registry on sublevels of one database), the
 * Raft driver and peer transport, the apply loop into the store, the leader's timers (lease
 * expiry, auto-compaction), and the client and peer listeners. It implements MemberApi, what
 * the HTTP faces ask of it.
 *
 * Request paths:
 *   write   check → propose through Raft (a follower's core forwards to the leader) → the
 *           outcome is handed over when the entry is applied HERE, so the answer reflects
 *           this member's state. No leader yet: wait for one (up to the request timeout).
 *   read    linearizable: ReadIndex barrier (resolves once this member applied the read
 *           index), then a local read; serializable: local read at once.
 *   leases  keepalive and time-to-live are answered by the leader's lessor (forwarded over
 *           the peer listener); grant and revoke are writes.
 *
 * Lifecycle: `Member.start` opens everything or closes what it opened and throws; `stop`
 * (SIGTERM) hands leadership over if it can, then closes listeners, Raft and the database.
 * A SIGKILL loses nothing acknowledged: Raft entries and the store's applied state are
 * fsynced before any answer.
 */
import { EventEmitter } from 'node:events';
import { mkdir } from 'node:fs/promises';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { Level } from 'level';
import { EtceteraError, isEtceteraError } from '../errors.js';
import { RaftDriver } from '../raft/driver/driver.js';
import { RaftTransport } from '../raft/driver/transport.js';
import type { LeaderChange } from '../raft/driver/types.js';
import { LevelRaftStorage, type RaftDb } from '../raft/level-storage.js';
import {
  type ConfChange,
  ConfChangeType,
  LogIndex,
  NONE,
  type NodeId,
  Role,
} from '../raft/types.js';
import { encodeCommand } from '../store/codec.js';
import { type ApplyOutcome, Store } from '../store/store.js';
import type { Command, CommandResult, LeaseId, RangeRequest, RangeResult } from '../store/types.js';
import { checkCommand } from '../store/validate.js';
import { MemberApplication } from './apply.js';
import { establishIdentity } from './bootstrap.js';
import { ClientListeners, loadClientFace } from './client-http.js';
import { AutoCompactor } from './compaction.js';
import {
  type MemberConfig,
  minLeaseTtlSeconds,
  parseRetention,
  requestTimeoutMs,
  urlString,
} from './config.js';
import { EntryKind, encodeEntry, RequestIds, Waiters } from './entry.js';
import { parseMemberId } from './ids.js';
import { LeaseReaper, localKeepAlive, localTimeToLive, newLeaseId } from './leases.js';
import { createLogger, type Logger } from './logger.js';
import { addMember, type MembershipDeps, promoteMember, removeMember } from './membership.js';
import { MemberMetrics } from './metrics.js';
import { closeServer, createPeerServer, forwardLease, listen } from './peer-http.js';
import type { MemberRegistry } from './registry.js';
import type { MemberApi, MemberInfo, MemberStatus, ReadOptions, ResponseHeader } from './types.js';
import { dataSize, sleep, untilDeadline } from './util.js';

/** The etcd version this member answers as (GET /version, status). */
export const ETCD_VERSION = '3.4.23';

export interface MemberOptions {
  /** A logger to use instead of pino on stdout at --log-level. */
  logger?: Logger;
  /** How often the leader looks for expired leases. Default 500 ms. */
  leaseCheckMs?: number;
  /** Revision auto-compaction's check interval. Default 5 minutes, as etcd. */
  revisionCompactionCheckMs?: number;
}

type Events = { removed: []; error: [Error] };

interface Parts {
  config: MemberConfig;
  options: MemberOptions;
  logger: Logger;
  db: RaftDb;
  registry: MemberRegistry;
  storage: LevelRaftStorage;
  store: Store;
}

export class Member extends EventEmitter<Events> implements MemberApi {
  readonly config: MemberConfig;
  readonly logger: Logger;
  readonly id: NodeId;
  readonly store: Store;
  readonly registry: MemberRegistry;
  readonly driver: RaftDriver;
  readonly maxRequestBytes: number;
  private readonly db: RaftDb;
  private readonly storage: LevelRaftStorage;
  private readonly transport: RaftTransport;
  private readonly peerServers: Server[];
  private readonly metricsSet: MemberMetrics;
  private readonly waiters = new Waiters<ApplyOutcome>();
  private readonly requestIds = new RequestIds();
  private readonly reaper: LeaseReaper;
  private readonly compactor: AutoCompactor;
  private readonly timeoutMs: number;
  private clients: ClientListeners | undefined;
  private boundPeerUrls: URL[] = [];
  private publishTimer: NodeJS.Timeout | undefined;
  private published = false;
  private removed = false;
  private failure: Error | undefined;
  private stopping: Promise<void> | undefined;

  /** Opens the data dir, joins or bootstraps the cluster, and starts serving. */
  static async start(config: MemberConfig, options: MemberOptions = {}): Promise<Member> {
    const logger = options.logger ?? createLogger({ level: config.logLevel, name: config.name });
    await mkdir(config.dataDir, { recursive: true });
    const db: RaftDb = new Level(join(config.dataDir, 'db'));
    await db.open();
    let member: Member | undefined;
    try {
      const identity = await establishIdentity(db, config, logger);
      const storage = await LevelRaftStorage.open(db, { bootstrap: identity.bootstrap });
      const store = await Store.open({
        db,
        minLeaseTtl: minLeaseTtlSeconds(config.electionMs),
        maxRequestBytes: config.maxRequestBytes,
      });
      const parts = { config, options, logger, db, registry: identity.registry, storage, store };
      member = new Member(parts);
      await member.open(identity.how);
      return member;
    } catch (e) {
      if (member !== undefined) await member.stop().catch(() => undefined);
      else await db.close().catch(() => undefined);
      throw e;
    }
  }

  private constructor(p: Parts) {
    super();
    this.config = p.config;
    this.logger = p.logger;
    this.db = p.db;
    this.registry = p.registry;
    this.storage = p.storage;
    this.store = p.store;
    this.id = p.registry.self.id;
    this.maxRequestBytes = p.config.maxRequestBytes;
    this.timeoutMs = requestTimeoutMs(p.config.electionMs);
    this.metricsSet = new MemberMetrics(this.metricSources());
    this.transport = new RaftTransport({
      id: this.id,
      onMessage: (m) => this.driver.receive(m),
      onUnreachable: (peer) => this.driver.reportUnreachable(peer),
      onSnapshotStatus: (peer, s) => this.driver.reportSnapshot(peer, s),
      clusterToken: p.registry.clusterId,
    });
    this.syncPeers();
    this.driver = this.createDriver(p);
    // One server per --listen-peer-urls entry, all serving the same transport.
    this.peerServers = p.config.listenPeerUrls.map(() =>
      createPeerServer(this.transport, this.peerHandlers()),
    );
    this.reaper = new LeaseReaper({
      store: this.store,
      logger: this.logger,
      intervalMs: p.options.leaseCheckMs,
      revoke: async (id) => void (await this.propose({ op: 'leaseRevoke', id })),
    });
    this.compactor = new AutoCompactor({
      retention: parseRetention(p.config.autoCompactionMode, p.config.autoCompactionRetention),
      now: () => Date.now(),
      currentRevision: () => this.store.currentRevision,
      compactRevision: () => this.store.compactRevision,
      compact: async (revision) => void (await this.propose({ op: 'compact', revision })),
      logger: this.logger,
      revisionCheckMs: p.options.revisionCompactionCheckMs,
    });
  }

  private createDriver(p: Parts): RaftDriver {
    const app = new MemberApplication({
      store: this.store,
      registry: this.registry,
      waiters: this.waiters,
      metrics: this.metricsSet,
      logger: this.logger,
      listener: {
        onConfChange: (cc) => this.onConfChange(cc),
        onRegistryReplaced: () => this.syncPeers(),
      },
    });
    const driver = new RaftDriver({
      id: this.id,
      storage: this.storage,
      transport: this.transport,
      app,
      appliedIndex: LogIndex(this.store.appliedIndex),
      heartbeatMs: p.config.heartbeatMs,
      electionMs: p.config.electionMs,
      requestTimeoutMs: this.timeoutMs,
      snapshotEntries: p.config.snapshotCount,
      snapshotCatchUpEntries: Math.min(5000, Math.max(1, Math.floor(p.config.snapshotCount / 2))),
      raft: { preVote: true, checkQuorum: true },
    });
    driver.on('leaderChange', (c) => this.onLeaderChange(c));
    driver.on('error', (e) => this.onFatal(e));
    return driver;
  }

  private async open(how: string): Promise<void> {
    for (const [i, u] of this.config.listenPeerUrls.entries()) {
      const a = await listen(this.peerServers[i]!, u);
      const bound = new URL(u.href);
      bound.port = String(a.port);
      this.boundPeerUrls.push(bound);
    }
    await this.driver.start();
    this.clients = await ClientListeners.open(
      await loadClientFace(this),
      this.config.listenClientUrls,
    );
    this.schedulePublish(0);
    this.logger.info(
      {
        id: String(this.id),
        cluster: this.registry.clusterId,
        how,
        clientURLs: this.clientUrls.map(urlString),
        peerURLs: this.boundPeerUrls.map(urlString),
        dataDir: this.config.dataDir,
      },
      'member started',
    );
  }

  // --- addresses ---

  /** The bound client URLs (port 0 in the flags resolved to the real port). */
  get clientUrls(): URL[] {
    return this.clients?.urls ?? [];
  }

  /** The bound peer URL. */
  get peerUrls(): URL[] {
    return this.boundPeerUrls;
  }

  /** The client URLs this member announces: --advertise-client-urls, port 0 resolved. */
  advertisedClientUrls(): string[] {
    const listen = this.config.listenClientUrls;
    return this.config.advertiseClientUrls.map((u) => {
      const i = listen.findIndex((l) => l.href === u.href);
      const bound = i >= 0 ? this.clientUrls[i] : undefined;
      return urlString(u.port === '0' && bound !== undefined ? bound : u);
    });
  }

  // --- MemberApi: state ---

  get metrics() {
    return this.metricsSet.registry;
  }

  get watchSource() {
    return this.store;
  }

  get isLearner(): boolean {
    return this.registry.get(this.id)?.isLearner === true;
  }

  header(revision?: number): ResponseHeader {
    return {
      clusterId: this.registry.clusterId,
      memberId: String(this.id),
      revision: (revision ?? this.store.currentRevision) as ResponseHeader['revision'],
      raftTerm: this.driver.status().term,
    };
  }

  health(): { health: boolean; reason: string } {
    if (this.failure !== undefined) return { health: false, reason: 'FAILED' };
    if (this.removed) return { health: false, reason: 'REMOVED' };
    if (this.driver.status().leader === NONE) return { health: false, reason: 'RAFT NO LEADER' };
    return { health: true, reason: '' };
  }

  async status(): Promise<MemberStatus> {
    const st = this.driver.status();
    const size = await dataSize(join(this.config.dataDir, 'db'));
    return {
      header: this.header(),
      version: ETCD_VERSION,
      dbSize: size,
      dbSizeInUse: size,
      leader: String(st.leader),
      raftIndex: st.commit,
      raftTerm: st.term,
      raftAppliedIndex: st.applied,
      errors: this.failure === undefined ? [] : [String(this.failure.message)],
      isLearner: this.isLearner,
    };
  }

  // --- MemberApi: key-value ---

  async range(
    request: RangeRequest,
    options: ReadOptions = {},
  ): Promise<{ header: ResponseHeader; result: RangeResult }> {
    this.assertServing();
    if (options.serializable !== true && request.serializable !== true) {
      this.refuseLearner();
      await this.readBarrier();
    }
    const result = await this.store.range(request);
    return { header: this.header(), result };
  }

  async write(command: Command): Promise<{ header: ResponseHeader; result: CommandResult }> {
    this.assertServing();
    this.refuseLearner();
    let c = command;
    if (c.op === 'leaseGrant' && c.id === 0) c = { ...c, id: newLeaseId() };
    checkCommand(c, this.store.limits);
    const result = await this.propose(c);
    return { header: this.header(result.result.revision), result };
  }

  /** Proposes one command and resolves with its outcome once applied here. */
  private async propose(command: Command): Promise<CommandResult> {
    const requestId = this.requestIds.next();
    const data = encodeEntry(EntryKind.COMMAND, requestId, encodeCommand(command));
    this.waiters.begin(requestId);
    try {
      await this.proposeWithRetry(data);
    } catch (e) {
      this.waiters.cancel(requestId);
      this.metricsSet.proposalsFailed.inc();
      throw e;
    }
    const outcome = this.waiters.take(requestId);
    if (outcome === undefined)
      throw new EtceteraError('ERR_TIMEOUT', { detail: 'applied, but the outcome was lost' });
    this.metricsSet.proposalsCommitted.inc();
    if (!outcome.ok) throw outcome.error;
    return outcome.result;
  }

  /**
   * A proposal that Raft dropped (no leader, a transfer under way) never entered the log,
   * so it is safe to propose again; do so until a leader takes it or the time is up.
   */
  private async proposeWithRetry(data: Uint8Array): Promise<void> {
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      await this.waitLeader(deadline);
      try {
        await this.driver.propose(data);
        return;
      } catch (e) {
        if (!isEtceteraError(e, 'ERR_RAFT_PROPOSAL_DROPPED') || Date.now() >= deadline) throw e;
        await sleep(Math.min(50, this.config.heartbeatMs));
      }
    }
  }

  private async readBarrier(): Promise<void> {
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      await this.waitLeader(deadline);
      try {
        await this.driver.readIndex();
        return;
      } catch (e) {
        const retry =
          isEtceteraError(e, 'ERR_NO_LEADER') || isEtceteraError(e, 'ERR_RAFT_PROPOSAL_DROPPED');
        if (!retry || Date.now() >= deadline) throw e;
        await sleep(Math.min(50, this.config.heartbeatMs));
      }
    }
  }

  /** Resolves when a leader is known; ERR_NO_LEADER at the deadline. */
  private async waitLeader(deadline: number): Promise<void> {
    if (this.driver.status().leader !== NONE) return;
    await untilDeadline(deadline, Math.min(20, this.config.heartbeatMs), () => {
      this.assertServing();
      return this.driver.status().leader !== NONE;
    });
    if (this.driver.status().leader === NONE) throw new EtceteraError('ERR_NO_LEADER');
  }

  // --- MemberApi: leases ---

  async leaseKeepAlive(id: LeaseId): Promise<{ header: ResponseHeader; id: LeaseId; ttl: number }> {
    this.assertServing();
    this.refuseLearner();
    const ttl = await this.onLeader(
      () => this.leaderKeepAlive(id),
      async (url) => {
        const r = await forwardLease(url, '/leases/keepalive', { id: String(id) }, this.timeoutMs);
        return r === undefined ? undefined : Number(r.ttl);
      },
    );
    return { header: this.header(), id, ttl };
  }

  async leaseTimeToLive(id: LeaseId, keys: boolean) {
    this.assertServing();
    this.refuseLearner();
    const t = await this.onLeader(
      () => this.leaderTimeToLive(id, keys),
      async (url) => {
        const body = { id: String(id), keys };
        const r = await forwardLease(url, '/leases/timetolive', body, this.timeoutMs);
        if (r === undefined) return undefined;
        const k = (r.keys as string[]).map((s) => new Uint8Array(Buffer.from(s, 'base64')));
        return { ttl: Number(r.ttl), grantedTtl: Number(r.grantedTtl), keys: k };
      },
    );
    return { header: this.header(), lease: { id, ...t } };
  }

  async leaseLeases(): Promise<{ header: ResponseHeader; leases: LeaseId[] }> {
    this.assertServing();
    this.refuseLearner();
    await this.readBarrier();
    return { header: this.header(), leases: this.store.lessor.ids() };
  }

  /** The leader's keepalive; a lease it does not know yet may be in its unapplied tail. */
  private async leaderKeepAlive(id: LeaseId): Promise<number> {
    let ttl = localKeepAlive(this.store, id);
    if (ttl === 0 && this.store.lessor.get(id) === undefined) {
      await this.driver.readIndex();
      ttl = localKeepAlive(this.store, id);
    }
    return ttl;
  }

  private async leaderTimeToLive(id: LeaseId, keys: boolean) {
    if (this.store.lessor.get(id) === undefined) await this.driver.readIndex();
    return localTimeToLive(this.store, id, keys);
  }

  private isLeader(): boolean {
    const st = this.driver.status();
    return st.role === Role.Leader && st.leader === this.id;
  }

  /** Runs `local` if this member leads, else `forward` to the leader's peer URL; retries. */
  private async onLeader<T>(
    local: () => Promise<T>,
    forward: (peerUrl: string) => Promise<T | undefined>,
  ): Promise<T> {
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      await this.waitLeader(deadline);
      if (this.isLeader()) return local();
      const leader = this.registry.get(this.driver.status().leader);
      const url = leader?.peerURLs[0];
      if (url !== undefined) {
        const r = await forward(url);
        if (r !== undefined) {
          this.metricsSet.leaseForwards.inc();
          return r;
        }
      }
      if (Date.now() >= deadline)
        throw new EtceteraError('ERR_TIMEOUT', { detail: 'leader unreachable' });
      await sleep(50);
    }
  }

  // --- MemberApi: membership ---

  private membershipDeps(): MembershipDeps {
    return {
      registry: this.registry,
      driver: this.driver,
      token: this.registry.self.token,
      now: () => Date.now(),
    };
  }

  async memberList(): Promise<{ header: ResponseHeader; members: MemberInfo[] }> {
    this.assertServing();
    return { header: this.header(), members: this.registry.info() };
  }

  async memberAdd(peerURLs: string[], isLearner: boolean) {
    this.assertServing();
    this.refuseLearner();
    await this.waitLeader(Date.now() + this.timeoutMs);
    const m = await addMember(this.membershipDeps(), peerURLs, isLearner);
    const member = this.registry.info().find((x) => x.id === String(m.id))!;
    return { header: this.header(), member, members: this.registry.info() };
  }

  async memberRemove(id: string): Promise<{ header: ResponseHeader; members: MemberInfo[] }> {
    this.assertServing();
    this.refuseLearner();
    const nodeId = parseMemberId(id);
    if (nodeId === undefined) throw new EtceteraError('ERR_MEMBER_NOT_FOUND');
    await this.waitLeader(Date.now() + this.timeoutMs);
    await removeMember(this.membershipDeps(), nodeId);
    return { header: this.header(), members: this.registry.info() };
  }

  async memberPromote(id: string): Promise<{ header: ResponseHeader; members: MemberInfo[] }> {
    this.assertServing();
    this.refuseLearner();
    const nodeId = parseMemberId(id);
    if (nodeId === undefined) throw new EtceteraError('ERR_MEMBER_NOT_FOUND');
    await this.waitLeader(Date.now() + this.timeoutMs);
    await promoteMember(this.membershipDeps(), nodeId);
    return { header: this.header(), members: this.registry.info() };
  }

  // --- events from Raft and apply ---

  private onLeaderChange(c: LeaderChange): void {
    if (c.leader !== NONE) this.metricsSet.leaderChanges.inc();
    if (c.role === Role.Leader) {
      // etcd does the same: the old leader's expiry clocks are unknown here.
      this.store.refreshLeases();
      this.reaper.start();
      this.compactor.start();
      this.logger.info({ term: c.term }, 'elected leader');
    } else {
      this.reaper.stop();
      this.compactor.stop();
      if (c.leader === NONE) this.logger.warn({ term: c.term }, 'no leader');
      else this.logger.info({ leader: String(c.leader), term: c.term }, 'following leader');
    }
    if (!this.published && this.clients !== undefined) this.schedulePublish(0);
  }

  private onConfChange(cc: ConfChange): void {
    if (cc.type === ConfChangeType.RemoveNode && cc.nodeId === this.id) {
      this.removed = true;
      this.logger.warn('this member was removed from the cluster');
      this.emit('removed');
      return;
    }
    this.syncPeers();
  }

  /** Makes the transport's peers match the registry (adds, URL changes, removals). */
  private syncPeers(): void {
    const wanted = new Map<NodeId, string>();
    for (const m of this.registry.list()) {
      const url = m.peerURLs[0];
      if (m.id !== this.id && url !== undefined) wanted.set(m.id, url);
    }
    for (const id of this.transport.peerIds()) if (!wanted.has(id)) this.transport.removePeer(id);
    for (const [id, url] of wanted) this.transport.setPeer(id, url);
  }

  private onFatal(e: Error): void {
    this.failure = e;
    this.logger.fatal({ err: e.message }, 'raft stopped on an error');
    if (this.listenerCount('error') > 0) this.emit('error', e);
  }

  /**
   * Announces this member's name and client URLs through Raft (etcd's publish), until the
   * registry shows them. Retried on a timer and on every leader change.
   */
  private schedulePublish(delayMs: number): void {
    if (this.publishTimer !== undefined || this.stopping !== undefined) return;
    this.publishTimer = setTimeout(() => {
      this.publishTimer = undefined;
      void this.publish().then(
        (done) => (done ? undefined : this.schedulePublish(500)),
        () => this.schedulePublish(500),
      );
    }, delayMs);
    this.publishTimer.unref();
  }

  private async publish(): Promise<boolean> {
    const clientURLs = this.advertisedClientUrls();
    const mine = this.registry.get(this.id);
    const same =
      mine !== undefined &&
      mine.name === this.config.name &&
      mine.clientURLs.join(',') === clientURLs.join(',');
    if (same || this.removed) return (this.published = true);
    if (this.driver.status().leader === NONE) return false;
    const body = Buffer.from(JSON.stringify({ id: this.id, name: this.config.name, clientURLs }));
    await this.driver.propose(encodeEntry(EntryKind.ATTRIBUTES, this.requestIds.next(), body));
    this.logger.info({ clientURLs }, 'published member attributes');
    return (this.published = true);
  }

  // --- the peer listener's answers ---

  private peerHandlers() {
    return {
      cluster: () => this.registry.toRecord(),
      keepAlive: (id: LeaseId) => (this.isLeader() ? this.leaderKeepAlive(id) : undefined),
      timeToLive: (id: LeaseId, keys: boolean) =>
        this.isLeader() ? this.leaderTimeToLive(id, keys) : undefined,
      version: () => ({ etcdserver: ETCD_VERSION, etcdcluster: '3.4.0' }),
    };
  }

  private metricSources() {
    return {
      hasLeader: () => this.driver.status().leader !== NONE,
      isLeader: () => this.isLeader(),
      keys: () => this.store.keyCount,
      revision: () => this.store.currentRevision,
      compactRevision: () => this.store.compactRevision,
      leases: () => this.store.lessor.size,
      pendingProposals: () => this.waiters.size,
      appliedIndex: () => this.driver.status().applied,
      term: () => this.driver.status().term,
    };
  }

  // --- guards ---

  private assertServing(): void {
    if (this.stopping !== undefined) throw new EtceteraError('ERR_CLOSED');
    if (this.failure !== undefined)
      throw new EtceteraError('ERR_CLOSED', { detail: this.failure.message });
  }

  private refuseLearner(): void {
    if (this.isLearner) throw new EtceteraError('ERR_NOT_SUPPORTED_FOR_LEARNER');
  }

  // --- shutdown ---

  /** Graceful stop: idempotent; resolves when the database is closed. */
  stop(): Promise<void> {
    this.stopping ??= this.stopNow();
    return this.stopping;
  }

  private async stopNow(): Promise<void> {
    this.logger.info('stopping');
    if (this.publishTimer !== undefined) clearTimeout(this.publishTimer);
    this.reaper.stop();
    this.compactor.stop();
    await this.clients?.close();
    await this.handOverLeadership();
    await this.driver.stop();
    await this.transport.close();
    await Promise.all(this.peerServers.map(closeServer));
    await this.store.close();
    await this.storage.flush().catch(() => undefined);
    await this.db.close();
    this.logger.info('stopped');
  }

  /** A leader that stops hands over first (as etcd does), so the cluster does not wait out an election. */
  private async handOverLeadership(): Promise<void> {
    if (!this.isLeader() || this.failure !== undefined) return;
    const to = this.registry.list().find((m) => m.id !== this.id && !m.isLearner);
    if (to === undefined) return;
    try {
      await Promise.race([this.driver.transferLeader(to.id), sleep(this.config.electionMs)]);
    } catch (e) {
      this.logger.warn({ to: String(to.id), err: String(e) }, 'leadership transfer on stop failed');
    }
  }
}
