/**
 * Role-based access control as Kubernetes defines it (rbac.authorization.k8s.io/v1), without
 * HTTP: who a request is (UserInfo), what it asks (RequestAttributes), the rule matcher, the
 * evaluation of Roles, ClusterRoles and their bindings, the Forbidden texts kube-apiserver
 * answers with, and the bootstrap ClusterRoles a new cluster has.
 *
 * ClusterRole aggregation is supported when rules are evaluated: a ClusterRole with an
 * `aggregationRule` grants its own rules plus those of every ClusterRole its selectors
 * match (recursively). Kubernetes' aggregation controller copies them into the stored
 * object instead; here the stored `rules` of an aggregated role stay as written.
 */
import { labelSelectorFromObject, matchLabels } from './selectors.js';
import { StatusError } from './status.js';
import type { KubeObject } from './types.js';

export const RBAC_GROUP = 'rbac.authorization.k8s.io';

/** An authenticated (or anonymous) user, as Kubernetes' user.Info. */
export interface UserInfo {
  readonly username: string;
  readonly uid: string;
  readonly groups: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
  /** Set on an impersonated user: who authenticated and asked to act as it (audit). */
  readonly impersonatedBy?: UserInfo;
}

export const ANONYMOUS_USER = 'system:anonymous';
export const UNAUTHENTICATED_GROUP = 'system:unauthenticated';
export const AUTHENTICATED_GROUP = 'system:authenticated';
export const MASTERS_GROUP = 'system:masters';

/** What a request asks for, as Kubernetes' authorizer.Attributes. */
export type RequestAttributes =
  | {
      readonly kind: 'resource';
      readonly user: UserInfo;
      readonly verb: string;
      readonly apiGroup: string;
      readonly apiVersion: string;
      readonly resource: string;
      readonly subresource: string;
      readonly namespace: string;
      readonly name: string;
    }
  | {
      readonly kind: 'nonResource';
      readonly user: UserInfo;
      readonly verb: string;
      readonly path: string;
    };

export interface PolicyRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

export interface Subject {
  kind: string;
  name: string;
  namespace?: string;
  apiGroup?: string;
}

export interface RoleRef {
  apiGroup: string;
  kind: string;
  name: string;
}

const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : [];

/** The rules of a stored Role or ClusterRole (malformed entries are skipped). */
export function rulesOf(obj: KubeObject): PolicyRule[] {
  const raw = (obj as { rules?: unknown }).rules;
  if (!Array.isArray(raw)) return [];
  return raw
    .filter((r): r is Record<string, unknown> => !!r && typeof r === 'object')
    .map((r) => ({
      verbs: strings(r.verbs),
      apiGroups: strings(r.apiGroups),
      resources: strings(r.resources),
      resourceNames: strings(r.resourceNames),
      nonResourceURLs: strings(r.nonResourceURLs),
    }));
}

function has(list: readonly string[] | undefined, v: string): boolean {
  return (list ?? []).some((x) => x === '*' || x === v);
}

/** A rule's resources against `resource[/subresource]`: `*`, exact, or `*\/subresource`. */
export function resourceMatches(rule: PolicyRule, resource: string, subresource: string): boolean {
  const combined = subresource === '' ? resource : `${resource}/${subresource}`;
  for (const r of rule.resources ?? []) {
    if (r === '*' || r === combined) return true;
    if (subresource !== '' && r === `*/${subresource}`) return true;
  }
  return false;
}

/** A rule's nonResourceURLs: `*`, exact, or a prefix ending in `*`. */
export function nonResourceUrlMatches(rule: PolicyRule, path: string): boolean {
  for (const u of rule.nonResourceURLs ?? []) {
    if (u === '*' || u === path) return true;
    if (u.endsWith('*') && path.startsWith(u.slice(0, -1))) return true;
  }
  return false;
}

/** Whether one rule allows the request (Kubernetes' RuleAllows). */
export function ruleAllows(attrs: RequestAttributes, rule: PolicyRule): boolean {
  if (!has(rule.verbs, attrs.verb)) return false;
  if (attrs.kind === 'nonResource') return nonResourceUrlMatches(rule, attrs.path);
  if (!has(rule.apiGroups, attrs.apiGroup)) return false;
  if (!resourceMatches(rule, attrs.resource, attrs.subresource)) return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || names.includes(attrs.name);
}

