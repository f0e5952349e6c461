/**
 * etcd's auth store as replicated state: the enabled flag, the auth revision, users (name,
 * salted password hash, roles) and roles (name, key permissions), changed only by `auth`
 * commands applied in log order on every member. The whole state is one meta record
 * (`auth`, JSON) written in the same atomic batch as the command, so it is in every Raft
 * snapshot of the store and survives a restart.
 *
 * Apply is deterministic: password hashes and their salts, and the text of a simple token,
 * are computed by the member before it proposes (src/server/auth.ts); apply only stores
 * them, or for a token tells `onAuthenticated` (every member's token table, not state). The rules are etcd 3.4's:
 *   - enabling needs a user `root` holding the role `root`; enabling or disabling twice is a
 *     no-op; neither changes the auth revision;
 *   - every change of a user or role adds one to the auth revision (a grant of a role the user
 *     already holds changes nothing);
 *   - while auth is enabled, `root` cannot be deleted, lose the role `root`, and the role
 *     `root` cannot be deleted (`invalid auth management`);
 *   - the role `root` may be granted before it exists; it permits everything.
 *
 * Permission checks (`permitted`, `commandRefusal`) follow etcd's: a user holding `root` may
 * do anything; otherwise a single key needs a grant covering it and a range needs the union
 * of the user's grants of that type to cover all of it. A grant with an empty range_end is
 * the single key, range_end "\0" is every key from `key` on.
 */
import { type ErrorCode, EtceteraError } from '../errors.js';
import type { Bytes, Command, RequestOp, TxnRequest } from './types.js';

export const META_AUTH = Buffer.from('auth');

export const ROOT = 'root';

export type PermissionType = 'READ' | 'WRITE' | 'READWRITE';
export const PERMISSION_TYPES: readonly PermissionType[] = ['READ', 'WRITE', 'READWRITE'];

/** A grant of a role: `key` alone (empty rangeEnd), [key, rangeEnd), or key.. ("\0"). */
export interface KeyPermission {
  readonly permType: PermissionType;
  readonly key: Bytes;
  readonly rangeEnd: Bytes;
}

/** A password as stored: scrypt of the password with a random salt (both base64). */
export interface PasswordHash {
  readonly scheme: 'scrypt';
  readonly salt: string;
  readonly hash: string;
}

export interface AuthUser {
  readonly name: string;
  /** Absent for a user added with no_password: it cannot authenticate with a password. */
  readonly password?: PasswordHash;
  readonly roles: readonly string[];
}

export interface AuthRole {
  readonly name: string;
  readonly permissions: readonly KeyPermission[];
}

/** What an `auth` command asks; one kind per mutating RPC of etcd's Auth service. */
export type AuthRequest =
  | { type: 'enable' }
  | { type: 'disable' }
  | { type: 'userAdd'; name: string; password?: PasswordHash }
  | { type: 'userDelete'; name: string }
  | { type: 'userChangePassword'; name: string; password?: PasswordHash }
  | { type: 'userGrantRole'; name: string; role: string }
  | { type: 'userRevokeRole'; name: string; role: string }
  | { type: 'roleAdd'; name: string }
  | { type: 'roleDelete'; name: string }
  | { type: 'roleGrantPermission'; name: string; permission: KeyPermission }
  | { type: 'roleRevokePermission'; name: string; key: Bytes; rangeEnd: Bytes }
  /**
   * A simple token for `name`, minted by the member that checked the password (random text
   * chosen before proposing, so apply stays deterministic) at auth revision `checkedRevision`.
   * It changes no state: applying it tells every member's token table (`onAuthenticated`).
   */
  | { type: 'authenticate'; name: string; token: string; checkedRevision: number };

/** A simple token every member learns when its Authenticate entry applies. */
export interface Authenticated {
  readonly user: string;
  readonly token: string;
  /** What ties the token to the password: the user's password hash when it applied. */
  readonly stamp: string;
}

/**
 * Who proposed a client write, and at which auth revision its permissions were checked.
 * Apply checks again while auth is enabled (etcd's auth applier): an empty user is refused,
 * a revision older than the store's is refused as stale, then the permissions are checked.
 * Commands the member makes itself (lease expiry, alarms) carry no stamp.
 */
export interface AuthStamp {
  readonly user: string;
  readonly revision: number;
}

export type Need = 'READ' | 'WRITE';

/** One permission a request needs: `key` alone (empty rangeEnd) or a range. */
export interface KeyNeed {
  readonly need: Need;
  readonly key: Bytes;
  readonly rangeEnd: Bytes;
}

interface Stored {
  enabled: boolean;
  revision: number;
  users: AuthUser[];
  roles: AuthRole[];
}

const EMPTY = new Uint8Array(0);

