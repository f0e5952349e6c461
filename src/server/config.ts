/**
 * A member's configuration: etcd's settings under etcd's names, their defaults (etcd 3.4's,
 * with etcetera's data-dir suffix and 127.0.0.1 for the listeners), and the checks that turn
 * loose input into a {@link MemberConfig} every other module can trust.
 *
 * The command line (src/cli.ts) and the embedding API both end here: `resolveConfig` takes a
 * partial, fills the defaults and validates, so a bad flag fails before anything is opened.
 */

import { EtceteraError } from '../errors.js';
import { DEFAULT_MAX_REQUEST_BYTES } from '../store/validate.js';
import { DEFAULT_MAX_WATCHES_PER_STREAM } from '../watchcache/etcd-session.js';
import { parseCidr } from '../wire/cidr.js';
import { type AuthTokenSpec, parseAuthTokenSpec } from './auth-token.js';
import type { PeerCertRule } from './peer-cert.js';
import { quotaBytesOf } from './quota.js';
import { hasCertificate, type TlsFlags } from './tls.js';

export const ClusterState = { NEW: 'new', EXISTING: 'existing' } as const;
export type ClusterState = (typeof ClusterState)[keyof typeof ClusterState];

export const CompactionMode = { PERIODIC: 'periodic', REVISION: 'revision' } as const;
export type CompactionMode = (typeof CompactionMode)[keyof typeof CompactionMode];

export const LogLevel = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
  FATAL: 'fatal',
  SILENT: 'silent',
} as const;
export type LogLevel = (typeof LogLevel)[keyof typeof LogLevel];

/** Everything a member needs to start, fully resolved. Durations in ms, sizes in bytes. */
export interface MemberConfig {
  name: string;
  dataDir: string;
  listenClientUrls: URL[];
  advertiseClientUrls: URL[];
  listenPeerUrls: URL[];
  initialAdvertisePeerUrls: URL[];
  /** name → peer URLs, from --initial-cluster. */
  initialCluster: Map<string, URL[]>;
  initialClusterState: ClusterState;
  initialClusterToken: string;
  heartbeatMs: number;
  electionMs: number;
  maxRequestBytes: number;
  /** Most watches one watch stream (an HTTP /v3/watch or a websocket) may hold at once. */
  maxWatchesPerStream: number;
  autoCompactionMode: CompactionMode;
  /** As given: a duration ("1h", "30m") or a number (hours for periodic, revisions for revision). */
  autoCompactionRetention: string;
  /** Applied entries between two Raft snapshots of the store. */
  snapshotCount: number;
  logLevel: LogLevel;
  /**
   * Refuse a voter add or promote that would leave the new membership without a quorum of
   * started members (etcd's flag). Off: such an add is accepted as a learner that is
   * promoted once it has started, so the cluster keeps its quorum meanwhile.
   */
  strictReconfigCheck: boolean;
  /** --cors: origins browsers may call from (`*` for any); empty: none. */
  cors: string[];
  /** --host-whitelist: Host names accepted besides IPs, localhost and the client URLs' hosts. */
  hostWhitelist: string[];
  // --- gRPC keepalive and limits (etcd's flags and defaults) ---
  /** --max-concurrent-streams: HTTP/2 streams one client connection may have open at once. */
  maxConcurrentStreams: number;
  /** --grpc-keepalive-min-time: a client pinging more often than this gets GOAWAY. */
  grpcKeepaliveMinTimeMs: number;
  /** --grpc-keepalive-interval: how often the member pings an idle client (0: never). */
  grpcKeepaliveIntervalMs: number;
  /** --grpc-keepalive-timeout: how long a ping may go unanswered before the connection is closed (0: never). */
  grpcKeepaliveTimeoutMs: number;
  /** --quota-backend-bytes, resolved: 0 given means etcd's default, 2 GiB (src/server/quota.ts). */
  quotaBackendBytes: number;
  /** --experimental-initial-corrupt-check: compare HashKV with the peers before serving. */
  initialCorruptCheck: boolean;
  /** --experimental-corrupt-check-time in ms: the leader's periodic check; 0 = off. */
  corruptCheckMs: number;
  /** --auth-token: simple tokens, or JWTs signed with the given keys (src/server/auth-token.ts). */
  authToken: AuthTokenSpec;
  /** --auth-token-ttl: seconds a simple token lives after its last use. */
  authTokenTtlSeconds: number;
  /** --service-cluster-ip-range: Service clusterIPs are allocated from it (IPv4 CIDR). */
  serviceClusterIpRange: string;
  /** The control plane run beside the member, and the API behaviour it needs. */
  controlPlane: ControlPlaneConfig;
  // --- limits under abuse (client port) ---
  /** --max-connections: open client connections of this member; one more is closed at once. */
  maxConnections: number;
  /**
   * --read-header-timeout: how long a new connection may take to send its first bytes, an
   * HTTP/1.1 request its headers, and an HTTP/2 connection its preface and SETTINGS.
   */
  readHeaderTimeoutMs: number;
  /** --read-body-timeout: how long a request body (not a watch stream's) may take to arrive. */
  readBodyTimeoutMs: number;
  /** --cert-file, --key-file, --trusted-ca-file, --client-cert-auth, --auto-tls. */
  clientTls: TlsFlags;
  /** --peer-cert-file, --peer-key-file, --peer-trusted-ca-file, --peer-client-cert-auth, --peer-auto-tls. */
  peerTls: TlsFlags;
  /** --peer-cert-allowed-cn or --peer-cert-allowed-hostname: which peer certificates may act as peers. */
  peerCertAllowed?: PeerCertRule;
  /** Authentication, authorization and audit of the Kubernetes API. */
  kubeAuth: KubeAuthConfig;
  /**
   * --workers: processes serving the client port over this member (src/server/workers.ts);
   * 0 serves clients in the member's own process.
   */
  workers: number;
}