/** Whether a binding's subject is this user; `namespace` is the binding's ('' for cluster). */
export function subjectMatches(user: UserInfo, s: Subject, namespace: string): boolean {
  switch (s.kind) {
    case 'User':
      return s.name === user.username;
    case 'Group':
      return user.groups.includes(s.name);
    case 'ServiceAccount': {
      const ns = s.namespace !== undefined && s.namespace !== '' ? s.namespace : namespace;
      return ns !== '' && user.username === `system:serviceaccount:${ns}:${s.name}`;
    }
    default:
      return false;
  }
}

/** The RBAC objects one decision reads (from the face's object cache). */
export interface RbacPolicy {
  clusterRoles(): Iterable<KubeObject>;
  clusterRole(name: string): KubeObject | undefined;
  role(namespace: string, name: string): KubeObject | undefined;
  clusterRoleBindings(): Iterable<KubeObject>;
  roleBindings(namespace: string): Iterable<KubeObject>;
}

function subjectsOf(binding: KubeObject): Subject[] {
  const raw = (binding as { subjects?: unknown }).subjects;
  if (!Array.isArray(raw)) return [];
  return raw.filter(
    (s): s is Subject =>
      !!s && typeof s === 'object' && typeof s.kind === 'string' && typeof s.name === 'string',
  );
}

function roleRefOf(binding: KubeObject): RoleRef | undefined {
  const r = (binding as { roleRef?: unknown }).roleRef as Partial<RoleRef> | undefined;
  if (!r || typeof r.kind !== 'string' || typeof r.name !== 'string') return undefined;
  return { apiGroup: r.apiGroup ?? RBAC_GROUP, kind: r.kind, name: r.name };
}

/** A ClusterRole's rules with aggregation: its own plus those of the roles it selects. */
export function clusterRoleRules(policy: RbacPolicy, role: KubeObject): PolicyRule[] {
  const out: PolicyRule[] = [];
  const seen = new Set<string>();
  const visit = (r: KubeObject) => {
    const name = r.metadata.name ?? '';
    if (seen.has(name)) return;
    seen.add(name);
    out.push(...rulesOf(r));
    const agg = (r as { aggregationRule?: { clusterRoleSelectors?: unknown } }).aggregationRule;
    const selectors = Array.isArray(agg?.clusterRoleSelectors) ? agg.clusterRoleSelectors : [];
    for (const raw of selectors) {
      let sel: ReturnType<typeof labelSelectorFromObject>;
      try {
        sel = labelSelectorFromObject(raw as Parameters<typeof labelSelectorFromObject>[0]);
      } catch {
        continue;
      }
      // An empty selector selects nothing here (Kubernetes' aggregation controller agrees).
      if (sel.requirements.length === 0) continue;
      for (const other of policy.clusterRoles()) {
        if (matchLabels(sel, other.metadata.labels)) visit(other);
      }
    }
  };
  visit(role);
  return out;
}

/** The outcome of one decision; `reason` names the binding that allowed it. */
export type Decision = { allowed: true; reason: string } | { allowed: false; reason: string };

/** Kubernetes' RBAC authorizer: cluster bindings always, role bindings of the namespace. */
export function authorize(policy: RbacPolicy, attrs: RequestAttributes): Decision {
  const user = attrs.user;
  const namespace = attrs.kind === 'resource' ? attrs.namespace : '';
  const missing: string[] = [];
  for (const b of policy.clusterRoleBindings()) {
    if (!subjectsOf(b).some((s) => subjectMatches(user, s, ''))) continue;
    const ref = roleRefOf(b);
    if (ref?.kind !== 'ClusterRole') continue;
    const role = policy.clusterRole(ref.name);
    if (!role) {
      missing.push(`clusterrole.${RBAC_GROUP} "${ref.name}" not found`);
      continue;
    }
    if (clusterRoleRules(policy, role).some((r) => ruleAllows(attrs, r))) {
      return {
        allowed: true,
        reason: `RBAC: allowed by ClusterRoleBinding "${b.metadata.name ?? ''}" of ClusterRole "${ref.name}" to ${user.username}`,
      };
    }
  }
  if (namespace !== '') {
    for (const b of policy.roleBindings(namespace)) {
      if (!subjectsOf(b).some((s) => subjectMatches(user, s, namespace))) continue;
      const ref = roleRefOf(b);
      if (!ref) continue;
      let rules: PolicyRule[];
      if (ref.kind === 'ClusterRole') {
        const role = policy.clusterRole(ref.name);
        if (!role) {
          missing.push(`clusterrole.${RBAC_GROUP} "${ref.name}" not found`);
          continue;
        }
        rules = clusterRoleRules(policy, role);
      } else if (ref.kind === 'Role') {
        const role = policy.role(namespace, ref.name);
        if (!role) {
          missing.push(`role.${RBAC_GROUP} "${ref.name}" not found`);
          continue;
        }
        rules = rulesOf(role);
      } else continue;
      if (rules.some((r) => ruleAllows(attrs, r))) {
        return {
          allowed: true,
          reason: `RBAC: allowed by RoleBinding "${b.metadata.name ?? ''}/${namespace}" of ${ref.kind} "${ref.name}" to ${user.username}`,
        };
      }
    }
  }
  return { allowed: false, reason: missing.length > 0 ? `RBAC: ${missing.join(', ')}` : '' };
}

