/**
 * A typed client for etcd's v3 API, served by etcetera and by etcd itself: over gRPC by
 * default (grpc-transport.ts), or over the JSON gateway (`transport: 'json'`).
 *
 *   const client = new Client({ endpoints: ['http://127.0.0.1:2379'] });
 *   await client.put('greeting', 'hello');
 *   const { kvs } = await client.get('greeting');
 *   const watch = client.watch('greeting', { prefix: true }, (batch) => console.log(batch));
 *   await watch.close();
 *   client.close();
 *
 * Every method answers with the server's response header and decoded fields, or rejects
 * with a ClientError (src/client/errors.ts).
 */
import {
  decodeHeader,
  decodeKv,
  decodeMember,
  decodeOpResponse,
  encodeDelete,
  encodePut,
  encodeRange,
  encodeTxn,
  fromB64,
  id,
  kvList,
  leaseText,
  num,
} from './codec.js';
import { GrpcTransport } from './grpc-transport.js';
import { JsonWire } from './json-wire.js';
import { LeaseKeeper, type LeaseKeeperOptions } from './lease-keeper.js';
import { type Json, Transport, type TransportOptions } from './transport.js';
import type {
  AlarmMember,
  AlarmResponse,
  DeleteOptions,
  DeleteResponse,
  HashKvResponse,
  KeyLike,
  LeaseGrantResponse,
  LeaseIdLike,
  LeaseKeepAliveResponse,
  LeaseTimeToLiveResponse,
  Member,
  MemberListResponse,
  PutOptions,
  PutResponse,
  RangeOptions,
  RangeResponse,
  ResponseHeader,
  StatusResponse,
  TxnRequest,
  TxnResponse,
  WatchBatch,
  WatchOptions,
} from './types.js';
import { Watch, type WatchHandlers } from './watch.js';
import type { Wire } from './wire.js';

export type Protocol = 'grpc' | 'json';

export interface ClientOptions extends TransportOptions {
  /** gRPC (default) or etcd's JSON gateway. /health and /version are HTTP either way. */
  transport?: Protocol;
}

export class Client {
  /** HTTP/1.1 to the endpoints: the JSON API's transport, and /health and /version. */
  readonly transport: Transport;
  /** What carries the calls: gRPC, or the JSON API over `transport`. */
  readonly wire: Wire;

  constructor(options: ClientOptions) {
    const protocol = options.transport ?? 'grpc';
    if (protocol !== 'grpc' && protocol !== 'json')
      throw new TypeError(`unknown transport ${JSON.stringify(protocol)} (grpc or json)`);
    this.transport = new Transport(options);
    this.wire = protocol === 'grpc' ? new GrpcTransport(options) : new JsonWire(this.transport);
  }

  get protocol(): Protocol {
    return this.wire.protocol;
  }

  // --- KV -------------------------------------------------------------------------------

  /** The key (or, with a selector, the keys) as `options` describe. */
  async get(key: KeyLike, options: RangeOptions = {}): Promise<RangeResponse> {
    const r = await this.wire.unary('KV.Range', encodeRange(key, options), true);
    return {
      header: decodeHeader(r.header),
      kvs: kvList(r.kvs),
      more: r.more === true,
      count: num(r.count),
    };
  }

  /** Same as get; the name etcd uses. */
  range(key: KeyLike, options: RangeOptions = {}): Promise<RangeResponse> {
    return this.get(key, options);
  }

  async put(key: KeyLike, value: KeyLike, options: PutOptions = {}): Promise<PutResponse> {
    const r = await this.wire.unary('KV.Put', encodePut(key, value, options));
    const out: PutResponse = { header: decodeHeader(r.header) };
    return r.prev_kv ? { ...out, prevKv: decodeKv(r.prev_kv) } : out;
  }

  async delete(key: KeyLike, options: DeleteOptions = {}): Promise<DeleteResponse> {
    const r = await this.wire.unary('KV.DeleteRange', encodeDelete(key, options));
    return { header: decodeHeader(r.header), deleted: num(r.deleted), prevKvs: kvList(r.prev_kvs) };
  }

