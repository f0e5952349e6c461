/**
 * One member: its LevelDB (Raft log, store and registry on sublevels of one database), the
 * Raft driver and peer transport, the apply loop into the store, the leader's timers (lease
 * expiry, auto-compaction), and the client and peer listeners (wiring.ts builds the parts).
 * It implements MemberApi, what the HTTP faces ask of it.
 *
 * Request paths:
 *   write   check → propose through Raft (a follower's core forwards to the leader) → the
 *           outcome is handed over when the entry is applied HERE, so the answer reflects
 *           this member's state. No leader yet: wait for one (up to the request timeout).
 *   read    linearizable: ReadIndex barrier (resolves once this member applied the read
 *           index), then a local read; serializable: local read at once.
 *   leases  keepalive and time-to-live are answered by the leader's lessor (forwarded over
 *           the peer listener, lease-service.ts); grant and revoke are writes.
 *   learner serves serializable reads, status and the member list; refuses the rest.
 *
 * Lifecycle: `Member.start` opens everything or closes what it opened and throws; `stop`
 * (SIGTERM) hands leadership over if it can, then closes listeners, Raft and the database.
 * A SIGKILL loses nothing acknowledged: Raft entries and the store's applied state are
 * fsynced before any answer.
 */
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import { EtceteraError } from '../errors.js';
import type { LeaderChange } from '../raft/driver/types.js';
import { LevelRaftStorage, type RaftDb } from '../raft/storage/level-storage.js';
import { type ConfChange, ConfChangeType, NONE, type NodeId, Role } from '../raft/types.js';
import { hashKeyspace } from '../store/hash.js';
import { Store } from '../store/store.js';
import type { Command, CommandResult, LeaseId, RangeRequest, RangeResult } from '../store/types.js';
import { checkCommand } from '../store/validate.js';
import { alarmText } from './alarms.js';
import { confStateOf } from './apply.js';
import { MemberAuth } from './auth.js';
import { JwtTokens, SimpleTokens, type TokenProvider } from './auth-token.js';
import { establishIdentity } from './bootstrap.js';
import { apiFace, ClientListeners, clientConfigOf, faceOptions, ServeGate } from './client-http.js';
import { type MemberConfig, minLeaseTtlSeconds, requestTimeoutMs, urlString } from './config.js';
import { type CorruptCheckDeps, CorruptChecker, initialCorruptCheck } from './corrupt-check.js';
import { openDataDir } from './data-dir.js';
import { Defragmenter } from './defrag.js';
import { MemberHealth } from './health.js';
import { parseMemberId } from './ids.js';
import { type KubeAuth, loadKubeAuth } from './kube-auth.js';
import { createLogger, type Logger } from './logger.js';
import { createMaintenance } from './maintenance.js';
import {
  addMember,
  type MembershipDeps,
  promoteMember,
  removeMember,
  updateMember,
} from './membership.js';
import { guardDial } from './peer-cert.js';
import { closeServer, listen } from './peer-http.js';
import { SpaceQuota } from './quota.js';
import type { MemberRegistry } from './registry.js';
import { loadMemberTls } from './tls.js';
import type {
  MaintenanceApi,
  MemberApi,
  MemberInfo,
  MemberStatus,
  ReadOptions,
  ResponseHeader,
} from './types.js';
import { dataSize, sleep } from './util.js';
import { ETCD_VERSION } from './version.js';
import { type Base, type Tuning, type Wired, wire } from './wiring.js';
import { WorkerPool, workerSocketPath, workerSpec } from './workers.js';

export interface MemberOptions extends Tuning {
  /** A logger to use instead of pino on stdout at --log-level. */
  logger?: Logger;
}

type Events = { removed: []; error: [Error] };

export class Member extends EventEmitter<Events> implements MemberApi {
  readonly config: MemberConfig;
  readonly logger: Logger;
  readonly id: NodeId;
  readonly store: Store;
  readonly registry: MemberRegistry;
  readonly maxRequestBytes: number;
  readonly maintenance: MaintenanceApi;
  readonly probes: MemberHealth;
  /** --quota-backend-bytes (quota.ts). */
  readonly quota: SpaceQuota;
  /** etcd's auth: the Auth service and the per-caller views the faces serve through (auth.ts). */
  readonly auth: MemberAuth;
  private readonly tokens: TokenProvider;
  private readonly corruptCheck: CorruptCheckDeps;
  private readonly corruptChecker: CorruptChecker;
  private readonly w: Wired;
  private readonly db: RaftDb;
  private readonly storage: LevelRaftStorage;
  private clients: ClientListeners | undefined;
  /** --workers: the processes serving the client port (workers.ts). */
  private workerPool: WorkerPool | undefined;
  /** Client requests wait here until this member's publish is applied (client-http.ts). */
  private readonly gate: ServeGate;
  private boundPeerUrls: URL[] = [];
  private readonly tlsOf: Base['tls'];
  private removed = false;
  private lastLeader: NodeId = NONE;
  private failure: Error | undefined;
  private stopping: Promise<void> | undefined;

