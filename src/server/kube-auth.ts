/**
 * The Kubernetes API's authentication, authorization and audit of a member, from its
 * kube-apiserver flags: files read and opened at start (a bad one stops the start with a
 * clear error before anything else is opened), and the loopback token the member's own
 * control plane uses, a random bearer token of a `system:masters` user that exists only in
 * this process, as kube-apiserver's loopback client has.
 */
import { randomBytes } from 'node:crypto';
import { type AuditSink, fileAuditSink } from '../api/k8s/audit.js';
import {
  type AuthenticationOptions,
  clientCertAuthenticator,
  loadServiceAccountKeys,
  loadTokenFile,
} from '../api/k8s/auth.js';
import type { AuthorizationMode } from '../api/k8s/authz.js';
import { MASTERS_GROUP, type UserInfo } from '../k8s/rbac.js';
import type { KubeAuthConfig } from './config.js';

export const LOOPBACK_USER = 'system:etcetera-control-plane';

export interface KubeAuth {
  authentication: AuthenticationOptions;
  authorizationMode: AuthorizationMode;
  audit: AuditSink | undefined;
  /** The control plane's bearer token; undefined when requests need no credentials. */
  loopbackToken: string | undefined;
}

/**
 * `clientCertificates`: the client port asks for client certificates (--client-ca-file, or
 * --client-cert-auth with --trusted-ca-file), so one signed by the client CA names the user
 * (CN) and its groups (O), as kube-apiserver's --client-ca-file does.
 */
export function loadKubeAuth(
  c: KubeAuthConfig,
  clientCertificates = false,
  /** A worker process (--workers) takes its member's token, so the control plane's works on every worker. */
  givenLoopbackToken?: string,
): KubeAuth {
  const tokens = new Map<string, UserInfo>(
    c.tokenAuthFile !== undefined ? loadTokenFile(c.tokenAuthFile) : [],
  );
  const keys =
    c.serviceAccountKeyFile !== undefined ? loadServiceAccountKeys(c.serviceAccountKeyFile) : [];
  const guarded =
    c.authorizationMode === 'RBAC' || !c.anonymousAuth || tokens.size > 0 || keys.length > 0;
  let loopbackToken: string | undefined;
  if (guarded) {
    loopbackToken = givenLoopbackToken ?? randomBytes(32).toString('base64url');
    tokens.set(loopbackToken, { username: LOOPBACK_USER, uid: '', groups: [MASTERS_GROUP] });
  }
  // Opened last: nothing to close when a file above is refused.
  const audit = c.auditLogPath !== undefined ? fileAuditSink(c.auditLogPath) : undefined;
  return {
    authentication: {
      tokens,
      serviceAccountKeys: keys,
      anonymous: c.anonymousAuth,
      ...(clientCertificates ? { extra: [clientCertAuthenticator()] } : {}),
    },
    authorizationMode: c.authorizationMode,
    audit,
    loopbackToken,
  };
}