  async txn(request: TxnRequest): Promise<TxnResponse> {
    const r = await this.wire.unary('KV.Txn', encodeTxn(request));
    return {
      header: decodeHeader(r.header),
      succeeded: r.succeeded === true,
      responses: ((r.responses as unknown[] | undefined) ?? []).map(decodeOpResponse),
    };
  }

  async compact(revision: number, options: { physical?: boolean } = {}): Promise<ResponseHeader> {
    const r = await this.wire.unary('KV.Compact', {
      revision,
      physical: options.physical,
    });
    return decodeHeader(r.header);
  }

  // --- leases ---------------------------------------------------------------------------

  /** Grants a lease of `ttl` seconds; `leaseId` 0 or absent lets the server choose. */
  async leaseGrant(ttl: number, leaseId?: LeaseIdLike): Promise<LeaseGrantResponse> {
    const r = await this.wire.unary('Lease.LeaseGrant', { TTL: ttl, ID: leaseText(leaseId) });
    return { header: decodeHeader(r.header), id: id(r.ID), ttl: num(r.TTL) };
  }

  async leaseRevoke(leaseId: LeaseIdLike): Promise<ResponseHeader> {
    const r = await this.wire.unary('Lease.LeaseRevoke', { ID: leaseText(leaseId) });
    return decodeHeader(r.header);
  }

  /** One renewal. TTL 0 in the answer means the lease is gone. */
  async leaseKeepAliveOnce(leaseId: LeaseIdLike): Promise<LeaseKeepAliveResponse> {
    const r = await this.wire.keepAliveOnce(leaseText(leaseId) ?? '0');
    return { header: decodeHeader(r.header), id: id(r.ID ?? leaseText(leaseId)), ttl: num(r.TTL) };
  }

  /** Keeps a lease alive until stopped (renewing at a third of its TTL, as etcd's client). */
  leaseKeepAlive(leaseId: LeaseIdLike, options: LeaseKeeperOptions = {}): LeaseKeeper {
    return new LeaseKeeper(this, String(leaseId), options);
  }

  async leaseTimeToLive(
    leaseId: LeaseIdLike,
    options: { keys?: boolean } = {},
  ): Promise<LeaseTimeToLiveResponse> {
    const body = { ID: leaseText(leaseId), keys: options.keys };
    const r = await this.wire.unary('Lease.LeaseTimeToLive', body, true);
    return {
      header: decodeHeader(r.header),
      id: id(r.ID),
      ttl: num(r.TTL),
      grantedTtl: num(r.grantedTTL),
      keys: ((r.keys as unknown[] | undefined) ?? []).map(fromB64),
    };
  }

  async leases(): Promise<{ header: ResponseHeader; leases: string[] }> {
    const r = await this.wire.unary('Lease.LeaseLeases', {}, true);
    const leases = ((r.leases as Json[] | undefined) ?? []).map((l) => id(l.ID));
    return { header: decodeHeader(r.header), leases };
  }

  // --- cluster and maintenance -----------------------------------------------------------

  async memberList(): Promise<MemberListResponse> {
    const r = await this.wire.unary('Cluster.MemberList', {}, true);
    return { header: decodeHeader(r.header), members: members(r) };
  }

  async memberAdd(
    peerURLs: string[],
    options: { isLearner?: boolean } = {},
  ): Promise<MemberListResponse & { member: Member }> {
    const body = { peerURLs, isLearner: options.isLearner };
    const r = await this.wire.unary('Cluster.MemberAdd', body);
    return { header: decodeHeader(r.header), member: decodeMember(r.member), members: members(r) };
  }

  async memberRemove(memberId: string): Promise<MemberListResponse> {
    const r = await this.wire.unary('Cluster.MemberRemove', { ID: memberId });
    return { header: decodeHeader(r.header), members: members(r) };
  }

  async memberPromote(memberId: string): Promise<MemberListResponse> {
    const r = await this.wire.unary('Cluster.MemberPromote', { ID: memberId });
    return { header: decodeHeader(r.header), members: members(r) };
  }

  /** Replaces a member's peer URLs (etcd's MemberUpdate); answers the new member list. */
  async memberUpdate(memberId: string, peerURLs: string[]): Promise<MemberListResponse> {
    const r = await this.wire.unary('Cluster.MemberUpdate', { ID: memberId, peerURLs });
    return { header: decodeHeader(r.header), members: members(r) };
  }

