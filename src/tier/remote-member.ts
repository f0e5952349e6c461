/**
 * A MemberApi over a remote cluster (etcetera's or etcd 3.4+), reached with src/client's gRPC
 * client: what the faces (src/api: etcd JSON, gRPC, websockets, Kubernetes) serve when the
 * store is elsewhere. `createRemoteMember` is the API tier's seam; `etcetera proxy`
 * (proxy.ts) puts the client listeners in front of it.
 *
 * Request paths:
 *   watch   every client watch is served by this process's watch cache, fed by ONE upstream
 *           watch of the whole keyspace (feed.ts): N client watches cost the upstream one.
 *   write   forwarded (put, delete, txn, compact, lease grant and revoke, alarms); answered
 *           once the feed delivered the write's revision, so a watch or Kubernetes read made
 *           through this tier after the answer sees the write (bounded by the request
 *           timeout: the write happened upstream, so it is answered even if the feed is late).
 *           A lease grant without an ID gets one chosen here below 2^53 (etcd would choose
 *           one from the whole 63-bit range, which the member contract cannot carry).
 *   read    forwarded: the tier's cache is an event window, not a copy of the keyspace. A
 *           linearizable read is answered once the feed reached the revision the upstream
 *           answered at (KEP-2340's "wait until the cache caught up", with the upstream's
 *           answer as its revision), so read-then-watch through the tier has no gap.
 *   leases  keep-alive, time-to-live and the list: forwarded.
 *   members forwarded; every member's client URLs in an answer are the tier's advertised
 *           client URLs, as etcd's grpc-proxy answers, so clients that sync their endpoints
 *           from the member list stay on the tier.
 *   other   Status, HashKV, MoveLeader, Alarm and Defragment forwarded to the endpoint in
 *           use; the Auth service and Snapshot are refused (ERR_TIER_NOT_SUPPORTED).
 *
 * Failover: src/client's gRPC transport keeps one channel per endpoint; a call that found
 * no connection, or any read, moves on to the next endpoint; a write that may have arrived
 * is never sent twice. The feed fails over with it and resumes its watch (feed.ts).
 */
import { Gauge, Registry } from 'prom-client';
import { Client } from '../client/client.js';
import { GrpcTransport } from '../client/grpc-transport.js';
import type { ClientTls } from '../client/transport.js';
import type { ResponseHeader as ClientHeader, Member as ClientMember } from '../client/types.js';
import { EtceteraError, isEtceteraError } from '../errors.js';
import type { Logger } from '../server/logger.js';
import type {
  AlarmRequest,
  MaintenanceApi,
  MemberApi,
  MemberInfo,
  MemberStatus,
  ReadOptions,
  ResponseHeader,
} from '../server/types.js';
import type {
  Command,
  CommandResult,
  LeaseId,
  RangeRequest,
  RangeResult,
  Revision,
} from '../store/types.js';
import { Cacher } from '../watchcache/cacher.js';
import type { WatchCacheOptions } from '../watchcache/options.js';
import {
  commandResultOf,
  headerRevision,
  type Json,
  rangeJson,
  rangeResultOf,
  upstreamError,
  writeCall,
} from './codec.js';
import { UpstreamFeed } from './feed.js';

export interface RemoteMemberOptions {
  /** The upstream's client URLs (http:// or https://), tried in order with failover. */
  endpoints: string[];
  /** The client URLs this tier announces in member lists (a function: known after listen). */
  advertiseClientUrls?: string[] | (() => string[]);
  /** TLS towards https:// endpoints. */
  tls?: ClientTls;
  /** Per upstream call, and the longest a write or read waits for the feed. Default 5,000 ms. */
  requestTimeoutMs?: number;
  /** The request size limit the faces apply (etcd's default 1.5 MiB). */
  maxRequestBytes?: number;
  /** How often the feed asks the upstream for its revision. Default 1,000 ms. */
  progressIntervalMs?: number;
  /** The watch cache's options (its metrics go to the tier's registry). */
  watchCache?: Omit<WatchCacheOptions, 'registry'>;
  logger?: Logger;
}

/** The tier's member: a MemberApi over the remote cluster, and its parts. */
export interface RemoteMember extends MemberApi {
  readonly watchSource: UpstreamFeed;
  readonly watchCache: Cacher;
  readonly maintenance: MaintenanceApi;
  /** The client the tier forwards through (its transport holds the endpoints). */
  readonly client: Client;
  /** Stops the feed, the watch cache and the upstream channels. Idempotent. */
  close(): Promise<void>;
}

