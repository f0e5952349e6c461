/**
 * Who this member is, decided once at start from its database and flags:
 *
 *   restart    the database holds an identity: use it; every cluster flag is ignored (a
 *              restarted member needs none, as etcd's does);
 *   new        --initial-cluster-state new: every member derives the same member IDs and
 *              cluster ID from --initial-cluster and --initial-cluster-token, and the Raft
 *              log starts with all of them as voters;
 *   existing   --initial-cluster-state existing: ask a running member (any peer URL in
 *              --initial-cluster that is not ours) for the registry, find ourselves in it
 *              by our peer URLs (`member add` put us there), and start Raft with that
 *              membership so the log replays onto the right configuration.
 *
 * A member whose data dir was lost (or replaced by an empty one) and that starts with the
 * same flags would take its old ID with an empty log: it could not catch up (the leader
 * believes it holds what it acknowledged), and its empty log and forgotten vote could help
 * elect a leader that lacks committed entries. So with no identity on disk, before writing
 * one, the member asks its peers for their registry (as etcd does); when one of the same
 * cluster knows this ID as started (its publish was applied), the start is refused with
 * ERR_MEMBER_BOOTSTRAPPED and the way to rejoin: remove the member, add it again, start it
 * with --initial-cluster-state existing. When no peer answers, the start goes ahead (a new
 * cluster whose members start together looks just the same).
 */
import { EtceteraError } from '../errors.js';
import type { RaftDb } from '../raft/storage/level-storage.js';
import { ClusterState, type MemberConfig, urlString } from './config.js';
import { clusterId, memberId } from './ids.js';
import type { Logger } from './logger.js';
import { fetchCluster } from './peer-http.js';
import { type ClusterRecord, type MemberRecord, MemberRegistry } from './registry.js';
import type { DialTls } from './tls.js';

export interface Identity {
  registry: MemberRegistry;
  how: 'restart' | 'new' | 'existing';
}

function bad(detail: string): EtceteraError {
  return new EtceteraError('ERR_INVALID_ARGUMENT', { detail });
}

export async function establishIdentity(
  db: RaftDb,
  config: MemberConfig,
  logger: Logger,
  peerTls?: DialTls,
): Promise<Identity> {
  const known = await MemberRegistry.load(db);
  if (known !== undefined) return { registry: known, how: 'restart' };
  const cluster =
    config.initialClusterState === ClusterState.NEW
      ? newCluster(config)
      : await fetchExisting(config, logger, peerTls);
  const self = findSelf(cluster.members, config);
  await refuseIfBootstrapped(config, cluster, self, logger, peerTls);
  const registry = await MemberRegistry.create(
    db,
    { id: self.id, name: config.name, token: config.initialClusterToken },
    cluster,
  );
  return { registry, how: config.initialClusterState };
}

/** The registry of a new cluster, the same on every member given the same flags. */
export function newCluster(config: MemberConfig): ClusterRecord {
  const members: MemberRecord[] = [];
  for (const [name, urls] of config.initialCluster) {
    const peerURLs = urls.map(urlString);
    const id = memberId(peerURLs, config.initialClusterToken);
    if (members.some((m) => m.id === id)) throw bad(`--initial-cluster: duplicate member ${name}`);
    members.push({ id, name, peerURLs, clientURLs: [], isLearner: false });
  }
  return { clusterId: clusterId(members.map((m) => m.id)), members, removed: [] };
}

/** This member's record in `members`, found by its --initial-advertise-peer-urls. */
export function findSelf(members: MemberRecord[], config: MemberConfig): MemberRecord {
  const mine = config.initialAdvertisePeerUrls.map(urlString).sort().join(',');
  const self = members.find((m) => [...m.peerURLs].sort().join(',') === mine);
  if (self === undefined) {
    throw bad(
      `--initial-advertise-peer-urls ${mine} match no member of the cluster` +
        (config.initialClusterState === ClusterState.EXISTING
          ? ' (was it added with member add?)'
          : ''),
    );
  }
  if (config.initialClusterState === ClusterState.NEW && self.name !== config.name) {
    throw bad(`--initial-cluster names ${self.name} at ${mine}, but --name is ${config.name}`);
  }
  return self;
}

/** Peer URLs of --initial-cluster other than this member's own. */
function otherPeerUrls(config: MemberConfig): string[] {
  const mine = new Set(config.initialAdvertisePeerUrls.map(urlString));
  return [...config.initialCluster.values()]
    .flat()
    .map(urlString)
    .filter((u) => !mine.has(u));
}

async function refuseIfBootstrapped(
  config: MemberConfig,
  cluster: ClusterRecord,
  self: MemberRecord,
  logger: Logger,
  peerTls: DialTls | undefined,
): Promise<void> {
  const answers = await Promise.all(otherPeerUrls(config).map((u) => fetchCluster(u, peerTls)));
  for (const c of answers) {
    if (c === undefined || c.clusterId !== cluster.clusterId) continue;
    const known = c.members.find((m) => Number(m.id) === self.id);
    if (known?.published !== true) continue;
    logger.error({ id: String(self.id) }, 'this member has already been bootstrapped');
    const peers = self.peerURLs.join(',');
    throw new EtceteraError('ERR_MEMBER_BOOTSTRAPPED', {
      detail:
        `member ${self.id} (${self.name || config.name}) is known to its cluster as started, ` +
        `but its data dir ${config.dataDir} holds no data (lost or replaced). To rejoin, ` +
        `remove it and add it again (etcdctl member remove ${self.id.toString(16)}; ` +
        `etcdctl member add ${self.name || config.name} --peer-urls=${peers}), then start ` +
        'it on the empty data dir with --initial-cluster-state existing and the ' +
        '--initial-cluster that member add prints',
    });
  }
}

async function fetchExisting(
  config: MemberConfig,
  logger: Logger,
  peerTls: DialTls | undefined,
): Promise<ClusterRecord> {
  const peers = otherPeerUrls(config);
  if (peers.length === 0)
    throw bad('--initial-cluster-state existing needs other members in --initial-cluster');
  for (let attempt = 0; attempt < 5; attempt++) {
    for (const url of peers) {
      const c = await fetchCluster(url, peerTls);
      if (c !== undefined) {
        logger.info({ from: url, clusterId: c.clusterId }, 'joining existing cluster');
        return c;
      }
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new EtceteraError('ERR_UNHEALTHY', {
    detail: `no member of the cluster answered at ${peers.join(', ')}`,
  });
}
