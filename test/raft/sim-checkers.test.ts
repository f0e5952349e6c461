/**
 * The simulator's checks can fail: broken rules and fabricated evidence are caught.
 */
import t from 'tap';
import { checkLinearizable } from '../lincheck/index.js';
import { ent } from './helpers.js';
import { Network } from './network.js';
import { SafetyChecker, SimViolation } from './sim/checker.js';
import { SIM_OPTIONS } from './sim/options.js';
import { runSeed, World } from './sim/world.js';

const SHORT = { durationMs: 60_000, settleMs: 15_000 };

t.test('members that vote twice per term are caught by the safety checks', async (t) => {
  // The knob lets a follower grant a second candidate in a term it already voted in.
  let caught: string | undefined;
  for (let seed = 1; seed <= 80 && caught === undefined; seed++) {
    const r = runSeed(seed, { ...SHORT, unsafeVoteTwice: true });
    if (!r.ok) caught = `seed ${seed}: ${r.error}`;
  }
  t.ok(caught !== undefined, 'some seed fails');
  t.match(caught ?? '', /election safety|leader completeness|state machine safety|log matching/);
  t.comment(caught ?? '');
});

t.test('the same seeds pass with the rule intact', async (t) => {
  for (let seed = 1; seed <= 5; seed++) t.ok(runSeed(seed, SHORT).ok, `seed ${seed}`);
});

t.test(
  'a stale member at a higher term without pre-vote: the group settles late, and only then',
  async (t) => {
    // Seed 2349 (no pre-vote, check-quorum on): a member behind on its log keeps campaigning
    // at ever higher terms and deposes each leader the others elect; 20 virtual seconds of
    // settling are not enough, a few rounds more are.
    const strict = runSeed(2349, { ...SIM_OPTIONS, lateSettle: false });
    t.equal(strict.ok, false, 'with the fixed settle phase alone it has no leader yet');
    t.match(strict.error ?? '', /liveness/);
    const r = runSeed(2349, SIM_OPTIONS);
    t.ok(r.ok, r.error ?? 'passes');
    t.equal(r.stats.lateSettles, 1, 'it needed the longer settle phase');
  },
);

t.test('the safety checker rejects each kind of violation', async (t) => {
  const c = new SafetyChecker();
  const n = new Network(3);
  n.peer(1).node.campaign();
  n.stabilize();
  c.observeRole(1, n.peer(1).raft);
  const fake = { role: 'leader', term: n.peer(1).raft.term, log: n.peer(2).raft.log } as never;
  t.throws(() => c.observeRole(2, fake), SimViolation, 'two leaders in one term');

  c.onPersist(1, [ent(5, 2, 'x')]);
  t.throws(() => c.onPersist(2, [ent(5, 2, 'y')]), /log matching/);

  c.onApply(1, ent(7, 2, 'a'));
  t.throws(() => c.onApply(2, ent(7, 3, 'a')), /state machine safety/);

  const c2 = new SafetyChecker();
  for (let i = 1; i <= 10; i++) c2.onApply(1, ent(i, 1, `v${i}`));
  const short = new Network(3);
  short.peer(3).node.campaign();
  short.stabilize();
  t.throws(() => c2.observeRole(3, short.peer(3).raft), /leader completeness/);
});

t.test('pairwise log matching finds logs that agree on a term but differ before it', async (t) => {
  const n = new Network(2);
  n.peer(1).storage.append([ent(1, 1, 'a'), ent(2, 1, 'b')]);
  n.peer(2).storage.append([ent(1, 1, 'X'), ent(2, 1, 'b')]);
  const c = new SafetyChecker();
  t.throws(
    () =>
      c.checkLogsMatch([
        { id: 1, storage: n.peer(1).storage },
        { id: 2, storage: n.peer(2).storage },
      ]),
    /log matching: members 1 and 2/,
  );
});

t.test('a fabricated non-linearizable history fails the end check', async (t) => {
  const w = new World(3, SHORT);
  // A get that read a value nobody ever wrote, completed before anything else started.
  w.clients.history.push({
    client: 99,
    op: { kind: 'get', key: 'a' },
    call: 0,
    ret: 1,
    ok: true,
    output: 'ghost',
  });
  t.throws(() => w.run(SHORT), /linearizability \(key a\)/);
  const stale = checkLinearizable([
    { client: 1, op: { kind: 'put', key: 'k', value: '1' }, call: 0, ret: 10, ok: true },
    { client: 1, op: { kind: 'put', key: 'k', value: '2' }, call: 20, ret: 30, ok: true },
    { client: 2, op: { kind: 'get', key: 'k' }, call: 40, ret: 50, ok: true, output: '1' },
  ]);
  t.equal(stale.ok, false, 'a stale read is not linearizable');
});

t.test('an acknowledged write missing from the final state fails the end check', async (t) => {
  const w = new World(4, SHORT);
  w.clients.acked.push({ c: 42, s: 1, k: 'a', v: 'never proposed' });
  t.throws(() => w.run(SHORT), /acknowledged write lost: client 42/);
});