/** kube-apiserver's text for a refused request (without the "X is forbidden: " prefix). */
export function forbiddenMessage(attrs: RequestAttributes): string {
  const user = attrs.user.username;
  if (attrs.kind === 'nonResource') {
    return `User "${user}" cannot ${attrs.verb} path "${attrs.path}"`;
  }
  const resource =
    attrs.subresource === '' ? attrs.resource : `${attrs.resource}/${attrs.subresource}`;
  if (attrs.namespace !== '') {
    return `User "${user}" cannot ${attrs.verb} resource "${resource}" in API group "${attrs.apiGroup}" in the namespace "${attrs.namespace}"`;
  }
  return `User "${user}" cannot ${attrs.verb} resource "${resource}" in API group "${attrs.apiGroup}" at the cluster scope`;
}

/** The 403 Status kube-apiserver answers (apierrors.NewForbidden over forbiddenMessage). */
export function forbidden(attrs: RequestAttributes, reason = ''): StatusError {
  const msg = forbiddenMessage(attrs) + (reason === '' ? '' : `: ${reason}`);
  if (attrs.kind === 'nonResource') {
    return new StatusError('Forbidden', `forbidden: ${msg}`, { group: '', kind: '' });
  }
  const qualified = attrs.apiGroup === '' ? attrs.resource : `${attrs.resource}.${attrs.apiGroup}`;
  const prefix = attrs.name === '' ? qualified : `${qualified} "${attrs.name}"`;
  return new StatusError('Forbidden', `${prefix} is forbidden: ${msg}`, {
    ...(attrs.name !== '' ? { name: attrs.name } : {}),
    group: attrs.apiGroup,
    kind: attrs.resource,
  });
}

// --- bootstrap policy: the ClusterRoles and ClusterRoleBindings of a new cluster ---

const READ = ['get', 'list', 'watch'];
const WRITE = ['create', 'delete', 'deletecollection', 'patch', 'update'];
const AGGREGATE_TO = (role: string) => `${RBAC_GROUP}/aggregate-to-${role}`;

function clusterRole(
  name: string,
  rules: PolicyRule[],
  labels: Record<string, string> = {},
  aggregateFrom?: string,
): KubeObject {
  return {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: 'ClusterRole',
    metadata: {
      name,
      labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults', ...labels },
      annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
    },
    ...(aggregateFrom !== undefined
      ? {
          aggregationRule: {
            clusterRoleSelectors: [{ matchLabels: { [AGGREGATE_TO(aggregateFrom)]: 'true' } }],
          },
        }
      : {}),
    rules,
  };
}

function clusterRoleBinding(name: string, role: string, groups: string[]): KubeObject {
  return {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: 'ClusterRoleBinding',
    metadata: {
      name,
      labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' },
      annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
    },
    roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: role },
    subjects: groups.map((g) => ({ apiGroup: RBAC_GROUP, kind: 'Group', name: g })),
  };
}

const rule = (verbs: string[], apiGroups: string[], resources: string[]): PolicyRule => ({
  verbs,
  apiGroups,
  resources,
});

