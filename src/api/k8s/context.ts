/**
 * What every handler of the Kubernetes face works with: the server-wide parts (member,
 * registry, hub, storage, admission, options) and the parts of one request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Admission } from '../../k8s/admission.js';
import {
  type PatchKind,
  validateCreateOptions,
  validatePatchOptions,
  validateUpdateOptions,
} from '../../k8s/options.js';
import type { UserInfo } from '../../k8s/rbac.js';
import type { KindRegistry } from '../../k8s/registry.js';
import { DEFAULT_SERVICE_CLUSTER_IP_RANGE } from '../../k8s/service-ips.js';
import { badRequest } from '../../k8s/status.js';
import type { ResourceInfo } from '../../k8s/types.js';
import type { MemberApi } from '../../server/types.js';
import type { Cacher } from '../../watchcache/index.js';
import { DEFAULT_READ_BODY_TIMEOUT_MS } from '../body.js';
import type { AuditSink } from './audit.js';
import type { Authenticate, AuthenticationOptions } from './auth.js';
import { AuthorizationMode, type Authorizer } from './authz.js';
import { managerOf } from './field-manager.js';
import type { ResourcePath } from './paths.js';
import type { ObjectStorage } from './storage.js';
import type { KubeHub } from './watch/hub.js';
import type { KindHooks } from './write.js';

export interface KubeOptions {
  /** Bytes of a request body; default the member's maxRequestBytes. */
  maxBodyBytes?: number;
  /** How long a request body may take to arrive (--read-body-timeout). Default 60 s. */
  readBodyTimeoutMs?: number;
  /** The version /version reports. Default v1.32.0. */
  gitVersion?: string;
  /** Extra fields merged into /version (the etcd face's etcdserver/etcdcluster). */
  versionExtra?: Record<string, string>;
  /** Write a newline to quiet watch streams this often. Default 15 s. */
  keepaliveMs?: number;
  /** Bookmark interval for watches that allow them. Default 60 s. */
  bookmarkIntervalMs?: number;
  /** Longest wait of a list or watch for the cache to reach a revision. Default 3 s. */
  freshTimeoutMs?: number;
  /** Server-side watch timeout when the client gives none: random in [min, 2×min). Default 30 min. */
  minWatchTimeoutMs?: number;
  /**
   * A watch stops taking events while its peer has this many bytes unread; they wait in the
   * watch cache's bounded queue, whose slow-watcher policy then ends the watch (its client
   * resumes). Default 8 MiB.
   */
  watchMaxBufferedBytes?: number;
  /** Create the default namespaces (default, kube-system, kube-public, kube-node-lease). Default true. */
  createDefaultNamespaces?: boolean;
  /** Time source (ms). */
  now?: () => number;
  /** Deleting a bound, unfinished Pod waits for its kubelet (see delete.ts). Default false. */
  gracefulPodDeletion?: boolean;
  /** Service clusterIPs come from this IPv4 range (see service-ips.ts). Default 10.96.0.0/12. */
  serviceClusterIpRange?: string;

  /** The member's watch cache to build on; one is made over member.watchSource if absent. */
  cacher?: Cacher;

  /** Who a request is (auth.ts). Default: nobody has credentials, everyone is anonymous. */
  authentication?: AuthenticationOptions;
  /** `--authorization-mode`: AlwaysAllow (default) or RBAC (authz.ts). */
  authorizationMode?: AuthorizationMode;
  /** Where the audit log goes (audit.ts); none by default. */
  audit?: AuditSink;
}

export type ResolvedKubeOptions = Required<
  Omit<KubeOptions, 'versionExtra' | 'cacher' | 'authentication' | 'audit'>
> & {
  versionExtra: Record<string, string>;
};

