/**
 * Membership changes as a member proposes them: the checks etcd makes before a change goes
 * into the log (valid and unused peer URLs, a fresh ID, at most one learner, promote only a
 * learner), then a Raft conf change (or, for a peer URL update, a registry entry). The registry is updated when the change is applied
 * (apply.ts), on every member alike; these functions resolve after it is applied here.
 *
 * Strict reconfiguration (etcd's --strict-reconfig-check, on by default): a voter add or a
 * promote must leave a quorum of the new voters started, where started means the member's
 * publish was applied and it is reachable now (this member itself, or a peer whose stream
 * is connected). Unlike etcd 3.4 there is no exception for a one-member cluster, where one
 * add of an unreachable voter would otherwise stop every write. With the check off, a voter
 * add that fails it is made as a learner marked `promoteOnStart`: the leader promotes it
 * once it has started (presence.ts). A learner never counts toward quorum, so a member
 * that never starts can always be removed again.
 */
import { EtceteraError } from '../errors.js';
import type { RaftDriver } from '../raft/driver/driver.js';
import { ConfChangeType, type NodeId } from '../raft/types.js';
import { parseUrls, urlString } from './config.js';
import { memberId } from './ids.js';
import { encodeContext, type MemberRecord, type MemberRegistry } from './registry.js';

/** etcd 3.4's limit on learners in a cluster. */
export const MAX_LEARNERS = 1;

export interface MembershipDeps {
  registry: MemberRegistry;
  driver: RaftDriver;
  token: string;
  now(): number;
  /** This member's ID. */
  selfId: NodeId;
  /** Whether a peer is reachable now (its stream is connected). */
  isConnected(id: NodeId): boolean;
  /** --strict-reconfig-check. */
  strict: boolean;
  /** Proposes a peer URL update entry (entry.ts, kind 5); resolves once applied here. */
  proposePeerUrls(body: Uint8Array): Promise<void>;
}

/** Voters (after the change) that have started and are reachable now. */
function startedVoters(d: MembershipDeps, voters: readonly MemberRecord[]): number {
  return voters.filter((m) => m.published === true && (m.id === d.selfId || d.isConnected(m.id)))
    .length;
}

/**
 * Whether today's `voters` plus `newcomer` (the one added or promoted) would have a quorum
 * of started members.
 */
export function hasStartedQuorum(
  d: MembershipDeps,
  voters: readonly MemberRecord[],
  newcomer: MemberRecord | undefined,
): boolean {
  const all = newcomer === undefined ? voters : [...voters, newcomer];
  return startedVoters(d, all) >= Math.floor(all.length / 2) + 1;
}

function notEnoughStarted(d: MembershipDeps, after: readonly MemberRecord[]): EtceteraError {
  return new EtceteraError('ERR_NOT_ENOUGH_STARTED_MEMBERS', {
    detail:
      `only ${startedVoters(d, after)} of ${after.length} voters would be started and ` +
      'reachable, fewer than a quorum; add the member as a learner, or run the members ' +
      'with --strict-reconfig-check=false to add it as a learner promoted once it starts',
  });
}

/** Parses and normalises peer URLs (http://host:port), or ERR_MEMBER_BAD_URLS. */
export function checkPeerUrls(peerURLs: readonly string[]): string[] {
  if (peerURLs.length === 0) throw new EtceteraError('ERR_MEMBER_BAD_URLS');
  try {
    const urls = parseUrls('peer-urls', peerURLs.join(','));
    if (urls.some((u) => u.port === '' || u.hostname === ''))
      throw new EtceteraError('ERR_MEMBER_BAD_URLS', {
        detail: 'a peer URL needs a host and a port',
      });
    return urls.map(urlString);
  } catch (e) {
    if (e instanceof EtceteraError && e.code === 'ERR_MEMBER_BAD_URLS') throw e;
    throw new EtceteraError('ERR_MEMBER_BAD_URLS', { detail: (e as Error).message });
  }
}