export class AuthStore {
  private enabledFlag = false;
  private rev = 1;
  private readonly users = new Map<string, AuthUser>();
  private readonly roles = new Map<string, AuthRole>();
  /** Told of every Authenticate applied (the member's simple-token table listens). */
  onAuthenticated: ((a: Authenticated) => void) | undefined;

  get enabled(): boolean {
    return this.enabledFlag;
  }

  /** etcd's auth revision: 1 on a fresh store, +1 per change of a user or role. */
  get revision(): number {
    return this.rev;
  }

  user(name: string): AuthUser | undefined {
    return this.users.get(name);
  }

  role(name: string): AuthRole | undefined {
    return this.roles.get(name);
  }

  userNames(): string[] {
    return [...this.users.keys()].sort();
  }

  roleNames(): string[] {
    return [...this.roles.keys()].sort();
  }

  /** Applies one change. Throws the EtceteraError etcd answers; nothing changed then. */
  apply(r: AuthRequest): void {
    switch (r.type) {
      case 'authenticate': {
        // etcd's rule: the password was checked at `checkedRevision`; a user or role changed
        // since then refuses the token (the proposer checks again and retries).
        if (!this.enabledFlag) throw new EtceteraError('ERR_AUTH_NOT_ENABLED');
        if (r.checkedRevision !== this.rev) throw new EtceteraError('ERR_AUTH_OLD_REVISION');
        const u = this.users.get(r.name);
        if (u?.password === undefined) throw new EtceteraError('ERR_AUTH_FAILED');
        this.onAuthenticated?.({ user: r.name, token: r.token, stamp: u.password.hash });
        return;
      }
      case 'enable': {
        if (this.enabledFlag) return;
        const root = this.users.get(ROOT);
        if (root === undefined) throw new EtceteraError('ERR_ROOT_USER_NOT_EXIST');
        if (!root.roles.includes(ROOT)) throw new EtceteraError('ERR_ROOT_ROLE_NOT_EXIST');
        this.enabledFlag = true;
        return;
      }
      case 'disable':
        this.enabledFlag = false;
        return;
      case 'userAdd': {
        if (r.name.length === 0) throw new EtceteraError('ERR_USER_EMPTY');
        if (this.users.has(r.name)) throw new EtceteraError('ERR_USER_ALREADY_EXIST');
        this.users.set(r.name, { name: r.name, password: r.password, roles: [] });
        break;
      }
      case 'userDelete': {
        if (this.enabledFlag && r.name === ROOT) throw new EtceteraError('ERR_INVALID_AUTH_MGMT');
        if (!this.users.delete(r.name)) throw new EtceteraError('ERR_USER_NOT_FOUND');
        break;
      }
      case 'userChangePassword': {
        const u = this.mustUser(r.name);
        this.users.set(r.name, { ...u, password: r.password });
        break;
      }
      case 'userGrantRole': {
        const u = this.mustUser(r.name);
        if (r.role !== ROOT && !this.roles.has(r.role))
          throw new EtceteraError('ERR_ROLE_NOT_FOUND');
        if (u.roles.includes(r.role)) return;
        this.users.set(r.name, { ...u, roles: [...u.roles, r.role].sort() });
        break;
      }
      case 'userRevokeRole': {
        if (this.enabledFlag && r.name === ROOT && r.role === ROOT)
          throw new EtceteraError('ERR_INVALID_AUTH_MGMT');
        const u = this.mustUser(r.name);
        if (!u.roles.includes(r.role)) throw new EtceteraError('ERR_ROLE_NOT_GRANTED');
        this.users.set(r.name, { ...u, roles: u.roles.filter((x) => x !== r.role) });
        break;
      }
      case 'roleAdd': {
        if (r.name.length === 0) throw new EtceteraError('ERR_ROLE_EMPTY');
        if (this.roles.has(r.name)) throw new EtceteraError('ERR_ROLE_ALREADY_EXIST');
        this.roles.set(r.name, { name: r.name, permissions: [] });
        break;
      }
      case 'roleDelete': {
        if (this.enabledFlag && r.name === ROOT) throw new EtceteraError('ERR_INVALID_AUTH_MGMT');
        if (!this.roles.delete(r.name)) throw new EtceteraError('ERR_ROLE_NOT_FOUND');
        for (const u of [...this.users.values()])
          if (u.roles.includes(r.name))
            this.users.set(u.name, { ...u, roles: u.roles.filter((x) => x !== r.name) });
        break;
      }
      case 'roleGrantPermission': {
        const role = this.mustRole(r.name);
        const p = r.permission;
        const rest = role.permissions.filter((x) => !samePerm(x, p.key, p.rangeEnd));
        const permissions = [...rest, { permType: p.permType, key: p.key, rangeEnd: p.rangeEnd }];
        permissions.sort(byKey);
        this.roles.set(r.name, { name: r.name, permissions });
        break;
      }
      case 'roleRevokePermission': {
        const role = this.mustRole(r.name);
        const permissions = role.permissions.filter((x) => !samePerm(x, r.key, r.rangeEnd));
        if (permissions.length === role.permissions.length)
          throw new EtceteraError('ERR_PERMISSION_NOT_GRANTED');
        this.roles.set(r.name, { name: r.name, permissions });
        break;
      }
    }
    this.rev += 1;
  }

