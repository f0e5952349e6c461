/**
 * Authentication, RBAC and the audit log of the Kubernetes face over one in-process server
 * (RBAC mode, anonymous access on): bearer tokens from a token file, ServiceAccount JWTs,
 * the bootstrap roles, 403 texts, SelfSubjectAccessReview and SelfSubjectReview, every route
 * refused to anonymous and to a namespace-only user outside its namespace, client-node with
 * a token, and the audit lines of a create, a patch and a delete.
 */
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { SignJWT } from 'jose';
import t from 'tap';
import { fileAuditSink } from '../../src/api/k8s/audit.js';
import { parseTokenFile } from '../../src/api/k8s/auth.js';
import { call, type KubeServer, pod, startKube } from './harness.js';

const TOKENS = `admin-token,admin,1,"system:masters"
alice-token,alice,2,"developers,qa"
carol-token,carol,3
`;

const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const otherKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;

function saToken(ns: string, name: string, key = privateKey, exp = '1h'): Promise<string> {
  return new SignJWT({
    'kubernetes.io': { namespace: ns, serviceaccount: { name, uid: `uid-${name}` } },
  })
    .setProtectedHeader({ alg: 'ES256' })
    .setSubject(`system:serviceaccount:${ns}:${name}`)
    .setIssuer('https://kubernetes.default.svc')
    .setIssuedAt()
    .setExpirationTime(exp)
    .sign(key);
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const ADMIN = bearer('admin-token');
const ALICE = bearer('alice-token');
const CAROL = bearer('carol-token');

let s: KubeServer;
let auditPath: string;

t.before(async () => {
  let rv = 0;
  const dir = t.testdir();
  auditPath = join(dir, 'audit.log');
  s = await startKube(dir, {
    authorizationMode: 'RBAC',
    authentication: {
      tokens: parseTokenFile(TOKENS, 'tokens.csv'),
      serviceAccountKeys: [publicKey],
    },
    audit: fileAuditSink(auditPath),
  });
  // alice may view namespace "team" (a RoleBinding to the bootstrap ClusterRole view).
  for (const [path, body] of [
    ['/api/v1/namespaces', { metadata: { name: 'team' } }],
    [
      '/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings',
      {
        metadata: { name: 'alice-view' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
      },
    ],
    [
      '/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles',
      {
        metadata: { name: 'read-one-secret' },
        rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: ['s1'] }],
      },
    ],
    [
      '/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings',
      {
        metadata: { name: 'robot-secret' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-one-secret' },
        subjects: [{ kind: 'ServiceAccount', name: 'robot' }],
      },
    ],
    // carol may impersonate the user alice and nobody else.
    [
      '/apis/rbac.authorization.k8s.io/v1/clusterroles',
      {
        metadata: { name: 'impersonate-alice' },
        rules: [
          {
            apiGroups: [''],
            resources: ['users'],
            verbs: ['impersonate'],
            resourceNames: ['alice'],
          },
        ],
      },
    ],
    [
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
      {
        metadata: { name: 'carol-impersonates-alice' },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: 'impersonate-alice',
        },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'carol' }],
      },
    ],
    ['/api/v1/namespaces/team/pods', pod('p1')],
    ['/api/v1/namespaces/default/pods', pod('d1')],
    ['/api/v1/namespaces/team/secrets', { metadata: { name: 's1' }, data: {} }],
    ['/api/v1/namespaces/team/secrets', { metadata: { name: 's2' }, data: {} }],
  ] as const) {
    const r = await call(s.url, 'POST', path, body, ADMIN);
    if (r.status !== 201) throw new Error(`setup ${path}: ${r.status} ${r.text}`);
    rv = Number(r.body.metadata.resourceVersion);
  }
  // Decisions read the face's cache: wait until it holds the bindings just written.
  await s.kube.hub.waitFresh(rv, 5000);
});
t.teardown(() => s.close());

