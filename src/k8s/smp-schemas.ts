/**
 * Merge metadata of the built-in kinds the server serves, transcribed from the
 * `patchStrategy` / `patchMergeKey` tags of k8s.io/api v0.32 (core/v1, apps/v1, policy/v1,
 * coordination/v1) and metav1.ObjectMeta. Only fields with a strategy are listed: every
 * other list is atomic and every other map merges key by key, which is the default.
 *
 * `smpSchemaFor(group, version, kind)` answers undefined for kinds without strategic merge
 * patch (custom resources): the server answers 415 for those.
 */
import {
  atomicList,
  type FieldSchema,
  keyedList,
  type MapSchema,
  mapOf,
  SCALAR,
  setList,
  struct,
} from './merge-schema.js';

const objectMeta = struct({
  labels: mapOf(SCALAR),
  annotations: mapOf(SCALAR),
  finalizers: setList(),
  ownerReferences: keyedList('uid'),
  managedFields: atomicList(),
});

/** Fields shared by Container and EphemeralContainer. */
const container = struct({
  ports: keyedList('containerPort'),
  env: keyedList('name'),
  volumeMounts: keyedList('mountPath'),
  volumeDevices: keyedList('devicePath'),
});

const podSpec = struct({
  volumes: keyedList('name', struct({}, { retainKeys: true }), { retainKeys: true }),
  initContainers: keyedList('name', container),
  containers: keyedList('name', container),
  ephemeralContainers: keyedList('name', container),
  imagePullSecrets: keyedList('name'),
  hostAliases: keyedList('ip'),
  topologySpreadConstraints: keyedList('topologyKey'),
  schedulingGates: keyedList('name'),
  resourceClaims: keyedList('name', struct({}, { retainKeys: true }), { retainKeys: true }),
  nodeSelector: mapOf(SCALAR),
});

const conditionsByType = { conditions: keyedList('type') };

const podStatus = struct({
  ...conditionsByType,
  hostIPs: keyedList('ip'),
  podIPs: keyedList('ip'),
  resourceClaimStatuses: keyedList('name', struct({}, { retainKeys: true }), { retainKeys: true }),
});

const podTemplateSpec = struct({ metadata: objectMeta, spec: podSpec });

/** A top-level kind: ObjectMeta plus its own fields. */
function kind(fields: Record<string, FieldSchema>): MapSchema {
  return struct({ metadata: objectMeta, ...fields });
}

const labelSelector = struct({ matchLabels: mapOf(SCALAR) });

function workload(specFields: Record<string, FieldSchema> = {}): MapSchema {
  return kind({
    spec: struct({ template: podTemplateSpec, selector: labelSelector, ...specFields }),
    status: struct(conditionsByType),
  });
}

const pvcSpec = struct({ selector: labelSelector });

/** Keyed by `group/version/Kind` (core: `/v1/Kind`). */
const SCHEMAS: ReadonlyMap<string, MapSchema> = new Map<string, MapSchema>([
  ['/v1/Pod', kind({ spec: podSpec, status: podStatus })],
  [
    '/v1/Service',
    kind({
      spec: struct({ ports: keyedList('port'), selector: mapOf(SCALAR) }),
      status: struct(conditionsByType),
    }),
  ],
  ['/v1/Endpoints', kind({})],
  ['/v1/ConfigMap', kind({ data: mapOf(SCALAR), binaryData: mapOf(SCALAR) })],
  ['/v1/Secret', kind({ data: mapOf(SCALAR), stringData: mapOf(SCALAR) })],
  [
    '/v1/Node',
    kind({
      spec: struct({ podCIDRs: setList() }),
      status: struct({ ...conditionsByType, addresses: keyedList('type') }),
    }),
  ],
  ['/v1/Event', kind({})],
  ['/v1/ServiceAccount', kind({ secrets: keyedList('name') })],
  ['/v1/PersistentVolume', kind({})],
  ['/v1/PersistentVolumeClaim', kind({ spec: pvcSpec, status: struct(conditionsByType) })],
  ['/v1/Namespace', kind({ status: struct(conditionsByType) })],
  ['apps/v1/Deployment', workload({ strategy: struct({}, { retainKeys: true }) })],
  ['apps/v1/ReplicaSet', workload()],
  ['apps/v1/StatefulSet', workload()],
  ['apps/v1/DaemonSet', workload()],
  ['coordination.k8s.io/v1/Lease', kind({})],
  ['rbac.authorization.k8s.io/v1/Role', kind({})],
  ['rbac.authorization.k8s.io/v1/ClusterRole', kind({})],
  ['rbac.authorization.k8s.io/v1/RoleBinding', kind({})],
  ['rbac.authorization.k8s.io/v1/ClusterRoleBinding', kind({})],
  [
    'policy/v1/PodDisruptionBudget',
    kind({
      spec: struct({ selector: struct({ matchLabels: mapOf(SCALAR) }, { atomic: true }) }),
      status: struct(conditionsByType),
    }),
  ],
]);

/** The strategic merge schema of a built-in kind, or undefined when it has none. */
export function smpSchemaFor(group: string, version: string, kind: string): MapSchema | undefined {
  return SCHEMAS.get(`${group}/${version}/${kind}`);
}

/** The group/version/kinds with a strategic merge schema. */
export function smpKinds(): { group: string; version: string; kind: string }[] {
  return [...SCHEMAS.keys()].map((k) => {
    const [group = '', version = '', kind = ''] = k.split('/');
    return { group, version, kind };
  });
}
