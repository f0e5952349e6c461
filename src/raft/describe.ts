/**
 * Human-readable one-line renderings of entries, messages and Ready values. Used by the
 * golden interaction tests (their expected output is made of these lines, so the format
 * is part of those tests) and handy in driver debug logs.
 */
import { decodeConfChange } from './confchange.js';
import { type ConfState, type Entry, EntryType, type Message, type Ready } from './types.js';

/** Printable ASCII shows quoted; anything else as hex. */
export function describeBytes(b: Uint8Array): string {
  for (const c of b) if (c < 0x20 || c > 0x7e || c === 0x22) return `0x${hex(b)}`;
  return `"${String.fromCharCode(...b)}"`;
}

function hex(b: Uint8Array): string {
  let s = '';
  for (const c of b) s += c.toString(16).padStart(2, '0');
  return s;
}

export function describeConfState(cs: ConfState): string {
  return `voters=[${cs.voters.join(',')}] learners=[${cs.learners.join(',')}]`;
}

/** `term/index` then the payload: `2/7 "put x"`, `2/8 conf addVoter 4`, `2/9 noop`. */
export function describeEntry(e: Entry): string {
  const at = `${e.term}/${e.index}`;
  if (e.type === EntryType.ConfChange) {
    try {
      const cc = decodeConfChange(e.data);
      return `${at} conf ${cc.type} ${cc.nodeId}`;
    } catch {
      return `${at} conf <undecodable>`;
    }
  }
  return e.data.length === 0 ? `${at} noop` : `${at} ${describeBytes(e.data)}`;
}

export function describeEntries(ents: readonly Entry[]): string {
  return `[${ents.map(describeEntry).join(', ')}]`;
}

export function describeMessage(m: Message): string {
  const head = `${m.from}->${m.to} ${m.type} term=${m.term}`;
  switch (m.type) {
    case 'app':
      return `${head} prev=${m.logTerm}/${m.index} commit=${m.commit} entries=${describeEntries(m.entries)}`;
    case 'appResp':
      return m.reject
        ? `${head} reject index=${m.index} hint=${m.logTerm}/${m.rejectHint}`
        : `${head} index=${m.index}`;
    case 'vote':
    case 'preVote':
      return `${head} last=${m.logTerm}/${m.index}${m.transfer ? ' transfer' : ''}`;
    case 'voteResp':
    case 'preVoteResp':
      return `${head} ${m.reject ? 'rejected' : 'granted'}`;
    case 'heartbeat':
      return `${head} commit=${m.commit}${m.context.length > 0 ? ` ctx=${describeBytes(m.context)}` : ''}`;
    case 'heartbeatResp':
      return m.context.length > 0 ? `${head} ctx=${describeBytes(m.context)}` : head;
    case 'snap': {
      const s = m.snapshot.metadata;
      return `${head} snapshot=${s.term}/${s.index} ${describeConfState(s.confState)}`;
    }
    case 'timeoutNow':
      return head;
    case 'transferLeader':
      return `${head} transferee=${m.transferee}`;
    case 'prop':
      return `${head} entries=${describeEntries(m.entries)}`;
    case 'readIndex':
      return `${head} ctx=${describeBytes(m.context)}`;
    case 'readIndexResp':
      return `${head} index=${m.index} ctx=${describeBytes(m.context)}`;
  }
}

/** A multi-line rendering of a Ready, one section per non-empty field, in handling order. */
export function describeReady(rd: Ready): string {
  const out: string[] = [];
  if (rd.softState) out.push(`soft: leader=${rd.softState.leader} role=${rd.softState.role}`);
  if (rd.hardState) {
    const h = rd.hardState;
    out.push(`hard: term=${h.term} vote=${h.vote} commit=${h.commit}`);
  }
  if (rd.snapshot) {
    const s = rd.snapshot.metadata;
    out.push(`snapshot: ${s.term}/${s.index} ${describeConfState(s.confState)}`);
  }
  if (rd.entries.length > 0)
    out.push('entries:', ...rd.entries.map((e) => `  ${describeEntry(e)}`));
  if (rd.messages.length > 0) {
    out.push('messages:', ...rd.messages.map((m) => `  ${describeMessage(m)}`));
  }
  if (rd.messagesAfterPersist.length > 0) {
    out.push('after persist:', ...rd.messagesAfterPersist.map((m) => `  ${describeMessage(m)}`));
  }
  if (rd.committedEntries.length > 0) {
    out.push('committed:', ...rd.committedEntries.map((e) => `  ${describeEntry(e)}`));
  }
  for (const rs of rd.readStates)
    out.push(`read: index=${rs.index} ctx=${describeBytes(rs.context)}`);
  if (rd.confState) out.push(`conf: ${describeConfState(rd.confState)}`);
  if (rd.mustSync) out.push('mustSync');
  return out.join('\n');
}
