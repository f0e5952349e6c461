/**
 * etcd's Auth service, one implementation behind both faces: POST /v3/auth/* (the gateway's
 * paths and JSON) here, and the gRPC Auth service (src/api/grpc/auth.ts) over the same
 * `AUTH_METHODS`. Each method decodes its request (JSON or protobuf, the same fields), asks
 * the member's auth (src/server/auth.ts) as the request's caller, and answers a neutral
 * message that each face encodes: bytes as Uint8Array, permission types by name, defaults
 * left out as the gateway leaves them out.
 */
import { EtceteraError } from '../../errors.js';
import type { AuthApi, Caller, ResponseHeader } from '../../server/types.js';
import type { PermissionType } from '../../store/auth.js';
import { encodeHeader } from '../../wire/etcd-json.js';
import type { BodySource } from './decode.js';
import type { RouteContext, RouteTable } from './route.js';
import { badField, decodeBytes, decodeEnum } from './wire.js';

type Obj = Record<string, unknown>;

const PERM_TYPES: readonly PermissionType[] = ['READ', 'WRITE', 'READWRITE'];

export interface AuthAnswer {
  header: ResponseHeader;
  enabled?: boolean;
  authRevision?: number;
  token?: string;
  roles?: string[];
  users?: string[];
  perm?: Array<{ permType: PermissionType; key: Uint8Array; rangeEnd: Uint8Array }>;
}

type AuthMethod = (
  body: unknown,
  from: BodySource,
  auth: AuthApi,
  caller: Caller,
) => Promise<AuthAnswer>;

function obj(body: unknown, path = ''): Obj {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw badField(path, 'expected an object');
  return body as Obj;
}

function str(o: Obj, name: string): string {
  const v = o[name];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw badField(name, 'expected a string');
  return v;
}

function bytes(o: Obj, name: string, from: BodySource, path: string): Uint8Array {
  const v = o[name];
  if (v === undefined || v === null) return new Uint8Array(0);
  if (from === 'protobuf' && v instanceof Uint8Array) return v;
  if (typeof v !== 'string') throw badField(`${path}${name}`, 'expected base64 bytes');
  return decodeBytes(`${path}${name}`, v);
}

function bool(o: Obj, name: string): boolean {
  const v = o[name];
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw badField(name, 'expected a boolean');
  return v;
}

/** The Auth service's methods by their rpc.proto names. */
export const AUTH_METHODS: Readonly<Record<string, AuthMethod>> = {
  AuthEnable: async (_b, _f, auth, caller) => auth.enable(caller),
  AuthDisable: async (_b, _f, auth, caller) => auth.disable(caller),
  AuthStatus: async (_b, _f, auth, caller) => auth.status(caller),
  Authenticate: async (b, _f, auth) => {
    const o = obj(b);
    return auth.authenticate(str(o, 'name'), str(o, 'password'));
  },
  UserAdd: async (b, _f, auth, caller) => {
    const o = obj(b);
    const options = obj(o.options, 'options');
    return auth.userAdd(caller, str(o, 'name'), str(o, 'password'), bool(options, 'no_password'));
  },
  UserGet: async (b, _f, auth, caller) => auth.userGet(caller, str(obj(b), 'name')),
  UserList: async (_b, _f, auth, caller) => auth.userList(caller),
  UserDelete: async (b, _f, auth, caller) => auth.userDelete(caller, str(obj(b), 'name')),
  UserChangePassword: async (b, _f, auth, caller) => {
    const o = obj(b);
    return auth.userChangePassword(caller, str(o, 'name'), str(o, 'password'));
  },
  UserGrantRole: async (b, _f, auth, caller) => {
    const o = obj(b);
    return auth.userGrantRole(caller, str(o, 'user'), str(o, 'role'));
  },
  UserRevokeRole: async (b, _f, auth, caller) => {
    const o = obj(b);
    return auth.userRevokeRole(caller, str(o, 'name'), str(o, 'role'));
  },
  RoleAdd: async (b, _f, auth, caller) => auth.roleAdd(caller, str(obj(b), 'name')),
  RoleGet: async (b, _f, auth, caller) => {
    const r = await auth.roleGet(caller, str(obj(b), 'role'));
    return { header: r.header, perm: r.permissions };
  },
  RoleList: async (_b, _f, auth, caller) => auth.roleList(caller),
  RoleDelete: async (b, _f, auth, caller) => auth.roleDelete(caller, str(obj(b), 'role')),
  RoleGrantPermission: async (b, from, auth, caller) => {
    const o = obj(b);
    const p = obj(o.perm, 'perm');
    const t = p.permType ?? 0;
    if (typeof t !== 'string' && typeof t !== 'number')
      throw badField('perm.permType', 'expected an enum');
    return auth.roleGrantPermission(caller, str(o, 'name'), {
      permType: decodeEnum('perm.permType', t, PERM_TYPES, 'authpb.Permission_Type'),
      key: bytes(p, 'key', from, 'perm.'),
      rangeEnd: bytes(p, 'range_end', from, 'perm.'),
    });
  },
  RoleRevokePermission: async (b, from, auth, caller) => {
    const o = obj(b);
    return auth.roleRevokePermission(
      caller,
      str(o, 'role'),
      bytes(o, 'key', from, ''),
      bytes(o, 'range_end', from, ''),
    );
  },
};

