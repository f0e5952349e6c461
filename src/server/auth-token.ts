/**
 * The tokens Authenticate hands out, as etcd's --auth-token chooses them:
 *
 *   simple  random tokens (etcd's shape: 16 random letters, a dot and a counter) known to
 *           every member, as in etcd, where Authenticate goes through Raft: the member that
 *           checked the password mints the text (`mint`) and proposes it; every member learns
 *           it when that entry applies (`learn`, from src/store/auth.ts `onAuthenticated`).
 *           Each member lets a token live --auth-token-ttl seconds after its last use there,
 *           so a token used only on one member ends on the others after the TTL (etcd's
 *           rule). A user's tokens die when the user is deleted or changes password. Tokens
 *           are not state: a member that caught up from a snapshot, or restarted, knows only
 *           those whose entries it applied since.
 *   jwt     `jwt,pub-key=FILE,priv-key=FILE,sign-method=RS256[,ttl=5m]`: JWTs signed with
 *           the private key (jose), carrying etcd's claims `username`, `revision` and `exp`,
 *           verified with the public key by any member configured with it (no Raft entry).
 *           RS*, PS* and ES* methods take PEM keys (PKCS#8 private, SPKI public); HS* takes
 *           the secret in priv-key.
 *
 * `info` answers who a token belongs to and at which auth revision, or undefined when the
 * token is unknown, expired or forged (the caller answers `invalid auth token`).
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import * as jose from 'jose';
import { EtceteraError } from '../errors.js';
import type { Authenticated } from '../store/auth.js';
import { parseDuration } from './config.js';

export type AuthTokenSpec =
  | { kind: 'simple' }
  | {
      kind: 'jwt';
      signMethod: string;
      pubKeyFile?: string;
      privKeyFile?: string;
      /** Lifetime of a token in ms (etcd's default 5 minutes). */
      ttlMs: number;
    };

const JWT_METHODS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'HS256',
  'HS384',
  'HS512',
];

function bad(detail: string): EtceteraError {
  return new EtceteraError('ERR_INVALID_ARGUMENT', { detail });
}

/** Parses --auth-token. */
export function parseAuthTokenSpec(spec: string): AuthTokenSpec {
  const [kind, ...opts] = spec.split(',');
  if (kind === 'simple') {
    if (opts.length > 0) throw bad('--auth-token simple takes no options');
    return { kind: 'simple' };
  }
  if (kind !== 'jwt') throw bad(`--auth-token must be simple or jwt,..., not ${kind}`);
  const o = new Map<string, string>();
  for (const kv of opts) {
    const i = kv.indexOf('=');
    if (i <= 0) throw bad(`--auth-token: option "${kv}" is not name=value`);
    o.set(kv.slice(0, i), kv.slice(i + 1));
  }
  for (const k of o.keys())
    if (!['pub-key', 'priv-key', 'sign-method', 'ttl'].includes(k))
      throw bad(`--auth-token: unknown option ${k}`);
  const signMethod = o.get('sign-method');
  if (signMethod === undefined || !JWT_METHODS.includes(signMethod))
    throw bad(`--auth-token jwt needs sign-method, one of ${JWT_METHODS.join(', ')}`);
  const hmac = signMethod.startsWith('HS');
  if (hmac ? !o.has('priv-key') : !o.has('pub-key'))
    throw bad(`--auth-token jwt with ${signMethod} needs ${hmac ? 'priv-key' : 'pub-key'}`);
  return {
    kind: 'jwt',
    signMethod,
    pubKeyFile: o.get('pub-key'),
    privKeyFile: o.get('priv-key'),
    ttlMs: parseDuration('auth-token ttl', o.get('ttl') ?? '5m'),
  };
}

export interface TokenInfo {
  user: string;
  revision: number;
}

/** The member's tokens: `kind` says whether Authenticate goes through Raft (simple). */
export type TokenProvider = SimpleTokens | JwtTokens;

const LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** etcd's simple tokens. `now` is injectable for tests. */
export class SimpleTokens {
  readonly kind = 'simple';
  private readonly tokens = new Map<string, { user: string; stamp: string; expires: number }>();
  private counter = 0;
  private readonly sweep: NodeJS.Timeout;

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.sweep = setInterval(() => this.dropExpired(), Math.min(ttlMs, 60_000));
    this.sweep.unref();
  }

  /** The text of a new token (not yet known: it is learnt when its entry applies). */
  mint(): string {
    const bytes = randomBytes(16);
    let s = '';
    for (const b of bytes) s += LETTERS[b % LETTERS.length];
    this.counter += 1;
    return `${s}.${this.counter}`;
  }

  /** A token applied: it lives the TTL from now; `stamp` ties it to the password. */
  learn(a: Authenticated): void {
    if (this.tokens.has(a.token)) return; // replayed, or (never seen) the same random text
    this.tokens.set(a.token, { user: a.user, stamp: a.stamp, expires: this.now() + this.ttlMs });
  }

  async info(
    token: string,
    currentRevision: number,
    stampOf: (user: string) => string | undefined,
  ): Promise<TokenInfo | undefined> {
    const t = this.tokens.get(token);
    if (t === undefined) return undefined;
    if (t.expires <= this.now() || stampOf(t.user) !== t.stamp) {
      this.tokens.delete(token);
      return undefined;
    }
    t.expires = this.now() + this.ttlMs; // etcd renews a simple token on every use
    return { user: t.user, revision: currentRevision };
  }

  close(): void {
    clearInterval(this.sweep);
  }

  private dropExpired(): void {
    const now = this.now();
    for (const [k, t] of this.tokens) if (t.expires <= now) this.tokens.delete(k);
  }
}

/** etcd's JWT tokens. */
export class JwtTokens {
  readonly kind = 'jwt';
  private constructor(
    private readonly alg: string,
    private readonly signKey: jose.CryptoKey | Uint8Array | undefined,
    private readonly verifyKey: jose.CryptoKey | Uint8Array,
    private readonly ttlMs: number,
  ) {}

  /** Reads the key files; a key that cannot be read or parsed stops the member with a clear message. */
  static async open(spec: Extract<AuthTokenSpec, { kind: 'jwt' }>): Promise<JwtTokens> {
    const alg = spec.signMethod;
    const read = async (file: string, what: string) => {
      try {
        return await readFile(file, 'utf8');
      } catch (e) {
        throw bad(`--auth-token: cannot read ${what} ${file}: ${(e as Error).message}`);
      }
    };
    try {
      if (alg.startsWith('HS')) {
        const secret = new Uint8Array(
          Buffer.from(await read(spec.privKeyFile as string, 'priv-key')),
        );
        return new JwtTokens(alg, secret, secret, spec.ttlMs);
      }
      const pub = await jose.importSPKI(await read(spec.pubKeyFile as string, 'pub-key'), alg);
      const priv =
        spec.privKeyFile === undefined
          ? undefined
          : await jose.importPKCS8(await read(spec.privKeyFile, 'priv-key'), alg);
      return new JwtTokens(alg, priv, pub, spec.ttlMs);
    } catch (e) {
      if (e instanceof EtceteraError) throw e;
      throw bad(`--auth-token: the ${alg} key does not load: ${(e as Error).message}`);
    }
  }

  async assign(user: string, revision: number): Promise<string> {
    if (this.signKey === undefined)
      throw new EtceteraError('ERR_AUTH_FAILED', { detail: 'this member has no priv-key' });
    return new jose.SignJWT({ username: user, revision })
      .setProtectedHeader({ alg: this.alg })
      .setExpirationTime(new Date(Date.now() + this.ttlMs))
      .sign(this.signKey);
  }

  async info(token: string): Promise<TokenInfo | undefined> {
    try {
      const { payload } = await jose.jwtVerify(token, this.verifyKey, { algorithms: [this.alg] });
      const { username, revision } = payload as { username?: unknown; revision?: unknown };
      if (typeof username !== 'string' || typeof revision !== 'number') return undefined;
      return { user: username, revision };
    } catch {
      return undefined;
    }
  }

  close(): void {}
}
