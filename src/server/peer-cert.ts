/**
 * etcd's --peer-cert-allowed-cn and --peer-cert-allowed-hostname: with --peer-client-cert-auth,
 * which certificates signed by the peer CA may act as a peer. Without either flag any such
 * certificate may (etcd's default); with --peer-cert-allowed-cn its subject CN must be the
 * given one; with --peer-cert-allowed-hostname it must be valid for the given host name (its
 * DNS or IP subject alternative names, as a server certificate is checked). The two are
 * mutually exclusive, as in etcd.
 *
 * Both directions are checked, as etcd does: the peer listener refuses every request and
 * Raft stream of a peer whose certificate is not allowed (403 naming the reason; the peer
 * endpoints trust the member ID a peer claims, so this is what keeps a holder of some other
 * certificate of the CA out), and a member dialling a peer refuses a server certificate that
 * is not allowed.
 */
import type { Socket } from 'node:net';
import { checkServerIdentity, type PeerCertificate, TLSSocket } from 'node:tls';
import type { DialTls } from './tls.js';

export type PeerCertRule =
  | { readonly kind: 'cn'; readonly cn: string }
  | { readonly kind: 'hostname'; readonly hostname: string };

function commonName(cert: PeerCertificate): string | undefined {
  const cn = cert.subject?.CN;
  const first = Array.isArray(cn) ? cn[0] : cn;
  return typeof first === 'string' ? first : undefined;
}

/** Why `cert` may not act as a peer under `rule`, or undefined when it may. */
function certRefusal(rule: PeerCertRule, cert: PeerCertificate | undefined): string | undefined {
  if (cert === undefined || cert.raw === undefined) return 'no peer certificate';
  if (rule.kind === 'cn') {
    const cn = commonName(cert);
    return cn === rule.cn
      ? undefined
      : `peer certificate CN ${JSON.stringify(cn ?? '')} is not the allowed ${JSON.stringify(rule.cn)}`;
  }
  const err = checkServerIdentity(rule.hostname, cert);
  return err === undefined
    ? undefined
    : `peer certificate is not valid for the allowed host name ${rule.hostname}`;
}

/** Why the peer on `socket` may not act as a peer, or undefined (no rule: anyone the CA signed). */
export function socketRefusal(rule: PeerCertRule | undefined, socket: Socket): string | undefined {
  if (rule === undefined) return undefined;
  if (!(socket instanceof TLSSocket) || !socket.authorized) return 'no verified peer certificate';
  return certRefusal(rule, socket.getPeerCertificate());
}

/** `dial` that also refuses a peer's server certificate the rule does not allow. */
export function guardDial(dial: DialTls, rule: PeerCertRule | undefined): DialTls {
  if (rule === undefined) return dial;
  return {
    ...dial,
    checkServerIdentity: (host, cert) => {
      const err = checkServerIdentity(host, cert);
      if (err !== undefined) return err;
      const why = certRefusal(rule, cert);
      return why === undefined ? undefined : new Error(why);
    },
  };
}
