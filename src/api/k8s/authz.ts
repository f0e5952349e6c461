/**
 * Authorization of the Kubernetes face: the attributes of a request (verb, API group,
 * resource, subresource, name, namespace, or a non-resource path, as kube-apiserver's
 * RequestInfo reads them), the authorizer of `--authorization-mode` (AlwaysAllow, or RBAC
 * over the Roles and bindings in the face's object cache), the bootstrap policy written at
 * start, and the review resources answered without storing anything:
 * SelfSubjectAccessReview (`kubectl auth can-i`) and SelfSubjectReview (`kubectl auth whoami`).
 * Impersonation as kube-apiserver does it: the Impersonate-User, Impersonate-Group,
 * Impersonate-Uid and Impersonate-Extra-* headers, each allowed by the `impersonate` verb
 * on users (serviceaccounts for a ServiceAccount's name), groups, uids and userextras.
 */
import type { IncomingMessage } from 'node:http';
import { objectKey } from '../../k8s/keys.js';
import { prepareCreate } from '../../k8s/meta.js';
import {
  ANONYMOUS_USER,
  AUTHENTICATED_GROUP,
  authorize,
  bootstrapPolicy,
  type Decision,
  forbidden,
  RBAC_GROUP,
  type RbacPolicy,
  type RequestAttributes,
  UNAUTHENTICATED_GROUP,
  type UserInfo,
} from '../../k8s/rbac.js';
import { badRequest, StatusError } from '../../k8s/status.js';
import type { KubeObject, ResourceInfo } from '../../k8s/types.js';
import type { Kube, ResourceRequest } from './context.js';
import { readObjectBody } from './handlers.js';
import type { Route } from './paths.js';
import { sendJson } from './respond.js';
import type { KubeHub } from './watch/hub.js';

export const AuthorizationMode = { AlwaysAllow: 'AlwaysAllow', RBAC: 'RBAC' } as const;
export type AuthorizationMode = (typeof AuthorizationMode)[keyof typeof AuthorizationMode];

export type Authorizer = (attrs: RequestAttributes) => Decision;

const ALLOW: Decision = { allowed: true, reason: '' };

function queryBool(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  return v !== null && !(v === '0' || v.toLowerCase() === 'false');
}

/** The attributes of one request of the face; `route` undefined for a path it cannot parse. */
export function requestAttributes(
  user: UserInfo,
  method: string,
  pathname: string,
  query: URLSearchParams,
  route: Route | undefined,
): RequestAttributes {
  if (route?.type !== 'resource') {
    const verb = method === 'GET' || method === 'HEAD' ? 'get' : method.toLowerCase();
    return { kind: 'nonResource', user, verb, path: pathname };
  }
  const item = route.name !== undefined;
  let verb: string;
  switch (method) {
    case 'GET':
    case 'HEAD':
      verb = item ? 'get' : queryBool(query, 'watch') ? 'watch' : 'list';
      break;
    case 'POST':
      verb = 'create';
      break;
    case 'PUT':
      verb = 'update';
      break;
    case 'PATCH':
      verb = 'patch';
      break;
    case 'DELETE':
      verb = item ? 'delete' : 'deletecollection';
      break;
    default:
      verb = method.toLowerCase();
  }
  // A Namespace is in itself: /api/v1/namespaces/foo is in the namespace "foo".
  const ownNamespace =
    route.group === '' && route.resource === 'namespaces' && route.namespace === undefined
      ? route.name
      : undefined;
  return {
    kind: 'resource',
    user,
    verb,
    apiGroup: route.group,
    apiVersion: route.version,
    resource: route.resource,
    subresource: route.subresource ?? '',
    namespace: route.namespace ?? ownNamespace ?? '',
    name: route.name ?? '',
  };
}

const RBAC_REF = (resource: string) => `${RBAC_GROUP}/${resource}`;
const ref = (resource: string) => ({ group: RBAC_GROUP, resource });

/** The RBAC objects of the face's cache (the decoded objects the face lists from). */
export function cachedPolicy(hub: KubeHub): RbacPolicy {
  const all = function* (resource: string): Iterable<KubeObject> {
    for (const entry of hub.cacheFor(RBAC_REF(resource), RBAC_GROUP).tree.values()) {
      yield entry.obj;
    }
  };
  return {
    clusterRoles: () => all('clusterroles'),
    clusterRole: (name) =>
      hub.get(RBAC_REF('clusterroles'), objectKey(ref('clusterroles'), '', name))?.obj,
    role: (namespace, name) =>
      hub.get(RBAC_REF('roles'), objectKey(ref('roles'), namespace, name))?.obj,
    clusterRoleBindings: () => all('clusterrolebindings'),
    roleBindings: function* (namespace) {
      for (const b of all('rolebindings')) if (b.metadata.namespace === namespace) yield b;
    },
  };
}

