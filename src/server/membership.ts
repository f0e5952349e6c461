/**
 * Membership changes as a member proposes them: the checks etcd makes before a change goes
 * into the log (valid and unused peer URLs, a fresh ID, at most one learner, promote only a
 * learner), then a Raft conf change. The registry is updated when the change is applied
 * (apply.ts), on every member alike; these functions resolve after it is applied here.
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
  await d.driver.proposeConfChange({
    type: isLearner ? ConfChangeType.AddLearner : ConfChangeType.AddVoter,
    nodeId: id,
    context: encodeContext({ peerURLs: urls }),
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

export async function promoteMember(d: MembershipDeps, id: NodeId): Promise<void> {
  const m = d.registry.get(id);
  if (m === undefined) throw new EtceteraError('ERR_MEMBER_NOT_FOUND');
  if (!m.isLearner) throw new EtceteraError('ERR_MEMBER_NOT_LEARNER');
  await d.driver.proposeConfChange({ type: ConfChangeType.AddVoter, nodeId: id });
}
