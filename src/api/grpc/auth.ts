/**
 * etcdserverpb.Auth: the JSON face's Auth implementation (src/api/etcd/auth.ts) over
 * protobuf, so both faces answer alike. Permission types go out as authpb's enum numbers.
 */
import { AUTH_METHODS, type AuthAnswer, runAuth } from '../etcd/auth.js';
import { header } from './codec.js';
import { type ServiceImpl, unary } from './types.js';

const PERM_NUMBER = { READ: 0, WRITE: 1, READWRITE: 2 } as const;

function toMessage(a: AuthAnswer) {
  return {
    header: header(a.header),
    enabled: a.enabled === true ? true : undefined,
    authRevision: a.authRevision ? String(a.authRevision) : undefined,
    token: a.token || undefined,
    roles: a.roles,
    users: a.users,
    perm: a.perm?.map((p) => ({
      permType: PERM_NUMBER[p.permType],
      key: p.key,
      range_end: p.rangeEnd,
    })),
  };
}

export const authService: ServiceImpl = Object.fromEntries(
  Object.keys(AUTH_METHODS).map((name) => [
    name,
    unary(async (body, ctx) => toMessage(await runAuth(name, body, 'protobuf', ctx))),
  ]),
);
