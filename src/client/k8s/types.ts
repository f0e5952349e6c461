/**
 * The vocabulary of the Kubernetes client: objects, lists, watch events, Status, and the
 * reference to a resource (group, version, plural, scope) every request is built from.
 * Objects are plain JSON; the client never needs their kind-specific fields.
 */
import type {
  ListMeta,
  Status,
  StatusCause,
  ObjectMeta as WireObjectMeta,
} from '../../wire/k8s.js';

/** metav1.ObjectMeta (src/wire/k8s.ts), open to fields this client does not know. */
export interface ObjectMeta extends WireObjectMeta {
  [field: string]: unknown;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export type { ListMeta, Status, StatusCause };

export interface KubeList<T extends KubeObject = KubeObject> {
  apiVersion?: string;
  kind?: string;
  metadata: ListMeta;
  items: T[];
}

export const WatchEventType = {
  Added: 'ADDED',
  Modified: 'MODIFIED',
  Deleted: 'DELETED',
  Bookmark: 'BOOKMARK',
  Error: 'ERROR',
} as const;
export type WatchEventType = (typeof WatchEventType)[keyof typeof WatchEventType];

/** One event of a watch stream. A BOOKMARK's object carries only metadata.resourceVersion. */
export type WatchEvent<T extends KubeObject = KubeObject> =
  | { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: T }
  | { type: 'BOOKMARK'; object: { kind?: string; apiVersion?: string; metadata: ObjectMeta } }
  | { type: 'ERROR'; object: Status };

/** What a request needs to know about a resource to build its paths. */
export interface ResourceRef {
  /** '' for the core group. */
  group: string;
  version: string;
  /** The plural used in paths: pods, deployments, widgets. */
  resource: string;
  namespaced: boolean;
}

export function apiVersionOf(ref: Pick<ResourceRef, 'group' | 'version'>): string {
  return ref.group === '' ? ref.version : `${ref.group}/${ref.version}`;
}

/** The resources etcetera serves built in, for `client.resource(Resources.pods)`. */
export const Resources = {
  namespaces: { group: '', version: 'v1', resource: 'namespaces', namespaced: false },
  pods: { group: '', version: 'v1', resource: 'pods', namespaced: true },
  services: { group: '', version: 'v1', resource: 'services', namespaced: true },
  endpoints: { group: '', version: 'v1', resource: 'endpoints', namespaced: true },
  endpointSlices: {
    group: 'discovery.k8s.io',
    version: 'v1',
    resource: 'endpointslices',
    namespaced: true,
  },
  configMaps: { group: '', version: 'v1', resource: 'configmaps', namespaced: true },
  secrets: { group: '', version: 'v1', resource: 'secrets', namespaced: true },
  nodes: { group: '', version: 'v1', resource: 'nodes', namespaced: false },
  events: { group: '', version: 'v1', resource: 'events', namespaced: true },
  serviceAccounts: { group: '', version: 'v1', resource: 'serviceaccounts', namespaced: true },
  persistentVolumes: { group: '', version: 'v1', resource: 'persistentvolumes', namespaced: false },
  persistentVolumeClaims: {
    group: '',
    version: 'v1',
    resource: 'persistentvolumeclaims',
    namespaced: true,
  },
  deployments: { group: 'apps', version: 'v1', resource: 'deployments', namespaced: true },
  replicaSets: { group: 'apps', version: 'v1', resource: 'replicasets', namespaced: true },
  statefulSets: { group: 'apps', version: 'v1', resource: 'statefulsets', namespaced: true },
  daemonSets: { group: 'apps', version: 'v1', resource: 'daemonsets', namespaced: true },
  leases: { group: 'coordination.k8s.io', version: 'v1', resource: 'leases', namespaced: true },
  podDisruptionBudgets: {
    group: 'policy',
    version: 'v1',
    resource: 'poddisruptionbudgets',
    namespaced: true,
  },
  customResourceDefinitions: {
    group: 'apiextensions.k8s.io',
    version: 'v1',
    resource: 'customresourcedefinitions',
    namespaced: false,
  },
} as const satisfies Record<string, ResourceRef>;

/** The cache key of an object: `namespace/name`, or `name` for cluster-scoped ones. */
export function objectKey(obj: { metadata: ObjectMeta }): string {
  const ns = obj.metadata.namespace;
  return ns ? `${ns}/${obj.metadata.name ?? ''}` : (obj.metadata.name ?? '');
}