t.test('bootstrap policy: default ClusterRoles and system:masters binding exist', async (t) => {
  const roles = await call(
    s.url,
    'GET',
    '/apis/rbac.authorization.k8s.io/v1/clusterroles',
    undefined,
    ADMIN,
  );
  t.equal(roles.status, 200);
  const names = roles.body.items.map((i: { metadata: { name: string } }) => i.metadata.name);
  for (const n of ['cluster-admin', 'admin', 'edit', 'view']) t.ok(names.includes(n), n);
  const crb = await call(
    s.url,
    'GET',
    '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/cluster-admin',
    undefined,
    ADMIN,
  );
  t.same(crb.body.subjects, [
    { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:masters' },
  ]);
  t.same(crb.body.roleRef, {
    apiGroup: 'rbac.authorization.k8s.io',
    kind: 'ClusterRole',
    name: 'cluster-admin',
  });
  const disc = await call(s.url, 'GET', '/apis/rbac.authorization.k8s.io/v1', undefined, ADMIN);
  t.same(disc.body.resources.map((r: { name: string }) => r.name).sort(), [
    'clusterrolebindings',
    'clusterroles',
    'rolebindings',
    'roles',
  ]);
});

t.test('a namespace viewer: what alice may and may not do', async (t) => {
  const may = [
    ['GET', '/api/v1/namespaces/team/pods'],
    ['GET', '/api/v1/namespaces/team/pods/p1'],
    ['GET', '/api/v1/namespaces/team/pods?watch=1&timeoutSeconds=1'],
    ['GET', '/apis/apps/v1/namespaces/team/deployments'],
    ['GET', '/api/v1/namespaces/team'],
    ['GET', '/api'],
    ['GET', '/apis/apps/v1'],
  ];
  for (const [m, p] of may) {
    const r = await call(s.url, m as string, p as string, undefined, ALICE);
    t.equal(r.status, 200, `${m} ${p}`);
  }
  const refused: [string, string, unknown, string][] = [
    [
      'GET',
      '/api/v1/namespaces/default/pods',
      undefined,
      'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"',
    ],
    [
      'GET',
      '/api/v1/pods',
      undefined,
      'pods is forbidden: User "alice" cannot list resource "pods" in API group "" at the cluster scope',
    ],
    [
      'GET',
      '/api/v1/pods?watch=true',
      undefined,
      'pods is forbidden: User "alice" cannot watch resource "pods" in API group "" at the cluster scope',
    ],
    [
      'POST',
      '/api/v1/namespaces/team/pods',
      pod('p2'),
      'pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the namespace "team"',
    ],
    [
      'DELETE',
      '/api/v1/namespaces/team/pods/p1',
      undefined,
      'pods "p1" is forbidden: User "alice" cannot delete resource "pods" in API group "" in the namespace "team"',
    ],
    [
      'PUT',
      '/api/v1/namespaces/team/pods/p1/status',
      {},
      'pods "p1" is forbidden: User "alice" cannot update resource "pods/status" in API group "" in the namespace "team"',
    ],
    [
      'GET',
      '/api/v1/namespaces/team/secrets/s1',
      undefined,
      'secrets "s1" is forbidden: User "alice" cannot get resource "secrets" in API group "" in the namespace "team"',
    ],
    [
      'GET',
      '/apis/rbac.authorization.k8s.io/v1/clusterroles',
      undefined,
      'clusterroles.rbac.authorization.k8s.io is forbidden: User "alice" cannot list resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope',
    ],
    [
      'GET',
      '/api/v1/nodes/n1',
      undefined,
      'nodes "n1" is forbidden: User "alice" cannot get resource "nodes" in API group "" at the cluster scope',
    ],
  ];
  for (const [m, p, body, message] of refused) {
    const r = await call(s.url, m, p, body, ALICE);
    t.equal(r.status, 403, `${m} ${p}`);
    t.match(r.body, { kind: 'Status', reason: 'Forbidden', code: 403, message }, `${m} ${p}`);
  }
  const nonResource = await call(s.url, 'GET', '/api', undefined, {});
  t.equal(nonResource.status, 403);
  t.equal(nonResource.body.message, 'forbidden: User "system:anonymous" cannot get path "/api"');
});

t.test('ServiceAccount tokens: verified, named, bound; bad ones are 401', async (t) => {
  const robot = bearer(await saToken('team', 'robot'));
  const who = await call(
    s.url,
    'POST',
    '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    robot,
  );
  t.equal(who.status, 201);
  t.same(who.body.status.userInfo, {
    username: 'system:serviceaccount:team:robot',
    uid: 'uid-robot',
    groups: ['system:serviceaccounts', 'system:serviceaccounts:team', 'system:authenticated'],
  });
  // resourceNames: s1 only, and get only.
  t.equal(
    (await call(s.url, 'GET', '/api/v1/namespaces/team/secrets/s1', undefined, robot)).status,
    200,
  );
  t.equal(
    (await call(s.url, 'GET', '/api/v1/namespaces/team/secrets/s2', undefined, robot)).status,
    403,
  );
  t.equal(
    (await call(s.url, 'GET', '/api/v1/namespaces/team/secrets', undefined, robot)).status,
    403,
  );
  for (const [why, token] of [
    ['signed by another key', await saToken('team', 'robot', otherKey)],
    ['expired', await saToken('team', 'robot', privateKey, '-1m')],
    ['not a token', 'nope'],
    ['a JWT shape of garbage', 'a.b.c'],
  ] as const) {
    const r = await call(s.url, 'GET', '/api/v1/namespaces/team/pods', undefined, bearer(token));
    t.equal(r.status, 401, why);
    t.match(r.body, {
      kind: 'Status',
      status: 'Failure',
      reason: 'Unauthorized',
      code: 401,
      message: 'Unauthorized',
    });
  }
});

t.test('SelfSubjectAccessReview answers for the caller', async (t) => {
  const ask = async (headers: Record<string, string>, resourceAttributes: object) => {
    const r = await call(
      s.url,
      'POST',
      '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
      {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: { resourceAttributes },
      },
      headers,
    );
    t.equal(r.status, 201);
    return r.body.status.allowed as boolean;
  };
  t.equal(await ask(ALICE, { verb: 'list', resource: 'pods', namespace: 'team' }), true);
  t.equal(await ask(ALICE, { verb: 'list', resource: 'pods', namespace: 'default' }), false);
  t.equal(
    await ask(ALICE, { verb: 'create', resource: 'deployments', group: 'apps', namespace: 'team' }),
    false,
  );
  t.equal(await ask(ADMIN, { verb: 'delete', resource: 'nodes' }), true);
  const anon = await call(s.url, 'POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
    spec: { resourceAttributes: { verb: 'get', resource: 'pods' } },
  });
  t.equal(
    anon.status,
    403,
    'anonymous users may not ask (system:basic-user is for authenticated users)',
  );
});