const DEFAULT_MAX_REQUEST_BYTES = 1.5 * 1024 * 1024;
const MAX_SAFE_ID = 2 ** 53 - 1;

/** Connects to the upstream, opens the one watch, and answers once the cache is fed. */
export async function createRemoteMember(options: RemoteMemberOptions): Promise<RemoteMember> {
  if (options.endpoints.length === 0)
    throw new EtceteraError('ERR_INVALID_ARGUMENT', { detail: 'at least one endpoint is needed' });
  const m = new Remote(options);
  try {
    await m.open();
  } catch (e) {
    await m.close();
    throw e;
  }
  return m;
}

class Remote implements RemoteMember {
  readonly client: Client;
  readonly watchSource: UpstreamFeed;
  readonly watchCache: Cacher;
  readonly metrics = new Registry();
  readonly maxRequestBytes: number;
  readonly maintenance: MaintenanceApi;
  private readonly transport: GrpcTransport;
  private readonly timeoutMs: number;
  private clusterId = '0';
  private memberId = '0';
  private raftTerm = 0;
  private closed = false;

  constructor(private readonly o: RemoteMemberOptions) {
    this.timeoutMs = o.requestTimeoutMs ?? 5000;
    this.maxRequestBytes = o.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
    this.client = new Client({
      endpoints: o.endpoints,
      timeoutMs: this.timeoutMs,
      ...(o.tls !== undefined ? { tls: o.tls } : {}),
    });
    if (!(this.client.wire instanceof GrpcTransport)) throw new Error('gRPC transport expected');
    this.transport = this.client.wire;
    const log = o.logger;
    this.watchSource = new UpstreamFeed({
      transport: this.transport,
      ...(o.progressIntervalMs !== undefined ? { progressIntervalMs: o.progressIntervalMs } : {}),
      onEvent: (what, detail) => {
        if (what === 'connected') log?.info(detail, 'upstream watch connected');
        else if (what === 'lost') log?.warn(detail, 'upstream watch lost');
        else log?.warn(detail, 'upstream compacted past the tier; cache reset');
      },
    });
    // Built once the feed knows its revision (open), as the cache starts there.
    this.watchCache = undefined as unknown as Cacher;
    this.maintenance = this.maintenanceApi();
  }

  async open(): Promise<void> {
    const st = await this.call(() => this.client.status());
    this.learn(st.header);
    await this.watchSource.start();
    (this as { watchCache: Cacher }).watchCache = new Cacher(this.watchSource, {
      ...this.o.watchCache,
      registry: this.metrics,
    });
    this.registerMetrics();
  }

  // --- state ---------------------------------------------------------------------------

  header(revision?: number): ResponseHeader {
    return {
      clusterId: this.clusterId,
      memberId: this.memberId,
      revision: (revision ?? this.watchSource.currentRevision) as Revision,
      raftTerm: this.raftTerm,
    };
  }

  health(): { health: boolean; reason: string } {
    if (this.closed) return { health: false, reason: 'CLOSED' };
    if (!this.watchSource.connected) return { health: false, reason: 'UPSTREAM UNAVAILABLE' };
    return { health: true, reason: '' };
  }

  async status(): Promise<MemberStatus> {
    const s = await this.call(() => this.client.status());
    const header = this.learn(s.header);
    return { ...s, header };
  }

  // --- key-value -----------------------------------------------------------------------

  async range(
    request: RangeRequest,
    options: ReadOptions = {},
  ): Promise<{ header: ResponseHeader; result: RangeResult }> {
    this.assertOpen();
    const serializable = options.serializable === true || request.serializable === true;
    const r = await this.call(() =>
      this.transport.unary('KV.Range', rangeJson({ ...request, serializable }), true),
    );
    const result = rangeResultOf(r);
    const header = this.learnJson(r);
    if (!serializable) await this.watchSource.waitFor(result.revision, this.timeoutMs);
    return { header, result };
  }

