/**
 * `etcetera serve` flags: etcd's names, `--flag=value` or `--flag value`, and for every flag
 * an environment variable ETCETERA_<FLAG> (dashes to underscores, upper case), as etcd reads
 * ETCD_<FLAG>. A flag on the command line wins over its variable, as in etcd.
 */
import { parseArgs } from 'node:util';
import { PARTS } from '../controlplane/parts.js';
import { EtceteraError } from '../errors.js';
import { DEFAULTS, type MemberConfigInput } from './config.js';

/** Flag name → the MemberConfigInput field it sets, and whether it is a number. */
const FLAGS = {
  name: ['name', false],
  'data-dir': ['dataDir', false],
  'listen-client-urls': ['listenClientUrls', false],
  'advertise-client-urls': ['advertiseClientUrls', false],
  'listen-peer-urls': ['listenPeerUrls', false],
  'initial-advertise-peer-urls': ['initialAdvertisePeerUrls', false],
  'initial-cluster': ['initialCluster', false],
  'initial-cluster-state': ['initialClusterState', false],
  'initial-cluster-token': ['initialClusterToken', false],
  'heartbeat-interval': ['heartbeatMs', true],
  'election-timeout': ['electionMs', true],
  'max-request-bytes': ['maxRequestBytes', true],
  'max-watches-per-stream': ['maxWatchesPerStream', true],
  'auto-compaction-mode': ['autoCompactionMode', false],
  'auto-compaction-retention': ['autoCompactionRetention', false],
  'snapshot-count': ['snapshotCount', true],
  'log-level': ['logLevel', false],
  'strict-reconfig-check': ['strictReconfigCheck', false],
  cors: ['cors', false],
  'host-whitelist': ['hostWhitelist', false],
  // gRPC keepalive and limits
  'max-concurrent-streams': ['maxConcurrentStreams', true],
  'grpc-keepalive-min-time': ['grpcKeepaliveMinTime', false],
  'grpc-keepalive-interval': ['grpcKeepaliveInterval', false],
  'grpc-keepalive-timeout': ['grpcKeepaliveTimeout', false],
  // --- space quota and the corruption check ---
  'quota-backend-bytes': ['quotaBackendBytes', true],
  'experimental-initial-corrupt-check': ['initialCorruptCheck', false],
  'experimental-corrupt-check-time': ['corruptCheckTime', false],
  // --- limits under abuse ---
  'max-connections': ['maxConnections', true],
  'read-header-timeout': ['readHeaderTimeout', false],
  'read-body-timeout': ['readBodyTimeout', false],
  // --- worker processes on the client port (src/server/workers.ts) ---
  workers: ['workers', true],
  // --- authentication ---
  'auth-token': ['authToken', false],
  'auth-token-ttl': ['authTokenTtl', true],
  ...kubeAuthFlags(),
  ...tlsFlags(),
  'service-cluster-ip-range': ['serviceClusterIpRange', false],
  // the control plane's scheduler (its switch is a part's, below)
  'scheduler-seed': ['schedulerSeed', true],
} as const satisfies Record<string, readonly [keyof MemberConfigInput, boolean]>;

export type FlagName = keyof typeof FLAGS;
export const FLAG_NAMES = Object.keys(FLAGS) as FlagName[];

export function envName(flag: string): string {
  return `ETCETERA_${flag.toUpperCase().replace(/-/g, '_')}`;
}

function bad(detail: string): EtceteraError {
  return new EtceteraError('ERR_INVALID_ARGUMENT', { detail });
}