const VIEW_CORE = [
  'configmaps',
  'endpoints',
  'persistentvolumeclaims',
  'persistentvolumeclaims/status',
  'pods',
  'pods/status',
  'pods/log',
  'serviceaccounts',
  'services',
  'services/status',
  'events',
  'namespaces',
  'namespaces/status',
];
const VIEW_APPS = [
  'daemonsets',
  'daemonsets/status',
  'deployments',
  'deployments/scale',
  'deployments/status',
  'replicasets',
  'replicasets/scale',
  'replicasets/status',
  'statefulsets',
  'statefulsets/scale',
  'statefulsets/status',
];
const EDIT_CORE = [
  'configmaps',
  'endpoints',
  'events',
  'persistentvolumeclaims',
  'pods',
  'secrets',
  'serviceaccounts',
  'services',
];
const EDIT_APPS = [
  'daemonsets',
  'deployments',
  'deployments/scale',
  'replicasets',
  'replicasets/scale',
  'statefulsets',
  'statefulsets/scale',
];

/**
 * The bootstrap ClusterRoles (cluster-admin; admin ⊃ edit ⊃ view by aggregation, as in
 * Kubernetes; system:discovery, system:public-info-viewer, system:basic-user) and their
 * ClusterRoleBindings, among them system:masters → cluster-admin. The resource lists are
 * those of the kinds this server serves.
 */
export function bootstrapPolicy(): {
  clusterRoles: KubeObject[];
  clusterRoleBindings: KubeObject[];
} {
  const clusterRoles = [
    clusterRole('cluster-admin', [
      rule(['*'], ['*'], ['*']),
      { verbs: ['*'], nonResourceURLs: ['*'] },
    ]),
    clusterRole('admin', [], { [AGGREGATE_TO('admin')]: 'true' }, 'admin'),
    clusterRole('edit', [], { [AGGREGATE_TO('admin')]: 'true' }, 'edit'),
    clusterRole('view', [], { [AGGREGATE_TO('edit')]: 'true' }, 'view'),
    clusterRole(
      'system:aggregate-to-admin',
      [
        rule(READ.concat(WRITE), [RBAC_GROUP], ['rolebindings', 'roles']),
        rule(['create'], ['authorization.k8s.io'], ['localsubjectaccessreviews']),
      ],
      { [AGGREGATE_TO('admin')]: 'true' },
    ),
    clusterRole(
      'system:aggregate-to-edit',
      [
        rule(WRITE, [''], EDIT_CORE),
        rule(READ, [''], ['secrets']),
        rule(WRITE, ['apps'], EDIT_APPS),
        rule(WRITE, ['policy'], ['poddisruptionbudgets']),
        rule(WRITE, ['discovery.k8s.io'], ['endpointslices']),
      ],
      { [AGGREGATE_TO('edit')]: 'true' },
    ),
    clusterRole(
      'system:aggregate-to-view',
      [
        rule(READ, [''], VIEW_CORE),
        rule(READ, ['apps'], VIEW_APPS),
        rule(READ, ['policy'], ['poddisruptionbudgets', 'poddisruptionbudgets/status']),
        rule(READ, ['discovery.k8s.io'], ['endpointslices']),
      ],
      { [AGGREGATE_TO('view')]: 'true' },
    ),
    clusterRole('system:discovery', [
      {
        verbs: ['get'],
        nonResourceURLs: [
          '/api',
          '/api/*',
          '/apis',
          '/apis/*',
          '/healthz',
          '/livez',
          '/openapi',
          '/openapi/*',
          '/readyz',
          '/version',
          '/version/',
        ],
      },
    ]),
    clusterRole('system:public-info-viewer', [
      {
        verbs: ['get'],
        nonResourceURLs: ['/healthz', '/livez', '/readyz', '/version', '/version/'],
      },
    ]),
    clusterRole('system:basic-user', [
      rule(
        ['create'],
        ['authorization.k8s.io'],
        ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'],
      ),
      rule(['create'], ['authentication.k8s.io'], ['selfsubjectreviews']),
    ]),
  ];
  const clusterRoleBindings = [
    clusterRoleBinding('cluster-admin', 'cluster-admin', [MASTERS_GROUP]),
    clusterRoleBinding('system:discovery', 'system:discovery', [AUTHENTICATED_GROUP]),
    clusterRoleBinding('system:basic-user', 'system:basic-user', [AUTHENTICATED_GROUP]),
    clusterRoleBinding('system:public-info-viewer', 'system:public-info-viewer', [
      AUTHENTICATED_GROUP,
      UNAUTHENTICATED_GROUP,
    ]),
  ];
  return { clusterRoles, clusterRoleBindings };
}
