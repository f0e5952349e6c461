/**
 * X.509 certificates for local use: a CA, member certificates (server and client usage, with
 * host names and IP addresses as subject alternative names) and client certificates, made
 * with `@peculiar/x509` over node:crypto's webcrypto. `etcetera certs` (src/cli/certs.ts)
 * writes them to files; --auto-tls and --peer-auto-tls (src/server/tls.ts) make a
 * self-signed one at start, as etcd does.
 *
 * Keys are ECDSA P-256, certificates are signed with SHA-256; PEM text throughout (keys in
 * PKCS#8, which OpenSSL, Go's crypto/tls and node:tls all read).
 */
// @peculiar/x509 needs a Reflect metadata polyfill loaded before it.
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import { isIP } from 'node:net';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

type CryptoKeyPair = webcrypto.CryptoKeyPair;

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 24 * 60 * 60 * 1000;

/** A certificate and its private key, PEM encoded. */
export interface PemPair {
  cert: string;
  key: string;
}

/** A CA able to sign: its PEM pair and the keys and certificate behind it. */
export interface CertAuthority extends PemPair {
  readonly signer: { keys: CryptoKeyPair; cert: x509.X509Certificate };
}

export interface Validity {
  /** Default: now minus one minute (clock skew between members). */
  notBefore?: Date;
  /** Default: `days` after now. */
  notAfter?: Date;
  /** Default 365. */
  days?: number;
}

async function keyPair(): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as CryptoKeyPair;
}

async function keyPem(keys: CryptoKeyPair): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN PRIVATE KEY-----\n${lines.join('\n')}\n-----END PRIVATE KEY-----\n`;
}

function dates(v: Validity): { notBefore: Date; notAfter: Date } {
  const now = Date.now();
  return {
    notBefore: v.notBefore ?? new Date(now - 60_000),
    notAfter: v.notAfter ?? new Date(now + (v.days ?? 365) * DAY_MS),
  };
}

function serial(): string {
  // A positive 16-byte serial (the top bit clear), as RFC 5280 asks.
  const b = webcrypto.getRandomValues(new Uint8Array(16));
  b[0] = (b[0] ?? 0) & 0x7f;
  return Buffer.from(b).toString('hex');
}

/** A distinguished name's text with `,` `+` `=` and friends escaped (RFC 4514). */
function dnValue(v: string): string {
  return v.replace(/([,+"\\<>;=#])/g, '\\$1');
}

/** Subject alternative names: IP addresses as IPs, anything else as a DNS name. */
function sans(hosts: readonly string[]): x509.SubjectAlternativeNameExtension {
  return new x509.SubjectAlternativeNameExtension(
    hosts.map((h) => (isIP(h) !== 0 ? { type: 'ip', value: h } : { type: 'dns', value: h })),
  );
}

/** A new self-signed CA, `CN=<name>`. */
export async function createCa(name = 'etcetera CA', v: Validity = {}): Promise<CertAuthority> {
  const keys = await keyPair();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${dnValue(name)}`,
    ...dates({ days: 3650, ...v }),
    signingAlgorithm: ALG,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign |
          x509.KeyUsageFlags.cRLSign |
          x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert: cert.toString('pem'), key: await keyPem(keys), signer: { keys, cert } };
}

export interface LeafOptions extends Validity {
  /** The subject's CN: a member's name, or the user a client certificate stands for. */
  commonName: string;
  /** Host names and IP addresses the certificate is valid for (server usage). */
  hosts?: readonly string[];
  /** 'server': server and client usage (members); 'client': client usage only. */
  usage: 'server' | 'client';
  /** Subject O values (Kubernetes reads them as groups). */
  organizations?: readonly string[];
}

/** A certificate signed by `ca`. */
export async function issue(ca: CertAuthority, o: LeafOptions): Promise<PemPair> {
  const keys = await keyPair();
  const usages =
    o.usage === 'server'
      ? [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]
      : [x509.ExtendedKeyUsage.clientAuth];
  const subject = [
    ...(o.organizations ?? []).map((g) => `O=${dnValue(g)}`),
    `CN=${dnValue(o.commonName)}`,
  ].join(', ');
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(
      x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
      true,
    ),
    new x509.ExtendedKeyUsageExtension(usages),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    await x509.AuthorityKeyIdentifierExtension.create(ca.signer.keys.publicKey),
  ];
  if (o.hosts !== undefined && o.hosts.length > 0) extensions.push(sans(o.hosts));
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject,
    issuer: ca.signer.cert.subject,
    ...dates(o),
    signingAlgorithm: ALG,
    publicKey: keys.publicKey,
    signingKey: ca.signer.keys.privateKey,
    extensions,
  });
  return { cert: cert.toString('pem'), key: await keyPem(keys) };
}

/**
 * A self-signed server certificate for `hosts` (--auto-tls): its own issuer, valid for a
 * year, usable as server and client, as etcd's self-signed certificates are.
 */
export async function selfSigned(commonName: string, hosts: readonly string[]): Promise<PemPair> {
  const keys = await keyPair();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${dnValue(commonName)}`,
    ...dates({}),
    signingAlgorithm: ALG,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([
        x509.ExtendedKeyUsage.serverAuth,
        x509.ExtendedKeyUsage.clientAuth,
      ]),
      sans(hosts),
    ],
  });
  return { cert: cert.toString('pem'), key: await keyPem(keys) };
}
