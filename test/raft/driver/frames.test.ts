import t from 'tap';
import { encodeMessage } from '../../../src/raft/driver/codec.js';
import {
  chunkSnapshot,
  decodeFrame,
  FrameKind,
  SnapshotAssembler,
} from '../../../src/raft/driver/frames.js';
import { LogIndex, type MsgSnap, NodeId, Term } from '../../../src/raft/types.js';

const snap = (size: number): MsgSnap => ({
  type: 'snap',
  from: NodeId(1),
  to: NodeId(2),
  term: Term(2),
  snapshot: {
    metadata: {
      index: LogIndex(9),
      term: Term(2),
      confState: { voters: [NodeId(1)], learners: [] },
    },
    data: new Uint8Array(size).map((_, i) => i & 0xff),
  },
});

const chunks = (m: MsgSnap, bytes: number, id = 1) =>
  chunkSnapshot(id, encodeMessage(m).finish(), bytes).map((f) => {
    const d = decodeFrame(f);
    if (d.kind !== FrameKind.SnapChunk) throw new Error('not a chunk');
    return d;
  });

t.test('a chunked snapshot reassembles exactly', async (t) => {
  const m = snap(10_000);
  const parts = chunks(m, 1000);
  t.ok(parts.length > 10);
  const a = new SnapshotAssembler(1 << 20);
  const out = parts.map((c) => a.add(c));
  t.ok(
    out.slice(0, -1).every((x) => x === undefined),
    'nothing until the last chunk',
  );
  const whole = out[out.length - 1] as MsgSnap;
  t.same([...whole.snapshot.data], [...m.snapshot.data]);
});

t.test('out-of-order, foreign and oversized chunks are refused', async (t) => {
  const parts = chunks(snap(5000), 1000);
  const a = new SnapshotAssembler(1 << 20);
  a.add(parts[0]!);
  t.throws(() => a.add(parts[2]!), /out of order/);
  t.throws(() => a.add(parts[1]!), /out of order/, 'the broken assembly was abandoned');
  const b = new SnapshotAssembler(1 << 20);
  b.add(parts[0]!);
  const other = chunks(snap(5000), 1000, 2);
  t.equal(b.add(other[0]!), undefined, 'a new snapshot from offset 0 restarts the assembly');
  const done = other.slice(1).map((c) => b.add(c));
  t.equal(done[done.length - 1]?.type, 'snap', 'and completes');
  t.throws(() => new SnapshotAssembler(100).add(parts[0]!), /too large/);
});