  async status(): Promise<StatusResponse> {
    const r = await this.wire.unary('Maintenance.Status', {}, true);
    return {
      header: decodeHeader(r.header),
      version: (r.version as string | undefined) ?? '',
      dbSize: num(r.dbSize),
      dbSizeInUse: num(r.dbSizeInUse),
      leader: id(r.leader),
      raftIndex: num(r.raftIndex),
      raftTerm: num(r.raftTerm),
      raftAppliedIndex: num(r.raftAppliedIndex),
      errors: (r.errors as string[] | undefined) ?? [],
      isLearner: r.isLearner === true,
    };
  }

  /** Alarms raised (NOSPACE, CORRUPT) on any member. */
  async alarmList(): Promise<AlarmResponse> {
    return alarms(await this.wire.unary('Maintenance.Alarm', { action: 'GET' }, true));
  }

  /** Clears the alarms given (default: every raised alarm); answers with those cleared. */
  async alarmDisarm(which?: AlarmMember[]): Promise<AlarmResponse> {
    const list = await this.alarmList();
    const out: AlarmResponse = { header: list.header, alarms: [] };

    for (const a of which ?? list.alarms) {
      const body = { action: 'DEACTIVATE', memberID: a.memberId, alarm: a.alarm };
      const r = alarms(await this.wire.unary('Maintenance.Alarm', body));
      out.header = r.header;
      out.alarms.push(...r.alarms);
    }
    return out;
  }

  /** Defragments the member this client talks to now. */
  async defragment(): Promise<ResponseHeader> {
    return decodeHeader((await this.wire.unary('Maintenance.Defragment', {})).header);
  }

  /** The hash of the member's keyspace up to `revision` (0: the current revision). */
  async hashKv(revision = 0): Promise<HashKvResponse> {
    const r = await this.wire.unary('Maintenance.HashKV', { revision }, true);
    return {
      header: decodeHeader(r.header),
      hash: num(r.hash),
      compactRevision: num(r.compact_revision),
    };
  }

  /** Asks the leader (this client's endpoint must be it) to hand leadership to `targetId`. */
  async moveLeader(targetId: string): Promise<ResponseHeader> {
    const r = await this.wire.unary('Maintenance.MoveLeader', { targetID: targetId });
    return decodeHeader(r.header);
  }

  /** The member's snapshot (its database and, from etcd, a SHA-256 trailer), as it streams. */
  snapshot(): AsyncIterable<Uint8Array> {
    return this.wire.snapshot();
  }

  /** GET /health of the current endpoint. */
  async health(): Promise<{ health: boolean; reason: string }> {
    const { body } = await this.transport.get('/health');
    return {
      health: body.health === 'true' || body.health === true,
      reason: String(body.reason ?? ''),
    };
  }

  async version(): Promise<{ etcdserver: string; etcdcluster: string }> {
    const { body } = await this.transport.get('/version');
    return {
      etcdserver: String(body.etcdserver ?? ''),
      etcdcluster: String(body.etcdcluster ?? ''),
    };
  }

  // --- watch ----------------------------------------------------------------------------

  /**
   * Watches a key or range. `onBatch` gets every revision's events once, in order; on a
   * lost connection the watch resumes from the revision after the last one delivered.
   */
  watch(
    key: KeyLike,
    options: WatchOptions,
    onBatch: (batch: WatchBatch) => void,
    handlers: Omit<WatchHandlers, 'onBatch'> = {},
  ): Watch {
    return new Watch(this.wire.watches, key, options, { ...handlers, onBatch });
  }

  /** Closes kept-alive connections. Open watches should be closed first. */
  close(): void {
    this.wire.close();
    this.transport.close();
  }
}

function alarms(r: Json): AlarmResponse {
  const list = (r.alarms as Json[] | undefined) ?? [];
  return {
    header: decodeHeader(r.header),
    alarms: list.map((a) => ({
      memberId: id(a.memberID),
      alarm: (a.alarm as AlarmMember['alarm'] | undefined) ?? 'NONE',
    })),
  };
}

function members(r: Json): Member[] {
  return ((r.members as unknown[] | undefined) ?? []).map(decodeMember);
}