  /** Opens the data dir, joins or bootstraps the cluster, and starts serving. */
  static async start(config: MemberConfig, options: MemberOptions = {}): Promise<Member> {
    const logger = options.logger ?? createLogger({ level: config.logLevel, name: config.name });
    // Certificates first: a member whose files cannot be read opens nothing.
    const tls = await loadMemberTls(config);
    if (tls.peer !== undefined) tls.peer.dial = guardDial(tls.peer.dial, config.peerCertAllowed);
    for (const [side, loaded, flags] of [
      ['client', tls.client, config.clientTls],
      ['peer', tls.peer, config.peerTls],
    ] as const) {
      if (loaded?.auto !== undefined)
        logger.info(
          { certFile: loaded.auto.certFile, made: loaded.auto.made },
          `${side} TLS: self-signed certificate (auto-tls)`,
        );
      if (flags.ignored !== undefined)
        logger.warn(
          { ignored: flags.ignored },
          `${side} TLS: auto-tls without certificate files ignores ${flags.ignored.join(' and ')}, as etcd does`,
        );
    }
    const kubeAuth = loadKubeAuth(
      config.kubeAuth,
      config.clientTls.clientCertAuth || config.clientTls.clientCaFile !== undefined,
    );
    let opened: Awaited<ReturnType<typeof openDataDir>>;
    try {
      opened = await openDataDir(config.dataDir);
    } catch (e) {
      await kubeAuth.audit?.close();
      throw e;
    }
    const { db, mark } = opened;
    let member: Member | undefined;
    try {
      const identity = await establishIdentity(db, config, logger, tls.peer?.dial);
      // Used only when the database holds no Raft state yet: a new member, or one that
      // crashed after recording its identity and before Raft's first write.
      const bootstrap = confStateOf(identity.registry);
      const storage = await LevelRaftStorage.open(db, { bootstrap, mark });
      const store = await Store.open({
        db,
        // No fsync of its own: every applied entry is already durable in the Raft log (an
        // fsynced write in the same LevelDB), and the applied index travels atomically with
        // the store's data, so a crash replays exactly the entries the store lost.
        sync: false,
        minLeaseTtl: minLeaseTtlSeconds(config.electionMs),
        maxRequestBytes: config.maxRequestBytes,
      });
      const base = {
        config,
        tuning: options,
        logger,
        registry: identity.registry,
        storage,
        store,
        tls,
      };
      const spec = config.authToken;
      const tokens =
        spec.kind === 'jwt'
          ? await JwtTokens.open(spec)
          : new SimpleTokens(config.authTokenTtlSeconds * 1000);
      member = new Member(base, db, kubeAuth, tokens);
      await member.open(identity.how);
      return member;
    } catch (e) {
      if (member !== undefined) await member.stop().catch(() => undefined);
      else {
        await db.close().catch(() => undefined);
        await kubeAuth.audit?.close();
      }
      throw e;
    }
  }

