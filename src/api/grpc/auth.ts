/**
 * etcdserverpb.Auth, answered as etcd 3.4 answers with authentication disabled and no users
 * or roles: status says disabled, lists are empty, lookups of a user or role find none,
 * Authenticate says auth is not enabled, AuthDisable succeeds. What would create users,
 * roles or turn auth on (AuthEnable, UserAdd, RoleAdd) answers Unimplemented: etcetera has
 * no auth store.
 */
import { EtceteraError } from '../../errors.js';
import { headerOnly } from './codec.js';
import { type ServiceImpl, type UnaryMethod, unary } from './types.js';

const refuse =
  (code: 'ERR_USER_NOT_FOUND' | 'ERR_ROLE_NOT_FOUND' | 'ERR_AUTH_NOT_ENABLED'): UnaryMethod =>
  async () => {
    throw new EtceteraError(code);
  };

const unsupported =
  (what: string): UnaryMethod =>
  async () => {
    throw new EtceteraError('ERR_GRPC_UNIMPLEMENTED', {
      detail: `${what}: etcetera has no authentication (it runs as etcd with auth disabled)`,
    });
  };

export const authService: ServiceImpl = {
  AuthStatus: unary(async (_b, ctx) => ({ ...headerOnly(ctx.member.header()), enabled: false })),
  AuthDisable: unary(async (_b, ctx) => headerOnly(ctx.member.header())),
  AuthEnable: unary(unsupported('AuthEnable')),
  Authenticate: unary(refuse('ERR_AUTH_NOT_ENABLED')),
  UserAdd: unary(unsupported('UserAdd')),
  UserGet: unary(refuse('ERR_USER_NOT_FOUND')),
  UserList: unary(async (_b, ctx) => headerOnly(ctx.member.header())),
  UserDelete: unary(refuse('ERR_USER_NOT_FOUND')),
  UserChangePassword: unary(refuse('ERR_USER_NOT_FOUND')),
  UserGrantRole: unary(refuse('ERR_USER_NOT_FOUND')),
  UserRevokeRole: unary(refuse('ERR_USER_NOT_FOUND')),
  RoleAdd: unary(unsupported('RoleAdd')),
  RoleGet: unary(refuse('ERR_ROLE_NOT_FOUND')),
  RoleList: unary(async (_b, ctx) => headerOnly(ctx.member.header())),
  RoleDelete: unary(refuse('ERR_ROLE_NOT_FOUND')),
  RoleGrantPermission: unary(refuse('ERR_ROLE_NOT_FOUND')),
  RoleRevokePermission: unary(refuse('ERR_ROLE_NOT_FOUND')),
};
