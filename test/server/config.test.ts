/**
 * The serve flags and config: etcd's defaults and names, ETCETERA_* variables, validation,
 * retention parsing, and the deterministic member and cluster IDs.
 */
import t from 'tap';
import { newCluster } from '../../src/server/bootstrap.js';
import {
  minLeaseTtlSeconds,
  parseRetention,
  requestTimeoutMs,
  resolveConfig,
  urlString,
} from '../../src/server/config.js';
import { envName, parseServeArgs } from '../../src/server/flags.js';
import { clusterId, memberId, parseMemberId } from '../../src/server/ids.js';

t.test(
  'no flags: etcd defaults, data in ./default.etcetera, loopback ports 2379/2380',
  async (t) => {
    const c = resolveConfig(parseServeArgs([], {}));
    t.equal(c.name, 'default');
    t.equal(c.dataDir, 'default.etcetera');
    t.same(c.listenClientUrls.map(urlString), ['http://127.0.0.1:2379']);
    t.same(c.advertiseClientUrls.map(urlString), ['http://127.0.0.1:2379']);
    t.same(c.listenPeerUrls.map(urlString), ['http://127.0.0.1:2380']);
    t.same(c.initialAdvertisePeerUrls.map(urlString), ['http://127.0.0.1:2380']);
    t.same([...c.initialCluster.keys()], ['default']);
    t.equal(c.initialClusterState, 'new');
    t.equal(c.heartbeatMs, 100);
    t.equal(c.electionMs, 1000);
    t.equal(c.maxRequestBytes, 1.5 * 1024 * 1024);
    t.equal(c.maxWatchesPerStream, 10_000);
    t.equal(c.snapshotCount, 100_000);
    t.equal(c.autoCompactionMode, 'periodic');
    t.same(parseRetention(c.autoCompactionMode, c.autoCompactionRetention), { kind: 'off' });
    t.equal(c.logLevel, 'info');
    t.equal(resolveConfig({ name: 'x' }).dataDir, 'x.etcetera', 'the data dir follows the name');
  },
);

t.test('flags in both forms; environment variables; a flag beats its variable', async (t) => {
  const env = {
    ETCETERA_NAME: 'from-env',
    ETCETERA_SNAPSHOT_COUNT: '500',
    ETCETERA_INITIAL_CLUSTER_TOKEN: 'tok',
  };
  const input = parseServeArgs(
    ['--name=flag', '--heartbeat-interval', '50', '--election-timeout=600'],
    env,
  );
  t.equal(input.name, 'flag');
  t.equal(input.snapshotCount, 500);
  t.equal(input.initialClusterToken, 'tok');
  t.equal(input.heartbeatMs, 50);
  t.equal(input.electionMs, 600);
  t.equal(envName('listen-client-urls'), 'ETCETERA_LISTEN_CLIENT_URLS');
  t.equal(parseServeArgs(['--max-watches-per-stream', '64'], {}).maxWatchesPerStream, 64);
  t.equal(parseServeArgs([], { ETCETERA_MAX_WATCHES_PER_STREAM: '8' }).maxWatchesPerStream, 8);
});

