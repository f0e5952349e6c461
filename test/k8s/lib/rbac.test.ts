/**
 * The RBAC rule matcher and evaluation of src/k8s/rbac.ts as pure functions: tables of
 * Kubernetes' matching rules (verbs, groups, resources with `*` and `*\/subresource`,
 * resourceNames, non-resource URL prefixes, subjects), binding scope, aggregation, the
 * Forbidden texts, the authenticators of src/api/k8s/auth.ts, and a fast-check property
 * of `authorize` against a brute-force model of the same policy.
 */
import type { IncomingMessage } from 'node:http';
import fc from 'fast-check';
import t from 'tap';
import { authenticator, parseTokenFile } from '../../../src/api/k8s/auth.js';
import { isEtceteraError } from '../../../src/errors.js';
import {
  authorize,
  bootstrapPolicy,
  forbidden,
  type PolicyRule,
  type RbacPolicy,
  type RequestAttributes,
  ruleAllows,
  subjectMatches,
  type UserInfo,
} from '../../../src/k8s/rbac.js';
import { StatusError } from '../../../src/k8s/status.js';
import type { KubeObject } from '../../../src/k8s/types.js';

const ALICE: UserInfo = { username: 'alice', uid: '', groups: ['dev', 'system:authenticated'] };

function res(o: Partial<Extract<RequestAttributes, { kind: 'resource' }>>): RequestAttributes {
  return {
    kind: 'resource',
    user: ALICE,
    verb: 'get',
    apiGroup: '',
    apiVersion: 'v1',
    resource: 'pods',
    subresource: '',
    namespace: 'default',
    name: '',
    ...o,
  };
}

t.test('ruleAllows: the matching rules, one by one', async (t) => {
  const rows: [string, PolicyRule, RequestAttributes, boolean][] = [
    ['exact', { verbs: ['get'], apiGroups: [''], resources: ['pods'] }, res({}), true],
    ['verb differs', { verbs: ['list'], apiGroups: [''], resources: ['pods'] }, res({}), false],
    [
      'verb *',
      { verbs: ['*'], apiGroups: [''], resources: ['pods'] },
      res({ verb: 'delete' }),
      true,
    ],
    ['group differs', { verbs: ['get'], apiGroups: ['apps'], resources: ['pods'] }, res({}), false],
    [
      'group *',
      { verbs: ['get'], apiGroups: ['*'], resources: ['deployments'] },
      res({ apiGroup: 'apps', resource: 'deployments' }),
      true,
    ],
    ['no groups', { verbs: ['get'], resources: ['pods'] }, res({}), false],
    [
      'resource *',
      { verbs: ['get'], apiGroups: [''], resources: ['*'] },
      res({ resource: 'secrets' }),
      true,
    ],
    [
      'resource * covers subresources',
      { verbs: ['get'], apiGroups: [''], resources: ['*'] },
      res({ subresource: 'log' }),
      true,
    ],
    [
      'pods does not cover pods/log',
      { verbs: ['get'], apiGroups: [''], resources: ['pods'] },
      res({ subresource: 'log' }),
      false,
    ],
    [
      'pods/log',
      { verbs: ['get'], apiGroups: [''], resources: ['pods/log'] },
      res({ subresource: 'log' }),
      true,
    ],
    [
      '*/scale',
      { verbs: ['get'], apiGroups: ['apps'], resources: ['*/scale'] },
      res({ apiGroup: 'apps', resource: 'deployments', subresource: 'scale' }),
      true,
    ],
    [
      '*/scale is not the main resource',
      { verbs: ['get'], apiGroups: ['apps'], resources: ['*/scale'] },
      res({ apiGroup: 'apps', resource: 'deployments' }),
      false,
    ],
    [
      '*/status is not */scale',
      { verbs: ['get'], apiGroups: [''], resources: ['*/status'] },
      res({ subresource: 'scale' }),
      false,
    ],
    [
      'resourceNames hit',
      { verbs: ['get'], apiGroups: [''], resources: ['pods'], resourceNames: ['a'] },
      res({ name: 'a' }),
      true,
    ],
    [
      'resourceNames miss',
      { verbs: ['get'], apiGroups: [''], resources: ['pods'], resourceNames: ['a'] },
      res({ name: 'b' }),
      false,
    ],
    [
      'resourceNames never allow a list',
      { verbs: ['list'], apiGroups: [''], resources: ['pods'], resourceNames: ['a'] },
      res({ verb: 'list' }),
      false,
    ],
    [
      'resource rule does not match a path',
      { verbs: ['get'], apiGroups: ['*'], resources: ['*'] },
      { kind: 'nonResource', user: ALICE, verb: 'get', path: '/api' },
      false,
    ],
    [
      'URL exact',
      { verbs: ['get'], nonResourceURLs: ['/healthz'] },
      { kind: 'nonResource', user: ALICE, verb: 'get', path: '/healthz' },
      true,
    ],
    [
      'URL prefix *',
      { verbs: ['get'], nonResourceURLs: ['/apis/*'] },
      { kind: 'nonResource', user: ALICE, verb: 'get', path: '/apis/apps/v1' },
      true,
    ],
    [
      'URL prefix is not the bare path',
      { verbs: ['get'], nonResourceURLs: ['/apis/*'] },
      { kind: 'nonResource', user: ALICE, verb: 'get', path: '/apis' },
      false,
    ],
    [
      'URL *',
      { verbs: ['*'], nonResourceURLs: ['*'] },
      { kind: 'nonResource', user: ALICE, verb: 'post', path: '/x' },
      true,
    ],
    [
      'URL rule does not match a resource',
      { verbs: ['*'], nonResourceURLs: ['*'] },
      res({}),
      false,
    ],
  ];
  for (const [why, rule, attrs, want] of rows) t.equal(ruleAllows(attrs, rule), want, why);
});