  private constructor(
    b: Base,
    db: RaftDb,
    private readonly kubeAuth: KubeAuth,
    tokens: TokenProvider,
  ) {
    super();
    this.tokens = tokens;
    this.config = b.config;
    this.logger = b.logger;
    this.registry = b.registry;
    this.store = b.store;
    this.storage = b.storage;
    this.db = db;
    this.tlsOf = b.tls;
    this.id = b.registry.self.id;
    this.maxRequestBytes = b.config.maxRequestBytes;
    this.gate = new ServeGate(requestTimeoutMs(b.config.electionMs));
    this.w = wire(b, {
      onLeaderChange: (c) => this.onLeaderChange(c),
      onConfChange: (cc) => this.onConfChange(cc),
      onRemoved: () => this.onRemoved(),
      onFatal: (e) => this.onFatal(e),
      assertServing: () => this.assertServing(),
      advertisedClientUrls: () => this.advertisedClientUrls(),
      onPublished: () => this.gate.open(),
    });
    const dbDir = join(b.config.dataDir, 'db');
    const selfId = String(this.id);
    this.quota = new SpaceQuota({
      quotaBytes: b.config.quotaBackendBytes,
      dbDir,
      raised: () => this.store.alarms().some((a) => a.memberId === selfId && a.alarm === 'NOSPACE'),
      raise: () =>
        this.w.requests.propose({
          op: 'alarm',
          action: 'activate',
          memberId: selfId,
          alarm: 'NOSPACE',
        }),
      logger: this.logger,
    });
    this.maintenance = createMaintenance({
      store: this.store,
      registry: this.registry,
      driver: this.w.driver,
      selfId: this.id,
      header: () => this.header(),
      assertServing: () => this.assertServing(),
      alarms: {
        alarms: () => this.store.alarms(),
        propose: (c) => this.proposeChecked(c),
        logger: this.logger,
      },
      defrag: new Defragmenter({
        db,
        dbDir,
        logger: this.logger,
        onDone: () => void this.quota.sample(),
      }),
    });
    this.corruptCheck = {
      ...(b.tls.peer !== undefined ? { peerTls: b.tls.peer.dial } : {}),
      selfId: this.id,
      registry: this.registry,
      hash: (revision) => hashKeyspace(this.store, revision),
      raiseCorrupt: (memberId) =>
        this.proposeChecked({ op: 'alarm', action: 'activate', memberId, alarm: 'CORRUPT' }),
      corruptRaised: (memberId) =>
        this.store.alarms().some((a) => a.memberId === memberId && a.alarm === 'CORRUPT'),
      isLeader: () => this.w.leases.isLeader(),
      logger: this.logger,
      intervalMs: b.config.corruptCheckMs,
    };
    this.corruptChecker = new CorruptChecker(this.corruptCheck);
    this.auth = new MemberAuth({
      store: this.store,
      member: this,
      propose: (c) => this.proposeChecked(c),
      readBarrier: () => this.w.requests.readBarrier(),
      header: () => this.header(),
      tokens,
    });
    this.probes = new MemberHealth({
      failure: () => this.failure?.message,
      stopping: () => this.stopping !== undefined,
      removed: () => this.removed,
      hasLeader: () => this.w.driver.status().leader !== NONE,
      alarms: () => this.store.alarms(),
      commitIndex: () => this.w.driver.status().commit,
      appliedIndex: () => this.w.driver.status().applied,
      storeRevision: () => this.store.currentRevision,
      cacheRevision: () => this.w.watchCache.revision,
      readBarrier: () => this.w.requests.readBarrier(),
      localRead: () => this.store.range({ key: new Uint8Array([0]), limit: 1, countOnly: true }),
    });
  }

  private async open(how: string): Promise<void> {
    for (const [i, u] of this.config.listenPeerUrls.entries()) {
      const a = await listen(this.w.peerServers[i]!, u);
      const bound = new URL(u.href);
      bound.port = String(a.port);
      this.boundPeerUrls.push(bound);
    }
    if (this.config.initialCorruptCheck) await initialCorruptCheck(this.corruptCheck);
    await this.quota.start();
    // With --workers, the workers listen on the client port before Raft starts, so the
    // client URLs this member publishes are bound (workers.ts).
    if (this.config.workers > 0) await this.openClients();
    await this.w.driver.start();
    this.corruptChecker.start();
    if (this.config.workers === 0) await this.openClients();
    this.w.presence.start();
    this.logger.info(
      {
        id: String(this.id),
        cluster: this.registry.clusterId,
        how,
        clientURLs: this.clientUrls.map(urlString),
        peerURLs: this.boundPeerUrls.map(urlString),
        dataDir: this.config.dataDir,
        ...(this.workerPool !== undefined ? { workers: this.workerPool.pids() } : {}),
      },
      'member started',
    );
  }

  /**
   * The faces on the client URLs, or with --workers on the workers' unix socket, and the
   * workers (workers.ts) on the client URLs.
   */
  private async openClients(): Promise<void> {
    const workers = this.config.workers > 0;
    const face = this.gate.guard(
      apiFace(this, this.logger, faceOptions(clientConfigOf(this.config), this.kubeAuth)),
    );
    this.clients = await ClientListeners.open(face, workers ? [] : this.config.listenClientUrls, {
      maxConnections: this.config.maxConnections,
      readHeaderTimeoutMs: this.config.readHeaderTimeoutMs,
      onRefused: () => this.w.metrics.clientConnectionsRefused.inc(),
      onTimedOut: (reason) => this.w.metrics.clientConnectionsTimedOut.inc({ reason }),
      ...(this.tlsOf.client !== undefined ? { tls: this.tlsOf.client } : {}),
      ...(workers ? { unixSocket: workerSocketPath(this.config.dataDir) } : {}),
      logger: this.logger,
    });
    if (!workers) return;
    this.workerPool = await WorkerPool.start({
      count: this.config.workers,
      spec: workerSpec(this.config, {
        tls: this.tlsOf.client,
        loopbackToken: this.kubeAuth.loopbackToken,
      }),
      logger: this.logger,
    });
  }

