/**
 * Membership changes: their byte encoding (the `data` of a confChange entry) and the pure
 * rule that applies one change to a ConfState.
 *
 * Encoding, version 1: [1][type code: u8][nodeId: f64 big-endian][context bytes...].
 * The leading version byte leaves room for joint changes later without ambiguity.
 */
import { EtceteraError } from '../errors.js';
import {
  type ConfChange,
  ConfChangeType,
  type ConfState,
  type NodeId,
  NodeId as toNodeId,
} from './types.js';

const VERSION = 1;
const TYPE_CODES: Record<ConfChangeType, number> = { addVoter: 1, addLearner: 2, removeNode: 3 };
const CODE_TYPES: Record<number, ConfChangeType> = {
  1: ConfChangeType.AddVoter,
  2: ConfChangeType.AddLearner,
  3: ConfChangeType.RemoveNode,
};
const HEADER = 10;

export function encodeConfChange(cc: ConfChange): Uint8Array {
  const ctx = cc.context ?? new Uint8Array(0);
  const out = new Uint8Array(HEADER + ctx.length);
  const view = new DataView(out.buffer);
  out[0] = VERSION;
  out[1] = TYPE_CODES[cc.type];
  view.setFloat64(2, cc.nodeId);
  out.set(ctx, HEADER);
  return out;
}

/** Decode a confChange entry's data. Throws ERR_CORRUPT on anything malformed. */
export function decodeConfChange(data: Uint8Array): ConfChange {
  if (data.length < HEADER || data[0] !== VERSION) {
    throw new EtceteraError('ERR_CORRUPT', { detail: 'bad conf change encoding' });
  }
  const type = CODE_TYPES[data[1]!];
  const id = new DataView(data.buffer, data.byteOffset, data.byteLength).getFloat64(2);
  if (type === undefined || !isValidNodeId(id)) {
    throw new EtceteraError('ERR_CORRUPT', { detail: 'bad conf change fields' });
  }
  const context = data.slice(HEADER);
  return context.length > 0
    ? { type, nodeId: toNodeId(id), context }
    : { type, nodeId: toNodeId(id) };
}

export function isValidNodeId(n: number): boolean {
  return Number.isSafeInteger(n) && n > 0;
}

/**
 * Why `cc` cannot apply to `cs`, or undefined when it can. Rules: a voter cannot be added
 * again or demoted to learner; a learner cannot be added again; only present members can
 * be removed; the last voter cannot be removed (a group without voters can never elect).
 */
export function confChangeProblem(cs: ConfState, cc: ConfChange): string | undefined {
  const isVoter = cs.voters.includes(cc.nodeId);
  const isLearner = cs.learners.includes(cc.nodeId);
  switch (cc.type) {
    case ConfChangeType.AddVoter:
      return isVoter ? `${cc.nodeId} is already a voter` : undefined;
    case ConfChangeType.AddLearner:
      if (isVoter) return `${cc.nodeId} is a voter; demotion is not supported`;
      return isLearner ? `${cc.nodeId} is already a learner` : undefined;
    case ConfChangeType.RemoveNode:
      if (!isVoter && !isLearner) return `${cc.nodeId} is not a member`;
      return isVoter && cs.voters.length === 1 ? 'cannot remove the last voter' : undefined;
  }
}

/**
 * The membership after `cc`. An invalid change leaves `cs` as it is: every member applies
 * the same committed entries, so every member ignores the same invalid ones. Lists stay
 * sorted so equal memberships compare equal.
 */
export function applyConfChange(cs: ConfState, cc: ConfChange): ConfState {
  if (confChangeProblem(cs, cc) !== undefined) return cs;
  const id: NodeId = cc.nodeId;
  const voters = cs.voters.filter((v) => v !== id);
  const learners = cs.learners.filter((v) => v !== id);
  if (cc.type === ConfChangeType.AddVoter) voters.push(id);
  if (cc.type === ConfChangeType.AddLearner) learners.push(id);
  return { voters: voters.sort((a, b) => a - b), learners: learners.sort((a, b) => a - b) };
}