export const AuthorizationModes = { AlwaysAllow: 'AlwaysAllow', RBAC: 'RBAC' } as const;
export type AuthorizationModes = (typeof AuthorizationModes)[keyof typeof AuthorizationModes];

/** kube-apiserver's authentication, authorization and audit flags. */
export interface KubeAuthConfig {
  /** --token-auth-file (read at start). */
  tokenAuthFile: string | undefined;
  /** --service-account-key-file (read at start). */
  serviceAccountKeyFile: string | undefined;
  /** --anonymous-auth (default true). */
  anonymousAuth: boolean;
  /** --authorization-mode (default AlwaysAllow). */
  authorizationMode: AuthorizationModes;
  /** --audit-log-path (opened at start). */
  auditLogPath: string | undefined;
}

/** --control-plane and the switches of its parts (src/controlplane). */
export interface ControlPlaneConfig {
  /** Part name → on/off, or a count (`nodes`); only the parts given. */
  parts: Record<string, boolean | number>;
  /** Pod IPs of simulated nodes come from here, a /24 per node. */
  clusterCidr: string;
  /**
   * A bound Pod's delete sets deletionTimestamp; its kubelet removes it. Default: on when
   * the simulated nodes run (they are what finishes such a deletion), else off.
   */
  gracefulPodDeletion: boolean;
  /** --scheduler-seed: seed of the scheduler's tie-breaking generator; undefined: random. */
  schedulerSeed: number | undefined;
  /** Simulated Pods become Ready this long after they run. */
  nodeReadinessDelayMs: number;
}

