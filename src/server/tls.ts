/**
 * TLS for a member's two listeners, with etcd's flags: --cert-file, --key-file,
 * --trusted-ca-file, --client-cert-auth and --auto-tls for clients, and their --peer-*
 * twins for peers. At start `loadTls` reads the files (a file that cannot be read, is not
 * PEM or does not match its key stops the member with ERR_TLS_FILE naming the flag and the
 * file), or with --auto-tls makes a self-signed certificate for the listen URLs' hosts
 * (src/server/certs.ts). As etcd does, the self-signed pair is kept in the data dir
 * (`fixtures/client/` and `fixtures/peer/`, cert.pem and key.pem, the key readable by its
 * owner only) and reused by later starts while it is valid, so a client can pin it with
 * `--cacert <data-dir>/fixtures/client/cert.pem`. With --auto-tls and no certificate files,
 * --client-cert-auth and --trusted-ca-file do not apply (etcd 3.4 drops them too; the
 * start-up log warns), src/server/config.ts.
 *
 * What it gives: the server side (TLS 1.2 at least; ALPN "h2" and "http/1.1" on the client
 * port, so gRPC and the HTTP faces share it; with --client-cert-auth a client must present a
 * certificate signed by --trusted-ca-file) and, for peers, the dialling side a member uses
 * to reach the others (its certificate as client certificate; the peer CA, or no check of
 * the peers' self-signed certificates with --peer-auto-tls, as etcd does).
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { type ConnectionOptions, createSecureContext, TLSSocket, type TlsOptions } from 'node:tls';
import { EtceteraError } from '../errors.js';
import { selfSigned } from './certs.js';
import type { MemberConfig } from './config.js';

/** One listener's TLS flags, as given. */
export interface TlsFlags {
  certFile?: string;
  keyFile?: string;
  trustedCaFile?: string;
  /** Clients (or peers) must present a certificate signed by trustedCaFile. */
  clientCertAuth: boolean;
  /** A self-signed certificate made at start when no cert/key files are given. */
  autoTls: boolean;
  /**
   * Client port only: kube-apiserver's --client-ca-file. A client certificate is asked for
   * but optional; one signed by this CA is a Kubernetes user (CN) with groups (O).
   */
  clientCaFile?: string;
  /**
   * Flags given but without effect: with --auto-tls and no certificate files, etcd drops
   * --client-cert-auth and --trusted-ca-file, and so does this (the start-up log names them).
   */
  ignored?: string[];
}

export const NO_TLS: TlsFlags = { clientCertAuth: false, autoTls: false };

/** Whether the flags give the listener a certificate (files or --auto-tls). */
export function hasCertificate(f: TlsFlags): boolean {
  return (f.certFile !== undefined && f.keyFile !== undefined) || f.autoTls;
}

/** TLS options for dialling a peer (node:https and ws take them as they are). */
export type DialTls = Pick<
  ConnectionOptions,
  'ca' | 'cert' | 'key' | 'rejectUnauthorized' | 'minVersion' | 'checkServerIdentity'
>;

export interface LoadedTls {
  /** For tls.createServer / new TLSSocket({ isServer: true }). */
  server: TlsOptions;
  /** For dialling peers with the same identity. */
  dial: DialTls;
  /** Where the certificate came from, for the start-up log. */
  source: 'files' | 'auto';
  /** With --auto-tls: the certificate file in the data dir, and whether this start made it. */
  auto?: { certFile: string; made: boolean };
  /**
   * Whose client certificates name a user on which face, as SHA-256 fingerprints of the CA
   * certificates: the etcd face trusts --trusted-ca-file under --client-cert-auth; the
   * Kubernetes face trusts --client-cert-auth's CA too, or --client-ca-file alone when given
   * (as kube-apiserver, which knows only that flag). Absent: that face takes no certificate.
   */
  trust: { etcd?: ReadonlySet<string>; kube?: ReadonlySet<string> };
}

/** The certificates of a PEM bundle, by SHA-256 fingerprint. */
function fingerprints(flag: string, file: string, pem: string): Set<string> {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  const out = new Set<string>();
  for (const b of blocks) {
    try {
      out.add(new X509Certificate(b).fingerprint256);
    } catch (e) {
      throw new EtceteraError('ERR_TLS_FILE', {
        detail: `--${flag} ${file}: ${(e as Error).message}`,
      });
    }
  }
  if (out.size === 0)
    throw new EtceteraError('ERR_TLS_FILE', { detail: `--${flag} ${file}: no certificate in it` });
  return out;
}

/** Valid from now until at least an hour from now, and parseable. */
function stillValid(cert: string): boolean {
  try {
    const c = new X509Certificate(cert);
    const now = Date.now();
    return Date.parse(c.validFrom) <= now && Date.parse(c.validTo) > now + 3600_000;
  } catch {
    return false;
  }
}

