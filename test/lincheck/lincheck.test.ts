import t from 'tap';
import { checkLinearizable, type HistoryOp } from './index.js';

let nextClient = 0;
const put = (value: string, call: number, ret: number, key = 'k'): HistoryOp => ({
  client: nextClient++,
  op: { kind: 'put', key, value },
  call,
  ret,
  ok: true,
});
const get = (output: string | null, call: number, ret: number, key = 'k'): HistoryOp => ({
  client: nextClient++,
  op: { kind: 'get', key },
  call,
  ret,
  ok: true,
  output,
});
const unknown = (h: HistoryOp): HistoryOp => ({ ...h, ok: false, ret: Number.POSITIVE_INFINITY });

t.test('accepts linearizable histories', async (t) => {
  const cases: [string, HistoryOp[]][] = [
    ['empty', []],
    ['read of an absent key', [get(null, 0, 1)]],
    ['sequential put then get', [put('a', 0, 1), get('a', 2, 3)]],
    ['read concurrent with a write sees old', [put('a', 0, 10), get(null, 1, 2)]],
    ['read concurrent with a write sees new', [put('a', 0, 10), get('a', 1, 2)]],
    [
      'old then new during one write',
      [put('a', 0, 10), get(null, 1, 2), get('a', 3, 4), get('a', 11, 12)],
    ],
    [
      'concurrent writes settle in either order',
      [put('a', 0, 10), put('b', 1, 9), get('a', 11, 12), get('a', 13, 14)],
    ],
    ['touching intervals are concurrent', [put('a', 0, 5), get(null, 5, 6)]],
    ['unknown put that took effect', [unknown(put('a', 0, 1)), get('a', 5, 6)]],
    ['unknown put that never did', [unknown(put('a', 0, 1)), get(null, 5, 6)]],
    [
      'unknown put taking effect long after',
      [unknown(put('a', 0, 1)), get(null, 5, 6), put('b', 7, 8), get('a', 100, 101)],
    ],
    ['unknown get constrains nothing', [put('a', 0, 1), unknown(get('zzz', 2, 3))]],
    ['keys are independent', [put('a', 0, 1, 'x'), get(null, 2, 3, 'y'), get('a', 4, 5, 'x')]],
  ];
  for (const [name, history] of cases) t.same(checkLinearizable(history), { ok: true }, name);
});

t.test('rejects non-linearizable histories', async (t) => {
  const cases: [string, HistoryOp[]][] = [
    ['stale read', [put('a', 0, 1), put('b', 2, 3), get('a', 4, 5)]],
    ['lost write', [put('a', 0, 1), get(null, 2, 3)]],
    ['read of a never-written value', [put('a', 0, 1), get('zzz', 2, 3)]],
    ['read from the future', [get('a', 0, 1), put('a', 2, 3)]],
    ['new then old during one write', [put('a', 0, 10), get('a', 1, 2), get(null, 3, 4)]],
    [
      'two readers disagree on the order of concurrent writes, after both ended',
      [put('a', 0, 10), put('b', 1, 9), get('b', 11, 12), get('a', 13, 14)],
    ],
    [
      'concurrent readers observe writes in opposite orders',
      [
        put('a', 0, 100),
        put('b', 0, 100),
        get('a', 10, 20),
        get('b', 30, 40),
        get('b', 10, 20),
        get('a', 30, 40),
      ],
    ],
    ['unknown put cannot act before its call', [get('a', 0, 1), unknown(put('a', 2, 3))]],
    [
      'unknown put takes effect at most once',
      [unknown(put('a', 0, 1)), get('a', 2, 3), put('b', 4, 5), get('a', 6, 7)],
    ],
  ];
  for (const [name, history] of cases) t.equal(checkLinearizable(history).ok, false, name);
});

t.test('names the failing key and the operation that cannot take effect', async (t) => {
  const r = checkLinearizable([
    put('a', 0, 1, 'good'),
    get('a', 2, 3, 'good'),
    put('a', 0, 1, 'bad'),
    put('b', 2, 3, 'bad'),
    get('a', 4, 5, 'bad'),
  ]);
  if (r.ok) throw new Error('expected a violation');
  t.equal(r.key, 'bad');
  t.match(r.explanation, /Longest linearizable prefix \(2 ops\)/);
  t.match(r.explanation, /register "b"/);
  t.match(r.explanation, /get\(\) -> "a" \[4, 5\] must take effect/);
});

t.test('rejects malformed histories loudly', async (t) => {
  t.throws(() => checkLinearizable([get('a', 5, 4)]), RangeError);
  t.throws(() => checkLinearizable([{ ...get('a', 0, 1), output: undefined }]), RangeError);
  t.throws(() => checkLinearizable([put('a', 0, Number.POSITIVE_INFINITY)]), RangeError);
  t.throws(() => checkLinearizable([put('a', Number.NaN, 1)]), RangeError);
});

t.test('memoisation keeps heavy concurrency tractable', async (t) => {
  // Rounds of 10 fully overlapping writes then reads of the last value. The final round's
  // read is impossible, so the search must exhaust every order of that round's writes:
  // 10! paths without the (linearized set, state) cache, 2^10 x 11 states with it.
  const history: HistoryOp[] = [];
  for (let round = 0; round < 12; round++) {
    const base = round * 100;
    for (let c = 0; c < 10; c++) history.push(put(`r${round}c${c}`, base, base + 50));
    const seen = round === 11 ? 'never written' : `r${round}c9`;
    history.push(get(seen, base + 60, base + 70));
  }
  const started = performance.now();
  t.equal(checkLinearizable(history).ok, false);
  t.equal(checkLinearizable(history.slice(0, -1)).ok, true);
  // Without the cache this takes hours; with it, well under a second on an idle machine.
  t.ok(performance.now() - started < 20_000, 'finished within 20 s');
});

t.test('many unknown-outcome writes that nobody read cost nothing', async (t) => {
  // A chaotic run: 60 writes time out on one key and are never read, around a sequence of
  // known writes and reads. Each may take effect anywhere after its call, or never.
  const history: HistoryOp[] = [];
  for (let i = 0; i < 60; i++) history.push(unknown(put(`lost${i}`, i * 10, i * 10 + 1)));
  for (let i = 0; i < 60; i++) {
    history.push(put(`v${i}`, i * 10 + 2, i * 10 + 3), get(`v${i}`, i * 10 + 4, i * 10 + 5));
  }
  history.push(unknown(put('seen', 601, 602)), get('seen', 700, 701));
  const started = performance.now();
  t.same(checkLinearizable(history), { ok: true });
  t.equal(checkLinearizable([...history, get('v59', 800, 801)]).ok, false, 'still strict');
  t.ok(performance.now() - started < 10_000, 'finished within 10 s');
});