/** etcd's defaults, as etcd 3.4 documents them (127.0.0.1 instead of localhost). */
export const DEFAULTS = {
  name: 'default',
  listenClientUrls: 'http://127.0.0.1:2379',
  listenPeerUrls: 'http://127.0.0.1:2380',
  initialClusterState: ClusterState.NEW,
  initialClusterToken: 'etcetera-cluster',
  heartbeatMs: 100,
  electionMs: 1000,
  maxRequestBytes: DEFAULT_MAX_REQUEST_BYTES,
  maxWatchesPerStream: DEFAULT_MAX_WATCHES_PER_STREAM,
  autoCompactionMode: CompactionMode.PERIODIC,
  autoCompactionRetention: '0',
  snapshotCount: 100_000,
  logLevel: LogLevel.INFO,
  strictReconfigCheck: true,
  // gRPC keepalive and limits, as etcd 3.4's `etcd --help` gives them.
  maxConcurrentStreams: 2 ** 32 - 1,
  grpcKeepaliveMinTime: '5s',
  grpcKeepaliveInterval: '2h',
  grpcKeepaliveTimeout: '20s',
  // limits under abuse (etcetera's own; etcd has no such flags)
  maxConnections: 10_000,
  readHeaderTimeout: '10s',
  readBodyTimeout: '60s',
  workers: 0,
} as const;

/** Loose input: every field optional, URLs and the cluster as strings (flags or code). */
export interface MemberConfigInput {
  name?: string;
  dataDir?: string;
  listenClientUrls?: string;
  advertiseClientUrls?: string;
  listenPeerUrls?: string;
  initialAdvertisePeerUrls?: string;
  initialCluster?: string;
  initialClusterState?: string;
  initialClusterToken?: string;
  heartbeatMs?: number;
  electionMs?: number;
  maxRequestBytes?: number;
  maxWatchesPerStream?: number;
  autoCompactionMode?: string;
  autoCompactionRetention?: string;
  snapshotCount?: number;
  logLevel?: string;
  /** A boolean, or 'true' / 'false' as the flag is given. */
  strictReconfigCheck?: boolean | string;
  /** Comma-separated, as etcd's --cors. */
  cors?: string;
  /** Comma-separated, as etcd's --host-whitelist. */
  hostWhitelist?: string;
  maxConcurrentStreams?: number;
  /** Go durations, as etcd's flags take them ("5s", "2h", "1m30s", "0"). */
  grpcKeepaliveMinTime?: string;
  grpcKeepaliveInterval?: string;
  grpcKeepaliveTimeout?: string;
  quotaBackendBytes?: number;
  initialCorruptCheck?: boolean | string;
  /** A duration ("5m", "30s", "1m30s") or milliseconds as a number. */
  corruptCheckTime?: string | number;
  /** etcd's --auth-token: `simple` or `jwt,pub-key=...,priv-key=...,sign-method=...`. */
  authToken?: string;
  /** etcd's --auth-token-ttl in seconds (default 300). */
  authTokenTtl?: number;
  schedulerSeed?: number;
  /** An IPv4 CIDR, default 10.96.0.0/12 as kube-apiserver's. */
  serviceClusterIpRange?: string;
  /** --control-plane: every part on (nodes: 3 unless --nodes says otherwise). */
  controlPlane?: boolean | string;
  /** Per-part switches by part name (`controllers`, `scheduler`, `nodes`, ...). */
  parts?: Record<string, boolean | number | string>;
  clusterCidr?: string;
  gracefulPodDeletion?: boolean | string;
  nodeReadinessDelayMs?: number;
  maxConnections?: number;
  /** Go durations ("10s", "500ms"). */
  readHeaderTimeout?: string;
  readBodyTimeout?: string;
  tokenAuthFile?: string;
  /** --client-ca-file: Kubernetes client certificates, asked for but optional. */
  clientCaFile?: string;
  serviceAccountKeyFile?: string;
  /** A boolean, or 'true' / 'false'. */
  anonymousAuth?: boolean | string;
  authorizationMode?: string;
  auditLogPath?: string;
  // --- TLS for clients and peers (file paths; booleans or 'true' / 'false') ---
  certFile?: string;
  keyFile?: string;
  trustedCaFile?: string;
  clientCertAuth?: boolean | string;
  autoTls?: boolean | string;
  peerCertFile?: string;
  peerKeyFile?: string;
  peerTrustedCaFile?: string;
  peerClientCertAuth?: boolean | string;
  peerAutoTls?: boolean | string;
  /** etcd's --peer-cert-allowed-cn / --peer-cert-allowed-hostname (src/server/peer-cert.ts). */
  peerCertAllowedCn?: string;
  peerCertAllowedHostname?: string;
  workers?: number;
}