/** Runs an Auth method for a request whose context is already the caller's (route.ts). */
export async function runAuth(
  name: string,
  body: unknown,
  from: BodySource,
  ctx: RouteContext,
): Promise<AuthAnswer> {
  const auth = ctx.member.auth;
  const method = AUTH_METHODS[name];
  if (method === undefined) throw new EtceteraError('ERR_GRPC_UNIMPLEMENTED', { detail: name });
  if (auth === undefined) {
    // A member without auth answers as etcd does with auth disabled and no users.
    if (name === 'AuthStatus' || name === 'AuthDisable') return { header: ctx.member.header() };
    if (name === 'UserList' || name === 'RoleList') return { header: ctx.member.header() };
    throw new EtceteraError('ERR_AUTH_NOT_ENABLED');
  }
  const caller = ctx.member.caller ?? { user: undefined, revision: 0 };
  return method(body, from, auth, caller);
}

/** The gateway's JSON of an answer. */
function toJson(a: AuthAnswer): Record<string, unknown> {
  return {
    header: encodeHeader(a.header),
    enabled: a.enabled === true ? true : undefined,
    authRevision: a.authRevision ? String(a.authRevision) : undefined,
    token: a.token || undefined,
    roles: a.roles?.length ? a.roles : undefined,
    users: a.users?.length ? a.users : undefined,
    perm: a.perm?.length
      ? a.perm.map((p) => ({
          permType: p.permType === 'READ' ? undefined : p.permType,
          key: p.key.length ? Buffer.from(p.key).toString('base64') : undefined,
          range_end: p.rangeEnd.length ? Buffer.from(p.rangeEnd).toString('base64') : undefined,
        }))
      : undefined,
  };
}

const PATHS: Readonly<Record<string, string>> = {
  '/v3/auth/enable': 'AuthEnable',
  '/v3/auth/disable': 'AuthDisable',
  '/v3/auth/status': 'AuthStatus',
  '/v3/auth/authenticate': 'Authenticate',
  '/v3/auth/user/add': 'UserAdd',
  '/v3/auth/user/get': 'UserGet',
  '/v3/auth/user/list': 'UserList',
  '/v3/auth/user/delete': 'UserDelete',
  '/v3/auth/user/changepw': 'UserChangePassword',
  '/v3/auth/user/grant': 'UserGrantRole',
  '/v3/auth/user/revoke': 'UserRevokeRole',
  '/v3/auth/role/add': 'RoleAdd',
  '/v3/auth/role/get': 'RoleGet',
  '/v3/auth/role/list': 'RoleList',
  '/v3/auth/role/delete': 'RoleDelete',
  '/v3/auth/role/grant': 'RoleGrantPermission',
  '/v3/auth/role/revoke': 'RoleRevokePermission',
};

/** POST /v3/auth/*. */
export const authRoutes: RouteTable = Object.fromEntries(
  Object.entries(PATHS).map(([path, name]) => [
    path,
    {
      async handle(body: unknown, ctx: RouteContext) {
        return toJson(await runAuth(name, body, 'json', ctx)) as never;
      },
    },
  ]),
);