  // --- addresses and parts ---

  /** The Raft driver (status, tests). */
  get driver() {
    return this.w.driver;
  }

  /**
   * The bearer token of this member's own control plane on its Kubernetes API (a
   * system:masters user known only to this process); undefined when none is needed.
   */
  get loopbackToken(): string | undefined {
    return this.kubeAuth.loopbackToken;
  }

  /** The bound client URLs (port 0 in the flags resolved to the real port). */
  get clientUrls(): URL[] {
    return this.workerPool?.urls ?? this.clients?.urls ?? [];
  }

  /** The bound peer URLs. */
  get peerUrls(): URL[] {
    return this.boundPeerUrls;
  }

  /** The client URLs this member announces: --advertise-client-urls, port 0 resolved. */
  advertisedClientUrls(): string[] {
    const listening = this.config.listenClientUrls;
    return this.config.advertiseClientUrls.map((u) => {
      const i = listening.findIndex((l) => l.href === u.href);
      const bound = i >= 0 ? this.clientUrls[i] : undefined;
      return urlString(u.port === '0' && bound !== undefined ? bound : u);
    });
  }

  // --- MemberApi: state ---

  get metrics() {
    return this.w.metrics.registry;
  }

  get watchSource() {
    return this.store;
  }

  get watchCache() {
    return this.w.watchCache;
  }

  get isLearner(): boolean {
    return this.registry.get(this.id)?.isLearner === true;
  }

  header(revision?: number): ResponseHeader {
    return {
      clusterId: this.registry.clusterId,
      memberId: String(this.id),
      revision: (revision ?? this.store.currentRevision) as ResponseHeader['revision'],
      raftTerm: this.w.driver.status().term,
    };
  }

  health(): { health: boolean; reason: string } {
    if (this.failure !== undefined) return { health: false, reason: 'FAILED' };
    if (this.removed) return { health: false, reason: 'REMOVED' };
    if (this.w.driver.status().leader === NONE) return { health: false, reason: 'RAFT NO LEADER' };
    return { health: true, reason: '' };
  }