function bad(detail: string): EtceteraError {
  return new EtceteraError('ERR_INVALID_ARGUMENT', { detail });
}

/** A comma-separated list of http(s) URLs, as etcd's URL flags take. */
export function parseUrls(flag: string, text: string): URL[] {
  const parts = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (parts.length === 0) throw bad(`--${flag} needs at least one URL`);
  return parts.map((s) => {
    let u: URL;
    try {
      u = new URL(s);
    } catch {
      throw bad(`--${flag}: ${JSON.stringify(s)} is not a URL`);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      throw bad(`--${flag}: only http:// and https:// URLs are supported (${s})`);
    if (u.pathname !== '/' || u.search !== '' || u.hash !== '')
      throw bad(`--${flag}: ${s} must not have a path`);
    return u;
  });
}

function commaList(text: string | undefined): string[] {
  return (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** --cors: `*`, or origins such as `https://dash.example:8443` (scheme, host, port; no path). */
export function parseCorsOrigins(text: string | undefined): string[] {
  return commaList(text).map((o) => {
    if (o === '*') return o;
    let u: URL;
    try {
      u = new URL(o);
    } catch {
      throw bad(`--cors: ${JSON.stringify(o)} is not an origin such as https://host:port`);
    }
    if (
      (u.protocol !== 'http:' && u.protocol !== 'https:') ||
      u.origin !== o.replace(/\/$/, '').toLowerCase()
    )
      throw bad(`--cors: ${JSON.stringify(o)} is not an origin such as https://host:port`);
    return u.origin;
  });
}

/** --host-whitelist: `*`, or host names / IP addresses without port. */
export function parseHostWhitelist(text: string | undefined): string[] {
  return commaList(text).map((h) => {
    if (h !== '*' && !/^([a-z0-9_-]+\.)*[a-z0-9_-]+\.?$|^\[[0-9a-f:.]+\]$/i.test(h))
      throw bad(`--host-whitelist: ${JSON.stringify(h)} is not a host name`);
    return h.toLowerCase();
  });
}

/** "a=http://h:1,a=http://h:2,b=http://h:3" → a: [h:1, h:2], b: [h:3] (etcd's format). */
export function parseInitialCluster(text: string): Map<string, URL[]> {
  const out = new Map<string, URL[]>();
  for (const part of text.split(',')) {
    const item = part.trim();
    if (item.length === 0) continue;
    const eq = item.indexOf('=');
    if (eq <= 0) throw bad(`--initial-cluster: ${JSON.stringify(item)} is not name=url`);
    const name = item.slice(0, eq);
    const urls = parseUrls('initial-cluster', item.slice(eq + 1));
    out.set(name, [...(out.get(name) ?? []), ...urls]);
  }
  if (out.size === 0) throw bad('--initial-cluster is empty');
  return out;
}

export function urlString(u: URL): string {
  return `${u.protocol}//${u.host}`;
}

function positiveInt(flag: string, n: number | undefined, fallback: number): number {
  const v = n ?? fallback;
  if (!Number.isSafeInteger(v) || v <= 0) throw bad(`--${flag} must be a positive integer`);
  return v;
}

function oneOf<T extends string>(flag: string, v: string, allowed: Record<string, T>): T {
  const values = Object.values(allowed);
  if (!values.includes(v as T)) throw bad(`--${flag} must be one of ${values.join(', ')}`);
  return v as T;
}

/** Fills etcd's defaults and checks everything. Throws ERR_INVALID_ARGUMENT naming the flag. */
export function resolveConfig(input: MemberConfigInput = {}): MemberConfig {
  const name = input.name ?? DEFAULTS.name;
  if (name.length === 0) throw bad('--name must not be empty');
  const listenClientUrls = parseUrls(
    'listen-client-urls',
    input.listenClientUrls ?? DEFAULTS.listenClientUrls,
  );
  const listenPeerUrls = parseUrls(
    'listen-peer-urls',
    input.listenPeerUrls ?? DEFAULTS.listenPeerUrls,
  );
  const advertiseClientUrls = parseUrls(
    'advertise-client-urls',
    input.advertiseClientUrls ?? input.listenClientUrls ?? DEFAULTS.listenClientUrls,
  );
  const initialAdvertisePeerUrls = parseUrls(
    'initial-advertise-peer-urls',
    input.initialAdvertisePeerUrls ?? input.listenPeerUrls ?? DEFAULTS.listenPeerUrls,
  );
  const initialCluster =
    input.initialCluster === undefined
      ? new Map([[name, initialAdvertisePeerUrls]])
      : parseInitialCluster(input.initialCluster);
  const heartbeatMs = positiveInt('heartbeat-interval', input.heartbeatMs, DEFAULTS.heartbeatMs);
  const electionMs = positiveInt('election-timeout', input.electionMs, DEFAULTS.electionMs);
  // etcd's rule: the election timeout must be at least five heartbeats.
  if (electionMs < 5 * heartbeatMs)
    throw bad('--election-timeout should be at least 5 times --heartbeat-interval');
  const mode = oneOf(
    'auto-compaction-mode',
    input.autoCompactionMode ?? DEFAULTS.autoCompactionMode,
    CompactionMode,
  );
  const retention = input.autoCompactionRetention ?? DEFAULTS.autoCompactionRetention;
  parseRetention(mode, retention); // validate now; the compactor parses again
  return {
    name,
    dataDir: input.dataDir ?? `${name}.etcetera`,
    listenClientUrls,
    advertiseClientUrls,
    listenPeerUrls,
    initialAdvertisePeerUrls,
    initialCluster,
    initialClusterState: oneOf(
      'initial-cluster-state',
      input.initialClusterState ?? DEFAULTS.initialClusterState,
      ClusterState,
    ),
    initialClusterToken: input.initialClusterToken ?? DEFAULTS.initialClusterToken,
    heartbeatMs,
    electionMs,
    maxRequestBytes: positiveInt(
      'max-request-bytes',
      input.maxRequestBytes,
      DEFAULTS.maxRequestBytes,
    ),
    maxWatchesPerStream: positiveInt(
      'max-watches-per-stream',
      input.maxWatchesPerStream,
      DEFAULTS.maxWatchesPerStream,
    ),
    autoCompactionMode: mode,
    autoCompactionRetention: retention,
    snapshotCount: positiveInt('snapshot-count', input.snapshotCount, DEFAULTS.snapshotCount),
    logLevel: oneOf('log-level', input.logLevel ?? DEFAULTS.logLevel, LogLevel),
    strictReconfigCheck: bool(
      'strict-reconfig-check',
      input.strictReconfigCheck,
      DEFAULTS.strictReconfigCheck,
    ),
    cors: parseCorsOrigins(input.cors),
    hostWhitelist: parseHostWhitelist(input.hostWhitelist),
    maxConcurrentStreams: maxStreams(input.maxConcurrentStreams),
    grpcKeepaliveMinTimeMs: parseDuration(
      'grpc-keepalive-min-time',
      input.grpcKeepaliveMinTime ?? DEFAULTS.grpcKeepaliveMinTime,
    ),
    grpcKeepaliveIntervalMs: parseDuration(
      'grpc-keepalive-interval',
      input.grpcKeepaliveInterval ?? DEFAULTS.grpcKeepaliveInterval,
    ),
    grpcKeepaliveTimeoutMs: parseDuration(
      'grpc-keepalive-timeout',
      input.grpcKeepaliveTimeout ?? DEFAULTS.grpcKeepaliveTimeout,
    ),
    quotaBackendBytes: quotaBytesOf(nonNegativeInt('quota-backend-bytes', input.quotaBackendBytes)),
    initialCorruptCheck: bool(
      'experimental-initial-corrupt-check',
      input.initialCorruptCheck,
      false,
    ),
    corruptCheckMs:
      typeof input.corruptCheckTime === 'number'
        ? nonNegativeInt('experimental-corrupt-check-time', input.corruptCheckTime)
        : parseDuration('experimental-corrupt-check-time', input.corruptCheckTime ?? '0s'),
    authToken: parseAuthTokenSpec(input.authToken ?? 'simple'),
    authTokenTtlSeconds: positiveInt('auth-token-ttl', input.authTokenTtl, 300),
    serviceClusterIpRange: cidrFlag(
      'service-cluster-ip-range',
      input.serviceClusterIpRange ?? '10.96.0.0/12',
    ),
    controlPlane: resolveControlPlane(input),
    maxConnections: positiveInt('max-connections', input.maxConnections, DEFAULTS.maxConnections),
    workers: workerCount(input.workers),
    readHeaderTimeoutMs: positiveDuration(
      'read-header-timeout',
      input.readHeaderTimeout ?? DEFAULTS.readHeaderTimeout,
    ),
    readBodyTimeoutMs: positiveDuration(
      'read-body-timeout',
      input.readBodyTimeout ?? DEFAULTS.readBodyTimeout,
    ),
    kubeAuth: {
      tokenAuthFile: nonEmpty('token-auth-file', input.tokenAuthFile),
      serviceAccountKeyFile: nonEmpty('service-account-key-file', input.serviceAccountKeyFile),
      anonymousAuth: bool('anonymous-auth', input.anonymousAuth, true),
      authorizationMode: oneOf(
        'authorization-mode',
        input.authorizationMode ?? AuthorizationModes.AlwaysAllow,
        AuthorizationModes,
      ),
      auditLogPath: nonEmpty('audit-log-path', input.auditLogPath),
    },
    ...resolveTls(input, listenClientUrls, listenPeerUrls),
    ...peerCertAllowed(input),
  };
}

/** The TLS flags of both listeners; an https:// listen URL needs a certificate (files or auto). */
function resolveTls(
  input: MemberConfigInput,
  clientUrls: URL[],
  peerUrls: URL[],
): { clientTls: TlsFlags; peerTls: TlsFlags } {
  const one = (
    prefix: '' | 'peer-',
    certFile: string | undefined,
    keyFile: string | undefined,
    trustedCaFile: string | undefined,
    clientCertAuth: boolean | string | undefined,
    autoTls: boolean | string | undefined,
    urls: URL[],
    urlFlag: string,
    clientCaFile?: string,
  ): TlsFlags => {
    const nonEmpty = (flag: string, v: string | undefined) => {
      if (v !== undefined && v.trim() === '') throw bad(`--${prefix}${flag} must not be empty`);
      return v === undefined || v.trim() === '' ? undefined : v;
    };
    const f: TlsFlags = {
      clientCertAuth: bool(`${prefix}client-cert-auth`, clientCertAuth, false),
      autoTls: bool(`${prefix}auto-tls`, autoTls, false),
    };
    const clientCa = nonEmpty('client-ca-file', clientCaFile);
    if (clientCa !== undefined) {
      if (!urls.some((u) => u.protocol === 'https:'))
        throw bad('--client-ca-file needs an https:// client URL (--listen-client-urls)');
      f.clientCaFile = clientCa;
    }
    const cert = nonEmpty('cert-file', certFile);
    const key = nonEmpty('key-file', keyFile);
    const ca = nonEmpty('trusted-ca-file', trustedCaFile);
    if ((cert === undefined) !== (key === undefined))
      throw bad(`--${prefix}cert-file and --${prefix}key-file go together`);
    if (cert !== undefined) f.certFile = cert;
    if (key !== undefined) f.keyFile = key;
    if (f.autoTls && cert === undefined) {
      // etcd replaces the whole TLS setup with the self-signed one: no client CA, no
      // client certificates asked for. The member logs what it ignored.
      const ignored = [
        ...(f.clientCertAuth ? [`--${prefix}client-cert-auth`] : []),
        ...(ca !== undefined ? [`--${prefix}trusted-ca-file`] : []),
      ];
      if (ignored.length > 0) f.ignored = ignored;
      f.clientCertAuth = false;
      return f;
    }
    if (ca !== undefined) f.trustedCaFile = ca;
    if (f.clientCertAuth && ca === undefined)
      throw bad(`--${prefix}client-cert-auth needs --${prefix}trusted-ca-file`);
    const https = urls.find((u) => u.protocol === 'https:');
    if (https !== undefined && !hasCertificate(f))
      throw bad(
        `--${urlFlag} ${urlString(https)} needs --${prefix}cert-file and --${prefix}key-file (or --${prefix}auto-tls)`,
      );
    return f;
  };
  return {
    clientTls: one(
      '',
      input.certFile,
      input.keyFile,
      input.trustedCaFile,
      input.clientCertAuth,
      input.autoTls,
      clientUrls,
      'listen-client-urls',
      input.clientCaFile,
    ),
    peerTls: one(
      'peer-',
      input.peerCertFile,
      input.peerKeyFile,
      input.peerTrustedCaFile,
      input.peerClientCertAuth,
      input.peerAutoTls,
      peerUrls,
      'listen-peer-urls',
    ),
  };
}

/** --peer-cert-allowed-cn / --peer-cert-allowed-hostname: one of them, with --peer-client-cert-auth. */
function peerCertAllowed(input: MemberConfigInput): { peerCertAllowed?: PeerCertRule } {
  const flag = (name: string, v: string | undefined) => {
    if (v !== undefined && v.trim() === '') throw bad(`--${name} must not be empty`);
    return v;
  };
  const cn = flag('peer-cert-allowed-cn', input.peerCertAllowedCn);
  const hostname = flag('peer-cert-allowed-hostname', input.peerCertAllowedHostname);
  if (cn === undefined && hostname === undefined) return {};
  if (cn !== undefined && hostname !== undefined)
    throw bad('--peer-cert-allowed-cn and --peer-cert-allowed-hostname are mutually exclusive');
  const which = cn !== undefined ? 'peer-cert-allowed-cn' : 'peer-cert-allowed-hostname';
  if (!bool('peer-client-cert-auth', input.peerClientCertAuth, false))
    throw bad(`--${which} needs --peer-client-cert-auth (and https:// peer URLs)`);
  return {
    peerCertAllowed:
      cn !== undefined ? { kind: 'cn', cn } : { kind: 'hostname', hostname: hostname as string },
  };
}

/** A duration that must not be 0 (a limit that can be switched off is no limit). */
function positiveDuration(flag: string, text: string): number {
  const ms = parseDuration(flag, text);
  if (ms <= 0) throw bad(`--${flag} must be longer than 0`);
  return ms;
}

function nonEmpty(flag: string, v: string | undefined): string | undefined {
  if (v === undefined) return undefined;
  if (v.trim() === '') throw bad(`--${flag} must name a file`);
  return v;
}

/** --workers: 0 (the member serves its clients) up to 64 worker processes. */
function workerCount(v: number | undefined): number {
  const n = nonNegativeInt('workers', v);
  if (n > 64) throw bad('--workers must be at most 64');
  return n;
}

function nonNegativeInt(flag: string, v: number | undefined): number {
  if (v === undefined) return 0;
  if (!Number.isSafeInteger(v) || v < 0) throw bad(`--${flag} must be an integer >= 0`);
  return v;
}

/** HTTP/2 carries SETTINGS_MAX_CONCURRENT_STREAMS in 32 bits. */
function maxStreams(n: number | undefined): number {
  const v = positiveInt('max-concurrent-streams', n, DEFAULTS.maxConcurrentStreams);
  if (v > 2 ** 32 - 1) throw bad('--max-concurrent-streams must be at most 4294967295');
  return v;
}

/** A Go duration as etcd's flags take it ("500ms", "5s", "1m30s", "2h", "0"), in whole ms. */
export function parseDuration(flag: string, text: string): number {
  const t = text.trim();
  if (t === '0') return 0;
  const parts = [...t.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== t)
    throw bad(`--${flag}: ${JSON.stringify(text)} is not a duration (e.g. 5s, 2h, 500ms)`);
  const ms = parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_MS[p[2]!]!, 0);
  if (!Number.isSafeInteger(Math.round(ms))) throw bad(`--${flag}: ${text} is too long`);
  return Math.round(ms);
}

/** --scheduler-seed: an integer 0 .. 2^31-1. */
function schedulerSeed(v: number | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!Number.isSafeInteger(v) || v < 0 || v > 2 ** 31 - 1) {
    throw bad(`--scheduler-seed must be an integer from 0 to ${2 ** 31 - 1}, not ${v}`);
  }
  return v;
}

function cidrFlag(flag: string, text: string): string {
  try {
    return parseCidr(text).text;
  } catch (e) {
    throw bad(`--${flag}: ${(e as Error).message}`);
  }
}

function resolveControlPlane(input: MemberConfigInput): ControlPlaneConfig {
  const all = bool('control-plane', input.controlPlane, false);
  const parts: Record<string, boolean | number> = {};
  for (const [name, v] of Object.entries(input.parts ?? {})) {
    if (typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v))) {
      const n = Number(v);
      if (!Number.isSafeInteger(n) || n < 0 || n > 5000)
        throw bad(`--${name} must be a count from 0 to 5000`);
      parts[name] = n;
    } else parts[name] = bool(name, v, false);
  }
  // Graceful deletion needs a kubelet to finish it: on by default with the simulated nodes.
  const nodes = parts.nodes;
  const nodesOn = typeof nodes === 'number' ? nodes > 0 : all && nodes === undefined;
  const readiness = input.nodeReadinessDelayMs ?? 200;
  if (!Number.isSafeInteger(readiness) || readiness < 0)
    throw bad('--node-readiness-delay must be a number of ms');
  return {
    parts: all ? { ...parts, [CONTROL_PLANE_ALL]: true } : parts,
    clusterCidr: cidrFlag('cluster-cidr', input.clusterCidr ?? '10.244.0.0/16'),
    gracefulPodDeletion: bool('graceful-pod-deletion', input.gracefulPodDeletion, nodesOn),
    schedulerSeed: schedulerSeed(input.schedulerSeed),
    nodeReadinessDelayMs: readiness,
  };
}