t.test('bad flags fail before anything starts, naming the flag', async (t) => {
  t.throws(() => parseServeArgs(['--nmae', 'x'], {}), { code: 'ERR_INVALID_ARGUMENT' });
  t.throws(
    () => parseServeArgs(['--snapshot-count', 'lots'], {}),
    /--snapshot-count must be a number/,
  );
  t.throws(() => resolveConfig({ heartbeatMs: 300, electionMs: 1000 }), /at least 5 times/);
  t.throws(
    () => resolveConfig({ listenClientUrls: 'https://127.0.0.1:1' }),
    /https:\/\/127.0.0.1:1 needs --cert-file and --key-file \(or --auto-tls\)/,
  );
  t.throws(
    () => resolveConfig({ listenPeerUrls: 'https://127.0.0.1:2' }),
    /needs --peer-cert-file and --peer-key-file/,
  );
  t.throws(() => resolveConfig({ listenClientUrls: 'ftp://127.0.0.1:1' }), /only http/);
  t.throws(() => resolveConfig({ certFile: 'a.crt' }), /--cert-file and --key-file go together/);
  t.throws(
    () => resolveConfig(parseServeArgs(['--peer-client-cert-auth'], {})),
    /--peer-client-cert-auth needs --peer-trusted-ca-file/,
  );
  t.throws(() => resolveConfig({ listenClientUrls: 'not a url' }), /not a URL/);
  t.throws(() => resolveConfig({ initialCluster: 'a' }), /not name=url/);
  t.throws(() => resolveConfig({ initialClusterState: 'old' }), /new, existing/);
  t.throws(() => resolveConfig({ autoCompactionMode: 'hourly' }), /periodic, revision/);
  t.throws(() => resolveConfig({ autoCompactionRetention: '1 day' }), /not a duration/);
  t.throws(
    () => resolveConfig({ autoCompactionMode: 'revision', autoCompactionRetention: '1h' }),
    /revision count/,
  );
  t.throws(() => resolveConfig({ logLevel: 'loud' }), /--log-level/);
  t.throws(() => resolveConfig({ maxWatchesPerStream: 0 }), /--max-watches-per-stream/);
});

t.test('retention: durations, hours, revisions; etcd-derived timings', async (t) => {
  t.same(parseRetention('periodic', '1h30m'), { kind: 'periodic', ms: 5_400_000 });
  t.same(
    parseRetention('periodic', '2'),
    { kind: 'periodic', ms: 7_200_000 },
    'a bare number is hours',
  );
  t.same(parseRetention('periodic', '0.5'), { kind: 'periodic', ms: 1_800_000 });
  t.same(parseRetention('periodic', '90s'), { kind: 'periodic', ms: 90_000 });
  t.same(parseRetention('revision', '1000'), { kind: 'revision', revisions: 1000 });
  t.same(parseRetention('revision', '0'), { kind: 'off' });
  t.equal(minLeaseTtlSeconds(1000), 2, 'etcd: ceil(1.5 × election timeout)');
  t.equal(minLeaseTtlSeconds(200), 1);
  t.equal(requestTimeoutMs(1000), 7000);
});

t.test('member and cluster IDs are deterministic and 53-bit safe', async (t) => {
  const a = memberId(['http://10.0.0.1:2380'], 'tok');
  t.equal(a, memberId(['http://10.0.0.1:2380'], 'tok'), 'same URLs and token, same ID');
  t.not(a, memberId(['http://10.0.0.1:2380'], 'other'), 'the token separates clusters');
  t.not(a, memberId(['http://10.0.0.1:2380'], 'tok', 1), 'member add mixes in the time');
  t.equal(
    memberId(['http://b:1', 'http://a:1'], 't'),
    memberId(['http://a:1', 'http://b:1'], 't'),
    'URL order does not matter',
  );
  t.ok(Number.isSafeInteger(a) && a > 0);
  const cfg = resolveConfig({
    name: 'a',
    initialCluster: 'a=http://h:1,b=http://h:2,c=http://h:3',
  });
  const one = newCluster(cfg);
  const two = newCluster(
    resolveConfig({
      name: 'b',
      initialCluster: 'c=http://h:3,a=http://h:1,b=http://h:2',
      initialAdvertisePeerUrls: 'http://h:2',
    }),
  );
  t.equal(one.clusterId, two.clusterId, 'every member computes the same cluster ID');
  t.equal(one.clusterId, clusterId(one.members.map((m) => m.id)));
  t.equal(parseMemberId(String(a)), a);
  t.equal(parseMemberId(`0x${a.toString(16)}`), a, 'etcdctl prints IDs in hex');
  t.equal(parseMemberId('nope'), undefined);
});

