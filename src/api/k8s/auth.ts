/**
 * Authentication of the Kubernetes face, as kube-apiserver does it: a chain of request
 * authenticators tried in order, the first that knows the credentials deciding, and
 * anonymous access last (`--anonymous-auth`, on by default).
 *
 *   - bearer tokens from a static token file (`--token-auth-file`, CSV:
 *     token,user,uid,"group1,group2");
 *   - ServiceAccount tokens: JWTs signed with a key of `--service-account-key-file`
 *     (verified with `jose`), user `system:serviceaccount:<ns>:<name>` in
 *     `system:serviceaccounts` and `system:serviceaccounts:<ns>`;
 *   - client certificates (CN = user, O = groups): `clientCertAuthenticator` reads what the
 *     connection's certificate proved at its handshake (src/server/tls.ts: signed by
 *     --client-ca-file, or by --trusted-ca-file under --client-cert-auth); it is asked
 *     first. A certificate that proves nothing (another CA, expired) does not stop a valid
 *     token; with no other credentials it is 401, not anonymous, as in kube-apiserver.
 *
 * A bearer token nobody knows is 401 even with anonymous access on (as in Kubernetes);
 * every authenticated user is also in `system:authenticated`.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { parse as parseCsv } from 'csv-parse/sync';
import { errors as joseErrors, jwtVerify } from 'jose';
import { EtceteraError } from '../../errors.js';
import {
  ANONYMOUS_USER,
  AUTHENTICATED_GROUP,
  UNAUTHENTICATED_GROUP,
  type UserInfo,
} from '../../k8s/rbac.js';
import { StatusError } from '../../k8s/status.js';
import { certIdentity } from '../../server/tls.js';

/** What one authenticator makes of a request. */
export type AuthResult =
  /** Not this authenticator's kind of credentials: the next one is asked. */
  | { kind: 'skip' }
  | { kind: 'user'; user: UserInfo }
  /** Credentials of its kind that are not valid: 401, nobody else is asked. */
  | { kind: 'invalid' }
  /** Credentials of its kind that are not valid; others may still authenticate, else 401. */
  | { kind: 'failed'; reason: string };

export type RequestAuthenticator = (req: IncomingMessage) => Promise<AuthResult> | AuthResult;

/** The 401 kube-apiserver answers. */
export function unauthorized(): StatusError {
  return new StatusError('Unauthorized', 'Unauthorized');
}

function bad(detail: string): EtceteraError {
  return new EtceteraError('ERR_INVALID_ARGUMENT', { detail });
}

/** The bearer token of a request ('' when it has none). */
export function bearerToken(req: IncomingMessage): string | undefined {
  const h = req.headers.authorization;
  if (h === undefined) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m ? m[1] : '';
}

// --- static token file ---

/** Parses a token file's text (CSV: token,user,uid[,"group1,group2"]; more columns ignored). */
export function parseTokenFile(text: string, source: string): Map<string, UserInfo> {
  let rows: string[][];
  try {
    rows = parseCsv(text, {
      relax_column_count: true,
      skip_empty_lines: true,
      trim: true,
    }) as string[][];
  } catch (e) {
    throw bad(`--token-auth-file ${source}: ${(e as Error).message}`);
  }
  const out = new Map<string, UserInfo>();
  rows.forEach((row, i) => {
    if (row.length < 3) {
      throw bad(
        `--token-auth-file ${source}: line ${i + 1} must have at least 3 columns (token, user name, user uid), found ${row.length}`,
      );
    }
    const [token = '', username = '', uid = '', groups = ''] = row;
    if (token === '' || username === '') {
      throw bad(`--token-auth-file ${source}: line ${i + 1} has an empty token or user name`);
    }
    out.set(token, {
      username,
      uid,
      groups: groups
        .split(',')
        .map((g) => g.trim())
        .filter((g) => g !== ''),
    });
  });
  return out;
}

export function loadTokenFile(path: string): Map<string, UserInfo> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw bad(`--token-auth-file: cannot read ${path}: ${(e as NodeJS.ErrnoException).code}`);
  }
  return parseTokenFile(text, path);
}

export function tokenAuthenticator(tokens: ReadonlyMap<string, UserInfo>): RequestAuthenticator {
  return (req) => {
    const token = bearerToken(req);
    if (token === undefined || token === '') return { kind: 'skip' };
    const user = tokens.get(token);
    return user ? { kind: 'user', user } : { kind: 'skip' };
  };
}

// --- ServiceAccount tokens ---

/** The public keys of a PEM file (public or private keys, one or more blocks). */
export function loadServiceAccountKeys(path: string): KeyObject[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw bad(
      `--service-account-key-file: cannot read ${path}: ${(e as NodeJS.ErrnoException).code}`,
    );
  }
  const blocks = text.match(/-----BEGIN [A-Z ]+-----[\s\S]+?-----END [A-Z ]+-----/g) ?? [];
  const keys: KeyObject[] = [];
  for (const b of blocks) {
    try {
      keys.push(createPublicKey(b));
    } catch (e) {
      throw bad(`--service-account-key-file ${path}: not a key: ${(e as Error).message}`);
    }
  }
  if (keys.length === 0) throw bad(`--service-account-key-file ${path}: no PEM key in the file`);
  return keys;
}