/** Parses serve's arguments (after the subcommand) and the environment into config input. */
export function parseServeArgs(
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): MemberConfigInput {
  const options = {
    ...Object.fromEntries(FLAG_NAMES.map((f) => [f, { type: 'string' as const }])),
    ...controlPlaneOptions(),
  };
  let values: Record<string, string | boolean | undefined>;
  const off = new Set<string>();
  const withValues = switchesWithValues(withBareBooleans(args), off);
  try {
    ({ values } = parseArgs({
      args: withValues,
      options,
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    throw bad((e as Error).message);
  }
  const input: Record<string, string | number> = {};
  for (const flag of FLAG_NAMES) {
    const raw = values[flag] ?? env[envName(flag)];
    if (raw === undefined || typeof raw !== 'string') continue;
    const [field, numeric] = FLAGS[flag];
    if (numeric) {
      if (!/^\d+$/.test(raw.trim()))
        throw bad(`--${flag} must be a number, not ${JSON.stringify(raw)}`);
      input[field] = Number(raw);
    } else input[field] = raw;
  }
  for (const n of off) values[n] = 'false';
  return { ...(input as MemberConfigInput), ...controlPlaneInput(values, env) };
}

export const SERVE_USAGE = `Usage: etcetera [serve] [flags]

Runs one member. With no flags: a single-member cluster named "${DEFAULTS.name}" with its data in
./default.etcetera, clients on ${DEFAULTS.listenClientUrls}, peers on ${DEFAULTS.listenPeerUrls}.
Every flag can also be set with an environment variable, e.g. --data-dir as ETCETERA_DATA_DIR.

  --name                         member name (default "${DEFAULTS.name}")
  --data-dir                     data directory (default "<name>.etcetera")
  --listen-client-urls           URLs to serve clients on (default ${DEFAULTS.listenClientUrls})
  --advertise-client-urls        client URLs told to the cluster (default: the listen URLs)
  --listen-peer-urls             URLs to serve peers on (default ${DEFAULTS.listenPeerUrls})
  --initial-advertise-peer-urls  peer URLs told to the cluster (default: the listen URLs)
  --initial-cluster              name=url,... of the initial members (default "<name>=<peer url>")
  --initial-cluster-state        new | existing (default ${DEFAULTS.initialClusterState})
  --initial-cluster-token        cluster token (default "${DEFAULTS.initialClusterToken}")
  --heartbeat-interval           ms (default ${DEFAULTS.heartbeatMs})
  --election-timeout             ms (default ${DEFAULTS.electionMs})
  --max-request-bytes            bytes (default ${DEFAULTS.maxRequestBytes})
  --max-watches-per-stream       watches one watch stream may hold (default ${DEFAULTS.maxWatchesPerStream})
  --auto-compaction-mode         periodic | revision (default ${DEFAULTS.autoCompactionMode})
  --auto-compaction-retention    periodic: "1h", "30m" or hours; revision: a count (default 0 = off)
  --snapshot-count               applied entries between snapshots (default ${DEFAULTS.snapshotCount})
  --log-level                    trace | debug | info | warn | error | fatal | silent (default info)
  --strict-reconfig-check        true | false: refuse a voter add that leaves no quorum of started
                                 members (default true; false adds it as a learner promoted on start)
  --cors                         origins browsers may call from, comma-separated, or * (default: none)
  --host-whitelist               Host names accepted besides IP addresses, localhost and the
                                 client URLs' hosts, comma-separated, or * (default: none)
  --max-concurrent-streams       HTTP/2 streams one client connection may open at a time
                                 (default ${DEFAULTS.maxConcurrentStreams}, etcd's math.MaxUint32)
  --grpc-keepalive-min-time      a client pinging more often gets GOAWAY (default ${DEFAULTS.grpcKeepaliveMinTime})
  --grpc-keepalive-interval      how often the member pings a client, 0 to disable (default ${DEFAULTS.grpcKeepaliveInterval})
  --grpc-keepalive-timeout       wait for the ping's answer before closing, 0 to disable (default ${DEFAULTS.grpcKeepaliveTimeout})
  --quota-backend-bytes          database size that raises the NOSPACE alarm (default 0 = 2 GiB)
  --experimental-initial-corrupt-check
                                 true | false: compare the keyspace hash with the peers' before
                                 serving; refuse to start on a mismatch (default false)
  --experimental-corrupt-check-time
                                 how often the leader compares members' hashes and raises
                                 CORRUPT on a mismatch, e.g. 5m (default 0s = off)
  --max-connections              open client connections; one more is closed at once
                                 (default ${DEFAULTS.maxConnections})
  --read-header-timeout          a connection's first bytes, a request's headers, an HTTP/2
                                 preface and SETTINGS must arrive within this (default ${DEFAULTS.readHeaderTimeout})
  --read-body-timeout            a request body must arrive within this; watch streams are
                                 not cut (default ${DEFAULTS.readBodyTimeout})
  --workers                      processes serving the client port (JSON, gRPC, websockets,
                                 Kubernetes) from their own watch cache over this member;
                                 0 serves clients in the member's process (default 0)
  --auth-token                   simple | jwt,pub-key=FILE,priv-key=FILE,sign-method=RS256|ES256|...
                                 [,ttl=5m]: the tokens Authenticate hands out (default simple)
  --auth-token-ttl               seconds a simple token lives unused (default 300)
  --service-cluster-ip-range     IPv4 CIDR Service clusterIPs are allocated from (default 10.96.0.0/12)

Control plane (clients of this member's Kubernetes API, run in the same process):
  --control-plane                every part below (--nodes defaults to 3)
${PARTS.filter((p) => p.kind === 'switch')
  .map(
    (p) =>
      `  --${p.name.padEnd(29)}run the ${p.name} alone (or --${p.name}=false with --control-plane)`,
  )
  .join('\n')}
  --nodes                        simulated nodes (default 0; 3 with --control-plane)
  --cluster-cidr                 Pod IPs of simulated nodes, a /24 each (default 10.244.0.0/16)
  --graceful-pod-deletion        true | false: deleting a bound Pod waits for its kubelet
                                 (default true when the simulated nodes run, which finish it)
  --node-readiness-delay         ms from a simulated Pod running to Ready (default 200)
Kubernetes API authentication, authorization and audit (kube-apiserver's flags):
  --token-auth-file              CSV of bearer tokens: token,user,uid,"group1,group2"
  --service-account-key-file     PEM key(s) that verify ServiceAccount token signatures
  --anonymous-auth               true | false: requests without credentials are system:anonymous
                                 (default true; false answers 401)
  --authorization-mode           AlwaysAllow | RBAC (default AlwaysAllow)
  --audit-log-path               append one JSON audit event per mutating request to this file
  --client-ca-file               CA whose client certificates authenticate (CN = user, O = groups);
                                 asked for on https:// client URLs but optional
  --scheduler-seed               seed of the scheduler's tie-breaking generator (default: random)
Each switch also takes a value: --scheduler=false, --scheduler false, ETCETERA_SCHEDULER=false.
${tlsUsage()}`;

// --- control plane: --control-plane, one switch per part of src/controlplane/parts.ts ---

const CONTROL_PLANE_STRINGS = {
  'cluster-cidr': 'clusterCidr',
  'graceful-pod-deletion': 'gracefulPodDeletion',
  'node-readiness-delay': 'nodeReadinessDelayMs',
} as const;

function switchNames(): string[] {
  return ['control-plane', ...PARTS.filter((p) => p.kind === 'switch').map((p) => p.name)];
}

function controlPlaneOptions(): Record<string, { type: 'string' | 'boolean' }> {
  const o: Record<string, { type: 'string' | 'boolean' }> = {};
  for (const n of switchNames()) o[n] = { type: 'boolean' };
  for (const p of PARTS) if (p.kind === 'count') o[p.name] = { type: 'string' };
  for (const n of Object.keys(CONTROL_PLANE_STRINGS)) o[n] = { type: 'string' };
  return o;
}

/**
 * The one way a switch takes a value (parseArgs takes none for booleans): `--scheduler`,
 * `--scheduler=true|false` and `--scheduler true|false` (the next argument exactly true or
 * false). Switches given false land in `off`; any other value after `=` is left for
 * parseArgs to refuse.
 */
function switchesWithValues(args: readonly string[], off: Set<string>): string[] {
  const names = new Set(switchNames());
  const out: string[] = [];
  const set = (name: string, value: string) => {
    if (value === 'true') out.push(`--${name}`);
    else off.add(name);
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    const eq = /^--([a-z-]+)=(.*)$/.exec(a);
    if (eq && names.has(eq[1] as string)) {
      const v = eq[2] as string;
      if (v !== 'true' && v !== 'false')
        throw bad(`--${eq[1]} must be true or false, not ${JSON.stringify(v)}`);
      set(eq[1] as string, v);
      continue;
    }
    const bare = /^--([a-z-]+)$/.exec(a);
    const next = args[i + 1];
    if (bare && names.has(bare[1] as string) && next !== undefined && !next.startsWith('-')) {
      if (next !== 'true' && next !== 'false')
        throw bad(`--${bare[1]} must be true or false, not ${JSON.stringify(next)}`);
      set(bare[1] as string, next);
      i++;
      continue;
    }
    out.push(a);
  }
  return out;
}

function controlPlaneInput(
  values: Record<string, string | boolean | undefined>,
  env: NodeJS.ProcessEnv,
): MemberConfigInput {
  const input: MemberConfigInput = {};
  const parts: Record<string, boolean | number | string> = {};
  const flag = (n: string): string | boolean | undefined => values[n] ?? env[envName(n)];
  const cp = flag('control-plane');
  if (cp !== undefined) input.controlPlane = cp;
  for (const p of PARTS) {
    const v = flag(p.name);
    if (v === undefined) continue;
    if (p.kind === 'count') {
      if (typeof v !== 'string' || !/^\d+$/.test(v.trim()))
        throw bad(`--${p.name} must be a number, not ${JSON.stringify(v)}`);
      parts[p.name] = Number(v);
    } else parts[p.name] = v;
  }
  if (Object.keys(parts).length > 0) input.parts = parts;
  for (const [n, field] of Object.entries(CONTROL_PLANE_STRINGS)) {
    const v = flag(n);
    if (typeof v !== 'string') continue;
    if (field === 'nodeReadinessDelayMs') {
      if (!/^\d+$/.test(v.trim())) throw bad(`--${n} must be a number, not ${JSON.stringify(v)}`);
      input.nodeReadinessDelayMs = Number(v);
    } else input[field] = v;
  }
  return input;
}

// --- Boolean flags outside the control plane. Declared as functions so that the tables
// above, built when this module loads, can use them from the end of the file.

/** Boolean flags that may be given bare (`--auto-tls` for `--auto-tls=true`). */
function bareBooleanFlags(): readonly string[] {
  return [
    'anonymous-auth',
    'client-cert-auth',
    'auto-tls',
    'peer-client-cert-auth',
    'peer-auto-tls',
  ];
}

/** `--flag` with no value (last, or followed by another flag) becomes `--flag=true`. */
export function withBareBooleans(args: readonly string[]): string[] {
  const bare = new Set(bareBooleanFlags().map((f) => `--${f}`));
  return args.map((a, i) => {
    if (!bare.has(a)) return a;
    const next = args[i + 1];
    return next === undefined || next.startsWith('-') ? `${a}=true` : a;
  });
}

// --- Kubernetes API authentication, authorization and audit (src/api/k8s/auth.ts) ---

function kubeAuthFlags() {
  return {
    'token-auth-file': ['tokenAuthFile', false],
    'service-account-key-file': ['serviceAccountKeyFile', false],
    'anonymous-auth': ['anonymousAuth', false],
    'authorization-mode': ['authorizationMode', false],
    'audit-log-path': ['auditLogPath', false],
    'client-ca-file': ['clientCaFile', false],
  } as const satisfies Record<string, readonly [keyof MemberConfigInput, boolean]>;
}
// --- TLS for clients and peers (src/server/tls.ts), etcd's names ---

function tlsFlags() {
  return {
    'cert-file': ['certFile', false],
    'key-file': ['keyFile', false],
    'trusted-ca-file': ['trustedCaFile', false],
    'client-cert-auth': ['clientCertAuth', false],
    'auto-tls': ['autoTls', false],
    'peer-cert-file': ['peerCertFile', false],
    'peer-key-file': ['peerKeyFile', false],
    'peer-trusted-ca-file': ['peerTrustedCaFile', false],
    'peer-client-cert-auth': ['peerClientCertAuth', false],
    'peer-auto-tls': ['peerAutoTls', false],
    'peer-cert-allowed-cn': ['peerCertAllowedCn', false],
    'peer-cert-allowed-hostname': ['peerCertAllowedHostname', false],
  } as const satisfies Record<string, readonly [keyof MemberConfigInput, boolean]>;
}

function tlsUsage(): string {
  return `TLS (https:// in --listen-client-urls / --listen-peer-urls; TLS 1.2 or later):
  --cert-file                    client port certificate (PEM)
  --key-file                     its private key (PEM)
  --trusted-ca-file              CA that signs client certificates
  --client-cert-auth             clients must present a certificate signed by --trusted-ca-file
  --auto-tls                     a self-signed certificate made at start (no --cert-file needed)
  --peer-cert-file               peer port certificate, also presented when dialling peers
  --peer-key-file                its private key
  --peer-trusted-ca-file         CA that signs the peers' certificates
  --peer-client-cert-auth        peers must present a certificate signed by --peer-trusted-ca-file
  --peer-auto-tls                a self-signed peer certificate made at start
  --peer-cert-allowed-cn         with --peer-client-cert-auth: the CN a peer's certificate must have
  --peer-cert-allowed-hostname   or: the host name a peer's certificate must be valid for
`;
}
