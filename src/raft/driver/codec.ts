/**
 * The binary encoding of Raft messages for the peer transport.
 *
 * One message = a type tag byte, then `from`, `to`, `term` as varints, then the fields of
 * that type in a fixed order (see `encodeBody`/`decodeBody`). Entries are
 * (term, index, type, data); snapshots are (index, term, voters, learners, data). The tag
 * values are part of the wire protocol between members of different versions: never
 * renumber them, only add.
 *
 * Decoding is strict: an unknown tag, a bad enum value or a truncated or over-long buffer
 * raises WireError, and the transport drops the whole frame (Raft tolerates loss).
 */
import {
  type ConfState,
  type Entry,
  EntryType,
  LogIndex,
  type Message,
  type MessageType,
  NodeId,
  type Snapshot,
  Term,
} from '../types.js';
import { Reader, WireError, Writer } from './wire.js';

/** Wire tags, one per message type. Append only. */
export const MessageTag = {
  app: 1,
  appResp: 2,
  vote: 3,
  preVote: 4,
  voteResp: 5,
  preVoteResp: 6,
  heartbeat: 7,
  heartbeatResp: 8,
  snap: 9,
  timeoutNow: 10,
  transferLeader: 11,
  prop: 12,
  readIndex: 13,
  readIndexResp: 14,
} as const satisfies Record<MessageType, number>;

const tagToType = new Map<number, MessageType>(
  Object.entries(MessageTag).map(([type, tag]) => [tag, type as MessageType]),
);

const EntryTag = { [EntryType.Normal]: 0, [EntryType.ConfChange]: 1 } as const;

/** An upper-bound guess of a message's encoded size, to size buffers once. */
export function estimateSize(m: Message): number {
  let n = 48;
  if (m.type === 'app' || m.type === 'prop') for (const e of m.entries) n += e.data.length + 24;
  else if (m.type === 'snap')
    n += m.snapshot.data.length + 16 * m.snapshot.metadata.confState.voters.length;
  else if ('context' in m) n += m.context.length;
  return n;
}

export function encodeMessage(m: Message, w = new Writer(estimateSize(m))): Writer {
  w.u8(MessageTag[m.type]).uvarint(m.from).uvarint(m.to).uvarint(m.term);
  encodeBody(m, w);
  return w;
}

/** Decodes exactly one message from `bytes` (trailing bytes are an error). */
export function decodeMessage(bytes: Uint8Array): Message {
  const r = new Reader(bytes);
  const m = readMessage(r);
  r.end();
  return m;
}

/** Reads one message from the reader's position (for frames holding several). */
export function readMessage(r: Reader): Message {
  const tag = r.u8();
  const type = tagToType.get(tag);
  if (type === undefined) throw new WireError(`unknown message tag ${tag}`);
  const from = NodeId(r.uvarint());
  const to = NodeId(r.uvarint());
  const term = Term(r.uvarint());
  return decodeBody(type, { from, to, term }, r);
}

function encodeBody(m: Message, w: Writer): void {
  switch (m.type) {
    case 'app':
      w.uvarint(m.index).uvarint(m.logTerm).uvarint(m.commit);
      writeEntries(w, m.entries);
      return;
    case 'appResp':
      w.uvarint(m.index).bool(m.reject).uvarint(m.rejectHint).uvarint(m.logTerm);
      return;
    case 'vote':
    case 'preVote':
      w.uvarint(m.index).uvarint(m.logTerm).bool(m.transfer);
      return;
    case 'voteResp':
    case 'preVoteResp':
      w.bool(m.reject);
      return;
    case 'heartbeat':
      w.uvarint(m.commit).bytes(m.context);
      return;
    case 'heartbeatResp':
    case 'readIndex':
      w.bytes(m.context);
      return;
    case 'snap':
      writeSnapshot(w, m.snapshot);
      return;
    case 'timeoutNow':
      return;
    case 'transferLeader':
      w.uvarint(m.transferee);
      return;
    case 'prop':
      writeEntries(w, m.entries);
      return;
    case 'readIndexResp':
      w.uvarint(m.index).bytes(m.context);
      return;
  }
}

