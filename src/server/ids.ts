/**
 * Member and cluster IDs, derived as etcd derives them: a member's ID is a hash of its peer
 * URLs and the cluster token (plus the time, for a member added later, so that re-adding the
 * same URLs gives a new ID); the cluster ID is a hash of the sorted member IDs. Every member
 * of a new cluster computes the same IDs from the same --initial-cluster and token, with no
 * message exchanged.
 *
 * etcd's IDs are 64 bits; ours keep the top 53 bits of the hash so they are exact JavaScript
 * numbers (Raft's NodeId is a safe integer). They print as decimal strings, as etcd's JSON
 * API prints uint64s.
 */
import { createHash } from 'node:crypto';
import { NodeId } from '../raft/types.js';

/** The first 53 bits of sha1(parts), never 0 (0 means "none" in Raft). */
function hash53(parts: string[]): number {
  const digest = createHash('sha1').update(parts.join('\n')).digest();
  // 21 bits from the first word, 32 from the second: 2^53 - 1 at most.
  const n = (digest.readUInt32BE(0) >>> 11) * 2 ** 32 + digest.readUInt32BE(4);
  return n === 0 ? 1 : n;
}

/** A member's ID from its peer URLs, the cluster token and, for `member add`, a timestamp. */
export function memberId(peerUrls: readonly string[], token: string, addedAtMs?: number): NodeId {
  const parts = [...peerUrls].sort();
  parts.push(token);
  if (addedAtMs !== undefined) parts.push(String(addedAtMs));
  return NodeId(hash53(parts));
}

/** The cluster's ID from its initial members' IDs. */
export function clusterId(memberIds: readonly NodeId[]): string {
  const sorted = [...memberIds].sort((a, b) => a - b).map(String);
  return String(hash53(sorted));
}

/** Parses a decimal (or 0x-hex, as etcdctl prints) member ID; undefined when it is not one. */
export function parseMemberId(text: string): NodeId | undefined {
  const t = text.trim();
  const n = /^0x[0-9a-f]+$/i.test(t)
    ? Number.parseInt(t.slice(2), 16)
    : /^\d+$/.test(t)
      ? Number(t)
      : Number.NaN;
  return Number.isSafeInteger(n) && n > 0 ? NodeId(n) : undefined;
}