t.test('gRPC keepalive and stream flags: etcd’s names, defaults and durations', async (t) => {
  const d = resolveConfig(parseServeArgs([], {}));
  t.equal(d.maxConcurrentStreams, 2 ** 32 - 1, 'etcd’s math.MaxUint32');
  t.equal(d.grpcKeepaliveMinTimeMs, 5000);
  t.equal(d.grpcKeepaliveIntervalMs, 2 * 3_600_000);
  t.equal(d.grpcKeepaliveTimeoutMs, 20_000);
  const c = resolveConfig(
    parseServeArgs(
      [
        '--max-concurrent-streams=8',
        '--grpc-keepalive-min-time',
        '500ms',
        '--grpc-keepalive-interval=1m30s',
        '--grpc-keepalive-timeout=0',
      ],
      {},
    ),
  );
  t.equal(c.maxConcurrentStreams, 8);
  t.equal(c.grpcKeepaliveMinTimeMs, 500);
  t.equal(c.grpcKeepaliveIntervalMs, 90_000);
  t.equal(c.grpcKeepaliveTimeoutMs, 0, '0 disables, as in etcd');
  t.equal(
    resolveConfig(parseServeArgs([], { ETCETERA_GRPC_KEEPALIVE_MIN_TIME: '2s' }))
      .grpcKeepaliveMinTimeMs,
    2000,
  );
  t.throws(() => resolveConfig({ grpcKeepaliveMinTime: '5' }), /--grpc-keepalive-min-time/);
  t.throws(() => resolveConfig({ grpcKeepaliveInterval: 'soon' }), /not a duration/);
  t.throws(() => resolveConfig({ maxConcurrentStreams: 0 }), /--max-concurrent-streams/);
  t.throws(() => resolveConfig({ maxConcurrentStreams: 2 ** 32 }), /at most 4294967295/);
});

t.test('space quota and corruption check flags, as etcd names and defaults them', async (t) => {
  const d = resolveConfig(parseServeArgs([], {}));
  t.equal(d.quotaBackendBytes, 2 * 1024 ** 3, 'default quota: 2 GiB');
  t.equal(d.initialCorruptCheck, false);
  t.equal(d.corruptCheckMs, 0, 'no periodic check by default');
  const zero = resolveConfig(parseServeArgs(['--quota-backend-bytes', '0'], {}));
  t.equal(zero.quotaBackendBytes, 2 * 1024 ** 3, '0 means the default');
  const c = resolveConfig(
    parseServeArgs(
      [
        '--quota-backend-bytes=1048576',
        '--experimental-initial-corrupt-check=true',
        '--experimental-corrupt-check-time',
        '1m30s',
      ],
      {},
    ),
  );
  t.equal(c.quotaBackendBytes, 1048576);
  t.equal(c.initialCorruptCheck, true);
  t.equal(c.corruptCheckMs, 90_000);
  const env = resolveConfig(
    parseServeArgs([], { ETCETERA_EXPERIMENTAL_CORRUPT_CHECK_TIME: '250ms' }),
  );
  t.equal(env.corruptCheckMs, 250);
  t.throws(
    () => parseServeArgs(['--quota-backend-bytes=-1'], {}),
    /--quota-backend-bytes must be a number/,
  );
  t.throws(
    () => resolveConfig({ corruptCheckTime: '5 minutes' }),
    /--experimental-corrupt-check-time/,
  );
  t.throws(
    () => resolveConfig({ initialCorruptCheck: 'maybe' }),
    /--experimental-initial-corrupt-check/,
  );
});

