/**
 * What the client needs from a transport, whichever protocol carries it: unary calls named
 * by etcd's gRPC service and method, a watch carrier, a lease keep-alive, a snapshot stream.
 *
 * Both transports exchange the same message shapes: etcd's proto field names, 64-bit
 * integers as decimal strings, bytes as base64, enums by name, zero values left out. That is
 * what etcd's JSON gateway sends, and what the gRPC transport's codec is set up to produce
 * (src/client/grpc-transport.ts), so the codec (codec.ts) serves both.
 */
import type { Json } from './transport.js';

/** The unary RPCs the client calls, with the JSON gateway's path of each. */
export const UNARY_PATHS = {
  'KV.Range': '/v3/kv/range',
  'KV.Put': '/v3/kv/put',
  'KV.DeleteRange': '/v3/kv/deleterange',
  'KV.Txn': '/v3/kv/txn',
  'KV.Compact': '/v3/kv/compaction',
  'Lease.LeaseGrant': '/v3/lease/grant',
  'Lease.LeaseRevoke': '/v3/lease/revoke',
  'Lease.LeaseTimeToLive': '/v3/lease/timetolive',
  'Lease.LeaseLeases': '/v3/lease/leases',
  'Cluster.MemberAdd': '/v3/cluster/member/add',
  'Cluster.MemberRemove': '/v3/cluster/member/remove',
  'Cluster.MemberList': '/v3/cluster/member/list',
  'Cluster.MemberPromote': '/v3/cluster/member/promote',
  'Cluster.MemberUpdate': '/v3/cluster/member/update',
  'Maintenance.Status': '/v3/maintenance/status',
  'Maintenance.Alarm': '/v3/maintenance/alarm',
  'Maintenance.Defragment': '/v3/maintenance/defragment',
  'Maintenance.HashKV': '/v3/maintenance/hash',
  'Maintenance.MoveLeader': '/v3/maintenance/transfer-leadership',
} as const;
export type UnaryRpc = keyof typeof UNARY_PATHS;

/** Where a watch's messages go; the carrier calls these for one connection attempt. */
export interface WatchSink {
  /** One WatchResponse (the gateway's `result`); false: stop reading this attempt. */
  message(r: Json): boolean;
  /** The attempt's connection is gone, or the server ended it with a retryable status. */
  lost(cause: unknown): void;
  /** The server refused the watch itself: it must not be retried. */
  refused(err: Error): void;
}

/** Carries watches: `open` sends one create request; the returned function cancels it. */
export interface WatchCarrier {
  open(create: Json, sink: WatchSink): () => void;
}

export interface Wire {
  readonly protocol: 'grpc' | 'json';
  unary(rpc: UnaryRpc, body: Json, read?: boolean): Promise<Json>;
  /** One lease renewal: the LeaseKeepAliveResponse. */
  keepAliveOnce(id: string): Promise<Json>;
  /** The member's snapshot, chunk by chunk, as it streams. */
  snapshot(): AsyncIterable<Uint8Array>;
  readonly watches: WatchCarrier;
  /** Moves to the next endpoint. */
  failover(): void;
  close(): void;
}
