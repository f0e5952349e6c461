/**
 * etcd's authentication and authorization over a member: the Auth service (users, roles,
 * enable/disable, Authenticate), the resolution of a request's credentials into a caller
 * (`identify`, the one place; a verified client certificate's common name would be resolved
 * here too), and `as(caller)`, the member as that caller may use it. Both faces (JSON and
 * gRPC) serve every request through such a view, so every check is made once, here.
 *
 * Changes are `auth` commands through Raft (src/store/auth.ts); a password is hashed with
 * scrypt and a random salt here, before proposing, so apply stays deterministic and the log
 * never holds a password. Authenticate with simple tokens is an `auth` command too (the token
 * text minted here), so every member knows every token, as in etcd.
 *
 * What each request needs while auth is enabled (etcd 3.4's checks, and where etcetera is
 * stricter than etcd 3.4 it says so):
 *   Range                      READ on the key or range
 *   Put / DeleteRange / Txn    per key as src/store/auth.ts `commandNeeds` lists; checked
 *                              here and again at apply with the auth revision checked at
 *                              (a write whose users or roles changed meanwhile is refused
 *                              with `revision of auth store is old`, as etcd does)
 *   Watch                      READ on the whole watched range
 *   LeaseRevoke                WRITE on every key attached to the lease
 *   LeaseTimeToLive            READ on every key attached to the lease (etcd 3.5's check)
 *   LeaseGrant / KeepAlive /   an authenticated user (etcd 3.4 serves them to anyone)
 *   Leases
 *   Compact, Maintenance,      the role root (etcd 3.4 lets any user compact, read the
 *   Cluster (all of them)      member list, status and alarms)
 *   Auth changes, UserList,    the role root; UserGet of oneself and RoleGet of one's own
 *   RoleList, UserGet, RoleGet roles are allowed to anyone, as in etcd
 * Without a token, every checked request answers `user name is empty`.
 */