export function resolveKubeOptions(o: KubeOptions, member: MemberApi): ResolvedKubeOptions {
  return {
    maxBodyBytes: o.maxBodyBytes ?? member.maxRequestBytes,
    readBodyTimeoutMs: o.readBodyTimeoutMs ?? DEFAULT_READ_BODY_TIMEOUT_MS,
    gitVersion: o.gitVersion ?? 'v1.32.0',
    versionExtra: o.versionExtra ?? {},
    keepaliveMs: o.keepaliveMs ?? 15_000,
    bookmarkIntervalMs: o.bookmarkIntervalMs ?? 60_000,
    freshTimeoutMs: o.freshTimeoutMs ?? 3_000,
    minWatchTimeoutMs: o.minWatchTimeoutMs ?? 30 * 60_000,
    watchMaxBufferedBytes: o.watchMaxBufferedBytes ?? 8 * 1024 * 1024,
    createDefaultNamespaces: o.createDefaultNamespaces ?? true,
    now: o.now ?? Date.now,
    gracefulPodDeletion: o.gracefulPodDeletion ?? false,
    authorizationMode: o.authorizationMode ?? AuthorizationMode.AlwaysAllow,
    serviceClusterIpRange: o.serviceClusterIpRange ?? DEFAULT_SERVICE_CLUSTER_IP_RANGE,
  };
}

export interface Kube {
  readonly member: MemberApi;
  readonly registry: KindRegistry;
  readonly hub: KubeHub;
  /** The member's watch cache (src/watchcache). */
  readonly cacher: Cacher;
  readonly storage: ObjectStorage;
  readonly admission: Admission;
  readonly options: ResolvedKubeOptions;
  /** Kind-specific write steps, by `group/resource` (CRDs). */
  readonly hooks: ReadonlyMap<string, KindHooks>;
  /** The request's user, or a 401 (auth.ts). */
  readonly authenticate: Authenticate;
  /** The decision of --authorization-mode on one request (authz.ts). */
  readonly authorize: Authorizer;
  readonly audit: AuditSink | undefined;
}

/** One request to a resource path. */
export interface ResourceRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly query: URLSearchParams;
  readonly path: ResourcePath;
  readonly info: ResourceInfo;
  /** Texts for Warning headers. */
  readonly warnings: string[];
  /** Who asks (auth.ts). */
  readonly user: UserInfo;
}

export const DryRun = { none: false, all: true } as const;

/** `dryRun=All` (the only value Kubernetes accepts); anything else is 400. */
export function parseDryRun(query: URLSearchParams): boolean {
  const values = query.getAll('dryRun');
  if (values.length === 0) return false;
  for (const v of values) {
    if (v !== 'All') throw badRequest(`Invalid dry run value: ${v}. Valid values are: All`);
  }
  return true;
}

export const FieldValidation = { Ignore: 'Ignore', Warn: 'Warn', Strict: 'Strict' } as const;
export type FieldValidation = (typeof FieldValidation)[keyof typeof FieldValidation];

export function parseFieldValidation(query: URLSearchParams): FieldValidation {
  const v = query.get('fieldValidation');
  if (v === null || v === '') return 'Warn';
  if (v === 'Ignore' || v === 'Warn' || v === 'Strict') return v;
  throw badRequest('fieldValidation parameter must be one of: Ignore, Warn, Strict');
}

/** What a write request asks for beyond its body, checked as Kubernetes checks it (422). */
export interface WriteParams {
  dryRun: boolean;
  fieldValidation: FieldValidation;
  manager: string;
  force: boolean;
}

export function writeParams(
  rr: ResourceRequest,
  verb: 'create' | 'update' | PatchKind,
): WriteParams {
  const q = rr.query;
  const o = {
    fieldManager: q.get('fieldManager') ?? undefined,
    force: q.get('force') ?? undefined,
    dryRun: q.getAll('dryRun'),
    fieldValidation: q.get('fieldValidation') ?? undefined,
  };
  if (verb === 'create') validateCreateOptions(o);
  else if (verb === 'update') validateUpdateOptions(o);
  else validatePatchOptions(verb, o);
  return {
    dryRun: parseDryRun(q),
    fieldValidation: parseFieldValidation(q),
    manager: managerOf(rr.req, q),
    force: o.force === 'true' || o.force === '1',
  };
}