t.test('limit flags: --max-connections, --read-header-timeout, --read-body-timeout', async (t) => {
  const d = resolveConfig(parseServeArgs([], {}));
  t.equal(d.maxConnections, 10_000);
  t.equal(d.readHeaderTimeoutMs, 10_000);
  t.equal(d.readBodyTimeoutMs, 60_000);
  const c = resolveConfig(
    parseServeArgs(
      ['--max-connections=50', '--read-header-timeout', '2s', '--read-body-timeout=1m30s'],
      {},
    ),
  );
  t.equal(c.maxConnections, 50);
  t.equal(c.readHeaderTimeoutMs, 2000);
  t.equal(c.readBodyTimeoutMs, 90_000);
  t.equal(
    resolveConfig(parseServeArgs([], { ETCETERA_READ_BODY_TIMEOUT: '500ms' })).readBodyTimeoutMs,
    500,
  );
  t.throws(() => resolveConfig({ maxConnections: 0 }), /--max-connections/);
  t.throws(
    () => resolveConfig({ readHeaderTimeout: '0' }),
    /--read-header-timeout must be longer than 0/,
  );
  t.throws(
    () => resolveConfig({ readBodyTimeout: 'later' }),
    /--read-body-timeout.*not a duration/,
  );
});

t.test('TLS flags: etcd names, bare switches, environment variables, https:// URLs', async (t) => {
  const c = resolveConfig(
    parseServeArgs(
      [
        '--listen-client-urls',
        'https://127.0.0.1:2379',
        '--cert-file',
        'm1.crt',
        '--key-file=m1.key',
        '--client-cert-auth',
        '--trusted-ca-file',
        'ca.crt',
        '--listen-peer-urls=https://127.0.0.1:2380',
        '--peer-auto-tls',
      ],
      { ETCETERA_PEER_TRUSTED_CA_FILE: 'peer-ca.crt', ETCETERA_PEER_CLIENT_CERT_AUTH: 'true' },
    ),
  );
  t.same(c.clientTls, {
    certFile: 'm1.crt',
    keyFile: 'm1.key',
    trustedCaFile: 'ca.crt',
    clientCertAuth: true,
    autoTls: false,
  });
  // With --peer-auto-tls and no certificate files, etcd 3.4 drops the peer CA and the
  // client certificate check (its start-up log shows `client-cert-auth = false`): so here.
  t.same(c.peerTls, {
    clientCertAuth: false,
    autoTls: true,
    ignored: ['--peer-client-cert-auth', '--peer-trusted-ca-file'],
  });
  t.equal(c.listenClientUrls[0]?.protocol, 'https:');
  t.equal(c.advertiseClientUrls[0]?.protocol, 'https:', 'advertised URLs follow the listen URLs');
  t.same(resolveConfig({}).clientTls, { clientCertAuth: false, autoTls: false }, 'default: no TLS');
});

t.test('--client-ca-file: on the client TLS flags, https:// client URLs only', async (t) => {
  const c = resolveConfig(
    parseServeArgs([
      '--listen-client-urls=https://127.0.0.1:2379',
      '--auto-tls',
      '--client-ca-file',
      'kube-ca.crt',
    ]),
  );
  t.same(c.clientTls, { clientCertAuth: false, autoTls: true, clientCaFile: 'kube-ca.crt' });
  t.throws(() => resolveConfig(parseServeArgs(['--client-ca-file=kube-ca.crt'])), {
    message: /--client-ca-file needs an https:\/\/ client URL/,
  });
  t.throws(() => resolveConfig({ clientCaFile: ' ' }), {
    message: /--client-ca-file must not be empty/,
  });
});

t.test('--workers: 0 by default, a count up to 64, its variable; bad values refused', async (t) => {
  t.equal(resolveConfig(parseServeArgs([], {})).workers, 0, 'one process unless asked');
  t.equal(resolveConfig(parseServeArgs(['--workers', '2'], {})).workers, 2);
  t.equal(resolveConfig(parseServeArgs([], { ETCETERA_WORKERS: '3' })).workers, 3);
  t.throws(() => parseServeArgs(['--workers=two'], {}), /--workers must be a number/);
  t.throws(() => resolveConfig({ workers: -1 }), /--workers must be an integer >= 0/);
  t.throws(() => resolveConfig({ workers: 65 }), /--workers must be at most 64/);
});