t.test(
  'SubjectAccessReview and LocalSubjectAccessReview decide for the named subject',
  async (t) => {
    const SAR = '/apis/authorization.k8s.io/v1/subjectaccessreviews';
    const LOCAL = '/apis/authorization.k8s.io/v1/namespaces/team/localsubjectaccessreviews';
    const ask = async (path: string, spec: object, headers = ADMIN) => {
      const r = await call(
        s.url,
        'POST',
        path,
        { apiVersion: 'authorization.k8s.io/v1', spec },
        headers,
      );
      return r.status === 201 ? r.body.status.allowed : `${r.status} ${r.body?.message}`;
    };
    const pods = (namespace: string) => ({ verb: 'list', resource: 'pods', namespace });
    t.equal(await ask(SAR, { user: 'alice', resourceAttributes: pods('team') }), true);
    t.equal(await ask(SAR, { user: 'alice', resourceAttributes: pods('default') }), false);
    t.equal(await ask(SAR, { user: 'nobody', resourceAttributes: pods('team') }), false);
    t.equal(
      await ask(SAR, {
        groups: ['system:masters'],
        resourceAttributes: { verb: 'delete', resource: 'nodes' },
      }),
      true,
      'a group alone',
    );
    t.equal(
      await ask(SAR, { user: 'alice', nonResourceAttributes: { verb: 'get', path: '/api' } }),
      false,
      'exactly the groups given: alice without system:authenticated has no discovery',
    );
    t.equal(
      await ask(SAR, {
        user: 'alice',
        groups: ['system:authenticated'],
        nonResourceAttributes: { verb: 'get', path: '/api' },
      }),
      true,
    );
    t.equal(
      await ask(SAR, { resourceAttributes: pods('team') }),
      '422 SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be specified',
    );
    const local = await call(
      s.url,
      'POST',
      LOCAL,
      {
        spec: {
          user: 'alice',
          resourceAttributes: { verb: 'get', resource: 'pods', namespace: 'team' },
        },
      },
      ADMIN,
    );
    t.equal(local.status, 201);
    t.match(local.body, {
      kind: 'LocalSubjectAccessReview',
      metadata: { namespace: 'team' },
      status: { allowed: true },
    });
    t.match(await ask(LOCAL, { user: 'alice', resourceAttributes: pods('default') }), /^400 /);
    t.equal(
      await ask(SAR, { user: 'alice', resourceAttributes: pods('team') }, ALICE),
      '403 subjectaccessreviews.authorization.k8s.io is forbidden: User "alice" cannot create resource "subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope',
      'asking about others needs a grant',
    );
  },
);