export function authorizerFor(mode: AuthorizationMode, hub: KubeHub): Authorizer {
  if (mode === AuthorizationMode.AlwaysAllow) return () => ALLOW;
  const policy = cachedPolicy(hub);
  return (attrs) => authorize(policy, attrs);
}

/**
 * Creates the bootstrap ClusterRoles and ClusterRoleBindings that are missing (an existing
 * one is left as it is, edits included), then waits for the cache to hold them.
 */
export async function ensureBootstrapPolicy(kube: Kube): Promise<void> {
  const { clusterRoles, clusterRoleBindings } = bootstrapPolicy();
  const write = async (resource: string, objs: KubeObject[]) => {
    const info = kube.registry.get(RBAC_GROUP, 'v1', resource) as ResourceInfo;
    for (const obj of objs) {
      const key = objectKey(info, '', obj.metadata.name ?? '');
      if (await kube.storage.get(key)) continue;
      prepareCreate(info, obj, kube.options.now());
      try {
        await kube.storage.create(key, obj);
      } catch (e) {
        // Another member created it first.
        if (!(await kube.storage.get(key))) throw e;
      }
    }
  };
  await write('clusterroles', clusterRoles);
  await write('clusterrolebindings', clusterRoleBindings);
  await kube.hub.waitFresh(await kube.storage.currentRevision(), kube.options.freshTimeoutMs);
}

// --- impersonation ---

const SA_PREFIX = 'system:serviceaccount:';
const EXTRA_PREFIX = 'impersonate-extra-';

function headerValues(req: IncomingMessage, name: string): string[] {
  const v = req.headers[name];
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).flatMap((x) => x.split(',')).map((x) => x.trim());
}

/**
 * The user a request acts as: `user` itself without Impersonate-* headers; otherwise the
 * impersonated user, once `authorizer` lets `user` impersonate each part of it (else 403
 * with kube-apiserver's text, e.g. `users "alice" is forbidden: User "bob" cannot
 * impersonate resource "users" in API group "" at the cluster scope`). Groups, a uid or
 * extras without Impersonate-User are refused, as kube-apiserver refuses them.
 */
export function impersonate(
  req: IncomingMessage,
  user: UserInfo,
  authorizer: Authorizer,
): UserInfo {
  const names = headerValues(req, 'impersonate-user');
  const groups = headerValues(req, 'impersonate-group');
  const uids = headerValues(req, 'impersonate-uid');
  const extra: Record<string, string[]> = {};
  for (const h of Object.keys(req.headers)) {
    if (!h.startsWith(EXTRA_PREFIX)) continue;
    const key = decodeURIComponent(h.slice(EXTRA_PREFIX.length));
    extra[key] = headerValues(req, h);
  }
  if (names.length === 0) {
    if (groups.length > 0 || uids.length > 0 || Object.keys(extra).length > 0)
      throw new StatusError(
        'InternalError',
        'requested impersonation of groups, uid or extra without impersonating a user',
      );
    return user;
  }
  if (names.length > 1 || uids.length > 1)
    throw badRequest('only one Impersonate-User and one Impersonate-Uid may be given');
  const username = names[0] ?? '';
  const check = (
    resource: string,
    name: string,
    opts: { apiGroup?: string; namespace?: string; subresource?: string } = {},
  ) => {
    const attrs: RequestAttributes = {
      kind: 'resource',
      user,
      verb: 'impersonate',
      apiGroup: opts.apiGroup ?? '',
      apiVersion: '',
      resource,
      subresource: opts.subresource ?? '',
      namespace: opts.namespace ?? '',
      name,
    };
    const d = authorizer(attrs);
    if (!d.allowed) throw forbidden(attrs, d.reason);
  };
  let impliedGroups: string[] = [];
  if (username.startsWith(SA_PREFIX)) {
    const [namespace = '', name = ''] = username.slice(SA_PREFIX.length).split(':');
    check('serviceaccounts', name, { namespace });
    if (groups.length === 0)
      impliedGroups = ['system:serviceaccounts', `system:serviceaccounts:${namespace}`];
  } else {
    check('users', username);
  }
  for (const g of groups) check('groups', g);
  for (const u of uids) check('uids', u, { apiGroup: 'authentication.k8s.io' });
  for (const [key, values] of Object.entries(extra))
    for (const v of values)
      check('userextras', v, { apiGroup: 'authentication.k8s.io', subresource: key });
  const all = [...groups, ...impliedGroups];
  const implicit = username === ANONYMOUS_USER ? UNAUTHENTICATED_GROUP : AUTHENTICATED_GROUP;
  if (!all.includes(implicit)) all.push(implicit);
  return {
    username,
    uid: uids[0] ?? '',
    groups: all,
    ...(Object.keys(extra).length > 0 ? { extra } : {}),
    impersonatedBy: user,
  };
}