/**
 * The self-signed pair of --auto-tls kept in `dir`: the files there when both exist and the
 * certificate is still valid, otherwise a new pair written there (key mode 0600).
 */
async function autoPair(
  dir: string,
  commonName: string,
  hosts: readonly string[],
): Promise<{ cert: string; key: string; certFile: string; made: boolean }> {
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  const [cert, key] = await Promise.all([
    readFile(certFile, 'utf8').catch(() => undefined),
    readFile(keyFile, 'utf8').catch(() => undefined),
  ]);
  if (cert !== undefined && key !== undefined && stillValid(cert))
    return { cert, key, certFile, made: false };
  const made = await selfSigned(commonName, hosts.length > 0 ? hosts : ['127.0.0.1']);
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writeFile(keyFile, made.key, { mode: 0o600 });
    await chmod(keyFile, 0o600);
    await writeFile(certFile, made.cert, { mode: 0o644 });
  } catch (e) {
    const why = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    throw new EtceteraError('ERR_TLS_FILE', {
      detail: `--auto-tls ${dir}: cannot write the self-signed certificate (${why})`,
    });
  }
  return { ...made, certFile, made: true };
}

function readPem(flag: string, file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const why = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    throw new EtceteraError('ERR_TLS_FILE', { detail: `--${flag} ${file}: cannot read (${why})` });
  }
  if (!text.includes('-----BEGIN '))
    throw new EtceteraError('ERR_TLS_FILE', { detail: `--${flag} ${file}: not a PEM file` });
  return text;
}

/**
 * Reads or makes the listener's certificate. `prefix` is '' for the client flags and
 * 'peer-' for the peer ones (it only names flags in errors); `hosts` are the names the
 * self-signed certificate of --auto-tls is made for, and `autoDir` where it is kept
 * (without it, in memory only).
 */
export async function loadTls(
  prefix: '' | 'peer-',
  f: TlsFlags,
  hosts: readonly string[],
  commonName: string,
  autoDir?: string,
): Promise<LoadedTls> {
  const ca =
    f.trustedCaFile === undefined
      ? undefined
      : readPem(`${prefix}trusted-ca-file`, f.trustedCaFile);
  const clientCa =
    f.clientCaFile === undefined ? undefined : readPem('client-ca-file', f.clientCaFile);
  // The CAs each face trusts, parsed before anything is written (--auto-tls's files).
  const etcdTrust =
    f.clientCertAuth && ca !== undefined && f.trustedCaFile !== undefined
      ? fingerprints(`${prefix}trusted-ca-file`, f.trustedCaFile, ca)
      : undefined;
  const kubeTrust =
    clientCa !== undefined && f.clientCaFile !== undefined
      ? fingerprints('client-ca-file', f.clientCaFile, clientCa)
      : etcdTrust;
  let cert: string;
  let key: string;
  let source: LoadedTls['source'];
  let auto: LoadedTls['auto'];
  if (f.certFile !== undefined && f.keyFile !== undefined) {
    cert = readPem(`${prefix}cert-file`, f.certFile);
    key = readPem(`${prefix}key-file`, f.keyFile);
    source = 'files';
  } else if (autoDir !== undefined) {
    const p = await autoPair(autoDir, commonName, hosts);
    ({ cert, key } = p);
    auto = { certFile: p.certFile, made: p.made };
    source = 'auto';
  } else {
    ({ cert, key } = await selfSigned(commonName, hosts.length > 0 ? hosts : ['127.0.0.1']));
    source = 'auto';
  }
  try {
    createSecureContext({ cert, key, ...(ca !== undefined ? { ca } : {}) });
  } catch (e) {
    const files = [f.certFile, f.keyFile, f.trustedCaFile].filter((x) => x !== undefined);
    throw new EtceteraError('ERR_TLS_FILE', {
      detail: `--${prefix}cert-file/--${prefix}key-file/--${prefix}trusted-ca-file ${files.join(', ')}: ${(e as Error).message}`,
    });
  }
  const serverCa = [ca, clientCa].filter((x) => x !== undefined).join('\n');
  const server: TlsOptions = {
    cert,
    key,
    minVersion: 'TLSv1.2',
    ...(serverCa !== '' ? { ca: serverCa } : {}),
    // --client-cert-auth refuses a handshake without a good certificate; --client-ca-file
    // alone asks for one and lets the Kubernetes face decide (a token or anonymous may do).
    ...(f.clientCertAuth
      ? { requestCert: true, rejectUnauthorized: true }
      : clientCa !== undefined
        ? { requestCert: true, rejectUnauthorized: false }
        : {}),
  };
  // Self-signed peers (--peer-auto-tls) cannot be verified; etcd skips the check for them.
  const verify = source === 'files';
  const dial: DialTls = {
    cert,
    key,
    minVersion: 'TLSv1.2',
    ...(ca !== undefined ? { ca } : {}),
    rejectUnauthorized: verify,
  };
  return {
    server,
    dial,
    source,
    ...(auto !== undefined ? { auto } : {}),
    trust: {
      ...(etcdTrust !== undefined ? { etcd: etcdTrust } : {}),
      ...(kubeTrust !== undefined ? { kube: kubeTrust } : {}),
    },
  };
}