  // --- checks ---------------------------------------------------------------------------

  /** Whether `user` holds the role root. */
  isRoot(user: string): boolean {
    return this.users.get(user)?.roles.includes(ROOT) === true;
  }

  /** etcd's IsAdminPermitted: undefined when allowed (always, with auth disabled). */
  adminRefusal(user: string | undefined): ErrorCode | undefined {
    if (!this.enabledFlag) return undefined;
    if (user === undefined || user.length === 0) return 'ERR_USER_EMPTY';
    if (!this.users.has(user)) return 'ERR_USER_NOT_FOUND';
    return this.isRoot(user) ? undefined : 'ERR_PERMISSION_DENIED';
  }

  /** Whether `user`'s grants of `need` cover the key or range (auth state only, no enabled check). */
  permitted(user: string, need: Need, key: Bytes, rangeEnd: Bytes): boolean {
    const u = this.users.get(user);
    if (u === undefined) return false;
    if (u.roles.includes(ROOT)) return true;
    const grants: Array<[Bytes, Bytes | undefined]> = [];
    for (const name of u.roles) {
      for (const p of this.roles.get(name)?.permissions ?? []) {
        if (p.permType !== 'READWRITE' && p.permType !== need) continue;
        grants.push(span(p.key, p.rangeEnd));
      }
    }
    const [start, end] = span(key, rangeEnd);
    return covers(grants, start, end);
  }

  /**
   * Why a client request with these needs must be refused for `stamp` (undefined: allowed).
   * etcd's isOpPermitted: no user, a stale auth revision, an unknown user, a missing grant.
   */
  needsRefusal(stamp: AuthStamp | undefined, needs: readonly KeyNeed[]): ErrorCode | undefined {
    if (!this.enabledFlag) return undefined;
    if (stamp === undefined || stamp.user.length === 0) return 'ERR_USER_EMPTY';
    if (stamp.revision < this.rev) return 'ERR_AUTH_OLD_REVISION';
    if (!this.users.has(stamp.user)) return 'ERR_PERMISSION_DENIED';
    for (const n of needs)
      if (!this.permitted(stamp.user, n.need, n.key, n.rangeEnd)) return 'ERR_PERMISSION_DENIED';
    return undefined;
  }

  // --- persistence ----------------------------------------------------------------------

  /** The meta record's bytes (deterministic: users and roles in name order). */
  encode(): Uint8Array {
    const users = this.userNames().map((n) => this.users.get(n) as AuthUser);
    const roles = this.roleNames().map((n) => {
      const r = this.roles.get(n) as AuthRole;
      return {
        name: r.name,
        permissions: r.permissions.map((p) => ({
          permType: p.permType,
          key: b64(p.key),
          rangeEnd: b64(p.rangeEnd),
        })),
      };
    });
    const json = JSON.stringify({ enabled: this.enabledFlag, revision: this.rev, users, roles });
    return new Uint8Array(Buffer.from(json, 'utf8'));
  }

  /** Replaces the state with a meta record's content (absent: a fresh auth store). */
  load(raw: Uint8Array | undefined): void {
    this.enabledFlag = false;
    this.rev = 1;
    this.users.clear();
    this.roles.clear();
    if (raw === undefined) return;
    let parsed: Stored;
    try {
      parsed = JSON.parse(Buffer.from(raw).toString('utf8')) as Stored;
    } catch (e) {
      throw new EtceteraError('ERR_CORRUPT', { detail: 'auth record is not JSON' }, { cause: e });
    }
    if (
      typeof parsed !== 'object' ||
      parsed === null ||
      typeof parsed.enabled !== 'boolean' ||
      !Number.isSafeInteger(parsed.revision) ||
      !Array.isArray(parsed.users) ||
      !Array.isArray(parsed.roles)
    )
      throw new EtceteraError('ERR_CORRUPT', { detail: 'auth record has a bad shape' });
    this.enabledFlag = parsed.enabled;
    this.rev = parsed.revision;
    for (const u of parsed.users)
      this.users.set(u.name, { name: u.name, password: u.password, roles: [...u.roles] });
    for (const r of parsed.roles as unknown as Array<{
      name: string;
      permissions: Array<{ permType: PermissionType; key: string; rangeEnd: string }>;
    }>)
      this.roles.set(r.name, {
        name: r.name,
        permissions: r.permissions.map((p) => ({
          permType: p.permType,
          key: unb64(p.key),
          rangeEnd: unb64(p.rangeEnd),
        })),
      });
  }