t.test('impersonation: Impersonate-User and -Group, allowed by the impersonate verb', async (t) => {
  const whoami = async (headers: Record<string, string>) => {
    const r = await call(
      s.url,
      'POST',
      '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      headers,
    );
    return r.status === 201 ? r.body.status.userInfo : `${r.status} ${r.body?.message}`;
  };
  const pods = (ns: string, headers: Record<string, string>) =>
    call(s.url, 'GET', `/api/v1/namespaces/${ns}/pods`, undefined, headers);

  // system:masters may impersonate anyone: alice's grants then decide, not admin's.
  const asAlice = { ...ADMIN, 'impersonate-user': 'alice' };
  t.equal((await pods('team', asAlice)).status, 200);
  const denied = await pods('default', asAlice);
  t.equal(denied.status, 403);
  t.equal(
    denied.body.message,
    'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"',
  );
  t.same(await whoami({ ...asAlice, 'impersonate-group': 'qa' }), {
    username: 'alice',
    groups: ['qa', 'system:authenticated'],
  });
  t.same(await whoami({ ...ADMIN, 'impersonate-user': 'system:serviceaccount:team:robot' }), {
    username: 'system:serviceaccount:team:robot',
    groups: ['system:serviceaccounts', 'system:serviceaccounts:team', 'system:authenticated'],
  });
  const robot = await call(s.url, 'GET', '/api/v1/namespaces/team/secrets/s1', undefined, {
    ...ADMIN,
    'impersonate-user': 'system:serviceaccount:team:robot',
  });
  t.equal(robot.status, 200, "the ServiceAccount's RoleBinding applies");

  // carol may impersonate alice only, and no group.
  t.equal((await pods('team', { ...CAROL, 'impersonate-user': 'alice' })).status, 200);
  const asAdmin = await pods('team', { ...CAROL, 'impersonate-user': 'admin' });
  t.equal(asAdmin.status, 403);
  t.equal(
    asAdmin.body.message,
    'users "admin" is forbidden: User "carol" cannot impersonate resource "users" in API group "" at the cluster scope',
  );
  const withGroup = await pods('team', {
    ...CAROL,
    'impersonate-user': 'alice',
    'impersonate-group': 'system:masters',
  });
  t.equal(withGroup.status, 403);
  t.equal(
    withGroup.body.message,
    'groups "system:masters" is forbidden: User "carol" cannot impersonate resource "groups" in API group "" at the cluster scope',
  );
  // alice has no impersonate grant at all; anonymous neither.
  t.equal((await pods('team', { ...ALICE, 'impersonate-user': 'admin' })).status, 403);
  t.equal((await pods('team', { 'impersonate-user': 'admin' })).status, 403);
  // The audit line names who asked and whom it acted as.
  const write = await call(
    s.url,
    'POST',
    '/api/v1/namespaces/team/configmaps',
    { metadata: { name: 'as-alice' } },
    { ...CAROL, 'impersonate-user': 'alice' },
  );
  t.equal(write.status, 403, 'alice (view) may not create');
  const audited = () =>
    readFileSync(auditPath, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l))
      .filter((e) => e.user.username === 'carol' && e.objectRef?.resource === 'configmaps');
  let lines = audited();
  for (let i = 0; i < 100 && lines.length < 1; i++) {
    await new Promise((r) => setTimeout(r, 20));
    lines = audited();
  }
  t.match(lines, [
    {
      verb: 'create',
      user: { username: 'carol', uid: '3' },
      impersonatedUser: { username: 'alice', groups: ['system:authenticated'] },
      responseStatus: { code: 403 },
    },
  ]);
  // A group without a user is refused outright.
  const groupOnly = await pods('team', { ...ADMIN, 'impersonate-group': 'qa' });
  t.equal(groupOnly.status, 500);
  t.match(groupOnly.body.message, /without impersonating a user/);
});