/** What an accepted client connection's certificate proves, worked out at the handshake. */
export interface CertIdentity {
  /** The etcd user: the CN of a certificate chained to the etcd face's CA. */
  etcdUser?: string;
  /** The Kubernetes user (CN) and groups (O) of a certificate chained to its client CA. */
  kube?: { username: string; groups: string[] };
  /** A certificate was presented that names nobody on the Kubernetes face: why. */
  kubeRefused?: string;
}

const IDENTITY = Symbol('etcetera.certIdentity');
type Tagged = { [IDENTITY]?: CertIdentity };

function firstOf(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Records on an accepted TLS socket what its client certificate proves to each face
 * (client-http.ts calls it at `secureConnection`). A verified chain counts for a face when
 * one of its certificates (node:tls completes the chain with the anchor it verified
 * against) is one of that face's CAs.
 */
export function recordCertIdentity(socket: TLSSocket, tls: LoadedTls): void {
  const { etcd, kube } = tls.trust;
  if (etcd === undefined && kube === undefined) return;
  const leaf = socket.getPeerCertificate(true);
  if (leaf === null || leaf.fingerprint256 === undefined) return;
  const id: CertIdentity = {};
  if (!socket.authorized) {
    const why = socket.authorizationError;
    id.kubeRefused = `the client certificate did not verify (${why instanceof Error ? why.message : String(why)})`;
  } else {
    const chain = new Set<string>();
    for (let c = leaf; c?.fingerprint256 !== undefined; c = c.issuerCertificate) {
      if (chain.has(c.fingerprint256)) break;
      chain.add(c.fingerprint256);
    }
    const signedBy = (trust: ReadonlySet<string> | undefined) =>
      trust !== undefined && [...chain].some((fp) => trust.has(fp));
    const subject = leaf.subject as unknown as Record<string, string | string[]> | undefined;
    const cn = firstOf(subject?.CN);
    if (signedBy(etcd) && cn !== undefined && cn !== '') id.etcdUser = cn;
    if (kube !== undefined) {
      if (!signedBy(kube)) id.kubeRefused = 'the client certificate is not signed by the client CA';
      else if (cn === undefined || cn === '')
        id.kubeRefused = 'the client certificate has no common name';
      else {
        const o = subject?.O;
        id.kube = { username: cn, groups: o === undefined ? [] : Array.isArray(o) ? o : [o] };
      }
    }
  }
  (socket as Tagged)[IDENTITY] = id;
}

/** What the certificate of this connection proved at its handshake (see recordCertIdentity). */
export function certIdentity(socket: Socket | null | undefined): CertIdentity | undefined {
  return socket instanceof TLSSocket ? (socket as Tagged)[IDENTITY] : undefined;
}

/**
 * The subject CN of the verified certificate an accepted client connection presented, or
 * undefined: plaintext, no certificate, or one that did not verify against the CA. (With
 * --client-cert-auth the CN names the etcd user, as in etcd.)
 */
export function clientCertCommonName(socket: Socket | null | undefined): string | undefined {
  return certIdentity(socket)?.etcdUser;
}

/** A member's loaded TLS: the client port's and the peer port's (absent: not configured). */
export interface MemberTls {
  client?: LoadedTls;
  peer?: LoadedTls;
}

function hostsOf(urls: readonly URL[]): string[] {
  const hosts = urls.map((u) => u.hostname.replace(/^\[|\]$/g, ''));
  return [...new Set(hosts.flatMap((h) => (h === '0.0.0.0' || h === '::' ? ['127.0.0.1'] : [h])))];
}

/**
 * Loads both listeners' TLS before anything is opened, so a missing or unreadable file
 * stops the start with ERR_TLS_FILE. The client side is loaded when the flags give it a
 * certificate and a client URL is https://; the peer side whenever the --peer-* flags give
 * a certificate (it is also the identity this member dials https:// peers with).
 */
export async function loadMemberTls(config: MemberConfig): Promise<MemberTls> {
  const out: MemberTls = {};
  const clientUrls = [...config.listenClientUrls, ...config.advertiseClientUrls];
  if (hasCertificate(config.clientTls) && clientUrls.some((u) => u.protocol === 'https:'))
    out.client = await loadTls(
      '',
      config.clientTls,
      hostsOf(clientUrls),
      config.name,
      join(config.dataDir, 'fixtures', 'client'),
    );
  const peerUrls = [...config.listenPeerUrls, ...config.initialAdvertisePeerUrls];
  if (hasCertificate(config.peerTls))
    out.peer = await loadTls(
      'peer-',
      config.peerTls,
      hostsOf(peerUrls),
      config.name,
      join(config.dataDir, 'fixtures', 'peer'),
    );
  return out;
}
