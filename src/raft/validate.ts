/**
 * Checks on data entering the core from outside: the configuration (a programming error:
 * throws) and messages from peers (bad input: the message is dropped). Inside the core
 * these shapes are trusted.
 */
import { EtceteraError } from '../errors.js';
import { isValidNodeId } from './confchange.js';
import type { Message, NodeId, RaftConfig } from './types.js';

export function validateConfig(c: RaftConfig): void {
  const bad = (detail: string) => new EtceteraError('ERR_INVALID_ARGUMENT', { detail });
  if (!isValidNodeId(c.id)) throw bad('raft: id must be a positive safe integer');
  if (!Number.isInteger(c.heartbeatTick) || c.heartbeatTick <= 0) {
    throw bad('raft: heartbeatTick must be a positive integer');
  }
  if (!Number.isInteger(c.electionTick) || c.electionTick <= c.heartbeatTick) {
    throw bad('raft: electionTick must be an integer greater than heartbeatTick');
  }
  if (typeof c.random !== 'function') throw bad('raft: random must be a function');
  if (c.maxInflightMsgs !== undefined && !(c.maxInflightMsgs >= 1)) {
    throw bad('raft: maxInflightMsgs must be >= 1');
  }
}

const isIndex = (n: unknown): boolean => Number.isSafeInteger(n) && (n as number) >= 0;

/**
 * Whether a message from the network is well formed and addressed to `self`. Only the
 * forwarded requests (`prop`, `readIndex`) may carry term 0. An `app`
 * must carry contiguous entries right after `index`, with terms that never decrease, are
 * at least `logTerm` and at most the message's term (log matching relies on it).
 */
export function isValidMessage(m: Message, self: NodeId): boolean {
  if (m.to !== self || !isValidNodeId(m.from) || !isIndex(m.term)) return false;
  // Term 0 means "local input" to the core: only forwarded requests may carry it.
  if (m.term === 0 && m.type !== 'prop' && m.type !== 'readIndex') return false;
  if (m.type !== 'app') return true;
  if (!isIndex(m.index) || !isIndex(m.logTerm) || !isIndex(m.commit)) return false;
  let prevTerm = m.logTerm;
  for (let i = 0; i < m.entries.length; i++) {
    const e = m.entries[i]!;
    if (e.index !== m.index + 1 + i || e.term < prevTerm || e.term > m.term) return false;
    prevTerm = e.term;
  }
  return true;
}