t.test('subjectMatches: users, groups, service accounts', async (t) => {
  const sa: UserInfo = { username: 'system:serviceaccount:ns1:robot', uid: '', groups: [] };
  t.ok(subjectMatches(ALICE, { kind: 'User', name: 'alice' }, ''));
  t.notOk(subjectMatches(ALICE, { kind: 'User', name: 'bob' }, ''));
  t.ok(subjectMatches(ALICE, { kind: 'Group', name: 'dev' }, ''));
  t.notOk(subjectMatches(ALICE, { kind: 'Group', name: 'alice' }, ''), 'a group is not a user');
  t.ok(subjectMatches(sa, { kind: 'ServiceAccount', name: 'robot', namespace: 'ns1' }, ''));
  t.ok(subjectMatches(sa, { kind: 'ServiceAccount', name: 'robot' }, 'ns1'), "binding's namespace");
  t.notOk(subjectMatches(sa, { kind: 'ServiceAccount', name: 'robot' }, ''), 'no namespace at all');
  t.notOk(subjectMatches(sa, { kind: 'ServiceAccount', name: 'robot', namespace: 'ns2' }, 'ns1'));
});

/** A policy held in arrays (the face's cache holds the same objects). */
function policyOf(objs: KubeObject[]): RbacPolicy {
  const of = (kind: string) => objs.filter((o) => o.kind === kind);
  return {
    clusterRoles: () => of('ClusterRole'),
    clusterRole: (n) => of('ClusterRole').find((o) => o.metadata.name === n),
    role: (ns, n) => of('Role').find((o) => o.metadata.namespace === ns && o.metadata.name === n),
    clusterRoleBindings: () => of('ClusterRoleBinding'),
    roleBindings: (ns) => of('RoleBinding').filter((o) => o.metadata.namespace === ns),
  };
}

const boot = bootstrapPolicy();
const bootObjs = [...boot.clusterRoles, ...boot.clusterRoleBindings];

function binding(
  kind: 'RoleBinding' | 'ClusterRoleBinding',
  ns: string,
  roleKind: string,
  role: string,
  user: string,
): KubeObject {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind,
    metadata: { name: `${role}-${user}`, ...(ns !== '' ? { namespace: ns } : {}) },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name: role },
    subjects: [{ kind: 'User', name: user }],
  };
}