  async write(command: Command): Promise<{ header: ResponseHeader; result: CommandResult }> {
    this.assertOpen();
    let c = command;
    const chosenId = c.op === 'leaseGrant' && c.id === 0;
    for (let attempt = 0; ; attempt++) {
      if (chosenId && c.op === 'leaseGrant') c = { ...c, id: randomLeaseId() };
      const call = writeCall(c);
      if (call === undefined)
        throw new EtceteraError('ERR_TIER_NOT_SUPPORTED', { detail: `command ${c.op}` });
      let r: Json;
      try {
        r = await this.call(() => this.transport.unary(call.rpc, call.body));
      } catch (e) {
        // An ID this tier chose that happens to exist: choose another.
        if (chosenId && attempt < 3 && isEtceteraError(e, 'ERR_LEASE_EXIST')) continue;
        throw e;
      }
      const result = commandResultOf(c, r);
      const header = this.learnJson(r);
      if (c.op === 'compact') this.watchSource.observeCompaction(c.revision);
      await this.watchSource.waitFor(result.result.revision, this.timeoutMs);
      return { header, result };
    }
  }

  // --- leases --------------------------------------------------------------------------

  async leaseKeepAlive(id: LeaseId): Promise<{ header: ResponseHeader; id: LeaseId; ttl: number }> {
    this.assertOpen();
    const r = await this.call(() => this.client.leaseKeepAliveOnce(String(id)));
    return { header: this.learn(r.header), id, ttl: r.ttl };
  }

  async leaseTimeToLive(id: LeaseId, keys: boolean) {
    this.assertOpen();
    const r = await this.call(() => this.client.leaseTimeToLive(String(id), { keys }));
    return {
      header: this.learn(r.header),
      lease: { id, ttl: r.ttl, grantedTtl: r.grantedTtl, keys: r.keys },
    };
  }

  async leaseLeases(): Promise<{ header: ResponseHeader; leases: LeaseId[] }> {
    this.assertOpen();
    const r = await this.call(() => this.client.leases());
    return { header: this.learn(r.header), leases: r.leases.map((l) => Number(l) as LeaseId) };
  }

  // --- membership ----------------------------------------------------------------------

  async memberList(): Promise<{ header: ResponseHeader; members: MemberInfo[] }> {
    this.assertOpen();
    const r = await this.call(() => this.client.memberList());
    return { header: this.learn(r.header), members: r.members.map((x) => this.asTier(x)) };
  }

  async memberAdd(peerURLs: string[], isLearner: boolean) {
    this.assertOpen();
    const r = await this.call(() => this.client.memberAdd(peerURLs, { isLearner }));
    return {
      header: this.learn(r.header),
      member: this.asTier(r.member),
      members: r.members.map((x) => this.asTier(x)),
    };
  }

  async memberRemove(id: string): Promise<{ header: ResponseHeader; members: MemberInfo[] }> {
    this.assertOpen();
    const r = await this.call(() => this.client.memberRemove(id));
    return { header: this.learn(r.header), members: r.members.map((x) => this.asTier(x)) };
  }

  async memberPromote(id: string): Promise<{ header: ResponseHeader; members: MemberInfo[] }> {
    this.assertOpen();
    const r = await this.call(() => this.client.memberPromote(id));
    return { header: this.learn(r.header), members: r.members.map((x) => this.asTier(x)) };
  }

  async memberUpdate(
    id: string,
    peerURLs: string[],
  ): Promise<{ header: ResponseHeader; members: MemberInfo[] }> {
    this.assertOpen();
    const r = await this.call(() => this.client.memberUpdate(id, peerURLs));
    return { header: this.learn(r.header), members: r.members.map((x) => this.asTier(x)) };
  }

  /** An upstream member as this tier presents it: its client URLs are the tier's. */
  private asTier(m: ClientMember): MemberInfo {
    const a = this.o.advertiseClientUrls;
    const urls = typeof a === 'function' ? a() : a;
    return { ...m, clientURLs: urls ?? m.clientURLs };
  }

  // --- maintenance ---------------------------------------------------------------------

