/**
 * A typed client for etcd's v3 JSON API, served by etcetera and by etcd itself.
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
import { LeaseKeeper, type LeaseKeeperOptions } from './lease-keeper.js';
import { type Json, Transport, type TransportOptions } from './transport.js';
import type {
  DeleteOptions,
  DeleteResponse,
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

export type ClientOptions = TransportOptions;

export class Client {
  readonly transport: Transport;

  constructor(options: ClientOptions) {
    this.transport = new Transport(options);
  }

  // --- KV -------------------------------------------------------------------------------

  /** The key (or, with a selector, the keys) as `options` describe. */
  async get(key: KeyLike, options: RangeOptions = {}): Promise<RangeResponse> {
    const r = await this.transport.post('/v3/kv/range', encodeRange(key, options), true);
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
    const r = await this.transport.post('/v3/kv/put', encodePut(key, value, options));
    const out: PutResponse = { header: decodeHeader(r.header) };
    return r.prev_kv ? { ...out, prevKv: decodeKv(r.prev_kv) } : out;
  }

  async delete(key: KeyLike, options: DeleteOptions = {}): Promise<DeleteResponse> {
    const r = await this.transport.post('/v3/kv/deleterange', encodeDelete(key, options));
    return { header: decodeHeader(r.header), deleted: num(r.deleted), prevKvs: kvList(r.prev_kvs) };
  }

  async txn(request: TxnRequest): Promise<TxnResponse> {
    const r = await this.transport.post('/v3/kv/txn', encodeTxn(request));
    return {
      header: decodeHeader(r.header),
      succeeded: r.succeeded === true,
      responses: ((r.responses as unknown[] | undefined) ?? []).map(decodeOpResponse),
    };
  }

  async compact(revision: number, options: { physical?: boolean } = {}): Promise<ResponseHeader> {
    const r = await this.transport.post('/v3/kv/compaction', {
      revision,
      physical: options.physical,
    });
    return decodeHeader(r.header);
  }

  // --- leases ---------------------------------------------------------------------------

  /** Grants a lease of `ttl` seconds; `leaseId` 0 or absent lets the server choose. */
  async leaseGrant(ttl: number, leaseId?: LeaseIdLike): Promise<LeaseGrantResponse> {
    const r = await this.transport.post('/v3/lease/grant', { TTL: ttl, ID: leaseText(leaseId) });
    return { header: decodeHeader(r.header), id: id(r.ID), ttl: num(r.TTL) };
  }

  async leaseRevoke(leaseId: LeaseIdLike): Promise<ResponseHeader> {
    const r = await this.transport.post('/v3/lease/revoke', { ID: leaseText(leaseId) });
    return decodeHeader(r.header);
  }

  /** One renewal. TTL 0 in the answer means the lease is gone. */
  async leaseKeepAliveOnce(leaseId: LeaseIdLike): Promise<LeaseKeepAliveResponse> {
    const r = await this.transport.post('/v3/lease/keepalive', { ID: leaseText(leaseId) });
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
    const r = await this.transport.post('/v3/lease/timetolive', body, true);
    return {
      header: decodeHeader(r.header),
      id: id(r.ID),
      ttl: num(r.TTL),
      grantedTtl: num(r.grantedTTL),
      keys: ((r.keys as unknown[] | undefined) ?? []).map(fromB64),
    };
  }

  async leases(): Promise<{ header: ResponseHeader; leases: string[] }> {
    const r = await this.transport.post('/v3/lease/leases', {}, true);
    const leases = ((r.leases as Json[] | undefined) ?? []).map((l) => id(l.ID));
    return { header: decodeHeader(r.header), leases };
  }

  // --- cluster and maintenance -----------------------------------------------------------

  async memberList(): Promise<MemberListResponse> {
    const r = await this.transport.post('/v3/cluster/member/list', {}, true);
    return { header: decodeHeader(r.header), members: members(r) };
  }

  async memberAdd(
    peerURLs: string[],
    options: { isLearner?: boolean } = {},
  ): Promise<MemberListResponse & { member: Member }> {
    const body = { peerURLs, isLearner: options.isLearner };
    const r = await this.transport.post('/v3/cluster/member/add', body);
    return { header: decodeHeader(r.header), member: decodeMember(r.member), members: members(r) };
  }

  async memberRemove(memberId: string): Promise<MemberListResponse> {
    const r = await this.transport.post('/v3/cluster/member/remove', { ID: memberId });
    return { header: decodeHeader(r.header), members: members(r) };
  }

  async memberPromote(memberId: string): Promise<MemberListResponse> {
    const r = await this.transport.post('/v3/cluster/member/promote', { ID: memberId });
    return { header: decodeHeader(r.header), members: members(r) };
  }

  async status(): Promise<StatusResponse> {
    const r = await this.transport.post('/v3/maintenance/status', {}, true);
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
    return new Watch(this.transport, key, options, { ...handlers, onBatch });
  }

  /** Closes kept-alive connections. Open watches should be closed first. */
  close(): void {
    this.transport.close();
  }
}

function members(r: Json): Member[] {
  return ((r.members as unknown[] | undefined) ?? []).map(decodeMember);
}
