/**
 * etcd's v3 gRPC wire shapes: the .proto files beside this module (etcdserverpb/rpc.proto,
 * mvccpb/kv.proto, authpb/auth.proto, and leasepb/lease.proto for the lease records of etcd's
 * snapshots) and a loader for them. Shared by etcetera's gRPC server
 * (src/api/grpc) and its gRPC client, so this folder imports nothing of src/server or src/api.
 *
 * `etcdProto()` parses the files once (protobufjs, reflection; no code generation) and
 * returns the message types and the services' method table. `PROTO_DIR` and `PROTO_FILES`
 * let @grpc/proto-loader (or any other protobuf tool) load the very same files.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

/** Where the .proto files are: next to this module (`npm run build` copies them to dist/). */
export const PROTO_DIR: string = dirname(fileURLToPath(import.meta.url));

/** The files, relative to PROTO_DIR (rpc.proto imports the two others by these names). */
export const PROTO_FILES = [
  'etcdserverpb/rpc.proto',
  'mvccpb/kv.proto',
  'authpb/auth.proto',
  'leasepb/lease.proto',
] as const;

/** The etcd services, as gRPC names them (`/<package>.<service>/<method>`). */
export const ETCD_SERVICES = ['KV', 'Watch', 'Lease', 'Cluster', 'Maintenance', 'Auth'] as const;
export type EtcdServiceName = (typeof ETCD_SERVICES)[number];

export interface MethodInfo {
  /** `/etcdserverpb.KV/Range` */
  readonly path: string;
  readonly service: EtcdServiceName;
  readonly name: string;
  readonly requestType: protobuf.Type;
  readonly responseType: protobuf.Type;
  readonly requestStream: boolean;
  readonly responseStream: boolean;
}

export interface EtcdProto {
  readonly root: protobuf.Root;
  /** A message type by its full name, e.g. `etcdserverpb.RangeRequest`, `mvccpb.KeyValue`. */
  type(fullName: string): protobuf.Type;
  /** An enum by its full name, e.g. `etcdserverpb.AlarmType`. */
  enumOf(fullName: string): protobuf.Enum;
  /** Every method of every etcd service, by gRPC path. */
  readonly methods: ReadonlyMap<string, MethodInfo>;
}

/**
 * The message nesting protobufjs decodes and encodes. Its default (protoc's 100) stops at a
 * txn nested about 50 deep (each level is a TxnRequest and a RequestOp), while etcd accepts
 * any depth its --max-txn-ops budget allows (127 levels, 256 messages with the innermost
 * request and its answer); deeper messages are still refused, before any recursion runs deep.
 */
export const PROTO_NESTING_LIMIT = 300;

let cached: EtcdProto | undefined;

/** The parsed etcd protocol (parsed on first use, then shared). */
export function etcdProto(): EtcdProto {
  if (cached === undefined) cached = load();
  return cached;
}

/** `/etcdserverpb.<service>/<method>` */
export function grpcPath(service: EtcdServiceName, method: string): string {
  return `/etcdserverpb.${service}/${method}`;
}

/**
 * An int64/uint64 field as protobufjs decodes it (a number, or a Long when the `long` package
 * is present) → a JavaScript number. Values beyond 2^53 lose precision: etcetera's revisions,
 * lease and member IDs all stay below it.
 */
export function int64ToNumber(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'string') return Number(value);
  if (value !== null && typeof value === 'object' && 'toNumber' in value) {
    return (value as { toNumber(): number }).toNumber();
  }
  return 0;
}

/** A uint64 field → its decimal string (exact, whatever its size), as etcd's JSON prints it. */
export function uint64ToString(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return value;
  if (value !== null && typeof value === 'object' && 'toString' in value) {
    const v = value as { toString(radix?: number): string; unsigned?: boolean };
    return v.toString(10);
  }
  return '0';
}

function load(): EtcdProto {
  const limits = [protobuf.util, protobuf.Reader] as unknown as Array<{ recursionLimit: number }>;
  for (const l of limits) l.recursionLimit = Math.max(l.recursionLimit ?? 0, PROTO_NESTING_LIMIT);
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(PROTO_DIR, target);
  root.loadSync(PROTO_FILES.slice(), { keepCase: true });
  root.resolveAll();
  const methods = new Map<string, MethodInfo>();
  for (const service of ETCD_SERVICES) {
    const svc = root.lookupService(`etcdserverpb.${service}`);
    for (const m of svc.methodsArray) {
      m.resolve();
      methods.set(grpcPath(service, m.name), {
        path: grpcPath(service, m.name),
        service,
        name: m.name,
        requestType: m.resolvedRequestType!,
        responseType: m.resolvedResponseType!,
        requestStream: m.requestStream === true,
        responseStream: m.responseStream === true,
      });
    }
  }
  return {
    root,
    type: (fullName) => root.lookupType(fullName),
    enumOf: (fullName) => root.lookupEnum(fullName),
    methods,
  };
}
