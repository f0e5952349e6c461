/** etcdctl's conventions the CLI reads: flags, shell-like words, the interactive txn syntax. */
import t from 'tap';
import {
  argify,
  parseCompare,
  parseFlags,
  parseOp,
  parseTxn,
} from '../../src/client/etcdctl-txn.js';

t.test('flags: --x=v, --x v, -w v, booleans, and -- ending flags', async (t) => {
  const a = parseFlags([
    'get',
    'k',
    '--limit',
    '5',
    '--prefix',
    '-w',
    'json',
    '--rev=3',
    '--keys-only=false',
    '--',
    '--literal',
  ]);
  t.same(a.positionals, ['get', 'k', '--literal']);
  t.same(Object.fromEntries(a.flags), {
    limit: '5',
    prefix: 'true',
    w: 'json',
    rev: '3',
    'keys-only': 'false',
  });
  t.same(
    parseFlags(['put', 'k', '-1']).positionals,
    ['put', 'k', '-1'],
    'a negative number is a value, not a flag',
  );
  t.throws(() => parseFlags(['get', 'k', '--limit']), /flag needs an argument: --limit/);
});

t.test('words: quotes group, escapes in double quotes', async (t) => {
  t.same(argify(`put k "a \\"quoted\\" value"`), ['put', 'k', 'a "quoted" value']);
  t.same(argify(`put k 'single  spaced'`), ['put', 'k', 'single  spaced']);
  t.same(argify('  get   k  '), ['get', 'k']);
});

t.test('compares: every target, alias and operator', async (t) => {
  t.same(parseCompare('value("k") = "v"'), {
    key: 'k',
    result: 'EQUAL',
    target: 'VALUE',
    value: 'v',
  });
  t.same(parseCompare('val("k") != "v"'), {
    key: 'k',
    result: 'NOT_EQUAL',
    target: 'VALUE',
    value: 'v',
  });
  t.same(parseCompare('ver("k") < "3"'), {
    key: 'k',
    result: 'LESS',
    target: 'VERSION',
    version: 3,
  });
  t.same(parseCompare('c("k") > "0"'), {
    key: 'k',
    result: 'GREATER',
    target: 'CREATE',
    createRevision: 0,
  });
  t.same(parseCompare('mod("a b") = "7"'), {
    key: 'a b',
    result: 'EQUAL',
    target: 'MOD',
    modRevision: 7,
  });
  t.same(parseCompare('lease("k") = "ff"'), {
    key: 'k',
    result: 'EQUAL',
    target: 'LEASE',
    lease: 255n,
  });
  t.throws(() => parseCompare('ver("k") = "x"'), /not an integer/);
  t.throws(() => parseCompare('size("k") = "1"'), /unknown target size/);
  t.throws(() => parseCompare('value(k) = v'), /malformed comparison/);
});

t.test('ops: put, get and del lines with their flags', async (t) => {
  t.same(parseOp('put k "v w" --lease=1f --prev-kv'), {
    put: { key: 'k', value: 'v w', lease: 31n, prevKv: true },
  });
  t.same(parseOp('get a z --limit=2 --keys-only'), {
    range: {
      key: 'a',
      rangeEnd: 'z',
      prefix: undefined,
      fromKey: undefined,
      limit: 2,
      revision: undefined,
      keysOnly: true,
    },
  });
  t.same(parseOp('del p --prefix'), {
    delete: { key: 'p', rangeEnd: undefined, prefix: true, fromKey: undefined, prevKv: undefined },
  });
  t.throws(() => parseOp('put k'), /put needs a value/);
  t.throws(() => parseOp('watch k'), /unknown op in txn/);
});

t.test('a whole txn: three sections split by blank lines', async (t) => {
  const txn = parseTxn('value("k") = "v"\n\nput k w\nget k\n\ndel k\n');
  t.equal(txn.compare?.length, 1);
  t.equal(txn.success?.length, 2);
  t.equal(txn.failure?.length, 1);
  const noCompares = parseTxn('\nput k v\n');
  t.same(
    [noCompares.compare?.length, noCompares.success?.length, noCompares.failure?.length],
    [0, 1, 0],
  );
});
