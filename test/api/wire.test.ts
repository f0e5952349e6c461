/** The scalar wire forms: Go-compatible base64 errors, int64 and uint64 text, enums. */
import t from 'tap';
import { jsonName } from '../../src/api/etcd/schema.js';
import {
  base64ErrorOffset,
  decodeBytes,
  decodeEnum,
  decodeInt64,
  decodeUint64,
} from '../../src/api/etcd/wire.js';
import { isEtceteraError } from '../../src/errors.js';

const fails = (f: () => unknown) => {
  try {
    f();
    return undefined;
  } catch (e) {
    return isEtceteraError(e, 'ERR_BAD_FIELD') ? e.message : `unexpected ${String(e)}`;
  }
};

t.test('base64: what Go accepts, and the byte Go names when it refuses', async (t) => {
  t.same(Buffer.from(decodeBytes('k', 'YWJj')).toString(), 'abc');
  t.same(Buffer.from(decodeBytes('k', 'YQ==')).toString(), 'a');
  t.same(
    Buffer.from(decodeBytes('k', 'YR==')).toString(),
    'a',
    'non-zero trailing bits are accepted (StdEncoding, not Strict)',
  );
  t.same(Buffer.from(decodeBytes('k', 'YW\nJj\r\n')).toString(), 'abc', 'CR and LF are skipped');
  t.equal(decodeBytes('k', '').length, 0);
  // Offsets etcd 3.4 reported for the same inputs.
  for (const [input, offset] of [
    ['YQ', 0],
    ['YQ===', 4],
    ['YW Jj', 2],
    ['_-8=', 0],
    ['!!!', 0],
    ['YWJjZA', 4],
    ['Y===', 1],
    ['YQ=a', 2],
  ] as const) {
    t.equal(base64ErrorOffset(input), offset, `${input} fails at byte ${offset}`);
    t.match(
      fails(() => decodeBytes('key', input)),
      `key: illegal base64 data at input byte ${offset}`,
    );
  }
});

t.test('int64: JSON integers and decimal strings within ±(2^53-1)', async (t) => {
  t.equal(decodeInt64('n', 5), 5);
  t.equal(decodeInt64('n', '-7'), -7);
  t.equal(decodeInt64('n', ' 12 '), 12, 'spaces around a quoted number, as Go reads it');
  for (const bad of ['01', '1.0', '+1', '0x1', '', 'x', '1e2'])
    t.ok(
      fails(() => decodeInt64('n', bad)),
      `"${bad}" is refused`,
    );
  t.match(
    fails(() => decodeInt64('n', '9007199254740993')),
    'within ±(2^53-1)',
  );
  t.match(
    fails(() => decodeInt64('n', 1.5)),
    'n: expected an integer',
  );
});

t.test('uint64 IDs keep all 64 bits as decimal text', async (t) => {
  t.equal(decodeUint64('ID', '18446744073709551615'), '18446744073709551615');
  t.equal(decodeUint64('ID', 42), '42');
  for (const bad of ['18446744073709551616', '-1', 'abc', '0x10'])
    t.ok(
      fails(() => decodeUint64('ID', bad)),
      bad,
    );
});

t.test('enums by name or number', async (t) => {
  const names = ['NONE', 'ASCEND', 'DESCEND'] as const;
  t.equal(decodeEnum('o', 'DESCEND', names, 'SortOrder'), 'DESCEND');
  t.equal(decodeEnum('o', 1, names, 'SortOrder'), 'ASCEND');
  t.match(
    fails(() => decodeEnum('o', 3, names, 'SortOrder')),
    'unknown value 3 for enum SortOrder',
  );
  t.match(
    fails(() => decodeEnum('o', 'descend', names, 'SortOrder')),
    'unknown value "descend"',
  );
});

t.test("protobuf's JSON names", async (t) => {
  t.equal(jsonName('range_end'), 'rangeEnd');
  t.equal(jsonName('min_mod_revision'), 'minModRevision');
  t.equal(jsonName('ID'), 'ID');
  t.equal(jsonName('peerURLs'), 'peerURLs');
});