const NON_RESOURCE: [string, string][] = [
  ['GET', '/api'],
  ['GET', '/api/v1'],
  ['GET', '/apis'],
  ['GET', '/apis/apps'],
  ['GET', '/apis/apps/v1'],
  ['GET', '/openapi/v3'],
  ['GET', '/openapi/v3/api/v1'],
];

const REVIEWS = ['selfsubjectaccessreviews', 'selfsubjectreviews'];

/** Every resource route of the face in namespace `ns`, with a body where it needs one. */
function resourceRoutes(ns: string, withReviews: boolean): [string, string, unknown?][] {
  const routes: [string, string, unknown?][] = [];
  for (const info of s.kube.registry.all()) {
    if (!withReviews && REVIEWS.includes(info.resource)) continue;
    const base = info.group === '' ? `/api/${info.version}` : `/apis/${info.group}/${info.version}`;
    const coll =
      info.scope === 'Namespaced'
        ? `${base}/namespaces/${ns}/${info.resource}`
        : `${base}/${info.resource}`;
    const item = `${coll}/x`;
    routes.push(
      ['GET', coll],
      ['GET', `${coll}?watch=1`],
      ['POST', coll, { metadata: { name: 'x' } }],
      ['DELETE', coll],
      ['GET', item],
      ['PUT', item, { metadata: { name: 'x' } }],
      ['PATCH', item, {}],
      ['DELETE', item],
    );
    if (info.statusSubresource)
      routes.push(['GET', `${item}/status`], ['PUT', `${item}/status`, {}]);
    if (info.scaleSubresource) routes.push(['GET', `${item}/scale`], ['PUT', `${item}/scale`, {}]);
    if (info.scope === 'Namespaced') routes.push(['GET', `${base}/${info.resource}`]);
  }
  return routes;
}

t.test(
  'every route: zero successes for anonymous and for alice outside her namespace',
  async (t) => {
    const before = await s.raw();
    let tried = 0;
    // alice, as every authenticated user, may read discovery and OpenAPI (system:discovery)
    // and ask the reviews about herself (system:basic-user): those are left out for her.
    for (const [who, headers, routes] of [
      ['anonymous', {}, [...NON_RESOURCE, ...resourceRoutes('default', true)]],
      ['alice outside her namespace', ALICE, resourceRoutes('default', false)],
    ] as const) {
      const allowed: string[] = [];
      // A few at a time: one server, bounded concurrency.
      for (let i = 0; i < routes.length; i += 8) {
        await Promise.all(
          routes.slice(i, i + 8).map(async ([m, p, body]) => {
            const hdrs: Record<string, string> = { ...headers };
            if (m === 'PATCH') hdrs['content-type'] = 'application/merge-patch+json';
            const r = await call(s.url, m, p, body, hdrs);
            tried++;
            if (r.status < 400) allowed.push(`${m} ${p} → ${r.status}`);
            else if (r.status !== 403) allowed.push(`${m} ${p} → ${r.status} (not 403)`);
          }),
        );
      }
      t.same(allowed, [], `${who}: no request succeeds`);
    }
    t.ok(tried > 300, `${tried} requests`);
    t.same(await s.raw(), before, 'nothing was written');
    // The one public path, as in Kubernetes (system:public-info-viewer).
    t.equal((await call(s.url, 'GET', '/version')).status, 200);
  },
);

