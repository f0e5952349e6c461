/** fast-check generators for Raft messages, shared by the codec and transport tests. */
import fc from 'fast-check';
import {
  type ConfState,
  type Entry,
  EntryType,
  LogIndex,
  type Message,
  NodeId,
  type Snapshot,
  Term,
} from '../../../src/raft/types.js';

const u53 = fc.oneof(
  fc.integer({ min: 0, max: 300 }),
  fc.maxSafeNat(),
  fc.constantFrom(127, 128, 16383, 16384, 2 ** 32 - 1, 2 ** 32, Number.MAX_SAFE_INTEGER),
);
const term = u53.map(Term);
const index = u53.map(LogIndex);
const nodeId = fc.integer({ min: 1, max: 2 ** 31 }).map(NodeId);
const bytes = fc.uint8Array({ maxLength: 64 });

export const entryArb: fc.Arbitrary<Entry> = fc.record({
  term,
  index,
  type: fc.constantFrom(EntryType.Normal, EntryType.ConfChange),
  data: bytes,
});

const confStateArb: fc.Arbitrary<ConfState> = fc.record({
  voters: fc.array(nodeId, { maxLength: 5 }),
  learners: fc.array(nodeId, { maxLength: 3 }),
});

export const snapshotArb: fc.Arbitrary<Snapshot> = fc.record({
  metadata: fc.record({ index, term, confState: confStateArb }),
  data: fc.uint8Array({ maxLength: 2048 }),
});

const base = { from: nodeId, to: nodeId, term };
const entries = fc.array(entryArb, { maxLength: 8 });

export const messageArb: fc.Arbitrary<Message> = fc.oneof(
  fc.record({
    type: fc.constant('app' as const),
    ...base,
    index,
    logTerm: term,
    entries,
    commit: index,
  }),
  fc.record({
    type: fc.constant('appResp' as const),
    ...base,
    index,
    reject: fc.boolean(),
    rejectHint: index,
    logTerm: term,
  }),
  fc.record({
    type: fc.constantFrom('vote' as const, 'preVote' as const),
    ...base,
    index,
    logTerm: term,
    transfer: fc.boolean(),
  }),
  fc.record({
    type: fc.constantFrom('voteResp' as const, 'preVoteResp' as const),
    ...base,
    reject: fc.boolean(),
  }),
  fc.record({ type: fc.constant('heartbeat' as const), ...base, commit: index, context: bytes }),
  fc.record({ type: fc.constant('heartbeatResp' as const), ...base, context: bytes }),
  fc.record({ type: fc.constant('snap' as const), ...base, snapshot: snapshotArb }),
  fc.record({ type: fc.constant('timeoutNow' as const), ...base }),
  fc.record({ type: fc.constant('transferLeader' as const), ...base, transferee: nodeId }),
  fc.record({ type: fc.constant('prop' as const), ...base, entries }),
  fc.record({ type: fc.constant('readIndex' as const), ...base, context: bytes }),
  fc.record({ type: fc.constant('readIndexResp' as const), ...base, index, context: bytes }),
);