  async status(): Promise<MemberStatus> {
    const st = this.w.driver.status();
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
      errors: [
        ...(this.failure === undefined ? [] : [String(this.failure.message)]),
        ...this.store.alarms().map(alarmText),
      ],
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
      await this.w.requests.readBarrier();
    }
    const result = await this.store.range(request);
    return { header: this.header(), result };
  }

  async write(command: Command): Promise<{ header: ResponseHeader; result: CommandResult }> {
    this.assertServing();
    this.refuseLearner();
    let c = command;
    if (c.op === 'leaseGrant' && c.id === 0) c = { ...c, id: this.store.lessor.chooseId() };
    checkCommand(c, this.store.limits);
    await this.quota.check(c);
    const result = await this.w.requests.propose(c);
    return { header: this.header(result.result.revision), result };
  }

  /** Proposes a command the member itself makes (alarms): checked, not quota-bound. */
  private async proposeChecked(c: Command): Promise<CommandResult> {
    this.assertServing();
    this.refuseLearner();
    checkCommand(c, this.store.limits);
    return this.w.requests.propose(c);
  }

  // --- MemberApi: leases ---

  async leaseKeepAlive(id: LeaseId): Promise<{ header: ResponseHeader; id: LeaseId; ttl: number }> {
    this.assertServing();
    this.refuseLearner();
    const ttl = await this.w.leases.keepAlive(id);
    return { header: this.header(), id, ttl };
  }

  async leaseTimeToLive(id: LeaseId, keys: boolean) {
    this.assertServing();
    this.refuseLearner();
    const t = await this.w.leases.timeToLive(id, keys);
    return { header: this.header(), lease: t };
  }

  async leaseLeases(): Promise<{ header: ResponseHeader; leases: LeaseId[] }> {
    this.assertServing();
    this.refuseLearner();
    await this.w.requests.readBarrier();
    return { header: this.header(), leases: this.store.lessor.ids() };
  }

  // --- MemberApi: membership ---

  async memberList(): Promise<{ header: ResponseHeader; members: MemberInfo[] }> {
    this.assertServing();
    return { header: this.header(), members: this.registry.info() };
  }

  async memberAdd(peerURLs: string[], isLearner: boolean) {
    const d = await this.membershipDeps();
    const m = await addMember(d, peerURLs, isLearner);
    const member = this.registry.info().find((x) => x.id === String(m.id))!;
    return { header: this.header(), member, members: this.registry.info() };
  }

  async memberRemove(id: string): Promise<{ header: ResponseHeader; members: MemberInfo[] }> {
    const nodeId = parseMemberId(id);
    if (nodeId === undefined) throw new EtceteraError('ERR_MEMBER_NOT_FOUND');
    await removeMember(await this.membershipDeps(), nodeId);
    return { header: this.header(), members: this.registry.info() };
  }

  async memberPromote(id: string): Promise<{ header: ResponseHeader; members: MemberInfo[] }> {
    const nodeId = parseMemberId(id);
    if (nodeId === undefined) throw new EtceteraError('ERR_MEMBER_NOT_FOUND');
    await promoteMember(await this.membershipDeps(), nodeId);
    return { header: this.header(), members: this.registry.info() };
  }

  async memberUpdate(
    id: string,
    peerURLs: string[],
  ): Promise<{ header: ResponseHeader; members: MemberInfo[] }> {
    const nodeId = parseMemberId(id);
    if (nodeId === undefined) throw new EtceteraError('ERR_MEMBER_NOT_FOUND');
    await updateMember(await this.membershipDeps(), nodeId, peerURLs);
    return { header: this.header(), members: this.registry.info() };
  }

  /** Checks common to membership changes, then what they need. */
  private async membershipDeps(): Promise<MembershipDeps> {
    this.assertServing();
    this.refuseLearner();
    await this.w.requests.waitLeader(Date.now() + this.w.timeoutMs);
    return this.w.membership;
  }

  // --- events from Raft and apply ---

  private onLeaderChange(c: LeaderChange): void {
    if (c.leader !== NONE && c.leader !== this.lastLeader) this.w.metrics.leaderChanges.inc();
    if (c.role === Role.Leader) {
      // As etcd: the old leader's expiry clocks are unknown here, so every lease restarts.
      this.store.lessor.refreshAll();
      this.w.reaper.start();
      this.w.compactor.start();
      this.logger.info({ term: c.term }, 'elected leader');
    } else {
      this.w.reaper.stop();
      this.w.compactor.stop();
      if (c.leader !== NONE)
        this.logger.info({ leader: String(c.leader), term: c.term }, 'following leader');
      else if (this.lastLeader !== NONE) this.logger.warn({ term: c.term }, 'lost the leader');
    }
    this.lastLeader = c.leader;
    this.w.presence.leaderChanged(c.leader !== NONE);
  }

  private onConfChange(cc: ConfChange): void {
    if (cc.type === ConfChangeType.RemoveNode && cc.nodeId === this.id) this.onRemoved();
    else this.w.syncPeers();
  }

  private onRemoved(): void {
    if (this.removed) return;
    this.removed = true;
    this.logger.warn('this member was removed from the cluster');
    this.emit('removed');
  }

  private onFatal(e: Error): void {
    this.failure = e;
    this.logger.fatal({ err: e.message }, 'raft stopped on an error');
    if (this.listenerCount('error') > 0) this.emit('error', e);
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
    this.w.presence.stop();
    this.quota.stop();
    this.tokens.close();
    this.corruptChecker.stop();
    this.w.reaper.stop();
    this.w.compactor.stop();
    await this.workerPool?.stop();
    await this.clients?.close();
    this.w.watchCache.close();
    await this.handOverLeadership();
    await this.w.driver.stop();
    await this.w.transport.close();
    await Promise.all(this.w.peerServers.map(closeServer));
    await this.store.close();
    await this.storage.close().catch(() => undefined);
    await this.db.close();
    this.logger.info('stopped');
  }

  /** A stopping leader hands over first (as etcd does), so the rest need not wait out an election. */
  private async handOverLeadership(): Promise<void> {
    if (!this.w.leases.isLeader() || this.failure !== undefined) return;
    const to = this.registry.list().find((m) => m.id !== this.id && !m.isLearner);
    if (to === undefined) return;
    try {
      await Promise.race([this.w.driver.transferLeader(to.id), sleep(this.config.electionMs)]);
    } catch (e) {
      this.logger.warn({ to: String(to.id), err: String(e) }, 'leadership transfer on stop failed');
    }
  }
}