import { randomBytes, scrypt as scryptCb, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { EtceteraError, isEtceteraError } from '../errors.js';
import { type AuthRequest, commandNeeds, type KeyNeed, type PasswordHash } from '../store/auth.js';
import type { Store } from '../store/store.js';
import type { Command, CommandResult, KeyRange } from '../store/types.js';
import type { TokenProvider } from './auth-token.js';
import type {
  AuthApi,
  Caller,
  Credentials,
  MaintenanceApi,
  MemberApi,
  PermissionInfo,
  ResponseHeader,
} from './types.js';

const scrypt = promisify(scryptCb) as (pw: string, salt: Buffer, len: number) => Promise<Buffer>;
const HASH_BYTES = 32;

export interface MemberAuthDeps {
  store: Store;
  /** The member itself (what a view delegates to once a call is allowed). */
  member: MemberApi;
  /** Checks and proposes a command the member makes (no quota), answering its result. */
  propose(c: Command): Promise<CommandResult>;
  /** Waits until this member applied everything committed before the call (linearizable reads). */
  readBarrier(): Promise<void>;
  header(): ResponseHeader;
  tokens: TokenProvider;
}

const NOBODY: Caller = { user: undefined, revision: 0 };

export class MemberAuth implements AuthApi {
  constructor(private readonly d: MemberAuthDeps) {
    const tokens = d.tokens;
    if (tokens.kind === 'simple') d.store.auth.onAuthenticated = (a) => tokens.learn(a);
  }

  private get state() {
    return this.d.store.auth;
  }

  async identify(credentials: Credentials): Promise<Caller> {
    if (!this.state.enabled) return NOBODY;
    const token = credentials.token;
    if (token !== undefined && token.length > 0) {
      const stampOf = (u: string) => this.stampOf(u);
      let info = await this.d.tokens.info(token, this.state.revision, stampOf);
      if (info === undefined && this.d.tokens.kind === 'simple') {
        // Another member may have answered its Authenticate before this one applied the
        // entry: once this member has applied everything committed, it knows the token.
        await this.d.readBarrier();
        info = await this.d.tokens.info(token, this.state.revision, stampOf);
      }
      if (info === undefined) throw new EtceteraError('ERR_INVALID_AUTH_TOKEN');
      return { user: info.user, revision: info.revision };
    }
    if (credentials.certCommonName !== undefined && credentials.certCommonName.length > 0)
      return { user: credentials.certCommonName, revision: this.state.revision };
    return NOBODY;
  }

  as(caller: Caller): MemberApi {
    return authorizedView(this.d.member, this, caller);
  }

  // --- checks ---------------------------------------------------------------------------

  /** Throws unless auth is off or `caller` holds the role root. */
  requireRoot(caller: Caller): void {
    const code = this.state.adminRefusal(caller.user);
    if (code !== undefined) throw new EtceteraError(code);
  }

  /** Throws unless auth is off or the request has a user. */
  requireUser(caller: Caller): void {
    if (!this.state.enabled) return;
    if (caller.user === undefined || caller.user.length === 0)
      throw new EtceteraError('ERR_USER_EMPTY');
  }

  /** Throws unless auth is off or `caller` holds every permission in `needs`. */
  requireNeeds(caller: Caller, needs: readonly KeyNeed[]): void {
    const code = this.state.needsRefusal(
      caller.user === undefined ? undefined : { user: caller.user, revision: caller.revision },
      needs,
    );
    if (code !== undefined) throw new EtceteraError(code);
  }

  /** The stamp a client write carries through Raft, so apply can check it again. */
  stamp(caller: Caller): { user: string; revision: number } {
    return stampOf(caller);
  }

  checkWatch(caller: Caller, range: KeyRange): void {
    this.requireNeeds(caller, [
      { need: 'READ', key: range.key, rangeEnd: range.rangeEnd ?? new Uint8Array(0) },
    ]);
  }

  leaseKeys(id: number): Uint8Array[] {
    const lease = this.d.store.lessor.get(id);
    if (lease === undefined) return [];
    return [...lease.keys].map((k) => new Uint8Array(Buffer.from(k, 'latin1')));
  }

  // --- the Auth service -----------------------------------------------------------------

  async status(caller: Caller) {
    this.requireUser(caller);
    await this.d.readBarrier();
    return {
      header: this.d.header(),
      enabled: this.state.enabled,
      authRevision: this.state.revision,
    };
  }

  async enable(caller: Caller) {
    this.requireRoot(caller);
    return this.change({ type: 'enable' });
  }

  async disable(caller: Caller) {
    this.requireRoot(caller);
    return this.change({ type: 'disable' });
  }

  /**
   * Checks the password here, then: a JWT is signed here; a simple token is minted here and
   * proposed (`authenticate` entry, no password in it) so every member learns it at apply,
   * as etcd's Authenticate goes through Raft. A user or role changed between the check and
   * the apply refuses the entry everywhere; the check is then made again (etcd retries too).
   */
  async authenticate(name: string, password: string) {
    for (let attempt = 1; ; attempt++) {
      await this.d.readBarrier();
      if (!this.state.enabled) throw new EtceteraError('ERR_AUTH_NOT_ENABLED');
      const checkedRevision = this.state.revision;
      const user = this.state.user(name);
      if (user?.password === undefined || !(await verify(password, user.password)))
        throw new EtceteraError('ERR_AUTH_FAILED');
      const tokens = this.d.tokens;
      if (tokens.kind === 'jwt')
        return { header: this.d.header(), token: await tokens.assign(name, checkedRevision) };
      const token = tokens.mint();
      try {
        await this.d.propose({
          op: 'auth',
          request: { type: 'authenticate', name, token, checkedRevision },
        });
      } catch (e) {
        if (isEtceteraError(e) && e.code === 'ERR_AUTH_OLD_REVISION' && attempt < 3) continue;
        throw e;
      }
      return { header: this.d.header(), token };
    }
  }

  async userAdd(caller: Caller, name: string, password: string, noPassword: boolean) {
    this.requireRoot(caller);
    if (name.length === 0) throw new EtceteraError('ERR_USER_EMPTY');
    const hash = noPassword ? undefined : await hashPassword(password);
    return this.change({ type: 'userAdd', name, password: hash });
  }

  async userGet(caller: Caller, name: string) {
    if (caller.user !== name || !this.state.enabled) this.requireRoot(caller);
    await this.d.readBarrier();
    const u = this.state.user(name);
    if (u === undefined) throw new EtceteraError('ERR_USER_NOT_FOUND');
    return { header: this.d.header(), roles: [...u.roles] };
  }

  async userList(caller: Caller) {
    this.requireRoot(caller);
    await this.d.readBarrier();
    return { header: this.d.header(), users: this.state.userNames() };
  }

  async userDelete(caller: Caller, name: string) {
    this.requireRoot(caller);
    return this.change({ type: 'userDelete', name });
  }

  async userChangePassword(caller: Caller, name: string, password: string) {
    this.requireRoot(caller);
    if (this.state.user(name) === undefined) throw new EtceteraError('ERR_USER_NOT_FOUND');
    return this.change({
      type: 'userChangePassword',
      name,
      password: await hashPassword(password),
    });
  }

  async userGrantRole(caller: Caller, name: string, role: string) {
    this.requireRoot(caller);
    return this.change({ type: 'userGrantRole', name, role });
  }

  async userRevokeRole(caller: Caller, name: string, role: string) {
    this.requireRoot(caller);
    return this.change({ type: 'userRevokeRole', name, role });
  }

  async roleAdd(caller: Caller, name: string) {
    this.requireRoot(caller);
    return this.change({ type: 'roleAdd', name });
  }

  async roleGet(caller: Caller, name: string) {
    const own =
      this.state.enabled &&
      caller.user !== undefined &&
      this.state.user(caller.user)?.roles.includes(name) === true;
    if (!own) this.requireRoot(caller);
    await this.d.readBarrier();
    const r = this.state.role(name);
    if (r === undefined) throw new EtceteraError('ERR_ROLE_NOT_FOUND');
    return {
      header: this.d.header(),
      permissions: r.permissions.map((p) => ({
        permType: p.permType,
        key: p.key,
        rangeEnd: p.rangeEnd,
      })),
    };
  }

  async roleList(caller: Caller) {
    this.requireRoot(caller);
    await this.d.readBarrier();
    return { header: this.d.header(), roles: this.state.roleNames() };
  }

  async roleDelete(caller: Caller, name: string) {
    this.requireRoot(caller);
    return this.change({ type: 'roleDelete', name });
  }

  async roleGrantPermission(caller: Caller, name: string, permission: PermissionInfo) {
    this.requireRoot(caller);
    return this.change({ type: 'roleGrantPermission', name, permission });
  }

  async roleRevokePermission(caller: Caller, name: string, key: Uint8Array, rangeEnd: Uint8Array) {
    this.requireRoot(caller);
    return this.change({ type: 'roleRevokePermission', name, key, rangeEnd });
  }

  private async change(request: AuthRequest): Promise<{ header: ResponseHeader }> {
    await this.d.propose({ op: 'auth', request });
    return { header: this.d.header() };
  }

  /** What ties a simple token to a user's password: a change of password ends the token. */
  private stampOf(user: string): string | undefined {
    const u = this.state.user(user);
    if (u === undefined) return undefined;
    return u.password?.hash ?? '';
  }
}

function stampOf(caller: Caller): { user: string; revision: number } {
  return { user: caller.user ?? '', revision: caller.revision };
}

/** scrypt with a fresh random salt. */
export async function hashPassword(password: string): Promise<PasswordHash> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, HASH_BYTES);
  return { scheme: 'scrypt', salt: salt.toString('base64'), hash: hash.toString('base64') };
}