/** The key of `parts` that --control-plane sets (every part on). */
export const CONTROL_PLANE_ALL = '*';

function bool(flag: string, v: boolean | string | undefined, dflt: boolean): boolean {
  if (v === undefined) return dflt;
  if (typeof v === 'boolean') return v;
  const t = v.trim().toLowerCase();
  if (t === 'true' || t === '1') return true;
  if (t === 'false' || t === '0') return false;
  throw bad(`--${flag} must be true or false, not ${JSON.stringify(v)}`);
}

/** What auto-compaction keeps: nothing (off), a time window, or a number of revisions. */
export type Retention =
  | { kind: 'off' }
  | { kind: 'periodic'; ms: number }
  | { kind: 'revision'; revisions: number };

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** etcd's --auto-compaction-retention: periodic takes "1h30m"-style or hours; revision a count. */
export function parseRetention(mode: CompactionMode, text: string): Retention {
  const t = text.trim();
  if (mode === CompactionMode.REVISION) {
    if (!/^\d+$/.test(t)) throw bad('--auto-compaction-retention must be a revision count');
    const n = Number(t);
    return n === 0 ? { kind: 'off' } : { kind: 'revision', revisions: n };
  }
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(t)) ms = Number(t) * UNIT_MS.h!;
  else {
    const parts = [...t.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
    if (parts.length === 0 || parts.map((p) => p[0]).join('') !== t)
      throw bad(`--auto-compaction-retention: ${JSON.stringify(text)} is not a duration`);
    ms = parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_MS[p[2]!]!, 0);
  }
  return ms === 0 ? { kind: 'off' } : { kind: 'periodic', ms: Math.round(ms) };
}

/** etcd's minimum lease TTL: ceil(1.5 × election timeout), in seconds. */
export function minLeaseTtlSeconds(electionMs: number): number {
  return Math.ceil((3 * electionMs) / 2 / 1000);
}

/** etcd's request timeout: 5 s plus two election timeouts. */
export function requestTimeoutMs(electionMs: number): number {
  return 5000 + 2 * electionMs;
}