const SA_PREFIX = 'system:serviceaccount:';

interface SaClaims {
  sub?: string;
  'kubernetes.io'?: { namespace?: string; serviceaccount?: { name?: string; uid?: string } };
  'kubernetes.io/serviceaccount/namespace'?: string;
  'kubernetes.io/serviceaccount/service-account.name'?: string;
  'kubernetes.io/serviceaccount/service-account.uid'?: string;
}

/** The ServiceAccount a verified token names (current and legacy claim forms), if any. */
export function serviceAccountOf(
  claims: SaClaims,
): { namespace: string; name: string; uid: string } | undefined {
  const k = claims['kubernetes.io'];
  const namespace = k?.namespace ?? claims['kubernetes.io/serviceaccount/namespace'];
  const name =
    k?.serviceaccount?.name ?? claims['kubernetes.io/serviceaccount/service-account.name'];
  const uid =
    k?.serviceaccount?.uid ?? claims['kubernetes.io/serviceaccount/service-account.uid'] ?? '';
  if (typeof namespace !== 'string' || typeof name !== 'string' || namespace === '' || name === '')
    return undefined;
  if (claims.sub !== undefined && claims.sub !== `${SA_PREFIX}${namespace}:${name}`)
    return undefined;
  return { namespace, name, uid };
}

export function serviceAccountAuthenticator(keys: readonly KeyObject[]): RequestAuthenticator {
  return async (req) => {
    const token = bearerToken(req);
    // Only JWTs (three dot-separated parts) are this authenticator's.
    if (token === undefined || token.split('.').length !== 3) return { kind: 'skip' };
    for (const key of keys) {
      try {
        const { payload } = await jwtVerify(token, key);
        const sa = serviceAccountOf(payload as SaClaims);
        if (!sa) return { kind: 'invalid' };
        return {
          kind: 'user',
          user: {
            username: `${SA_PREFIX}${sa.namespace}:${sa.name}`,
            uid: sa.uid,
            groups: ['system:serviceaccounts', `system:serviceaccounts:${sa.namespace}`],
          },
        };
      } catch (e) {
        // Another key may have signed it; anything but a bad signature ends the search.
        if (!(e instanceof joseErrors.JWSSignatureVerificationFailed)) return { kind: 'invalid' };
      }
    }
    return { kind: 'invalid' };
  };
}

// --- client certificates ---

/** The subject of a verified client certificate: CN is the user, each O a group. */
export function clientCertAuthenticator(): RequestAuthenticator {
  return (req) => {
    const id = certIdentity(req.socket);
    if (id?.kube !== undefined) return { kind: 'user', user: { uid: '', ...id.kube } };
    if (id?.kubeRefused !== undefined) return { kind: 'failed', reason: id.kubeRefused };
    return { kind: 'skip' };
  };
}

// --- the chain ---

export interface AuthenticationOptions {
  /** token → user, from `--token-auth-file`. */
  tokens?: ReadonlyMap<string, UserInfo>;
  /** Keys of `--service-account-key-file`. */
  serviceAccountKeys?: readonly KeyObject[];
  /** `--anonymous-auth`; default true. */
  anonymous?: boolean;
  /** More authenticators, asked before the token authenticators (client certificates). */
  extra?: readonly RequestAuthenticator[];
}

const ANONYMOUS: UserInfo = {
  username: ANONYMOUS_USER,
  uid: '',
  groups: [UNAUTHENTICATED_GROUP],
};

/** The request's user, or a 401 StatusError. */
export type Authenticate = (req: IncomingMessage) => Promise<UserInfo>;

export function authenticator(o: AuthenticationOptions = {}): Authenticate {
  const chain: RequestAuthenticator[] = [...(o.extra ?? [])];
  let bearer = false;
  if (o.tokens && o.tokens.size > 0) {
    chain.push(tokenAuthenticator(o.tokens));
    bearer = true;
  }
  if (o.serviceAccountKeys && o.serviceAccountKeys.length > 0) {
    chain.push(serviceAccountAuthenticator(o.serviceAccountKeys));
    bearer = true;
  }
  const anonymous = o.anonymous ?? true;
  return async (req) => {
    let failed = false;
    for (const a of chain) {
      const r = await a(req);
      if (r.kind === 'invalid') throw unauthorized();
      if (r.kind === 'failed') failed = true;
      if (r.kind === 'user') {
        const groups = r.user.groups.includes(AUTHENTICATED_GROUP)
          ? r.user.groups
          : [...r.user.groups, AUTHENTICATED_GROUP];
        return { ...r.user, groups };
      }
    }
    // A bearer token no token authenticator knows is refused, anonymous access or not
    // (with no token authenticator configured, tokens are not looked at).
    if (bearer && bearerToken(req) !== undefined) throw unauthorized();
    if (failed || !anonymous) throw unauthorized();
    return ANONYMOUS;
  };
}