t.test('authorize: binding scope, aggregation of the bootstrap roles, masters', async (t) => {
  const p = policyOf([...bootObjs, binding('RoleBinding', 'team', 'ClusterRole', 'view', 'alice')]);
  const allowed = (a: RequestAttributes) => authorize(p, a).allowed;
  t.ok(
    allowed(res({ verb: 'list', namespace: 'team' })),
    'view (by aggregation) lists pods in team',
  );
  t.notOk(allowed(res({ verb: 'list', namespace: 'other' })), 'not in another namespace');
  t.notOk(allowed(res({ verb: 'list', namespace: '' })), 'not across namespaces');
  t.notOk(
    allowed(res({ verb: 'get', resource: 'secrets', namespace: 'team', name: 's' })),
    'view reads no secrets',
  );
  t.notOk(allowed(res({ verb: 'create', namespace: 'team' })), 'view creates nothing');
  t.ok(
    allowed({ kind: 'nonResource', user: ALICE, verb: 'get', path: '/apis/apps' }),
    'discovery for the authenticated',
  );
  const edit = policyOf([
    ...bootObjs,
    binding('RoleBinding', 'team', 'ClusterRole', 'edit', 'alice'),
  ]);
  t.ok(authorize(edit, res({ verb: 'list', namespace: 'team' })).allowed, 'edit includes view');
  t.ok(authorize(edit, res({ verb: 'create', namespace: 'team' })).allowed);
  t.notOk(
    authorize(
      edit,
      res({
        verb: 'create',
        namespace: 'team',
        apiGroup: 'rbac.authorization.k8s.io',
        resource: 'roles',
      }),
    ).allowed,
    'edit grants no RBAC',
  );
  const admin = policyOf([
    ...bootObjs,
    binding('RoleBinding', 'team', 'ClusterRole', 'admin', 'alice'),
  ]);
  t.ok(
    authorize(
      admin,
      res({
        verb: 'create',
        namespace: 'team',
        apiGroup: 'rbac.authorization.k8s.io',
        resource: 'roles',
      }),
    ).allowed,
    'admin includes edit and RBAC',
  );
  const root: UserInfo = { username: 'root', uid: '', groups: ['system:masters'] };
  t.ok(
    authorize(p, res({ user: root, verb: 'deletecollection', resource: 'nodes', namespace: '' }))
      .allowed,
  );
  t.ok(authorize(p, { kind: 'nonResource', user: root, verb: 'post', path: '/anything' }).allowed);
  const dangling = policyOf([binding('ClusterRoleBinding', '', 'ClusterRole', 'gone', 'alice')]);
  t.same(authorize(dangling, res({})), {
    allowed: false,
    reason: 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found',
  });
  const rb = policyOf([binding('RoleBinding', 'team', 'Role', 'missing', 'alice')]);
  t.notOk(authorize(rb, res({ namespace: 'team' })).allowed);
});

t.test('forbidden: kube-apiserver texts for each scope', async (t) => {
  const cases: [RequestAttributes, string][] = [
    [
      res({ verb: 'list' }),
      'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"',
    ],
    [
      res({ verb: 'list', namespace: '' }),
      'pods is forbidden: User "alice" cannot list resource "pods" in API group "" at the cluster scope',
    ],
    [
      res({ verb: 'get', name: 'web', subresource: 'log' }),
      'pods "web" is forbidden: User "alice" cannot get resource "pods/log" in API group "" in the namespace "default"',
    ],
    [
      res({
        verb: 'update',
        apiGroup: 'apps',
        resource: 'deployments',
        name: 'd',
        subresource: 'scale',
      }),
      'deployments.apps "d" is forbidden: User "alice" cannot update resource "deployments/scale" in API group "apps" in the namespace "default"',
    ],
    [
      { kind: 'nonResource', user: ALICE, verb: 'get', path: '/openapi/v3' },
      'forbidden: User "alice" cannot get path "/openapi/v3"',
    ],
  ];
  for (const [a, msg] of cases) {
    const e = forbidden(a);
    t.equal(e.status.message, msg);
    t.equal(e.status.code, 403);
    t.equal(e.status.reason, 'Forbidden');
  }
  t.match(forbidden(res({}), 'RBAC: x').status.message, /: RBAC: x$/);
});

