/**
 * etcd's gRPC methods as grpc-js method definitions, built once from the shared protocol in
 * src/wire/proto. `json` converts messages to and from the JSON gateway's shapes (etcd's
 * field names, 64-bit integers as decimal strings, bytes as base64, enums by name, zero
 * values left out; see wire.ts); `raw` keeps bytes as bytes, for the snapshot stream.
 */
import type { MethodDefinition } from '@grpc/grpc-js';
import type protobuf from 'protobufjs';
import { etcdProto, type MethodInfo } from '../wire/proto/index.js';
import type { Json } from './transport.js';
import type { UnaryRpc } from './wire.js';

type Method = MethodDefinition<Json, Json>;

export interface EtcdMethods {
  json: Record<UnaryRpc | 'Watch.Watch' | 'Lease.LeaseKeepAlive', Method>;
  raw: { snapshot: MethodDefinition<Json, { blob?: Uint8Array }> };
}

const JSON_SHAPES: protobuf.IConversionOptions = {
  longs: String,
  enums: String,
  bytes: String,
  defaults: false,
};
const RAW_SHAPES: protobuf.IConversionOptions = { longs: String, enums: String, defaults: false };

function definition<T>(
  m: MethodInfo,
  shapes: protobuf.IConversionOptions,
): MethodDefinition<Json, T> {
  const req = m.requestType;
  const res = m.responseType;
  return {
    path: m.path,
    requestStream: m.requestStream,
    responseStream: m.responseStream,
    requestSerialize: (v: Json) => Buffer.from(req.encode(req.fromObject(v)).finish()),
    requestDeserialize: (b: Buffer) => req.toObject(req.decode(b), shapes) as Json,
    responseSerialize: (v: T) =>
      Buffer.from(res.encode(res.fromObject(v as Record<string, unknown>)).finish()),
    responseDeserialize: (b: Buffer) => res.toObject(res.decode(b), shapes) as T,
  };
}

let built: EtcdMethods | undefined;

export function etcdMethods(): EtcdMethods {
  if (built) return built;
  const json: Record<string, Method> = {};
  let snapshot: EtcdMethods['raw']['snapshot'] | undefined;
  for (const m of etcdProto().methods.values()) {
    json[`${m.service}.${m.name}`] = definition<Json>(m, JSON_SHAPES);
    if (m.service === 'Maintenance' && m.name === 'Snapshot')
      snapshot = definition<{ blob?: Uint8Array }>(m, RAW_SHAPES);
  }
  if (snapshot === undefined) throw new Error('etcd proto has no Maintenance.Snapshot');
  built = { json: json as EtcdMethods['json'], raw: { snapshot } };
  return built;
}