export async function addMember(
  d: MembershipDeps,
  peerURLs: readonly string[],
  isLearner: boolean,
): Promise<MemberRecord> {
  const urls = checkPeerUrls(peerURLs);
  const taken = new Set(d.registry.list().flatMap((m) => m.peerURLs));
  if (urls.some((u) => taken.has(u))) throw new EtceteraError('ERR_PEER_URL_EXIST');
  if (isLearner && d.registry.list().filter((m) => m.isLearner).length >= MAX_LEARNERS)
    throw new EtceteraError('ERR_TOO_MANY_LEARNERS');
  const id = memberId(urls, d.token, d.now());
  if (d.registry.get(id) !== undefined || d.registry.isRemoved(id))
    throw new EtceteraError('ERR_MEMBER_EXIST');
  const voters = d.registry.list().filter((m) => !m.isLearner);
  const newcomer: MemberRecord = { id, name: '', peerURLs: urls, clientURLs: [], isLearner };
  // A voter that cannot keep a started quorum: refused, or (check off) a learner for now.
  const deferred = !isLearner && !hasStartedQuorum(d, voters, newcomer);
  if (deferred && d.strict) throw notEnoughStarted(d, [...voters, newcomer]);
  if (deferred && d.registry.list().filter((m) => m.isLearner).length >= MAX_LEARNERS)
    throw new EtceteraError('ERR_TOO_MANY_LEARNERS', {
      detail: 'a voter that has not started yet is added as a learner until it starts',
    });
  await d.driver.proposeConfChange({
    type: isLearner || deferred ? ConfChangeType.AddLearner : ConfChangeType.AddVoter,
    nodeId: id,
    context: encodeContext(
      deferred ? { peerURLs: urls, promoteOnStart: true } : { peerURLs: urls },
    ),
  });
  const added = d.registry.get(id);
  if (added === undefined)
    throw new EtceteraError('ERR_RAFT_INVALID_CONF_CHANGE', {
      detail: `member ${id} was not added`,
    });
  return added;
}

export async function removeMember(d: MembershipDeps, id: NodeId): Promise<void> {
  const m = d.registry.get(id);
  if (m === undefined) throw new EtceteraError('ERR_MEMBER_NOT_FOUND');
  const voters = d.registry.list().filter((x) => !x.isLearner);
  if (!m.isLearner && voters.length === 1)
    throw new EtceteraError('ERR_RAFT_INVALID_CONF_CHANGE', {
      detail: 'cannot remove the last voter',
    });
  await d.driver.proposeConfChange({ type: ConfChangeType.RemoveNode, nodeId: id });
}

/**
 * etcd's MemberUpdate: a member's peer URLs replaced through Raft. The member must exist and
 * no other member may use any of the URLs (its own current ones may be kept). Applied on
 * every member (apply.ts), whose transports then dial the new URLs; the member itself keeps
 * listening where its --listen-peer-urls say, so it is restarted there to be reachable.
 */
export async function updateMember(
  d: MembershipDeps,
  id: NodeId,
  peerURLs: readonly string[],
): Promise<MemberRecord> {
  if (d.registry.get(id) === undefined) throw new EtceteraError('ERR_MEMBER_NOT_FOUND');
  const urls = checkPeerUrls(peerURLs);
  const taken = new Set(
    d.registry
      .list()
      .filter((m) => m.id !== id)
      .flatMap((m) => m.peerURLs),
  );
  if (urls.some((u) => taken.has(u))) throw new EtceteraError('ERR_PEER_URL_EXIST');
  await d.proposePeerUrls(
    new Uint8Array(Buffer.from(JSON.stringify({ id, peerURLs: urls }), 'utf8')),
  );
  const updated = d.registry.get(id);
  if (updated === undefined) throw new EtceteraError('ERR_MEMBER_NOT_FOUND');
  return updated;
}

export async function promoteMember(d: MembershipDeps, id: NodeId): Promise<void> {
  const m = d.registry.get(id);
  if (m === undefined) throw new EtceteraError('ERR_MEMBER_NOT_FOUND');
  if (!m.isLearner) throw new EtceteraError('ERR_MEMBER_NOT_LEARNER');
  // Always checked, as etcd refuses to promote a learner that is not ready.
  const voters = d.registry.list().filter((x) => !x.isLearner);
  if (!hasStartedQuorum(d, voters, m)) throw notEnoughStarted(d, [...voters, m]);
  await d.driver.proposeConfChange({ type: ConfChangeType.AddVoter, nodeId: id });
}

/**
 * The leader's duty for members added with the strict check off: promote each learner
 * marked `promoteOnStart` once it has published, is reachable, and the voters would keep a
 * started quorum with it. One at a time (Raft takes one change at a time); resolves true
 * when it promoted one.
 */
export async function promoteStartedLearners(d: MembershipDeps): Promise<boolean> {
  const voters = d.registry.list().filter((m) => !m.isLearner);
  const ready = d.registry
    .list()
    .find(
      (m) =>
        m.isLearner &&
        m.promoteOnStart === true &&
        m.published === true &&
        d.isConnected(m.id) &&
        hasStartedQuorum(d, voters, m),
    );
  if (ready === undefined) return false;
  await d.driver.proposeConfChange({ type: ConfChangeType.AddVoter, nodeId: ready.id });
  return true;
}