async function verify(password: string, stored: PasswordHash): Promise<boolean> {
  const want = Buffer.from(stored.hash, 'base64');
  const got = await scrypt(password, Buffer.from(stored.salt, 'base64'), want.length);
  return got.length === want.length && timingSafeEqual(got, want);
}

/**
 * The member as `caller` may use it. Every method checks first and then delegates, so a
 * refused request changes nothing. State the faces read without a request (header, watch
 * source, metrics, health) passes through.
 */
function authorizedView(m: MemberApi, auth: MemberAuth, caller: Caller): MemberApi {
  const root = () => auth.requireRoot(caller);
  const maintenance: MaintenanceApi | undefined =
    m.maintenance === undefined
      ? undefined
      : {
          snapshot: async () => {
            root();
            return m.maintenance!.snapshot();
          },
          hashKV: async (rev) => {
            root();
            return m.maintenance!.hashKV(rev);
          },
          moveLeader: async (id) => {
            root();
            return m.maintenance!.moveLeader(id);
          },
          alarm: async (r) => {
            root();
            return m.maintenance!.alarm(r);
          },
          defragment: async () => {
            root();
            return m.maintenance!.defragment();
          },
        };
  return {
    header: () => m.header(),
    health: () => m.health(),
    get watchSource() {
      return m.watchSource;
    },
    get watchCache() {
      return m.watchCache;
    },
    get metrics() {
      return m.metrics;
    },
    maxRequestBytes: m.maxRequestBytes,
    probes: m.probes,
    auth,
    caller,
    maintenance,
    async range(request, options) {
      auth.requireNeeds(caller, [
        { need: 'READ', key: request.key, rangeEnd: request.rangeEnd ?? new Uint8Array(0) },
      ]);
      return m.range(request, options);
    },
    async write(command) {
      switch (command.op) {
        case 'put':
        case 'deleteRange':
        case 'txn':
        case 'leaseRevoke': {
          auth.requireNeeds(caller, commandNeeds(command, (id) => auth.leaseKeys(id)) ?? []);
          return m.write({ ...command, auth: auth.stamp(caller) });
        }
        case 'leaseGrant':
          auth.requireUser(caller);
          return m.write(command);
        case 'compact':
        case 'alarm':
          root();
          return m.write(command);
        default:
          throw new EtceteraError('ERR_INVALID_ARGUMENT', {
            detail: `${command.op} is not a client write`,
          });
      }
    },
    async leaseKeepAlive(id) {
      auth.requireUser(caller);
      return m.leaseKeepAlive(id);
    },
    async leaseTimeToLive(id, keys) {
      auth.requireUser(caller);
      auth.requireNeeds(
        caller,
        auth.leaseKeys(id).map((k) => ({ need: 'READ', key: k, rangeEnd: new Uint8Array(0) })),
      );
      return m.leaseTimeToLive(id, keys);
    },
    async leaseLeases() {
      auth.requireUser(caller);
      return m.leaseLeases();
    },
    async memberList() {
      root();
      return m.memberList();
    },
    async memberAdd(peerURLs, isLearner) {
      root();
      return m.memberAdd(peerURLs, isLearner);
    },
    async memberRemove(id) {
      root();
      return m.memberRemove(id);
    },
    async memberPromote(id) {
      root();
      return m.memberPromote(id);
    },
    async memberUpdate(id, peerURLs) {
      root();
      return m.memberUpdate(id, peerURLs);
    },
    async status() {
      root();
      return m.status();
    },
  };
}