function fakeReq(headers: Record<string, string>): IncomingMessage {
  return { headers, socket: {} } as unknown as IncomingMessage;
}

async function failure(p: Promise<unknown>): Promise<StatusError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof StatusError) return e;
    throw e;
  }
  throw new Error('expected a StatusError');
}

t.test('authenticator: tokens, anonymous on and off', async (t) => {
  const tokens = parseTokenFile('tok1,bob,7,"a,b"\ntok2,carol,8\n', 'f');
  const on = authenticator({ tokens });
  t.same(await on(fakeReq({ authorization: 'Bearer tok1' })), {
    username: 'bob',
    uid: '7',
    groups: ['a', 'b', 'system:authenticated'],
  });
  t.same((await on(fakeReq({ authorization: 'Bearer tok2' }))).groups, ['system:authenticated']);
  t.same(await on(fakeReq({})), {
    username: 'system:anonymous',
    uid: '',
    groups: ['system:unauthenticated'],
  });
  const e = await failure(on(fakeReq({ authorization: 'Bearer nope' })));
  t.same(e.status, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'Unauthorized',
    reason: 'Unauthorized',
    code: 401,
  });
  t.equal(e.code, 'ERR_KUBE_UNAUTHORIZED');
  const off = authenticator({ tokens, anonymous: false });
  t.equal((await failure(off(fakeReq({})))).status.code, 401);
  t.equal((await off(fakeReq({ authorization: 'Bearer tok1' }))).username, 'bob');
  // No token authenticator configured: a token is not looked at (today's behaviour).
  t.equal(
    (await authenticator()(fakeReq({ authorization: 'Bearer x' }))).username,
    'system:anonymous',
  );
});

t.test('parseTokenFile: bad files are clear errors', async (t) => {
  for (const [text, want] of [
    ['tok,user\n', /line 1 must have at least 3 columns \(token, user name, user uid\), found 2/],
    ['ok,u,1\n,u,2\n', /line 2 has an empty token or user name/],
    ['a,b,"unterminated\n', /--token-auth-file f: /],
  ] as const) {
    try {
      parseTokenFile(text, 'f');
      t.fail(`accepted ${JSON.stringify(text)}`);
    } catch (e) {
      t.ok(isEtceteraError(e, 'ERR_INVALID_ARGUMENT'));
      t.match((e as Error).message, want);
    }
  }
});

// --- property: authorize agrees with a brute-force model ---

const VERBS = ['get', 'list', 'create', 'delete'];
const GROUPS = ['', 'apps'];
const RESOURCES = ['pods', 'deployments'];
const SUBS = ['', 'status'];
const NAMESPACES = ['', 'a', 'b'];
const NAMES = ['', 'x', 'y'];
const USERS = ['u1', 'u2'];

const arbRule = fc.record({
  verbs: fc.subarray([...VERBS, '*'], { minLength: 1 }),
  apiGroups: fc.subarray([...GROUPS, '*'], { minLength: 1 }),
  resources: fc.subarray(['pods', 'deployments', 'pods/status', '*/status', '*'], { minLength: 1 }),
  resourceNames: fc.subarray(['x', 'y']),
});