  private mustUser(name: string): AuthUser {
    const u = this.users.get(name);
    if (u === undefined) throw new EtceteraError('ERR_USER_NOT_FOUND');
    return u;
  }

  private mustRole(name: string): AuthRole {
    const r = this.roles.get(name);
    if (r === undefined) throw new EtceteraError('ERR_ROLE_NOT_FOUND');
    return r;
  }
}

// --- what a request needs ----------------------------------------------------------------

const need = (n: Need, key: Bytes, rangeEnd: Bytes | undefined): KeyNeed => ({
  need: n,
  key,
  rangeEnd: rangeEnd ?? EMPTY,
});

/**
 * The permissions a key-value command needs, as etcd's auth applier asks them: a put WRITE on
 * its key (and READ with prev_kv), a delete WRITE on its range (and READ with prev_kv), a
 * range READ, a txn READ on every compare and everything its branches (both, nested txns
 * followed) need. `leaseKeys` gives the keys attached to a lease: a revoke needs WRITE on each.
 * Undefined for commands that are not checked per key (compact, lease grant, alarms...).
 */
export function commandNeeds(
  c: Command,
  leaseKeys: (id: number) => readonly Bytes[],
): KeyNeed[] | undefined {
  switch (c.op) {
    case 'put':
    case 'deleteRange':
      return opNeeds(
        c.op === 'put' ? { type: 'put', request: c } : { type: 'deleteRange', request: c },
      );
    case 'txn':
      return txnNeeds(c);
    case 'leaseRevoke':
      return leaseKeys(c.id).map((k) => need('WRITE', k, undefined));
    default:
      return undefined;
  }
}

function txnNeeds(t: TxnRequest): KeyNeed[] {
  const out: KeyNeed[] = t.compare.map((cmp) => need('READ', cmp.key, cmp.rangeEnd));
  for (const op of [...t.success, ...t.failure]) out.push(...opNeeds(op));
  return out;
}

function opNeeds(op: RequestOp): KeyNeed[] {
  switch (op.type) {
    case 'range':
      return [need('READ', op.request.key, op.request.rangeEnd)];
    case 'put': {
      const out = [need('WRITE', op.request.key, undefined)];
      if (op.request.prevKv) out.push(need('READ', op.request.key, undefined));
      return out;
    }
    case 'deleteRange': {
      const out = [need('WRITE', op.request.key, op.request.rangeEnd)];
      if (op.request.prevKv) out.push(need('READ', op.request.key, op.request.rangeEnd));
      return out;
    }
    case 'txn':
      return txnNeeds(op.request);
  }
}

// --- intervals ----------------------------------------------------------------------------

/** A key or range as a half-open interval [start, end); end undefined = unbounded. */
function span(key: Bytes, rangeEnd: Bytes): [Bytes, Bytes | undefined] {
  if (rangeEnd.length === 0) return [key, Buffer.concat([key, Buffer.from([0])])];
  if (rangeEnd.length === 1 && rangeEnd[0] === 0) return [key, undefined];
  return [key, rangeEnd];
}

const cmp = (a: Bytes, b: Bytes): number => Buffer.compare(a, b);

/**
 * Whether the union of `grants` covers [start, end): a sweep from `start` over the grants in
 * start order, moving the covered frontier while a grant starts at or before it. An empty
 * range (end <= start) is refused, as etcd's interval check refuses it.
 */
export function covers(
  grants: ReadonlyArray<readonly [Bytes, Bytes | undefined]>,
  start: Bytes,
  end: Bytes | undefined,
): boolean {
  if (end !== undefined && cmp(end, start) <= 0) return false;
  const sorted = [...grants].sort((a, b) => cmp(a[0], b[0]));
  let frontier: Bytes = start;
  for (const [s, e] of sorted) {
    if (cmp(s, frontier) > 0) break;
    if (e === undefined) return true;
    if (cmp(e, frontier) > 0) frontier = e;
    if (end !== undefined && cmp(frontier, end) >= 0) return true;
  }
  return false;
}

function samePerm(p: KeyPermission, key: Bytes, rangeEnd: Bytes): boolean {
  return cmp(p.key, key) === 0 && cmp(p.rangeEnd, rangeEnd) === 0;
}

function byKey(a: KeyPermission, b: KeyPermission): number {
  return cmp(a.key, b.key) || cmp(a.rangeEnd, b.rangeEnd);
}

const b64 = (b: Bytes): string =>
  Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
const unb64 = (s: string): Bytes => new Uint8Array(Buffer.from(s, 'base64'));
