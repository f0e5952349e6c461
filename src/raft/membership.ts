/**
 * Applying a committed membership change inside the core (on RawNode.advance, once the
 * application has the entry). Every member applies the same entries in the same order, so
 * every member computes the same membership at each index.
 */
import { applyConfChange, decodeConfChange } from './confchange.js';
import type { Raft } from './raft.js';
import { bcastAppend, maybeCommit } from './replication.js';
import { type ConfState, type Entry, LogIndex, NONE, Role } from './types.js';

export function applyConfChangeEntry(r: Raft, e: Entry): void {
  let next: ConfState;
  try {
    next = applyConfChange(r.tracker.conf, decodeConfChange(e.data));
  } catch {
    return; // undecodable: every member skips it alike
  }
  if (next === r.tracker.conf) return;
  r.tracker.setConf(next, LogIndex(r.log.lastIndex() + 1));
  r.confChanged = true;
  if (r.role !== Role.Leader) return;
  if (!r.tracker.isVoter(r.id)) {
    // Removed: step down; the remaining voters elect a leader among themselves.
    r.becomeFollower(r.term, NONE);
    return;
  }
  if (r.leadTransferee !== NONE && !r.tracker.isMember(r.leadTransferee)) {
    r.abortLeaderTransfer();
  }
  // A smaller quorum may commit more; a new member needs its first probe.
  maybeCommit(r);
  bcastAppend(r, true);
}