/** The model: enumerate every (binding, rule) pair that could apply and check it literally. */
function modelAllows(
  objs: KubeObject[],
  a: Extract<RequestAttributes, { kind: 'resource' }>,
): boolean {
  const rulesOfRole = (kind: string, ns: string, name: string): PolicyRule[] => {
    const r = objs.find(
      (o) =>
        o.kind === kind &&
        o.metadata.name === name &&
        (kind === 'ClusterRole' || o.metadata.namespace === ns),
    ) as unknown as { rules?: PolicyRule[] } | undefined;
    return r?.rules ?? [];
  };
  const literal = (rule: PolicyRule): boolean => {
    const combined = a.subresource === '' ? a.resource : `${a.resource}/${a.subresource}`;
    const verb = rule.verbs.includes('*') || rule.verbs.includes(a.verb);
    const group =
      (rule.apiGroups ?? []).includes('*') || (rule.apiGroups ?? []).includes(a.apiGroup);
    const resource = (rule.resources ?? []).some(
      (r) => r === '*' || r === combined || (a.subresource !== '' && r === `*/${a.subresource}`),
    );
    const names = rule.resourceNames ?? [];
    return verb && group && resource && (names.length === 0 || names.includes(a.name));
  };
  for (const b of objs) {
    if (b.kind !== 'RoleBinding' && b.kind !== 'ClusterRoleBinding') continue;
    const sub = (b as unknown as { subjects: { name: string }[] }).subjects;
    if (!sub.some((s) => s.name === a.user.username)) continue;
    const ref = (b as unknown as { roleRef: { kind: string; name: string } }).roleRef;
    if (b.kind === 'ClusterRoleBinding') {
      if (rulesOfRole('ClusterRole', '', ref.name).some(literal)) return true;
    } else if (
      b.kind === 'RoleBinding' &&
      a.namespace !== '' &&
      b.metadata.namespace === a.namespace
    ) {
      if (rulesOfRole(ref.kind, a.namespace, ref.name).some(literal)) return true;
    }
  }
  return false;
}

t.test('property: authorize equals the model', async (t) => {
  const arbRole = fc.record({
    cluster: fc.boolean(),
    name: fc.constantFrom('r1', 'r2'),
    ns: fc.constantFrom('a', 'b'),
    rules: fc.array(arbRule, { maxLength: 3 }),
  });
  const arbBinding = fc.record({
    cluster: fc.boolean(),
    ns: fc.constantFrom('a', 'b'),
    roleKind: fc.constantFrom('Role', 'ClusterRole'),
    role: fc.constantFrom('r1', 'r2', 'r3'),
    user: fc.constantFrom(...USERS),
  });
  const arbAttrs = fc.record({
    verb: fc.constantFrom(...VERBS),
    apiGroup: fc.constantFrom(...GROUPS),
    resource: fc.constantFrom(...RESOURCES),
    subresource: fc.constantFrom(...SUBS),
    namespace: fc.constantFrom(...NAMESPACES),
    name: fc.constantFrom(...NAMES),
    user: fc.constantFrom(...USERS),
  });
  t.doesNotThrow(
    () =>
      fc.assert(
        fc.property(
          fc.array(arbRole, { maxLength: 4 }),
          fc.array(arbBinding, { maxLength: 4 }),
          arbAttrs,
          (roles, bindings, at) => {
            const objs: KubeObject[] = [];
            for (const r of roles) {
              objs.push({
                apiVersion: 'rbac.authorization.k8s.io/v1',
                kind: r.cluster ? 'ClusterRole' : 'Role',
                metadata: { name: r.name, ...(r.cluster ? {} : { namespace: r.ns }) },
                rules: r.rules,
              } as KubeObject);
            }
            for (const b of bindings) {
              const kind = b.cluster ? 'ClusterRoleBinding' : 'RoleBinding';
              objs.push(
                binding(
                  kind,
                  b.cluster ? '' : b.ns,
                  b.cluster ? 'ClusterRole' : b.roleKind,
                  b.role,
                  b.user,
                ),
              );
            }
            const a = res({ ...at, user: { username: at.user, uid: '', groups: [] } }) as Extract<
              RequestAttributes,
              { kind: 'resource' }
            >;
            return authorize(policyOf(objs), a).allowed === modelAllows(objs, a);
          },
        ),
        { numRuns: 2000 },
      ),
    '2000 random policies and requests agree',
  );
});