  private maintenanceApi(): MaintenanceApi {
    return {
      snapshot: () => {
        throw new EtceteraError('ERR_TIER_NOT_SUPPORTED', {
          detail: 'take a snapshot from an upstream member',
        });
      },
      hashKV: async (revision) => {
        const r = await this.call(() => this.client.hashKv(revision));
        const header = this.learn(r.header);
        return {
          header,
          hash: r.hash,
          compactRevision: r.compactRevision,
          revision: header.revision,
        };
      },
      moveLeader: async (targetId) => {
        const header = this.learn(await this.call(() => this.client.moveLeader(targetId)));
        return { header };
      },
      alarm: async (request: AlarmRequest) => {
        if (request.action === 'GET') {
          const r = await this.call(() => this.client.alarmList());
          this.learn(r.header);
          return {
            alarms: r.alarms
              .filter(
                (a) =>
                  a.alarm !== 'NONE' && (request.alarm === 'NONE' || a.alarm === request.alarm),
              )
              .map((a) => ({ memberId: a.memberId, alarm: a.alarm as 'NOSPACE' | 'CORRUPT' })),
          };
        }
        if (request.alarm === 'NONE') return { alarms: [] };
        const { result } = await this.write({
          op: 'alarm',
          action: request.action === 'ACTIVATE' ? 'activate' : 'deactivate',
          memberId: request.memberId,
          alarm: request.alarm,
        });
        return { alarms: result.op === 'alarm' ? result.result.alarms : [] };
      },
      defragment: async () => {
        const header = this.learn(await this.call(() => this.client.defragment()));
        return { header, dbSizeBefore: 0, dbSizeAfter: 0 };
      },
    };
  }

  // --- metrics -------------------------------------------------------------------------

  private registerMetrics(): void {
    const registers = [this.metrics];
    const feed = this.watchSource;
    const cacherWatchers = async (): Promise<number> =>
      (await this.watchCache.metrics.watchers.get()).values[0]?.value ?? 0;
    new Gauge({
      name: 'etcetera_tier_upstream_lag_revisions',
      help: 'Revisions the upstream reported that the tier watch cache has not received yet',
      registers,
      collect() {
        this.set(feed.lagRevisions);
      },
    });
    new Gauge({
      name: 'etcetera_tier_upstream_lag_seconds',
      help: 'How long the tier watch cache has been behind the upstream revision it knows of',
      registers,
      collect() {
        this.set(feed.lagSeconds());
      },
    });
    new Gauge({
      name: 'etcetera_tier_watchers',
      help: 'Watches served by this tier process from its watch cache',
      registers,
      async collect() {
        this.set(await cacherWatchers());
      },
    });
    new Gauge({
      name: 'etcetera_tier_upstream_watches',
      help: 'Watches this tier process holds open on the upstream',
      registers,
      collect() {
        this.set(feed.upstreamWatches);
      },
    });
    new Gauge({
      name: 'etcetera_tier_coalescing_ratio',
      help: 'Watches served per upstream watch (client watches / upstream watches)',
      registers,
      async collect() {
        this.set((await cacherWatchers()) / Math.max(1, feed.upstreamWatches));
      },
    });
    new Gauge({
      name: 'etcetera_tier_upstream_reconnects_total',
      help: 'Reconnections of the upstream watch (failovers included)',
      registers,
      collect() {
        this.set(feed.reconnects);
      },
    });
    const endpoints = this.transport.endpoints.map((e) => e.target);
    new Gauge({
      name: 'etcetera_tier_upstream_endpoint',
      help: 'The upstream endpoint in use (1) and the others (0)',
      labelNames: ['endpoint'],
      registers,
      collect() {
        const inUse = feed.endpoint;
        for (const e of endpoints) this.set({ endpoint: e }, e === inUse ? 1 : 0);
      },
    });
  }

  // --- helpers -------------------------------------------------------------------------

  /** Runs an upstream call; its failure becomes a catalogue error. */
  private async call<T>(f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (e) {
      throw upstreamError(e);
    }
  }

  /** Takes what an upstream header tells (cluster, member, term, revision) and converts it. */
  private learn(h: ClientHeader): ResponseHeader {
    if (h.clusterId !== '0') this.clusterId = h.clusterId;
    if (h.memberId !== '0') this.memberId = h.memberId;
    if (h.raftTerm > 0) this.raftTerm = h.raftTerm;
    if (h.revision > 0) this.watchSource.observe(h.revision);
    return { ...h, revision: h.revision as Revision };
  }

  private learnJson(r: Json): ResponseHeader {
    const h = (r.header ?? {}) as Json;
    return this.learn({
      clusterId: String(h.cluster_id ?? '0'),
      memberId: String(h.member_id ?? '0'),
      revision: headerRevision(r),
      raftTerm: Number(h.raft_term ?? 0),
    });
  }

  private assertOpen(): void {
    if (this.closed) throw new EtceteraError('ERR_CLOSED');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.watchSource.close();
    (this.watchCache as Cacher | undefined)?.close();
    this.client.close();
  }
}

/** A lease ID below 2^53 (the member contract's bound), never 0. */
function randomLeaseId(): number {
  return 1 + Math.floor(Math.random() * (MAX_SAFE_ID - 1));
}