type Base = { from: NodeId; to: NodeId; term: Term };

function decodeBody(type: MessageType, b: Base, r: Reader): Message {
  switch (type) {
    case 'app': {
      const index = LogIndex(r.uvarint());
      const logTerm = Term(r.uvarint());
      const commit = LogIndex(r.uvarint());
      return { type, ...b, index, logTerm, commit, entries: readEntries(r) };
    }
    case 'appResp': {
      const index = LogIndex(r.uvarint());
      const reject = r.bool();
      const rejectHint = LogIndex(r.uvarint());
      return { type, ...b, index, reject, rejectHint, logTerm: Term(r.uvarint()) };
    }
    case 'vote':
    case 'preVote': {
      const index = LogIndex(r.uvarint());
      const logTerm = Term(r.uvarint());
      return { type, ...b, index, logTerm, transfer: r.bool() };
    }
    case 'voteResp':
    case 'preVoteResp':
      return { type, ...b, reject: r.bool() };
    case 'heartbeat': {
      const commit = LogIndex(r.uvarint());
      return { type, ...b, commit, context: r.bytes() };
    }
    case 'heartbeatResp':
    case 'readIndex':
      return { type, ...b, context: r.bytes() };
    case 'snap':
      return { type, ...b, snapshot: readSnapshot(r) };
    case 'timeoutNow':
      return { type, ...b };
    case 'transferLeader':
      return { type, ...b, transferee: NodeId(r.uvarint()) };
    case 'prop':
      return { type, ...b, entries: readEntries(r) };
    case 'readIndexResp': {
      const index = LogIndex(r.uvarint());
      return { type, ...b, index, context: r.bytes() };
    }
  }
}

function writeEntries(w: Writer, entries: readonly Entry[]): void {
  w.uvarint(entries.length);
  for (const e of entries) writeEntry(w, e);
}

export function writeEntry(w: Writer, e: Entry): void {
  w.uvarint(e.term).uvarint(e.index).u8(EntryTag[e.type]).bytes(e.data);
}

function readEntries(r: Reader): Entry[] {
  const n = r.uvarint();
  // Each entry takes at least 4 bytes: refuse counts the buffer cannot hold before allocating.
  if (n * 4 > r.remaining) throw new WireError(`entry count ${n} exceeds frame`);
  const out: Entry[] = new Array(n);
  for (let i = 0; i < n; i++) out[i] = readEntry(r);
  return out;
}

export function readEntry(r: Reader): Entry {
  const term = Term(r.uvarint());
  const index = LogIndex(r.uvarint());
  const tag = r.u8();
  const type = tag === 0 ? EntryType.Normal : tag === 1 ? EntryType.ConfChange : undefined;
  if (type === undefined) throw new WireError(`unknown entry type ${tag}`);
  return { term, index, type, data: r.bytes() };
}

export function writeConfState(w: Writer, cs: ConfState): void {
  w.uvarint(cs.voters.length);
  for (const id of cs.voters) w.uvarint(id);
  w.uvarint(cs.learners.length);
  for (const id of cs.learners) w.uvarint(id);
}

export function readConfState(r: Reader): ConfState {
  const readIds = (): NodeId[] => {
    const n = r.uvarint();
    if (n > r.remaining) throw new WireError(`member count ${n} exceeds frame`);
    const ids: NodeId[] = [];
    for (let i = 0; i < n; i++) ids.push(NodeId(r.uvarint()));
    return ids;
  };
  const voters = readIds();
  return { voters, learners: readIds() };
}

export function writeSnapshot(w: Writer, s: Snapshot): void {
  w.uvarint(s.metadata.index).uvarint(s.metadata.term);
  writeConfState(w, s.metadata.confState);
  w.bytes(s.data);
}

export function readSnapshot(r: Reader): Snapshot {
  const index = LogIndex(r.uvarint());
  const term = Term(r.uvarint());
  const confState = readConfState(r);
  return { metadata: { index, term, confState }, data: r.bytes() };
}
