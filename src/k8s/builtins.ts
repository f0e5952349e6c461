/**
 * The built-in kinds the face serves (issue 6), with what Kubernetes serves for each: scope,
 * short names, categories, subresources, field-selector labels, printers and a few
 * validations. Kinds built into kubectl get strategic merge patch; CRDs never do.
 */

import {
  configMapPrinter,
  defaultPrinter,
  deploymentPrinter,
  namespacePrinter,
  podPrinter,
} from './printers.js';
import { smpSchemaFor } from './smp-schemas.js';
import {
  ALL_VERBS,
  type FieldGetter,
  type KubeObject,
  type NameRule,
  type ResourceInfo,
  type Scope,
  type Verb,
} from './types.js';
import { builtinValidators } from './validate-builtin.js';

/** The value at a dotted path as a field selector sees it ('' when absent). */
export function fieldAt(obj: KubeObject, path: string): string {
  let v: unknown = obj;
  for (const part of path.split('.')) {
    if (v === null || typeof v !== 'object') return '';
    v = (v as Record<string, unknown>)[part];
  }
  if (v === undefined || v === null) return '';
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

function fields(...paths: string[]): Record<string, FieldGetter> {
  const out: Record<string, FieldGetter> = {};
  for (const p of paths) out[p] = (o) => fieldAt(o, p);
  return out;
}

interface Spec {
  group: string;
  version: string;
  resource: string;
  kind: string;
  singular?: string;
  scope?: Scope;
  shortNames?: string[];
  categories?: string[];
  status?: boolean;
  scale?: boolean;
  generation?: boolean;
  fields?: Record<string, FieldGetter>;
  indexed?: string[];
  top?: string[];
  nameRule?: NameRule;
  printer?: ResourceInfo['printer'];
  verbs?: Verb[];
}

const SPEC_STATUS = ['spec', 'status'];

function define(s: Spec): ResourceInfo {
  return {
    group: s.group,
    version: s.version,
    resource: s.resource,
    kind: s.kind,
    listKind: `${s.kind}List`,
    singular: s.singular ?? s.kind.toLowerCase(),
    scope: s.scope ?? 'Namespaced',
    shortNames: s.shortNames ?? [],
    categories: s.categories ?? [],
    verbs: s.verbs ?? ALL_VERBS,
    statusSubresource: s.status ?? false,
    scaleSubresource: s.scale ?? false,
    generation: s.generation ?? false,
    strategicMerge: true,
    fields: s.fields ?? {},
    indexedFields: s.indexed ?? [],
    topLevelFields: ['apiVersion', 'kind', 'metadata', ...(s.top ?? SPEC_STATUS)],
    nameRule: s.nameRule ?? 'subdomain',
    printer: s.printer ?? defaultPrinter,
    mergeSchema: smpSchemaFor(s.group, s.version, s.kind),
    ...(builtinValidators[s.resource] ? { validate: builtinValidators[s.resource] } : {}),
  };
}

const WORKLOAD = { status: true, scale: true, generation: true, categories: ['all'] };

export const BUILTIN_KINDS: readonly ResourceInfo[] = [
  define({
    group: '',
    version: 'v1',
    resource: 'namespaces',
    kind: 'Namespace',
    scope: 'Cluster',
    shortNames: ['ns'],
    status: true,
    nameRule: 'label',
    fields: fields('status.phase'),
    printer: namespacePrinter,
    verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
  }),
  define({
    group: '',
    version: 'v1',
    resource: 'pods',
    kind: 'Pod',
    shortNames: ['po'],
    categories: ['all'],
    status: true,
    fields: fields(
      'spec.nodeName',
      'spec.restartPolicy',
      'spec.schedulerName',
      'spec.serviceAccountName',
      'spec.hostNetwork',
      'status.phase',
      'status.podIP',
      'status.nominatedNodeName',
    ),
    indexed: ['spec.nodeName'],
    printer: podPrinter,
  }),
  define({
    group: '',
    version: 'v1',
    resource: 'services',
    kind: 'Service',
    shortNames: ['svc'],
    categories: ['all'],
    status: true,
    nameRule: 'dns1035',
  }),
  define({
    group: '',
    version: 'v1',
    resource: 'endpoints',
    kind: 'Endpoints',
    shortNames: ['ep'],
    top: ['subsets'],
    singular: 'endpoints',
  }),
  define({
    group: '',
    version: 'v1',
    resource: 'configmaps',
    kind: 'ConfigMap',
    shortNames: ['cm'],
    top: ['data', 'binaryData', 'immutable'],
    printer: configMapPrinter,
  }),
  define({
    group: '',
    version: 'v1',
    resource: 'secrets',
    kind: 'Secret',
    top: ['data', 'stringData', 'type', 'immutable'],
    fields: fields('type'),
  }),
  define({
    group: '',
    version: 'v1',
    resource: 'nodes',
    kind: 'Node',
    scope: 'Cluster',
    shortNames: ['no'],
    status: true,
    fields: fields('spec.unschedulable'),
  }),
  define({
    group: '',
    version: 'v1',
    resource: 'events',
    kind: 'Event',
    shortNames: ['ev'],
    top: [
      'involvedObject',
      'reason',
      'message',
      'source',
      'firstTimestamp',
      'lastTimestamp',
      'count',
      'type',
      'eventTime',
      'series',
      'action',
      'related',
      'reportingComponent',
      'reportingInstance',
    ],
    fields: fields(
      'involvedObject.kind',
      'involvedObject.namespace',
      'involvedObject.name',
      'involvedObject.uid',
      'involvedObject.apiVersion',
      'involvedObject.resourceVersion',
      'involvedObject.fieldPath',
      'reason',
      'reportingComponent',
      'source',
      'type',
    ),
  }),
  define({
    group: '',
    version: 'v1',
    resource: 'serviceaccounts',
    kind: 'ServiceAccount',
    shortNames: ['sa'],
    top: ['secrets', 'imagePullSecrets', 'automountServiceAccountToken'],
  }),
  define({
    group: '',
    version: 'v1',
    resource: 'persistentvolumes',
    kind: 'PersistentVolume',
    scope: 'Cluster',
    shortNames: ['pv'],
    status: true,
  }),
  define({
    group: '',
    version: 'v1',
    resource: 'persistentvolumeclaims',
    kind: 'PersistentVolumeClaim',
    shortNames: ['pvc'],
    status: true,
  }),
  define({
    group: 'apps',
    version: 'v1',
    resource: 'deployments',
    kind: 'Deployment',
    shortNames: ['deploy'],
    printer: deploymentPrinter,
    ...WORKLOAD,
  }),
  define({
    group: 'apps',
    version: 'v1',
    resource: 'replicasets',
    kind: 'ReplicaSet',
    shortNames: ['rs'],
    fields: fields('status.replicas'),
    ...WORKLOAD,
  }),
  define({
    group: 'apps',
    version: 'v1',
    resource: 'statefulsets',
    kind: 'StatefulSet',
    shortNames: ['sts'],
    ...WORKLOAD,
  }),
  define({
    group: 'apps',
    version: 'v1',
    resource: 'daemonsets',
    kind: 'DaemonSet',
    shortNames: ['ds'],
    ...WORKLOAD,
    scale: false,
  }),
  define({
    group: 'discovery.k8s.io',
    version: 'v1',
    resource: 'endpointslices',
    kind: 'EndpointSlice',
    top: ['addressType', 'endpoints', 'ports'],
  }),
  define({
    group: 'coordination.k8s.io',
    version: 'v1',
    resource: 'leases',
    kind: 'Lease',
    top: ['spec'],
  }),
  define({
    group: 'policy',
    version: 'v1',
    resource: 'poddisruptionbudgets',
    kind: 'PodDisruptionBudget',
    shortNames: ['pdb'],
    status: true,
    generation: true,
  }),
  define({
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    resource: 'roles',
    kind: 'Role',
    top: ['rules'],
  }),
  define({
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    resource: 'clusterroles',
    kind: 'ClusterRole',
    scope: 'Cluster',
    top: ['rules', 'aggregationRule'],
  }),
  define({
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    resource: 'rolebindings',
    kind: 'RoleBinding',
    top: ['subjects', 'roleRef'],
  }),
  define({
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    resource: 'clusterrolebindings',
    kind: 'ClusterRoleBinding',
    scope: 'Cluster',
    top: ['subjects', 'roleRef'],
  }),
  // Reviews are answered, never stored (src/api/k8s/authz.ts).
  define({
    group: 'authorization.k8s.io',
    version: 'v1',
    resource: 'selfsubjectaccessreviews',
    kind: 'SelfSubjectAccessReview',
    scope: 'Cluster',
    verbs: ['create'],
  }),
  define({
    group: 'authorization.k8s.io',
    version: 'v1',
    resource: 'subjectaccessreviews',
    kind: 'SubjectAccessReview',
    scope: 'Cluster',
    verbs: ['create'],
  }),
  define({
    group: 'authorization.k8s.io',
    version: 'v1',
    resource: 'localsubjectaccessreviews',
    kind: 'LocalSubjectAccessReview',
    scope: 'Namespaced',
    verbs: ['create'],
  }),
  define({
    group: 'authentication.k8s.io',
    version: 'v1',
    resource: 'selfsubjectreviews',
    kind: 'SelfSubjectReview',
    scope: 'Cluster',
    verbs: ['create'],
  }),
  define({
    group: 'apiextensions.k8s.io',
    version: 'v1',
    resource: 'customresourcedefinitions',
    kind: 'CustomResourceDefinition',
    scope: 'Cluster',
    shortNames: ['crd', 'crds'],
    categories: ['api-extensions'],
    status: true,
    generation: true,
  }),
];
