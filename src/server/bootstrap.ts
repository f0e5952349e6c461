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
 */
import { EtceteraError } from '../errors.js';
import type { RaftDb } from '../raft/level-storage.js';
import { ClusterState, type MemberConfig, urlString } from './config.js';
import { clusterId, memberId } from './ids.js';
import type { Logger } from './logger.js';
import { fetchCluster } from './peer-http.js';
import { type ClusterRecord, type MemberRecord, MemberRegistry } from './registry.js';

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
): Promise<Identity> {
  const known = await MemberRegistry.load(db);
  if (known !== undefined) return { registry: known, how: 'restart' };
  const cluster =
    config.initialClusterState === ClusterState.NEW
      ? newCluster(config)
      : await fetchExisting(config, logger);
  const self = findSelf(cluster.members, config);
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

function findSelf(members: MemberRecord[], config: MemberConfig): MemberRecord {
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

async function fetchExisting(config: MemberConfig, logger: Logger): Promise<ClusterRecord> {
  const mine = new Set(config.initialAdvertisePeerUrls.map(urlString));
  const peers = [...config.initialCluster.values()]
    .flat()
    .map(urlString)
    .filter((u) => !mine.has(u));
  if (peers.length === 0)
    throw bad('--initial-cluster-state existing needs other members in --initial-cluster');
  for (let attempt = 0; attempt < 5; attempt++) {
    for (const url of peers) {
      const c = await fetchCluster(url);
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