t.test('client-node with a bearer token', async (t) => {
  const kc = (token: string) => {
    const k = new KubeConfig();
    k.loadFromOptions({
      clusters: [{ name: 'e', server: s.url, skipTLSVerify: true }],
      users: [{ name: 'u', token }],
      contexts: [{ name: 'c', cluster: 'e', user: 'u' }],
      currentContext: 'c',
    });
    return k;
  };
  const alice = kc('alice-token').makeApiClient(CoreV1Api);
  const pods = await alice.listNamespacedPod({ namespace: 'team' });
  t.same(
    pods.items.map((p) => p.metadata?.name),
    ['p1'],
  );
  const denied = await alice.listNamespacedPod({ namespace: 'default' }).then(
    () => undefined,
    (e: { code?: number; body?: string }) => e,
  );
  t.equal(denied?.code, 403);
  t.match(JSON.parse(denied?.body ?? '{}'), { reason: 'Forbidden' });
  const admin = kc('admin-token').makeApiClient(RbacAuthorizationV1Api);
  const role = await admin.createNamespacedRole({
    namespace: 'team',
    body: {
      metadata: { name: 'cm-reader' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
    },
  });
  t.equal(role.metadata?.name, 'cm-reader');
  const bad = await kc('wrong')
    .makeApiClient(CoreV1Api)
    .listNamespacedPod({ namespace: 'team' })
    .then(
      () => undefined,
      (e: { code?: number }) => e,
    );
  t.equal(bad?.code, 401);
});

t.test('audit log: create, patch and delete lines (Metadata level)', async (t) => {
  const c = await call(
    s.url,
    'POST',
    '/api/v1/namespaces/team/configmaps',
    { metadata: { name: 'audited' }, data: { a: '1' } },
    ADMIN,
  );
  t.equal(c.status, 201);
  const p = await call(
    s.url,
    'PATCH',
    '/api/v1/namespaces/team/configmaps/audited',
    { data: { a: '2' } },
    { ...ADMIN, 'content-type': 'application/merge-patch+json' },
  );
  t.equal(p.status, 200);
  const d = await call(
    s.url,
    'DELETE',
    '/api/v1/namespaces/team/configmaps/audited',
    undefined,
    ALICE,
  );
  t.equal(d.status, 403);
  const d2 = await call(
    s.url,
    'DELETE',
    '/api/v1/namespaces/team/configmaps/audited',
    undefined,
    ADMIN,
  );
  t.equal(d2.status, 200);
  const read = () =>
    readFileSync(auditPath, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l))
      .filter((e) => e.objectRef?.resource === 'configmaps' && e.objectRef?.name === 'audited');
  let lines = read();
  for (let i = 0; i < 100 && lines.length < 4; i++) {
    await new Promise((r) => setTimeout(r, 20));
    lines = read();
  }
  t.same(
    lines.map((e) => [e.verb, e.user.username, e.responseStatus.code]),
    [
      ['create', 'admin', 201],
      ['patch', 'admin', 200],
      ['delete', 'alice', 403],
      ['delete', 'admin', 200],
    ],
  );
  for (const e of lines) {
    t.match(e, {
      kind: 'Event',
      apiVersion: 'audit.k8s.io/v1',
      level: 'Metadata',
      stage: 'ResponseComplete',
      objectRef: { resource: 'configmaps', namespace: 'team', name: 'audited', apiVersion: 'v1' },
      sourceIPs: ['127.0.0.1'],
    });
    t.ok(Date.parse(e.requestReceivedTimestamp) <= Date.parse(e.stageTimestamp));
  }
  t.same(lines[0].user.groups, ['system:masters', 'system:authenticated']);
  const reads = readFileSync(auditPath, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l).verb);
  t.notOk(
    reads.includes('get') || reads.includes('list') || reads.includes('watch'),
    'reads are not audited',
  );
});