// --- reviews ---

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => !!v && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The attributes a SelfSubjectAccessReview spec asks about, for `user`. */
export function reviewAttributes(user: UserInfo, spec: unknown): RequestAttributes {
  if (!isRec(spec)) throw badRequest('spec is required');
  const ra = spec.resourceAttributes;
  const nra = spec.nonResourceAttributes;
  if (isRec(ra) && nra === undefined) {
    return {
      kind: 'resource',
      user,
      verb: str(ra.verb),
      apiGroup: str(ra.group),
      apiVersion: str(ra.version),
      resource: str(ra.resource),
      subresource: str(ra.subresource),
      namespace: str(ra.namespace),
      name: str(ra.name),
    };
  }
  if (isRec(nra) && ra === undefined) {
    return { kind: 'nonResource', user, verb: str(nra.verb), path: str(nra.path) };
  }
  throw badRequest(
    'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified',
  );
}

/** POST selfsubjectaccessreviews: the decision for the caller, nothing stored. */
export async function handleSelfSubjectAccessReview(
  kube: Kube,
  rr: ResourceRequest,
  user: UserInfo,
  authorizer: Authorizer,
): Promise<void> {
  const body = await readObjectBody(kube, rr);
  const attrs = reviewAttributes(user, body.spec);
  const d = authorizer(attrs);
  sendJson(rr.res, 201, {
    kind: 'SelfSubjectAccessReview',
    apiVersion: 'authorization.k8s.io/v1',
    metadata: { creationTimestamp: null },
    spec: body.spec,
    status: { allowed: d.allowed, ...(d.reason !== '' ? { reason: d.reason } : {}) },
  });
}

/**
 * POST subjectaccessreviews and namespaces/<ns>/localsubjectaccessreviews: the decision for
 * the user and groups the spec names (exactly those: no group is added), nothing stored.
 * Creating one is itself a request RBAC decides (the `create` verb on the resource).
 */
export async function handleSubjectAccessReview(
  kube: Kube,
  rr: ResourceRequest,
  authorizer: Authorizer,
): Promise<void> {
  const body = await readObjectBody(kube, rr);
  const local = rr.info.resource === 'localsubjectaccessreviews';
  const kind = local ? 'LocalSubjectAccessReview' : 'SubjectAccessReview';
  const spec = body.spec;
  if (!isRec(spec)) throw badRequest('spec is required');
  const groups = Array.isArray(spec.groups) ? spec.groups.filter((g) => typeof g === 'string') : [];
  const username = str(spec.user);
  if (username === '' && groups.length === 0)
    throw new StatusError(
      'Invalid',
      `${kind}.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be specified`,
    );
  const extra: Record<string, string[]> = {};
  if (isRec(spec.extra))
    for (const [k, v] of Object.entries(spec.extra))
      if (Array.isArray(v)) extra[k] = v.filter((x) => typeof x === 'string');
  const subject: UserInfo = {
    username,
    uid: str(spec.uid),
    groups,
    ...(Object.keys(extra).length > 0 ? { extra } : {}),
  };
  const attrs = reviewAttributes(subject, spec);
  const namespace = rr.path.namespace ?? '';
  if (local) {
    if (attrs.kind !== 'resource')
      throw badRequest(
        'spec.nonResourceAttributes: Invalid value: disallowed on this kind of request',
      );
    if (attrs.namespace !== namespace)
      throw badRequest(
        `spec.resourceAttributes.namespace must match namespace: ${attrs.namespace} ${namespace}`,
      );
  }
  const d = authorizer(attrs);
  sendJson(rr.res, 201, {
    kind,
    apiVersion: 'authorization.k8s.io/v1',
    metadata: { ...(local ? { namespace } : {}), creationTimestamp: null },
    spec,
    status: { allowed: d.allowed, ...(d.reason !== '' ? { reason: d.reason } : {}) },
  });
}

/** POST selfsubjectreviews: who the caller is (`kubectl auth whoami`). */
export async function handleSelfSubjectReview(
  kube: Kube,
  rr: ResourceRequest,
  user: UserInfo,
): Promise<void> {
  await readObjectBody(kube, rr);
  sendJson(rr.res, 201, {
    kind: 'SelfSubjectReview',
    apiVersion: 'authentication.k8s.io/v1',
    metadata: { creationTimestamp: null },
    status: {
      userInfo: {
        username: user.username,
        ...(user.uid !== '' ? { uid: user.uid } : {}),
        groups: user.groups,
        ...(user.extra ? { extra: user.extra } : {}),
      },
    },
  });
}
