/** Proposal and read-barrier bookkeeping, on a hand-driven clock. */
import t from 'tap';
import type { Clock, TimerHandle } from '../../../src/raft/driver/clock.js';
import { PendingProposals, ReadBarriers } from '../../../src/raft/driver/pending.js';
import { LogIndex, Term } from '../../../src/raft/types.js';

class FakeClock implements Clock {
  ms = 0;
  private timers: { at: number; fn: () => void; live: boolean }[] = [];
  now = () => this.ms;
  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer = { at: this.ms + ms, fn, live: true };
    this.timers.push(timer);
    return { cancel: () => void (timer.live = false) };
  }
  setInterval(): TimerHandle {
    throw new Error('not used');
  }
  advance(ms: number): void {
    this.ms += ms;
    for (const tm of this.timers) {
      if (tm.live && tm.at <= this.ms) {
        tm.live = false;
        tm.fn();
      }
    }
  }
}

const at = (index: number, term = 1, outcome: unknown = undefined) => ({
  index: LogIndex(index),
  term: Term(term),
  outcome,
});
const settled = async (p: Promise<unknown>) => {
  const r = await Promise.race([
    p.then(
      (v) => ({ v }),
      (e) => ({ e }),
    ),
    new Promise((res) => setImmediate(() => res('pending'))),
  ]);
  return r;
};

t.test('a proposal resolves when its own entry applies', async (t) => {
  const p = new PendingProposals(new FakeClock(), 1000);
  const a = p.add(1);
  p.noteAppended(1, LogIndex(5));
  p.applied(at(4), -1);
  t.equal(await settled(a), 'pending', 'another entry is not ours');
  p.applied(at(5, 1, { answer: 42 }), 1);
  t.same(
    await settled(a),
    { v: at(5, 1, { answer: 42 }) },
    "the application's outcome travels with it",
  );
  t.equal(p.size, 0);
});

t.test(
  'a proposal overwritten by a new leader fails at once with ERR_LEADER_CHANGED',
  async (t) => {
    const p = new PendingProposals(new FakeClock(), 1000);
    const a = p.add(1);
    p.noteAppended(1, LogIndex(5));
    p.applied(at(5, 2), -1);
    t.match(await settled(a), { e: { code: 'ERR_LEADER_CHANGED' } });
  },
);

t.test('the deadline sweep fails only expired proposals, oldest first', async (t) => {
  const clock = new FakeClock();
  const p = new PendingProposals(clock, 100);
  const a = p.add(1);
  clock.ms = 50;
  const b = p.add(2);
  clock.ms = 120;
  p.sweep();
  t.match(await settled(a), { e: { code: 'ERR_TIMEOUT' } });
  t.equal(await settled(b), 'pending');
  p.noteAppended(2, LogIndex(8));
  clock.ms = 151;
  p.sweep();
  t.match(await settled(b), { e: { code: 'ERR_TIMEOUT' } });
  t.equal(p.trackedSlots, 0, 'the slot of a timed-out proposal is forgotten');
});

t.test('read barriers: one context per batch, never joining an issued one', async (t) => {
  const clock = new FakeClock();
  const r = new ReadBarriers(clock, 1000, Uint8Array.of(7));
  const a = r.request();
  const b = r.request();
  const ctx1 = r.takeOpen()!;
  t.ok(ctx1, 'the open batch is issued');
  t.equal(r.takeOpen(), undefined, 'nothing else to issue');
  const c = r.request();
  const ctx2 = r.takeOpen()!;
  t.not(Buffer.from(ctx1).toString('hex'), Buffer.from(ctx2).toString('hex'), 'a new batch');
  r.answered(ctx1, LogIndex(10));
  r.applied(LogIndex(9));
  t.equal(await settled(a), 'pending', 'not until the read index is applied');
  r.applied(LogIndex(10));
  t.same(await settled(a), { v: 10 });
  t.same(await settled(b), { v: 10 });
  t.equal(await settled(c), 'pending', 'the later batch waits for its own answer');
  r.refuse(ctx2, new Error('dropped'));
  t.match(await settled(c), { e: { message: 'dropped' } });
});

t.test('read barriers time out', async (t) => {
  const clock = new FakeClock();
  const r = new ReadBarriers(clock, 100, Uint8Array.of(7));
  const a = r.request();
  r.takeOpen();
  clock.advance(101);
  t.match(await settled(a), { e: { code: 'ERR_TIMEOUT' } });
});
